"""Rerun a failed Vertex AI Pipelines run from chat: a new PipelineJob with the same pipeline spec and inputs.

Vertex AI v1 has no "rerun from the failed task" method; a new run of the same `pipelineSpec` and `runtimeConfig`
takes every task that succeeded from Vertex AI's per-task cache (when the pipeline enables caching, the default)
and runs the failed task again. Offered only where an unchanged rerun can help (the class's rerun policy:
transient, or after a fix outside the spec such as a grant or a quota); a failure that needs a change to the
pipeline itself is fixed and resubmitted by its owners.
"""

from __future__ import annotations

from datetime import UTC, datetime

from bot.chat.rerun_body import LABEL_RERUN_BY, LABEL_RERUN_OF, label_value
from bot.errors import ApiError
from bot.gcp.pipeline_jobs import PipelinesClient
from bot.gcp.pipeline_resource import pipeline_rerun_body
from bot.jobs.identity import PIPELINE_JOB_ID, JobRef, is_valid
from bot.jobs.lookup import JobLookup

#: The Rerun button of a pipeline's alert: (label, confirmation title, confirmation text).
PIPELINE_BUTTON = (
    "Rerun pipeline",
    "Rerun this pipeline run?",
    "A new run of the same pipeline and inputs: the tasks that succeeded come from Vertex AI's cache (when the "
    "pipeline caches), the failed task runs again.",
)
PIPELINE_OFFERED_MODES = ("transient", "fix_first")  # an unchanged run can help (after the fix, for fix_first)


def new_run_id(old_id: str, now: datetime) -> str:
    """The new run's id: the old one's name part and a timestamp, as the SDK names runs (at most 128 characters)."""
    stem = old_id.rsplit("-", 1)[0] if old_id.rsplit("-", 1)[-1].isdigit() else old_id
    run_id = f"{stem[:100].rstrip('-')}-rerun-{now.astimezone(UTC).strftime('%Y%m%d%H%M%S')}"
    if not is_valid(run_id, PIPELINE_JOB_ID):
        raise ValueError(f"cannot name a rerun of {old_id!r}")
    return run_id


def create_pipeline_rerun(
    lookup: JobLookup, pipelines: PipelinesClient | None, ref: JobRef, *, user: str, now: datetime
) -> str:
    """Create the new run; its resource name.

    Raises:
        ApiError (and its kinds), ValueError: the run could not be read or created.
    """
    if pipelines is None:
        raise ApiError("no Vertex AI Pipelines client configured")
    found = lookup.find(ref)
    region = found.ref.region or ""
    body = pipeline_rerun_body(
        found.raw, labels={LABEL_RERUN_OF: label_value(ref.id), LABEL_RERUN_BY: label_value(user)}
    )
    created = pipelines.create_pipeline(project=ref.project, region=region, body=body, job_id=new_run_id(ref.id, now))
    return str(created.get("name", ""))
