"""When a quota error names a metric whose id no table holds, ask the project's Cloud Quotas for it.

"The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_tpu_v3" names the
metric; the preference that raises the limit takes the quota's id, which no document here confirms for that metric
(knowledge/tables/quota_ids.yaml). The project's QuotaInfos list it: before the alert is posted they are read for
that one metric (bot/gcp/cloud_quotas.py) and the job's `project_quotas` fill the quota-preference command. An error
that names no metric, only display names and the service, is looked up by those names in the same listing. What
could not be read is told in the alert; the list command it shows then finds the id.
"""

from __future__ import annotations

from dataclasses import replace

from bot.alerting.deadline import Deadline
from bot.diagnosis.evidence.quota_lookup import quota_to_look_up
from bot.diagnosis.knowledge import KnowledgeBase
from bot.jobs.lookup import JobLookup
from bot.models import Diagnosis
from bot.sources import Subject


def with_quota_ids(
    lookup: JobLookup, subject: Subject, diagnosis: Diagnosis, deadline: Deadline, kb: KnowledgeBase
) -> Subject | None:
    """The subject with its job's quotas of the metric the diagnosis names (or with what could not be read); None
    when there is nothing to ask or nothing was learnt: the diagnosis stands."""
    job = subject.job
    wanted = quota_to_look_up(diagnosis, kb)
    if wanted is None or job is None or not job.project or job.project_quotas:
        return None
    found, unavailable = lookup.quota_ids(job.project, wanted, deadline=deadline)
    if not found and not unavailable:
        return None
    known = job.model_copy(update={"project_quotas": tuple(found)})
    return replace(subject, job=known, unavailable=[*subject.unavailable, *unavailable])
