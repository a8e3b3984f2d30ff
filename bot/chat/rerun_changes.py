"""The spec changes a rerun can make (RERUN_CHANGES in bot.diagnosis.knowledge), each judged against the failed
job: it returns the settings it proposes and what it does, or None and why it does not apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as _replace

from bot.chat.rerun_machines import LARGER_ACCELERATORS, MACHINE_FOR, N1_GPUS, gpu_text, more_memory_machine
from bot.chat.rerun_settings import RerunSettings
from bot.chat.rerun_spec import BATCH_SIZE_FLAGS, BatchArg


@dataclass(frozen=True)
class Situation:
    failed: RerunSettings
    regions: list[str]
    offered_in: Mapping[str, Sequence[str]]
    checkpoint_dir: str | None
    batch: BatchArg | None


def _halve_batch_size(s: Situation) -> tuple[RerunSettings | None, str]:
    batch = s.batch
    if batch is None:
        flags = ", ".join(BATCH_SIZE_FLAGS)
        return None, f"The job's container args set no per-device batch size ({flags}): lower it in the code."
    if batch.value < 2:
        return None, f"The job's args set {batch.text()}: the per-device batch size cannot be halved."
    half = batch.value // 2
    return _replace(s.failed, batch_size=half), (
        f"The job's args set {batch.text()}: the rerun halves the per-device batch size to {batch.text(half)}, "
        "so activations take about half the device memory. Keep the effective batch size with gradient "
        "accumulation if the code supports it."
    )


def _larger_accelerator_change(s: Situation) -> tuple[RerunSettings | None, str]:
    failed = s.failed
    larger = _larger_accelerator(failed)
    if larger is None:
        if not failed.accelerator_type:
            return None, "The job has no accelerator to replace."
        return None, (
            f"No accelerator with more memory per device than {gpu_text(failed.accelerator_type)} is known here: "
            "shard the model (FSDP, ZeRO) instead."
        )
    before, after = failed.accelerator_type or "", larger.accelerator_type or ""
    return larger, f"{gpu_text(after)} on {larger.machine_type} has more memory per device than {gpu_text(before)}."


def _more_memory_machine_change(s: Situation) -> tuple[RerunSettings | None, str]:
    machine = more_memory_machine(s.failed.machine_type)
    if machine is None:
        return None, f"No machine type with more memory than {s.failed.machine_type or 'the default'} is known here."
    return _replace(s.failed, machine_type=machine), (
        f"The replica ran out of RAM: {machine} has more memory than {s.failed.machine_type}."
    )


def _other_region(s: Situation) -> tuple[RerunSettings | None, str]:
    failed = s.failed
    accelerator = failed.accelerator_type
    offering = s.offered_in.get(accelerator) if accelerator else None
    others = [r for r in s.regions if r != failed.region]
    fits = [r for r in others if offering is None or r in offering]
    if fits:
        where = f" that offers {accelerator}" if offering is not None else ""
        return _replace(failed, region=fits[0]), (
            f"{fits[0]} is another configured region{where}; quota and capacity are per region and per "
            "accelerator type."
        )
    if not others:
        return None, "No other region is configured (`regions` in the routing file)."
    listed = ", ".join((offering or ())[:8])
    return None, (
        f"No other configured region offers {accelerator} (regions that do: {listed}; add one to `regions` in the "
        "routing file)."
    )


def _fewer_accelerators(s: Situation) -> tuple[RerunSettings | None, str]:
    failed = s.failed
    if not failed.accelerator_type or failed.accelerator_count < 2:
        return None, "The job asks for at most one accelerator per replica: there is nothing to halve."
    fewer = _with_accelerators(failed, failed.accelerator_type, failed.accelerator_count // 2)
    return fewer, (
        f"{fewer.accelerator_count} accelerators per replica instead of {failed.accelerator_count}"
        f" (on {fewer.machine_type}), so the request fits a smaller quota."
    )


def _resume_from_checkpoint(s: Situation) -> tuple[RerunSettings | None, str]:
    if not s.checkpoint_dir:
        return None, no_checkpoint_text()
    base = s.checkpoint_dir.rstrip("/")
    return s.failed, (
        f"The new job keeps the output directory {base}, so AIP_CHECKPOINT_DIR is {base}/checkpoints/ again: "
        "code that resumes from the latest checkpoint there picks up where the job stopped."
    )


def no_checkpoint_text() -> str:
    return (
        "The job has no checkpoint directory (baseOutputDirectory is not set), so the rerun starts from scratch "
        "unless the code saves checkpoints somewhere else."
    )


CHANGES = {
    "halve_batch_size": _halve_batch_size,
    "larger_accelerator": _larger_accelerator_change,
    "more_memory_machine": _more_memory_machine_change,
    "other_region": _other_region,
    "fewer_accelerators": _fewer_accelerators,
    "resume_from_checkpoint": _resume_from_checkpoint,
}


def _larger_accelerator(failed: RerunSettings) -> RerunSettings | None:
    if not failed.accelerator_type:
        return None
    for candidate in LARGER_ACCELERATORS.get(failed.accelerator_type, ()):
        count = failed.accelerator_count
        if candidate in N1_GPUS:
            if failed.machine_type and failed.machine_type.startswith("n1-"):
                return _replace(failed, accelerator_type=candidate)
            continue
        if (candidate, count) in MACHINE_FOR:
            return _with_accelerators(failed, candidate, count)
    return None


def _with_accelerators(failed: RerunSettings, accelerator: str, count: int) -> RerunSettings:
    machine = MACHINE_FOR.get((accelerator, count), failed.machine_type)
    return _replace(failed, machine_type=machine, accelerator_type=accelerator, accelerator_count=count)
