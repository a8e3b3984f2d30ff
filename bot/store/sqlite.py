"""SqliteStore: the embedded default store, one file on local disk.

One connection guarded by a lock serves all threads; WAL mode and a busy timeout let several processes share
the file. Every read-decide-write runs inside BEGIN IMMEDIATE, so claims are atomic across threads and
processes.
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
from bot.store import MAX_ENTRIES_PER_JOB, MESSAGE_DEDUPE_SECONDS, AlertRecord, ClaimOutcome, JsonDict

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
        self._conn.row_factory = sqlite3.Row
        with self._guard():
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
        with self._write() as db:
            for statement in _SCHEMA:
                db.execute(statement)
            columns = {row["name"] for row in db.execute("PRAGMA table_info(alerts)")}
            if "post_in_doubt" not in columns:  # a database made before the column existed
                db.execute("ALTER TABLE alerts ADD COLUMN post_in_doubt INTEGER NOT NULL DEFAULT 0")

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
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    with suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                raise

    def _upsert(self, db: sqlite3.Connection, job_key: str, fields: dict[str, Any]) -> None:
        values = {**fields, "updated_at": self._clock()}
        names = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        updates = ", ".join(f"{name} = excluded.{name}" for name in values)
        db.execute(
            f"INSERT INTO alerts (job_key, {names}) VALUES (?, {marks}) "
            f"ON CONFLICT (job_key) DO UPDATE SET {updates}",
            (job_key, *values.values()),
        )

    @staticmethod
    def _record(row: sqlite3.Row | None) -> AlertRecord | None:
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
            (count,) = db.execute("SELECT COUNT(*) FROM entries WHERE job_key = ?", (job_key,)).fetchone()
            if count >= self._max_entries:
                return False
            cursor = db.execute(
                "INSERT INTO entries (job_key, entry_id, entry) VALUES (?, ?, ?) "
                "ON CONFLICT (job_key, entry_id) DO NOTHING",
                (job_key, entry_id, text),
            )
            return cursor.rowcount == 1

    def entries(self, job_key: str) -> list[JsonDict]:
        with self._guard() as db:
            rows = db.execute(
                "SELECT entry FROM entries WHERE job_key = ? ORDER BY seq", (job_key,)
            ).fetchall()
        return [json.loads(row["entry"]) for row in rows]

    def count_entries(self, job_key: str) -> int:
        with self._guard() as db:
            (count,) = db.execute("SELECT COUNT(*) FROM entries WHERE job_key = ?", (job_key,)).fetchone()
        return int(count)

    def mark_message(self, message_id: str) -> bool:
        now = self._clock()
        with self._write() as db:
            db.execute("DELETE FROM messages WHERE seen_at < ?", (now - MESSAGE_DEDUPE_SECONDS,))
            cursor = db.execute(
                "INSERT INTO messages (message_id, seen_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (message_id, now),
            )
            return cursor.rowcount == 1

    # ------------------------------------------------------------------------------------------ posting

    def claim_post(self, job_key: str, *, owner: str, lease_seconds: float) -> ClaimOutcome:
        with self._write() as db:
            now = self._clock()
            row = db.execute(
                "SELECT posted, claim_owner, claim_expires, post_in_doubt FROM alerts WHERE job_key = ?", (job_key,)
            ).fetchone()
            if row is not None and row["posted"]:
                return ClaimOutcome.POSTED
            rival = row is not None and row["claim_owner"] not in (None, owner)
            if rival and (row["claim_expires"] or 0.0) > now:
                return ClaimOutcome.BUSY
            # Taking over an expired claim: its owner never settled it, so its message may be in Slack.
            doubt = bool(row is not None and (row["post_in_doubt"] or rival))
            fields = {"claim_owner": owner, "claim_expires": now + lease_seconds, "post_in_doubt": int(doubt)}
            self._upsert(db, job_key, fields)
            return ClaimOutcome.WON

    def release_post(self, job_key: str, *, owner: str, in_doubt: bool = False) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE alerts SET claim_owner = NULL, claim_expires = NULL, "
                "post_in_doubt = MAX(post_in_doubt, ?), updated_at = ? "
                "WHERE job_key = ? AND claim_owner = ? AND posted = 0",
                (int(in_doubt), self._clock(), job_key, owner),
            )

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
            row = db.execute("SELECT posted FROM alerts WHERE job_key = ?", (job_key,)).fetchone()
            if row is not None and row["posted"]:
                return  # the first recorded message stays the job's message
            fields = {
                "posted": 1,
                "channel": channel,
                "message_ts": message_ts,
                "diagnosis": json.dumps(diagnosis),
                "fingerprint": fingerprint,
                "job": json.dumps(job),
                "claim_owner": None,
                "claim_expires": None,
                "post_in_doubt": 0,
            }
            self._upsert(db, job_key, fields)

    def update_post(
        self, job_key: str, *, diagnosis: JsonDict, fingerprint: str, job: JsonDict | None = None
    ) -> None:
        fields: dict[str, Any] = {"diagnosis": json.dumps(diagnosis), "fingerprint": fingerprint}
        if job is not None:
            fields["job"] = json.dumps(job)
        with self._write() as db:
            self._upsert(db, job_key, fields)

    def get_alert(self, job_key: str) -> AlertRecord | None:
        with self._guard() as db:
            row = db.execute("SELECT * FROM alerts WHERE job_key = ?", (job_key,)).fetchone()
        return self._record(row)

    def find_by_message(self, channel: str, message_ts: str) -> AlertRecord | None:
        with self._guard() as db:
            row = db.execute(
                "SELECT * FROM alerts WHERE channel = ? AND message_ts = ? LIMIT 1", (channel, message_ts)
            ).fetchone()
        return self._record(row)

    # ------------------------------------------------------------------------------------------ actions

    def set_acknowledged(self, job_key: str, *, user: str | None, at: float) -> None:
        with self._write() as db:
            self._upsert(
                db, job_key, {"acknowledged_by": user, "acknowledged_at": at if user is not None else None}
            )

    def claim_rerun(self, job_key: str, *, user: str) -> bool:
        with self._write() as db:
            row = db.execute("SELECT rerun_state FROM alerts WHERE job_key = ?", (job_key,)).fetchone()
            if row is not None and row["rerun_state"] is not None:
                return False
            self._upsert(db, job_key, {"rerun_state": "claimed", "rerun_by": user, "rerun_job_id": None})
            return True

    def finish_rerun(self, job_key: str, *, new_job_id: str) -> None:
        with self._write() as db:
            self._upsert(db, job_key, {"rerun_state": "done", "rerun_job_id": new_job_id})

    def release_rerun(self, job_key: str) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE alerts SET rerun_state = NULL, rerun_by = NULL, updated_at = ? "
                "WHERE job_key = ? AND rerun_state = 'claimed'",
                (self._clock(), job_key),
            )

    def record_action(self, job_key: str, action: JsonDict) -> None:
        with self._write() as db:
            db.execute("INSERT INTO actions (job_key, action) VALUES (?, ?)", (job_key, json.dumps(action)))

    def history(self, job_key: str) -> list[JsonDict]:
        with self._guard() as db:
            rows = db.execute(
                "SELECT action FROM actions WHERE job_key = ? ORDER BY seq", (job_key,)
            ).fetchall()
        return [json.loads(row["action"]) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
