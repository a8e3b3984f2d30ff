"""Shared fixtures: the emulators (one of each per test session) and a fresh store of each kind per test.

The emulators are part of the test set-up, not optional: without gcloud the emulator fixtures fail their tests,
naming what is missing, and an installed emulator that fails to start is an error with the emulator's log tail
in the message. A skipped test of any kind fails the run (tests/strict_outcomes.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from bot.store.firestore import FirestoreStore
from bot.store.sqlite import SqliteStore
from tests.emulators import Emulator, sdk_root, start_firestore, start_pubsub

pytest_plugins = ["tests.fakes.fixtures", "tests.strict_outcomes"]

EMULATOR_PROJECT = "test-project"


def _start(start: Callable[[str], Emulator], name: str) -> Emulator:
    if sdk_root() is None:
        pytest.fail(
            f"the {name} emulator cannot start: gcloud (the Google Cloud SDK, with its {name} emulator and a Java "
            "runtime) is not installed or not on PATH; the emulators are part of this test set-up, not optional",
            pytrace=False,
        )
    return start(EMULATOR_PROJECT)


@pytest.fixture(scope="session")
def pubsub_emulator() -> Iterator[Emulator]:
    """A Pub/Sub emulator for the session: `.host` ("127.0.0.1:PORT") and `.project`. State is shared."""
    with _start(start_pubsub, "Pub/Sub") as emulator:
        yield emulator


@pytest.fixture(scope="session")
def firestore_emulator() -> Iterator[Emulator]:
    """A Firestore emulator for the session: `.host`, `.project`, and `.reset()` to delete every document."""
    with _start(start_firestore, "Firestore") as emulator:
        with pytest.MonkeyPatch.context() as patch:  # a cold emulator's first answer takes about 1 s
            patch.setenv("FIRESTORE_EMULATOR_HOST", emulator.host)
            warm_up = FirestoreStore(project=emulator.project, deadline=30.0)
            warm_up.get_alert("warm-up/0")
            warm_up.close()
        yield emulator


@pytest.fixture
def firestore_store(
    firestore_emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FirestoreStore]:
    """A FirestoreStore on the emulator, emptied first. FIRESTORE_EMULATOR_HOST stays set for the test."""
    firestore_emulator.reset()
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", firestore_emulator.host)
    store = FirestoreStore(project=firestore_emulator.project)
    yield store
    store.close()


@pytest.fixture
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path_factory.mktemp("store") / "state.db")
    yield store
    store.close()
