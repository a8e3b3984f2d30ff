"""The claim rules, written once for every store: who may post a job's one message, when a lease runs out, when
an alert is in doubt, what a release and a recorded post leave behind, and who may start a job's rerun.

Pure decisions on plain values. A store reads the job's stored state, asks one of these functions, and writes
the answer back atomically: SqliteStore inside one BEGIN IMMEDIATE transaction, FirestoreStore as a write that
holds only if the document's update time is still that of its read. An answer of None means "write nothing".
A job the store has never seen has the blank post state, `PostClaim()`, and the rerun state None.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.store import ClaimOutcome

RERUN_CLAIMED = "claimed"  # someone is starting the rerun
RERUN_DONE = "done"  # the rerun was submitted: for good


@dataclass(frozen=True)
class PostClaim:
    """What a store keeps about the right to post a job's message."""

    posted: bool = False  # a message is recorded for the job: nobody claims again
    owner: str | None = None  # who holds the unposted claim, if anyone
    expires: float | None = None  # when that claim's lease runs out (epoch seconds)
    in_doubt: bool = False  # an earlier claim ended unsettled: Slack may hold its message


@dataclass(frozen=True)
class RerunClaim:
    """What a claim or its release stores about a job's rerun (a finished rerun also stores its new job's id,
    which is never set while the state is None or RERUN_CLAIMED)."""

    state: str | None = None  # None, RERUN_CLAIMED or RERUN_DONE
    by: str | None = None  # who claimed it


def lease_holds(claim: PostClaim, now: float) -> bool:
    """Whether the claim's lease still runs at `now` (it ends at its expiry time exactly)."""
    return claim.expires is not None and claim.expires > now


def claim_post(
    current: PostClaim, *, owner: str, now: float, lease_seconds: float
) -> tuple[ClaimOutcome, PostClaim | None]:
    """May `owner` post now? WON with the state to store, or POSTED / BUSY with nothing to store.

    The holder of a claim may claim again, which renews its lease. Another owner's claim holds until its lease
    ends; whoever takes an expired claim over puts the alert in doubt, since its owner never settled it and its
    message may be in Slack. A doubt stays until a post is recorded.
    """
    if current.posted:
        return ClaimOutcome.POSTED, None
    rival = current.owner not in (None, owner)
    if rival and lease_holds(current, now):
        return ClaimOutcome.BUSY, None
    claim = PostClaim(owner=owner, expires=now + lease_seconds, in_doubt=current.in_doubt or rival)
    return ClaimOutcome.WON, claim


def release_post(current: PostClaim, *, owner: str, in_doubt: bool) -> PostClaim | None:
    """Drop `owner`'s unposted claim (None, nothing to store, if it holds none). `in_doubt`: Slack may hold the
    owner's message; a clean release keeps an earlier doubt."""
    if current.posted or current.owner != owner:
        return None
    return PostClaim(in_doubt=current.in_doubt or in_doubt)


def record_post(current: PostClaim) -> PostClaim | None:
    """The state once a message is recorded: posted, with no claim and no doubt left. None if a message is
    recorded already: the first one stays the job's message."""
    if current.posted:
        return None
    return PostClaim(posted=True)


def claim_rerun(state: str | None, *, user: str) -> RerunClaim | None:
    """The rerun claim to store if `user` may start the job's rerun, given its stored rerun state: only if
    nobody has claimed it (not even `user`) and none was done. None: refused, nothing to store."""
    if state is not None:
        return None
    return RerunClaim(state=RERUN_CLAIMED, by=user)


def release_rerun(state: str | None) -> RerunClaim | None:
    """Drop an unfinished rerun claim (the blank state to store); a finished rerun stays (None)."""
    if state != RERUN_CLAIMED:
        return None
    return RerunClaim()
