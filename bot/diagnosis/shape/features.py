"""A training curve's shape as a fixed row of numbers, for the shape model (bot.diagnosis.shape.model).

The rules judge a curve by named findings (bot.diagnosis.curves.facts). Where none decides, the curve still has a
shape: where its best value came, how far its end is from it, how noisy it is, how far training and validation
ended apart, whether the loss sits near ln k. This module turns the four series a practitioner plots (training and
validation loss, training and validation accuracy) and the curve findings that hold into FEATURES numbers. The
fitter (benchmarks/fit_shape_model.py) and the classifier read a log through this one function, so the two cannot
drift apart; every value is rounded to single precision, as the fitting library compares them.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Collection

from bot.diagnosis.curves.series import ACC, ERROR, LOSS, TRAIN, VAL, Curves, Series

# curve findings (bot.diagnosis.curves.facts) whose presence is a feature, even where its class's rule stayed silent
FINDINGS = (
    "generalization_gap", "val_loss_rising", "val_stalled_train_improving", "loss_flat", "loss_at_chance",
    "metric_stuck", "loss_spiked", "validation_never_improved", "no_better_than_chance", "loss_plateau_high",
    "validation_recently_improved", "val_loss_crept_up", "validation_constant",
)  # fmt: skip
ROLES = ("train_loss", "val_loss", "train_acc", "val_acc")
SERIES_FEATURES = (
    "logged", "log_points", "trend", "best_at", "worst_at", "noise", "end_from_best", "last", "span", "first",
)  # fmt: skip
PAIR_FEATURES = (
    "acc_gap", "loss_ratio", "loss_from_chance", "last_acc", "start_from_chance", "acc_over_chance", "last_step",
)  # fmt: skip
FEATURES = (
    tuple(f"{role}.{name}" for role in ROLES for name in SERIES_FEATURES)
    + PAIR_FEATURES
    + tuple(f"finding.{name}" for name in FINDINGS)
)
_CHANCE_K = (2, 3, 4, 5, 10, 100, 1000)  # class counts whose ln k a loss may sit at
_CLAMP = 5.0  # a ratio beyond this says no more
_TINY = 1e-6


def curve_shape(curves: Curves, findings: Collection[str]) -> tuple[float, ...]:
    """FEATURES numbers for the log's curves and the curve findings that hold, rounded to single precision."""
    roles = (
        (curves.primary(TRAIN, LOSS) or curves.primary(TRAIN, ERROR), False),
        (curves.primary(VAL, LOSS) or curves.primary(VAL, ERROR), False),
        (curves.primary(TRAIN, ACC), True),
        (curves.primary(VAL, ACC), True),
    )
    values = [_values(series, accuracy) for series, accuracy in roles]
    row: list[float] = []
    for series_values, (_, accuracy) in zip(values, roles, strict=True):
        row += _series_shape(series_values, accuracy)
    row += _pair_shape(*values)
    row += _chance_shape(values[0] or values[1], values[2] or values[3])
    row.append(_last_step(roles))
    row += [1.0 if name in findings else 0.0 for name in FINDINGS]
    return struct.unpack(f"{len(row)}f", struct.pack(f"{len(row)}f", *row))


def _values(series: Series | None, accuracy: bool) -> list[float]:
    """The series' finite values; an accuracy printed in percent as a share."""
    values = [p.value for p in series.points if math.isfinite(p.value)] if series is not None else []
    if accuracy and values and max(values) > 1.5:
        values = [v / 100.0 for v in values]
    return values


def _series_shape(values: list[float], accuracy: bool) -> list[float]:
    """SERIES_FEATURES for one series; zeros when it has fewer than two values."""
    if len(values) < 2:
        return [0.0] * len(SERIES_FEATURES)
    n = len(values)
    low, high = min(values), max(values)
    spread = high - low
    third = max(1, n // 3)
    start, end = sum(values[:third]) / third, sum(values[-third:]) / third
    steps = [abs(b - a) for a, b in zip(values, values[1:], strict=False)]
    best = high if accuracy else low
    worst = low if accuracy else high
    return [
        1.0,
        math.log(n),
        _clamp((end - start) / (abs(start) + _TINY)),
        values.index(best) / (n - 1),
        values.index(worst) / (n - 1),
        _clamp((sum(steps) / len(steps)) / (spread + _TINY)),
        _clamp((values[-1] - best) / (spread + _TINY)),
        _level(values[-1], accuracy),
        _clamp(spread / max(abs(high), abs(low), _TINY)),
        _level(values[0], accuracy),
    ]


def _pair_shape(
    train_loss: list[float], val_loss: list[float], train_acc: list[float], val_acc: list[float]
) -> list[float]:
    """PAIR_FEATURES: the last accuracies' gap, the last losses' log ratio, the loss's distance from ln k, the last
    accuracy (-1 when none)."""
    gap = train_acc[-1] - val_acc[-1] if train_acc and val_acc else 0.0
    ratio = 0.0
    if train_loss and val_loss and train_loss[-1] > 0 and val_loss[-1] > 0:
        ratio = _clamp(math.log(val_loss[-1] / train_loss[-1]))
    loss = train_loss[-1] if train_loss else (val_loss[-1] if val_loss else None)
    chance = 1.0
    if loss is not None and loss > 0:
        chance = min(1.0, min(abs(loss - math.log(k)) / math.log(k) for k in _CHANCE_K))
    accuracy = train_acc[-1] if train_acc else (val_acc[-1] if val_acc else -1.0)
    return [_clamp(gap), ratio, chance, _clamp(accuracy)]


def _chance_shape(loss: list[float], accuracy: list[float]) -> list[float]:
    """How far the loss began from ln k for the k it began nearest (a classifier starts at chance), and the last
    accuracy over that k's chance 1/k (0 when either is unknown)."""
    if not loss or loss[0] <= 0:
        return [1.0, 0.0]
    k = min(_CHANCE_K, key=lambda k: abs(loss[0] - math.log(k)) / math.log(k))
    start = min(1.0, abs(loss[0] - math.log(k)) / math.log(k))
    return [start, _clamp(accuracy[-1] * k / 10.0) if accuracy else 0.0]


def _last_step(roles: tuple[tuple[Series | None, bool], ...]) -> float:
    """The epoch (or step, on a log scale) of the last point any plotted series names; 0 when none does."""
    numbers = [p.count[1] for series, _ in roles if series is not None for p in series.points[-1:] if p.count]
    return _clamp(math.log1p(max(max(numbers), 0.0)) / 2.0) if numbers else 0.0


def _level(value: float, accuracy: bool) -> float:
    """An accuracy as it is; a loss on a log scale (losses span orders of magnitude)."""
    return _clamp(value) if accuracy else _clamp(math.log(max(value, _TINY)) / 3.0)


def _clamp(value: float) -> float:
    return max(-_CLAMP, min(_CLAMP, value)) if math.isfinite(value) else 0.0
