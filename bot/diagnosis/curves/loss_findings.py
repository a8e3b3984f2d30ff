"""Judgements on the training curve: flat, stopped, a high plateau, a metric stuck at one value, a score at zero
(the judgements against chance level are in bot.diagnosis.curves.chance_findings; answers on held-out data that
never change, in bot.diagnosis.curves.held_out_findings)."""

from __future__ import annotations

import math

from bot.diagnosis.curves.chance_findings import COMMON_K
from bot.diagnosis.curves.finding import (
    WINDOW,
    Finding,
    at,
    early,
    finite,
    first_steps_only,
    first_to_last,
    fmt,
    last_value,
    significant_digits,
    sliver_of_an_epoch,
    still_improving,
    thirds_means,
)
from bot.diagnosis.curves.series import ACC, ERROR, LOSS, TRAIN, VAL, Curves, Point, Series


def not_much_better(train: Series) -> bool:
    """The training loss is still within 20% of ln k for some k: no better than guessing by much."""
    last = last_value(train)
    return any(0.8 * math.log(k) <= last <= 1.05 * math.log(k) for k in COMMON_K)


def carried_between_evaluations(points: list[Point]) -> bool:
    """Values printed at consecutive optimiser steps (496, 497, 498...): a per-step batch accuracy moves with each
    batch even for a model that predicts one class; the very same value there is one measured at the last
    evaluation and printed again with every step's line."""
    counts = [p.count for p in points]
    if len(counts) < 3 or any(c is None or c[0] not in ("step", "iteration") for c in counts):
        return False
    return all(b[1] - a[1] == 1 for a, b in zip(counts, counts[1:], strict=False))


def metric_stuck(series: Series | None) -> Finding | None:
    """An accuracy-like metric that does not move: low and flat, or the very same value epoch after epoch
    (the model predicts one class whatever the input)."""
    if series is None or series.group != ACC:
        return None
    points = finite(series.points)[-WINDOW:]
    if len(points) < 3 or first_steps_only(points):  # an untrained model's accuracy sits still too
        return None
    values = [p.value for p in points]
    spread = max(values) - min(values)
    tail = values[-6:]
    # (a score with no chance level - F1, mAP - repeats to 0.002 wherever a model settles: only a low one says so)
    identical = len(tail) >= 5 and max(tail) - min(tail) < 0.002 and max(tail) < (0.9 if series.chance else 0.5)
    # The training accuracy at one value to four decimals eight times or more: one class predicted whatever the
    # input, even one 94% of the data (a small validation set repeats values; a perfect score cannot improve).
    long_tail = values[-8:]
    same = len(long_tail) >= 8 and max(long_tail) - min(long_tail) < 0.0005 and max(long_tail) < 0.99
    # ... but higher at every value than at the one before is a metric still creeping up (a boosted model's training
    # AUC converging round after round), not one class predicted: that accuracy would repeat, or wobble with batches
    same = same and not all(b > a for a, b in zip(long_tail, long_tail[1:], strict=False))
    if not identical and series.split == TRAIN and same:
        identical, tail = True, long_tail
    start = finite(series.points)[0].value  # far above it (0.3, or half the way to perfect): it learnt, converged
    identical = identical and min(tail) - start < min(0.3, 0.5 * (1.0 - start))
    if identical and carried_between_evaluations(points[-len(tail) :]):
        identical = False  # the same value at every one of consecutive steps: a logger repeating its last evaluation
    if identical and len(tail) < len(values):
        points = points[-len(tail) :]
    steps = [b - a for a, b in zip(values, values[1:], strict=False)]
    rising = values[-1] > values[0] and sum(d > 0 for d in steps) >= 0.7 * len(steps)
    low_flat = spread <= 0.01 and sorted(values)[len(values) // 2] <= 0.7 and not rising
    # a score with no chance level (mAP, F1) settles flat wherever a model converges: only near zero it says much
    low_flat = low_flat and (series.chance or max(values) <= 0.1)
    # a few batches of one late epoch: a converged model's accuracy is flat there at whatever level the task allows
    counts = {p.count for p in points}
    one_epoch = len(counts) == 1 and None not in counts and next(iter(counts))[0] == "epoch"
    one_late_epoch = one_epoch and not early(points[0])
    low_flat = low_flat and not one_late_epoch
    # Near zero at ten or more logged values and no higher in the last third than in the first: a small evaluation
    # batch scatters it, but the model learns nothing (a healthy start climbs off zero within that many logs).
    third = len(values) // 3
    low_flat = low_flat or (
        len(values) >= 10 and max(values) <= 0.1 and sum(values[-third:]) <= sum(values[:third]) + 0.01 * third
    )
    if not identical and not low_flat:
        return None
    what = "the very same value" if identical else "no change"
    return first_to_last(series, points, f"{what} over {len(points)} logged values")


def _step_number(point: Point, fallback: int) -> float:
    return point.count[1] if point.count is not None else float(fallback)


def _pace(points: list[Point]) -> float:
    """How fast a stretch of curve changes: its range over the steps it spans (log lines where no step is named)."""
    if len(points) < 2:
        return 0.0
    span = abs(_step_number(points[-1], points[-1].line) - _step_number(points[0], points[0].line)) or 1.0
    return (max(p.value for p in points) - min(p.value for p in points)) / span


def stuck_tail(series: Series | None) -> Finding | None:
    """The loss stopped changing at all: its last eight or more values are the same to 0.2%, at a level well above
    zero, after it had moved (weights no longer updated, or a model that collapsed to a constant output)."""
    if series is None or series.group == ACC:
        return None
    points = finite(series.points)
    if len(points) < 10 or points[0].value <= 0:
        return None
    tail, before = points[-8:], points[:-8]
    level = sum(p.value for p in tail) / len(tail)
    spread = max(p.value for p in tail) - min(p.value for p in tail)
    moved = abs(points[0].value - level) / points[0].value >= 0.05
    if level <= 0.2 * points[0].value or spread > 0.002 * level or not moved:
        return None
    if all(significant_digits(p.value) < 2 for p in tail):
        return None  # a value printed to one significant digit ("Train loss: 0.002") repeats by rounding alone
    # stopped, not merely slow: the tail changes at under 5% of the pace the curve had before it (per logged step)
    if _pace(tail) >= 0.05 * _pace(before + tail[:1]):
        return None
    return Finding(
        (tail[0].line, tail[-1].line),
        f"{series.key} {fmt(tail[0].value)} {at(tail[0])}, {fmt(tail[-1].value)} {at(tail[-1])}: the same value "
        f"{len(tail)} times in a row",
    )


def _accuracy_learnt(curves: Curves) -> bool:
    """An accuracy printed beside the loss shows the model learnt: 0.6 or more is above chance for any class count,
    and a score (F1, AUC, mAP) of 0.6 or more is a model that works (a settled loss late in a run is then a converged
    model, not one that never learnt)."""
    for split in (TRAIN, VAL):
        acc = curves.primary(split, ACC)
        if acc is not None and finite(acc.points) and last_value(acc) >= 0.6:
            return True
    return False


CLIMB = 0.1  # ten points of accuracy gained on held-out data: a model that learns, whatever its loss prints say
LEARNT = 0.6  # an accuracy above chance for any class count (as `_accuracy_learnt` reads it)


def _validation_accuracy_climbed(curves: Curves) -> bool:
    """A validation accuracy printed three or more times whose last value is ten points or more above its first and
    0.6 or more ("Accuracy of the network on 5000 validation images: 60.03" ... "81.43"). One that climbs from 0.14
    to 0.39 on ten digits is a model learning too slowly: the loss may well say flat."""
    acc = curves.primary(VAL, ACC)
    values = [p.value for p in finite(acc.points)] if acc is not None else []
    return len(values) >= 3 and values[-1] - values[0] >= CLIMB and values[-1] >= LEARNT


def _half_wrong_throughout(curves: Curves) -> bool:
    """The validation classification is wrong at least half the time at every one of three or more evaluations (an
    error rate of 0.5 or more, an accuracy of 0.5 or less): a validation loss that eases meanwhile (its calibration
    settling, a frozen body's statistics) is no sign that the model learns the task."""
    for group, half_wrong in ((ERROR, lambda v: 0.5 <= v <= 1.0), (ACC, lambda v: 0.0 <= v <= 0.5)):
        series = curves.primary(VAL, group)
        if series is None or (group == ERROR and "rate" not in series.norm):
            continue  # an error that is no rate (RMSE, MAE) has no "half"
        values = [p.value for p in finite(series.points)]
        if len(values) >= 3 and all(half_wrong(v) for v in values):
            return True
    return False


def warming_up(curves: Curves, points: list[Point]) -> bool:
    """The learning rate printed on the curve's lines rose from its first to its last (by a fifth or more, at most
    steps; or by 5% or more at every step, a slice of a longer warm-up): a warm-up, when a loss that barely moves is
    what a healthy run does. A rate repeated on the next line (every replica's line of one step) counts once."""
    first, last = points[0].line, points[-1].line
    printed = [value for line, value in curves.learning_rates if first <= line <= last]
    rates = [value for i, value in enumerate(printed) if i == 0 or value != printed[i - 1]]
    if len(rates) < 3 or rates[0] <= 0:
        return False
    ups = sum(b > a for a, b in zip(rates, rates[1:], strict=False))
    steady = rates[-1] >= 1.2 * rates[0] and ups >= 0.7 * (len(rates) - 1)
    return steady or (ups == len(rates) - 1 and rates[-1] >= 1.05 * rates[0])


def loss_flat(series: Series | None, val: Series | None, curves: Curves) -> Finding | None:
    """The training loss never moved from where it started (a converged curve moved first, then settled). Seen
    from the start of training, a flat loss is a model that does not learn. An excerpt from later in a run shows a
    settled loss: that counts only for a loss (not a perplexity or error metric) with nothing saying the model
    still improves on validation data. During a learning-rate warm-up a flat loss is no verdict."""
    if series is None or series.group == ACC:
        return None
    points = finite(series.points)
    if len(points) < 5 or points[0].value <= 0:
        return None
    if val is not None and not _half_wrong_throughout(curves):
        vals = [p.value for p in finite(val.points)]
        if len(vals) >= 2 and (vals[0] - min(vals)) / max(abs(vals[0]), 1e-9) >= 0.05:
            return None  # validation improves: the model is learning
    if _validation_accuracy_climbed(curves):
        return None  # a last-batch loss too noisy to trend, beside a held-out accuracy that climbed: it learns
    if not early(points[0]) and (
        series.group != LOSS
        or any(improved for *_, improved in curves.improve_messages)
        or still_improving(curves)
        or _accuracy_learnt(curves)
    ):
        return None
    counted = points[-1].count
    too_soon = counted is not None and counted[0] != "epoch" and counted[1] < 0.1 * curves.planned_steps
    if too_soon or sliver_of_an_epoch(points):  # "Step 3/100" of a longer run, or a tenth of an epoch: too short
        return None
    first = points[0].value
    low = min(p.value for p in points)
    high = max(p.value for p in points[len(points) // 2 :])
    if warming_up(curves, points):
        return None
    if (first - low) / first >= 0.05 or (high - low) / first > 0.1:
        return _no_downward_trend(series.key, points, curves)
    return Finding(
        (points[0].line, points[-1].line),
        f"{series.key} {fmt(first)} {at(points[0])}, {fmt(points[-1].value)} {at(points[-1])}: no improvement "
        f"over {len(points)} logged values",
    )


NOISY_POINTS = 12  # values a batch-to-batch noisy loss needs before its thirds say anything


def _no_downward_trend(key: str, points: list[Point], curves: Curves) -> Finding | None:
    """A loss too noisy for a flat band (single batches), logged from the start of training over three epochs or
    more, whose last third averages no lower than its first third, beside an accuracy that did not rise either."""
    epochs = [p.count[1] for p in points if p.count is not None and p.count[0] == "epoch"]
    if len(points) < NOISY_POINTS or not early(points[0]) or not epochs or max(epochs) - min(epochs) < 2:
        return None
    third = len(points) // 3
    before, after = thirds_means(points)
    if after < 0.97 * before:
        return None
    acc = curves.primary(TRAIN, ACC)
    accuracy = finite(acc.points) if acc is not None else []
    if len(accuracy) >= 2 * third and (rise := thirds_means(accuracy))[1] > rise[0] + 0.02:
        return None  # the accuracy rose: the noise hides a model that learns
    return Finding(
        (points[0].line, points[-1].line),
        f"{key} averaged {fmt(before)} over its first {third} values and {fmt(after)} over its last {third} "
        f"({points[0].step} to {points[-1].step or 'the last value'}): no downward trend",
    )


def loss_plateau_high(series: Series | None, acc: Series | None, curves: Curves) -> Finding | None:
    """From the start of training the loss fell a little, then stopped: it never got below 70% of where it began,
    and the second half of the curve barely moves - far less than the first half did (a curve still falling at a
    steady pace is learning, as is a validation curve still reaching new bests) - while any accuracy stays low."""
    if series is None or series.group == ACC:
        return None
    points = finite(series.points)
    if len(points) < 6 or points[0].value <= 0 or not early(points[0]) or sliver_of_an_epoch(points):
        return None
    accuracy_low = acc is not None and bool(finite(acc.points)) and last_value(acc) < 0.6
    if len({p.step for p in points}) < 2 or (still_improving(curves) and not accuracy_low):
        return None  # one epoch's progress bar, or validation still improving (unless its accuracy stays low)
    if warming_up(curves, points):
        return None  # the learning rate still climbing: a loss that barely moves in a warm-up is no plateau
    values = [p.value for p in points]
    first, second = values[: len(values) // 2 + 1], values[len(values) // 2 :]
    steps = [_step_number(p, -1) for p in points]
    if min(steps) >= 0 and steps == sorted(steps):  # halves of the run, not of the lines: logs skip epochs
        middle = (steps[0] + steps[-1]) / 2
        by_step = [v for v, s in zip(values, steps, strict=True) if s <= middle]
        later = [v for v, s in zip(values, steps, strict=True) if s >= middle]
        if len(by_step) >= 2 and len(later) >= 2:
            first, second = by_step, later
    # a classification accuracy (not a score like mAP, which settles low in healthy runs) printed beside it and still
    # under one half: a loss that fell by up to a half and then stalled learnt too little as well
    floor = 0.5 if acc is not None and acc.chance and finite(acc.points) and last_value(acc) < 0.5 else 0.7
    if min(values) < floor * values[0] or (second[0] - min(second)) / values[0] > 0.05:
        return None  # it got below the floor at some point: it learnt (a last value above it is an evaluation's)
    if max(second) > 1.5 * values[0]:
        return None  # it rose to half again where it began: no plateau, a loss going up (bot.diagnosis.curves.blowups)
    if first[0] - first[-1] > 0 and second[0] - min(second) > (first[0] - first[-1]) / 3:
        return None  # still falling at a steady pace
    if acc is not None and finite(acc.points) and last_value(acc) >= 0.75:
        return None
    return Finding(
        (points[0].line, points[-1].line),
        f"{series.key} {fmt(values[0])} {at(points[0])}, still {fmt(values[-1])} {at(points[-1])}: it fell "
        f"{(1 - values[-1] / values[0]) * 100:.0f}% and stopped",
    )


def loss_all_zero(series: Series | None, curves: Curves) -> Finding | None:
    """A training loss of exactly zero from its first value on, eight times or more, with nothing else on the curve
    moving: the loss never sees a target to learn from (no labels reach it, every token masked out)."""
    if series is None or series.group == ACC:
        return None
    points = finite(series.points)
    if len(points) < 8 or any(p.value != 0 for p in points) or (points[0].step and not early(points[0])):
        return None
    for other in curves.series.values():
        values = [p.value for p in finite(other.points)]
        if other is not series and len(values) >= 2 and max(values) - min(values) > 0.05 * max(abs(v) for v in values):
            return None
    return Finding(
        (points[0].line, points[-1].line),
        f"{series.key} 0 {at(points[0])} and at every one of its {len(points)} logged values: the loss has nothing "
        "to learn from",
    )


def error_rate_stuck(curves: Curves) -> Finding | None:
    """A word or character error rate at 100% evaluation after evaluation (three or more): not one word right, the
    model emits nothing usable (a speech or OCR model that outputs only blanks)."""
    for series in curves.series.values():
        words = series.norm.split("/")
        if words[-1] not in ("wer", "cer"):
            continue
        points = finite(series.points)
        if len(points) < 3:
            continue
        scale = 100.0 if max(p.value for p in points) > 1.5 else 1.0
        if all(0.99 * scale <= p.value <= 1.01 * scale for p in points):
            return first_to_last(series, points, f"every word wrong at all {len(points)} evaluations")
    return None


def score_at_zero(curves: Curves, train: Series | None) -> Finding | None:
    """A score (YOLO mAP, mmseg IoU, an F1, an accuracy) at exactly zero at every one of two or more evaluations while
    the training loss is not falling: not one detection, pixel or positive right, and nothing being learnt. A zero
    mAP in the first epochs of a detector whose loss falls fast is a normal start, so the loss must not fall. Zeros
    printed at one and the same step (an epoch's training and test averages) are one evaluation, not two."""
    if train is None or train.group == ACC:
        return None
    losses = finite(train.points)
    if len(losses) < 2 or losses[0].value <= 0 or losses[-1].value < 0.9 * losses[0].value:
        return None
    if losses[-1].value <= 0.05:
        return None  # a loss that low with a score of zero: the score does not fit the task (a regression's "accuracy")
    for series in curves.series.values():
        if series.group != ACC:
            continue
        points = finite(series.points)
        steps = {p.step for p in points}
        if len(points) >= 2 and all(p.value == 0 for p in points) and (None in steps or len(steps) >= 2):
            return first_to_last(
                series,
                points,
                f"zero at all {len(points)} evaluations while {train.key} went {fmt(losses[0].value)} -> "
                f"{fmt(losses[-1].value)}",
            )
    return None


def loss_recovered(series: Series | None) -> bool:
    """The training loss ended at half its earlier peak or lower: whatever the peak was (a saturated first step,
    a spike), training went on from it. A fact the judgements use, not a finding of its own."""
    if series is None or series.group != LOSS:
        return False
    points = finite(series.points)
    if len(points) < 3:
        return False
    peak = max(p.value for p in points[:-1])
    return peak > 0 and points[-1].value <= 0.5 * peak
