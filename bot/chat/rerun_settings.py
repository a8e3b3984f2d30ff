"""The editable part of a rerun (RerunSettings) and the confirmation modal's fields: parsing what a person
submitted (`parse_settings`, which raises RerunInputError naming each invalid field), the modal's initial values,
the accelerator menu and the diff against the failed job.

The editable settings are the primary pool's machine type and accelerator (applied to every pool that had
the same machine spec, so a homogeneous cluster stays homogeneous), the replica count of the worker pool
(pool 1 in a distributed job, else pool 0), the region, the per-device batch size when the container args
set one (bot.chat.rerun_spec.BATCH_SIZE_FLAGS; `--flag=N` or `--flag N`) and, for a job on Spot capacity,
whether to keep Spot.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.chat.rerun_machines import FIXED_GPU_MACHINES
from bot.errors import BotError
from bot.gcp.job_resource import ACCELERATOR_TYPES
from bot.jobs.reference import REGION

if TYPE_CHECKING:
    from bot.chat.rerun_spec import BatchArg, PoolSummary


NO_ACCELERATOR = "none"


MAX_ACCELERATORS = 16


MAX_REPLICAS = 1000


MAX_BATCH_SIZE = 1_000_000


CAPACITY_SPOT = "spot"


CAPACITY_STANDARD = "standard"


FIELD_REGION = "region"


FIELD_MACHINE_TYPE = "machine_type"


FIELD_ACCELERATOR_TYPE = "accelerator_type"


FIELD_ACCELERATOR_COUNT = "accelerator_count"


FIELD_REPLICA_COUNT = "replica_count"


FIELD_BATCH_SIZE = "batch_size"


FIELD_CAPACITY = "capacity"


_MACHINE_TYPE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")


_ACCELERATOR_NAME = re.compile(r"[A-Z][A-Z0-9_]{1,60}")


class RerunInputError(BotError):
    """The modal's values are invalid; `errors` maps a field name to what is wrong with it."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{name}: {problem}" for name, problem in errors.items()))


@dataclass(frozen=True)
class RerunSettings:
    """The editable part of a rerun. batch_size / spot None: as the failed job (see RerunPlan.resolve)."""

    region: str
    machine_type: str | None
    accelerator_type: str | None  # None: no accelerator
    accelerator_count: int
    replica_count: int
    batch_size: int | None = None  # the per-device batch size the container args set
    spot: bool | None = None  # Spot capacity


def parse_settings(values: Mapping[str, str | None], *, regions: Sequence[str]) -> RerunSettings:
    """The settings a person chose in the modal (field name -> submitted value). The batch size and capacity
    are None when the modal had no such input (RerunPlan.resolve takes them from the failed job).

    Raises:
        RerunInputError: naming each invalid field.
    """
    errors: dict[str, str] = {}
    region = (values.get(FIELD_REGION) or "").strip()
    if not REGION.fullmatch(region) or (regions and region not in regions):
        errors[FIELD_REGION] = "Choose one of the offered regions."
    machine = (values.get(FIELD_MACHINE_TYPE) or "").strip().lower()
    if not _MACHINE_TYPE.fullmatch(machine) or len(machine) > 64:
        errors[FIELD_MACHINE_TYPE] = "Enter a machine type such as n1-standard-8 or a2-highgpu-1g."
    accelerator = (values.get(FIELD_ACCELERATOR_TYPE) or NO_ACCELERATOR).strip()
    if accelerator != NO_ACCELERATOR and not _ACCELERATOR_NAME.fullmatch(accelerator):
        errors[FIELD_ACCELERATOR_TYPE] = "Choose an accelerator type."
    count = _int(values.get(FIELD_ACCELERATOR_COUNT), default=0)
    if count is None or not 0 <= count <= MAX_ACCELERATORS:
        errors[FIELD_ACCELERATOR_COUNT] = f"Enter a whole number from 0 to {MAX_ACCELERATORS}."
    elif accelerator == NO_ACCELERATOR and count:
        errors[FIELD_ACCELERATOR_COUNT] = "Without an accelerator type the count must be 0."
    elif accelerator != NO_ACCELERATOR and not count:
        errors[FIELD_ACCELERATOR_COUNT] = "Enter how many accelerators each replica gets (at least 1)."
    replicas = _int(values.get(FIELD_REPLICA_COUNT), default=None)
    if replicas is None or not 1 <= replicas <= MAX_REPLICAS:
        errors[FIELD_REPLICA_COUNT] = f"Enter a whole number from 1 to {MAX_REPLICAS}."
    batch_size = None
    if FIELD_BATCH_SIZE in values:
        batch_size = _int(values.get(FIELD_BATCH_SIZE), default=None)
        if batch_size is None or not 1 <= batch_size <= MAX_BATCH_SIZE:
            errors[FIELD_BATCH_SIZE] = f"Enter a whole number from 1 to {MAX_BATCH_SIZE}."
    spot = None
    if FIELD_CAPACITY in values:
        capacity = (values.get(FIELD_CAPACITY) or "").strip()
        if capacity not in (CAPACITY_SPOT, CAPACITY_STANDARD):
            errors[FIELD_CAPACITY] = "Choose Spot or standard capacity."
        spot = capacity == CAPACITY_SPOT
    fixed = FIXED_GPU_MACHINES.get(machine)
    if fixed is not None and not errors.keys() & {FIELD_ACCELERATOR_TYPE, FIELD_ACCELERATOR_COUNT}:
        if (accelerator, count) != fixed:
            errors[FIELD_ACCELERATOR_TYPE] = f"{machine} comes with {fixed[1]}× {fixed[0]}."
    if errors:
        raise RerunInputError(errors)
    assert count is not None and replicas is not None
    return RerunSettings(
        region=region,
        machine_type=machine,
        accelerator_type=None if accelerator == NO_ACCELERATOR else accelerator,
        accelerator_count=count if accelerator != NO_ACCELERATOR else 0,
        replica_count=replicas,
        batch_size=batch_size,
        spot=spot,
    )


def settings_values(settings: RerunSettings) -> dict[str, str]:
    """The modal's initial values for `settings` (the inverse of parse_settings)."""
    values = {
        FIELD_REGION: settings.region,
        FIELD_MACHINE_TYPE: settings.machine_type or "",
        FIELD_ACCELERATOR_TYPE: settings.accelerator_type or NO_ACCELERATOR,
        FIELD_ACCELERATOR_COUNT: str(settings.accelerator_count),
        FIELD_REPLICA_COUNT: str(settings.replica_count),
    }
    if settings.batch_size is not None:
        values[FIELD_BATCH_SIZE] = str(settings.batch_size)
    if settings.spot is not None:
        values[FIELD_CAPACITY] = CAPACITY_SPOT if settings.spot else CAPACITY_STANDARD
    return values


def accelerator_choices(current: str | None) -> list[str]:
    """What the accelerator menu offers: none, every known type, and the job's own (even if unknown here)."""
    known = [name for number, name in sorted(ACCELERATOR_TYPES.items()) if number]
    extra = [current] if current and current not in known else []
    return [NO_ACCELERATOR, *known, *extra]


def diff_lines(before: RerunSettings, after: RerunSettings, *, batch: BatchArg | None = None) -> list[str]:
    """One line per changed setting: "machine type: a2-highgpu-1g → a2-ultragpu-1g", "args: --batch-size=512 →
    --batch-size=256" (with `batch`, the flag the args use), "capacity: Spot → standard (on-demand)"."""
    lines = []
    if after.region != before.region:
        lines.append(f"region: {before.region} → {after.region}")
    if after.machine_type != before.machine_type:
        lines.append(f"machine type: {before.machine_type or 'unset'} → {after.machine_type or 'unset'}")
    if (after.accelerator_type, after.accelerator_count) != (before.accelerator_type, before.accelerator_count):
        lines.append(f"accelerators: {accelerator_text(before)} → {accelerator_text(after)}")
    if after.replica_count != before.replica_count:
        lines.append(f"replicas: {before.replica_count} → {after.replica_count}")
    if None not in (before.batch_size, after.batch_size) and after.batch_size != before.batch_size:
        if batch is not None:
            lines.append(f"args: {batch.text(before.batch_size)} → {batch.text(after.batch_size)}")
        else:
            lines.append(f"per-device batch size: {before.batch_size} → {after.batch_size}")
    if None not in (before.spot, after.spot) and after.spot != before.spot:
        lines.append(f"capacity: {_capacity(before.spot)} → {_capacity(after.spot)}")
    return lines


def _capacity(spot: bool | None) -> str:
    return "Spot" if spot else "standard (on-demand)"


def accelerator_text(settings: RerunSettings | PoolSummary) -> str:
    if not settings.accelerator_type or not settings.accelerator_count:
        return "none"
    return f"{settings.accelerator_count}× {settings.accelerator_type}"


def _int(value: str | None, *, default: int | None) -> int | None:
    if value is None or not str(value).strip():
        return default
    text = str(value).strip()
    return int(text) if re.fullmatch(r"[0-9]{1,6}", text) else None
