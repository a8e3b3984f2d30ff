"""The shape of a training curve where no rule judged it: its numbers, and the fitted model that reads them."""
