"""What the store keeps of a posted alert, typed: the diagnosis and the context it was rendered from, who may rerun
it, and the state of its card in the thread. Re-rendering after an acknowledgement, a rerun or its outcome reads it
back without fetching anything (the store's AlertRecord carries it as JSON in `diagnosis`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.models import Diagnosis
from bot.render.alert_context import AlertContext
from bot.render.block_kit import message_digest
from bot.store import AlertRecord


class CardState(BaseModel):
    """The full card posted in the alert's thread: its ts and the digest of what it shows."""

    model_config = ConfigDict(frozen=True)

    ts: str
    fingerprint: str

    @classmethod
    def of(cls, ts: str | None, card: dict) -> CardState | None:
        return cls(ts=ts, fingerprint=message_digest(card)) if ts else None


class StoredAlert(BaseModel):
    model_config = ConfigDict(frozen=True)

    diagnosis: Diagnosis
    context: AlertContext
    rerun_allowed: list[str] = Field(default_factory=list)
    card: CardState | None = None

    @classmethod
    def of(cls, record: AlertRecord) -> StoredAlert | None:
        """The stored alert of a record (None: nothing posted yet, or not a failure alert's record)."""
        try:
            return cls.model_validate(record.diagnosis) if record.diagnosis else None
        except ValidationError:
            return None

    def to_json(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        if data.get("card") is None:
            del data["card"]  # an alert without a card in its thread stays so
        return data

    def with_record_state(self, record: AlertRecord) -> AlertContext:
        """The context with the record's acknowledgement and rerun state (the store's, not the rendering's)."""
        return with_record_state(self.context, record)


def with_record_state(context: AlertContext, record: AlertRecord) -> AlertContext:
    """The context with the record's acknowledgement and rerun state."""
    acknowledged_at = datetime.fromtimestamp(record.acknowledged_at).astimezone() if record.acknowledged_at else None
    return context.model_copy(
        update={
            "acknowledged_by": record.acknowledged_by,
            "acknowledged_at": acknowledged_at,
            "rerun_by": record.rerun_by if record.rerun_state == "done" else None,
            "rerun_job_id": record.rerun_job_id if record.rerun_state == "done" else None,
        }
    )
