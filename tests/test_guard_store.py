"""The Store contract at its edges (bot/store/__init__.py), on SqliteStore and on FirestoreStore (Firestore emulator):
lease boundaries, caps, the in-doubt mark, what each write changes and what it leaves alone."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.errors import StoreUnavailable
from bot.store import MAX_ENTRIES_PER_JOB, MESSAGE_DEDUPE_SECONDS, AlertRecord, ClaimOutcome, Store, open_store
from bot.store.firestore import FirestoreStore
from bot.store.sqlite import SqliteStore

JOB = "acme-ml/1234"
T0 = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "firestore"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Store]]:
    """Opens stores of one kind on one database: make(clock=..., max_entries=...)."""
    opened: list[Store] = []
    if request.param == "firestore":
        project = request.getfixturevalue("firestore_store").project

        def make(**options: Any) -> Store:
            store = FirestoreStore(project=project, **options)
            opened.append(store)
            return store

    else:

        def make(**options: Any) -> Store:
            store = SqliteStore(tmp_path / "state.db", **options)
            opened.append(store)
            return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(backend: Callable[..., Store], clock: Clock) -> Store:
    return backend(clock=clock)


def post(store: Store, key: str = JOB, **changes: Any) -> None:
    fields: dict[str, Any] = {
        "owner": "a",
        "channel": "C1",
        "message_ts": "111.1",
        "diagnosis": {"failure_class": "accelerator_oom"},
        "fingerprint": "fp1",
        "job": {"display_name": "train"},
    }
    fields.update(changes)
    store.record_post(key, **fields)


def alert(store: Store, key: str = JOB) -> AlertRecord:
    record = store.get_alert(key)
    assert record is not None
    return record


# ------------------------------------------------------------------------------------------ claims


def test_a_claim_is_busy_until_its_lease_ends_to_the_second(store: Store, clock: Clock) -> None:
    assert store.claim_post(JOB, owner="a", lease_seconds=30) is ClaimOutcome.WON
    clock.now = T0 + 29.999
    assert store.claim_post(JOB, owner="b", lease_seconds=30) is ClaimOutcome.BUSY
    clock.now = T0 + 30  # expired exactly now
    assert store.claim_post(JOB, owner="b", lease_seconds=30) is ClaimOutcome.WON


def test_the_owner_may_claim_again_and_that_renews_the_lease(store: Store, clock: Clock) -> None:
    assert store.claim_post(JOB, owner="a", lease_seconds=30) is ClaimOutcome.WON
    clock.now = T0 + 20
    assert store.claim_post(JOB, owner="a", lease_seconds=30) is ClaimOutcome.WON
    clock.now = T0 + 45  # past the first lease, within the renewed one
    assert store.claim_post(JOB, owner="b", lease_seconds=30) is ClaimOutcome.BUSY
    assert alert(store).post_in_doubt is False


def test_taking_over_an_expired_claim_marks_the_alert_in_doubt(store: Store, clock: Clock) -> None:
    store.claim_post(JOB, owner="a", lease_seconds=30)
    assert alert(store).post_in_doubt is False
    clock.now = T0 + 31
    assert store.claim_post(JOB, owner="b", lease_seconds=30) is ClaimOutcome.WON
    assert alert(store).post_in_doubt is True  # a's message may be in Slack
    store.release_post(JOB, owner="b")  # a clean release does not clear an earlier doubt
    assert alert(store).post_in_doubt is True
    post(store, owner="c")
    assert alert(store).post_in_doubt is False  # only a recorded message settles it


def test_a_release_in_doubt_is_remembered(store: Store) -> None:
    store.claim_post(JOB, owner="a", lease_seconds=30)
    store.release_post(JOB, owner="a", in_doubt=True)
    record = alert(store)
    assert record.post_in_doubt is True and record.posted is False
    assert store.claim_post(JOB, owner="b", lease_seconds=30) is ClaimOutcome.WON
    assert alert(store).post_in_doubt is True
    other = "acme-ml/2"
    store.claim_post(other, owner="a", lease_seconds=30)
    store.release_post(other, owner="a", in_doubt=False)
    assert alert(store, other).post_in_doubt is False
    store.release_post(other, owner="someone-else", in_doubt=True)  # not their claim: no effect
    assert alert(store, other).post_in_doubt is False


def test_a_posted_job_stays_posted(store: Store, clock: Clock) -> None:
    store.claim_post(JOB, owner="a", lease_seconds=30)
    post(store, owner="a")
    assert store.claim_post(JOB, owner="a", lease_seconds=30) is ClaimOutcome.POSTED
    clock.now += 3600
    assert store.claim_post(JOB, owner="b", lease_seconds=30) is ClaimOutcome.POSTED
    store.release_post(JOB, owner="a", in_doubt=True)
    record = alert(store)
    assert record.posted and record.post_in_doubt is False and record.message_ts == "111.1"


def test_record_post_ends_the_claim(store: Store, clock: Clock) -> None:
    store.claim_post(JOB, owner="a", lease_seconds=300)
    post(store, owner="a")
    clock.now += 1
    record = alert(store)
    assert (record.channel, record.message_ts, record.fingerprint) == ("C1", "111.1", "fp1")
    assert record.updated_at == T0


# ------------------------------------------------------------------------------------------ entries


def test_entries_stop_at_the_cap_and_are_counted(backend: Callable[..., Store]) -> None:
    small = backend(max_entries=3)
    assert [small.add_entry(JOB, f"e{n}", {"n": n}) for n in range(5)] == [True, True, True, False, False]
    assert [e["n"] for e in small.entries(JOB)] == [0, 1, 2]
    assert small.count_entries(JOB) == 3
    assert small.count_entries("acme-ml/none") == 0
    assert small.add_entry("acme-ml/other", "e0", {"n": 0}) is True  # the cap is per job
    assert small.entries("acme-ml/none") == []


def test_entries_round_trip_exactly(store: Store) -> None:
    entry = {"insertId": "x", "jsonPayload": {"message": "naïve ✓", "nested": [1, 2.5, None, True, {"k": []}]}}
    assert store.add_entry(JOB, "x", entry)
    assert store.entries(JOB) == [entry]


def test_open_store_firestore_passes_the_cap_and_the_whole_project_on(firestore_store: FirestoreStore) -> None:
    store = open_store(f"firestore:{firestore_store.project}", max_entries=1)
    try:
        assert [store.add_entry(JOB, f"e{n}", {}) for n in range(2)] == [True, False]
    finally:
        store.close()
    scoped = open_store("firestore:example.com:ml-project")  # a domain-scoped project id has a colon
    try:
        assert scoped.project == "example.com:ml-project"
    finally:
        scoped.close()


def test_open_store_firestore_alone_takes_the_environments_project(
    firestore_store: FirestoreStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", firestore_store.project)
    store = open_store("firestore")
    try:
        assert isinstance(store, FirestoreStore) and store.project == firestore_store.project
    finally:
        store.close()


def test_open_store_passes_the_cap_on(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'capped.db'}", max_entries=1)
    try:
        assert [store.add_entry(JOB, f"e{n}", {}) for n in range(2)] == [True, False]
    finally:
        store.close()
    assert MAX_ENTRIES_PER_JOB == 2000


# ------------------------------------------------------------------------------------------ the alert


def test_update_post_changes_only_what_it_is_given(store: Store, clock: Clock) -> None:
    post(store)
    store.set_acknowledged(JOB, user="U1", at=5.0)
    clock.now = T0 + 10
    store.update_post(JOB, diagnosis={"failure_class": "host_oom"}, fingerprint="fp2")
    record = alert(store)
    assert (record.diagnosis, record.fingerprint, record.job) == (
        {"failure_class": "host_oom"},
        "fp2",
        {"display_name": "train"},
    )
    assert (record.channel, record.message_ts, record.posted, record.acknowledged_by) == ("C1", "111.1", True, "U1")
    assert record.updated_at == T0 + 10


def test_acknowledging_and_undoing_keep_the_rest(store: Store, clock: Clock) -> None:
    post(store)
    clock.now = T0 + 5
    store.set_acknowledged(JOB, user="U1", at=123.5)
    record = alert(store)
    assert (record.acknowledged_by, record.acknowledged_at, record.updated_at) == ("U1", 123.5, T0 + 5)
    store.set_acknowledged(JOB, user=None, at=999.0)
    record = alert(store)
    assert (record.acknowledged_by, record.acknowledged_at) == (None, None)
    assert record.posted and record.fingerprint == "fp1"


def test_rerun_states(store: Store) -> None:
    post(store)
    store.release_rerun(JOB)  # nothing claimed: nothing to release
    assert alert(store).rerun_state is None
    assert store.claim_rerun(JOB, user="U1") is True
    record = alert(store)
    assert (record.rerun_state, record.rerun_by, record.rerun_job_id) == ("claimed", "U1", None)
    assert store.claim_rerun(JOB, user="U1") is False  # not even for the same person
    store.finish_rerun(JOB, new_job_id="projects/p/locations/r/customJobs/9")
    record = alert(store)
    assert (record.rerun_state, record.rerun_by, record.rerun_job_id) == (
        "done",
        "U1",
        "projects/p/locations/r/customJobs/9",
    )
    store.release_rerun(JOB)
    assert alert(store).rerun_state == "done"
    assert alert(store).posted and alert(store).message_ts == "111.1"


def test_a_rerun_claim_on_an_unknown_job_is_a_claim(store: Store) -> None:
    assert store.claim_rerun("acme-ml/77", user="U1") is True
    record = alert(store, "acme-ml/77")
    assert (record.rerun_state, record.posted, record.channel) == ("claimed", False, None)
    store.release_rerun("acme-ml/77")
    assert (alert(store, "acme-ml/77").rerun_state, alert(store, "acme-ml/77").rerun_by) == (None, None)


def test_find_by_message_needs_both_channel_and_ts(store: Store) -> None:
    post(store, channel="C1", message_ts="1.1")
    post(store, "acme-ml/2", channel="C2", message_ts="2.2")
    assert store.find_by_message("C1", "1.1").job_key == JOB
    assert store.find_by_message("C2", "2.2").job_key == "acme-ml/2"
    assert store.find_by_message("C1", "2.2") is None
    assert store.find_by_message("C2", "1.1") is None


def test_a_fresh_alert_has_the_documented_defaults(store: Store) -> None:
    store.claim_post(JOB, owner="a", lease_seconds=30)
    record = alert(store)
    assert record == AlertRecord(job_key=JOB, updated_at=T0)


# ------------------------------------------------------------------------------------------ messages


def test_message_ids_are_remembered(store: Store) -> None:
    assert store.mark_message("m1") is True
    assert store.mark_message("m1") is False
    assert store.mark_message("m2") is True


def test_sqlite_forgets_message_ids_after_the_retention(tmp_path: Path) -> None:
    clock = Clock()
    store = SqliteStore(tmp_path / "state.db", clock=clock)
    try:
        assert store.mark_message("m1") is True
        clock.now = T0 + MESSAGE_DEDUPE_SECONDS
        assert store.mark_message("m1") is False  # exactly at the retention: still known
        clock.now = T0 + MESSAGE_DEDUPE_SECONDS + 1
        assert store.mark_message("m1") is True
        assert store.mark_message("m1") is False
    finally:
        store.close()


# ------------------------------------------------------------------------------------------ sqlite


def test_sqlite_adds_the_in_doubt_column_to_an_older_database(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE alerts (job_key TEXT PRIMARY KEY, channel TEXT, message_ts TEXT, posted INTEGER NOT NULL "
        "DEFAULT 0, diagnosis TEXT, fingerprint TEXT, job TEXT NOT NULL DEFAULT '{}', acknowledged_by TEXT, "
        "acknowledged_at REAL, rerun_state TEXT, rerun_by TEXT, rerun_job_id TEXT, claim_owner TEXT, "
        "claim_expires REAL, updated_at REAL NOT NULL)"
    )
    old.execute("INSERT INTO alerts (job_key, posted, updated_at) VALUES ('acme-ml/1', 0, 1.0)")
    old.commit()
    old.close()
    store = SqliteStore(path)
    try:
        assert store.get_alert("acme-ml/1").post_in_doubt is False
        store.claim_post("acme-ml/1", owner="a", lease_seconds=30)
        store.release_post("acme-ml/1", owner="a", in_doubt=True)
        assert store.get_alert("acme-ml/1").post_in_doubt is True
    finally:
        store.close()
    reopened = SqliteStore(path)  # opening again changes nothing
    try:
        assert reopened.get_alert("acme-ml/1").post_in_doubt is True
    finally:
        reopened.close()


def test_sqlite_that_cannot_be_opened_is_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreUnavailable, match="sqlite: cannot open"):
        SqliteStore(blocker / "state.db")


def test_sqlite_waits_for_a_busy_database_then_gives_up(tmp_path: Path) -> None:
    import time

    path = tmp_path / "state.db"
    SqliteStore(path).close()
    patient = SqliteStore(path, busy_timeout=1.0)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="locked"):
            patient.claim_post(JOB, owner="a", lease_seconds=30)
        assert 0.8 < time.monotonic() - started < 4
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert patient.claim_post(JOB, owner="a", lease_seconds=30) is ClaimOutcome.WON  # no transaction was left open
    patient.close()


def test_sqlite_uses_write_ahead_logging(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "state.db")
    store.close()
    check = sqlite3.connect(tmp_path / "state.db")
    try:
        assert check.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        check.close()
    assert store.path == tmp_path / "state.db"
