"""The data that flows through trainmedic: log lines in, a job's facts, a Diagnosis out."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class LogLine(BaseModel):
    """One line of a job's log output, with what is known about where it came from."""

    model_config = ConfigDict(frozen=True)

    text: str
    timestamp: datetime | None = None
    replica: str | None = None  # Vertex task_name ("workerpool0-0", "service"), or a rank or pod a line prefix names
    severity: str | None = None
    job_id: str | None = None
    project_id: str | None = None
    insert_id: str | None = None


class WorkerPool(BaseModel):
    model_config = ConfigDict(frozen=True)

    machine_type: str | None = None
    accelerator_type: str | None = None
    accelerator_count: int = 0
    replica_count: int = 1
    image_uri: str | None = None
    package_uris: tuple[str, ...] = ()  # a Python training application's packages (gs://...), when it has one
    args: tuple[str, ...] = ()  # the program's command and arguments as the spec gives them (data paths, flags)


class ProjectQuota(BaseModel):
    """One quota of the job's project as Cloud Quotas lists it (a QuotaInfo): the metric an error names, the id a
    quota preference takes, and the dimensions the id is kept per (`region`, or none: a global quota)."""

    model_config = ConfigDict(frozen=True)

    metric: str
    quota_id: str
    dimensions: tuple[str, ...] = ()
    # the names an error may give instead of the metric: "quota metric 'Resource management (CRUD) requests' and
    # limit 'Resource management (CRUD) requests per minute per region'" (the metric's and the quota's display names)
    metric_display_name: str = ""
    display_name: str = ""
    # the limit in force, per region as (region, value); region "" for the value of every region not listed
    limits: tuple[tuple[str, int], ...] = ()

    def limit_in(self, region: str | None) -> int | None:
        """The limit in `region` (its own value, else the one every other region has); None when not listed."""
        values = dict(self.limits)
        return values.get(region or "", values.get(""))


class JobInfo(BaseModel):
    """What the CustomJob resource says about a job (all optional: a job may be unknown)."""

    model_config = ConfigDict(frozen=True)

    name: str | None = None  # projects/P/locations/L/customJobs/ID
    job_id: str | None = None
    project: str | None = None  # project id or number, as found
    region: str | None = None
    display_name: str | None = None
    state: str | None = None  # JOB_STATE_FAILED, ...
    error_code: int | None = None  # google.rpc.Code
    error_message: str | None = None
    worker_pools: list[WorkerPool] = Field(default_factory=list)
    service_account: str | None = None
    submitted_by: str | None = None  # the caller who asked for the job, when known (a refused create's audit entry)
    spot: bool = False
    base_output_directory: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    create_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    # the project's quotas for the metric a quota error named, when Cloud Quotas was asked (bot/gcp/cloud_quotas.py)
    project_quotas: tuple[ProjectQuota, ...] = ()

    @property
    def replica_total(self) -> int:
        return sum(pool.replica_count for pool in self.worker_pools)

    @property
    def primary_pool(self) -> WorkerPool | None:
        return self.worker_pools[0] if self.worker_pools else None


class Alternative(BaseModel):
    model_config = ConfigDict(frozen=True)

    failure_class: str
    confidence: float
    evidence: str = ""  # the log line that speaks for it
    # matched signals, words the text model learned, or a training curve no finding judged (a curve class's lead)
    source: Literal["rules", "text model", "curve"] = "rules"

    @property
    def reason(self) -> str:
        """What its evidence is: a line a signal matched, a line whose words point at the class, or the curve."""
        return {"text model": "words", "curve": "curve"}.get(self.source, "line")


class Command(BaseModel):
    model_config = ConfigDict(frozen=True)

    title: str
    command: str


class Ledger(BaseModel):
    """What a job's run cost: wall time, attempts, accelerator-hours, the last checkpoint (bot/alerting/ledger.py)."""

    model_config = ConfigDict(frozen=True)

    ran_seconds: float | None = None  # start (first RUNNING) to end, every attempt included
    ran_from_logs: bool = False  # the job's times were unknown: first to last log line
    attempts: int | None = None  # attempts the logs show (None: the logs show none)
    restarts: int | None = None  # attempts - 1
    accelerator_hours: dict[str, float] = Field(default_factory=dict)  # accelerator type -> hours
    checkpoint: str | None = None  # "step 12000", "epoch 3"
    checkpoint_at: datetime | None = None
    lost_seconds: float | None = None  # from the last checkpoint to the failure
    no_checkpoint_seen: bool = False  # failed late in a run and the logs read show no checkpoint


class Diagnosis(BaseModel):
    """The classifier's answer for one job."""

    model_config = ConfigDict(frozen=True)

    failure_class: str
    confidence: float = Field(ge=0.0, le=1.0)
    title: str
    symptom: str = ""
    evidence: list[str] = Field(default_factory=list)
    remediation: list[str] = Field(default_factory=list)
    avoid: list[str] = Field(default_factory=list)
    first_checks: list[str] = Field(default_factory=list)
    commands: list[Command] = Field(default_factory=list)
    alternatives: list[Alternative] = Field(default_factory=list)
    first_failing_replica: str | None = None
    cascade: list[str] = Field(default_factory=list)  # e.g. "workerpool1-3: NCCL watchdog timeout"
    details: dict[str, str] = Field(default_factory=dict)  # parsed values: permission, quota_metric, ...
    finding: str | None = None  # what a training curve shows, in one sentence ("val_loss best 0.41 at epoch 12...")
    ledger: Ledger | None = None  # run time, attempts, accelerator-hours, hours lost (bot/alerting/ledger.py)
    # what named the class: matched rules, or - where no rule had evidence enough - the words of the log's lines
    # (the text model, bot/diagnosis/words/word_evidence.py) or the shape of a training curve no rule judged (the
    # shape model, bot/diagnosis/shape/): likely, not proven
    basis: Literal["rules", "words", "shape"] = "rules"

    def public_dict(self) -> dict:
        """The documented JSON shape (CLI --format json, outside measurements)."""
        return {
            "failure_class": self.failure_class,
            "confidence": round(self.confidence, 3),
            "title": self.title,
            "evidence": list(self.evidence),
            "remediation": list(self.remediation),
            "avoid": list(self.avoid),
            "commands": [c.model_dump() for c in self.commands],
            "alternatives": [
                {"failure_class": a.failure_class, "confidence": round(a.confidence, 3)}
                for a in self.alternatives
            ],
            "finding": self.finding,
            "basis": self.basis,
            "first_failing_replica": self.first_failing_replica,
            "cascade": list(self.cascade),
            "details": dict(self.details),
        }
