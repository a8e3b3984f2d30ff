"""Judgements against chance level: a loss at ln k or an accuracy at 1/k for a k-class problem, a binary logloss
no better than ln 2, and early-stopping messages that stopped at chance."""

from __future__ import annotations

import math

from bot.diagnosis.curves.finding import (
    WINDOW,
    Finding,
    at,
    early,
    finite,
    first_sliver_of_the_first_epoch,
    first_steps_only,
    first_to_last,
    fmt,
    thirds_means,
)
from bot.diagnosis.curves.series import ACC, LOSS, Curves, Point, Series

_CHANCE_CLASSES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 100, 1000)
COMMON_K = (2, 10, 100, 1000)  # class counts common enough that a validation loss at ln k is no coincidence
# with an accuracy to confirm it, a loss at ln k names any common class count (ESC-50, 20 Newsgroups, CUB-200...)
_PAIR_CLASSES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 20, 50, 100, 200, 1000)


def loss_at_chance(series: Series | None, classes: tuple[int, ...] = _CHANCE_CLASSES) -> Finding | None:
    if series is None or series.group == ACC or (series.group == LOSS and not series.chance):
        return None
    tolerance = 0.015 if series.group == LOSS else 0.002  # an "error" printed at ln k to 3 decimals is a loss
    points = finite(series.points)[-WINDOW:]
    if first_sliver_of_the_first_epoch(points):  # an untrained model's loss at ln k, minutes into any run
        return None
    if len(points) == 2 and series.group == LOSS:  # two values only: both at ln k of a usual class count, closely
        for k in COMMON_K:
            if all(abs(p.value - math.log(k)) <= 0.003 * math.log(k) for p in points):
                return Finding(
                    (points[0].line, points[1].line),
                    f"{series.key} {fmt(points[0].value)} {at(points[0])}, {fmt(points[1].value)} {at(points[1])}: "
                    f"ln({k}) = {math.log(k):.3f}, the loss of a model guessing uniformly over {k} classes",
                )
    if len(points) < 3:
        return None
    values = sorted(p.value for p in points)
    median = values[len(values) // 2]
    if median <= 0:
        return None
    if (values[-1] - values[0]) / median > 0.06:
        return _frozen_at_chance(series, points) or _noisy_at_chance(series, points, classes)
    if first_steps_only(points):
        return None
    # a curve that came down to ln k from twice that or more learnt its way there: the level is a coincidence of
    # scale (a 1000-class loss settling at 1.61 = ln 5), not a model guessing uniformly
    start = finite(series.points)[0].value
    # late in a run (epoch 200), a loss near ln 3 or ln 7 is as likely a coincidence of scale: there an unusual class
    # count must be met to 0.2% (1.0986 at ln 3 = 1.0986 is guessing; a loss drifting 1.099 -> 1.081 is not)
    late = series.group == LOSS and not early(finite(series.points)[0])
    for k in classes:
        near = tolerance if not late or k in COMMON_K else min(tolerance, 0.002)
        if abs(median - math.log(k)) / math.log(k) < near and start <= 2 * math.log(k):
            said = f"ln({k}) = {math.log(k):.3f}, the loss of a model guessing uniformly over {k} classes"
            return first_to_last(series, points, said)
    return None


def _frozen_at_chance(series: Series, points: list[Point]) -> Finding | None:
    """A loss whose last three readings are one and the same number at ln k of a usual class count, however the run
    began: the model gives every input the same uniform guess and nothing moves it any more. A model that learns,
    even slowly, never prints the same value at ln k three times over. (A step the log names counts once, however
    often its value is printed; lines that name no step each count as a reading.)"""
    if series.group != LOSS:
        return None
    readings: list[Point] = []
    for point in points:  # one reading per step: a step's value printed twice ("loss = x", "output #0: loss = x")
        if readings and point.step is not None and point.step == readings[-1].step:
            readings[-1] = point
        else:
            readings.append(point)
    tail = readings[-3:]
    if len(tail) < 3 or first_steps_only(tail) or len({round(p.value, 4) for p in tail}) != 1:
        return None
    for k in COMMON_K:
        if abs(tail[-1].value - math.log(k)) <= 0.001 * math.log(k):
            said = (
                f"the same value at each of its last {len(tail)} readings, ln({k}) = {math.log(k):.3f}: the loss of a "
                f"model guessing uniformly over {k} classes, no longer moved by training"
            )
            return first_to_last(series, tail, said)
    return None


def _noisy_at_chance(series: Series, points: list[Point], classes: tuple[int, ...]) -> Finding | None:
    """A per-batch loss that jumps about but hovers at ln k: many values, the later half's median at ln k and hardly
    any of them clearly below it (a model that learns drifts below ln k, however noisy its batches). A loss that came
    down to ln k from twice that or more learnt its way there, as on the smooth branch of loss_at_chance."""
    if series.group != LOSS or len(points) < 12:
        return None
    start = finite(series.points)[0].value
    values = [p.value for p in points]
    tail = values[len(values) // 2 :]
    quarter = len(tail) // 2
    if sum(tail[quarter:]) / (len(tail) - quarter) < sum(tail[:quarter]) / quarter - 0.02 * tail[0]:
        return None  # still falling: a curve on its way down passes ln k
    later = sorted(tail)
    median = later[len(later) // 2]
    for k in (k for k in classes if k in COMMON_K):  # only the usual class counts: noise covers the rest
        chance = math.log(k)
        below = sum(v < 0.95 * chance for v in later)
        if abs(median - chance) / chance <= 0.04 and below <= 0.1 * len(later) and start < 2 * chance:
            said = (
                f"{len(values)} noisy values around ln({k}) = {chance:.3f}, the loss of a model guessing uniformly "
                f"over {k} classes"
            )
            return first_to_last(series, points, said)
    return None


def chance_pair(loss: Series | None, accs: list[Series]) -> Finding | None:
    """Few values (even a single final one), but two that agree: the loss sits at ln k and an accuracy at 1/k for
    the same k."""
    if loss is None or loss.group != LOSS or not loss.chance:
        return None
    points = finite(loss.points)[-WINDOW:]
    if not points:
        return None
    mean = sum(p.value for p in points) / len(points)
    for k in _PAIR_CLASSES:
        off = abs(mean - math.log(k)) / math.log(k)
        # one value only (a final evaluation, a run summary): it must sit closely at ln k
        if off > (0.05 if k <= 10 else 0.02) or (len(points) == 1 and off > 0.01):
            continue
        # a loss a little off ln k still counts when the accuracy sits at exactly 1/k; with many classes an accuracy
        # under twice 1/k is as good as guessing
        tolerance = (0.02 if off <= 0.03 else 0.005) if k <= 10 else 1.0 / k
        for acc in accs:
            last = finite(acc.points)
            if acc.chance and last and abs(last[-1].value - 1.0 / k) <= tolerance:
                return Finding(
                    (points[0].line, last[-1].line),
                    f"{loss.key} {fmt(mean)} (ln({k}) = {math.log(k):.3f}) and {acc.key} {fmt(last[-1].value)} "
                    f"(1/{k}): the model guesses among {k} classes",
                )
    return None


def _settled(series: Series) -> list[Point]:
    """A series' last WINDOW values after its first third: where a run that learns nothing has settled (the first
    epochs may still carry the random start, a loss of 2.6 before 1.1)."""
    points = finite(series.points)[-WINDOW:]
    return points[len(points) // 3 :]


def noisy_chance_pair(loss: Series | None, accs: list[Series]) -> Finding | None:
    """Over six or more evaluations, a loss and an accuracy that jump about but stay at chance together: the loss's
    settled values centred on ln k and not coming down, an accuracy's centred on 1/k. Each single value may miss ln k
    or 1/k by a few percent (a small evaluation set's noise), their middle does not."""
    if loss is None or loss.group != LOSS or not loss.chance or len(finite(loss.points)) < 6:
        return None
    settled = _settled(loss)
    values = sorted(p.value for p in settled)
    median = values[len(values) // 2]
    half = len(settled) // 2
    earlier, later = settled[:half], settled[half:]
    if sum(p.value for p in later) / len(later) < 0.97 * sum(p.value for p in earlier) / len(earlier):
        return None  # still coming down: a run on its way past ln k
    for k in (k for k in _CHANCE_CLASSES if k <= 10):
        if abs(median - math.log(k)) > 0.05 * math.log(k):
            continue
        for acc in accs:
            if not acc.chance or len(finite(acc.points)) < 6:
                continue
            centre = sorted(p.value for p in _settled(acc))
            middle = centre[len(centre) // 2]
            if abs(middle - 1.0 / k) <= max(0.03, 0.15 / k):
                return Finding(
                    (settled[0].line, settled[-1].line),
                    f"{loss.key} around {fmt(median)} (ln({k}) = {math.log(k):.3f}) and {acc.key} around "
                    f"{fmt(middle)} (1/{k}) over {len(settled)} evaluations: the model guesses among {k} classes",
                )
    return None


def binary_logloss_above_chance(curves: Curves) -> Finding | None:
    """A binary log loss (XGBoost/LightGBM 'logloss', 'binary_logloss') that never gets below ln 2 = 0.693: the
    model does no better than a coin; or an AUC that stays at 0.5."""
    for series in curves.series.values():
        points = finite(series.points)
        if len(points) < 5:
            continue
        words = series.norm.split("/")
        values = [p.value for p in points]
        binary = "logloss" in words and not {"multi", "mlogloss"} & set(words)
        if binary and len(points) >= 8 and min(values) >= 0.97 * math.log(2):
            return Finding(
                (points[0].line, points[-1].line),
                f"{series.key} {fmt(values[0])} {at(points[0])}, {fmt(values[-1])} {at(points[-1])}: never below "
                f"ln(2) = 0.693, the log loss of a coin toss",
            )
        if words[-1] == "auc" and max(values) <= 0.55 and min(values) >= 0.45:
            return Finding(
                (points[0].line, points[-1].line),
                f"{series.key} {fmt(values[0])} {at(points[0])}, {fmt(values[-1])} {at(points[-1])}: an AUC of 0.5 "
                "is a ranking no better than chance",
            )
    return None


def acc_at_chance(series: Series | None) -> Finding | None:
    if series is None or not series.chance or series.group != ACC:
        return None
    points = finite(series.points)[-WINDOW:]
    if len(points) < 3 or first_steps_only(points):  # an untrained model guesses too: too soon to judge
        return None
    values = [p.value for p in points]
    if max(values) - min(values) > 0.03:
        return None
    median = sorted(values)[len(values) // 2]
    for k in _CHANCE_CLASSES:
        if abs(median - 1.0 / k) <= max(0.01, 0.05 / k):
            return first_to_last(series, points, f"1/{k}, the accuracy of guessing among {k} classes")
    return None


def stuck_at_chance_messages(curves: Curves) -> Finding | None:
    """Keras: `val_acc did not improve from 0.10000`, again and again, at 1/k."""
    stuck = [(line, key, value) for line, key, value, improved in curves.improve_messages if not improved]
    if len(stuck) < 2:
        return None
    line, key, value = stuck[-1]
    if "acc" not in key.lower():
        return None
    for k in _CHANCE_CLASSES[:9]:
        if abs(value - 1.0 / k) <= 0.01:
            return Finding(
                (stuck[0][0], line),
                f"{key} did not improve from {fmt(value)} ({len(stuck)} times): 1/{k}, the accuracy of guessing "
                f"among {k} classes",
            )
    return None


def _binary_entropy(p: float) -> float:
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


def class_prior_baseline(acc: Series | None, loss: Series | None, other: Series | None = None) -> Finding | None:
    """A model that outputs the class prior of an imbalanced binary task: its accuracy is the majority share p, flat
    (every value within 0.05 of the median), and its log loss the binary entropy of p - the loss of predicting p
    for every input. A model that learnt something at the same accuracy is confident where it is right: its loss
    sits well below that entropy. Only from the start of training: late in a run a weak but healthy model is flat
    too."""
    if acc is None or loss is None or acc.group != ACC or not acc.chance or loss.group != LOSS or not loss.chance:
        return None
    accs = finite(acc.points)  # all of it: flat from the start of training (a late excerpt of a converged run is flat)
    losses = finite(loss.points)
    if len(accs) < 3 or len(losses) < 3 or not early(accs[0]):
        return None
    # the first epoch's mean may still carry the random start (0.70 before 0.795 from then on): judged from the second
    # value on when four or more follow it
    settled = accs[1:] if len(accs) >= 5 else accs
    values = sorted(p.value for p in settled)
    p = values[len(values) // 2]
    # above 0.9 a converged model's loss comes close to the entropy too (0.93 right, loss 0.25): no telling apart
    if not 0.55 <= p <= 0.9 or values[-1] - p > 0.05 or p - values[0] > 0.05:
        return None
    # a prior's accuracy does not climb: one whose last third averages two points or more above its first third is
    # a model learning slowly, whatever its loss happens to equal (10-class Fashion-MNIST at 0.84 beside a loss of 0.44)
    first, last = thirds_means(settled)
    if last - first >= 0.02:
        return None
    # the other split's accuracy (training beside validation): a model predicting the prior scores p on both; one that
    # climbs well above p on training has learnt (and may be memorising), whatever its validation accuracy does
    beyond = finite(other.points)[-3:] if other is not None and other.group == ACC else []
    if beyond and max(q.value for q in beyond) > p + 0.05:
        return None
    # the loss settled there: its later half steady (it may first come down from ln 2 to the entropy)
    later = sorted(q.value for q in losses[len(losses) // 2 :])
    level = later[len(later) // 2]
    entropy = _binary_entropy(p)
    if abs(level - entropy) > 0.06 * entropy or later[-1] > 1.1 * level or later[0] < 0.9 * level:
        return None
    return Finding(
        (accs[0].line, accs[-1].line),
        f"{acc.key} {fmt(accs[0].value)} {at(accs[0])}, {fmt(accs[-1].value)} {at(accs[-1])} with {loss.key} near "
        f"{fmt(level)}: the binary entropy of {fmt(p)} is {entropy:.3f}, the loss of predicting the class prior for "
        "every input",
    )
