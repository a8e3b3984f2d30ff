"""SqliteStore: the embedded default store, one file on local disk.

One connection guarded by a lock serves all threads; WAL mode and a busy timeout let several processes share
the file. Every read-decide-write runs inside BEGIN IMMEDIATE, so claims are atomic across threads and
processes; the decisions themselves are bot.store.claims'.

The SQL statements are module constants. Rows come back as dicts keyed by column name exactly as the schema
spells it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from bot.errors import StoreUnavailable
from bot.store import MAX_ENTRIES_PER_JOB, MESSAGE_DEDUPE_SECONDS, AlertRecord, ClaimOutcome, JsonDict, claims
from bot.store.claims import PostClaim, RerunClaim

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS alerts (
        job_key TEXT PRIMARY KEY,
        channel TEXT,
        message_ts TEXT,
        posted INTEGER NOT NULL DEFAULT 0,
        diagnosis TEXT,
        fingerprint TEXT,
        job TEXT NOT NULL DEFAULT '{}',
        acknowledged_by TEXT,
        acknowledged_at REAL,
        rerun_state TEXT,
        rerun_by TEXT,
        rerun_job_id TEXT,
        claim_owner TEXT,
        claim_expires REAL,
        post_in_doubt INTEGER NOT NULL DEFAULT 0,
        updated_at REAL NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS alerts_by_message ON alerts (channel, message_ts)",
    """CREATE TABLE IF NOT EXISTS entries (
        seq INTEGER PRIMARY KEY,
        job_key TEXT NOT NULL,
        entry_id TEXT NOT NULL,
        entry TEXT NOT NULL,
        UNIQUE (job_key, entry_id)
    )""",
    "CREATE INDEX IF NOT EXISTS entries_by_job ON entries (job_key, seq)",
    "CREATE TABLE IF NOT EXISTS messages (message_id TEXT PRIMARY KEY, seen_at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS messages_by_time ON messages (seen_at)",
    """CREATE TABLE IF NOT EXISTS actions (
        seq INTEGER PRIMARY KEY,
        job_key TEXT NOT NULL,
        action TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS actions_by_job ON actions (job_key, seq)",
)
_DOUBT_COLUMN = "post_in_doubt"  # added after the first release: older files lack it
_ADD_DOUBT_COLUMN = "ALTER TABLE alerts ADD COLUMN post_in_doubt INTEGER NOT NULL DEFAULT 0"
_ALERT_TABLE_INFO = "PRAGMA table_info(alerts)"
_WAL = "PRAGMA journal_mode = WAL"
_SYNC_NORMAL = "PRAGMA synchronous = NORMAL"
_BEGIN = "BEGIN IMMEDIATE"
_COMMIT = "COMMIT"
_ROLLBACK = "ROLLBACK"

_COUNT_ENTRIES = "SELECT COUNT(*) AS count FROM entries WHERE job_key = ?"
_ADD_ENTRY = (
    "INSERT INTO entries (job_key, entry_id, entry) VALUES (?, ?, ?) ON CONFLICT (job_key, entry_id) DO NOTHING"
)
_ENTRIES = "SELECT entry FROM entries WHERE job_key = ? ORDER BY seq"
_FORGET_MESSAGES = "DELETE FROM messages WHERE seen_at < ?"
_MARK_MESSAGE = "INSERT INTO messages (message_id, seen_at) VALUES (?, ?) ON CONFLICT DO NOTHING"
_POST_CLAIM = "SELECT posted, claim_owner, claim_expires, post_in_doubt FROM alerts WHERE job_key = ?"
_RERUN_STATE = "SELECT rerun_state FROM alerts WHERE job_key = ?"
_ALERT = "SELECT * FROM alerts WHERE job_key = ?"
_ALERT_BY_MESSAGE = "SELECT * FROM alerts WHERE channel = ? AND message_ts = ? LIMIT 1"
_ADD_ACTION = "INSERT INTO actions (job_key, action) VALUES (?, ?)"
_HISTORY = "SELECT action FROM actions WHERE job_key = ? ORDER BY seq"


def _dict_row(cursor: sqlite3.Cursor, values: tuple[Any, ...]) -> dict[str, Any]:
    """A row as {column name: value}, keyed exactly as the statement names its columns."""
    return {column[0]: values[index] for index, column in enumerate(cursor.description)}


# Columns are named as keyword arguments (SQLite would take any spelling of a name that differs in case only).
def _post_fields(claim: PostClaim) -> dict[str, Any]:
    return dict(
        posted=claim.posted, claim_owner=claim.owner, claim_expires=claim.expires, post_in_doubt=claim.in_doubt
    )


def _rerun_fields(claim: RerunClaim) -> dict[str, Any]:
    return dict(rerun_state=claim.state, rerun_by=claim.by)


class SqliteStore:
    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = 5.0,
        max_entries: int = MAX_ENTRIES_PER_JOB,
    ) -> None:
        self._clock = clock
        self._max_entries = max_entries
        self._lock = threading.RLock()
        file = self._path = Path(path)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                file, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.OperationalError) as exc:
            raise StoreUnavailable(f"sqlite: cannot open {file}: {exc}") from exc
        self._conn.row_factory = _dict_row
        with self._guard():  # connect's timeout is SQLite's busy timeout: how long a statement waits for a lock
            self._conn.execute(_WAL)
            self._conn.execute(_SYNC_NORMAL)
        with self._write() as db:
            for statement in _SCHEMA:
                db.execute(statement)
            columns = {row["name"] for row in db.execute(_ALERT_TABLE_INFO)}
            if _DOUBT_COLUMN not in columns:  # a database made before the column existed
                db.execute(_ADD_DOUBT_COLUMN)

    @property
    def path(self) -> Path:
        return self._path

    # ------------------------------------------------------------------------------------------ plumbing

    @contextmanager
    def _guard(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.OperationalError as exc:
                raise StoreUnavailable(f"sqlite: {exc}") from exc

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction that holds the database's write lock from its start."""
        with self._guard() as db:
            db.execute(_BEGIN)
            try:
                yield db
                db.execute(_COMMIT)
            except BaseException:
                if db.in_transaction:
                    with suppress(sqlite3.Error):
                        db.execute(_ROLLBACK)
                raise

    def _upsert(self, db: sqlite3.Connection, job_key: str, fields: dict[str, Any]) -> None:
        values = dict(fields, updated_at=self._clock())
        names = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        updates = ", ".join(f"{name} = excluded.{name}" for name in values)
        db.execute(
            f"INSERT INTO alerts (job_key, {names}) VALUES (?, {marks}) "
            f"ON CONFLICT (job_key) DO UPDATE SET {updates}",
            (job_key, *values.values()),
        )

    @staticmethod
    def _post_claim(db: sqlite3.Connection, job_key: str) -> PostClaim:
        row = db.execute(_POST_CLAIM, (job_key,)).fetchone()
        if row is None:
            return PostClaim()
        return PostClaim(
            posted=bool(row["posted"]),
            owner=row["claim_owner"],
            expires=row["claim_expires"],
            in_doubt=bool(row["post_in_doubt"]),
        )

    @staticmethod
    def _rerun_state(db: sqlite3.Connection, job_key: str) -> str | None:
        row = db.execute(_RERUN_STATE, (job_key,)).fetchone()
        return None if row is None else row["rerun_state"]

    @staticmethod
    def _record(row: dict[str, Any] | None) -> AlertRecord | None:
        if row is None:
            return None
        return AlertRecord(
            job_key=row["job_key"],
            channel=row["channel"],
            message_ts=row["message_ts"],
            posted=bool(row["posted"]),
            diagnosis=json.loads(row["diagnosis"]) if row["diagnosis"] is not None else None,
            fingerprint=row["fingerprint"],
            job=json.loads(row["job"]),
            acknowledged_by=row["acknowledged_by"],
            acknowledged_at=row["acknowledged_at"],
            rerun_state=row["rerun_state"],
            rerun_by=row["rerun_by"],
            rerun_job_id=row["rerun_job_id"],
            post_in_doubt=bool(row["post_in_doubt"]),
            updated_at=row["updated_at"],
        )

    # ------------------------------------------------------------------------------------------ entries

    def add_entry(self, job_key: str, entry_id: str, entry: JsonDict) -> bool:
        text = json.dumps(entry)
        with self._write() as db:
            count = db.execute(_COUNT_ENTRIES, (job_key,)).fetchone()["count"]
            if count >= self._max_entries:
                return False
            cursor = db.execute(_ADD_ENTRY, (job_key, entry_id, text))
            return cursor.rowcount == 1

    def entries(self, job_key: str) -> list[JsonDict]:
        with self._guard() as db:
            rows = db.execute(_ENTRIES, (job_key,)).fetchall()
        return [json.loads(row["entry"]) for row in rows]

    def count_entries(self, job_key: str) -> int:
        with self._guard() as db:
            count = db.execute(_COUNT_ENTRIES, (job_key,)).fetchone()["count"]
        return int(count)

    def mark_message(self, message_id: str) -> bool:
        now = self._clock()
        with self._write() as db:
            db.execute(_FORGET_MESSAGES, (now - MESSAGE_DEDUPE_SECONDS,))
            cursor = db.execute(_MARK_MESSAGE, (message_id, now))
            return cursor.rowcount == 1

    # ------------------------------------------------------------------------------------------ posting

    def claim_post(self, job_key: str, *, owner: str, lease_seconds: float) -> ClaimOutcome:
        with self._write() as db:
            current = self._post_claim(db, job_key)
            outcome, claim = claims.claim_post(current, owner=owner, now=self._clock(), lease_seconds=lease_seconds)
            if claim is not None:
                self._upsert(db, job_key, _post_fields(claim))
            return outcome

    def release_post(self, job_key: str, *, owner: str, in_doubt: bool = False) -> None:
        with self._write() as db:
            claim = claims.release_post(self._post_claim(db, job_key), owner=owner, in_doubt=in_doubt)
            if claim is not None:
                self._upsert(db, job_key, _post_fields(claim))

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
        with self._write() as db:
            claim = claims.record_post(self._post_claim(db, job_key))
            if claim is None:
                return  # the first recorded message stays the job's message
            message = dict(
                channel=channel,
                message_ts=message_ts,
                diagnosis=json.dumps(diagnosis),
                fingerprint=fingerprint,
                job=json.dumps(job),
            )
            self._upsert(db, job_key, {**message, **_post_fields(claim)})

    def update_post(
        self, job_key: str, *, diagnosis: JsonDict, fingerprint: str, job: JsonDict | None = None
    ) -> None:
        fields: dict[str, Any] = dict(diagnosis=json.dumps(diagnosis), fingerprint=fingerprint)
        if job is not None:
            fields.update(job=json.dumps(job))
        with self._write() as db:
            self._upsert(db, job_key, fields)

    def get_alert(self, job_key: str) -> AlertRecord | None:
        with self._guard() as db:
            row = db.execute(_ALERT, (job_key,)).fetchone()
        return self._record(row)

    def find_by_message(self, channel: str, message_ts: str) -> AlertRecord | None:
        with self._guard() as db:
            row = db.execute(_ALERT_BY_MESSAGE, (channel, message_ts)).fetchone()
        return self._record(row)

    # ------------------------------------------------------------------------------------------ actions

    def set_acknowledged(self, job_key: str, *, user: str | None, at: float) -> None:
        with self._write() as db:
            self._upsert(db, job_key, dict(acknowledged_by=user, acknowledged_at=at if user is not None else None))

    def claim_rerun(self, job_key: str, *, user: str) -> bool:
        with self._write() as db:
            claim = claims.claim_rerun(self._rerun_state(db, job_key), user=user)
            if claim is None:
                return False
            self._upsert(db, job_key, _rerun_fields(claim))
            return True

    def finish_rerun(self, job_key: str, *, new_job_id: str) -> None:
        with self._write() as db:
            self._upsert(db, job_key, dict(rerun_state=claims.RERUN_DONE, rerun_job_id=new_job_id))

    def release_rerun(self, job_key: str) -> None:
        with self._write() as db:
            claim = claims.release_rerun(self._rerun_state(db, job_key))
            if claim is not None:
                self._upsert(db, job_key, _rerun_fields(claim))

    def record_action(self, job_key: str, action: JsonDict) -> None:
        with self._write() as db:
            db.execute(_ADD_ACTION, (job_key, json.dumps(action)))

    def history(self, job_key: str) -> list[JsonDict]:
        with self._guard() as db:
            rows = db.execute(_HISTORY, (job_key,)).fetchall()
        return [json.loads(row["action"]) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
