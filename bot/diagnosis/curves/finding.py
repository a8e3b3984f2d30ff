"""A curve finding (the log lines that show it and one sentence stating it) and the readings of a curve that the
judgements in bot.diagnosis.curves.loss_findings and bot.diagnosis.curves.validation_findings share."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bot.diagnosis.curves.series import ACC, ERROR, LOSS, VAL, Curves, Point, Series

WINDOW = 40  # the last values of a series a "stuck" or "at chance" judgement looks at


@dataclass(frozen=True)
class Finding:
    lines: tuple[int, ...]
    summary: str


def finite(points: list[Point]) -> list[Point]:
    return [p for p in points if math.isfinite(p.value)]


def at(point: Point) -> str:
    return f"at {point.step}" if point.step else f"on log line {point.line + 1}"


def step_count(point: Point) -> float | None:
    """The point's iteration, step or epoch number; None when the log names none (or counts rounds, rows...)."""
    count = point.count
    return count[1] if count is not None and count[0] in ("iteration", "step", "epoch") else None


def significant_digits(value: float) -> int:
    """How many significant digits a value was printed with (0.0005: 1; 1.2588: 5)."""
    return len(f"{abs(value):.10g}".split("e")[0].replace(".", "").lstrip("0"))


def fmt(value: float) -> str:
    return f"{value:.4g}"


def first_to_last(series: Series, points: list[Point], said: str) -> Finding:
    """A finding over a stretch of `series`: its first and last points are the evidence, and the sentence names
    both values before saying what they show ("val_loss 2.30 at epoch 1, 2.30 at epoch 9: ln(10) = 2.303, ...")."""
    first, last = points[0], points[-1]
    return Finding(
        (first.line, last.line), f"{series.key} {fmt(first.value)} {at(first)}, {fmt(last.value)} {at(last)}: {said}"
    )


def last_value(series: Series) -> float:
    points = finite(series.points)
    return points[-1].value if points else math.nan


def thirds_means(points: list[Point]) -> tuple[float, float]:
    """The mean of a curve's first third and of its last third: its trend, steadier than two single values."""
    values = [p.value for p in points]
    third = max(1, len(values) // 3)
    return sum(values[:third]) / third, sum(values[-third:]) / third


def early(point: Point) -> bool:
    """Logged at the start of training: epoch 0 or 1, or within the first 1,000 steps or iterations."""
    if point.count is None:
        return False
    word, value = point.count
    return value <= 1 if word in ("epoch", "row") else value <= 1_000


def sliver_of_an_epoch(points: list[Point]) -> bool:
    """Values logged at fractional epochs (`'epoch': 0.25`) within a tenth of one epoch, past its start: a few
    minutes of a long run's first pass, too short a stretch to call its loss flat."""
    counts = [p.count for p in points]
    if not counts or any(c is None or c[0] != "epoch" for c in counts):
        return False
    epochs = [c[1] for c in counts if c is not None]
    return any(e != int(e) for e in epochs) and max(epochs) - min(epochs) < 0.1 and min(epochs) > 0.05


FIRST_STEPS = 50  # optimiser steps in which a loss at ln k or an accuracy at 1/k is only the untrained model's start


def first_steps_only(points: list[Point]) -> bool:
    """Every value from the first few optimiser steps: an untrained model starts at ln k and guesses, so a smooth
    curve there says nothing yet about learning (three steps at ln 1000 are a run that has just begun)."""
    counts = [p.count for p in points]
    return all(c is not None and c[0] in ("step", "iteration") and c[1] < FIRST_STEPS for c in counts)


FIRST_EPOCH_SHARE = 0.05  # fractional epochs ('epoch': 0.01) below this are the first minutes of the first pass


def first_sliver_of_the_first_epoch(points: list[Point]) -> bool:
    """Every value logged at a fractional epoch within the first twentieth of the first one (Hugging Face's
    `'epoch': 0.01`): the first minutes of the first pass, where an untrained model's loss sits at ln k on any run."""
    counts = [p.count for p in points]
    return bool(counts) and all(c is not None and c[0] == "epoch" and 0 < c[1] < FIRST_EPOCH_SHARE for c in counts)


def still_improving(curves: Curves) -> bool:
    """A validation curve that reaches its best at one of its last two values, clearly better than where it began:
    the model is still learning, whatever the training curve looks like."""
    for group in (LOSS, ERROR, ACC):
        val = curves.primary(VAL, group)
        points = finite(val.points) if val is not None else []
        if len(points) < 3:
            continue
        values = [p.value for p in points]
        if group == ACC:
            if max(values[-2:]) >= max(values) and max(values) - values[0] >= 0.01:
                return True
        elif min(values[-2:]) <= min(values) and values[0] - min(values) >= 0.02 * abs(values[0]):
            return True
    return False


def train_near(train: Series, at: int | Point) -> Point | None:
    """The training value logged at, or last before, a log line (else the first one after). On the line itself first:
    a table read from its last row up (newest first) has its earlier steps on later lines. Given a point of another
    series, a training series saved as a list (one metric's values one a line, bot.diagnosis.curves.history) answers
    with its value of the same epoch: its lines say nothing of when."""
    line = at if isinstance(at, int) else at.line
    if train.listed and isinstance(at, Point) and at.step:
        stepped = [p for p in finite(train.points) if p.step == at.step]
        if stepped:
            return stepped[-1]
    same = [p for p in finite(train.points) if p.line == line]
    if same:
        return same[0]
    before = [p for p in finite(train.points) if p.line <= line]
    if before:
        return before[-1]
    after = finite(train.points)
    return after[0] if after else None


# Scores that measure the same thing under different names; a detector's AP against its ROI head's classification
# accuracy, or an AUC against an accuracy, are no gap.
_MEASURES = ({"acc", "accuracy", "top1", "acc1"}, {"map", "map50", "ap", "ap50", "ap75"}, {"f1", "fscore"})


def same_measure(train: Series, val: Series) -> bool:
    a, b = train.norm.rsplit("/", 1)[-1], val.norm.rsplit("/", 1)[-1]
    return a == b or any(a in family and b in family for family in _MEASURES)
