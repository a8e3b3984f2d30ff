"""`trainmedic diagnose --job`: the command line's composition root for diagnosing a real job with Application
Default Credentials (the clients are built here, the work is bot.chat.diagnose's)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bot.alerting.ledger import LedgerClassifier
from bot.chat.diagnose import JobDiagnoser
from bot.diagnosis.classifier import Classifier
from bot.errors import ApiError
from bot.jobs.reference import parse_job_reference
from bot.models import Diagnosis, JobInfo


def diagnose_remote_job(
    job_ref: str,
    *,
    project: str | None,
    region: str | None,
    knowledge: Path | None,
    environ: Mapping[str, str],
) -> tuple[Diagnosis, str, JobInfo]:
    """`trainmedic diagnose --job`: fetch and diagnose a real job with Application Default Credentials.

    VERTEX_API_ENDPOINT / LOGGING_API_ENDPOINT (and TRAINMEDIC_CONFIG for the default project and regions)
    are honoured. Returns the diagnosis, a line describing the job and the job's facts it used.
    """
    from bot.config import load_routing, load_settings_for_tools
    from bot.diagnosis.knowledge import load_knowledge
    from bot.gcp.cloud_logs import CloudLoggingClient
    from bot.gcp.cloud_quotas import CloudQuotasClient
    from bot.gcp.pipeline_jobs import VertexPipelinesClient
    from bot.gcp.vertex_jobs import VertexJobsClient

    settings = load_settings_for_tools(environ)
    routing = load_routing(settings.TRAINMEDIC_CONFIG)
    reference = parse_job_reference(job_ref)
    default_project = routing.default_project or settings.GOOGLE_CLOUD_PROJECT
    if not (project or reference.project or default_project):
        default_project = _adc_project()
    diagnoser = JobDiagnoser(
        jobs=VertexJobsClient(endpoint=settings.VERTEX_API_ENDPOINT),
        logs=CloudLoggingClient(endpoint=settings.LOGGING_API_ENDPOINT),
        pipelines=VertexPipelinesClient(endpoint=settings.VERTEX_API_ENDPOINT),
        quotas=CloudQuotasClient(endpoint=settings.QUOTAS_API_ENDPOINT),
        classifier=LedgerClassifier(Classifier(load_knowledge(knowledge))),
        regions=routing.regions,
        default_project=default_project,
        identity="the account of your Application Default Credentials",
    )
    try:
        result = diagnoser.diagnose(reference, project=project, region=region)
    except ApiError as exc:
        if _credentials_missing(exc):
            raise ApiError(
                f"{exc}\nNo Application Default Credentials: run `gcloud auth application-default login`"
            ) from exc
        raise
    return result.diagnosis, result.source_label(), result.context.job


def _adc_project() -> str | None:
    """The project of the Application Default Credentials (gcloud's), if any."""
    try:
        import google.auth

        return google.auth.default()[1]
    except Exception:  # no credentials, or none that name a project: the caller asks for --project
        return None


def _credentials_missing(exc: BaseException) -> bool:
    from google.auth.exceptions import DefaultCredentialsError

    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, DefaultCredentialsError):
            return True
        cause = cause.__cause__
    return False
