"""The validation curve turned: best a while ago and now clearly worse, while training improved (or, logged once,
sits far below it) - the overfitting reading of a validation curve."""

from __future__ import annotations

from bot.diagnosis.curves.finding import Finding, at, finite, fmt, same_measure, train_near
from bot.diagnosis.curves.series import ACC, Point, Series


def val_turned(
    val: Series | None, train: Series | None, *, noisy: bool = False, boosting: bool = False
) -> Finding | None:
    """Validation was best a while ago and is now clearly worse, while training kept improving. `boosting`: gradient
    boosting stopped early on this validation metric; every round it adds fits the training data better, so a
    validation curve that clearly turned needs no training curve beside it."""
    if val is None:
        return None
    points = finite(val.points)
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
    # ...but a loss whose last two values both stand half again above its best printed value (not the first, and two
    # or more evaluations before the end) has turned whatever the noise: the average at the curve's edge, over two
    # values only, must not hide that best behind a lucky first epoch
    raw_best = min(range(n), key=values.__getitem__)
    if lower_better and 1 <= raw_best <= n - 3 and 0 < 1.5 * values[raw_best] <= min(values[-2:]):
        best_at = raw_best
    # ...nor may the first value's average, over two values only, take the best from a later printed one: a curve
    # best at its second evaluation is best there, not at its first
    if best_at == 0 and raw_best >= 1 and n >= 6:
        best_at = raw_best
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
    # the message and its evidence name the best value as printed: the best raw value where the smoothed one is best
    best = min(points[max(0, best_at - 1) : best_at + 2], key=lambda p: sign * p.value)
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
        then, now = train_near(train, points[best_at]), train_near(train, last)
        if then is None or now is None:
            return None
        if then is now:  # training logged once
            return _turned_beside_one_training_value(val.key, best, last, train, now, lower_better)
        train_lower_better = train.group != ACC
        improving = now.value < then.value * 0.97 if train_lower_better else now.value > then.value + 0.01
        moved_on = now.value < then.value * (0.7 if jump else 0.8)
        if not improving or (above and not clear and not steady and not moved_on):
            return None  # a noisy validation curve above its best needs a training curve that clearly moved on
        if not lower_better and not train_lower_better and same_measure(train, val) and now.value <= best.value:
            return None  # training accuracy never passed validation's best: nothing was memorised
        # validation still fits better than training: a small rise there is noise, not memorising - unless it rose at
        # every one of four or more evaluations since its best, by a tenth or more of it as printed, or ended half again
        # above that best
        since = values[points.index(best) :]
        climbed = len(since) >= 5 and all(b > a for a, b in zip(since, since[1:], strict=False))
        climbed = climbed and last.value >= 1.1 * best.value
        risen = last.value >= 1.5 * best.value  # half again above its printed best: more than noise, wherever it sits
        if lower_better and train_lower_better and last.value < now.value and not clear and not climbed and not risen:
            return None
        train_note = f" while {train.key} went {fmt(then.value)} -> {fmt(now.value)}"
    elif boosting and (clear or steady):
        train_note = " while boosting added rounds (each one fits the training data better)"
    else:
        return None  # without a training curve, a validation curve turning may be plain divergence
    return Finding(
        (best.line, last.line),
        f"{val.key} best {fmt(best.value)} {at(best)}, {fmt(last.value)} {at(last)}{train_note}",
    )


def _turned_beside_one_training_value(
    key: str, best: Point, last: Point, train: Series, value: Point, loss: bool
) -> Finding | None:
    """A validation loss that turned (val_turned's test; its best may be the first evaluation) and ended a tenth or
    more above its best while the training loss was logged once, after that best
    (Hugging Face's Trainer logs it every 500 steps: a short fine-tune has one value beside many evaluations), at
    two thirds of the validation loss's last value or less: the model fits its training data far better than data it
    has not seen, and grew worse on the latter - memorising. A run that diverged has no training loss that low."""
    if not loss or train.group == ACC or value.line < best.line or not 0 < 1.5 * value.value <= last.value:
        return None
    if last.value < 1.1 * best.value:
        return None  # within a tenth of its best: the wobble of a settled curve
    return Finding(
        (best.line, last.line),
        f"{key} best {fmt(best.value)} {at(best)}, {fmt(last.value)} {at(last)}, while {train.key} was "
        f"{fmt(value.value)} {at(value)}",
    )
