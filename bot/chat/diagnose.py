"""Diagnose one job on demand: fetch it (bot.jobs.lookup) and its logs, then classify.

Shared by `/diagnose`, `@trainmedic diagnose` and `trainmedic diagnose --job`. A job that is still running is
diagnosed from what its logs show so far (NaN losses, low utilisation, warnings); a pipeline run is diagnosed on
its failed task's job. Failures to fetch become clear answers: an unknown job names where it was looked for, a
missing permission is named, a bad id says what is expected.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime

from bot.alerting.event_log import event
from bot.chat.diagnose_request import DiagnoseRequest, help_text
from bot.diagnosis.classifier import Classifier
from bot.diagnosis.evidence.audit_lookup import audit_window, principal_to_ask_about
from bot.diagnosis.evidence.quota_lookup import quota_to_look_up
from bot.errors import ApiError, BotError
from bot.gcp.cloud_logs import LogsClient
from bot.gcp.cloud_quotas import QuotasClient
from bot.gcp.pipeline_jobs import PipelinesClient
from bot.gcp.vertex_jobs import JobsClient
from bot.intake.log_input import entries_to_lines
from bot.jobs.identity import JobIdError
from bot.jobs.lookup import BOT_IDENTITY, JobLookup
from bot.jobs.reference import JobReference, JobReferenceError
from bot.render.alert_context import AlertContext
from bot.render.diagnose_reply import JobDiagnosis, diagnosis_reply, problem_message, text_message
from bot.render.mrkdwn import escape
from bot.store import AlertRecord, Store

MAX_LOG_ENTRIES = 1000  # the newest entries are read: a failure (or a NaN) is at the end of the log


class JobDiagnoser:
    """Fetch and classify jobs on demand; everything is injected."""

    def __init__(
        self,
        *,
        jobs: JobsClient | None,
        logs: LogsClient | None,
        classifier: Classifier,
        regions: Sequence[str],
        default_project: str | None,
        store: Store | None = None,
        max_entries: int = MAX_LOG_ENTRIES,
        identity: str = BOT_IDENTITY,
        pipelines: PipelinesClient | None = None,
        quotas: QuotasClient | None = None,
        lookup: JobLookup | None = None,
    ) -> None:
        self.lookup = lookup or JobLookup(
            jobs=jobs, logs=logs, pipelines=pipelines, quotas=quotas, regions=regions, identity=identity
        )
        self.classifier = classifier
        self.regions = list(regions)
        self.default_project = default_project
        self.store = store
        self.max_entries = max_entries
        self.identity = identity

    def diagnose(
        self, reference: JobReference, *, project: str | None = None, region: str | None = None
    ) -> JobDiagnosis:
        """Fetch the job and its logs and classify them.

        Raises:
            JobReferenceError, JobNotFound, ApiPermissionDenied, ApiUnavailable, ApiError: see fetch_job.
        """
        chosen_project, regions = reference.resolve(
            project=project, region=region, default_project=self.default_project, regions=self.regions
        )
        ref = reference.ref(chosen_project)
        try:
            found = self.lookup.find(ref, regions=regions)
        except JobIdError as exc:
            raise JobReferenceError(str(exc)) from exc
        subject, unavailable = found, []
        if found.pipeline is not None:
            task = next((t.job_ref() for t in found.pipeline.failed_tasks if t.job_ref() is not None), None)
            if task is not None:
                try:
                    subject = self.lookup.find(task)
                except ApiError as exc:
                    unavailable.append(f"the failed task's job: {exc}")
        entries, problems = self.lookup.entries(subject.ref, max_entries=self.max_entries)
        unavailable += problems
        info = subject.info
        diagnosis = self.classifier.classify(entries_to_lines(entries), info)
        principal = principal_to_ask_about(diagnosis, self.classifier.kb)
        window = audit_window(info, datetime.now(UTC))
        if principal and window and info.project:  # a refusal naming no permission: the audit logs may name it
            refused, problems = self.lookup.refused_calls(info.project, principal, *window)
            unavailable += problems
            if refused:
                entries = sorted([*refused, *entries], key=lambda entry: str(entry.get("timestamp", "")))
                diagnosis = self.classifier.classify(entries_to_lines(entries), info)
        wanted = quota_to_look_up(diagnosis, self.classifier.kb)
        if wanted and info.project and not info.project_quotas:  # a quota no table has the id of: the project's own
            quotas, problems = self.lookup.quota_ids(info.project, wanted)
            unavailable += problems
            if quotas:
                info = info.model_copy(update={"project_quotas": tuple(quotas)})
                diagnosis = self.classifier.classify(entries_to_lines(entries), info)
        pipeline = found.pipeline
        failed = found.info.state in ("JOB_STATE_FAILED", "PIPELINE_STATE_FAILED")
        context = AlertContext(
            job=info,
            project=found.ref.project,
            region=found.ref.region,
            job_id=subject.ref.id,
            display_name=(pipeline.display_name or found.ref.id) if pipeline else info.display_name,
            first_failing_replica=diagnosis.first_failing_replica,
            failed_at=found.info.end_time if failed else None,
            unavailable=unavailable,
            job_key=found.ref.key,
            pipeline=pipeline,
        )
        return JobDiagnosis(job=found, diagnosis=diagnosis, context=context, unavailable=unavailable)

    def answer(self, request: DiagnoseRequest, *, who: str | None = None) -> dict:
        """The reply to a diagnose request: the diagnosis message, or a clear message saying what went wrong."""
        if request.help or request.reference is None:
            text = request.error or ""
            return text_message(
                (f":warning: {escape(text)}\n\n" if text else "") + help_text(self.default_project, self.regions)
            )
        try:
            result = self.diagnose(request.reference)
        except (JobReferenceError, ApiError) as exc:
            event(logging.INFO, "diagnose refused", job=request.reference.job_id, who=who, reason=str(exc))
            return problem_message(exc)
        alert = self._alert(result.job.ref.key)
        event(
            logging.INFO,
            "diagnosed on demand",
            job_key=result.job.ref.key,
            who=who,
            state=result.state,
            failure_class=result.diagnosis.failure_class,
        )
        return diagnosis_reply(result, alert_channel=alert.channel if alert is not None and alert.posted else None)

    def _alert(self, job_key: str) -> AlertRecord | None:
        if self.store is None:
            return None
        try:
            return self.store.get_alert(job_key)
        except BotError:  # the pointer to the alert is a nicety: answer without it
            return None
