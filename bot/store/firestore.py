"""FirestoreStore: the store for Cloud Run, where instances come and go.

Layout (collection_prefix "trainmedic"):
  trainmedic_jobs/{job key}                      the alert (AlertRecord fields, JSON as text) + the post claim
  trainmedic_jobs/{job key}/entries/{entry id}   {entry_id, seq, entry_json}
  trainmedic_jobs/{job key}/actions/{uuid}       {seq, action_json}
  trainmedic_messages/{message id}               {seen_at, expire_at}   (give expire_at a TTL policy)
Document ids are percent-encoded ("/", "." and "_" escaped), so any key is a safe id; a key whose encoding
would be long (Firestore allows 1,500 bytes) is hashed instead. JSON payloads are stored as text: exact
round trips, and no limits on map keys or nested arrays. Data Firestore refuses for good (INVALID_ARGUMENT:
a document over 1 MiB, say) raises StoreRejected, not StoreUnavailable: retrying cannot help.

Atomic steps use preconditions, not transactions: `create()` (AlreadyExists: someone was first) and `update()`
guarded by the update_time of the read it decided on (a compare-and-set; a conflict means read and decide
again; the decisions themselves are bot.store.claims'). A token written with each change tells our own retried
write apart from a rival's. Each public call has a deadline (4 s by default); transient errors are retried with
backoff until then, then StoreUnavailable. After an outage at the connection level, gRPC's reconnect backoff (up
to 2 minutes, shared by all channels to the same address) decides how soon calls succeed again; a new client
does not skip it.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from bot.errors import ConfigError, StoreRejected, StoreUnavailable
from bot.store import MAX_ENTRIES_PER_JOB, MESSAGE_DEDUPE_SECONDS, AlertRecord, ClaimOutcome, JsonDict, claims
from bot.store.firestore_documents import (
    BLANK_ALERT,
    alert_record,
    doc_id,
    post_claim,
    post_fields,
    rerun_fields,
    rerun_state,
)

if TYPE_CHECKING:
    from google.cloud.firestore import Client, CollectionReference, DocumentReference, DocumentSnapshot, Query

T = TypeVar("T")
Decision = tuple[T, dict[str, Any] | None]

_TOKEN = "write_token"
_CAS_ROUNDS = 20
def _never(exc: BaseException) -> bool:
    return False


class FirestoreStore:
    def __init__(
        self,
        client: Client | None = None,
        project: str | None = None,
        collection_prefix: str = "trainmedic",
        *,
        deadline: float = 4.0,
        clock: Callable[[], float] = time.time,
        max_entries: int = MAX_ENTRIES_PER_JOB,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from google.api_core import exceptions as api
        from google.api_core.retry import Retry
        from google.auth import exceptions as auth
        from google.cloud import firestore
        from google.cloud.firestore_v1.base_query import FieldFilter

        self._owns_client = client is None
        if client is None:
            try:
                client = firestore.Client(project=project)
            except auth.DefaultCredentialsError as exc:
                raise ConfigError(f"firestore: no Google credentials found: {exc}") from None
            except OSError as exc:  # the project could not be determined
                raise ConfigError(
                    f"firestore: {exc} (use firestore:PROJECT or GOOGLE_CLOUD_PROJECT)"
                ) from None
        self._client = client
        self._prefix = collection_prefix
        self._field_filter = FieldFilter
        self._deadline_seconds = deadline
        self._clock = clock
        self._sleep = sleep  # waits between retries
        self._max_entries = max_entries
        # We retry ourselves, within our deadline: unary calls get retry=None (no retrying by the library); a query's
        # stream needs a Retry object, since the library asks it whether to resume after an error mid-stream.
        self._no_retry = Retry(predicate=_never)
        self._transient: tuple[type[BaseException], ...] = (
            api.ServiceUnavailable,
            api.DeadlineExceeded,
            api.InternalServerError,
            api.BadGateway,
            api.GatewayTimeout,
            api.Unknown,
            api.Aborted,
            api.ResourceExhausted,
            api.RetryError,
            auth.TransportError,
            ConnectionError,
            TimeoutError,
        )
        self._already_exists = api.AlreadyExists
        self._refused: tuple[type[BaseException], ...] = (api.InvalidArgument,)
        self._conflict: tuple[type[BaseException], ...] = (
            api.AlreadyExists,
            api.FailedPrecondition,
            api.NotFound,
        )
        self._project = str(self._client.project)
        self._seq_lock = threading.Lock()
        self._last_seq = 0

    @property
    def project(self) -> str:
        return self._project

    # ------------------------------------------------------------------------------------------ plumbing

    def _deadline(self) -> float:
        return time.monotonic() + self._deadline_seconds

    def _run(self, op: Callable[[float], T], deadline: float) -> T:
        """Call op(timeout) until it succeeds, retrying transient errors with backoff until the deadline."""
        delay = 0.05
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StoreUnavailable("firestore: no answer within the operation deadline")
            try:
                return op(remaining)
            except self._refused as exc:
                raise StoreRejected(f"firestore refused it: {type(exc).__name__}: {str(exc)[:300]}") from exc
            except self._transient as exc:
                if deadline - time.monotonic() <= delay:
                    raise StoreUnavailable(f"firestore: {type(exc).__name__}: {str(exc)[:300]}") from exc
                self._sleep(delay)
                delay = min(delay * 2, 1.0)

    def _seq(self) -> int:
        """Increasing within this process; wall-clock order across processes."""
        with self._seq_lock:
            self._last_seq = max(time.time_ns(), self._last_seq + 1)
            return self._last_seq

    def _collection(self, name: str) -> CollectionReference:
        return self._client.collection(f"{self._prefix}_{name}")

    def _job(self, job_key: str) -> DocumentReference:
        return self._collection("jobs").document(doc_id(job_key))

    def _get(self, ref: DocumentReference, deadline: float) -> DocumentSnapshot:
        return self._run(lambda timeout: ref.get(retry=None, timeout=timeout), deadline)

    def _query(self, query: Query, deadline: float) -> list[dict[str, Any]]:
        def op(timeout: float) -> list[dict[str, Any]]:
            return [snap.to_dict() or {} for snap in query.stream(retry=self._no_retry, timeout=timeout)]

        return self._run(op, deadline)

    def _create_once(self, ref: DocumentReference, body: dict[str, Any], deadline: float) -> bool:
        """Create ref; False if it already existed (and not because an earlier attempt of ours succeeded)."""
        token = uuid.uuid4().hex
        data = {**body, _TOKEN: token}
        attempts = 0

        def op(timeout: float) -> bool | None:
            nonlocal attempts
            attempts += 1
            try:
                ref.create(data, retry=None, timeout=timeout)
                return True
            except self._already_exists:
                # On a first attempt it was someone else's; after a failed attempt it may be ours: look.
                return False if attempts == 1 else None

        created = self._run(op, deadline)
        if created is not None:
            return created
        return (self._get(ref, deadline).to_dict() or {}).get(_TOKEN) == token

    def _write_if_unchanged(
        self, ref: DocumentReference, snap: DocumentSnapshot, body: dict[str, Any], deadline: float
    ) -> None:
        if snap.exists:
            option = self._client.write_option(last_update_time=snap.update_time)
            self._run(
                lambda timeout: ref.update(body, option=option, retry=None, timeout=timeout),
                deadline,
            )
        else:
            full = {**BLANK_ALERT, **body}
            self._run(lambda timeout: ref.create(full, retry=None, timeout=timeout), deadline)

    def _cas(self, job_key: str, decide: Callable[[dict[str, Any] | None], Decision[T]]) -> T:
        """Read the job's document, decide, and write the decision only if nobody wrote in between."""
        deadline = self._deadline()
        ref = self._job(job_key)
        token = uuid.uuid4().hex
        pending: list[T] = []  # results of writes that may have landed even though the call failed
        for _ in range(_CAS_ROUNDS):
            snap = self._get(ref, deadline)
            data = snap.to_dict()  # None for a document that does not exist
            if pending and data is not None and data.get(_TOKEN) == token:
                return pending[-1]
            result, changes = decide(data)
            if changes is None:
                return result
            body = {**changes, "job_key": job_key, "updated_at": self._clock(), _TOKEN: token}
            pending.append(result)
            try:
                self._write_if_unchanged(ref, snap, body, deadline)
                return result
            except self._conflict:
                continue
        raise StoreUnavailable(f"firestore: too much contention on {job_key}")

    def _merge(self, job_key: str, fields: dict[str, Any]) -> None:
        ref = self._job(job_key)
        body = {**fields, "job_key": job_key, "updated_at": self._clock()}
        self._run(
            lambda timeout: ref.set(body, merge=True, retry=None, timeout=timeout), self._deadline()
        )

    # ------------------------------------------------------------------------------------------ entries

    def add_entry(self, job_key: str, entry_id: str, entry: JsonDict) -> bool:
        deadline = self._deadline()
        entries = self._job(job_key).collection("entries")

        def count(timeout: float) -> int:
            return int(entries.count().get(retry=None, timeout=timeout)[0][0].value)

        # The cap is checked before the create, so racing writers may overshoot it a little;
        # entries() never returns more than the cap, oldest first.
        if self._run(count, deadline) >= self._max_entries:
            return False
        body = {"entry_id": entry_id, "seq": self._seq(), "entry_json": json.dumps(entry)}
        return self._create_once(entries.document(doc_id(entry_id)), body, deadline)

    def entries(self, job_key: str) -> list[JsonDict]:
        query = self._job(job_key).collection("entries").order_by("seq").limit(self._max_entries)
        return [json.loads(doc["entry_json"]) for doc in self._query(query, self._deadline())]

    def count_entries(self, job_key: str) -> int:
        entries = self._job(job_key).collection("entries")

        def count(timeout: float) -> int:
            return int(entries.count().get(retry=None, timeout=timeout)[0][0].value)

        return min(self._run(count, self._deadline()), self._max_entries)

    def mark_message(self, message_id: str) -> bool:
        now = self._clock()
        body = {"seen_at": now, "expire_at": datetime.fromtimestamp(now + MESSAGE_DEDUPE_SECONDS, tz=UTC)}
        return self._create_once(
            self._collection("messages").document(doc_id(message_id)), body, self._deadline()
        )

    # ------------------------------------------------------------------------------------------ posting

    def claim_post(self, job_key: str, *, owner: str, lease_seconds: float) -> ClaimOutcome:
        def decide(data: dict[str, Any] | None) -> Decision[ClaimOutcome]:
            outcome, claim = claims.claim_post(
                post_claim(data), owner=owner, now=self._clock(), lease_seconds=lease_seconds
            )
            return outcome, None if claim is None else post_fields(claim)

        return self._cas(job_key, decide)

    def release_post(self, job_key: str, *, owner: str, in_doubt: bool = False) -> None:
        def decide(data: dict[str, Any] | None) -> Decision[None]:
            claim = claims.release_post(post_claim(data), owner=owner, in_doubt=in_doubt)
            return None, None if claim is None else post_fields(claim)

        self._cas(job_key, decide)

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
        message = {
            "channel": channel,
            "message_ts": message_ts,
            "diagnosis_json": json.dumps(diagnosis),
            "fingerprint": fingerprint,
            "job_json": json.dumps(job),
        }

        def decide(data: dict[str, Any] | None) -> Decision[None]:
            claim = claims.record_post(post_claim(data))
            if claim is None:
                return None, None  # the first recorded message stays the job's message
            return None, {**message, **post_fields(claim)}

        self._cas(job_key, decide)

    def update_post(
        self, job_key: str, *, diagnosis: JsonDict, fingerprint: str, job: JsonDict | None = None
    ) -> None:
        fields: dict[str, Any] = {"diagnosis_json": json.dumps(diagnosis), "fingerprint": fingerprint}
        if job is not None:
            fields["job_json"] = json.dumps(job)
        self._merge(job_key, fields)

    def get_alert(self, job_key: str) -> AlertRecord | None:
        snap = self._get(self._job(job_key), self._deadline())
        return alert_record(snap.to_dict())  # None for a document that does not exist

    def find_by_message(self, channel: str, message_ts: str) -> AlertRecord | None:
        query = (
            self._collection("jobs")
            .where(filter=self._field_filter("channel", "==", channel))
            .where(filter=self._field_filter("message_ts", "==", message_ts))
            .limit(1)
        )
        docs = self._query(query, self._deadline())
        return alert_record(docs[0]) if docs else None

    # ------------------------------------------------------------------------------------------ actions

    def set_acknowledged(self, job_key: str, *, user: str | None, at: float) -> None:
        self._merge(job_key, {"acknowledged_by": user, "acknowledged_at": at if user is not None else None})

    def claim_rerun(self, job_key: str, *, user: str) -> bool:
        def decide(data: dict[str, Any] | None) -> Decision[bool]:
            claim = claims.claim_rerun(rerun_state(data), user=user)
            return (False, None) if claim is None else (True, rerun_fields(claim))

        return self._cas(job_key, decide)

    def finish_rerun(self, job_key: str, *, new_job_id: str) -> None:
        self._merge(job_key, {"rerun_state": claims.RERUN_DONE, "rerun_job_id": new_job_id})

    def release_rerun(self, job_key: str) -> None:
        def decide(data: dict[str, Any] | None) -> Decision[None]:
            claim = claims.release_rerun(rerun_state(data))
            return None, None if claim is None else rerun_fields(claim)

        self._cas(job_key, decide)

    def record_action(self, job_key: str, action: JsonDict) -> None:
        ref = self._job(job_key).collection("actions").document()  # a random id
        self._create_once(ref, {"seq": self._seq(), "action_json": json.dumps(action)}, self._deadline())

    def history(self, job_key: str) -> list[JsonDict]:
        query = self._job(job_key).collection("actions").order_by("seq")
        return [json.loads(doc["action_json"]) for doc in self._query(query, self._deadline())]

    def close(self) -> None:
        if self._owns_client:
            self._client.close()
