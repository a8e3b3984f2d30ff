"""What an alert says: the diagnosis of a job's evidence and the context it is rendered with (pure: no I/O).

Shared by the first post and every update of an alert (bot.alerting.alerts), so both read the evidence alike.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence

from bot.alerting.incidents import incident_from_entries, is_closing_entry
from bot.chat.rerun_offer import rerun_offer
from bot.diagnosis.classifier import Classifier
from bot.intake.log_input import entries_to_lines, entry_text, parse_timestamp
from bot.jobs.identity import JobRef
from bot.models import Diagnosis, JobInfo
from bot.render.alert_context import AlertContext
from bot.sources import AlertSource, Subject

_ATTEMPT = re.compile(r"exited with a non-zero status|ran out-of-memory and exited|Replicas low on memory")


def diagnose_alert(
    classifier: Classifier,
    sources: Sequence[AlertSource],
    ref: JobRef,
    job: JobInfo | None,
    entries: list[dict],
    unavailable: list[str],
    *,
    subject: Subject,
) -> tuple[Diagnosis, AlertContext]:
    """Classify the job's evidence (closing incident entries left out) and build what the message shows."""
    unique = {str(e.get("insertId") or _digest_key(e)): e for e in entries}
    ordered = sorted(unique.values(), key=lambda e: str(e.get("timestamp", "")))
    readable = [e for e in ordered if not is_closing_entry(e)]  # repeats its incident's text: not evidence
    diagnosis = classifier.classify(entries_to_lines(readable), job)
    marks = [e for e in ordered if any(source.marks_failure(e) for source in sources)]
    failed = (job is not None and job.state == "JOB_STATE_FAILED") or bool(marks) or subject.pipeline is not None
    knowledge = getattr(classifier, "kb", None)
    failed_at = job.end_time if job and job.end_time else None
    if failed_at is None:
        failed_at = next((t for t in (parse_timestamp(e.get("timestamp")) for e in marks) if t is not None), None)
    attempts = sum(1 for e in ordered if _ATTEMPT.search(entry_text(e)))
    pipeline = subject.pipeline
    context = AlertContext(
        job=job or JobInfo(project=ref.project, job_id=ref.id),
        project=(job.project if job and job.project else ref.project),
        region=(job.region if job else None) or ref.region,
        job_id=(job.job_id if pipeline and job and job.job_id else ref.id),
        display_name=(pipeline.display_name or ref.id) if pipeline else (job.display_name if job else None),
        first_failing_replica=diagnosis.first_failing_replica,
        failed_at=failed_at,
        attempt=attempts or None,
        unavailable=unavailable,
        job_key=ref.key,
        incident=None if failed else incident_from_entries(ordered),  # an incident on a job that has not failed
        rerun_offer=rerun_offer(knowledge, diagnosis, job) if knowledge is not None else None,
        pipeline=pipeline,
    )
    return diagnosis, context


def routed_job(job: JobInfo, subject: Subject) -> JobInfo:
    """What routing reads: a pipeline's alert is routed by the pipeline's labels (and the task job's region)."""
    if subject.pipeline is None:
        return job
    pipeline = subject.pipeline
    return job.model_copy(update={"labels": pipeline.labels, "region": job.region or pipeline.ref.region})


def _digest_key(entry: dict) -> str:
    return hashlib.sha256(json.dumps(entry, sort_keys=True, default=str).encode()).hexdigest()[:32]
