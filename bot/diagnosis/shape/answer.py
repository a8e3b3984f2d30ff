"""The shape model's answer for the rules: a curve class where no rule judged the curve, with the lines that show it
and one sentence stating what the curve did (the best and the latest validation value for overfitting; the first
and the last training value for underfitting)."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

from bot.diagnosis.curves.finding import at, fmt
from bot.diagnosis.curves.series import ACC, ERROR, LOSS, TRAIN, VAL, Curves, Point, Series
from bot.diagnosis.knowledge_schema import UNKNOWN
from bot.diagnosis.shape.features import curve_shape
from bot.diagnosis.shape.model import ShapeModel

OVERFITTING = "overfitting"


@dataclass(frozen=True)
class ShapeAnswer:
    failure_class: str
    confidence: float
    lines: list[int]  # indexes into the document: the points the sentence names
    sentence: str


def shape_answer(model: ShapeModel, curves: Curves, findings: Collection[str]) -> ShapeAnswer | None:
    """The model's likeliest class other than `unknown`, when it is likely enough (the model file's
    `answer.min_probability`) and the curve has the series its sentence needs; None otherwise."""
    probabilities = model.probabilities(curve_shape(curves, findings))
    named = [c for c in model.classes if c != UNKNOWN]
    best = max(named, key=lambda c: probabilities[c])
    if probabilities[best] < model.answer_min:
        return None
    shown = _validation_turn(curves) if best == OVERFITTING else _training_course(curves)
    if shown is None:
        return None
    lines, sentence = shown
    return ShapeAnswer(best, model.answer_curve(probabilities[best]), lines, sentence)


def doubted_confidence(model: ShapeModel, curves: Curves, findings: Collection[str], confidence: float) -> float:
    """A rule's curve answer's confidence, lowered where the model reads the curve as a healthy run's (from the
    file's `doubt.min_probability`) to how often such answers were right on curves the model had not seen."""
    if model.doubt_min is None or model.doubt_curve is None:
        return confidence
    healthy = model.probabilities(curve_shape(curves, findings))[UNKNOWN]
    if healthy < model.doubt_min:
        return confidence
    return min(confidence, round(model.doubt_curve(1.0 - healthy), 3))


def _series(curves: Curves, split: str) -> Series | None:
    for group in (LOSS, ERROR, ACC):
        series = curves.primary(split, group)
        if series is not None and len(_finite(series)) >= 2:
            return series
    return None


def _finite(series: Series) -> list[Point]:
    return [p for p in series.points if math.isfinite(p.value)]


def _validation_turn(curves: Curves) -> tuple[list[int], str] | None:
    """The validation series' best and latest values, and training's first and last beside them."""
    val = _series(curves, VAL)
    if val is None:
        return _training_course(curves)
    points = _finite(val)
    pick = max if val.group == ACC else min
    best, last = pick(points, key=lambda p: p.value), points[-1]
    sentence = f"{val.key} best {fmt(best.value)} {at(best)}, {fmt(last.value)} {at(last)}"
    lines = [best.line, last.line]
    train = _series(curves, TRAIN)
    if train is not None:
        first, end = _finite(train)[0], _finite(train)[-1]
        sentence += f"; {train.key} {fmt(first.value)} {at(first)}, {fmt(end.value)} {at(end)}"
        lines += [first.line, end.line]
    return sorted(set(lines)), sentence


def _training_course(curves: Curves) -> tuple[list[int], str] | None:
    """The training series' first and last values (validation's when training logged none), and its best."""
    series = _series(curves, TRAIN) or _series(curves, VAL)
    if series is None:
        return None
    points = _finite(series)
    pick = max if series.group == ACC else min
    first, best, last = points[0], pick(points, key=lambda p: p.value), points[-1]
    sentence = f"{series.key} {fmt(first.value)} {at(first)}, {fmt(last.value)} {at(last)} (best {fmt(best.value)})"
    return sorted({first.line, best.line, last.line}), sentence
