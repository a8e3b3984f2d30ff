"""Ask Cloud Quotas which quota id a metric has in a project: the QuotasClient role and its google-cloud-quotas
implementation.

A quota error names a metric (`aiplatform.googleapis.com/custom_model_training_tpu_v3`); a quota preference takes
the quota's id. knowledge/tables/quota_ids.yaml holds the ids that could be confirmed; for any other metric the
project's own QuotaInfos say it (`quotaInfos.list` on `projects/P/locations/global/services/S`, permission
`cloudquotas.quotas.get`), and with it the limit in force in each region: what an error that tells only how much
the request was short by needs to say how much to ask for. `CloudQuotasClient` calls that over
the library's REST transport, at `cloudquotas.googleapis.com` or a fixed `endpoint` (tests: "http://127.0.0.1:PORT",
with anonymous credentials).
The client library is imported on first use.

Failures come out as our errors: ApiPermissionDenied (naming the missing permission when Google says it),
ApiUnavailable (transient: 429, 5xx, timeouts, connection errors) or ApiError.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Protocol

from bot.gcp.api_errors import api_error_from
from bot.jobs.identity import PROJECT, is_valid
from bot.models import ProjectQuota

METRIC = re.compile(r"^(?P<service>[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*\.googleapis\.com)/[a-z][a-z0-9_]*$")
MAX_QUOTA_INFOS = 3_000  # a service's quotas read for one metric (Vertex AI lists several hundred)
_PAGE_SIZE = 500


class QuotasClient(Protocol):
    def quota_infos(
        self, *, project: str, service: str, metric: str, timeout: float | None = None
    ) -> list[ProjectQuota]: ...


class CloudQuotasClient:
    """QuotasClient on the Cloud Quotas v1 REST API."""

    def __init__(self, endpoint: str | None = None, credentials: Any = None, timeout: float = 10.0) -> None:
        self._endpoint = endpoint.rstrip("/") if endpoint else "cloudquotas.googleapis.com"
        self._credentials = credentials
        self._timeout = timeout
        self._client: Any = None
        self._lock = threading.Lock()

    def quota_infos(
        self, *, project: str, service: str, metric: str, timeout: float | None = None
    ) -> list[ProjectQuota]:
        """The project's quotas of `metric` (a service has one id per metric, sometimes a regional and a global one).

        Raises:
            ValueError: the project, service or metric is not in its identifier form.
            ApiError (and its kinds): the call failed.
        """
        found = METRIC.match(metric)
        if not is_valid(project, PROJECT) or found is None or found.group("service") != service:
            raise ValueError(f"cannot ask Cloud Quotas about {project!r} / {service!r} / {metric!r}")
        parent = f"projects/{project}/locations/global/services/{service}"
        quotas: list[ProjectQuota] = []
        try:
            pages = self._service().list_quota_infos(
                request={"parent": parent, "page_size": _PAGE_SIZE}, timeout=timeout or self._timeout
            )
            for read, info in enumerate(pages, start=1):
                if info.metric == metric and info.quota_id:
                    quotas.append(
                        ProjectQuota(
                            metric=metric,
                            quota_id=info.quota_id,
                            dimensions=tuple(info.dimensions),
                            limits=_limits(info),
                        )
                    )
                if read >= MAX_QUOTA_INFOS:
                    break
        except Exception as exc:
            error = api_error_from(exc, action=f"list {parent}/quotaInfos")
            if error is None:
                raise
            raise error from exc
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
