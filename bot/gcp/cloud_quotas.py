"""Ask Cloud Quotas which quota id a metric has in a project: the QuotasClient role and its google-cloud-quotas
implementation.

A quota error names a metric (`aiplatform.googleapis.com/custom_model_training_tpu_v3`); a quota preference takes
the quota's id. knowledge/tables/quota_ids.yaml holds the ids that could be confirmed; for any other metric the
project's own QuotaInfos say it (`quotaInfos.list` on `projects/P/locations/global/services/S`, permission
`cloudquotas.quotas.get`), and with it the limit in force in each region: what an error that tells only how much
the request was short by needs to say how much to ask for. An error may name no metric, only display names ("Quota
exceeded for quota metric 'Resource management (CRUD) requests' and limit 'Resource management (CRUD) requests per
minute per region' of service 'aiplatform.googleapis.com'"): each QuotaInfo carries those names too
(`metricDisplayName`, `quotaDisplayName`), and the same listing finds the quota by them. `CloudQuotasClient` calls
that over the library's REST transport, at `cloudquotas.googleapis.com` or a fixed `endpoint` (tests:
"http://127.0.0.1:PORT", with anonymous credentials).
The client library is imported on first use.

Failures come out as our errors: ApiPermissionDenied (naming the missing permission when Google says it),
ApiUnavailable (transient: 429, 5xx, timeouts, connection errors) or ApiError.
"""

from __future__ import annotations

import re
import threading
from typing import Any, NamedTuple, Protocol

from bot.gcp.api_errors import google_errors
from bot.jobs.identity import PROJECT, is_valid
from bot.models import ProjectQuota

SERVICE_NAME = r"[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*\.googleapis\.com"  # aiplatform.googleapis.com
METRIC = re.compile(rf"^(?P<service>{SERVICE_NAME})/[a-z][a-z0-9_]*$")
SERVICE = re.compile(rf"^{SERVICE_NAME}$")
# a display name as an error quotes it ("Resource management (CRUD) requests per minute per region"): plain words
DISPLAY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ()/,.:_+-]{0,160}$")
MAX_QUOTA_INFOS = 3_000  # a service's quotas read for one metric (Vertex AI lists several hundred)
_PAGE_SIZE = 500


class QuotaWanted(NamedTuple):
    """Which of a service's quotas an error is about: its metric, or, when the error names none, the display names
    it quotes instead (the metric's and the quota's)."""

    service: str
    metric: str = ""
    metric_display_name: str = ""
    display_name: str = ""

    def valid(self) -> bool:
        """Every part in its identifier form (a metric of this service, or a display name of plain words)."""
        if not SERVICE.match(self.service):
            return False
        if self.metric:
            found = METRIC.match(self.metric)
            return found is not None and found.group("service") == self.service
        names = [name for name in (self.metric_display_name, self.display_name) if name]
        return bool(names) and all(DISPLAY_NAME.match(name) for name in names)

    def matches(self, quota: ProjectQuota) -> bool:
        if self.metric:
            return quota.metric == self.metric
        return bool(
            (self.display_name and quota.display_name == self.display_name)
            or (self.metric_display_name and quota.metric_display_name == self.metric_display_name)
        )


class QuotasClient(Protocol):
    def quota_infos(self, *, project: str, wanted: QuotaWanted, timeout: float | None = None) -> list[ProjectQuota]: ...


class CloudQuotasClient:
    """QuotasClient on the Cloud Quotas v1 REST API."""

    def __init__(self, endpoint: str | None = None, credentials: Any = None, timeout: float = 10.0) -> None:
        self._endpoint = endpoint.rstrip("/") if endpoint else "cloudquotas.googleapis.com"
        self._credentials = credentials
        self._timeout = timeout
        self._client: Any = None
        self._lock = threading.Lock()

    def quota_infos(self, *, project: str, wanted: QuotaWanted, timeout: float | None = None) -> list[ProjectQuota]:
        """The project's quotas of the metric `wanted` names (a service has one id per metric, sometimes a regional
        and a global one), or of the display names it gives.

        Raises:
            ValueError: the project, service, metric or a name is not in its identifier form.
            ApiError (and its kinds): the call failed.
        """
        if not is_valid(project, PROJECT) or not wanted.valid():
            raise ValueError(f"cannot ask Cloud Quotas about {project!r} / {wanted!r}")
        parent = f"projects/{project}/locations/global/services/{wanted.service}"
        quotas: list[ProjectQuota] = []
        with google_errors(f"list {parent}/quotaInfos"):
            pages = self._service().list_quota_infos(
                request={"parent": parent, "page_size": _PAGE_SIZE}, timeout=timeout or self._timeout
            )
            for read, info in enumerate(pages, start=1):
                quota = ProjectQuota(
                    metric=info.metric,
                    quota_id=info.quota_id,
                    dimensions=tuple(info.dimensions),
                    metric_display_name=info.metric_display_name,
                    display_name=info.quota_display_name,
                )
                if info.quota_id and wanted.matches(quota):
                    quotas.append(quota.model_copy(update={"limits": _limits(info)}))
                if read >= MAX_QUOTA_INFOS:
                    break
        return quotas

    def _service(self) -> Any:
        with self._lock:
            if self._client is None:
                from google.cloud.cloudquotas_v1 import CloudQuotasClient as Generated

                credentials = self._credentials
                if credentials is None and self._endpoint.startswith("http://"):
                    from google.auth.credentials import AnonymousCredentials

                    credentials = AnonymousCredentials()
                self._client = Generated(
                    credentials=credentials, transport="rest", client_options={"api_endpoint": self._endpoint}
                )
            return self._client


def _limits(info: Any) -> tuple[tuple[str, int], ...]:
    """A QuotaInfo's limits as (region, value): each DimensionsInfo keyed by its region, "" for the default (no
    dimensions) that holds wherever no region has a value of its own. Other dimensions (a GPU family, a base model)
    are not told apart here: such a value is left out."""
    limits: list[tuple[str, int]] = []
    for dimensions_info in info.dimensions_infos:
        dimensions = dict(dimensions_info.dimensions)
        if set(dimensions) - {"region"}:
            continue
        limits.append((dimensions.get("region", ""), int(dimensions_info.details.value)))
    return tuple(limits)
