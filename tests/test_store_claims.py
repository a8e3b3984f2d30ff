"""bot/store/claims.py: the claim rules both stores apply, as pure decisions on stored states."""

from __future__ import annotations

import dataclasses

import pytest

from bot.store import ClaimOutcome, claims
from bot.store.claims import RERUN_CLAIMED, RERUN_DONE, PostClaim, RerunClaim

NOW = 1_800_000_000.0


def held(owner: str = "a", *, expires: float = NOW + 30, in_doubt: bool = False) -> PostClaim:
    return PostClaim(owner=owner, expires=expires, in_doubt=in_doubt)


# ------------------------------------------------------------------------------------------ claim_post


def test_a_blank_job_is_won_with_a_lease_and_no_doubt() -> None:
    outcome, claim = claims.claim_post(PostClaim(), owner="a", now=NOW, lease_seconds=30)
    assert outcome is ClaimOutcome.WON
    assert claim == PostClaim(posted=False, owner="a", expires=NOW + 30, in_doubt=False)


def test_a_posted_job_is_posted_for_everyone_and_nothing_is_written() -> None:
    for current in (PostClaim(posted=True), PostClaim(posted=True, in_doubt=True), PostClaim(posted=True, owner="a")):
        for owner in ("a", "b"):
            assert claims.claim_post(current, owner=owner, now=NOW, lease_seconds=30) == (ClaimOutcome.POSTED, None)


@pytest.mark.parametrize(
    ("expires", "outcome"),
    [
        (NOW + 0.001, ClaimOutcome.BUSY),
        (NOW + 1e6, ClaimOutcome.BUSY),
        (NOW, ClaimOutcome.WON),  # the lease ends at its expiry time exactly
        (NOW - 0.001, ClaimOutcome.WON),
        (None, ClaimOutcome.WON),  # a claim without a lease holds nothing
    ],
)
def test_a_rivals_claim_holds_until_its_lease_ends(expires: float | None, outcome: ClaimOutcome) -> None:
    current = PostClaim(owner="a", expires=expires)
    assert claims.claim_post(current, owner="b", now=NOW, lease_seconds=30)[0] is outcome
    assert claims.lease_holds(current, NOW) is (outcome is ClaimOutcome.BUSY)


def test_busy_writes_nothing() -> None:
    assert claims.claim_post(held("a"), owner="b", now=NOW, lease_seconds=30) == (ClaimOutcome.BUSY, None)


def test_taking_over_an_expired_claim_puts_the_alert_in_doubt() -> None:
    outcome, claim = claims.claim_post(held("a", expires=NOW - 1), owner="b", now=NOW, lease_seconds=45)
    assert outcome is ClaimOutcome.WON
    assert claim == PostClaim(owner="b", expires=NOW + 45, in_doubt=True)


def test_the_holder_renews_its_own_claim_even_unexpired_and_without_doubt() -> None:
    for expires in (NOW + 10, NOW - 10):
        outcome, claim = claims.claim_post(held("a", expires=expires), owner="a", now=NOW, lease_seconds=30)
        assert outcome is ClaimOutcome.WON
        assert claim == PostClaim(owner="a", expires=NOW + 30, in_doubt=False)


def test_an_earlier_doubt_carries_over_to_the_next_claim() -> None:
    released_in_doubt = PostClaim(in_doubt=True)
    assert claims.claim_post(released_in_doubt, owner="b", now=NOW, lease_seconds=30) == (
        ClaimOutcome.WON,
        PostClaim(owner="b", expires=NOW + 30, in_doubt=True),
    )
    renewed = claims.claim_post(held("a", in_doubt=True), owner="a", now=NOW, lease_seconds=5)[1]
    assert renewed == PostClaim(owner="a", expires=NOW + 5, in_doubt=True)


def test_the_lease_is_counted_from_now() -> None:
    for lease in (0.5, 60.0, 3600.0):
        claim = claims.claim_post(PostClaim(), owner="a", now=NOW + 7, lease_seconds=lease)[1]
        assert claim is not None and claim.expires == NOW + 7 + lease


# ------------------------------------------------------------------------------------------ release_post


def test_the_holder_releases_cleanly() -> None:
    assert claims.release_post(held("a"), owner="a", in_doubt=False) == PostClaim()


def test_a_release_in_doubt_marks_the_alert() -> None:
    assert claims.release_post(held("a"), owner="a", in_doubt=True) == PostClaim(in_doubt=True)


def test_a_clean_release_keeps_an_earlier_doubt() -> None:
    assert claims.release_post(held("a", in_doubt=True), owner="a", in_doubt=False) == PostClaim(in_doubt=True)


@pytest.mark.parametrize(
    "current",
    [
        PostClaim(),  # a blank job
        held("a"),  # someone else's claim
        held("a", expires=NOW - 60),  # someone else's expired claim
        PostClaim(in_doubt=True),  # released already
        PostClaim(posted=True),
        PostClaim(posted=True, owner="b", expires=NOW + 30),  # posted wins, whoever holds a claim
    ],
)
def test_a_release_by_anyone_but_the_holder_of_an_unposted_claim_writes_nothing(current: PostClaim) -> None:
    assert claims.release_post(current, owner="b", in_doubt=True) is None
    assert claims.release_post(current, owner="b", in_doubt=False) is None


# ------------------------------------------------------------------------------------------ record_post


@pytest.mark.parametrize("current", [PostClaim(), held("a"), held("b", in_doubt=True), PostClaim(in_doubt=True)])
def test_recording_a_post_settles_the_claim_and_the_doubt(current: PostClaim) -> None:
    assert claims.record_post(current) == PostClaim(posted=True, owner=None, expires=None, in_doubt=False)


def test_the_first_recorded_post_stays() -> None:
    assert claims.record_post(PostClaim(posted=True)) is None


# ------------------------------------------------------------------------------------------ reruns


def test_a_rerun_is_claimed_once() -> None:
    assert claims.claim_rerun(None, user="U1") == RerunClaim(state=RERUN_CLAIMED, by="U1")
    assert claims.claim_rerun(RERUN_CLAIMED, user="U1") is None  # not even by the same person
    assert claims.claim_rerun(RERUN_DONE, user="U2") is None


def test_only_an_unfinished_rerun_claim_is_released() -> None:
    assert claims.release_rerun(RERUN_CLAIMED) == RerunClaim()
    assert claims.release_rerun(RERUN_DONE) is None
    assert claims.release_rerun(None) is None


def test_the_states_are_the_stored_words() -> None:
    assert (RERUN_CLAIMED, RERUN_DONE) == ("claimed", "done")
    assert RerunClaim() == RerunClaim(state=None, by=None)
    assert PostClaim() == PostClaim(posted=False, owner=None, expires=None, in_doubt=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        PostClaim().posted = True  # type: ignore[misc]
