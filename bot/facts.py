"""Structured facts about one job, derived from its log lines and its CustomJob resource.

Knowledge files refer to these by name (`facts: [...]` in a signal); the classifier never guesses at them.
Training-curve facts come from the metrics the job printed (Keras, PyTorch Lightning, HF Trainer, Caffe...).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import re2

from bot.log_document import LogDocument
from bot.models import JobInfo

FACT_NAMES: frozenset[str] = frozenset(
    {
        "steps_logged",  # the job printed training progress (loss values, epochs, steps)
        "no_steps_logged",  # ... and this says it did not: it failed before training started
        "spot",  # the job ran on Spot capacity
        "multi_replica",  # more than one replica (from the job spec or the logs)
        "job_failed",  # the job is known to have failed (state or Vertex's "Job failed." entry)
        "no_error_lines",  # nothing in the logs looks like an error, a traceback or a kill
        "loss_flat",  # training loss did not improve over the logged window
        "loss_at_chance",  # training loss sits at ln(k): the model predicts uniformly over k classes
        "val_loss_rising",  # validation loss rose well above its best while training loss kept falling
        "generalization_gap",  # validation loss or accuracy far worse than training
    }
    | {f"job_error_code_{code}" for code in range(1, 17)}  # google.rpc.Code of CustomJob.error
)

# RE2 (linear time, no look-behind): these scan the whole joined log once.
_METRIC_TAIL = (
    r"""(?P<kind>loss|acc|accuracy)['"]?\s*[:=]\s*['"]?(?P<value>nan|-?inf|[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"""
)
_VAL_METRIC = re2.compile(r"""(?mi)(?:^|[\s,{(\[|'"-])(?P<key>(?:val|validation|eval|test)[_ ]?)""" + _METRIC_TAIL)
_TRAIN_METRIC = re2.compile(r"""(?mi)(?:^|[\s,{(\[|'"-])(?P<key>(?:train|training|total)?[_ ]?)""" + _METRIC_TAIL)
_PROGRESS = re2.compile(
    r"(?mi)\b(?:epoch|step|iter(?:ation)?)\s*[:=#]?\s*\d+|\d+/\d+\s*\[[=>.\s]*\]|\d+(?:\.\d+)?\s*(?:it/s|s/it)\b"
)
_ERRORISH = re2.compile(
    r"(?mi)traceback|error|exception|fatal|killed|abort|segmentation fault|core dumped|non-zero|"
    r"exit(?:ed)? (?:code|status)|terminat|fail"
)
_LIFECYCLE = frozenset({"Job failed.", "Finished tearing down training program.", "Tearing down training program."})
# Training curves are read from the start and the end of the log: the first value and the recent window are
# what the curve facts use, and a long log would otherwise cost a match per progress line.
_CURVE_HEAD = 4_096
_CURVE_TAIL = 24_576
_REPLICA = re.compile(r"^workerpool\d+-\d+$")
_CHANCE_CLASSES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 100, 1000)


@dataclass
class Curves:
    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    train_acc: list[float] = field(default_factory=list)
    val_acc: list[float] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.train_loss or self.val_loss or self.train_acc or self.val_acc)


def parse_curves(doc: LogDocument) -> Curves:
    curves = Curves()
    data = doc.data
    for match in _VAL_METRIC.finditer(data):
        _add_point(curves, data, match, validation=True)
    if len(data) <= _CURVE_HEAD + _CURVE_TAIL:
        windows = [data]
    else:
        head = data[:_CURVE_HEAD]
        windows = [head[: head.rfind(b"\n") + 1], data[len(data) - _CURVE_TAIL :]]
    for window in windows:
        for match in _TRAIN_METRIC.finditer(window):
            _add_point(curves, window, match, validation=False)
    return curves


def _add_point(curves: Curves, data: bytes, match: re2._Match, *, validation: bool) -> None:
    end = match.end()
    if end < len(data) and (chr(data[end]).isalnum() or data[end] in b"._"):
        return  # "loss: 0.5x" or a version string: not a metric value
    try:
        value = float(match["value"])
    except ValueError:
        return
    is_loss = match["kind"].lower() == b"loss"
    if validation:
        (curves.val_loss if is_loss else curves.val_acc).append(value)
    else:
        (curves.train_loss if is_loss else curves.train_acc).append(value)


def _finite(values: list[float]) -> list[float]:
    return [v for v in values if math.isfinite(v)]


def _loss_flat(losses: list[float]) -> bool:
    values = _finite(losses)[-40:]
    if len(values) < 5:
        return False
    mean = sum(values) / len(values)
    if mean <= 0:
        return False
    half = len(values) // 2
    first, second = values[:half], values[-half:]
    improvement = (sum(first) / len(first) - sum(second) / len(second)) / mean
    spread = (max(values) - min(values)) / mean
    return improvement < 0.01 and spread < 0.06


def _loss_at_chance(losses: list[float]) -> bool:
    values = _finite(losses)[-40:]
    if len(values) < 3:
        return False
    ordered = sorted(values)
    median = ordered[len(ordered) // 2]
    if median <= 0 or (max(values) - min(values)) / median > 0.06:
        return False
    return any(abs(median - math.log(k)) / math.log(k) < 0.005 for k in _CHANCE_CLASSES)


def _val_loss_rising(curves: Curves) -> bool:
    val = _finite(curves.val_loss)
    train = _finite(curves.train_loss)
    if len(val) < 4 or len(train) < 4:
        return False
    best_at = min(range(len(val)), key=val.__getitem__)
    improving = train[-1] < train[0] * 0.9
    return best_at <= len(val) - 3 and val[-1] >= val[best_at] * 1.10 and improving


def _generalization_gap(curves: Curves) -> bool:
    val, train = _finite(curves.val_loss), _finite(curves.train_loss)
    if val and train and val[-1] >= 3 * train[-1] and val[-1] - train[-1] >= 0.3:
        return True
    vacc, tacc = _finite(curves.val_acc), _finite(curves.train_acc)
    return bool(vacc and tacc and tacc[-1] >= 0.85 and tacc[-1] - vacc[-1] >= 0.2 and tacc[-1] <= 1.0)


def derive_facts(doc: LogDocument, job: JobInfo | None) -> tuple[frozenset[str], Curves]:
    """Compute the facts that hold for this job (and the training curves they came from)."""
    facts: set[str] = set()
    lines = doc.lines
    curves = parse_curves(doc)
    if curves.any or _PROGRESS.search(doc.data):
        facts.add("steps_logged")
    else:
        facts.add("no_steps_logged")
    if not any(lines[doc.line_at(m.start())].text.strip() not in _LIFECYCLE for m in _ERRORISH.finditer(doc.data)):
        facts.add("no_error_lines")
    replicas = {line.replica for line in lines if line.replica and _REPLICA.match(line.replica)}
    if len(replicas) > 1:
        facts.add("multi_replica")
    if job is not None:
        if job.spot:
            facts.add("spot")
        if job.replica_total > 1:
            facts.add("multi_replica")
        if job.state == "JOB_STATE_FAILED":
            facts.add("job_failed")
        if job.error_code:
            facts.add(f"job_error_code_{job.error_code}")
    if any(line.replica == "service" and line.text.strip() == "Job failed." for line in lines):
        facts.add("job_failed")
    if _loss_flat(curves.train_loss):
        facts.add("loss_flat")
    if _loss_at_chance(curves.train_loss):
        facts.add("loss_at_chance")
    if _val_loss_rising(curves):
        facts.add("val_loss_rising")
    if _generalization_gap(curves):
        facts.add("generalization_gap")
    return frozenset(facts & FACT_NAMES), curves
