"""The state store: what trainmedic remembers between Pub/Sub pushes and Slack clicks.

One `Store` holds, per failed job (key "PROJECT/JOB_ID"):
  - the LogEntries seen for it (deduplicated by entry id, at most MAX_ENTRIES_PER_JOB, oldest kept);
  - the alert: the claim to post, the posted Slack message, its diagnosis, acknowledgement and rerun state;
  - an audit history of actions taken on it.
It also deduplicates Pub/Sub deliveries by messageId.

A post claim that ends without a recorded message and without a clean release leaves the alert *in doubt*
(`AlertRecord.post_in_doubt`): its poster died, was cut off, or timed out waiting for Slack, so Slack may hold
its message. That happens when an expired claim of another owner is taken over, or when the owner releases
with `in_doubt=True`. Only `record_post` clears it: whoever posts next must first look for that message.

Implementations: `SqliteStore` (bot/store/sqlite.py, the embedded default) and `FirestoreStore`
(bot/store/firestore.py); both apply the claim rules of bot/store/claims.py, each in its own atomic step.
Every method raises `StoreUnavailable` for transient backend failures, and `StoreRejected` when the backend
refuses the data for good.
"""

from __future__ import annotations

import enum
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from bot.errors import ConfigError

JsonDict = dict[str, Any]

MAX_ENTRIES_PER_JOB = 2000
MESSAGE_DEDUPE_SECONDS = 7 * 24 * 3600.0  # Pub/Sub's default retention; older message ids may be forgotten


class AlertRecord(BaseModel):
    """The stored state of one job's alert."""

    model_config = ConfigDict(frozen=True)

    job_key: str
    channel: str | None = None
    message_ts: str | None = None
    posted: bool = False
    diagnosis: JsonDict | None = None
    fingerprint: str | None = None
    job: JsonDict = Field(default_factory=dict)
    acknowledged_by: str | None = None
    acknowledged_at: float | None = None
    rerun_state: str | None = None  # None, "claimed" or "done"
    rerun_by: str | None = None
    rerun_job_id: str | None = None
    post_in_doubt: bool = False  # an earlier claim ended unsettled: its message may exist in Slack
    updated_at: float = 0.0


class ClaimOutcome(enum.Enum):
    WON = "won"  # the caller may post now, and must record_post or release_post
    POSTED = "posted"  # a message is already recorded for the job
    BUSY = "busy"  # another owner holds an unexpired claim


class Store(Protocol):
    def add_entry(self, job_key: str, entry_id: str, entry: JsonDict) -> bool:
        """Store one LogEntry; False if entry_id is already stored or the job holds the maximum."""
        ...

    def entries(self, job_key: str) -> list[JsonDict]:
        """The job's entries in insertion order."""
        ...

    def count_entries(self, job_key: str) -> int:
        """How many entries the job has stored (without reading them)."""
        ...

    def mark_message(self, message_id: str) -> bool:
        """True the first time a Pub/Sub messageId is seen, False afterwards (atomic)."""
        ...

    def claim_post(self, job_key: str, *, owner: str, lease_seconds: float) -> ClaimOutcome:
        """Claim the right to post the job's one message (an expired claim may be taken over: the alert is then
        in doubt, since its owner never settled it)."""
        ...

    def release_post(self, job_key: str, *, owner: str, in_doubt: bool = False) -> None:
        """Drop our unposted claim so that a redelivery can retry; `in_doubt` says Slack may hold our message
        (a post whose answer never came). A clean release keeps an earlier doubt."""
        ...

    def record_post(
        self,
        job_key: str,
        *,
        owner: str,
        channel: str,
        message_ts: str,
        diagnosis: JsonDict,
        fingerprint: str,
        job: JsonDict,
    ) -> None:
        """Record the posted message; if one is already recorded, the first one is kept."""
        ...

    def update_post(
        self, job_key: str, *, diagnosis: JsonDict, fingerprint: str, job: JsonDict | None = None
    ) -> None: ...

    def get_alert(self, job_key: str) -> AlertRecord | None: ...

    def find_by_message(self, channel: str, message_ts: str) -> AlertRecord | None: ...

    def set_acknowledged(self, job_key: str, *, user: str | None, at: float) -> None:
        """Mark the alert acknowledged by user at `at`; user None undoes it."""
        ...

    def claim_rerun(self, job_key: str, *, user: str) -> bool:
        """True for exactly one caller; the claim holds until release_rerun, or for good once finished."""
        ...

    def finish_rerun(self, job_key: str, *, new_job_id: str) -> None: ...

    def release_rerun(self, job_key: str) -> None:
        """Drop an unfinished rerun claim (a finished rerun stays)."""
        ...

    def record_action(self, job_key: str, action: JsonDict) -> None:
        """Append an audit record such as {"who", "what", "when", "result", ...}."""
        ...

    def history(self, job_key: str) -> list[JsonDict]:
        """The job's audit records, oldest first."""
        ...

    def close(self) -> None: ...


def open_store(url: str, *, max_entries: int = MAX_ENTRIES_PER_JOB) -> Store:
    """Open the store a TRAINMEDIC_STORE URL names: "sqlite:///PATH", "firestore" or "firestore:PROJECT".

    `max_entries`: the most entries kept per job (the service keeps fewer: bot.alerting.alerts.MAX_JOB_ENTRIES).
    """
    if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        from bot.store.sqlite import SqliteStore

        return SqliteStore(url[len("sqlite:///") :], max_entries=max_entries)
    if url == "firestore" or url.startswith("firestore:"):
        from bot.store.firestore import FirestoreStore

        return FirestoreStore(project=url.partition(":")[2] or None, max_entries=max_entries)
    raise ConfigError(f"TRAINMEDIC_STORE: {url!r} is not sqlite:///PATH, firestore or firestore:PROJECT")
