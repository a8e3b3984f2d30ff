"""Which refused calls would complete a permission diagnosis, and when to look for them (pure: no I/O).

A refusal that names no permission, or whose grant still lacks the resource's name, is completed by the audit
logs' record of the calls IAM refused to the job's identity (bot/alerting/refused_calls.py reads them for an alert,
bot/chat/diagnose.py for /diagnose): these say whose calls, and over which stretch of time.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from bot.diagnosis.knowledge import KnowledgeBase
from bot.models import Diagnosis, JobInfo

_GRANT = re.compile(r"\badd-iam-policy-binding\b")
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
    if "permission" in details and grants and not any(kb.unfilled.search(grant) for grant in grants):
        return None
    return details.get("service_account") or None


def audit_window(job: JobInfo, now: datetime) -> tuple[datetime, datetime] | None:
    """From a minute before the job started to five minutes after it ended (or now), at most a week long."""
    start = job.start_time or job.create_time
    if start is None:
        return None
    until = (job.end_time + AFTER_END) if job.end_time else now
    return max(start - BEFORE_START, until - LONGEST_WINDOW), until
