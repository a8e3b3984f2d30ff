"""SqliteStore at its edges: how long it waits for a lock by default, and old rows without a claim."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from bot.errors import StoreUnavailable
from bot.store import ClaimOutcome
from bot.store.sqlite import SqliteStore

JOB = "acme-ml/31"


def test_by_default_a_locked_database_is_waited_for_five_seconds(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = SqliteStore(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="locked"):
            store.claim_post(JOB, owner="a", lease_seconds=30)
        assert 4.8 < time.monotonic() - started < 5.9
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.claim_post(JOB, owner="a", lease_seconds=30) is ClaimOutcome.WON
    store.close()


def test_a_row_with_an_owner_but_no_lease_can_be_claimed(tmp_path: Path) -> None:
    """A claim without an expiry time (written by hand, say) holds nothing."""
    path = tmp_path / "state.db"
    SqliteStore(path).close()
    raw = sqlite3.connect(path)
    raw.execute("INSERT INTO alerts (job_key, claim_owner, updated_at) VALUES (?, 'x', 0)", (JOB,))
    raw.commit()
    raw.close()
    store = SqliteStore(path)
    try:
        assert store.claim_post(JOB, owner="y", lease_seconds=30) is ClaimOutcome.WON
        record = store.get_alert(JOB)
        assert record is not None and record.post_in_doubt is True  # x never settled its claim
    finally:
        store.close()
