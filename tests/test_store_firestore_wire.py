"""FirestoreStore on the emulator behind a loopback TCP relay that the test can break at a chosen moment.

The relay forwards bytes both ways. The store's own clock (an injected parameter, called by the store just
before it writes) arms it, so the break lands on the write that follows a successful read:
  - "stall": the relay stops answering, so the write must give up at the store's deadline;
  - "down": the relay closes every connection and refuses new ones, so the write fails fast again and again and
    must give up at the store's deadline (not at the client library's own, a minute later);
  - "cut": the relay lets the write reach Firestore, drops its answer and closes the connection, so the store
    retries a write that has landed already and must recognise it as its own;
  - "drop": the relay drops the write before it reaches Firestore and closes the connection, so the store
    retries a write that never landed.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from typing import Any

import pytest

from bot.errors import StoreUnavailable
from bot.store import ClaimOutcome
from bot.store.firestore import FirestoreStore
from tests.emulators import Emulator, free_port

JOB = "acme-ml/7001"
T0 = 1_800_000_000.0
CUT_AFTER = 0.3  # how long a cut answer is swallowed before the connection closes (Firestore answers in ms)


class Relay:
    """Forwards 127.0.0.1:port to the emulator; stall() or cut() break what follows."""

    def __init__(self, target: str) -> None:
        host, _, port = target.rpartition(":")
        self._target = (host, int(port))
        self._server = socket.create_server(("127.0.0.1", 0))
        self.host = f"127.0.0.1:{self._server.getsockname()[1]}"
        self._stalled = threading.Event()
        self._cut_armed = threading.Event()
        self._drop_armed = threading.Event()
        self.cuts = 0
        self.drops = 0
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self) -> None:
        self._stalled.set()

    def cut(self) -> None:
        self._cut_armed.set()

    def drop(self) -> None:
        self._drop_armed.set()

    def down(self) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        self._stalled.clear()
        for sock in [self._server, *self._sockets]:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked on it, and tells the peer
            with suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._target)
            self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, answers: bool) -> None:
        with suppress(OSError):
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if self._stalled.is_set():
                    while not self._closed:  # hold everything: the peer waits for an answer that never comes
                        time.sleep(0.05)
                    return
                if not answers and self._drop_armed.is_set():
                    self._drop_armed.clear()
                    self.drops += 1
                    break
                if answers and self._cut_armed.is_set():
                    self._cut_armed.clear()
                    source.settimeout(CUT_AFTER)  # swallow the rest of the answer, then hang up
                    with suppress(TimeoutError):
                        while source.recv(65536):
                            pass
                    self.cuts += 1
                    break
                sink.sendall(data)
        for sock in (source, sink):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
                sock.close()


class ArmingClock:
    """The store's clock: fixed time; calling it arms `action` once `armed` is set."""

    def __init__(self) -> None:
        self.now = T0
        self.armed: Callable[[], None] | None = None

    def __call__(self) -> float:
        action, self.armed = self.armed, None
        if action is not None:
            action()
        return self.now


@pytest.fixture
def relay(firestore_emulator: Emulator, firestore_store: FirestoreStore) -> Iterator[Relay]:
    relay = Relay(firestore_emulator.host)
    yield relay
    relay.close()


@pytest.fixture
def relayed(
    relay: Relay, firestore_store: FirestoreStore, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., tuple[FirestoreStore, ArmingClock]]]:
    """Opens FirestoreStores that reach the emulator through the relay (the fixture's store does not)."""
    opened: list[FirestoreStore] = []

    def make(**options: Any) -> tuple[FirestoreStore, ArmingClock]:
        clock = ArmingClock()
        monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", relay.host)
        store = FirestoreStore(project=firestore_store.project, clock=clock, **options)
        opened.append(store)
        return store, clock

    yield make
    for store in opened:
        with suppress(Exception):
            store.close()


def seconds_to_give_up(call: Callable[[], Any]) -> float:
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        call()
    return time.monotonic() - started


# ------------------------------------------------------------------------------------ a write that stalls


WRITES: dict[str, Callable[[FirestoreStore], Any]] = {
    # a compare-and-set update of an existing document
    "claim_post": lambda s: s.claim_post(JOB, owner="a", lease_seconds=30),  # the holder renews
    "release_post": lambda s: s.release_post(JOB, owner="a", in_doubt=True),
    "record_post": lambda s: s.record_post(
        JOB, owner="a", channel="C1", message_ts="1.1", diagnosis={}, fingerprint="f", job={}
    ),
    "claim_rerun": lambda s: s.claim_rerun(JOB, user="U1"),
    # a merge
    "set_acknowledged": lambda s: s.set_acknowledged(JOB, user="U1", at=1.0),
    "update_post": lambda s: s.update_post(JOB, diagnosis={}, fingerprint="f"),
    "finish_rerun": lambda s: s.finish_rerun(JOB, new_job_id="9"),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
@pytest.mark.parametrize("outage", ["stall", "down"])
def test_a_write_after_a_good_read_gives_up_at_the_deadline_when_firestore_stops_answering(
    relayed: Callable[..., tuple[FirestoreStore, ArmingClock]],
    firestore_store: FirestoreStore,
    relay: Relay,
    write: Callable[[FirestoreStore], Any],
    outage: str,
) -> None:
    assert firestore_store.claim_post(JOB, owner="a", lease_seconds=1e9) is ClaimOutcome.WON  # the document exists
    store, clock = relayed(deadline=1.0)
    assert store.get_alert(JOB) is not None  # the relay works, the connection is up
    clock.armed = getattr(relay, outage)
    assert seconds_to_give_up(lambda: write(store)) < 3.5
    assert clock.armed is None  # the store did read its clock before writing


@pytest.mark.parametrize("outage", ["stall", "down"])
def test_creating_the_document_gives_up_at_the_deadline_when_firestore_stops_answering(
    relayed: Callable[..., tuple[FirestoreStore, ArmingClock]],
    firestore_store: FirestoreStore,
    relay: Relay,
    outage: str,
) -> None:
    store, clock = relayed(deadline=1.0)
    assert store.get_alert(JOB) is None  # no document yet: the claim will create it
    clock.armed = getattr(relay, outage)
    assert seconds_to_give_up(lambda: store.claim_rerun(JOB, user="U1")) < 3.5
    assert firestore_store.get_alert(JOB) is None


# ---------------------------------------------------------------------------------- an answer that is lost


def test_a_rerun_claim_whose_answer_was_lost_is_still_ours(
    relayed: Callable[..., tuple[FirestoreStore, ArmingClock]], firestore_store: FirestoreStore, relay: Relay
) -> None:
    assert firestore_store.claim_post(JOB, owner="a", lease_seconds=60) is ClaimOutcome.WON  # the document exists
    store, clock = relayed()
    assert store.get_alert(JOB) is not None
    clock.armed = relay.cut
    assert store.claim_rerun(JOB, user="U1") is True  # read again, the claim is there: ours, not a rival's
    assert relay.cuts == 1
    record = firestore_store.get_alert(JOB)
    assert record is not None and (record.rerun_state, record.rerun_by) == ("claimed", "U1")
    assert store.claim_rerun(JOB, user="U2") is False


def test_a_rerun_claim_that_created_the_document_but_lost_the_answer_is_still_ours(
    relayed: Callable[..., tuple[FirestoreStore, ArmingClock]], firestore_store: FirestoreStore, relay: Relay
) -> None:
    store, clock = relayed()
    assert store.get_alert(JOB) is None
    clock.armed = relay.cut
    assert store.claim_rerun(JOB, user="U1") is True
    assert relay.cuts == 1
    record = firestore_store.get_alert(JOB)
    assert record is not None and (record.rerun_state, record.rerun_by, record.posted) == ("claimed", "U1", False)


def test_a_rival_claim_that_lands_between_read_and_write_is_not_taken_for_ours(
    relayed: Callable[..., tuple[FirestoreStore, ArmingClock]], firestore_store: FirestoreStore
) -> None:
    """The rival writes after our read: our guarded update fails, we read again and see the rival's claim."""
    assert firestore_store.claim_post(JOB, owner="a", lease_seconds=60) is ClaimOutcome.WON
    store, clock = relayed()
    clock.armed = lambda: firestore_store.claim_rerun(JOB, user="rival")
    assert store.claim_rerun(JOB, user="U1") is False
    record = firestore_store.get_alert(JOB)
    assert record is not None and record.rerun_by == "rival"


def test_a_message_mark_whose_request_was_lost_while_a_rival_marked_it_is_not_the_first(
    relayed: Callable[..., tuple[FirestoreStore, ArmingClock]], firestore_store: FirestoreStore, relay: Relay
) -> None:
    store, clock = relayed()
    assert store.get_alert(JOB) is None  # the connection is up

    def rival_first_then_drop_ours() -> None:
        assert firestore_store.mark_message("m-raced") is True
        relay.drop()

    clock.armed = rival_first_then_drop_ours
    assert store.mark_message("m-raced") is False  # the retry finds the rival's token, not ours
    assert relay.drops == 1


def test_a_message_mark_whose_answer_was_lost_is_still_the_first(
    relayed: Callable[..., tuple[FirestoreStore, ArmingClock]], firestore_store: FirestoreStore, relay: Relay
) -> None:
    store, clock = relayed()
    assert store.get_alert(JOB) is None  # the connection is up
    clock.armed = relay.cut
    assert store.mark_message("m-lost") is True  # created by our first try: the retry finds our own token
    assert relay.cuts == 1
    assert firestore_store.mark_message("m-lost") is False
    assert store.mark_message("m-lost") is False


# ------------------------------------------------------------------------------------- retries and rounds


class RecordingSleep:
    """The store's sleep between retries: waits as asked (plus `extra` seconds: a paused process) and notes it."""

    def __init__(self, extra: float = 0.0) -> None:
        self.extra = extra
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        time.sleep(seconds + self.extra)


def closed_port_store(monkeypatch: pytest.MonkeyPatch, **options: Any) -> FirestoreStore:
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{free_port()}")
    return FirestoreStore(project="closed-project", **options)


def test_retries_back_off_from_50_ms_doubling_up_to_one_second(monkeypatch: pytest.MonkeyPatch) -> None:
    sleep = RecordingSleep()
    store = closed_port_store(monkeypatch, sleep=sleep, deadline=4.0)
    try:
        with pytest.raises(StoreUnavailable, match=r"^firestore: ServiceUnavailable: 503 .*127\.0\.0\.1:"):
            store.get_alert(JOB)  # gRPC's words, naming the address it could not reach
    finally:
        store.close()
    assert sleep.delays[:6] == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.8, 1.0])
    assert max(sleep.delays) == 1.0 and sum(sleep.delays) < 4.0


def test_a_store_paused_past_its_deadline_while_waiting_gives_up_without_another_try(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sleep = RecordingSleep(extra=0.6)
    store = closed_port_store(monkeypatch, sleep=sleep, deadline=0.5)
    try:
        with pytest.raises(StoreUnavailable, match="^firestore: no answer within the operation deadline$"):
            store.get_alert(JOB)
    finally:
        store.close()
    assert sleep.delays == [0.05]


class RivalClock:
    """The store's clock: each call (just before the store writes) lets a rival change the document first."""

    def __init__(self, rival: Callable[[int], None]) -> None:
        self.rival = rival
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        self.rival(self.calls)
        return T0


def test_a_document_that_changes_before_every_write_is_given_up_after_20_rounds(
    firestore_store: FirestoreStore,
) -> None:
    assert firestore_store.claim_post(JOB, owner="a", lease_seconds=60) is ClaimOutcome.WON
    clock = RivalClock(lambda n: firestore_store.set_acknowledged(JOB, user=f"U{n}", at=float(n)))
    store = FirestoreStore(project=firestore_store.project, clock=clock, deadline=60.0)
    try:
        with pytest.raises(StoreUnavailable, match=f"^firestore: too much contention on {JOB}$"):
            store.claim_rerun(JOB, user="loser")
    finally:
        store.close()
    assert clock.calls == 20
    record = firestore_store.get_alert(JOB)
    assert record is not None and record.rerun_state is None and record.acknowledged_by == "U20"
