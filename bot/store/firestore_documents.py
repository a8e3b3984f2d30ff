"""How FirestoreStore lays an alert out in its job document: the blank alert, document ids, the claim fields and
the AlertRecord read back (pure: no I/O; the layout itself is described in bot/store/firestore.py)."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import quote

from bot.store import AlertRecord
from bot.store.claims import PostClaim, RerunClaim

BLANK_ALERT: dict[str, Any] = {
    "posted": False,
    "channel": None,
    "message_ts": None,
    "diagnosis_json": None,
    "fingerprint": None,
    "job_json": "{}",
    "acknowledged_by": None,
    "acknowledged_at": None,
    "rerun_state": None,
    "rerun_by": None,
    "rerun_job_id": None,
    "claim_owner": None,
    "claim_expires": None,
    "post_in_doubt": False,
}
MAX_DOC_ID_CHARS = 500  # well under Firestore's 1,500-byte limit (encoded ids are ASCII)


def doc_id(key: str) -> str:
    """A Firestore document id for any non-empty key (never contains "/", ".", or "__"; at most 500 characters).

    Long keys become "!sha256!<hex>": "!" never appears in a percent-encoded key, so these cannot collide.
    """
    if not key:
        raise ValueError("an empty key has no document id")
    encoded = quote(key, errors="surrogatepass").replace("/", "%2F").replace(".", "%2E").replace("_", "%5F")
    if len(encoded) <= MAX_DOC_ID_CHARS:
        return encoded
    return "!sha256!" + hashlib.sha256(key.encode(errors="surrogatepass")).hexdigest()  # UTF-8


def post_claim(data: dict[str, Any] | None) -> PostClaim:
    if data is None:
        return PostClaim()
    return PostClaim(
        posted=bool(data.get("posted")),
        owner=data.get("claim_owner"),
        expires=data.get("claim_expires"),
        in_doubt=bool(data.get("post_in_doubt")),
    )


def post_fields(claim: PostClaim) -> dict[str, Any]:
    return {
        "posted": claim.posted,
        "claim_owner": claim.owner,
        "claim_expires": claim.expires,
        "post_in_doubt": claim.in_doubt,
    }


def rerun_state(data: dict[str, Any] | None) -> str | None:
    return None if data is None else data.get("rerun_state")


def rerun_fields(claim: RerunClaim) -> dict[str, Any]:
    return {"rerun_state": claim.state, "rerun_by": claim.by}


def alert_record(data: dict[str, Any] | None) -> AlertRecord | None:
    if data is None:
        return None
    diagnosis = data.get("diagnosis_json")
    return AlertRecord(
        job_key=data["job_key"],
        channel=data.get("channel"),
        message_ts=data.get("message_ts"),
        posted=bool(data.get("posted")),
        diagnosis=json.loads(diagnosis) if diagnosis is not None else None,
        fingerprint=data.get("fingerprint"),
        job=json.loads(data.get("job_json") or "{}"),
        acknowledged_by=data.get("acknowledged_by"),
        acknowledged_at=data.get("acknowledged_at"),
        rerun_state=data.get("rerun_state"),
        rerun_by=data.get("rerun_by"),
        rerun_job_id=data.get("rerun_job_id"),
        post_in_doubt=bool(data.get("post_in_doubt")),
        updated_at=data["updated_at"],  # every write sets it
    )
