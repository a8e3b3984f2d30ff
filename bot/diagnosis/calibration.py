"""Confidence that means something: the classifier's raw score mapped to the share of answers that were right.

The map is data (knowledge/calibration/confidence.yaml), fitted by benchmarks/fit_calibration.py on the train split
and the dev corpus only, and checked on the test split (benchmarks/bench_accuracy.py prints the table). Each
table is a list of [raw, calibrated] points, both rising; between points the map is linear, so a higher raw
score - more evidence for the same class - never gives a lower confidence.

- `diagnosis`: raw = the winner's noisy-OR score lowered by its strongest rival -> P(the class is right).
- `unknown`: raw = 1 - the strongest class's score (how little evidence there is) -> P(nothing known is wrong).
  Fitted on first-sight answers as well: train's leftover `unknown` answers are mostly the truly healthy logs the
  rules were never meant for (80% right today), while on logs nobody has seen a miss often hides there (38%).
- `generic` (optional): `diagnosis` for a catch-all class's answer (a bare traceback: application_error). Fitted on
  first-sight scores (each train case as the knowledge base scored it before any rule was written from it): rules
  for specific causes are written from the train cases a traceback was wrongly blamed for, so on train the
  catch-all looks far more often right than it is on logs nobody has seen (first sight: 36% of its answers).
- `curve_leads` (optional): class -> the share of train's `unknown` answers on a log with a training curve that
  no finding judged whose class it was (underfitting, overfitting): the confidence such a curve lists the class at.
  Counted before the shape model answers (it is fitted on those very cases).
Shares are smoothed (one right and one wrong answer added to every bin): rules are written from the same train
split, so its raw shares are optimistic.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from bot.errors import KnowledgeBaseError


@dataclass(frozen=True)
class Curve:
    """A monotone piecewise-linear map from [0, 1] to [0, 1]."""

    points: tuple[tuple[float, float], ...]

    def __call__(self, raw: float) -> float:
        if not self.points:
            return raw
        xs = [x for x, _ in self.points]
        if raw <= xs[0]:
            return self.points[0][1]
        if raw >= xs[-1]:
            return self.points[-1][1]
        i = bisect_right(xs, raw) - 1
        (x0, y0), (x1, y1) = self.points[i], self.points[i + 1]
        return y0 if x1 == x0 else y0 + (y1 - y0) * (raw - x0) / (x1 - x0)


IDENTITY = Curve(())
UNCALIBRATED_UNKNOWN = Curve(((0.0, 0.05), (1.0, 0.3)))  # without a fit: low, and lower with more evidence


@dataclass(frozen=True)
class Calibration:
    diagnosis: Curve = IDENTITY
    unknown: Curve = UNCALIBRATED_UNKNOWN
    generic: Curve | None = None
    curve_leads: dict[str, float] = field(default_factory=dict)

    def answer(self, generic: bool) -> Curve:
        """The curve for an answer of a catch-all class (`generic`) or of a specific one."""
        return self.generic if generic and self.generic is not None else self.diagnosis


def _curve(path: Path, name: str, raw: object) -> Curve:
    if not isinstance(raw, list) or not raw:
        raise KnowledgeBaseError(str(path), name, "must be a non-empty list of [raw, calibrated] pairs")
    points: list[tuple[float, float]] = []
    for item in raw:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not all(isinstance(v, (int, float)) and 0.0 <= v <= 1.0 for v in item)
        ):
            raise KnowledgeBaseError(str(path), name, f"{item!r} is not a [raw, calibrated] pair within [0, 1]")
        points.append((float(item[0]), float(item[1])))
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if x1 < x0 or y1 < y0:
            raise KnowledgeBaseError(str(path), name, "points must rise in both raw and calibrated values")
    return Curve(tuple(points))


def load_calibration(path: Path) -> Calibration:
    """Read the calibration file; a missing file means no calibration (raw scores are shown)."""
    if not path.exists():
        return Calibration()
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise KnowledgeBaseError(str(path), "(file)", f"cannot read: {exc}") from None
    if not isinstance(raw, dict) or set(raw) - {"diagnosis", "unknown", "generic", "curve_leads", "fitted_on"}:
        raise KnowledgeBaseError(
            str(path),
            "(top level)",
            "expected the keys diagnosis, unknown, fitted_on and optionally generic and curve_leads",
        )
    return Calibration(
        diagnosis=_curve(path, "diagnosis", raw.get("diagnosis")),
        unknown=_curve(path, "unknown", raw.get("unknown")),
        generic=_curve(path, "generic", raw["generic"]) if "generic" in raw else None,
        curve_leads=_shares(path, raw.get("curve_leads", {})),
    )


def _shares(path: Path, raw: object) -> dict[str, float]:
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and 0.0 <= v <= 1.0 for k, v in raw.items()
    ):
        raise KnowledgeBaseError(str(path), "curve_leads", "must map class ids to shares within [0, 1]")
    return {k: float(v) for k, v in raw.items()}


def fit_isotonic(pairs: list[tuple[float, bool]], *, min_bin: int = 15) -> list[list[float]]:
    """Pool-adjacent-violators on (raw score, right?) pairs -> rising [raw, share right] points.

    Neighbouring scores are pooled into bins of at least `min_bin` answers first, so that one lucky answer does
    not set a confidence. The answers given one score stay in one bin: sorted with their outcomes, they would fill
    bins wrong ones first, and one score would state every share from 0 to 1.
    """
    groups: dict[float, list[float]] = {}  # raw -> [sum raw, sum right, count]
    for raw, right in pairs:
        group = groups.setdefault(raw, [0.0, 0.0, 0])
        group[0] += raw
        group[1] += float(right)
        group[2] += 1
    bins: list[list[float]] = []
    for raw in sorted(groups):
        if bins and bins[-1][2] < min_bin:
            bins[-1] = [a + b for a, b in zip(bins[-1], groups[raw], strict=True)]
        else:
            bins.append(list(groups[raw]))
    if len(bins) > 1 and bins[-1][2] < min_bin:
        last = bins.pop()
        bins[-1] = [a + b for a, b in zip(bins[-1], last, strict=True)]

    def share(item: list[float]) -> float:  # the share right, with one right and one wrong answer added (Laplace)
        return (item[1] + 1) / (item[2] + 2)

    # Pooled on the very share the table states: pooling on the plain share could leave a large bin at 140/141
    # (stated 0.986) before a small one at 25/25 (stated 0.963), a curve that falls.
    stack: list[list[float]] = []
    for item in bins:
        stack.append(list(item))
        while len(stack) > 1 and share(stack[-2]) >= share(stack[-1]):
            top = stack.pop()
            stack[-1] = [a + b for a, b in zip(stack[-1], top, strict=True)]
    return [[round(s_raw / n, 3), round(share([s_raw, s_right, n]), 3)] for s_raw, s_right, n in stack]
