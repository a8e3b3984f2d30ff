"""FirestoreStore on the emulator: read-decide-write steps on documents that already exist are compare-and-set.

A claim on an existing job document is an update guarded by the update time of the read it decided on; without
that precondition every racer that read the same state would win. These tests race the update path, not only
document creation (which `create()` guards by itself).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from bot.store import ClaimOutcome
from bot.store.firestore import FirestoreStore, doc_id

JOB = "acme-ml/4242"
RACERS = 20
HANDLES = 4  # clients of the same database


def race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls on one thread each, released together."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> Any:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


@pytest.fixture
def handles(firestore_store: FirestoreStore) -> Iterator[list[FirestoreStore]]:
    """Four clients of the same database (as four Cloud Run instances would be), the fixture's store first."""
    more = [FirestoreStore(project=firestore_store.project) for _ in range(3)]
    yield [firestore_store, *more]
    for handle in more:
        handle.close()


def existing_unclaimed_job(store: FirestoreStore, key: str) -> None:
    """A job document that exists and holds no claim: claimed once, then released."""
    assert store.claim_post(key, owner="setup", lease_seconds=60) is ClaimOutcome.WON
    store.release_post(key, owner="setup")
    assert store.get_alert(key) is not None


def test_racing_claims_on_an_existing_document_have_one_winner(handles: list[FirestoreStore]) -> None:
    for round_ in range(3):
        key = f"{JOB}-claim-{round_}"
        existing_unclaimed_job(handles[0], key)
        calls = [
            lambda h=handles[n % HANDLES], n=n, k=key: h.claim_post(k, owner=f"owner-{n}", lease_seconds=60)
            for n in range(RACERS)
        ]
        results = race(calls)
        assert results.count(ClaimOutcome.WON) == 1, results
        assert results.count(ClaimOutcome.BUSY) == RACERS - 1, results


def test_racing_takeovers_of_an_expired_claim_have_one_winner(firestore_store: FirestoreStore) -> None:
    clock = {"now": 1_800_000_000.0}
    stores = [FirestoreStore(project=firestore_store.project, clock=lambda: clock["now"]) for _ in range(4)]
    try:
        key = f"{JOB}-expired"
        assert stores[0].claim_post(key, owner="crashed", lease_seconds=30) is ClaimOutcome.WON
        clock["now"] += 31  # the first owner's lease ran out: the document exists with a stale claim
        calls = [
            lambda s=stores[n % 4], n=n: s.claim_post(key, owner=f"owner-{n}", lease_seconds=30) for n in range(RACERS)
        ]
        results = race(calls)
        assert results.count(ClaimOutcome.WON) == 1, results
    finally:
        for store in stores:
            store.close()


def test_racing_rerun_claims_on_a_posted_alert_have_one_winner(handles: list[FirestoreStore]) -> None:
    for round_ in range(3):
        key = f"{JOB}-rerun-{round_}"
        handles[0].record_post(
            key, owner="a", channel="C1", message_ts=f"{round_}.1", diagnosis={}, fingerprint="f", job={}
        )
        calls = [lambda h=handles[n % HANDLES], n=n, k=key: h.claim_rerun(k, user=f"U{n}") for n in range(RACERS)]
        results = race(calls)
        assert results.count(True) == 1, results
        alert = handles[0].get_alert(key)
        assert alert is not None and alert.rerun_by == f"U{results.index(True)}"
        assert alert.posted and alert.message_ts == f"{round_}.1"  # the claim changed only the rerun fields


def test_racing_record_post_keeps_exactly_the_first_message(handles: list[FirestoreStore]) -> None:
    key = f"{JOB}-record"
    existing_unclaimed_job(handles[0], key)
    calls = [
        lambda h=handles[n % HANDLES], n=n: h.record_post(
            key, owner=f"o{n}", channel="C1", message_ts=f"{n}.0", diagnosis={"n": n}, fingerprint=f"f{n}", job={}
        )
        for n in range(RACERS)
    ]
    race(calls)
    alert = handles[0].get_alert(key)
    assert alert is not None and alert.posted
    winner = int(alert.message_ts.split(".")[0])
    assert (alert.diagnosis, alert.fingerprint) == ({"n": winner}, f"f{winner}")  # one writer's fields, whole


def test_document_ids_escape_separators_and_reserved_names() -> None:
    assert doc_id("p/1") == "p%2F1"
    assert doc_id("a.b_c") == "a%2Eb%5Fc"
    assert doc_id("__x__") == "%5F%5Fx%5F%5F"
    with pytest.raises(ValueError, match="^an empty key has no document id$"):
        doc_id("")
    assert doc_id("a\ud800b") == "a%ED%A0%80b"  # a lone surrogate (cleaned JSON can still carry one in a key)


def test_every_kind_of_call_gives_up_at_the_deadline_on_a_silent_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads, queries, creates and compare-and-set writes each pass their deadline on as the call's timeout."""
    import socket
    import time

    from bot.errors import StoreUnavailable

    with socket.socket() as silent:  # accepts connections (the kernel does) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{silent.getsockname()[1]}")
        store = FirestoreStore(project="silent-project", deadline=1.0)
        try:
            for call in (
                lambda: store.mark_message("m"),
                lambda: store.entries(JOB),
                lambda: store.history(JOB),
                lambda: store.claim_post(JOB, owner="a", lease_seconds=60),
                lambda: store.add_entry(JOB, "e", {}),
            ):
                started = time.monotonic()
                with pytest.raises(StoreUnavailable):
                    call()
                assert time.monotonic() - started < 4
        finally:
            store.close()


def test_data_firestore_refuses_for_good_is_rejected_not_unavailable(firestore_store: FirestoreStore) -> None:
    from bot.errors import StoreRejected

    with pytest.raises(StoreRejected) as caught:
        firestore_store.record_post(
            JOB, owner="a", channel="C1", message_ts="1.1", diagnosis={"x": "y" * 1_100_000}, fingerprint="f", job={}
        )
    assert str(caught.value).startswith("firestore refused it: InvalidArgument: 400 ")
