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


def _chance_pair(loss: Series | None, accs: list[Series]) -> Finding | None:
    """Few values, but two that agree: the loss sits at ln k and an accuracy at 1/k for the same k."""
    if loss is None or loss.group != LOSS or not loss.chance:
        return None
    points = _finite(loss.points)[-_WINDOW:]
    if len(points) < 2:
        return None
    mean = sum(p.value for p in points) / len(points)
    for k in _CHANCE_CLASSES[:9]:
        if abs(mean - math.log(k)) / math.log(k) > 0.03:
            continue
        for acc in accs:
            last = _finite(acc.points)
            if acc.chance and last and abs(last[-1].value - 1.0 / k) <= 0.02:
                return Finding(
                    (points[0].line, last[-1].line),
                    f"{loss.key} {_fmt(mean)} (ln({k}) = {math.log(k):.3f}) and {acc.key} {_fmt(last[-1].value)} "
                    f"(1/{k}): the model guesses among {k} classes",
                )
    return None


def _binary_logloss_above_chance(curves: Curves) -> Finding | None:
    """A binary log loss (XGBoost/LightGBM 'logloss', 'binary_logloss') that never gets below ln 2 = 0.693: the
    model does no better than a coin; or an AUC that stays at 0.5."""
    for series in curves.series.values():
        points = _finite(series.points)
        if len(points) < 5:
            continue
        words = series.norm.split("/")
        values = [p.value for p in points]
        binary = "logloss" in words and not {"multi", "mlogloss"} & set(words)
        if binary and len(points) >= 8 and min(values) >= 0.97 * math.log(2):
            return Finding(
                (points[0].line, points[-1].line),
                f"{series.key} {_fmt(values[0])} {_at(points[0])}, {_fmt(values[-1])} {_at(points[-1])}: never below "
                f"ln(2) = 0.693, the log loss of a coin toss",
            )
        if words[-1] == "auc" and max(values) <= 0.55 and min(values) >= 0.45:
            return Finding(
                (points[0].line, points[-1].line),
                f"{series.key} {_fmt(values[0])} {_at(points[0])}, {_fmt(values[-1])} {_at(points[-1])}: an AUC of 0.5 "
                "is a ranking no better than chance",
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
    # The training accuracy at the same value to four decimals eight times or more: one class predicted whatever
    # the input, even when that class is 94% of the data (a small validation set repeats values; a perfect score
    # repeats because it cannot improve).
    long_tail = values[-8:]
    same = len(long_tail) >= 8 and max(long_tail) - min(long_tail) < 0.0005 and max(long_tail) < 0.99
    if not identical and series.split == TRAIN and same:
        identical, tail = True, long_tail
    if identical and len(tail) < len(values):
        points = points[-len(tail) :]
    steps = [b - a for a, b in zip(values, values[1:], strict=False)]
    rising = values[-1] > values[0] and sum(d > 0 for d in steps) >= 0.7 * len(steps)
    low_flat = spread <= 0.01 and sorted(values)[len(values) // 2] <= 0.7 and not rising
    if not identical and not low_flat:
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


def _still_improving(curves: Curves) -> bool:
    """A validation curve that reaches its best at one of its last two values, clearly better than where it began:
    the model is still learning, whatever the training curve looks like."""
    for group in (LOSS, ERROR, ACC):
        val = curves.primary(VAL, group)
        points = _finite(val.points) if val is not None else []
        if len(points) < 3:
            continue
        values = [p.value for p in points]
        if group == ACC:
            if max(values[-2:]) >= max(values) and max(values) - values[0] >= 0.01:
                return True
        elif min(values[-2:]) <= min(values) and values[0] - min(values) >= 0.02 * abs(values[0]):
            return True
    return False


def _thirds_trend(points: list[Point], lower_better: bool) -> float:
    """How much better the last third of a curve is than its first third, in the curve's own units."""
    values = [p.value for p in points]
    third = max(1, len(values) // 3)
    change = sum(values[:third]) / third - sum(values[-third:]) / third
    return change if lower_better else -change


def _step_number(point: Point, fallback: int) -> float:
    if point.step is not None:
        try:
            return float(point.step.partition(" ")[2])
        except ValueError:
            pass
    return float(fallback)


def _pace(points: list[Point]) -> float:
    """How fast a stretch of curve changes: its range over the steps it spans (log lines where no step is named)."""
    if len(points) < 2:
        return 0.0
    span = abs(_step_number(points[-1], points[-1].line) - _step_number(points[0], points[0].line)) or 1.0
    return (max(p.value for p in points) - min(p.value for p in points)) / span


def _stuck_tail(series: Series | None) -> Finding | None:
    """The loss stopped changing at all: its last eight or more values are the same to 0.2%, at a level well above
    zero, after it had moved (weights no longer updated, or a model that collapsed to a constant output)."""
    if series is None or series.group == ACC:
        return None
    points = _finite(series.points)
    if len(points) < 10 or points[0].value <= 0:
        return None
    tail, before = points[-8:], points[:-8]
    level = sum(p.value for p in tail) / len(tail)
    spread = max(p.value for p in tail) - min(p.value for p in tail)
    moved = abs(points[0].value - level) / points[0].value >= 0.05
    if level <= 0.2 * points[0].value or spread > 0.002 * level or not moved:
        return None
    # stopped, not merely slow: the tail changes at under 5% of the pace the curve had before it (per logged step)
    if _pace(tail) >= 0.05 * _pace(before + tail[:1]):
        return None
    return Finding(
        (tail[0].line, tail[-1].line),
        f"{series.key} {_fmt(tail[0].value)} {_at(tail[0])}, {_fmt(tail[-1].value)} {_at(tail[-1])}: the same value "
        f"{len(tail)} times in a row",
    )


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
    if not _early(points[0]) and (
        series.group != LOSS or any(improved for *_, improved in curves.improve_messages) or _still_improving(curves)
    ):
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


def _loss_plateau_high(series: Series | None, acc: Series | None, curves: Curves) -> Finding | None:
    """From the start of training the loss fell a little, then stopped: it never got below 70% of where it began,
    and the second half of the curve barely moves - far less than the first half did (a curve still falling at a
    steady pace is learning, as is a validation curve still reaching new bests) - while any accuracy stays low."""
    if series is None or series.group == ACC:
        return None
    points = _finite(series.points)
    if len(points) < 6 or points[0].value <= 0 or not _early(points[0]):
        return None
    accuracy_low = acc is not None and bool(_finite(acc.points)) and _last(acc) < 0.6
    if len({p.step for p in points}) < 2 or (_still_improving(curves) and not accuracy_low):
        return None  # one epoch's progress bar, or validation still improving (unless its accuracy stays low)
    values = [p.value for p in points]
    first, second = values[: len(values) // 2 + 1], values[len(values) // 2 :]
    if values[-1] < 0.7 * values[0] or (second[0] - min(second)) / values[0] > 0.05:
        return None
    if first[0] - first[-1] > 0 and second[0] - min(second) > (first[0] - first[-1]) / 3:
        return None  # still falling at a steady pace
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


def _val_turned(val: Series | None, train: Series | None, *, noisy: bool = False) -> Finding | None:
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
    # one last evaluation far above the best (a quarter or more) while training fell by 30% or more: the common
    # picture of a short fine-tuning run, but a single value, so it is only the noisy (stalled) reading
    jump = (
        noisy
        and lower_better
        and best_at == n - 2
        and values[-1] >= 1.25 * values[best_at] > 0
        and train is not None
        and train.group != ACC
    )
    if best_at > n - 3 and not jump:
        return None
    best = points[best_at]
    last = points[-1]
    after = values[best_at:]
    rises = sum(b > a for a, b in zip(after, after[1:], strict=False))
    # worse epoch after epoch, if only a little: every step after the best, or most of four or more
    steady = len(after) >= 3 and (rises == len(after) - 1 or (len(after) >= 4 and rises >= 0.7 * (len(after) - 1)))
    # every evaluation since the best clearly worse than it, three or more times (noisy, but never back)
    above = len(after) >= 4 and all(v >= values[best_at] + max(0.05 * abs(values[best_at]), 1e-3) for v in after[1:])
    above = (above and lower_better and noisy) or jump  # accuracy on a small validation set moves in coarse steps
    end_level = sum(values[-max(2, n // 5) :]) / max(2, n // 5)
    rise = end_level - smooth[best_at]
    steps = [b - a for a, b in zip(values, values[1:], strict=False)]
    wobble = sorted(abs(b - a) / 2 for a, b in zip(steps, steps[1:], strict=False))  # a trend has none
    noise = wobble[len(wobble) // 2] if wobble else 0.0
    # a long upward drift after the best: the last third of it clearly above its first third
    third = len(after) // 3
    drift = (sum(after[-third:]) - sum(after[:third])) / third if len(after) >= 6 else 0.0
    if lower_better:
        relative = rise / max(abs(smooth[best_at]), 1e-9)
        clear = relative >= 0.10 and rise >= 2 * noise and best_at >= 1
        clear = clear or (drift >= max(0.02 * abs(smooth[best_at]), 2 * noise) and best_at >= 1)
        worse = rise >= 1e-3 and (clear or (steady and relative >= 0.02) or (above and best_at >= 1))
    else:
        clear = rise >= 0.03 and rise >= 2 * noise and best_at >= 1
        worse = clear or (steady and rise >= 0.01) or (above and best_at >= 1)
    if not worse:
        return None
    train_note = ""
    if train is not None:
        then, now = _train_near(train, best.line), _train_near(train, last.line)
        if then is None or now is None or then is now:
            return None
        train_lower_better = train.group != ACC
        improving = now.value < then.value * 0.97 if train_lower_better else now.value > then.value + 0.01
        moved_on = now.value < then.value * (0.7 if jump else 0.8)
        if not improving or (above and not clear and not steady and not moved_on):
            return None  # a noisy validation curve above its best needs a training curve that clearly moved on
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
    trend = _thirds_trend(vals, val.group != ACC)  # how much the validation curve improved, first to last third
    learning = val.group == ACC and trend >= 0.05  # validation accuracy still climbing: a gap that is closing
    stalled = len(vals) < 3 or (best is not last_val and not learning)
    creeping = len(vals) >= 3 and abs(trend) < 0.25 * abs(gap_now)  # validation barely moves against the gap
    # Training memorised, validation far behind and no longer improving: no healthy run looks like this.
    if val.group == ACC:
        memorised = last_train.value >= 0.97 and gap_now >= 0.1 or last_train.value >= 0.9 and gap_now >= 0.25
    else:
        memorised = last_val.value >= 5 * max(last_train.value, 1e-9) and gap_now >= 0.05
    if memorised and (len(vals) < 3 or best is not last_val or creeping):
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


def _val_flat_train_falling(train: Series | None, val: Series | None) -> Finding | None:
    """Validation loss flat for six or more evaluations (its best under 3% below where it began) while training loss
    fell by a fifth or more, and validation ends well above training: the model learns only the training set."""
    if train is None or val is None or val.group != LOSS or train.group != LOSS:
        return None
    vals = _finite(val.points)
    if len(vals) < 6 or vals[0].value <= 0:
        return None
    best = min(p.value for p in vals)
    then, now = _train_near(train, vals[0].line), _train_near(train, vals[-1].line)
    if then is None or now is None or then is now or then.value <= 0:
        return None
    flat = (vals[0].value - best) / vals[0].value < 0.03
    falling = now.value <= 0.8 * then.value
    apart = vals[-1].value >= 1.3 * max(now.value, 1e-9) and vals[-1].value - now.value >= 0.05 * vals[-1].value
    if not (flat and falling and apart):
        return None
    return Finding(
        (vals[0].line, vals[-1].line),
        f"{val.key} {_fmt(vals[0].value)} {_at(vals[0])}, {_fmt(vals[-1].value)} {_at(vals[-1])} (best {_fmt(best)}) "
        f"while {train.key} went {_fmt(then.value)} -> {_fmt(now.value)}",
    )


def _val_never_improved(val_loss: Series | None, val_acc: Series | None, train: Series | None) -> Finding | None:
    """Six or more validation results and none clearly better than the first, the accuracy low (under 0.5), and
    training not far ahead of validation: nothing the model learns carries over, and it learns little at all."""
    if val_acc is None or not val_acc.chance:
        return None
    accs = _finite(val_acc.points)
    if len(accs) < 6 or max(p.value for p in accs) >= 0.5 or max(p.value for p in accs) - accs[0].value > 0.1:
        return None
    if val_loss is not None:
        losses = _finite(val_loss.points)
        if len(losses) >= 2 and (losses[0].value - min(p.value for p in losses)) / max(losses[0].value, 1e-9) >= 0.03:
            return None
        if train is not None and train.group == LOSS and losses:
            now = _train_near(train, losses[-1].line)
            if now is not None and losses[-1].value >= 1.3 * max(now.value, 1e-9):
                return None  # training far ahead: that is a gap, not a model that cannot learn
    first, last = accs[0], accs[-1]
    return Finding(
        (first.line, last.line),
        f"{val_acc.key} {_fmt(first.value)} {_at(first)}, {_fmt(last.value)} {_at(last)}: never clearly better over "
        f"{len(accs)} evaluations",
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
    near = (
        None
        if chance is not None
        else (
            _chance_pair(train_loss or val_loss, [a for a in (train_acc, val_acc) if a is not None])
            or _binary_logloss_above_chance(curves)
        )
    )
    if near is not None:
        found["no_better_than_chance"] = near
    flat = _loss_flat(train_loss, val_loss, curves) or _stuck_tail(train_loss)
    if flat is not None:
        found["loss_flat"] = flat
    plateau = _loss_plateau_high(train_loss, train_acc or val_acc, curves)
    if plateau is not None and flat is None and "loss_at_chance" not in found:
        found["loss_plateau_high"] = plateau
    stuck = _metric_stuck(train_acc) or _metric_stuck(val_acc)
    if stuck is not None and "loss_at_chance" not in found:
        found["metric_stuck"] = stuck
    turned = _val_turned(val_loss, train_loss) or _val_turned(val_acc, train_acc or train_loss)
    if turned is not None and (chance or near) is None:
        found["val_loss_rising"] = turned
    never = _val_never_improved(val_loss, val_acc, train_loss)
    if never is not None and chance is None:
        found["validation_never_improved"] = never
    stalled = (
        _stalled_while_training_improves(curves, train_loss or train_acc)
        or _val_flat_train_falling(train_loss, val_loss)
        or (None if turned is not None else _val_turned(val_loss, train_loss, noisy=True))
    )
    if stalled is not None and chance is None:
        found["val_stalled_train_improving"] = stalled
    gap = _gap_widening(train_loss, val_loss) or _gap_widening(train_acc, val_acc)
    if gap is not None and chance is None:
        found["generalization_gap"] = gap
    return found
