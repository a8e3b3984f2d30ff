"""What a training curve says: at chance, flat, validation turning while training improves, a widening gap.

Each finding carries the log lines that show it (the best and the latest validation value, the first and the
last training value) and one sentence stating the turn, e.g. "val_loss best 0.41 at epoch 12, 0.78 at epoch 40".
A curve that improves normally gives no finding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bot.diagnosis.curves import ACC, ERROR, LOSS, TRAIN, VAL, Curves, Point, Series

_CHANCE_CLASSES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 100, 1000)
_WINDOW = 40
_COMMON_K = (2, 10, 100, 1000)  # class counts common enough that a validation loss at ln k is no coincidence


@dataclass(frozen=True)
class Finding:
    lines: tuple[int, ...]
    summary: str


def _finite(points: list[Point]) -> list[Point]:
    return [p for p in points if math.isfinite(p.value)]


def _at(point: Point) -> str:
    return f"at {point.step}" if point.step else f"on log line {point.line + 1}"


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _last(series: Series) -> float:
    points = _finite(series.points)
    return points[-1].value if points else math.nan


def _not_much_better(train: Series) -> bool:
    """The training loss is still within 20% of ln k for some k: no better than guessing by much."""
    last = _last(train)
    return any(0.8 * math.log(k) <= last <= 1.05 * math.log(k) for k in _COMMON_K)


def _loss_at_chance(series: Series | None, classes: tuple[int, ...] = _CHANCE_CLASSES) -> Finding | None:
    if series is None or series.group == ACC or (series.group == LOSS and not series.chance):
        return None
    tolerance = 0.015 if series.group == LOSS else 0.002  # an "error" printed at ln k to 3 decimals is a loss
    points = _finite(series.points)[-_WINDOW:]
    if len(points) < 3:
        return None
    values = sorted(p.value for p in points)
    median = values[len(values) // 2]
    if median <= 0 or (values[-1] - values[0]) / median > 0.06:
        return None
    for k in classes:
        if abs(median - math.log(k)) / math.log(k) < tolerance:
            first, last = points[0], points[-1]
            return Finding(
                (first.line, last.line),
                f"{series.key} {_fmt(first.value)} {_at(first)}, {_fmt(last.value)} {_at(last)}: ln({k}) = "
                f"{math.log(k):.3f}, the loss of a model guessing uniformly over {k} classes",
            )
    return None


def _acc_at_chance(series: Series | None) -> Finding | None:
    if series is None or not series.chance or series.group != ACC:
        return None
    points = _finite(series.points)[-_WINDOW:]
    if len(points) < 3:
        return None
    values = [p.value for p in points]
    if max(values) - min(values) > 0.03:
        return None
    median = sorted(values)[len(values) // 2]
    for k in _CHANCE_CLASSES:
        if abs(median - 1.0 / k) <= max(0.01, 0.05 / k):
            first, last = points[0], points[-1]
            return Finding(
                (first.line, last.line),
                f"{series.key} {_fmt(first.value)} {_at(first)}, {_fmt(last.value)} {_at(last)}: 1/{k}, "
                f"the accuracy of guessing among {k} classes",
            )
    return None


def _metric_stuck(series: Series | None) -> Finding | None:
    """An accuracy-like metric that does not move: low and flat, or the very same value epoch after epoch
    (the model predicts one class whatever the input)."""
    if series is None or series.group != ACC:
        return None
    points = _finite(series.points)[-_WINDOW:]
    if len(points) < 3:
        return None
    values = [p.value for p in points]
    spread = max(values) - min(values)
    tail = values[-6:]
    identical = len(tail) >= 5 and max(tail) - min(tail) < 0.002 and max(tail) < 0.9
    if identical and len(tail) < len(values):
        points = points[-len(tail) :]
    if not identical and not (spread <= 0.01 and sorted(values)[len(values) // 2] <= 0.7):
        return None
    first, last = points[0], points[-1]
    what = "the very same value" if identical else "no change"
    return Finding(
        (first.line, last.line),
        f"{series.key} {_fmt(first.value)} {_at(first)}, {_fmt(last.value)} {_at(last)}: {what} over "
        f"{len(points)} logged values",
    )


def _stuck_at_chance_messages(curves: Curves) -> Finding | None:
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
                f"{key} did not improve from {_fmt(value)} ({len(stuck)} times): 1/{k}, the accuracy of guessing "
                f"among {k} classes",
            )
    return None


def _early(point: Point) -> bool:
    """Logged at the start of training: epoch 0 or 1, or within the first 1,000 steps or iterations."""
    if point.step is None:
        return False
    word, _, number = point.step.partition(" ")
    try:
        value = float(number)
    except ValueError:
        return False
    return value <= 1 if word in ("epoch", "row") else value <= 1_000


def _loss_flat(series: Series | None, val: Series | None, curves: Curves) -> Finding | None:
    """The training loss never moved from where it started (a converged curve moved first, then settled).

    Seen from the start of training, a flat loss is a model that does not learn. An excerpt from later in a run
    shows a settled loss: that counts only for a loss (not a perplexity or error metric) with nothing saying
    the model still improves on validation data.
    """
    if series is None or series.group == ACC:
        return None
    points = _finite(series.points)
    if len(points) < 5 or points[0].value <= 0:
        return None
    if val is not None:
        vals = [p.value for p in _finite(val.points)]
        if len(vals) >= 2 and (vals[0] - min(vals)) / max(abs(vals[0]), 1e-9) >= 0.05:
            return None  # validation improves: the model is learning
    if not _early(points[0]) and (series.group != LOSS or any(improved for *_, improved in curves.improve_messages)):
        return None
    first = points[0].value
    low = min(p.value for p in points)
    high = max(p.value for p in points[len(points) // 2 :])
    if (first - low) / first >= 0.05 or (high - low) / first > 0.1:
        return None
    return Finding(
        (points[0].line, points[-1].line),
        f"{series.key} {_fmt(first)} {_at(points[0])}, {_fmt(points[-1].value)} {_at(points[-1])}: no improvement "
        f"over {len(points)} logged values",
    )


def _loss_plateau_high(series: Series | None, acc: Series | None) -> Finding | None:
    """From the start of training the loss fell a little, then stopped: it never got below 70% of where it began,
    and the second half of the curve barely moves (while any accuracy printed stays low)."""
    if series is None or series.group == ACC:
        return None
    points = _finite(series.points)
    if len(points) < 6 or points[0].value <= 0 or not _early(points[0]):
        return None
    values = [p.value for p in points]
    second = values[len(values) // 2 :]
    if values[-1] < 0.7 * values[0] or (second[0] - min(second)) / values[0] > 0.05:
        return None
    if acc is not None and _finite(acc.points) and _last(acc) >= 0.75:
        return None
    return Finding(
        (points[0].line, points[-1].line),
        f"{series.key} {_fmt(values[0])} {_at(points[0])}, still {_fmt(values[-1])} {_at(points[-1])}: it fell "
        f"{(1 - values[-1] / values[0]) * 100:.0f}% and stopped",
    )


def _train_near(train: Series, line: int) -> Point | None:
    """The training value logged at, or last before, a log line (else the first one after)."""
    before = [p for p in _finite(train.points) if p.line <= line]
    if before:
        return before[-1]
    after = _finite(train.points)
    return after[0] if after else None


def _val_turned(val: Series | None, train: Series | None) -> Finding | None:
    """Validation was best a while ago and is now clearly worse, while training kept improving."""
    if val is None:
        return None
    points = _finite(val.points)
    if len(points) < 3:
        return None
    lower_better = val.group != ACC
    sign = 1.0 if lower_better else -1.0  # compare as "lower is better"
    values = [sign * p.value for p in points]
    n = len(values)
    # A noisy validation curve has lucky epochs: the best is read from a 3-point moving average, the end from the
    # mean of the last few values, and the rise must stand clear of the epoch-to-epoch noise.
    smooth = (
        [sum(values[max(0, i - 1) : i + 2]) / len(values[max(0, i - 1) : i + 2]) for i in range(n)]
        if n >= 6
        else values
    )
    best_at = min(range(n), key=smooth.__getitem__)
    if best_at > n - 3:
        return None
    best = points[best_at]
    last = points[-1]
    after = values[best_at:]
    rises = sum(b > a for a, b in zip(after, after[1:], strict=False))
    # worse epoch after epoch, if only a little: every step after the best, or most of four or more
    steady = len(after) >= 3 and (rises == len(after) - 1 or (len(after) >= 4 and rises >= 0.7 * (len(after) - 1)))
    end_level = sum(values[-max(2, n // 5) :]) / max(2, n // 5)
    rise = end_level - smooth[best_at]
    steps = [b - a for a, b in zip(values, values[1:], strict=False)]
    wobble = sorted(abs(b - a) / 2 for a, b in zip(steps, steps[1:], strict=False))  # a trend has none
    noise = wobble[len(wobble) // 2] if wobble else 0.0
    if lower_better:
        relative = rise / max(abs(smooth[best_at]), 1e-9)
        clear = relative >= 0.10 and rise >= 2 * noise and best_at >= 1
        worse = rise >= 1e-3 and (clear or (steady and relative >= 0.02))
    else:
        clear = rise >= 0.03 and rise >= 2 * noise and best_at >= 1
        worse = clear or (steady and rise >= 0.01)
    if not worse:
        return None
    train_note = ""
    if train is not None:
        then, now = _train_near(train, best.line), _train_near(train, last.line)
        if then is None or now is None or then is now:
            return None
        train_lower_better = train.group != ACC
        improving = now.value < then.value * 0.97 if train_lower_better else now.value > then.value + 0.01
        if not improving:
            return None
        train_note = f" while {train.key} went {_fmt(then.value)} -> {_fmt(now.value)}"
    else:
        return None  # without a training curve, a validation curve turning may be plain divergence
    return Finding(
        (best.line, last.line),
        f"{val.key} best {_fmt(best.value)} {_at(best)}, {_fmt(last.value)} {_at(last)}{train_note}",
    )


def _stalled_while_training_improves(curves: Curves, train: Series | None) -> Finding | None:
    """Keras early stopping: the validation metric did not improve, several times, while training improved."""
    stuck = [(line, key, value) for line, key, value, improved in curves.improve_messages if not improved]
    if len(stuck) < 2 or train is None:
        return None
    if len(stuck) == 2:  # twice is enough only with a wide gap to the training metric
        val = curves.primary(VAL, train.group)
        now = _train_near(train, stuck[-1][0])
        last = _finite(val.points)[-1] if val is not None and _finite(val.points) else None
        if now is None or last is None:
            return None
        wide = now.value - last.value >= 0.2 if train.group == ACC else last.value >= 2 * max(now.value, 1e-9)
        if not wide:
            return None
        return Finding(
            (stuck[0][0], stuck[-1][0]),
            f"{stuck[-1][1]} did not improve from {_fmt(stuck[-1][2])}; {val.key} {_fmt(last.value)} against "
            f"{train.key} {_fmt(now.value)}",
        )
    then, now = _train_near(train, stuck[0][0]), _train_near(train, stuck[-1][0])
    if then is None or now is None or then is now:
        return None
    improving = now.value < then.value * 0.95 if train.group != ACC else now.value > then.value + 0.02
    if not improving:
        return None
    line, key, value = stuck[-1]
    return Finding(
        (stuck[0][0], line),
        f"{key} did not improve from {_fmt(value)} ({len(stuck)} times) while {train.key} went "
        f"{_fmt(then.value)} -> {_fmt(now.value)}",
    )


def _gap_widening(train: Series | None, val: Series | None) -> Finding | None:
    """Validation far worse than training at the end, and the gap grew over the run."""
    if train is None or val is None or train.group != val.group:
        return None
    vals = _finite(val.points)
    if not vals:
        return None
    first_val, last_val = vals[0], vals[-1]
    first_train, last_train = _train_near(train, first_val.line), _train_near(train, last_val.line)
    if first_train is None or last_train is None:
        return None
    sign = 1.0 if val.group != ACC else -1.0
    gap_then = sign * (first_val.value - first_train.value)
    gap_now = sign * (last_val.value - last_train.value)
    if val.group == ACC:
        wide = gap_now >= 0.15
    else:
        wide = gap_now >= 0.3 and last_val.value >= 2 * max(last_train.value, 1e-9)
    best = min(vals, key=lambda p: p.value) if val.group != ACC else max(vals, key=lambda p: p.value)
    stalled = len(vals) < 3 or best is not last_val
    # Training memorised, validation far behind and no longer improving: no healthy run looks like this.
    if val.group == ACC:
        memorised = last_train.value >= 0.97 and gap_now >= 0.1 or last_train.value >= 0.9 and gap_now >= 0.25
    else:
        memorised = last_val.value >= 5 * max(last_train.value, 1e-9) and gap_now >= 0.05
    if memorised and stalled:
        return Finding(
            (last_val.line,),
            f"{val.key} {_fmt(last_val.value)} against {train.key} {_fmt(last_train.value)} {_at(last_val)}"
            + ("" if len(vals) < 3 else f" (best {val.key} {_fmt(best.value)} {_at(best)})"),
        )
    if len(vals) < 3:
        return None
    if not wide or gap_now < max(2 * gap_then, gap_then + 0.1) or not stalled:
        return None  # a validation curve still reaching new bests is learning, whatever the gap
    return Finding(
        (first_val.line, last_val.line),
        f"gap between {val.key} and {train.key} grew from {_fmt(gap_then)} {_at(first_val)} to {_fmt(gap_now)} "
        f"{_at(last_val)}",
    )


def curve_findings(curves: Curves) -> dict[str, Finding]:
    """Fact name -> finding, for the curve facts that hold."""
    found: dict[str, Finding] = {}
    if not curves.any and not curves.improve_messages:
        return found
    logged = [s for s in curves.series.values() if len(s.points) >= 2]
    if logged:  # a training curve: a weak hint towards the curve classes when nothing else is found
        longest = max(logged, key=lambda s: len(s.points))
        found["curves_logged"] = Finding(
            (longest.points[0].line, longest.points[-1].line), f"{longest.key} logged {len(longest.points)} times"
        )
    train_loss = curves.primary(TRAIN, LOSS) or curves.primary(TRAIN, ERROR)
    val_loss = curves.primary(VAL, LOSS) or curves.primary(VAL, ERROR)
    train_acc, val_acc = curves.primary(TRAIN, ACC), curves.primary(VAL, ACC)
    chance = (
        _loss_at_chance(train_loss)
        or _loss_at_chance(val_loss if train_loss is None else None)
        or _loss_at_chance(val_loss if train_loss is not None and _not_much_better(train_loss) else None, _COMMON_K)
        or _acc_at_chance(train_acc)
        or _acc_at_chance(val_acc if train_acc is None or _last(train_acc) < 0.6 else None)
        or _stuck_at_chance_messages(curves)
    )
    if chance is not None:
        found["loss_at_chance"] = chance
    flat = _loss_flat(train_loss, val_loss, curves)
    if flat is not None:
        found["loss_flat"] = flat
    plateau = _loss_plateau_high(train_loss, train_acc or val_acc)
    if plateau is not None and flat is None and "loss_at_chance" not in found:
        found["loss_plateau_high"] = plateau
    stuck = _metric_stuck(train_acc) or _metric_stuck(val_acc)
    if stuck is not None and "loss_at_chance" not in found:
        found["metric_stuck"] = stuck
    turned = _val_turned(val_loss, train_loss) or _val_turned(val_acc, train_acc or train_loss)
    if turned is not None and chance is None:
        found["val_loss_rising"] = turned
    stalled = _stalled_while_training_improves(curves, train_loss or train_acc)
    if stalled is not None and chance is None:
        found["val_stalled_train_improving"] = stalled
    gap = _gap_widening(train_loss, val_loss) or _gap_widening(train_acc, val_acc)
    if gap is not None and chance is None:
        found["generalization_gap"] = gap
    return found
