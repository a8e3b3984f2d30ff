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

import re
from datetime import datetime, timedelta

from bot.alerting.deadline import Deadline
from bot.diagnosis.knowledge import KnowledgeBase
from bot.intake.stored_entry import stored_entry
from bot.jobs.lookup import JobLookup
from bot.models import Diagnosis, JobInfo
from bot.sources import Subject
from bot.store import Store

_GRANT = re.compile(r"\badd-iam-policy-binding\b")
_UNFILLED = re.compile(r"(?<![\w.-])[A-Z][A-Z0-9_]{2,}(?![\w.@-])")  # a placeholder (BUCKET) left in a command
PERMISSION = "permission_denied"
BEFORE_START = timedelta(minutes=1)
AFTER_END = timedelta(minutes=5)  # audit entries are written a little after the call
LONGEST_WINDOW = timedelta(days=7)  # a job that ran longer: its last week


def principal_to_ask_about(diagnosis: Diagnosis, kb: KnowledgeBase) -> str | None:
    """The service account to look up: for a Google Cloud permission refusal of the job's identity that names no
    permission, or whose grant still lacks the resource's name (gsutil's "access to the Google Cloud Storage
    object." names none). Never for a refusal whose cause is named and is no missing role (a variant of the class,
    known by its own title: a perimeter, an organization policy, OAuth scopes...)."""
    details = diagnosis.details
    if diagnosis.failure_class != PERMISSION or details.get("platform") not in (None, "google"):
        return None
    if PERMISSION not in kb.classes or diagnosis.title != kb[PERMISSION].title:
        return None
    if details.get("grantee") != "service_account":
        return None
    grants = [command.command for command in diagnosis.commands if _GRANT.search(command.command)]
    if "permission" in details and grants and not any(_UNFILLED.search(grant) for grant in grants):
        return None
    return details.get("service_account") or None


def audit_window(job: JobInfo, now: datetime) -> tuple[datetime, datetime] | None:
    """From a minute before the job started to five minutes after it ended (or now), at most a week long."""
    start = job.start_time or job.create_time
    if start is None:
        return None
    until = (job.end_time + AFTER_END) if job.end_time else now
    return max(start - BEFORE_START, until - LONGEST_WINDOW), until


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
    `entries`) when the diagnosis needs them; True when any was new."""
    job = subject.job
    principal = principal_to_ask_about(diagnosis, kb)
    window = audit_window(job, now) if job is not None else None
    if principal is None or window is None or job is None or not job.project:
        return False
    fetched, unavailable = lookup.refused_calls(job.project, principal, *window, deadline=deadline)
    subject.unavailable.extend(unavailable)
    known = {str(entry.get("insertId")) for entry in entries}
    added = False
    for raw in fetched:
        entry = stored_entry(raw)
        store.add_entry(job_key, entry["insertId"], entry)
        if entry["insertId"] not in known:
            entries.append(entry)
            known.add(entry["insertId"])
            added = True
    return added
