"""The parts the demo's samples are made of: the Sample record and builders for jobs and their log entries."""

from __future__ import annotations

from dataclasses import dataclass, field

from standins.google_apis import custom_job_json, log_entry

PROJECT = "acme-ml"
REGION = "us-central1"


@dataclass
class Sample:
    title: str
    job: dict | None  # the resource the stand-in serves (None: the job was never created)
    deliveries: list[dict]  # LogEntries (or Monitoring notifications) in the order Pub/Sub delivers them
    final_job: dict | None = None  # the job's state after the deliveries (a restart that recovers)
    expect_message: bool = True
    notes: list[str] = field(default_factory=list)
    failure_class: str | None = None  # the class the alert should show (None: nothing is posted)
    more_jobs: list[dict] = field(default_factory=list)  # other jobs the stand-in serves (a pipeline's task job)
    logged: list[dict] = field(default_factory=list)  # entries Cloud Logging holds but no sink pushes (audit log)


def at(second: int) -> str:
    return f"2026-11-29T09:{second // 60:02d}:{second % 60:02d}.000000001Z"


def failed_marker(job_id: str, second: int) -> dict:
    return log_entry(PROJECT, job_id, "Job failed.", timestamp=at(second), insert_id=f"{job_id}-job-failed")


def job(job_id: str, name: str, **fields: object) -> dict:
    times = {"createTime": at(0), "startTime": at(1), "endTime": at(55), "updateTime": at(55)}
    return custom_job_json(PROJECT, REGION, job_id, displayName=name, **{**times, **fields})


def spec(job_id: str, *, machine: dict | None = None, replicas: int = 1, **fields: object) -> dict:
    """The job spec of `custom_job_json` with another machine, replica count or other fields."""
    spec = custom_job_json(PROJECT, REGION, job_id)["jobSpec"]
    pool = {**spec["workerPoolSpecs"][0], "replicaCount": str(replicas)}
    if machine is not None:
        pool["machineSpec"] = machine
    return {**spec, "workerPoolSpecs": [pool], **fields}


EXITED = "The replica workerpool0-0 exited with a non-zero status of {status}. Termination reason: Error."


def lines(job_id: str, texts: list[str], *, task: str = "workerpool0-0", start: int = 10) -> list[dict]:
    """One ERROR entry per text (the container's stderr), a second apart, from `task`."""
    return [
        log_entry(
            PROJECT,
            job_id,
            text,
            task_name=task,
            severity="ERROR",
            timestamp=at(start + i),
            insert_id=f"{job_id}-{task}-{start + i}",
        )
        for i, text in enumerate(texts)
    ]


def service(job_id: str, text: str, second: int) -> dict:
    """An ERROR entry Vertex AI itself writes (task_name "service")."""
    return log_entry(PROJECT, job_id, text, severity="ERROR", timestamp=at(second), insert_id=f"{job_id}-svc-{second}")
