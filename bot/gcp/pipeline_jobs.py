"""Read and create Vertex AI PipelineJobs: the PipelinesClient role and its google-cloud-aiplatform implementation.

Like bot.gcp.vertex_jobs: the generated `PipelineServiceClient` over its REST transport, one client per region
endpoint (or one fixed `endpoint` for tests), our errors out (JobNotFound, ApiPermissionDenied, ApiUnavailable).
"""

from __future__ import annotations

from typing import Any, Protocol

from bot.errors import JobNotFound
from bot.gcp.api_errors import google_errors
from bot.gcp.job_resource import custom_job_to_rest
from bot.gcp.regional_clients import RegionalClients, listed
from bot.jobs.identity import PIPELINE_JOB_ID, JobKind, JobRef, check, location_name


class PipelinesClient(Protocol):
    def get_pipeline_raw(self, ref: JobRef, *, timeout: float | None = None) -> dict: ...

    def create_pipeline(self, *, project: str, region: str, body: dict, job_id: str) -> dict: ...

    def list_pipelines_raw(
        self, *, project: str, region: str, filter: str = "", max_jobs: int = 500, timeout: float | None = None
    ) -> list[dict]: ...


class VertexPipelinesClient:
    """PipelinesClient on the Vertex AI v1 REST API."""

    def __init__(self, endpoint: str | None = None, credentials: Any = None, timeout: float = 10.0) -> None:
        self._clients = RegionalClients(_pipeline_service, endpoint=endpoint, credentials=credentials)
        self._timeout = timeout

    def get_pipeline_raw(self, ref: JobRef, *, timeout: float | None = None) -> dict:
        """The PipelineJob as a REST JSON dict (`ref` must be a pipeline job with its region)."""
        if ref.kind is not JobKind.PIPELINE_JOB:
            raise ValueError(f"{ref.key} is not a pipeline job")
        name = ref.resource_name
        with google_errors(f"get {name}", not_found=JobNotFound):
            job = self._client(str(ref.region)).get_pipeline_job(name=name, timeout=timeout or self._timeout)
        return custom_job_to_rest(job)

    def create_pipeline(self, *, project: str, region: str, body: dict, job_id: str) -> dict:
        """Create a PipelineJob from a REST JSON dict under `job_id`; returns the created job."""
        from google.cloud.aiplatform_v1.types import PipelineJob
        from google.protobuf import json_format

        parent = location_name(project, region)
        check(job_id, PIPELINE_JOB_ID, "pipeline job id")
        try:
            message = PipelineJob.wrap(json_format.ParseDict(body, PipelineJob.pb(PipelineJob())))
        except json_format.ParseError as exc:
            raise ValueError(f"body: not a valid PipelineJob: {exc}") from None
        with google_errors(f"create a PipelineJob in {parent}"):
            job = self._client(region).create_pipeline_job(
                parent=parent, pipeline_job=message, pipeline_job_id=job_id, timeout=self._timeout
            )
        return custom_job_to_rest(job)

    def list_pipelines_raw(
        self, *, project: str, region: str, filter: str = "", max_jobs: int = 500, timeout: float | None = None
    ) -> list[dict]:
        """pipelineJobs.list: the runs matching `filter` (customJobs.list's syntax), as REST dicts (no jobDetail)."""
        parent = location_name(project, region)
        client = self._client(region)
        return listed(
            lambda: client.list_pipeline_jobs(
                request={"parent": parent, "filter": filter, "page_size": min(max_jobs, 100)},
                timeout=timeout or self._timeout,
            ),
            max_items=max_jobs,
            action=f"list PipelineJobs in {parent}",
        )

    def _client(self, region: str) -> Any:
        return self._clients.get(region)


def _pipeline_service() -> Any:
    from google.cloud.aiplatform_v1.services.pipeline_service import PipelineServiceClient

    return PipelineServiceClient
