"""When a refusal does not say what to grant, ask the audit logs what IAM refused the job's identity.

"Error 403: The caller does not have permission" names neither the permission nor the resource, so no grant can
be written from the job's own log; gsutil's "does not have storage.objects.get access to the Google Cloud Storage
object." names the permission but no bucket. Cloud Audit Logs record each refused call with the checks IAM made
(permission, resource, granted or not). Before the alert is posted, the job's project's audit entries of calls
refused to the identity the job ran as, from just before the job started to a few minutes after it ended, join
the job's evidence: the diagnosis reads them like any other refusal (bot.intake.audit_entry) and writes the grant.

What the audit logs cannot show stays with the user's own `gcloud logging read` command: data reads are logged
only where Data Access audit logs are on, and a refusal on another project's resource is logged in that project.
"""

from __future__ import annotations

from datetime import datetime

from bot.alerting.deadline import Deadline
from bot.diagnosis.evidence.audit_lookup import audit_window, principal_to_ask_about
from bot.diagnosis.knowledge import KnowledgeBase
from bot.intake.stored_entry import stored_entry
from bot.jobs.lookup import JobLookup
from bot.models import Diagnosis
from bot.sources import Subject
from bot.store import Store


def add_refused_calls(
    lookup: JobLookup,
    store: Store,
    job_key: str,
    subject: Subject,
    diagnosis: Diagnosis,
    entries: list[dict],
    deadline: Deadline,
    now: datetime,
    kb: KnowledgeBase,
) -> bool:
    """Add the audit entries of the calls refused to the job's identity to its evidence (stored, and in
    `entries`) when the diagnosis needs them; True when any was new, or the audit logs could not be read (the
    subject's `unavailable` then says why): the alert is diagnosed again."""
    job = subject.job
    principal = principal_to_ask_about(diagnosis, kb)
    window = audit_window(job, now) if job is not None else None
    if principal is None or window is None or job is None or not job.project:
        return False
    fetched, unavailable = lookup.refused_calls(job.project, principal, *window, deadline=deadline)
    subject.unavailable.extend(unavailable)
    known = {str(entry.get("insertId")) for entry in entries}
    added = bool(unavailable)  # what could not be read is told in the alert too
    for raw in fetched:
        entry = stored_entry(raw)
        store.add_entry(job_key, entry["insertId"], entry)
        if entry["insertId"] not in known:
            entries.append(entry)
            known.add(entry["insertId"])
            added = True
    return added
