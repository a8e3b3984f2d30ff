"""Judgements that a run blew up: a steady training loss that doubled and stayed up, a loss that overflowed from an
ordinary start, a loss that turned NaN, a perplexity worse than any uniform guess. Each is the curve's evidence for
numerical instability (the loss_spiked fact)."""

from __future__ import annotations

import math

from bot.diagnosis.curves.finding import WINDOW, Finding, at, finite, first_to_last, fmt, step_count
from bot.diagnosis.curves.series import ERROR, LOSS, TRAIN, Curves, Point, Series


def loss_spiked(series: Series | None) -> Finding | None:
    """A training loss steady over three or more values, then at 1.5 times that level or more at every later value
    (two or more) and at least double it at one of them, the step count going on: the run blew up mid-training and
    did not come back (fp16 overflow, a bad batch, a learning rate too high for this stage). A run restarted from
    scratch counts its steps from the start again: no spike."""
    if series is None or series.group != LOSS:
        return None
    points = finite(series.points)[-WINDOW:]
    overflowed = loss_overflowed(series)
    if overflowed is not None:
        return overflowed
    jumped = _loss_jumped_hundredfold(points) or _loss_grew_without_bound(points) or _loss_kept_doubling(points)
    if jumped is not None:
        return jumped
    for index in range(3, len(points) - 1):
        before = [p.value for p in points[max(0, index - 8) : index]]
        level, low = max(before), min(before)
        if low <= 0.05 or level > 1.2 * low:
            continue  # no steady stretch before it (a noisy per-batch loss jumps about)
        after = points[index:]
        if len(after) < 2 or max(p.value for p in after) < 2 * level or any(p.value < 1.5 * level for p in after):
            continue
        counts = [step_count(p) for p in points[max(0, index - 8) :]]
        if None in counts or any(b <= a for a, b in zip(counts, counts[1:], strict=False)):
            return None  # no step numbers, or they start over: a new run, not a spike
        peak = max(after, key=lambda p: p.value)
        return Finding(
            (points[index - 1].line, peak.line),
            f"{series.key} steady near {fmt(level)} until {points[index - 1].step}, {fmt(after[0].value)} "
            f"{at(after[0])} and still {fmt(after[-1].value)} {at(after[-1])}: the run blew up and did not recover",
        )
    return None


ASTRONOMICAL = 1e12  # no loss a model is trained on reaches this from an ordinary start: the numbers overflowed
EXPLODED_NORM = 1e9  # no healthy run's gradients reach this norm (knowledge/numerical_instability.yaml's line pattern)


def gradient_norm_exploded(curves: Curves) -> Finding | None:
    """A metrics table's gradient-norm column at a billion or more, or not finite (inf, nan), at two or more of its
    rows: the gradients exploded. The knowledge base's patterns read a norm printed beside its name on one line
    ("grad_norm: 1e12"); a table's value sits under its header, rows away."""
    exploded = [(line, value) for line, value in curves.grad_norms if not value < EXPLODED_NORM]
    if len(exploded) < 2:
        return None
    (first, value), (last, latest) = exploded[0], exploded[-1]
    return Finding(
        (first, last),
        f"gradient norm {fmt(value)} on log line {first + 1}, {fmt(latest)} on log line {last + 1}: {len(exploded)} "
        f"values of {EXPLODED_NORM:.0e} or more, the gradients exploded",
    )


def loss_overflowed(series: Series | None) -> Finding | None:
    """An ordinary loss (under 1e4) followed by one of 1e12 or more, however few values were printed: the run
    diverged at once (Paddle's "loss: 8035386370816811357582655488.000000" twenty batches in), so it counts even
    in the first batches of a run, where no other curve verdict is given. An excerpt that starts after the blow-up
    counts too: every value 1e12 or more, two or more of them, the last no lower than the first (a loss on
    unscaled regression targets can start that high, but it falls)."""
    if series is None or series.group != LOSS:
        return None
    points = finite(series.points)[-WINDOW:]
    for index, point in enumerate(points[:-1]):
        if point.value >= 1e4:
            continue
        peak = max(points[index + 1 :], key=lambda p: p.value)
        if peak.value >= ASTRONOMICAL:
            return Finding(
                (point.line, peak.line),
                f"{fmt(point.value)} {at(point)}, then {fmt(peak.value)} {at(peak)}: the loss overflowed",
            )
        return None
    if len(points) >= 2 and min(p.value for p in points) >= ASTRONOMICAL and points[-1].value >= points[0].value:
        first, last = points[0], points[-1]
        return Finding(
            (first.line, last.line),
            f"{fmt(first.value)} {at(first)}, {fmt(last.value)} {at(last)}: the loss is {ASTRONOMICAL:.0e} or more "
            "at every value and does not come down, the run had already blown up",
        )
    return None


def _loss_jumped_hundredfold(points: list[Point]) -> Finding | None:
    """A loss a hundred times its previous value or more, and fifty times it or more at every later value (two or
    more), the step count not starting over: no noise moves a loss that far, however few values came before."""
    for index in range(1, len(points) - 1):
        before, after = points[index - 1], points[index:]
        if before.value <= 0.05 or min(p.value for p in after) < 50 * before.value:
            continue
        values = [before.value, *(p.value for p in after)]
        if max(values[1:]) < 100 * before.value or _running_total(values):
            continue
        counts = [step_count(p) for p in points[index - 1 :]]
        if None in counts or any(b < a for a, b in zip(counts, counts[1:], strict=False)):
            return None
        peak = max(after, key=lambda p: p.value)
        return Finding(
            (before.line, peak.line),
            f"loss {fmt(before.value)} {at(before)}, then {fmt(after[0].value)} {at(after[0])} and {fmt(peak.value)} "
            f"{at(peak)}: the run blew up",
        )
    return None


def _loss_grew_without_bound(points: list[Point]) -> Finding | None:
    """A loss that rose at four of every five prints or more, five or more of them, to a hundred times where it
    started, its steps growing too (not a running total's equal ones), the step count going on: the run is
    diverging before it reaches NaN ("loss = 15.94" ... "loss = 308137.38" over a hundred steps)."""
    if len(points) < 5 or points[0].value <= 0.05 or points[-1].value < 100 * points[0].value:
        return None
    values = [p.value for p in points]
    rises = sum(b > a for a, b in zip(values, values[1:], strict=False))
    if rises < 0.8 * (len(values) - 1) or _running_total(values):
        return None
    counts = [step_count(p) for p in points]
    if None in counts or any(b < a for a, b in zip(counts, counts[1:], strict=False)):
        return None
    return Finding(
        (points[0].line, points[-1].line),
        f"loss {fmt(values[0])} {at(points[0])}, rising at {rises} of {len(values) - 1} prints to {fmt(values[-1])} "
        f"{at(points[-1])}: the run is diverging",
    )


def _loss_kept_doubling(points: list[Point]) -> Finding | None:
    """A loss that at least doubled at each of three or more prints in a row, to a hundred times where that began,
    the step count going on: too few prints for `_loss_grew_without_bound`, but no healthy loss grows like that and
    a running total's steps are equal ("loss: 241.5872" ... "loss: 51775.6875" four epochs later)."""
    start = 0
    for index in range(1, len(points) + 1):
        if index < len(points) and points[index].value >= 2 * points[index - 1].value:
            continue
        first, last = points[start], points[index - 1]
        if index - 1 - start >= 3 and first.value > 0.05 and last.value >= 100 * first.value:
            counts = [step_count(p) for p in points[start:index]]
            if None not in counts and all(b > a for a, b in zip(counts, counts[1:], strict=False)):
                return Finding(
                    (first.line, last.line),
                    f"loss {fmt(first.value)} {at(first)}, at least doubling at each of the next {index - 1 - start} "
                    f"prints to {fmt(last.value)} {at(last)}: the run is diverging",
                )
        start = index
    return None


def _running_total(values: list[float]) -> bool:
    """Values that grow by about the same amount at every print, three times or more: a sum of per-batch losses
    printed before it is divided or reset (`running_loss += loss.item()`), not a loss that blew up."""
    steps = [b - a for a, b in zip(values, values[1:], strict=False)]
    if len(steps) < 3 or min(steps) <= 0:
        return False
    mean = sum(steps) / len(steps)
    return all(0.6 * mean <= step <= 1.4 * mean for step in steps)


def _never_finite(curves: Curves) -> Finding | None:
    losses = [s for s in curves.series.values() if s.split == TRAIN and s.group == LOSS]
    if not losses or any(len(s.points) < 3 or any(math.isfinite(p.value) for p in s.points) for s in losses):
        return None
    points = losses[0].points
    return Finding(
        (points[0].line, points[-1].line),
        f"{losses[0].key} {points[0].value} {at(points[0])} and at every value after it, the last {at(points[-1])}: "
        "the run diverged from its first step",
    )


def loss_went_nan(curves: Curves) -> Finding | None:
    """A loss (or error) printed as a number two or more times, then NaN or infinite at each of its last two or more
    values: the run diverged where it turned (a table or CSV row of NaNs names no "loss" beside the nan itself).
    A run whose every training loss is NaN at each of three or more values diverged from its first step (one NaN
    column beside numbers is a metric the script never filled; a validation column may hold NaN where no evaluation
    ran)."""
    never = _never_finite(curves)
    if never is not None:
        return never
    for series in curves.series.values():
        if series.group not in (LOSS, ERROR):
            continue
        points = series.points
        bad = next((i + 1 for i in range(len(points) - 1, -1, -1) if math.isfinite(points[i].value)), 0)
        if bad < 2 or len(points) - bad < 2:
            continue
        last, first_bad = points[bad - 1], points[bad]
        return Finding(
            (last.line, first_bad.line),
            f"{series.key} {fmt(last.value)} {at(last)}, then {first_bad.value} {at(first_bad)} and at every value "
            f"after it: the run diverged",
        )
    return None


# A perplexity is e to the cross-entropy per token; guessing uniformly over a vocabulary of V tokens scores V. No
# tokenizer in use has a million tokens (262,144 is among the largest): above that the model is worse than any
# uniform guess - it diverged, it is not slow.
_PPL_BEYOND_ANY_VOCABULARY = 1e6
_PERPLEXITY_WORDS = ("ppl", "perplexity")


def perplexity_beyond_any_vocabulary(curves: Curves) -> Finding | None:
    """A perplexity above a million at each of its last three or more values (training or validation)."""
    for series in curves.series.values():
        if series.norm.rsplit("/", 1)[-1] not in _PERPLEXITY_WORDS:
            continue
        points = finite(series.points)[-3:]
        if len(points) == 3 and all(p.value >= _PPL_BEYOND_ANY_VOCABULARY for p in points):
            return first_to_last(
                series, points, "worse than guessing uniformly over any vocabulary (a million tokens): diverged"
            )
    return None


def nonfinite_only_at_start(curves: Curves) -> bool:
    """Every loss (or error) series printed NaN or infinite at its first value only, finite values following - three
    or more, or one or more while another series logged three or more finite values after it (cs231n's solver prints
    the loss every hundred iterations and the accuracies every epoch): the first batch or evaluation overflowed (an
    untrained model's extreme logits, a log of a zero) and training went on from it - the run did not diverge. A NaN
    that enters the weights makes every later value NaN."""
    broken = [
        s.points
        for s in curves.series.values()
        if s.group in (LOSS, ERROR) and not all(math.isfinite(p.value) for p in s.points)
    ]

    def went_on(points: list[Point]) -> bool:
        if len(points) >= 4:
            return True
        after = points[0].line
        return len(points) >= 2 and any(
            sum(p.line > after and math.isfinite(p.value) for p in s.points) >= 3 for s in curves.series.values()
        )

    return bool(broken) and all(
        not math.isfinite(points[0].value) and all(math.isfinite(p.value) for p in points[1:]) and went_on(points)
        for points in broken
    )


def validation_loss_never_finite(curves: Curves) -> bool:
    """A validation loss NaN or infinite at each of its three or more evaluations, never a number, while every
    training loss is a number at each of its three or more values: the run trains, and what fails is the evaluation's
    loss (an empty or fully masked batch, a log of zero) - no divergence, whose NaN in the weights reaches the
    training loss too."""
    training = [s for s in curves.series.values() if s.split == TRAIN and s.group == LOSS]
    held_out = [s for s in curves.series.values() if s.split != TRAIN and s.group == LOSS]
    broken = [s for s in held_out if not all(math.isfinite(p.value) for p in s.points)]
    return (
        bool(training and broken)
        and all(len(s.points) >= 3 and all(math.isfinite(p.value) for p in s.points) for s in training)
        and all(len(s.points) >= 3 and not any(math.isfinite(p.value) for p in s.points) for s in broken)
    )
