"""Judgements on the validation curve against the training curve: stalled while training improves, flat while
training falls, never improved, a widening generalisation gap (turned: bot.diagnosis.curves.turned_findings)."""

from __future__ import annotations

from bot.diagnosis.curves.blowups import ASTRONOMICAL
from bot.diagnosis.curves.finding import (
    Finding,
    at,
    early,
    finite,
    fmt,
    same_measure,
    significant_digits,
    thirds_means,
    train_near,
)
from bot.diagnosis.curves.held_out_findings import validation_constant
from bot.diagnosis.curves.series import ACC, LOSS, VAL, Curves, Point, Series


def stalled_while_training_improves(curves: Curves, train: Series | None) -> Finding | None:
    """Keras early stopping: the validation metric did not improve, several times since it last did, while training
    improved. A stall the validation metric broke out of (a new best after it) is no stall."""
    messages = curves.improve_messages
    last_best = max((i for i, (*_, improved) in enumerate(messages) if improved), default=-1)
    stuck = [(line, key, value) for line, key, value, improved in messages[last_best + 1 :] if not improved]
    if len(stuck) < 2 or train is None:
        return None
    if "acc" in stuck[-1][1].lower() and stuck[-1][2] >= 0.95:
        return None  # a held-out accuracy that stalled at 95% or better converged: no overfitting in view
    if len(stuck) == 2:  # twice is enough only with a wide gap to the training metric
        val = curves.primary(VAL, train.group)
        now = train_near(train, stuck[-1][0])
        last = finite(val.points)[-1] if val is not None and finite(val.points) else None
        if now is None or last is None:
            return None
        wide = now.value - last.value >= 0.2 if train.group == ACC else last.value >= 2 * max(now.value, 1e-9)
        if not wide:
            return None
        return Finding(
            (stuck[0][0], stuck[-1][0]),
            f"{stuck[-1][1]} did not improve from {fmt(stuck[-1][2])}; {val.key} {fmt(last.value)} against "
            f"{train.key} {fmt(now.value)}",
        )
    if validation_constant(curves.primary(VAL, LOSS), train) is not None:
        return None  # the very same validation loss at every evaluation: an output that never changes, no stall
    then, now = train_near(train, stuck[0][0]), train_near(train, stuck[-1][0])
    if then is None or now is None or then is now:
        return None
    improving = now.value < then.value * 0.95 if train.group != ACC else now.value > then.value + 0.02
    if not improving:
        return None
    line, key, value = stuck[-1]
    return Finding(
        (stuck[0][0], line),
        f"{key} did not improve from {fmt(value)} ({len(stuck)} times) while {train.key} went "
        f"{fmt(then.value)} -> {fmt(now.value)}",
    )


_SMALL_BATCHES = (8, 16, 32, 64)


def _tiny_batch_accuracy(train: Series) -> bool:
    """A training accuracy measured on one small batch at a time: six or more values, every one a multiple of 1/b
    for a batch of b = 8 to 64 samples (0.8125 is 26 of 32), as printed to four decimals (0.78125 -> 0.7812). Its
    last value says nothing about how well training fits: one batch of 32 all right reads 1.0 beside a test
    accuracy of 0.89 that the run's other batches match. (Four decimals leave each multiple of 1/64 a window of
    1e-4: six unrelated accuracies all falling in such windows is a chance under 1e-12.)"""
    values = [p.value for p in finite(train.points)]
    if len(values) < 6 or len(set(values)) < 3:
        return False
    return any(all(abs(v * b - round(v * b)) <= b * 5.01e-5 for v in values) for b in _SMALL_BATCHES)


def gap_widening(train: Series | None, val: Series | None) -> Finding | None:
    """Validation far worse than training at the end, and the gap grew over the run."""
    if train is None or val is None or train.group != val.group:
        return None
    if train.group == ACC and (_tiny_batch_accuracy(train) or not same_measure(train, val)):
        return None
    vals = finite(val.points)
    if not vals:
        return None
    first_val, last_val = vals[0], vals[-1]
    first_train, last_train = train_near(train, first_val), train_near(train, last_val)
    if first_train is None or last_train is None:
        return None
    if val.group != ACC and max(last_val.value, last_train.value) >= ASTRONOMICAL:
        return None  # a loss that overflowed (1e12 or more) blew up: no gap between two such numbers is memorising
    sign = 1.0 if val.group != ACC else -1.0
    gap_then = sign * (first_val.value - first_train.value)
    gap_now = sign * (last_val.value - last_train.value)
    if val.group == ACC:
        wide = gap_now >= 0.15
    else:
        wide = gap_now >= 0.3 and last_val.value >= 2 * max(last_train.value, 1e-9)
    best = min(vals, key=lambda p: p.value) if val.group != ACC else max(vals, key=lambda p: p.value)
    trend = _thirds_trend(vals, val.group != ACC)  # how much the validation curve improved, first to last third
    # validation accuracy still climbing: a gap that is closing - unless a long curve's second half gained under two
    # points while training gained five or more (validation climbed early, then stopped while training went on)
    later = vals[len(vals) // 2 :]
    halfway = train_near(train, later[0])
    stopped = (
        len(vals) >= 6
        and max(p.value for p in later) - later[0].value < 0.02
        and halfway is not None
        and last_train.value - halfway.value >= 0.05
    )
    learning = val.group == ACC and trend >= 0.05 and not stopped
    stalled = len(vals) < 3 or (best is not last_val and not learning)
    creeping = len(vals) >= 3 and abs(trend) < 0.25 * abs(gap_now)  # validation barely moves against the gap
    # Training memorised, validation far behind and no longer improving: no healthy run looks like this.
    if val.group == ACC:  # the less training has learnt, the wider the gap that proves memorising
        memorised = (
            last_train.value >= 0.97
            and gap_now >= 0.1
            or last_train.value >= 0.9
            and gap_now >= 0.25
            or last_train.value >= 0.8
            and gap_now >= 0.35
        )
    else:
        memorised = last_val.value >= 5 * max(last_train.value, 1e-9) and gap_now >= 0.05
    # a validation curve that reaches a new best at its last value, clearly below where it began, still learns
    still_learning = best is last_val and sign * (first_val.value - last_val.value) >= 0.05 * abs(first_val.value)
    # (two evaluations, the second clearly better, are too short a curve to say it stopped learning: a test loss
    # summed over batches sits far above a mean training loss and still falls)
    # a validation loss back within 2% of its best is at its best, give or take an evaluation's noise: whatever the
    # gap, it has not turned (a loss memorised to near zero beside a validation loss at its best is a model that fits)
    at_best = val.group != ACC and last_val.value <= 1.02 * best.value
    if memorised and ((best is not last_val and not at_best) or (not still_learning and (len(vals) < 3 or creeping))):
        return Finding(
            (last_val.line,),
            f"{val.key} {fmt(last_val.value)} against {train.key} {fmt(last_train.value)} {at(last_val)}"
            + ("" if len(vals) < 3 else f" (best {val.key} {fmt(best.value)} {at(best)})"),
        )
    if len(vals) < 3:
        return None
    if not wide or gap_now < max(2 * gap_then, gap_then + 0.1) or not stalled:
        return None  # a validation curve still reaching new bests is learning, whatever the gap
    if val.group != ACC and last_train.value > 0.8 * first_train.value:
        return None  # training hardly improved either: the gap is a noisy validation curve, not memorising
    if val.group == ACC and last_train.value - first_train.value < 0.05:
        return None  # nor does a training accuracy that hardly moved memorise anything
    if _last_value_an_outlier(vals, last_train.value, sign, gap_now):
        return None
    return Finding(
        (first_val.line, last_val.line),
        f"gap between {val.key} and {train.key} grew from {fmt(gap_then)} {at(first_val)} to {fmt(gap_now)} "
        f"{at(last_val)}",
    )


def val_flat_train_falling(train: Series | None, val: Series | None) -> Finding | None:
    """Validation loss flat for six or more evaluations (its best under 3% below where the stretch began) while
    training loss fell by a fifth or more, and validation ends well above training: the model learns only the
    training set. The stretch is the whole curve, or all of it after a first third in which validation still fell
    (the first epochs of any run). A training loss that jumps around (a regression's per-epoch loss over a few
    batches: 8.6e6, 7.5e6, 5.8e6, 11.9e6 ...) must fall in its trend too, not only from one endpoint to the other."""
    if train is None or val is None or val.group != LOSS or train.group != LOSS:
        return None
    vals = finite(val.points)
    for start in dict.fromkeys((0, len(vals) // 3)):
        stretch = vals[start:]
        if len(stretch) < 6 or stretch[0].value <= 0:
            continue
        if all(significant_digits(p.value) < 2 for p in stretch):
            continue  # printed to one digit (0.0005), a 3% move is invisible: no flatness can be read
        best = min(p.value for p in stretch)
        then, now = train_near(train, stretch[0]), train_near(train, stretch[-1])
        if then is None or now is None or then is now or then.value <= 0:
            continue
        flat = (stretch[0].value - best) / stretch[0].value < 0.03
        between = [p for p in finite(train.points) if then.line <= p.line <= now.line]
        first_third, last_third = thirds_means(between)
        falling = now.value <= 0.8 * then.value and last_third <= 0.9 * first_third
        last = stretch[-1].value
        apart = last >= 1.3 * max(now.value, 1e-9) and last - now.value >= 0.05 * last
        if flat and falling and apart:
            return Finding(
                (stretch[0].line, stretch[-1].line),
                f"{val.key} {fmt(stretch[0].value)} {at(stretch[0])}, {fmt(last)} {at(stretch[-1])} (best "
                f"{fmt(best)}) while {train.key} went {fmt(then.value)} -> {fmt(now.value)}",
            )
    return None


def val_never_improved(val_loss: Series | None, val_acc: Series | None, train: Series | None) -> Finding | None:
    """Six or more validation results and none clearly better than the first, the accuracy low (under 0.5), and
    training not far ahead of validation: nothing the model learns carries over, and it learns little at all."""
    if val_acc is None or not val_acc.chance:
        return None
    accs = finite(val_acc.points)
    if len(accs) < 6 or max(p.value for p in accs) >= 0.5 or max(p.value for p in accs) - accs[0].value > 0.1:
        return None
    if val_loss is not None:
        losses = finite(val_loss.points)
        if len(losses) >= 2 and (losses[0].value - min(p.value for p in losses)) / max(losses[0].value, 1e-9) >= 0.03:
            return None
        if train is not None and train.group == LOSS and losses:
            now = train_near(train, losses[-1])
            if now is not None and losses[-1].value >= 1.3 * max(now.value, 1e-9):
                return None  # training far ahead: that is a gap, not a model that cannot learn
    first, last = accs[0], accs[-1]
    return Finding(
        (first.line, last.line),
        f"{val_acc.key} {fmt(first.value)} {at(first)}, {fmt(last.value)} {at(last)}: never clearly better over "
        f"{len(accs)} evaluations",
    )


def val_loss_never_improved(val_loss: Series | None, train: Series | None) -> Finding | None:
    """With no accuracy printed (a regression, a loss-only log): six or more validation losses from the start of
    training and none 3% better than the first, while the training loss after its first value barely moved either
    (under 15%) and sits level with validation (not a gap): the model learns nothing, on any data."""
    if val_loss is None or train is None or val_loss.group != LOSS or train.group != LOSS:
        return None
    losses = finite(val_loss.points)
    if len(losses) < 6 or losses[0].value <= 0 or not early(losses[0]):
        return None
    if (losses[0].value - min(p.value for p in losses)) / losses[0].value >= 0.03:
        return None
    then, now = train_near(train, losses[1]), train_near(train, losses[-1])
    if then is None or now is None or then is now or then.value <= 0:
        return None
    if abs(then.value - now.value) / then.value >= 0.15 or now.value < 0.75 * losses[-1].value:
        return None
    first, last = losses[0], losses[-1]
    return Finding(
        (first.line, last.line),
        f"{val_loss.key} {fmt(first.value)} {at(first)}, {fmt(last.value)} {at(last)}: never 3% better over "
        f"{len(losses)} evaluations, and {train.key} {fmt(then.value)} -> {fmt(now.value)}",
    )


def _last_value_an_outlier(vals: list[Point], train_now: float, sign: float, gap_now: float) -> bool:
    """A noisy validation curve (six or more values) whose last third sits, at its median, under half the gap its
    last value shows: the run ended on one bad evaluation, not on a gap that grew (val_loss 0.03-0.07 with 0.53 and
    0.56 between them)."""
    if len(vals) < 6:
        return False
    recent = sorted(p.value for p in vals[-max(3, len(vals) // 3) :])
    return sign * (recent[len(recent) // 2] - train_now) < 0.5 * gap_now


def _thirds_trend(points: list[Point], lower_better: bool) -> float:
    """How much better the last third of a curve is than its first third, in the curve's own units."""
    first, last = thirds_means(points)
    return first - last if lower_better else last - first


def val_crept_up(val: Series | None, train: Series | None) -> Finding | None:
    """A validation loss that rose at most of its evaluations since its best (three or more), if only a little,
    clearly more up than down, while the training loss still fell: the start of memorising. Early stopping on such
    a curve stopped an overfitting run; the finding alone is too small a rise to say so (see overfitting.yaml).
    An accuracy-like pair (AUC, accuracy) is judged on its error, one minus the value, as a loss."""
    if val is None or train is None or (val.group == ACC) != (train.group == ACC):
        return None
    error = val.group == ACC
    points = finite(val.points)
    if len(points) < 5 or (error and not all(0 <= p.value <= 1 for p in points)):
        return None
    values = [1 - p.value if error else p.value for p in points]
    best_at = min(range(len(values)), key=values.__getitem__)
    after = values[best_at:]
    # four or more evaluations since the best: three values above it in a row are an ordinary wobble one time in six
    if best_at < 1 or len(after) < 5 or values[best_at] <= 0:
        return None
    steps = [b - a for a, b in zip(after, after[1:], strict=False)]
    up = sum(d for d in steps if d > 0)
    down = -sum(d for d in steps if d < 0)
    if sum(d > 0 for d in steps) < 0.7 * len(steps) or up < 3 * down or values[-1] < 1.005 * values[best_at]:
        return None
    half = len(after) // 2
    later = sum(after[-half:]) / half
    jumps = sorted(abs(d) for d in steps)
    if later <= sum(after[1 : half + 1]) / half or later - after[0] < 2 * jumps[len(jumps) // 2]:
        return None  # a climb that carried it clear of its best, not a wobble above it that happens to step up
    then, now = train_near(train, points[best_at]), train_near(train, points[-1])
    if then is None or now is None or then is now:
        return None
    if (1 - now.value >= 0.97 * (1 - then.value)) if error else now.value >= 0.97 * then.value:
        return None
    best, last = points[best_at], points[-1]
    return Finding(
        (best.line, last.line),
        f"{val.key} best {fmt(best.value)} {at(best)}, then {'lower' if error else 'higher'} at "
        f"{sum(d > 0 for d in steps)} of the "
        f"{len(steps)} evaluations after it, {fmt(last.value)} {at(last)}, while {train.key} went {fmt(then.value)} "
        f"-> {fmt(now.value)}",
    )


def val_saturated_train_falling(train: Series | None, val: Series | None) -> Finding | None:
    """Over the last four evaluations (of five or more) validation gained under 5% while the training loss fell by
    two fifths or more, and validation ends three times the training loss or worse, after it had improved earlier:
    what training still learns no longer carries over (overfitting under way). For accuracies: validation gained
    under one point while training gained five or more and is 15 points ahead."""
    if train is None or val is None or train.group != val.group or val.group not in (LOSS, ACC):
        return None
    vals = finite(val.points)
    if len(vals) < 5:
        return None
    span = vals[-4:]
    then, now = train_near(train, span[0]), train_near(train, span[-1])
    if then is None or now is None or then is now:
        return None
    if val.group == LOSS:
        if span[0].value <= 0 or then.value <= 0 or all(significant_digits(p.value) < 2 for p in span):
            return None  # ... and a loss printed to one digit (0.0005) cannot show a 5% gain
        gained = (span[0].value - min(p.value for p in span[1:])) / span[0].value
        improved_before = vals[0].value >= 1.2 * span[0].value
        learning = now.value <= 0.6 * then.value
        apart = span[-1].value >= 3 * max(now.value, 1e-9)
        saturated = gained < 0.05
    else:
        gained = max(p.value for p in span[1:]) - span[0].value
        improved_before = span[0].value - vals[0].value >= 0.05
        learning = now.value - then.value >= 0.05
        apart = now.value - span[-1].value >= 0.15
        saturated = gained < 0.01
    if not (saturated and improved_before and learning and apart):
        return None
    return Finding(
        (span[0].line, span[-1].line),
        f"{val.key} {fmt(span[0].value)} {at(span[0])}, {fmt(span[-1].value)} {at(span[-1])} while {train.key} went "
        f"{fmt(then.value)} -> {fmt(now.value)}: validation stopped improving as training kept learning",
    )
