"""What the held-out curves say by their own shape, beside (or without) a training curve: a validation loss that is
the very same at every evaluation (an output that never changes) or at the last ones (weights that stopped changing),
and - with no training loss printed - a validation loss that rose while validation accuracy held (more confident, not
more right)."""

from __future__ import annotations

from bot.diagnosis.curves.finding import Finding, at, finite, fmt, significant_digits, train_near
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
