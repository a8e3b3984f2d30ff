"""What a Rerun will create: the plan shown in the confirmation modal, and the CustomJob body sent on submit.

Pure functions over the failed job's REST dict (as `JobsClient.get_job_raw` returns it) and its Diagnosis.

The editable settings are the primary pool's machine type and accelerator (applied to every pool that had
the same machine spec, so a homogeneous cluster stays homogeneous), the replica count of the worker pool
(pool 1 in a distributed job, else pool 0) and the region. What the diagnosis suggests:
- preemption: the same spec (warn when there is no checkpoint directory: the rerun starts from scratch);
- quota_exhausted (quota or a capacity stockout): another configured region, else fewer accelerators;
- accelerator_oom: an accelerator with more memory, with the machine type it comes on;
- host_oom: a machine type with more memory per vCPU.
Deterministic failures (OOM, NaN, IAM, code errors) warn that an unchanged rerun will fail the same way.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.errors import BotError
from bot.job_reference import REGION
from bot.job_resource import ACCELERATOR_TYPES, job_info_from_rest, rerun_body
from bot.models import Diagnosis

LABEL_RERUN_OF = "rerun-of"
LABEL_RERUN_BY = "rerun-by"
NO_ACCELERATOR = "none"
MAX_ACCELERATORS = 16
MAX_REPLICAS = 1000

FIELD_REGION = "region"
FIELD_MACHINE_TYPE = "machine_type"
FIELD_ACCELERATOR_TYPE = "accelerator_type"
FIELD_ACCELERATOR_COUNT = "accelerator_count"
FIELD_REPLICA_COUNT = "replica_count"

#: Failures that come from the job itself: the same spec fails the same way.
DETERMINISTIC_CLASSES = frozenset(
    {
        "accelerator_oom",
        "host_oom",
        "numerical_instability",
        "permission_denied",
        "application_error",
        "container_startup",
    }
)
_WHY_DETERMINISTIC = {
    "accelerator_oom": "the model does not fit in the accelerator's memory",
    "host_oom": "the replica needs more RAM than the machine has",
    "numerical_instability": "the training diverges (NaN/Inf)",
    "permission_denied": "the job's service account lacks a permission",
    "application_error": "the training code raises an exception",
    "container_startup": "the container cannot start",
}

# Machine types whose accelerators are fixed by the type: machine -> (accelerator, count).
_FIXED_GPU_MACHINES: dict[str, tuple[str, int]] = {
    **{f"a2-highgpu-{n}g": ("NVIDIA_TESLA_A100", n) for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": ("NVIDIA_TESLA_A100", 16),
    **{f"a2-ultragpu-{n}g": ("NVIDIA_A100_80GB", n) for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": ("NVIDIA_H100_80GB", n) for n in (1, 2, 4, 8)},
    "a3-megagpu-8g": ("NVIDIA_H100_MEGA_80GB", 8),
    "a3-ultragpu-8g": ("NVIDIA_H200_141GB", 8),
    **{f"g2-standard-{n}": ("NVIDIA_L4", 1) for n in (4, 8, 12, 16, 32)},
    "g2-standard-24": ("NVIDIA_L4", 2),
    "g2-standard-48": ("NVIDIA_L4", 4),
    "g2-standard-96": ("NVIDIA_L4", 8),
}
# The machine type to suggest for an accelerator and count (the first one listed above wins).
_MACHINE_FOR: dict[tuple[str, int], str] = {
    **{spec: machine for machine, spec in reversed(_FIXED_GPU_MACHINES.items())},
    ("NVIDIA_L4", 1): "g2-standard-8",
}
_N1_GPUS = frozenset(
    {"NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P4", "NVIDIA_TESLA_T4"}
)
# Accelerators with more memory per device, best first, and memory in GB for the explanation.
_LARGER: dict[str, tuple[str, ...]] = {
    "NVIDIA_TESLA_K80": ("NVIDIA_TESLA_T4",),
    "NVIDIA_TESLA_P4": ("NVIDIA_TESLA_T4",),
    "NVIDIA_TESLA_T4": ("NVIDIA_L4", "NVIDIA_TESLA_A100"),
    "NVIDIA_TESLA_P100": ("NVIDIA_L4", "NVIDIA_TESLA_A100"),
    "NVIDIA_TESLA_V100": ("NVIDIA_TESLA_A100",),
    "NVIDIA_L4": ("NVIDIA_TESLA_A100",),
    "NVIDIA_TESLA_A100": ("NVIDIA_A100_80GB",),
    "NVIDIA_A100_80GB": ("NVIDIA_H200_141GB",),
    "NVIDIA_H100_80GB": ("NVIDIA_H200_141GB",),
    "NVIDIA_H100_MEGA_80GB": ("NVIDIA_H200_141GB",),
}
_MEMORY_GB = {
    "NVIDIA_TESLA_K80": 12,
    "NVIDIA_TESLA_P4": 8,
    "NVIDIA_TESLA_T4": 16,
    "NVIDIA_TESLA_P100": 16,
    "NVIDIA_TESLA_V100": 16,
    "NVIDIA_L4": 24,
    "NVIDIA_TESLA_A100": 40,
    "NVIDIA_A100_80GB": 80,
    "NVIDIA_H100_80GB": 80,
    "NVIDIA_H100_MEGA_80GB": 80,
    "NVIDIA_H200_141GB": 141,
}
_MORE_MEMORY_FAMILIES = ("n1", "n2", "n2d", "e2")
_HIGHMEM_SIZES = {
    "n1": (2, 4, 8, 16, 32, 64, 96),
    "n2": (2, 4, 8, 16, 32, 48, 64, 80, 96, 128),
    "n2d": (2, 4, 8, 16, 32, 48, 64, 80, 96),
    "e2": (2, 4, 8, 16),
}
_MACHINE_TYPE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
_ACCELERATOR_NAME = re.compile(r"[A-Z][A-Z0-9_]{1,60}")
_LABEL_INVALID = re.compile(r"[^a-z0-9_-]")
# Fields that name regional resources: moving the job to another region may break them.
_REGIONAL_FIELDS = {
    "network": "network",
    "reservedIpRanges": "reserved IP ranges",
    "persistentResourceId": "persistent resource",
    "tensorboard": "TensorBoard instance",
    "experiment": "experiment",
    "pscInterfaceConfig": "PSC interface",
}


class RerunInputError(BotError):
    """The modal's values are invalid; `errors` maps a field name to what is wrong with it."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{name}: {problem}" for name, problem in errors.items()))


@dataclass(frozen=True)
class RerunSettings:
    """The editable part of a rerun."""

    region: str
    machine_type: str | None
    accelerator_type: str | None  # None: no accelerator
    accelerator_count: int
    replica_count: int


@dataclass(frozen=True)
class PoolSummary:
    index: int
    machine_type: str | None
    accelerator_type: str | None
    accelerator_count: int
    replica_count: int
    image: str | None


@dataclass(frozen=True)
class RerunPlan:
    """Everything the confirmation modal shows, and what the submit needs to check the edits."""

    job_key: str
    project: str
    job_id: str
    display_name: str
    failure_class: str
    diagnosis_title: str
    confidence: float
    pools: list[PoolSummary]
    edited_pools: list[int]  # pools whose machine spec follows the edits
    replica_pool: int  # the pool whose replica count is edited
    scheduling: list[str]  # "Spot", "timeout 7d", ...
    service_account: str | None
    checkpoint_dir: str | None  # baseOutputDirectory.outputUriPrefix
    failed: RerunSettings
    suggested: RerunSettings
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)  # what the region menu offers

    @property
    def changes(self) -> list[str]:
        return diff_lines(self.failed, self.suggested)


# ------------------------------------------------------------------------------------------------ planning


def plan_rerun(raw: dict, diagnosis: Diagnosis, *, job_key: str, regions: Sequence[str]) -> RerunPlan:
    """The rerun the diagnosis suggests for the failed job `raw` (a CustomJob REST dict).

    Args:
        raw: The failed CustomJob, as `JobsClient.get_job_raw` returns it (it must have its `name`).
        diagnosis: The job's stored diagnosis.
        job_key: "PROJECT/JOB_ID", for the modal's private_metadata.
        regions: The configured regions (the alternatives offered for quota and capacity failures).

    Raises:
        ValueError: `raw` is not a CustomJob with a name and at least one worker pool.
    """
    info = job_info_from_rest(raw)
    if not (info.project and info.region and info.job_id):
        raise ValueError("the failed job has no resource name")
    specs = _pool_specs(raw)
    if not specs:
        raise ValueError("the failed job has no worker pools")
    pools = [_pool_summary(i, spec) for i, spec in enumerate(specs)]
    primary = pools[0]
    edited = [p.index for p in pools if _machine_key(p) == _machine_key(primary) and _non_empty(specs[p.index])]
    replica_pool = 1 if len(pools) > 1 and _non_empty(specs[1]) else 0
    failed = RerunSettings(
        region=info.region,
        machine_type=primary.machine_type,
        accelerator_type=primary.accelerator_type,
        accelerator_count=primary.accelerator_count if primary.accelerator_type else 0,
        replica_count=pools[replica_pool].replica_count,
    )
    suggested, reasons, warnings = _suggest(
        diagnosis.failure_class, failed, regions, checkpoint=bool(info.base_output_directory)
    )
    if diagnosis.failure_class in DETERMINISTIC_CLASSES:
        warnings.append(
            f"Diagnosed as {diagnosis.failure_class}: {_WHY_DETERMINISTIC[diagnosis.failure_class]}. "
            "An unchanged rerun will fail the same way, unless the cause was fixed outside the job spec "
            "(new code under the same image tag, an IAM grant)."
        )
    warnings += regional_warnings(raw, failed.region, suggested.region)
    offered = list(dict.fromkeys([failed.region, *regions, suggested.region]))
    return RerunPlan(
        job_key=job_key,
        project=info.project,
        job_id=info.job_id,
        display_name=info.display_name or f"job {info.job_id}",
        failure_class=diagnosis.failure_class,
        diagnosis_title=diagnosis.title,
        confidence=diagnosis.confidence,
        pools=pools,
        edited_pools=edited,
        replica_pool=replica_pool,
        scheduling=_scheduling(raw),
        service_account=info.service_account,
        checkpoint_dir=info.base_output_directory,
        failed=failed,
        suggested=suggested,
        reasons=reasons,
        warnings=warnings,
        regions=offered,
    )


def _suggest(
    failure_class: str, failed: RerunSettings, regions: Sequence[str], *, checkpoint: bool
) -> tuple[RerunSettings, list[str], list[str]]:
    reasons: list[str] = []
    warnings: list[str] = []
    suggested = failed
    if failure_class == "preemption":
        reasons.append("A preemption is not caused by the job: the same spec usually runs through.")
        if not checkpoint:
            warnings.append(
                "The job has no checkpoint directory (baseOutputDirectory is not set), so the rerun starts "
                "from scratch unless the code saves checkpoints somewhere else."
            )
    elif failure_class == "quota_exhausted":
        other = next((r for r in regions if r != failed.region), None)
        if other is not None:
            suggested = _replace(failed, region=other)
            reasons.append(
                f"Quota or capacity ran out in {failed.region}; {other} is another configured region. "
                "Quota is per region and per accelerator type."
            )
        elif failed.accelerator_type and failed.accelerator_count > 1:
            suggested = _with_accelerators(failed, failed.accelerator_type, failed.accelerator_count // 2)
            reasons.append(
                f"Quota or capacity ran out in {failed.region}, and no other region is configured: "
                f"ask for {suggested.accelerator_count} accelerators per replica instead of "
                f"{failed.accelerator_count}."
            )
        else:
            reasons.append(
                "Quota or capacity ran out, and no other region is configured: rerun later, "
                "or once the quota was raised."
            )
    elif failure_class == "accelerator_oom":
        larger = _larger_accelerator(failed)
        if larger is not None:
            suggested = larger
            before, after = failed.accelerator_type or "", larger.accelerator_type or ""
            reasons.append(
                f"The model ran out of accelerator memory on {_gpu(before)}: {_gpu(after)} has more memory per device."
            )
        else:
            reasons.append(
                "No accelerator with more memory per device is known for this job: reduce the batch size, "
                "or shard the model (FSDP, ZeRO) before rerunning."
            )
    elif failure_class == "host_oom":
        machine = _more_memory_machine(failed.machine_type)
        if machine is not None:
            suggested = _replace(failed, machine_type=machine)
            reasons.append(f"The replica ran out of RAM: {machine} has more memory than {failed.machine_type}.")
        else:
            reasons.append("The replica ran out of RAM: pick a machine type with more memory.")
    return suggested, reasons, warnings


def _larger_accelerator(failed: RerunSettings) -> RerunSettings | None:
    if not failed.accelerator_type:
        return None
    for candidate in _LARGER.get(failed.accelerator_type, ()):
        count = failed.accelerator_count
        if candidate in _N1_GPUS:
            if failed.machine_type and failed.machine_type.startswith("n1-"):
                return _replace(failed, accelerator_type=candidate)
            continue
        if (candidate, count) in _MACHINE_FOR:
            return _with_accelerators(failed, candidate, count)
    return None


def _with_accelerators(failed: RerunSettings, accelerator: str, count: int) -> RerunSettings:
    machine = _MACHINE_FOR.get((accelerator, count), failed.machine_type)
    return _replace(failed, machine_type=machine, accelerator_type=accelerator, accelerator_count=count)


def _more_memory_machine(machine_type: str | None) -> str | None:
    parts = (machine_type or "").split("-")
    if len(parts) != 3 or parts[0] not in _MORE_MEMORY_FAMILIES or not parts[2].isdigit():
        return None
    family, kind, size = parts[0], parts[1], int(parts[2])
    if kind in ("standard", "highcpu"):
        return f"{family}-{'highmem' if kind == 'standard' else 'standard'}-{size}"
    if kind == "highmem":
        bigger = next((s for s in _HIGHMEM_SIZES[family] if s > size), None)
        return f"{family}-highmem-{bigger}" if bigger else None
    return None


def regional_warnings(raw: dict, failed_region: str, region: str) -> list[str]:
    """Warnings for moving the job to `region`: the resources it names that live in a region."""
    if region == failed_region:
        return []
    spec = raw.get("jobSpec") if isinstance(raw.get("jobSpec"), dict) else {}
    names = [label for key, label in _REGIONAL_FIELDS.items() if spec.get(key)]
    if raw.get("encryptionSpec"):
        names.append("KMS key (encryptionSpec)")
    if any(isinstance(p, dict) and (p.get("machineSpec") or {}).get("reservationAffinity") for p in _pool_specs(raw)):
        names.append("reservation")
    if not names:
        return []
    return [
        f"The job uses a {', '.join(names)} tied to {failed_region}: check that it exists in {region}, "
        "or the new job will fail to start."
    ]


# ------------------------------------------------------------------------------------------------ edits


def parse_settings(values: Mapping[str, str | None], *, regions: Sequence[str]) -> RerunSettings:
    """The settings a person chose in the modal (field name -> submitted value).

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
    fixed = _FIXED_GPU_MACHINES.get(machine)
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
    )


def settings_values(settings: RerunSettings) -> dict[str, str]:
    """The modal's initial values for `settings` (the inverse of parse_settings)."""
    return {
        FIELD_REGION: settings.region,
        FIELD_MACHINE_TYPE: settings.machine_type or "",
        FIELD_ACCELERATOR_TYPE: settings.accelerator_type or NO_ACCELERATOR,
        FIELD_ACCELERATOR_COUNT: str(settings.accelerator_count),
        FIELD_REPLICA_COUNT: str(settings.replica_count),
    }


def accelerator_choices(current: str | None) -> list[str]:
    """What the accelerator menu offers: none, every known type, and the job's own (even if unknown here)."""
    known = [name for number, name in sorted(ACCELERATOR_TYPES.items()) if number]
    extra = [current] if current and current not in known else []
    return [NO_ACCELERATOR, *known, *extra]


def diff_lines(before: RerunSettings, after: RerunSettings) -> list[str]:
    """One line per changed setting: "machine type: a2-highgpu-1g → a2-ultragpu-1g"."""
    lines = []
    if after.region != before.region:
        lines.append(f"region: {before.region} → {after.region}")
    if after.machine_type != before.machine_type:
        lines.append(f"machine type: {before.machine_type or 'unset'} → {after.machine_type or 'unset'}")
    if (after.accelerator_type, after.accelerator_count) != (before.accelerator_type, before.accelerator_count):
        lines.append(f"accelerators: {accelerator_text(before)} → {accelerator_text(after)}")
    if after.replica_count != before.replica_count:
        lines.append(f"replicas: {before.replica_count} → {after.replica_count}")
    return lines


def accelerator_text(settings: RerunSettings | PoolSummary) -> str:
    if not settings.accelerator_type or not settings.accelerator_count:
        return "none"
    return f"{settings.accelerator_count}× {settings.accelerator_type}"


def run_warnings(plan: RerunPlan, settings: RerunSettings) -> list[str]:
    """Warnings about what was actually submitted (shown in the thread reply)."""
    warnings = []
    if settings == plan.failed and plan.failure_class in DETERMINISTIC_CLASSES:
        warnings.append(f"This is an unchanged rerun of a {plan.failure_class} failure: it may fail the same way.")
    return warnings


# ------------------------------------------------------------------------------------------------ the body


def label_value(text: str) -> str:
    """`text` as a GCP label value: lowercase, only [a-z0-9_-], at most 63 characters."""
    return _LABEL_INVALID.sub("_", text.lower())[:63]


def create_body(raw: dict, settings: RerunSettings, *, plan: RerunPlan, user: str) -> dict:
    """The CustomJob to create: the failed job's spec (output-only fields dropped), the chosen settings,
    and the labels rerun-of=<failed job id> and rerun-by=<Slack user id, lowercased>."""
    body = rerun_body(raw, labels={LABEL_RERUN_OF: label_value(plan.job_id), LABEL_RERUN_BY: label_value(user)})
    specs = _pool_specs(body)
    for index in plan.edited_pools:
        machine = specs[index].setdefault("machineSpec", {})
        if settings.machine_type:
            machine["machineType"] = settings.machine_type
        if settings.accelerator_type:
            machine["acceleratorType"] = settings.accelerator_type
            machine["acceleratorCount"] = settings.accelerator_count
        else:
            machine.pop("acceleratorType", None)
            machine.pop("acceleratorCount", None)
    specs[plan.replica_pool]["replicaCount"] = str(settings.replica_count)
    return body


# ------------------------------------------------------------------------------------------------ helpers


def _pool_specs(job: dict) -> list[dict]:
    spec = job.get("jobSpec")
    pools = spec.get("workerPoolSpecs") if isinstance(spec, dict) else None
    return [p if isinstance(p, dict) else {} for p in pools] if isinstance(pools, list) else []


def _non_empty(spec: dict) -> bool:
    return bool(spec.get("machineSpec") or spec.get("containerSpec") or spec.get("pythonPackageSpec"))


def _pool_summary(index: int, spec: dict) -> PoolSummary:
    info = job_info_from_rest({"jobSpec": {"workerPoolSpecs": [spec]}}).worker_pools[0]
    return PoolSummary(
        index=index,
        machine_type=info.machine_type,
        accelerator_type=info.accelerator_type,
        accelerator_count=info.accelerator_count if info.accelerator_type else 0,
        replica_count=info.replica_count,
        image=info.image_uri,
    )


def _machine_key(pool: PoolSummary) -> tuple[Any, ...]:
    return pool.machine_type, pool.accelerator_type, pool.accelerator_count


def _scheduling(raw: dict) -> list[str]:
    spec = raw.get("jobSpec") if isinstance(raw.get("jobSpec"), dict) else {}
    scheduling = spec.get("scheduling") if isinstance(spec.get("scheduling"), dict) else {}
    parts = []
    strategy = scheduling.get("strategy")
    if strategy not in (None, "STRATEGY_UNSPECIFIED", 0):
        parts.append(f"strategy {strategy}")
    if scheduling.get("timeout"):
        parts.append(f"timeout {scheduling['timeout']}")
    if scheduling.get("restartJobOnWorkerRestart"):
        parts.append("restart on worker restart")
    if scheduling.get("disableRetries"):
        parts.append("retries disabled")
    if scheduling.get("maxWaitDuration"):
        parts.append(f"max wait {scheduling['maxWaitDuration']}")
    return parts or ["standard (defaults)"]


def _replace(settings: RerunSettings, **changes: Any) -> RerunSettings:
    return dataclasses.replace(settings, **changes)


def _gpu(name: str) -> str:
    memory = _MEMORY_GB.get(name)
    return f"{name} ({memory} GB)" if memory else name


def _int(value: str | None, *, default: int | None) -> int | None:
    if value is None or not str(value).strip():
        return default
    text = str(value).strip()
    return int(text) if re.fullmatch(r"[0-9]{1,6}", text) else None
