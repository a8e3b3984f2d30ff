"""What people do with an alert: Acknowledge, Undo, Rerun. Framework-free; Slack is reached through the
injected WebClient (membership and user-group look-ups, views) and SlackPoster (messages).

Rules:
- An action names a job key; the job must be one whose alert the bot posted, and a button must sit on that
  very message (channel + ts). Anything else is refused.
- Acknowledge and Undo are for members of the alert's channel (conversations.members).
- Rerun is offered as the failure class's knowledge file says (bot.chat.rerun_offer): not for a class whose file offers
  none, nor for an alert about a Monitoring incident on a job that has not failed.
- Rerun is for the users and user groups the job's route allows (`rerun_allowed`, read from the current
  config); user groups are expanded with usergroups.users.list. It is checked when the modal opens and again
  on submit, where an atomic claim in the store lets exactly one submission create a job, whatever the
  number of clicks, retries or people.
- Every action is recorded (who, what, when, result, detail), refusals included: `trainmedic history JOB`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.alerting.alerts import AlertService
from bot.alerting.event_log import event
from bot.alerting.rerun_outcomes import remember_rerun
from bot.alerting.routing import destination_for
from bot.alerting.stored_alert import StoredAlert
from bot.chat.audit import AuditTrail, plain
from bot.chat.authorization import RerunAuthorization
from bot.chat.pipeline_rerun import PIPELINE_OFFERED_MODES, create_pipeline_rerun
from bot.chat.rerun_body import create_body
from bot.chat.rerun_offer import RerunOffer, rerun_offer
from bot.chat.rerun_plan import RerunPlan, announcement, plan_rerun
from bot.chat.rerun_settings import RerunInputError, RerunSettings, parse_settings
from bot.config import RoutingConfig
from bot.diagnosis.knowledge import KnowledgeBase
from bot.errors import ActionRefused, ApiError, ApiUnavailable
from bot.gcp.job_resource import parse_job_name
from bot.gcp.pipeline_jobs import PipelinesClient
from bot.gcp.vertex_jobs import JobsClient
from bot.jobs.identity import JobKind, parse_key
from bot.jobs.lookup import JobLookup
from bot.jobs.reference import JobReferenceError
from bot.models import Diagnosis, JobInfo
from bot.render.diagnose_reply import channel_link
from bot.slack.directory import SlackDirectory
from bot.slack.poster import SlackPoster
from bot.store import AlertRecord, Store

WHAT_ACKNOWLEDGE = "acknowledge"
WHAT_UNACKNOWLEDGE = "unacknowledge"
WHAT_RERUN = "rerun"
MAX_MEMBER_PAGES = 20  # 20 000 members: a larger channel is refused rather than scanned for ever


@dataclass(frozen=True)
class RerunClaim:
    """A won claim: the caller acknowledged the submission and now runs `complete_rerun`."""

    job_key: str
    user: str
    settings: RerunSettings


@dataclass(frozen=True)
class RerunStart:
    claim: RerunClaim | None = None
    errors: dict[str, str] | None = None  # invalid inputs: field name -> problem (shown in the modal)
    duplicate: bool = False  # this user's submission is already being handled (a retry or a double click)


class ActionService:
    def __init__(
        self,
        *,
        store: Store,
        poster: SlackPoster,
        alerts: AlertService,
        jobs: JobsClient,
        routing: RoutingConfig,
        clock: Callable[[], float] = time.time,
        group_cache_seconds: float = 30.0,
        lookup: JobLookup | None = None,
        directory: SlackDirectory | None = None,
        pipelines: PipelinesClient | None = None,
    ) -> None:
        self.store = store
        self.poster = poster
        self.directory = directory or SlackDirectory(poster.client)
        self.trail = AuditTrail(store, clock=clock)
        self.alerts = alerts
        self.jobs = jobs
        self.pipelines = pipelines
        self.lookup = lookup or JobLookup(jobs=jobs, logs=None, pipelines=pipelines, regions=routing.regions)
        self.routing = routing
        self.clock = clock
        self.authorization = RerunAuthorization(self.directory, clock=clock, group_cache_seconds=group_cache_seconds)

    # ------------------------------------------------------------------------------------------ acknowledge

    def acknowledge(self, job_key: str, *, user: str, channel: str, message_ts: str) -> str:
        """Mark the alert acknowledged by `user` and show it on the message. Returns what happened.

        Raises:
            ActionRefused: unknown job or message, or `user` is not a member of the channel.
        """
        with self.trail.action(job_key, user, WHAT_ACKNOWLEDGE) as audit:
            record = self._alert(job_key, channel=channel, message_ts=message_ts)
            self._require_member(record, user)
            if record.acknowledged_by is not None:
                audit.result = f"already acknowledged by {record.acknowledged_by}"
                return audit.result
            self.store.set_acknowledged(job_key, user=user, at=self.clock())
            audit.result = "acknowledged" + self._refresh(job_key)
            return audit.result

    def unacknowledge(self, job_key: str, *, user: str, channel: str, message_ts: str) -> str:
        """Undo an acknowledgement (any member of the channel may)."""
        with self.trail.action(job_key, user, WHAT_UNACKNOWLEDGE) as audit:
            record = self._alert(job_key, channel=channel, message_ts=message_ts)
            self._require_member(record, user)
            if record.acknowledged_by is None:
                audit.result = "was not acknowledged"
                return audit.result
            audit.detail = f"had been acknowledged by {record.acknowledged_by}"
            self.store.set_acknowledged(job_key, user=None, at=self.clock())
            audit.result = "acknowledgement undone" + self._refresh(job_key)
            return audit.result

    # ------------------------------------------------------------------------------------------ rerun

    def request_rerun(self, job_key: str, *, user: str, channel: str, message_ts: str) -> AlertRecord:
        """The Rerun button: may `user` rerun this job? Refusals are recorded.

        Raises:
            ActionRefused: unknown job or message, a rerun was already made, or `user` may not rerun.
        """
        try:
            record = self._alert(job_key, channel=channel, message_ts=message_ts)
            self._require_no_rerun(record)
            self._require_rerun_offered(record)
            self.authorize_rerun(record, user)
        except ActionRefused as exc:
            self.trail.record(job_key, user, WHAT_RERUN, f"refused: {plain(str(exc))}")
            raise
        return record

    def rerun_pipeline(self, job_key: str, *, user: str, channel: str, message_ts: str) -> str:
        """A pipeline alert's Rerun (confirmed in the button's dialog): a new run of the same pipeline, its succeeded
        tasks from the cache (bot.chat.pipeline_rerun). Its name; ActionRefused as request_rerun or when refused."""
        record = self.request_rerun(job_key, user=user, channel=channel, message_ts=message_ts)
        with self.trail.action(job_key, user, WHAT_RERUN) as audit:
            if not self.store.claim_rerun(job_key, user=user):
                self._require_no_rerun(self.store.get_alert(job_key) or record)
                raise ActionRefused("someone else is already rerunning this pipeline")
            now = datetime.fromtimestamp(self.clock(), UTC)
            try:
                name = create_pipeline_rerun(self.lookup, self.pipelines, parse_key(job_key), user=user, now=now)
            except (ApiError, ValueError) as exc:
                self.store.release_rerun(job_key)
                raise ActionRefused(f"the pipeline could not be run again: {exc}") from exc
            self.store.finish_rerun(job_key, new_job_id=name)
            remember_rerun(self.store, job_key, name, now=self.clock())  # followed to its end by the scan
            audit.result = f"created pipeline run {name.rsplit('/', 1)[-1]}"
            try:
                self.poster.reply(channel, message_ts, f":repeat: <@{user}> ran this pipeline again as `{name}`.")
            except ApiError as exc:
                event(logging.WARNING, "rerun link not posted", job_key=job_key, reason=str(exc))
            self._refresh(job_key)
            return name

    def plan(self, job_key: str) -> RerunPlan:
        """Fetch the failed job and work out what the modal shows.

        Raises:
            ActionRefused: the job is unknown, or cannot be read or planned (the message says why).
        """
        record = self._alert(job_key)
        try:
            fetched = self.lookup.find(parse_key(job_key), regions=self._regions(record))
            return plan_rerun(
                fetched.raw,
                self._diagnosis(record),
                job_key=job_key,
                regions=self.routing.regions,
                knowledge=self._knowledge(),
            )
        except (ApiError, JobReferenceError, ValueError) as exc:
            raise ActionRefused(f"the failed job could not be read from Vertex AI: {exc}") from exc

    def begin_rerun(self, job_key: str, *, user: str, values: Mapping[str, str | None]) -> RerunStart:
        """The modal was submitted: check the inputs and the user, then claim the rerun (atomically).

        Raises:
            ActionRefused: unknown job, already rerun, `user` may not rerun, or someone else's rerun is running.
        """
        with self.trail.action(job_key, user, WHAT_RERUN) as audit:
            record = self._alert(job_key)
            if record.rerun_state is not None and record.rerun_by == user:
                audit.result = "duplicate submission ignored"
                return RerunStart(duplicate=True)
            self._require_no_rerun(record)
            self._require_rerun_offered(record)
            try:
                settings = parse_settings(values, regions=self._offered_regions(record))
            except RerunInputError as exc:
                audit.skip = True  # the modal stays open and says what to fix: nothing happened yet
                return RerunStart(errors=exc.errors)
            self.authorize_rerun(record, user)
            if not self.store.claim_rerun(job_key, user=user):
                current = self.store.get_alert(job_key) or record
                if current.rerun_by == user:
                    audit.result = "duplicate submission ignored"
                    return RerunStart(duplicate=True)
                self._require_no_rerun(current)
                raise ActionRefused("someone else is already rerunning this job")
            audit.result, audit.skip = "claimed", True  # complete_rerun records the outcome
            return RerunStart(claim=RerunClaim(job_key=job_key, user=user, settings=settings))

    def complete_rerun(self, claim: RerunClaim) -> str:
        """Create the new CustomJob for a won claim, post its link in the thread and update the alert.

        Returns the new job id. On failure the claim is released (so that someone can try again), the
        failure is recorded, and ActionRefused says what went wrong.
        """
        job_key, user, settings = claim.job_key, claim.user, claim.settings
        record = self._alert(job_key)
        ref = parse_key(job_key)
        project, job_id = ref.project, ref.id
        try:
            fetched = self.lookup.find(ref, regions=self._regions(record))
            plan = plan_rerun(
                fetched.raw,
                self._diagnosis(record),
                job_key=job_key,
                regions=self.routing.regions,
                knowledge=self._knowledge(),
            )
            settings = plan.resolve(settings)  # what the modal did not ask: as the failed job
            body = create_body(fetched.raw, settings, plan=plan, user=user)
            created = self.jobs.create_job(project=project, region=settings.region, body=body)
            new_job_name = str(created.get("name", ""))
            new_job_id = parse_job_name(new_job_name)[2]
        except Exception as exc:  # no job was created (or, for ApiUnavailable, maybe one was): free the claim
            self.store.release_rerun(job_key)
            if not isinstance(exc, ApiError | ValueError):
                event(logging.ERROR, "rerun crashed", job_key=job_key, exception=f"{type(exc).__name__}: {exc}")
            ambiguous = isinstance(exc, ApiUnavailable)
            hint = (
                f" The request may still have created a job: look for the label rerun-of={job_id} before trying again."
                if ambiguous
                else ""
            )
            self.trail.record(job_key, user, WHAT_RERUN, "failed", f"{exc}{hint}")
            event(logging.ERROR, "rerun failed", job_key=job_key, who=user, reason=str(exc))
            raise ActionRefused(f"the rerun failed: {exc}.{hint}") from exc
        # The full resource name: the alert links the new job in its own region, which may not be the failed one's.
        self.store.finish_rerun(job_key, new_job_id=new_job_name)
        remember_rerun(self.store, job_key, new_job_name, now=self.clock())  # the scan follows it to its end
        changes = plan.diff(settings)
        self.trail.record(
            job_key,
            user,
            WHAT_RERUN,
            f"created job {new_job_id} in {settings.region}",
            f"in {settings.region}: " + ("; ".join(changes) if changes else "same spec"),
        )
        event(logging.INFO, "rerun created", job_key=job_key, who=user, new_job_id=new_job_id, changes=changes)
        self._announce(record, plan, settings, user=user, new_job_id=new_job_id)
        self._refresh(job_key)
        return new_job_id

    def authorize_rerun(self, record: AlertRecord, user: str) -> None:
        """Raises ActionRefused unless `user` may rerun the job (bot.chat.authorization)."""
        self.authorization.require_rerun(self.rerun_allowed(record), user)

    def rerun_allowed(self, record: AlertRecord) -> tuple[str, ...]:
        """Who may rerun the job now: its route's rerun_allowed in the current config."""
        job, stored = _job_info(record), StoredAlert.of(record)
        if stored is not None and stored.context.pipeline is not None:  # routed by the pipeline's labels
            job = job.model_copy(update={"labels": stored.context.pipeline.labels})
        failure_class = stored.diagnosis.failure_class if stored else "unknown"
        return destination_for(job, failure_class, self.routing).rerun_allowed

    def notify(self, job_key: str, user: str, text: str) -> None:
        """Tell `user` something only they see, in the alert's channel (nothing if the job is unknown)."""
        record = self.store.get_alert(job_key) if job_key else None
        if record is None or not record.channel:
            return
        try:
            self.poster.ephemeral(record.channel, user, text)
        except ApiError as exc:
            event(logging.WARNING, "ephemeral not delivered", job_key=job_key, user=user, reason=str(exc))

    # ------------------------------------------------------------------------------------------ checks

    def _alert(self, job_key: str, *, channel: str | None = None, message_ts: str | None = None) -> AlertRecord:
        record = self.store.get_alert(job_key) if job_key and "/" in job_key else None
        if record is None or not record.posted or not record.channel or not record.message_ts:
            raise ActionRefused("trainmedic does not know this job: it acts only on the alerts it posted")
        if channel is not None and (channel, message_ts) != (record.channel, record.message_ts):
            raise ActionRefused("this is not the message trainmedic posted for this job")
        return record

    def _require_member(self, record: AlertRecord, user: str) -> None:
        channel = channel_link(record.channel or "")
        try:
            member = self.directory.is_channel_member(record.channel or "", user, max_pages=MAX_MEMBER_PAGES)
        except ApiError as exc:
            raise ActionRefused(f"could not check that you are a member of {channel} ({exc})") from exc
        if not member:
            raise ActionRefused(f"only members of {channel} can acknowledge its alerts")

    def _require_rerun_offered(self, record: AlertRecord) -> None:
        """Raises ActionRefused when the alert offers no Rerun: an incident on a job that has not failed, or a
        failure class whose knowledge file offers none."""
        stored = StoredAlert.of(record)
        if stored is not None and stored.context.incident is not None:
            raise ActionRefused(
                "this alert is about a Cloud Monitoring incident on a job that has not failed: nothing to rerun"
            )
        kind = parse_key(record.job_key).kind
        if kind not in (JobKind.CUSTOM_JOB, JobKind.PIPELINE_JOB):
            raise ActionRefused("no job was created: fix what the alert says, then submit the job again")
        offer = self._offer(record)
        if kind is JobKind.PIPELINE_JOB and (offer is None or offer.mode not in PIPELINE_OFFERED_MODES):
            raise ActionRefused(
                "an unchanged run of this pipeline fails the same way: change the pipeline, then submit it again"
            )
        if offer is not None and not offer.offered:
            raise ActionRefused(f"Rerun is not offered for {offer.failure_class}: {offer.why}")

    def _offer(self, record: AlertRecord) -> RerunOffer | None:
        knowledge = self._knowledge()
        return rerun_offer(knowledge, self._diagnosis(record), _job_info(record)) if knowledge is not None else None

    def _knowledge(self) -> KnowledgeBase | None:
        """The knowledge base the alerts are classified with (its `rerun:` policies decide what Rerun offers)."""
        return getattr(getattr(self.alerts, "classifier", None), "kb", None)

    @staticmethod
    def _require_no_rerun(record: AlertRecord) -> None:
        if record.rerun_state == "done":
            new_id = (record.rerun_job_id or "").rsplit("/", 1)[-1]
            raise ActionRefused(f"this job was already rerun by <@{record.rerun_by}> as job {new_id}")
        if record.rerun_state == "claimed":
            raise ActionRefused(f"<@{record.rerun_by}> is already rerunning this job")

    # ------------------------------------------------------------------------------------------ helpers

    def _regions(self, record: AlertRecord) -> list[str]:
        region = _job_info(record).region
        return [region] if region else list(self.routing.regions)

    def _offered_regions(self, record: AlertRecord) -> list[str]:
        return list(dict.fromkeys([*self._regions(record), *self.routing.regions]))

    @staticmethod
    def _diagnosis(record: AlertRecord) -> Diagnosis:
        stored = StoredAlert.of(record)
        if stored is None:
            return Diagnosis(failure_class="unknown", confidence=0.0, title="No diagnosis stored")
        return stored.diagnosis

    def _refresh(self, job_key: str) -> str:
        """Re-render the alert with its stored state and update the message; "" or a note if Slack failed."""
        record = self.store.get_alert(job_key)
        if record is None or not record.channel or not record.message_ts:
            return ""
        try:
            self.poster.update(record.channel, record.message_ts, self.alerts.render_record(record))
        except ApiError as exc:
            event(logging.WARNING, "alert message not updated", job_key=job_key, reason=str(exc))
            return f" (the message could not be updated: {exc})"
        return ""

    def _announce(
        self, record: AlertRecord, plan: RerunPlan, settings: RerunSettings, *, user: str, new_job_id: str
    ) -> None:
        assert record.channel and record.message_ts
        try:
            self.poster.reply(record.channel, record.message_ts, announcement(plan, settings, user, new_job_id))
        except ApiError as exc:
            event(logging.WARNING, "rerun link not posted", job_key=record.job_key, reason=str(exc))


def refusal_text(exc: ActionRefused) -> str:
    """An ActionRefused as the sentence the person sees."""
    reason = str(exc).rstrip(".")
    return f":no_entry_sign: {reason[:1].upper()}{reason[1:]}."


def _job_info(record: AlertRecord) -> JobInfo:
    try:
        return JobInfo.model_validate(record.job or {})
    except ValueError:
        ref = parse_key(record.job_key)
        return JobInfo(project=ref.project, job_id=ref.id)
