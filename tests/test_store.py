"""The Store contract, run against both SqliteStore and FirestoreStore (on the Firestore emulator)."""

from __future__ import annotations

import itertools
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from bot.errors import ConfigError, StoreUnavailable
from bot.store import MAX_ENTRIES_PER_JOB, ClaimOutcome, Store, open_store
from bot.store.firestore import FirestoreStore, doc_id
from bot.store.sqlite import SqliteStore
from tests.emulators import Emulator, free_port, sdk_root, start_firestore

JOB = "my-project/1234567890"
OTHER_JOB = "my-project/999"


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "firestore"])
def store(request: pytest.FixtureRequest) -> Store:
    return request.getfixturevalue(f"{request.param}_store")


@pytest.fixture
def open_same(store: Store) -> Iterator[Callable[..., Store]]:
    """Open more handles on the backend that `store` uses (another client, the same data)."""
    opened: list[Store] = []

    def make(**options: Any) -> Store:
        if isinstance(store, SqliteStore):
            handle: Store = SqliteStore(store.path, **options)
        else:
            assert isinstance(store, FirestoreStore)
            handle = FirestoreStore(project=store.project, **options)
        opened.append(handle)
        return handle

    yield make
    for handle in opened:
        handle.close()


def race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls on one thread each, released together."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> Any:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


def post(store: Store, job_key: str = JOB, *, owner: str = "a", ts: str = "1700000000.000100") -> None:
    store.record_post(
        job_key,
        owner=owner,
        channel="C123",
        message_ts=ts,
        diagnosis={"failure_class": "cuda_oom", "confidence": 0.9},
        fingerprint="fp1",
        job={"display_name": "train-llm", "labels": {"team": "nlp"}},
    )


# --------------------------------------------------------------------------------------------- entries


def test_add_entry_stores_each_entry_id_once_per_job(store: Store) -> None:
    entry = {"insertId": "abc", "textPayload": "CUDA out of memory", "severity": "ERROR"}
    assert store.add_entry(JOB, "abc", entry) is True
    assert store.add_entry(JOB, "abc", {"insertId": "abc", "textPayload": "changed"}) is False
    assert store.add_entry(OTHER_JOB, "abc", entry) is True
    assert store.entries(JOB) == [entry]


def test_entries_come_back_in_insertion_order(store: Store) -> None:
    ids = ["zz", "a", "m/1", "b.2", "__x__", "0"] + [f"id-{n}" for n in range(20, 0, -1)]
    for n, entry_id in enumerate(ids):
        assert store.add_entry(JOB, entry_id, {"insertId": entry_id, "n": n})
    assert [e["insertId"] for e in store.entries(JOB)] == ids
    assert store.entries("nobody/0") == []


def test_entries_round_trip_any_json(store: Store) -> None:
    entry = {
        "jsonPayload": {"matrix": [[1, 2], [3.5, None]], "ünï": "çødé ✓", "": "empty key", "a.b/c": True},
        "labels": {"logging.googleapis.com/trace": "t"},
        "big": 2**62,
    }
    store.add_entry(JOB, "e1", entry)
    assert store.entries(JOB) == [entry]


def test_entries_keep_the_oldest_up_to_the_cap(store: Store, open_same: Callable[..., Store]) -> None:
    capped = open_same(max_entries=3)
    assert [capped.add_entry(JOB, f"e{n}", {"n": n}) for n in range(5)] == [True, True, True, False, False]
    assert capped.add_entry(JOB, "e0", {"n": 0}) is False
    assert [e["n"] for e in capped.entries(JOB)] == [0, 1, 2]


def test_sqlite_caps_entries_at_2000(sqlite_store: SqliteStore) -> None:
    added = [sqlite_store.add_entry(JOB, f"e{n}", {"n": n}) for n in range(MAX_ENTRIES_PER_JOB + 3)]
    assert added.count(True) == MAX_ENTRIES_PER_JOB == 2000
    entries = sqlite_store.entries(JOB)
    assert len(entries) == 2000 and entries[0] == {"n": 0} and entries[-1] == {"n": 1999}


def test_concurrent_duplicate_entries_are_stored_once(store: Store) -> None:
    results = race([lambda: store.add_entry(JOB, "dup", {"x": 1}) for _ in range(10)])
    assert results.count(True) == 1
    assert store.entries(JOB) == [{"x": 1}]


# -------------------------------------------------------------------------------------------- messages


def test_mark_message_is_true_only_the_first_time(store: Store) -> None:
    assert store.mark_message("1001") is True
    assert store.mark_message("1001") is False
    assert store.mark_message("1002") is True


def test_mark_message_has_one_winner_under_concurrency(store: Store) -> None:
    for round_ in range(3):
        results = race([lambda r=round_: store.mark_message(f"m-{r}") for _ in range(20)])
        assert results.count(True) == 1


# ----------------------------------------------------------------------------------------- post claims


def test_claim_post_won_busy_posted(store: Store) -> None:
    assert store.claim_post(JOB, owner="a", lease_seconds=60) is ClaimOutcome.WON
    assert store.claim_post(JOB, owner="b", lease_seconds=60) is ClaimOutcome.BUSY
    assert store.claim_post(JOB, owner="a", lease_seconds=60) is ClaimOutcome.WON  # the holder renews
    post(store, owner="a")
    assert store.claim_post(JOB, owner="b", lease_seconds=60) is ClaimOutcome.POSTED
    assert store.claim_post(JOB, owner="a", lease_seconds=60) is ClaimOutcome.POSTED
    assert store.claim_post(OTHER_JOB, owner="b", lease_seconds=60) is ClaimOutcome.WON


def test_an_expired_claim_can_be_taken_over(store: Store, open_same: Callable[..., Store]) -> None:
    clock = Clock()
    timed = open_same(clock=clock)
    assert timed.claim_post(JOB, owner="a", lease_seconds=30) is ClaimOutcome.WON
    clock.now += 29
    assert timed.claim_post(JOB, owner="b", lease_seconds=30) is ClaimOutcome.BUSY
    clock.now += 2
    assert timed.claim_post(JOB, owner="b", lease_seconds=30) is ClaimOutcome.WON
    assert timed.claim_post(JOB, owner="a", lease_seconds=30) is ClaimOutcome.BUSY


def test_release_post_lets_another_owner_claim(store: Store) -> None:
    assert store.claim_post(JOB, owner="a", lease_seconds=60) is ClaimOutcome.WON
    store.release_post(JOB, owner="b")  # not b's claim: no effect
    assert store.claim_post(JOB, owner="b", lease_seconds=60) is ClaimOutcome.BUSY
    store.release_post(JOB, owner="a")
    assert store.claim_post(JOB, owner="b", lease_seconds=60) is ClaimOutcome.WON
    store.release_post("nobody/0", owner="a")  # unknown job: no effect, no error
    assert store.get_alert("nobody/0") is None


def test_release_after_posting_changes_nothing(store: Store) -> None:
    store.claim_post(JOB, owner="a", lease_seconds=60)
    post(store, owner="a")
    store.release_post(JOB, owner="a")
    assert store.claim_post(JOB, owner="b", lease_seconds=60) is ClaimOutcome.POSTED


def test_record_post_stores_the_alert_and_keeps_the_first_message(store: Store) -> None:
    assert store.get_alert(JOB) is None
    store.claim_post(JOB, owner="a", lease_seconds=60)
    post(store, owner="a", ts="111.1")
    post(store, owner="b", ts="222.2")
    alert = store.get_alert(JOB)
    assert alert is not None
    assert (alert.job_key, alert.posted, alert.channel, alert.message_ts) == (JOB, True, "C123", "111.1")
    assert alert.diagnosis == {"failure_class": "cuda_oom", "confidence": 0.9}
    assert alert.fingerprint == "fp1"
    assert alert.job == {"display_name": "train-llm", "labels": {"team": "nlp"}}
    assert (alert.acknowledged_by, alert.rerun_state) == (None, None)
    assert alert.updated_at > 0
    assert store.find_by_message("C123", "222.2") is None


def test_update_post_changes_the_diagnosis(store: Store) -> None:
    post(store)
    store.update_post(JOB, diagnosis={"failure_class": "nccl_timeout"}, fingerprint="fp2")
    alert = store.get_alert(JOB)
    assert alert is not None
    assert (alert.diagnosis, alert.fingerprint) == ({"failure_class": "nccl_timeout"}, "fp2")
    assert alert.job == {"display_name": "train-llm", "labels": {"team": "nlp"}}  # kept when job is None
    store.update_post(JOB, diagnosis={}, fingerprint="fp3", job={"state": "JOB_STATE_FAILED"})
    alert = store.get_alert(JOB)
    assert alert is not None and alert.job == {"state": "JOB_STATE_FAILED"} and alert.posted


def test_find_by_message(store: Store) -> None:
    post(store, JOB, ts="111.1")
    post(store, OTHER_JOB, ts="222.2")
    found = store.find_by_message("C123", "222.2")
    assert found is not None and found.job_key == OTHER_JOB
    assert store.find_by_message("C999", "222.2") is None
    assert store.find_by_message("C123", "333.3") is None


# ---------------------------------------------------------------------------------- acknowledge, rerun


def test_acknowledge_and_undo(store: Store) -> None:
    post(store)
    store.set_acknowledged(JOB, user="U1", at=1_700_000_123.5)
    alert = store.get_alert(JOB)
    assert alert is not None and (alert.acknowledged_by, alert.acknowledged_at) == ("U1", 1_700_000_123.5)
    store.set_acknowledged(JOB, user=None, at=1_700_000_200.0)
    alert = store.get_alert(JOB)
    assert alert is not None and (alert.acknowledged_by, alert.acknowledged_at) == (None, None)
    assert alert.posted and alert.message_ts == "1700000000.000100"


def test_rerun_claim_has_exactly_one_winner(store: Store) -> None:
    post(store)
    for n in range(5):
        key = f"{JOB}-{n}"
        results = race([lambda u=user, k=key: store.claim_rerun(k, user=f"U{u}") for user in range(20)])
        assert results.count(True) == 1, results
        alert = store.get_alert(key)
        assert alert is not None and alert.rerun_state == "claimed"
        assert alert.rerun_by == f"U{results.index(True)}"


def test_rerun_claim_release_and_finish(store: Store) -> None:
    post(store)
    assert store.claim_rerun(JOB, user="U1") is True
    assert store.claim_rerun(JOB, user="U2") is False
    store.release_rerun(JOB)
    alert = store.get_alert(JOB)
    assert alert is not None and (alert.rerun_state, alert.rerun_by) == (None, None)
    assert store.claim_rerun(JOB, user="U2") is True
    store.finish_rerun(JOB, new_job_id="555")
    store.release_rerun(JOB)  # a finished rerun stays
    assert store.claim_rerun(JOB, user="U3") is False
    alert = store.get_alert(JOB)
    assert alert is not None
    assert (alert.rerun_state, alert.rerun_by, alert.rerun_job_id) == ("done", "U2", "555")
    assert alert.posted and alert.fingerprint == "fp1"


def test_history_is_oldest_first_per_job(store: Store) -> None:
    actions = [
        {"who": f"U{n}", "what": "acknowledge", "when": 1_700_000_000 + n, "result": "ok"} for n in range(6)
    ]
    for action in actions:
        store.record_action(JOB, action)
    store.record_action(OTHER_JOB, {"who": "U9", "what": "rerun", "when": 1, "result": "refused", "why": "x"})
    assert store.history(JOB) == actions
    assert [a["who"] for a in store.history(OTHER_JOB)] == ["U9"]
    assert store.history("nobody/0") == []


def test_odd_job_keys_are_kept_apart(store: Store) -> None:
    keys = ["p/1", "p%2F1", "p/../x", "./.", "__p__/1", "p/1/2"]
    for n, key in enumerate(keys):
        post(store, key, ts=f"{n}.0")
    for n, key in enumerate(keys):
        alert = store.get_alert(key)
        assert alert is not None and alert.job_key == key and alert.message_ts == f"{n}.0"


# ---------------------------------------------------------------------------------------- many clients


def test_two_handles_race_claim_post_with_one_winner(store: Store, open_same: Callable[..., Store]) -> None:
    first, second = open_same(), open_same()
    for n in range(5):
        key = f"{JOB}-{n}"
        calls = [
            lambda h=handle, o=owner, k=key: h.claim_post(k, owner=f"owner-{o}", lease_seconds=60)
            for owner, handle in enumerate([first, second] * 5)
        ]
        results = race(calls)
        assert results.count(ClaimOutcome.WON) == 1, results
        assert results.count(ClaimOutcome.BUSY) == 9


_CLAIMER = """
import sys
from bot.store.sqlite import SqliteStore
store = SqliteStore(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
for n in range(int(sys.argv[3])):
    print(n, store.claim_post(f"p/{n}", owner=sys.argv[2], lease_seconds=60).name, flush=True)
"""


def test_sqlite_processes_sharing_a_file_claim_once(tmp_path: Path) -> None:
    path, keys = tmp_path / "shared" / "state.db", 40
    SqliteStore(path).close()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CLAIMER, str(path), f"proc-{n}", str(keys)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        for n in range(4)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outcomes: dict[str, list[str]] = {}
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        for line in out.splitlines():
            key, outcome = line.split()
            outcomes.setdefault(key, []).append(outcome)
    assert len(outcomes) == keys
    assert all(sorted(found) == ["BUSY", "BUSY", "BUSY", "WON"] for found in outcomes.values()), outcomes


def test_sqlite_threads_share_one_store(sqlite_store: SqliteStore) -> None:
    def add(worker: int) -> None:
        for n in range(50):
            assert sqlite_store.add_entry(JOB, f"{worker}-{n}", {"w": worker, "n": n})

    race([lambda w=worker: add(w) for worker in range(8)])
    entries = sqlite_store.entries(JOB)
    assert len(entries) == 400
    for worker in range(8):
        assert [e["n"] for e in entries if e["w"] == worker] == list(range(50))


# --------------------------------------------------------------------------------------------- outages


def test_sqlite_locked_by_another_writer_is_unavailable(sqlite_store: SqliteStore) -> None:
    impatient = SqliteStore(sqlite_store.path, busy_timeout=0.2)
    blocker = sqlite3.connect(sqlite_store.path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="locked"):
            impatient.mark_message("1")
        assert time.monotonic() - started < 5
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert impatient.mark_message("1") is True
    assert sqlite_store.mark_message("1") is False
    impatient.close()


def _unreachable_store(monkeypatch: pytest.MonkeyPatch, host: str, **options: Any) -> FirestoreStore:
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", host)
    return FirestoreStore(project="test-project", **options)


def test_firestore_on_a_closed_port_is_unavailable_within_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    store = _unreachable_store(monkeypatch, f"127.0.0.1:{free_port()}")
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match="ServiceUnavailable"):
        store.claim_post(JOB, owner="a", lease_seconds=60)
    elapsed = time.monotonic() - started
    assert 1 < elapsed < 10  # retried for the default 4 s deadline, then gave up
    store.close()


EVERY_CALL: dict[str, Callable[[Store], Any]] = {
    "add_entry": lambda s: s.add_entry(JOB, "e", {}),
    "entries": lambda s: s.entries(JOB),
    "mark_message": lambda s: s.mark_message("1"),
    "claim_post": lambda s: s.claim_post(JOB, owner="a", lease_seconds=60),
    "release_post": lambda s: s.release_post(JOB, owner="a"),
    "record_post": lambda s: post(s),
    "update_post": lambda s: s.update_post(JOB, diagnosis={}, fingerprint=""),
    "get_alert": lambda s: s.get_alert(JOB),
    "find_by_message": lambda s: s.find_by_message("C", "1"),
    "set_acknowledged": lambda s: s.set_acknowledged(JOB, user="U", at=1.0),
    "claim_rerun": lambda s: s.claim_rerun(JOB, user="U"),
    "finish_rerun": lambda s: s.finish_rerun(JOB, new_job_id="2"),
    "release_rerun": lambda s: s.release_rerun(JOB),
    "record_action": lambda s: s.record_action(JOB, {}),
    "history": lambda s: s.history(JOB),
}


@pytest.mark.parametrize("call", EVERY_CALL.values(), ids=EVERY_CALL.keys())
def test_every_firestore_call_maps_an_outage(
    monkeypatch: pytest.MonkeyPatch, call: Callable[[Store], Any]
) -> None:
    store = _unreachable_store(monkeypatch, f"127.0.0.1:{free_port()}", deadline=0.5)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        call(store)
    assert time.monotonic() - started < 3
    store.close()


def test_firestore_that_never_answers_is_unavailable_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        store = _unreachable_store(monkeypatch, f"127.0.0.1:{silent.getsockname()[1]}", deadline=1.0)
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="DeadlineExceeded"):
            store.get_alert(JOB)
        assert time.monotonic() - started < 3
        store.close()


@pytest.mark.skipif(sdk_root() is None, reason="gcloud is not installed")
def test_firestore_outage_surfaces_fast_and_the_store_recovers(monkeypatch: pytest.MonkeyPatch) -> None:
    emulator: Emulator = start_firestore("outage-project")
    try:
        monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", emulator.host)
        # A cold emulator's first answer can take seconds on a loaded machine: warm it up (fresh ids, up to 60 s)
        # before anything is timed; the store's own deadline is what the outage below measures.
        warm_up = FirestoreStore(project=emulator.project)
        _mark_until_answered(warm_up, "warm", within=60)
        warm_up.close()
        store = FirestoreStore(project=emulator.project, deadline=2.0)
        assert store.mark_message("1") is True
    finally:
        emulator.stop()
    outage_began = time.monotonic()
    while time.monotonic() - outage_began < 3:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            store.mark_message("2")
        assert time.monotonic() - started < 3
    port = int(emulator.host.rpartition(":")[2])
    with start_firestore("outage-project", port=port):
        # The same store works again once gRPC reconnects (its reconnect backoff grows with the outage).
        _mark_until_answered(store, "after", within=15)
    store.close()


def _mark_until_answered(store: FirestoreStore, prefix: str, *, within: float) -> None:
    """Mark fresh ids (a call that timed out may still have been applied) until the store answers; fail the test
    if it has not answered within `within` seconds."""
    started = time.monotonic()
    for attempt in itertools.count():
        try:
            assert store.mark_message(f"{prefix}-{attempt}") is True
            return
        except StoreUnavailable:
            assert time.monotonic() - started < within, f"Firestore did not answer within {within:g} s"


# --------------------------------------------------------------------------------------------- opening


def test_open_store_sqlite_creates_parent_directories(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "state.db"
    store = open_store(f"sqlite:///{path}")
    try:
        assert isinstance(store, SqliteStore) and path.exists()
        assert store.mark_message("x") is True
    finally:
        store.close()


def test_open_store_firestore_with_a_project(firestore_store: FirestoreStore) -> None:
    project = f"other-{uuid.uuid4().hex[:8]}"
    store = open_store(f"firestore:{project}")
    try:
        assert isinstance(store, FirestoreStore) and store.project == project
        assert store.mark_message("x") is True
        assert firestore_store.mark_message("x") is True  # another project: separate data
    finally:
        store.close()


@pytest.mark.parametrize("url", ["sqlite:///", "sqlite://relative.db", "postgres://x", "", "firestorex"])
def test_open_store_rejects_other_urls(url: str) -> None:
    with pytest.raises(ConfigError, match="TRAINMEDIC_STORE"):
        open_store(url)


@pytest.mark.parametrize("key", ["p/1", ".", "..", "__x__", "a.b_c", "ü/ß", "%2F"])
def test_doc_ids_are_safe_and_distinct(key: str) -> None:
    encoded = doc_id(key)
    assert "/" not in encoded and "." not in encoded and "__" not in encoded
    assert encoded != doc_id(key + "x")


def test_importing_the_stores_does_not_import_firestore() -> None:
    code = (
        "import sys, bot.store, bot.store.sqlite, bot.store.firestore; "
        "assert 'google.cloud.firestore' not in sys.modules, 'firestore imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parent.parent)
