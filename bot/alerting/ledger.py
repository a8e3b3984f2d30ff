"""The retry ledger of a job: how long it ran, the attempts Vertex made, the accelerator-hours, the hours lost.

Pure: `compute_ledger(job, lines)` reads the CustomJob's times and worker pools and the job's log lines;
`ledger_line(ledger)` is the one compact line the alert shows, e.g.
"Ran 3 h 12 min · 2 attempts · 96 A100-hours · last checkpoint step 12000, 1 h 40 min before the failure".

What the figures rest on (platform-facts §1.3, §1.3a, §2.1, §8):
- Run time is `endTime - startTime` (startTime is the first entry into RUNNING, so time spent queued is not
  counted; restarts happen inside that span). Without both times, the first to the last timestamped log line
  (`ran_from_logs`).
- A CustomJob has no attempt counter. Attempts are counted from Vertex's own failure messages: each
  "The replica R exited with a non-zero status ..." / "ran out of memory" line names the replica; the same
  replica failing N times means N attempts (other replicas failing alongside are one attempt's cascade).
  Job-wide messages ("Internal error occurred for the current attempt", "Resources are insufficient in
  region", a Spot STOCKOUT) count one attempt each. A job still running, or that succeeded, after failed
  attempts had one more. No such message: attempts unknown (None), never guessed.
- Accelerator-hours: accelerators x replicas of every pool x run time: an upper bound (a restart may spend
  part of the span provisioning), every attempt included.
- The last checkpoint is the newest "saving checkpoint" / "Saved model to" style line with a step, iteration
  or epoch; hours lost run from it to the failure (the job's endTime, else the last failure message). A job
  that failed after running at least LATE_SECONDS without a checkpoint in the lines read is flagged, since
  Google recommends checkpointing at least every 4 hours.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from bot.diagnosis.classifier import Classifier
from bot.models import Diagnosis, JobInfo, Ledger, LogLine

LATE_SECONDS = 3600.0  # a failure after this much run time is "late": say what was lost
_FAILED_STATES = {"JOB_STATE_FAILED"}
_STILL_GOING = {"JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED", "JOB_STATE_CANCELLING", "JOB_STATE_UPDATING"}

_REPLICA_EXIT = re.compile(
    r"\breplica\s+(?P<replica>[\w-]+)\s+(?:exited with a non-zero status|ran out[ -]of[ -]memory)", re.IGNORECASE
)
_POOL_LOW_MEMORY = re.compile(r"Replicas low on memory:\s*(?P<replica>[\w-]+)", re.IGNORECASE)
_JOB_ATTEMPT = re.compile(
    r"Internal error occurred for the current attempt|Resources are insufficient in region|\bSTOCKOUT\b",
    re.IGNORECASE,
)

_GAVE_UP = re.compile(r"Internal error occurred for the current attempt", re.IGNORECASE)

_SAVE = re.compile(
    r"\b(?:sav(?:e|ed|ing)|wr(?:ote|iting)|stor(?:ed|ing))\s+(?:the\s+)?(?:model\s+|final\s+)?"
    r"(?:checkpoint|ckpt|model|weights|state)s?\b"
    r"|\bcheckpoint\s+(?:saved|written|stored)\b"
    r"|\bsaving model to\b",
    re.IGNORECASE,
)
_SAVE_FAILED = re.compile(r"\b(?:fail(?:ed|ure)?|error|unable|could not|cannot|can't|skipp(?:ed|ing))\b", re.I)
_STEP = re.compile(
    r"(?<![a-z])(?:global[ _]step|step|iteration|iter)s?(?![a-z])[\s=:#_-]*(?P<n>\d{1,12})(?!\d)", re.IGNORECASE
)
_EPOCH = re.compile(r"(?<![a-z])epochs?(?![a-z])[\s=:#_-]*(?P<n>\d{1,9})(?!\d)", re.IGNORECASE)
_NUMBERED_FILE = re.compile(r"(?:checkpoint|ckpt|cp|model)[-_](?P<n>\d{1,12})\b", re.IGNORECASE)


def compute_ledger(job: JobInfo | None, lines: Iterable[LogLine]) -> Ledger | None:
    """The job's ledger, or None when nothing is known (no times, no pools, no telling lines)."""
    lines = [line for line in lines if line.text]
    job = job or JobInfo()
    ran, from_logs = _run_seconds(job, lines)
    attempts = _attempts(job, lines)
    hours = _accelerator_hours(job, ran)
    failed = job.state in _FAILED_STATES or (job.state is None and attempts is not None)
    checkpoint, checkpoint_at = _last_checkpoint(lines)
    failure_at = _failure_time(job, lines) if failed else None
    lost = None
    if checkpoint_at is not None and failure_at is not None and failure_at >= checkpoint_at:
        lost = (failure_at - checkpoint_at).total_seconds()
    no_checkpoint = failed and checkpoint is None and ran is not None and ran >= LATE_SECONDS
    if ran is None and attempts is None and not hours and checkpoint is None:
        return None
    return Ledger(
        ran_seconds=ran,
        ran_from_logs=from_logs,
        attempts=attempts,
        restarts=None if attempts is None else attempts - 1,
        accelerator_hours=hours,
        checkpoint=checkpoint,
        checkpoint_at=checkpoint_at,
        lost_seconds=lost,
        no_checkpoint_seen=no_checkpoint,
    )


def with_ledger(diagnosis: Diagnosis, job: JobInfo | None, lines: Iterable[LogLine]) -> Diagnosis:
    """`diagnosis` carrying the job's ledger (unchanged when nothing is known)."""
    ledger = compute_ledger(job, lines)
    return diagnosis if ledger is None else diagnosis.model_copy(update={"ledger": ledger})


class LedgerClassifier:
    """A classifier whose diagnoses carry the job's ledger (wired in the composition roots)."""

    def __init__(self, classifier: Classifier) -> None:
        self._classifier = classifier

    def classify(self, lines: Sequence[LogLine], job: JobInfo | None = None) -> Diagnosis:
        lines = list(lines)
        return with_ledger(self._classifier.classify(lines, job), job, lines)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._classifier, name)


# ------------------------------------------------------------------------------------------------ the line


def ledger_line(ledger: Ledger | None) -> str | None:
    """One compact line, plain text (the caller escapes it); None when there is nothing to say."""
    if ledger is None:
        return None
    parts: list[str] = []
    if ledger.ran_seconds is not None:
        parts.append(f"Ran {'at least ' if ledger.ran_from_logs else ''}{format_duration(ledger.ran_seconds)}")
    if ledger.attempts is not None:
        parts.append(f"{ledger.attempts} attempt{'' if ledger.attempts == 1 else 's'}")
    for accelerator, hours in sorted(ledger.accelerator_hours.items()):
        parts.append(f"{format_hours(hours)} {short_accelerator(accelerator)}-hours")
    if ledger.checkpoint:
        text = f"last checkpoint {ledger.checkpoint}"
        if ledger.lost_seconds is not None:
            text += f", {format_duration(ledger.lost_seconds)} before the failure"
        parts.append(text)
    elif ledger.no_checkpoint_seen:
        parts.append("no checkpoint in the logs read")
    return " · ".join(parts) or None


def format_duration(seconds: float) -> str:
    """'3 h 12 min', '45 min', '< 1 min', '2 d 4 h'."""
    minutes = int(max(seconds, 0.0) // 60)
    if minutes < 1:
        return "< 1 min"
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min"


def format_hours(hours: float) -> str:
    """96 -> '96', 1.53 -> '1.5', 0.04 -> '0.04'."""
    if hours >= 10:
        return f"{round(hours):,}"
    if hours >= 0.1:
        return f"{hours:.1f}".rstrip("0").rstrip(".")
    return f"{hours:.2f}".rstrip("0").rstrip(".") or "0"


def short_accelerator(name: str) -> str:
    """NVIDIA_TESLA_A100 -> A100, NVIDIA_A100_80GB -> A100-80GB, TPU_V3 -> TPU-V3."""
    for prefix in ("NVIDIA_TESLA_", "NVIDIA_"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name.replace("_", "-")


# ------------------------------------------------------------------------------------------------ helpers


def _run_seconds(job: JobInfo, lines: list[LogLine]) -> tuple[float | None, bool]:
    if job.start_time is not None and job.end_time is not None and job.end_time >= job.start_time:
        return (job.end_time - job.start_time).total_seconds(), False
    stamps = [line.timestamp for line in lines if line.timestamp is not None]
    if job.start_time is not None:
        stamps.append(job.start_time)
    if len(stamps) < 2:
        return None, False
    return (max(stamps) - min(stamps)).total_seconds(), True


def _service(line: LogLine) -> bool:
    return line.replica in (None, "service")


def _attempts(job: JobInfo, lines: list[LogLine]) -> int | None:
    per_replica: dict[str, set[tuple[Any, str]]] = {}
    job_wide: set[tuple[Any, str]] = set()
    last: LogLine | None = None  # the latest failure message: what the job ended with
    for line in lines:
        if not _service(line):
            continue
        key = (line.timestamp, line.text.strip()[:200])
        match = _REPLICA_EXIT.search(line.text) or _POOL_LOW_MEMORY.search(line.text)
        if match is not None:
            per_replica.setdefault(match["replica"], set()).add(key)
        elif _JOB_ATTEMPT.search(line.text):
            job_wide.add(key)
        else:
            continue
        if last is None or line.timestamp is None or last.timestamp is None or line.timestamp >= last.timestamp:
            last = line
    failed = max([len(seen) for seen in per_replica.values()] + [len(job_wide)])
    if failed == 0:
        return None
    if job.state in _STILL_GOING:
        return failed + 1
    # Vertex fails a job with its internal error only after its third attempt (reference: "returned after 3
    # attempts in total"), whether or not the logs read show every attempt's message
    if last is not None and _GAVE_UP.search(last.text):
        return max(failed, 3)
    return failed


def _accelerator_hours(job: JobInfo, ran: float | None) -> dict[str, float]:
    if ran is None:
        return {}
    hours: dict[str, float] = {}
    for pool in job.worker_pools:
        if pool.accelerator_type and pool.accelerator_count > 0 and pool.replica_count > 0:
            amount = pool.accelerator_count * pool.replica_count * ran / 3600.0
            hours[pool.accelerator_type] = hours.get(pool.accelerator_type, 0.0) + amount
    return hours


def _checkpoint_label(text: str) -> str | None:
    if not _SAVE.search(text) or _SAVE_FAILED.search(text):
        return None
    for pattern, unit in ((_STEP, "step"), (_EPOCH, "epoch"), (_NUMBERED_FILE, "step")):
        match = pattern.search(text)
        if match is not None:
            return f"{unit} {int(match['n'])}"
    return None


def _last_checkpoint(lines: list[LogLine]) -> tuple[str | None, datetime | None]:
    best: tuple[str | None, datetime | None] = (None, None)
    for line in lines:
        label = _checkpoint_label(line.text)
        if label is None:
            continue
        current = best[1]
        if line.timestamp is None:
            if current is None:  # untimed: the last one in log order
                best = (label, None)
        elif current is None or line.timestamp >= current:
            best = (label, line.timestamp)
    return best


def _failure_time(job: JobInfo, lines: list[LogLine]) -> datetime | None:
    if job.end_time is not None:
        return job.end_time
    marks = [
        line.timestamp
        for line in lines
        if line.timestamp is not None
        and _service(line)
        and (
            _REPLICA_EXIT.search(line.text)
            or _POOL_LOW_MEMORY.search(line.text)
            or _JOB_ATTEMPT.search(line.text)
            or line.text.strip() == "Job failed."
        )
    ]
    return max(marks) if marks else None
