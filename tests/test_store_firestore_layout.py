"""FirestoreStore's documents as Firestore holds them (read with a plain Firestore client on the emulator): the
layout bot/store/firestore.py documents, the TTL field a retention policy needs, and the defaults of an alert
document that a merge made. And the default deadline."""

from __future__ import annotations

import hashlib
import itertools
import json
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from google.cloud import firestore

from bot.errors import ConfigError, StoreUnavailable
from bot.store import MESSAGE_DEDUPE_SECONDS, AlertRecord, ClaimOutcome, open_store
from bot.store.firestore import FirestoreStore, doc_id
from tests.emulators import free_port

JOB = "acme-ml/8080"
T0 = 1_800_000_000.0


@pytest.fixture
def raw(firestore_store: FirestoreStore) -> Iterator[firestore.Client]:
    client = firestore.Client(project=firestore_store.project)
    yield client
    client.close()


@pytest.fixture
def timed(firestore_store: FirestoreStore) -> Iterator[FirestoreStore]:
    store = FirestoreStore(project=firestore_store.project, clock=lambda: T0)
    yield store
    store.close()


def test_a_claim_is_kept_on_the_jobs_document(timed: FirestoreStore, raw: firestore.Client) -> None:
    assert timed.claim_post(JOB, owner="a", lease_seconds=30) is ClaimOutcome.WON
    data = raw.collection("trainmedic_jobs").document(doc_id(JOB)).get().to_dict()
    assert data is not None
    assert (data["job_key"], data["updated_at"], data["posted"]) == (JOB, T0, False)
    assert (data["claim_owner"], data["claim_expires"], data["post_in_doubt"]) == ("a", T0 + 30, False)
    timed.release_post(JOB, owner="a", in_doubt=True)
    data = raw.collection("trainmedic_jobs").document(doc_id(JOB)).get().to_dict()
    assert (data["claim_owner"], data["claim_expires"], data["post_in_doubt"]) == (None, None, True)


def test_message_ids_carry_the_time_a_ttl_policy_expires_them_at(timed: FirestoreStore, raw: firestore.Client) -> None:
    assert timed.mark_message("m/1") is True
    data = raw.collection("trainmedic_messages").document(doc_id("m/1")).get().to_dict()
    assert data is not None and data["seen_at"] == T0
    assert data["expire_at"] == datetime.fromtimestamp(T0 + MESSAGE_DEDUPE_SECONDS, tz=UTC)


def test_entries_and_actions_live_under_the_job(timed: FirestoreStore, raw: firestore.Client) -> None:
    assert timed.add_entry(JOB, "e.1", {"textPayload": "x"})
    timed.record_action(JOB, {"who": "U1"})
    job = raw.collection("trainmedic_jobs").document(doc_id(JOB))
    entry = job.collection("entries").document(doc_id("e.1")).get().to_dict()
    assert entry is not None and (entry["entry_id"], entry["entry_json"]) == ("e.1", '{"textPayload": "x"}')
    actions = [snap.to_dict() for snap in job.collection("actions").stream()]
    assert [a["action_json"] for a in actions] == ['{"who": "U1"}'] and actions[0]["seq"] > 0


def test_another_prefix_names_other_collections(firestore_store: FirestoreStore, raw: firestore.Client) -> None:
    other = FirestoreStore(project=firestore_store.project, collection_prefix="blue")
    try:
        assert other.claim_rerun(JOB, user="U1") is True
        assert other.mark_message("m1") is True
    finally:
        other.close()
    assert raw.collection("blue_jobs").document(doc_id(JOB)).get().exists
    assert raw.collection("blue_messages").document(doc_id("m1")).get().exists
    assert firestore_store.get_alert(JOB) is None and firestore_store.mark_message("m1") is True


@pytest.mark.parametrize(
    "write",
    [
        lambda s: s.set_acknowledged(JOB, user="U1", at=5.0),
        lambda s: s.finish_rerun(JOB, new_job_id="9"),
        lambda s: s.update_post(JOB, diagnosis={"failure_class": "x"}, fingerprint="f"),
    ],
    ids=["set_acknowledged", "finish_rerun", "update_post"],
)
def test_a_merge_on_an_unknown_job_reads_back_with_the_defaults(timed: FirestoreStore, write) -> None:
    write(timed)
    record = timed.get_alert(JOB)
    assert record is not None
    blank = AlertRecord(job_key=JOB, updated_at=T0).model_dump()
    changed = {key: value for key, value in record.model_dump().items() if blank[key] != value}
    assert set(changed) <= {"acknowledged_by", "acknowledged_at", "rerun_state", "rerun_job_id", "diagnosis",
                            "fingerprint"}  # fmt: skip
    assert record.job == {} and record.posted is False and record.post_in_doubt is False
    assert timed.claim_post(JOB, owner="a", lease_seconds=30) is ClaimOutcome.WON  # no claim came with it


def test_the_default_deadline_is_four_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{silent.getsockname()[1]}")
        store = FirestoreStore(project="silent-project")
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                store.get_alert(JOB)
            assert 3.9 < time.monotonic() - started < 4.8
        finally:
            store.close()


def test_a_store_with_a_smaller_cap_reads_and_counts_only_the_oldest_entries(firestore_store: FirestoreStore) -> None:
    """Racing writers may overshoot the cap; here a store with a larger cap stands in for them."""
    big = FirestoreStore(project=firestore_store.project, max_entries=5)
    small = FirestoreStore(project=firestore_store.project, max_entries=3)
    try:
        assert [big.add_entry(JOB, f"e{n}", {"n": n}) for n in range(6)] == [True] * 5 + [False]
        assert [e["n"] for e in small.entries(JOB)] == [0, 1, 2]
        assert small.count_entries(JOB) == 3 and big.count_entries(JOB) == 5
        assert small.add_entry(JOB, "e9", {"n": 9}) is False
    finally:
        big.close()
        small.close()



def _no_project_anywhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, credentials: Path) -> None:
    for name in ("FIRESTORE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))  # an empty gcloud configuration
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(credentials))


def test_without_credentials_the_store_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_project_anywhere(monkeypatch, tmp_path, tmp_path / "missing.json")
    with pytest.raises(ConfigError, match=r"^firestore: no Google credentials found: .*missing\.json") as caught:
        FirestoreStore()
    assert caught.value.__cause__ is None  # said once, without google-auth's traceback


def test_without_a_project_the_store_is_a_configuration_error_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    user = {"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r"}
    (tmp_path / "user.json").write_text(json.dumps(user), encoding="utf-8")
    _no_project_anywhere(monkeypatch, tmp_path, tmp_path / "user.json")
    with pytest.raises(ConfigError, match=r"^firestore: .*\(use firestore:PROJECT or GOOGLE_CLOUD_PROJECT\)$"):
        FirestoreStore()
    with pytest.raises(ConfigError, match="firestore:PROJECT"):
        open_store("firestore")


def test_a_store_given_a_client_leaves_it_open(raw: firestore.Client, firestore_store: FirestoreStore) -> None:
    store = FirestoreStore(raw)
    assert store.project == firestore_store.project
    assert store.claim_rerun(JOB, user="U1") is True
    store.close()
    assert raw.collection("trainmedic_jobs").document(doc_id(JOB)).get().exists  # the client still works


def test_entries_and_actions_keep_their_order_when_the_wall_clock_steps_back(
    firestore_store: FirestoreStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = itertools.count(1_900_000_000 * 10**9, -1000)  # each reading a microsecond earlier than the last
    with monkeypatch.context() as patch:
        patch.setattr(time, "time_ns", lambda: next(ticks))
        for entry_id in ("b", "a", "c"):
            assert firestore_store.add_entry(JOB, entry_id, {"id": entry_id})
        for n in range(3):
            firestore_store.record_action(JOB, {"n": n})
    assert [e["id"] for e in firestore_store.entries(JOB)] == ["b", "a", "c"]
    assert [a["n"] for a in firestore_store.history(JOB)] == [0, 1, 2]


def test_keys_up_to_500_encoded_characters_are_kept_readable_and_longer_ones_hashed() -> None:
    assert doc_id("k" * 500) == "k" * 500
    assert doc_id("k" * 501) == "!sha256!" + hashlib.sha256(b"k" * 501).hexdigest()
    assert doc_id("/" * 166) == "%2F" * 166  # 498 characters once encoded
    long = "p/" + "ü" * 200 + "\ud800"  # a lone surrogate: hashed from its UTF-8 bytes, surrogates passed through
    assert doc_id(long) == "!sha256!" + hashlib.sha256(long.encode("utf-8", "surrogatepass")).hexdigest()


def test_the_expiry_time_of_a_message_id_does_not_depend_on_the_local_time_zone(
    timed: FirestoreStore, raw: firestore.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert timed.mark_message("m-tz") is True
    finally:
        monkeypatch.undo()
        time.tzset()
    data = raw.collection("trainmedic_messages").document(doc_id("m-tz")).get().to_dict()
    assert data is not None
    assert data["expire_at"].timestamp() == T0 + MESSAGE_DEDUPE_SECONDS


def test_counting_entries_gives_up_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{silent.getsockname()[1]}")
        store = FirestoreStore(project="silent-project", deadline=1.0)
        try:
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="DeadlineExceeded"):
                store.count_entries(JOB)
            assert time.monotonic() - started < 3
        finally:
            store.close()
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{free_port()}")  # and refused connections
    store = FirestoreStore(project="closed-project", deadline=1.0)
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="ServiceUnavailable"):
            store.count_entries(JOB)
        assert time.monotonic() - started < 3
    finally:
        store.close()
