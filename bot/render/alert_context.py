"""What an alert's messages show besides the diagnosis (AlertContext), and the accessors that read a value from
the context first and from the job's details second.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from bot.alerting.incidents import Incident
from bot.chat.rerun_offer import RerunOffer
from bot.gcp.pipeline_resource import PipelineInfo
from bot.models import Diagnosis, JobInfo
from bot.render.block_kit import MAX_BUTTON_VALUE

UNKNOWN_CLASS = "unknown"


class AlertContext(BaseModel):
    """What the message shows besides the diagnosis: where the job ran and what people did about it."""

    model_config = ConfigDict(frozen=True)

    job: JobInfo = Field(default_factory=JobInfo)
    project: str | None = None
    region: str | None = None
    job_id: str
    display_name: str | None = None
    first_failing_replica: str | None = None
    failed_at: datetime | None = None
    attempt: int | None = Field(default=None, ge=0)  # failed attempts / restarts seen
    unavailable: list[str] = Field(default_factory=list)  # "job details: the bot lacks aiplatform..."
    acknowledged_by: str | None = None  # Slack user id
    acknowledged_at: datetime | None = None
    rerun_by: str | None = None
    rerun_job_id: str | None = None
    job_key: str = Field(min_length=1, max_length=MAX_BUTTON_VALUE)  # the only thing in button values
    incident: Incident | None = None  # the alert is about this Monitoring incident, not a failure
    rerun_offer: RerunOffer | None = None  # what Rerun offers (None: a generic Rerun button)
    pipeline: PipelineInfo | None = None  # the alert is about this pipeline run; `job` is its failed task's job
    rerun_outcome: str | None = None  # how the rerun started from chat ended ("Rerun succeeded in 2 h 10 min")

    @property
    def rerun_made(self) -> bool:
        return self.rerun_by is not None or self.rerun_job_id is not None


def display_name_of(ctx: AlertContext) -> str | None:
    return ctx.display_name or ctx.job.display_name


def job_id_of(ctx: AlertContext) -> str | None:
    return ctx.job_id or ctx.job.job_id


def project_of(ctx: AlertContext) -> str | None:
    return ctx.project or ctx.job.project


def region_of(ctx: AlertContext) -> str | None:
    return ctx.region or ctx.job.region


def first_replica_of(diagnosis: Diagnosis, ctx: AlertContext) -> str | None:
    return ctx.first_failing_replica or diagnosis.first_failing_replica
