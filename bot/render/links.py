"""Google Cloud console links for a training job (pure string building, no I/O).

Every value taken from a job (project, region, job id, task name) is percent-encoded, so a link can never
contain `<`, `>`, `|`, `&` or whitespace and is safe to put inside a Slack `<url|label>` link.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

CONSOLE = "https://console.cloud.google.com"


def job_console_url(project: str | None, region: str | None, job_id: str) -> str:
    """The job's page in the Vertex AI console, or the custom-jobs list when the region or id is unknown."""
    if region and job_id:
        path = f"/vertex-ai/locations/{_segment(region)}/training/{_segment(job_id)}"
    else:
        path = "/vertex-ai/training/custom-jobs"
    return CONSOLE + path + _project_param(project)


def pipeline_run_console_url(project: str | None, region: str | None, run_id: str) -> str:
    """A Vertex AI Pipelines run's page in the console (the runs list when the region is unknown)."""
    path = (
        f"/vertex-ai/locations/{_segment(region)}/pipelines/runs/{_segment(run_id)}"
        if region
        else "/vertex-ai/pipelines/runs"
    )
    return CONSOLE + path + _project_param(project)


def logs_query(job_id: str, task_name: str | None = None) -> str:
    """The Logging query language filter for one job's `ml_job` entries (optionally one replica)."""
    clauses = ['resource.type="ml_job"', f"resource.labels.job_id={_quoted(job_id)}"]
    if task_name:
        clauses.append(f"resource.labels.task_name={_quoted(task_name)}")
    return " AND ".join(clauses)


def logs_query_url(
    project: str | None,
    job_id: str,
    task_name: str | None = None,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
) -> str:
    """A Logs Explorer link pre-filtered on the job (and replica), optionally limited to [start, end].

    Without a time range the Logs Explorer shows its default (the last hour), which usually misses a
    job that failed earlier; pass the job's start and failure times when they are known. Naive datetimes
    are taken as UTC.
    """
    url = f"{CONSOLE}/logs/query;query={_segment(logs_query(job_id, task_name))}"
    if start is not None or end is not None:
        url += f";timeRange={_timestamp(start)}{_segment('/')}{_timestamp(end)}"
    return url + _project_param(project)


def _segment(value: str) -> str:
    return quote(value, safe="")


def _project_param(project: str | None) -> str:
    return f"?project={_segment(project)}" if project else ""


def _quoted(value: str) -> str:
    """A Logging query language string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _timestamp(moment: datetime | None) -> str:
    if moment is None:
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return _segment(moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
