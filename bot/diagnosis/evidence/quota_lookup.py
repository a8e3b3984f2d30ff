"""Which quota to ask Cloud Quotas about (pure: no I/O).

A quota error names its metric (or only its display names: then those); the quota preference that raises the limit
takes the quota's id and the new value. When knowledge/tables/quota_ids.yaml has no confirmed id for that metric (a
Vertex AI TPU metric, a newer GPU), or when the error tells only how much the request was short by ("Requested 5.0,
available 1.0": the value is the limit in force plus that), the project's own QuotaInfos say it:
bot/gcp/cloud_quotas.py reads them for an alert (bot/alerting/quota_ids.py) and for /diagnose
(bot/chat/diagnose.py), and the job's `project_quotas` then fill the command (bot/diagnosis/commands/details.py). A
stockout or a full cluster is no quota: nothing to look up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.gcp.cloud_quotas import METRIC, QuotaWanted
from bot.models import Diagnosis, JobInfo, ProjectQuota

if TYPE_CHECKING:  # the knowledge base's loader reads command details, which read project_quota below
    from bot.diagnosis.knowledge import KnowledgeBase

QUOTA = "quota_exhausted"


def quota_to_look_up(diagnosis: Diagnosis, kb: KnowledgeBase) -> QuotaWanted | None:
    """The quota to look up when the diagnosis is a Google Cloud quota limit whose metric has no known id yet (or
    that names no metric, only display names, and the service), or whose preferred value waits for the limit in
    force."""
    details = diagnosis.details
    if diagnosis.failure_class != QUOTA or details.get("platform") not in (None, "google"):
        return None
    if QUOTA not in kb.classes or diagnosis.title != kb[QUOTA].title:  # a variant: a stockout, a full cluster
        return None
    waits_for_limit = "quota_shortfall" in details and "preferred_value" not in details
    if "quota_id" in details and not waits_for_limit:
        return None
    metric = details.get("quota_metric", "")
    found = METRIC.match(metric)
    if found is not None:
        return QuotaWanted(found.group("service"), metric)
    service = details.get("quota_service", "")
    wanted = QuotaWanted(service, "", details.get("quota_named", ""), details.get("quota_limit_named", ""))
    return wanted if not metric and wanted.valid() else None


def project_quota(
    job: JobInfo | None, metric: str | None, region: str | None, named: tuple[str, str] = ("", "")
) -> ProjectQuota | None:
    """The job's project's quota of `metric` (or, when the error names no metric, of the display names `named`:
    the metric's and the quota's; the quota's is the more precise): its regional id when the error names a region,
    else its global one (a metric can have both), else whichever the project lists."""
    known = job.project_quotas if job is not None else ()
    if metric:
        quotas = [q for q in known if q.metric == metric]
    else:
        metric_name, quota_name = named
        quotas = [q for q in known if quota_name and q.display_name == quota_name] or [
            q for q in known if metric_name and q.metric_display_name == metric_name
        ]
    if not quotas:
        return None
    regional = [q for q in quotas if "region" in q.dimensions]
    overall = [q for q in quotas if not q.dimensions]
    return ((regional if region else overall) or quotas)[0]
