"""Post claims that end unsettled leave the alert in doubt (both stores), and what the stores refuse or hash."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bot.errors import StoreRejected
from bot.store import ClaimOutcome, Store
from bot.store.firestore import FirestoreStore, doc_id
from bot.store.sqlite import SqliteStore

JOB = "my-project/1234567890"


@pytest.fixture(params=["sqlite", "firestore"])
def store(request: pytest.FixtureRequest) -> Store:
    return request.getfixturevalue(f"{request.param}_store")


def doubt(store: Store) -> bool:
    record = store.get_alert(JOB)
    return record is not None and record.post_in_doubt


def record(store: Store, owner: str) -> None:
    store.record_post(
        JOB, owner=owner, channel="C1", message_ts="1.1", diagnosis={}, fingerprint="f", job={"project": "p"}
    )


def test_a_clean_claim_is_not_in_doubt(store: Store) -> None:
    assert store.claim_post(JOB, owner="a", lease_seconds=60) is ClaimOutcome.WON
    assert not doubt(store)
    store.release_post(JOB, owner="a")
    assert store.claim_post(JOB, owner="b", lease_seconds=60) is ClaimOutcome.WON
    assert not doubt(store)


def test_taking_over_an_expired_claim_puts_the_alert_in_doubt(store: Store) -> None:
    assert store.claim_post(JOB, owner="dead", lease_seconds=-1) is ClaimOutcome.WON  # its owner died at once
    assert not doubt(store)
    assert store.claim_post(JOB, owner="next", lease_seconds=60) is ClaimOutcome.WON
    assert doubt(store)


def test_release_in_doubt_lets_the_next_claim_in_at_once_and_only_a_recorded_post_clears_it(store: Store) -> None:
    store.claim_post(JOB, owner="a", lease_seconds=60)
    store.release_post(JOB, owner="a", in_doubt=True)
    assert doubt(store)
    assert store.claim_post(JOB, owner="b", lease_seconds=60) is ClaimOutcome.WON  # no lease to wait out
    assert doubt(store)
    store.release_post(JOB, owner="b")  # b searched, found nothing, then failed for another reason
    assert doubt(store)  # a's message may still turn up: keep looking
    store.claim_post(JOB, owner="c", lease_seconds=60)
    record(store, "c")
    assert not doubt(store) and store.get_alert(JOB).posted


def test_release_in_doubt_by_someone_else_changes_nothing(store: Store) -> None:
    store.claim_post(JOB, owner="a", lease_seconds=60)
    store.release_post(JOB, owner="b", in_doubt=True)
    assert not doubt(store)
    assert store.claim_post(JOB, owner="b", lease_seconds=60) is ClaimOutcome.BUSY


def test_count_entries(store: Store) -> None:
    assert store.count_entries(JOB) == 0
    for n in range(3):
        store.add_entry(JOB, f"e{n}", {"n": n})
    store.add_entry(JOB, "e0", {"n": 0})
    assert store.count_entries(JOB) == 3 == len(store.entries(JOB))


def test_an_old_sqlite_file_gains_the_doubt_column(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE alerts (job_key TEXT PRIMARY KEY, channel TEXT, message_ts TEXT, posted INTEGER NOT NULL "
        "DEFAULT 0, diagnosis TEXT, fingerprint TEXT, job TEXT NOT NULL DEFAULT '{}', acknowledged_by TEXT, "
        "acknowledged_at REAL, rerun_state TEXT, rerun_by TEXT, rerun_job_id TEXT, claim_owner TEXT, "
        "claim_expires REAL, updated_at REAL NOT NULL)"
    )
    old.execute("INSERT INTO alerts (job_key, claim_owner, claim_expires, updated_at) VALUES (?, 'x', 0, 0)", (JOB,))
    old.commit()
    old.close()
    store = SqliteStore(path)
    try:
        assert store.claim_post(JOB, owner="y", lease_seconds=60) is ClaimOutcome.WON
        assert doubt(store)
    finally:
        store.close()


@pytest.mark.parametrize("key", ["p/" + "9" * 2000, "ü" * 600, "p/incident-" + "x" * 5000])
def test_long_keys_get_short_distinct_document_ids(key: str) -> None:
    encoded = doc_id(key)
    assert len(encoded.encode()) <= 500 and "/" not in encoded and "." not in encoded and "__" not in encoded
    assert encoded != doc_id(key + "x") and encoded == doc_id(key)


def test_firestore_takes_long_ids_and_refuses_an_oversize_document_for_good(firestore_store: FirestoreStore) -> None:
    long_id = "i" * 2000  # Firestore's limit for a document id is 1,500 bytes
    assert firestore_store.add_entry(JOB, long_id, {"insertId": "short"}) is True
    assert firestore_store.add_entry(JOB, long_id, {"insertId": "short"}) is False
    assert firestore_store.entries(JOB) == [{"insertId": "short"}]
    with pytest.raises(StoreRejected):  # over the 1 MiB document limit: retrying cannot help
        firestore_store.add_entry(JOB, "huge", {"textPayload": "x" * (1100 * 1024)})
    assert json.dumps(firestore_store.entries(JOB)) == '[{"insertId": "short"}]'
