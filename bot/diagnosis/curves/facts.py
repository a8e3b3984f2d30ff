"""What a training curve says: at chance, flat, validation turning while training improves, a widening gap.

Each finding carries the log lines that show it (the best and the latest validation value, the first and the
last training value) and one sentence stating the turn, e.g. "val_loss best 0.41 at epoch 12, 0.78 at epoch 40".
A curve that improves normally gives no finding.
"""

from __future__ import annotations

import math

from bot.diagnosis.curves.blowups import (
    gradient_norm_exploded,
    loss_overflowed,
    loss_spiked,
    loss_went_nan,
    perplexity_beyond_any_vocabulary,
)
from bot.diagnosis.curves.chance_findings import (
    COMMON_K,
    acc_at_chance,
    binary_logloss_above_chance,
    chance_pair,
    class_prior_baseline,
    loss_at_chance,
    noisy_chance_pair,
    stuck_at_chance_messages,
)
from bot.diagnosis.curves.finding import WINDOW, Finding, at, finite, fmt, last_value
from bot.diagnosis.curves.held_out_findings import (
    accuracies_frozen,
    val_acc_as_untrained,
    val_loss_rose_accuracy_held,
    validation_constant,
    validation_frozen,
    validation_predictions_frozen,
)
from bot.diagnosis.curves.loss_findings import (
    error_rate_stuck,
    loss_all_zero,
    loss_flat,
    loss_plateau_high,
    metric_stuck,
    not_much_better,
    score_at_zero,
    stuck_tail,
)
from bot.diagnosis.curves.series import ACC, ERROR, LOSS, TRAIN, VAL, Curves, Series
from bot.diagnosis.curves.turned_findings import val_turned
from bot.diagnosis.curves.validation_findings import (
    gap_widening,
    stalled_while_training_improves,
    val_crept_up,
    val_flat_train_falling,
    val_loss_never_improved,
    val_never_improved,
    val_saturated_train_falling,
)


def _numbered_eval_sets(curves: Curves) -> tuple[Series, Series] | None:
    """XGBoost's scikit-learn API names its evaluation sets validation_0, validation_1 (LightGBM: valid_0, valid_1);
    with no training curve printed, the first is the training set passed for monitoring when it fits clearly
    better than the second at the end."""
    for norm, first in curves.series.items():
        head, _, rest = norm.partition("/")
        if head != VAL or not rest.startswith("0/") or first.group == ACC:
            continue
        second = curves.series.get(f"{VAL}/1/{rest[2:]}")
        if second is None or len(first.points) < 3 or len(second.points) < 3:
            continue
        if first.points[-1].value < 0.8 * second.points[-1].value:
            return first, second
    return None


def _accuracy_learnt(*accs: Series | None) -> bool:
    """A printed accuracy that climbed to 0.75 or more (above chance for any class count, and it moved): a loss
    that happens to sit at ln k for some k is then a coincidence of scale, not a model guessing uniformly."""
    for acc in accs:
        if acc is None or not acc.chance:
            continue
        values = [p.value for p in acc.points if math.isfinite(p.value)]
        if len(values) >= 2 and values[-1] >= 0.75 and max(values) - min(values) >= 0.05:
            return True
    return False


def _accuracy_meaningless(loss: Series | None, *accs: Series | None) -> bool:
    """A training loss at 0.05 or below beside accuracies all at 0.05 or below: for a classifier a loss that low is
    near-perfect prediction, so an accuracy near zero is a metric that does not fit the task (Keras `accuracy` on a
    regression target compares floats for equality) - no evidence about learning either way."""
    printed = [a for a in accs if a is not None and finite(a.points)]
    if loss is None or loss.group != LOSS or not finite(loss.points) or not printed:
        return False
    return last_value(loss) <= 0.05 and all(max(p.value for p in finite(a.points)) <= 0.05 for a in printed)


# A regression's error metrics: a job that prints them beside its loss fits numbers, and its loss (a squared or
# absolute error) has no chance level - a value near ln k there is a coincidence of scale
_REGRESSION_WORDS = frozenset({"mse", "rmse", "mae", "rmsle", "msle", "mape", "smape", "rmspe", "mspe", "huber"})


def _regression(curves: Curves) -> bool:
    return any(s.points and s.norm.rpartition("/")[2] in _REGRESSION_WORDS for s in curves.series.values())


def _just_started(curves: Curves, train: Series) -> bool:
    """Every point of the training curve lies in the first 5% of the first epoch (0, or 1 where counting starts at
    1), as the lines' "[epoch][batch/batches]" say: too early for any judgement on the curve."""
    positions = [curves.epoch_position.get(p.line) for p in train.points]
    return bool(positions) and all(pos is not None and pos[0] <= 1 and pos[1] <= 0.05 for pos in positions)


def _loss_still_falling(train: Series | None) -> bool:
    """The training loss lower at every value than at the one before, its last a quarter or more below its value
    halfway through the log: a model still learning fast, whatever its accuracy shows yet (a per-batch loss that
    only bounces about is no such descent)."""
    points = finite(train.points) if train is not None and train.group == LOSS else []
    if len(points) < 3 or any(b.value >= a.value for a, b in zip(points, points[1:], strict=False)):
        return False
    return 0 < points[-1].value <= 0.75 * points[len(points) // 2].value


def _leaving_plateau(train: Series | None, run: int = 6) -> bool:
    """The training loss's last `run` values each lower than the one before, falling over them by 2% or more and by
    at least twice what it fell over everything logged before: a model that has started to learn (a warm-up's tiny
    learning rate ending), however flat or near chance the loss sat until then."""
    points = finite(train.points) if train is not None and train.group == LOSS else []
    if len(points) < 2 * run:
        return False
    tail = [p.value for p in points[-run - 1 :]]
    if any(b >= a for a, b in zip(tail, tail[1:], strict=False)) or tail[0] <= 0:
        return False
    fell, before = tail[0] - tail[-1], points[0].value - tail[0]
    return fell >= 0.02 * tail[0] and fell >= 2 * max(before, 0.0)


def _unless_training_moved(stuck: Finding | None, val_acc: Series | None, train_acc: Series | None) -> Finding | None:
    """A validation accuracy at the very same value, evaluation after evaluation, reads as one class predicted for
    every input - unless it scored better before it settled there and the training accuracy moved by a point or
    more over those same evaluations: a small validation set that stopped changing under a model still learning
    is converged. (A model that answers one class on validation sits at that class's share from the start.)"""
    if stuck is None or val_acc is None or train_acc is None:
        return stuck
    first, last = stuck.lines[0], stuck.lines[-1]
    held = [p.value for p in finite(val_acc.points) if first <= p.line <= last]
    before = [p.value for p in finite(val_acc.points) if p.line < first]
    moved = [p.value for p in finite(train_acc.points) if first <= p.line <= last]
    if len(held) < 5 or max(held) - min(held) >= 0.002 or not before or max(before) < held[0] + 0.01:
        return stuck
    return None if len(moved) >= 3 and max(moved) - min(moved) >= 0.01 else stuck


def _component_turned(curves: Curves, val_loss: Series | None, train_loss: Series | None) -> Finding | None:
    """With no plain loss on either side, a loss logged only as its parts (YOLO's box, objectness and class losses):
    one part turning on validation while the same part keeps falling on training - and the validation score, when
    one is logged (mAP), down from its best too: a part of the loss that drifts up under a score at its best is no
    harm done (a detector's objectness loss late in a long run)."""
    if any(s is not None and s.plain for s in (val_loss, train_loss)):
        return None
    score = curves.primary(VAL, ACC)
    scores = [p.value for p in finite(score.points)] if score is not None else []
    if scores and scores[-1] >= 0.95 * max(scores):
        return None
    return next(filter(None, (val_turned(v, t) for v, t in curves.component_pairs(LOSS))), None)


def _recently_improved(curves: Curves) -> Finding | None:
    """The early-stopping callback's last report of a new best has fewer than three "did not improve" reports after
    it: whatever stalls came before, the validation metric broke out of them."""
    messages = curves.improve_messages
    last_best = max((i for i, (*_, improved) in enumerate(messages) if improved), default=None)
    if last_best is None or len(messages) - 1 - last_best >= 3:
        return None
    line, key, value, _ = messages[last_best]
    after = len(messages) - 1 - last_best
    return Finding((line,), f"{key} improved to {fmt(value)}, {after} report(s) before the end")


def _training_accuracy_fell(train_acc: Series | None) -> bool:
    """A training accuracy that never rose above its first value and ended clearly below it (0.355 -> 0.241 over ten
    epochs): whatever the loss did (down from an exploded first epoch), the model got no better on its own training
    data - it memorised nothing, so a validation curve that turned is no overfitting."""
    points = finite(train_acc.points) if train_acc is not None and train_acc.plain else []  # not "acc_mean_pos"
    if len(points) < 3:
        return False
    first = points[0].value
    return points[-1].value < first - 0.02 and max(p.value for p in points) <= first + 0.01


def _training_accuracy_climbing(train_acc: Series | None) -> bool:
    """A training accuracy that rose five points or more over the evaluations a chance judgement looks at, to a best
    at its end or near it (0.112 -> 0.178 over eighteen epochs): the model fits its own training data better and
    better, so a validation accuracy hovering near some 1/k beside it is a gap between the two, not a model that
    guesses."""
    points = finite(train_acc.points)[-WINDOW:] if train_acc is not None and train_acc.plain else []
    if len(points) < 3:
        return False
    values = [p.value for p in points]
    return values[-1] - values[0] >= 0.05 and values[-1] >= max(values) - 0.01


def _length(series: Series) -> int:
    return len(series.points)


def curve_findings(curves: Curves) -> dict[str, Finding]:
    """Fact name -> finding, for the curve facts that hold."""
    found: dict[str, Finding] = {}
    if not curves.any and not curves.improve_messages:
        return found
    logged = [s for s in curves.series.values() if len(s.points) >= 2]
    if logged:  # a training curve: what a reader would look at when no finding judges it (a curve class's lead)
        losses = (curves.primary(VAL, LOSS), curves.primary(TRAIN, LOSS))
        shown = next((s for s in losses if s is not None and len(s.points) >= 2), max(logged, key=_length))
        first, last = shown.points[0], shown.points[-1]
        went = f"{len(shown.points)} times: {fmt(first.value)} {at(first)}, {fmt(last.value)} {at(last)}"
        found["curves_logged"] = Finding((first.line, last.line), f"{shown.key} logged {went}")
    recent = _recently_improved(curves)
    if recent is not None:
        found["validation_recently_improved"] = recent
    train_loss = curves.primary(TRAIN, LOSS) or curves.primary(TRAIN, ERROR)
    val_loss = curves.primary(VAL, LOSS) or curves.primary(VAL, ERROR)
    if train_loss is not None and _just_started(curves, train_loss):
        overflowed = loss_overflowed(train_loss)  # an overflow is no start-up value
        if overflowed is not None:
            found["loss_spiked"] = overflowed
        return found  # the first batches of the first epoch: a loss at ln k there is where every run begins
    if train_loss is None:
        train_loss, val_loss = _numbered_eval_sets(curves) or (None, val_loss)
    train_acc, val_acc = curves.primary(TRAIN, ACC), curves.primary(VAL, ACC)
    if _accuracy_meaningless(train_loss, train_acc, val_acc):
        train_acc = val_acc = None  # an "accuracy" printed for a regression: it says nothing of learning
    learning = _leaving_plateau(train_loss)
    loss_chance = (
        None
        if _regression(curves) or learning
        else (
            loss_at_chance(train_loss)
            or loss_at_chance(val_loss if train_loss is None else None)
            or loss_at_chance(val_loss if train_loss is not None and not_much_better(train_loss) else None, COMMON_K)
        )
    )
    falling = _loss_still_falling(train_loss)  # accuracy lags the loss early on: at chance while the loss drops fast
    climbing = _training_accuracy_climbing(train_acc)  # a validation accuracy near 1/k beside it is a gap
    chance = (
        (None if _accuracy_learnt(train_acc, val_acc) else loss_chance)
        or (None if falling else acc_at_chance(train_acc))
        or (
            None
            if falling or climbing
            else acc_at_chance(val_acc if train_acc is None or last_value(train_acc) < 0.6 else None)
        )
        or (None if climbing else stuck_at_chance_messages(curves))
    )
    if chance is not None:
        found["loss_at_chance"] = chance
    near = (
        None
        if chance is not None
        else (
            chance_pair(train_loss or val_loss, [a for a in (train_acc, val_acc) if a is not None])
            or chance_pair(val_loss, [a for a in (train_acc, val_acc) if a is not None])
            or noisy_chance_pair(train_loss, [a for a in (train_acc, val_acc) if a is not None])
            or noisy_chance_pair(val_loss, [a for a in (val_acc, train_acc) if a is not None])
            or binary_logloss_above_chance(curves)
            or class_prior_baseline(train_acc, train_loss)
            or class_prior_baseline(val_acc, val_loss, train_acc)
        )
    )
    if near is not None:
        found["no_better_than_chance"] = near
    flat = (
        (None if learning else loss_flat(train_loss, val_loss, curves) or stuck_tail(train_loss))
        or loss_all_zero(train_loss, curves)
        or validation_frozen(curves)
    )
    if flat is not None:
        found["loss_flat"] = flat
    spiked = (
        loss_spiked(train_loss)
        or loss_went_nan(curves)
        or perplexity_beyond_any_vocabulary(curves)
        or gradient_norm_exploded(curves)
    )
    if spiked is not None:
        found["loss_spiked"] = spiked
    plateau = loss_plateau_high(train_loss, train_acc or val_acc, curves)
    if plateau is not None and flat is None and "loss_at_chance" not in found:
        found["loss_plateau_high"] = plateau
    stuck = (
        (None if falling else metric_stuck(train_acc))
        # a validation accuracy flat far below a training accuracy is a gap (overfitting), not a model stuck
        or (
            _unless_training_moved(metric_stuck(val_acc), val_acc, train_acc)
            if val_acc is None or train_acc is None or not last_value(train_acc) - last_value(val_acc) >= 0.15
            else None
        )
        or error_rate_stuck(curves)
        or validation_predictions_frozen(val_acc, val_loss, train_loss)
        or accuracies_frozen(train_acc, val_acc)
        or val_acc_as_untrained(val_acc)
        or score_at_zero(curves, train_loss)
    )
    if stuck is not None and "loss_at_chance" not in found:
        found["metric_stuck"] = stuck
    boosted = curves.boosting_stopped is not None  # gradient boosting's early stopping named its best round
    turned = (
        val_turned(val_loss, train_loss)
        or val_turned(val_acc, train_acc or train_loss)
        or val_loss_rose_accuracy_held(val_loss, val_acc, train_loss)
        or _component_turned(curves, val_loss, train_loss)
        or (val_turned(val_loss, None, boosting=True) if train_loss is None and boosted else None)
    )
    unlearnt = _training_accuracy_fell(train_acc)  # nothing learnt on the training data: nothing memorised either
    if unlearnt:
        turned = None
    if turned is not None and (chance or near) is None:
        found["val_loss_rising"] = turned
    crept = None
    if turned is None and not unlearnt:
        crept = val_crept_up(val_loss, train_loss) or val_crept_up(val_acc, train_acc)
    if crept is not None and (chance or near) is None:
        found["val_loss_crept_up"] = crept
    constant = validation_constant(val_loss, train_loss)
    if constant is not None:
        found["validation_constant"] = constant
    never = val_never_improved(val_loss, val_acc, train_loss) or (
        val_loss_never_improved(val_loss, train_loss) if val_acc is None else None
    )
    if never is not None and chance is None:
        found["validation_never_improved"] = never
    stalled = (
        stalled_while_training_improves(curves, train_loss or train_acc)
        or val_flat_train_falling(train_loss, val_loss)
        or val_saturated_train_falling(train_loss, val_loss)
        or val_saturated_train_falling(train_acc, val_acc)
        or (None if turned is not None else val_turned(val_loss, train_loss, noisy=True))
    )
    if stalled is not None and chance is None and not unlearnt:
        found["val_stalled_train_improving"] = stalled
    gap = gap_widening(train_loss, val_loss) or (
        None if _val_loss_still_improving(val_loss) else gap_widening(train_acc, val_acc)
    )
    if gap is not None and chance is None and not unlearnt:
        found["generalization_gap"] = gap
    return found


def _val_loss_still_improving(val: Series | None) -> bool:
    """A validation loss over six or more evaluations that ends within 1% of its best and clearly (5%) below where it
    began: the model still generalises better evaluation after evaluation, whatever gap its accuracy shows against
    training's (a few evaluations of a run well under way show no such trend)."""
    points = finite(val.points) if val is not None and val.group == LOSS else []
    if len(points) < 6 or points[0].value <= 0:
        return False
    last = points[-1].value
    return last <= 1.01 * min(p.value for p in points) and last <= 0.95 * points[0].value
