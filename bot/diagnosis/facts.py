"""Structured facts about one job, derived from its log lines and its CustomJob resource.

Knowledge files refer to these by name (`facts: [...]` in a signal); the classifier never guesses at them.
Training-curve facts come from the curves the job printed (`curves` reads them, `curve_facts` judges them).
"""

from __future__ import annotations

import re

import re2

from bot.diagnosis.curve_facts import Finding, curve_findings
from bot.diagnosis.curves import read_curves
from bot.intake.log_document import LogDocument
from bot.models import JobInfo

FACT_NAMES: frozenset[str] = frozenset(
    {
        "steps_logged",  # the job printed training progress (loss values, epochs, steps)
        "no_steps_logged",  # ... and this says it did not: it failed before training started
        "spot",  # the job ran on Spot capacity
        "multi_replica",  # more than one replica (from the job spec or the logs)
        "job_failed",  # the job is known to have failed (state or Vertex's "Job failed." entry)
        "no_error_lines",  # nothing in the logs looks like an error, a traceback or a kill
        "loss_flat",  # training loss never moved from where it started
        "loss_at_chance",  # loss at ln(k) or accuracy at 1/k: the model guesses uniformly over k classes
        "val_loss_rising",  # validation was best a while ago and is clearly worse, while training improved
        "generalization_gap",  # the gap between validation and training grew to a large one
        "val_stalled_train_improving",  # early stopping: validation stopped improving while training improved
        "curves_logged",  # a training or validation metric was printed more than once
        "loss_plateau_high",  # from the start the loss fell a little, then stopped far above where it began
        "metric_stuck",  # an accuracy-like metric low and flat, or the very same value epoch after epoch
    }
    | {f"job_error_code_{code}" for code in range(1, 17)}  # google.rpc.Code of CustomJob.error
)

# RE2 (linear time, no look-behind): these scan the whole joined log once.
_PROGRESS = re2.compile(
    r"(?mi)\b(?:epoch|step|iter(?:ation)?)\s*[:=#]?\s*\d+|\d+/\d+\s*\[[=>.\s]*\]|\d+(?:\.\d+)?\s*(?:it/s|s/it)\b"
)
_ERRORISH = re2.compile(
    r"(?mi)traceback|error|exception|fatal|killed|abort|segmentation fault|core dumped|non-zero|"
    r"exit(?:ed)? (?:code|status)|terminat|fail"
)
_LIFECYCLE = frozenset({"Job failed.", "Finished tearing down training program.", "Tearing down training program."})
_REPLICA = re.compile(r"^workerpool\d+-\d+$")


def derive_facts(doc: LogDocument, job: JobInfo | None) -> tuple[frozenset[str], dict[str, Finding]]:
    """The facts that hold for this job, and for the training-curve facts the lines and sentence that show them."""
    facts: set[str] = set()
    lines = doc.lines
    curves = read_curves(doc)
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
    findings = curve_findings(curves)
    facts.update(findings)
    return frozenset(facts & FACT_NAMES), findings
