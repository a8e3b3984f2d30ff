"""What the held-out curves say by their own shape, beside (or without) a training curve: a validation loss that is
the very same at every evaluation (an output that never changes) or at the last ones (weights that stopped changing),
a validation accuracy that never moves (answers that never change: one class for every input, or the untrained
model's), and - with no training loss printed - a validation loss that rose while validation accuracy held (more
confident, not more right)."""

from __future__ import annotations

from bot.diagnosis.curves.finding import Finding, at, finite, fmt, significant_digits, step_count, train_near
from bot.diagnosis.curves.loss_findings import carried_between_evaluations
from bot.diagnosis.curves.series import ACC, LOSS, VAL, Curves, Series


def validation_constant(val: Series | None, train: Series | None) -> Finding | None:
    """The very same validation loss at four or more evaluations, every one printed, while the training loss moved
    by 3% or more over them: the model changes, its output on validation data never does (a dead or saturated
    network, a constant prediction). Nothing was learnt there to lose: no overfitting's stall."""
    if val is None or train is None or val.group != LOSS or train.group != LOSS:
        return None
    points = finite(val.points)
    if len(points) < 4 or len({p.value for p in points}) != 1:
        return None
    then, now = train_near(train, points[0]), train_near(train, points[-1])
    if then is None or now is None or then is now or abs(then.value - now.value) < 0.03 * max(abs(then.value), 1e-9):
        return None
    first, last = points[0], points[-1]
    return Finding(
        (first.line, last.line),
        f"{val.key} {fmt(first.value)} at all {len(points)} evaluations ({at(first)} to {at(last)}) while "
        f"{train.key} went {fmt(then.value)} -> {fmt(now.value)}: the validation output never changed",
    )


def val_loss_rose_accuracy_held(
    val_loss: Series | None, val_acc: Series | None, train: Series | None
) -> Finding | None:
    """No training loss printed (a Hugging Face evaluation table, an eval-only log): the validation loss fell, then
    rose steadily to a quarter or more above its best over two or more evaluations, while the validation accuracy
    held within 0.03 of its best. The model grows more confident on held-out data without being more right: it fits
    its training set. A run that diverges loses its accuracy too."""
    if train is not None or val_loss is None or val_acc is None or val_loss.group != LOSS or val_acc.group != ACC:
        return None
    losses, accs = finite(val_loss.points), finite(val_acc.points)
    if len(losses) < 5 or len(accs) < 5:
        return None
    values = [p.value for p in losses]
    best_at = min(range(len(values)), key=values.__getitem__)
    if best_at < 1 or best_at > len(values) - 3 or values[best_at] <= 0:
        return None
    after = values[best_at:]
    rises = sum(b > a for a, b in zip(after, after[1:], strict=False))
    if values[-1] < 1.25 * values[best_at] or rises < 0.7 * (len(after) - 1):
        return None
    best_acc = max(p.value for p in accs)
    if accs[-1].value < best_acc - 0.03:
        return None
    best, last = losses[best_at], losses[-1]
    return Finding(
        (best.line, last.line),
        f"{val_loss.key} best {fmt(best.value)} {at(best)}, {fmt(last.value)} {at(last)} while {val_acc.key} held at "
        f"{fmt(accs[-1].value)} (best {fmt(best_acc)}): more confident on held-out data, not more right",
    )


def validation_frozen(curves: Curves) -> Finding | None:
    """A validation loss (or perplexity) printed to four or more significant digits and the very same at two or more
    evaluations in a row, at different steps: a loss over a fixed validation set only repeats when the weights did
    not change in between (a learning rate of zero, a frozen model, an optimizer that updates nothing)."""
    for series in curves.series.values():
        if series.split != VAL or (series.group != LOSS and series.norm.split("/")[-1] not in ("perplexity", "ppl")):
            continue  # a continuous measure: an error rate or a score repeats whenever the predictions do
        points = finite(series.points)
        if len(points) < 2 or points[-1].value == 0 or significant_digits(points[-1].value) < 4:
            continue
        run = [points[-1]]
        for point in reversed(points[:-1]):
            if point.value != run[0].value:
                break
            run.insert(0, point)
        steps = [p.step for p in run]
        # (a validation loss on every step's line is the last evaluation's, printed again until the next one)
        if len(run) < 2 or None in steps or len(set(steps)) < len(steps) or carried_between_evaluations(points):
            continue
        first, last = run[0], run[-1]
        if any(line <= last.line and rate <= 1e-6 for line, rate in curves.lr_reductions):
            continue  # a scheduler cut the learning rate to almost nothing: weights that barely move are its doing
        if _other_validation_moved(curves, series, {p.line for p in run}):
            continue  # the same loss to four digits by chance: another held-out metric on those lines changed
        return Finding(
            (first.line, last.line),
            f"{series.key} {fmt(first.value)} {at(first)} and the very same {at(last)} ({len(run)} evaluations): "
            "the weights did not change in between",
        )
    return None


def _other_validation_moved(curves: Curves, frozen: Series, lines: set[int]) -> bool:
    """Another validation metric printed on the repeated loss's lines took different values there (a validation
    accuracy 0.7818 then 0.7850): the predictions changed, so the weights did."""
    for other in curves.series.values():
        if other is frozen or other.split != VAL:
            continue
        values = {p.value for p in finite(other.points) if p.line in lines}
        if len(values) > 1:
            return True
    return False


def validation_predictions_frozen(val: Series | None, val_loss: Series | None, train: Series | None) -> Finding | None:
    """A validation accuracy identical at eight or more evaluations from the first one on, while the validation loss
    (or, with none printed, the training loss) fell by a third: the model's outputs change, its answers on validation
    data never do (one class predicted for every input, e.g. background for every pixel). A small validation set
    repeating its accuracy beside a settled loss is no such sign."""
    if val is None or val.group != ACC:
        return None
    points = finite(val.points)
    if len(points) < 8 or max(p.value for p in points) - min(p.value for p in points) > 1e-4:
        return None
    moving = val_loss if val_loss is not None and val_loss.group != ACC else train
    if moving is None or moving.group == ACC:
        return None
    then, now = train_near(moving, points[0]), train_near(moving, points[-1])
    if then is None or now is None or then is now or now.value > 0.67 * then.value:
        return None
    first, last = points[0], points[-1]
    return Finding(
        (first.line, last.line),
        f"{val.key} {fmt(first.value)} {at(first)} and the same at every one of {len(points)} evaluations while "
        f"{moving.key} went {fmt(then.value)} -> {fmt(now.value)}: the answers on validation data never change",
    )


def val_acc_as_untrained(val: Series | None) -> Finding | None:
    """A validation accuracy measured before the first update (step or iteration 0) and the very same at every later
    evaluation, 1,000 steps or more (or an epoch) on: whatever training did, the answers on held-out data are still
    the untrained model's. A model that learns anything moves its accuracy off its initial value."""
    if val is None or val.group != ACC or val.split != VAL:
        return None
    points = finite(val.points)
    if len(points) < 2 or len({p.value for p in points}) != 1 or points[0].value >= 0.5:
        return None
    start, end = step_count(points[0]), step_count(points[-1])
    if start != 0 or end is None or end < (1 if points[-1].step.startswith("epoch") else 1_000):
        return None
    first, last = points[0], points[-1]
    return Finding(
        (first.line, last.line),
        f"{val.key} {fmt(first.value)} {at(first)}, before any training, and the very same {at(last)}: the answers "
        "on held-out data are still the untrained model's",
    )


FROZEN_AT = 6  # evaluations at one value, on the training and on the validation data alike


def accuracies_frozen(train: Series | None, val: Series | None) -> Finding | None:
    """The training and the validation accuracy each at one value (to 0.0005, printed to three significant digits or
    more) at every one of their first six or more values: nothing the model saw moved its answers - one class for
    every input, however large its share of the data (97.6% of the images of one class). `metric_stuck` waits for
    eight training values, or a low one; a model that learns moves its training accuracy in the third decimal."""
    if train is None or val is None or train.group != ACC or val.group != ACC:
        return None
    runs = []
    for series in (train, val):
        points = finite(series.points)
        tail = points[1:] if series is train else points  # the first epoch's mean can lag by a batch or two
        values = [p.value for p in tail]
        if len(values) < FROZEN_AT or max(values) - min(values) >= 0.0005 or max(values) >= 0.99:
            return None
        if any(significant_digits(v) < 3 for v in values) or abs(points[0].value - values[0]) >= 0.001:
            return None
        runs.append(tail)
    first, last = runs[0][0], runs[1][-1]
    return Finding(
        (first.line, last.line),
        f"{train.key} {fmt(first.value)} and {val.key} {fmt(last.value)} at every one of {len(runs[1])} evaluations "
        "from the start: the model's answers never changed (one class predicted for every input)",
    )
