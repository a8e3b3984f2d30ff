"""Reading and editing the failed CustomJob's REST dict (as `JobsClient.get_job_raw` returns it) for a rerun:
its worker pools, their container args and the per-device batch size they set, its scheduling, and the
regional resources that moving it to another region may break.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.gcp.job_resource import job_info_from_rest

#: The container-arg flags that set the per-device batch size, most specific first (the first one found wins).
BATCH_SIZE_FLAGS: tuple[str, ...] = (
    "--per_device_train_batch_size",
    "--train_batch_size",
    "--train-batch-size",
    "--batch_size",
    "--batch-size",
)


# Fields that name regional resources: moving the job to another region may break them.
_REGIONAL_FIELDS = {
    "network": "network",
    "reservedIpRanges": "reserved IP ranges",
    "persistentResourceId": "persistent resource",
    "tensorboard": "TensorBoard instance",
    "experiment": "experiment",
    "pscInterfaceConfig": "PSC interface",
}


@dataclass(frozen=True)
class BatchArg:
    """A per-device batch size in the container args: `--flag=value` (joined) or `--flag value`."""

    flag: str
    value: int
    joined: bool

    def text(self, value: int | None = None) -> str:
        shown = self.value if value is None else value
        return f"{self.flag}={shown}" if self.joined else f"{self.flag} {shown}"


@dataclass(frozen=True)
class PoolSummary:
    index: int
    machine_type: str | None
    accelerator_type: str | None
    accelerator_count: int
    replica_count: int
    image: str | None


def find_batch_size(args: Sequence[Any]) -> BatchArg | None:
    """The per-device batch size the args set (`--flag=N` or `--flag N`; the last occurrence of the most
    specific flag in BATCH_SIZE_FLAGS), or None."""
    found: dict[str, BatchArg] = {}
    for index, arg in enumerate(args):
        if not isinstance(arg, str):
            continue
        flag, equals, value = arg.partition("=")
        if flag not in BATCH_SIZE_FLAGS:
            continue
        if not equals:
            following = args[index + 1] if index + 1 < len(args) else None
            if not isinstance(following, str):
                continue
            value = following
        if re.fullmatch(r"[0-9]{1,7}", value.strip()) and int(value) > 0:
            found[flag] = BatchArg(flag=flag, value=int(value), joined=bool(equals))
    return next((found[flag] for flag in BATCH_SIZE_FLAGS if flag in found), None)


def set_batch_size(args: Sequence[Any], flag: str, value: int) -> list[Any]:
    """`args` with every occurrence of `flag` set to `value`, in the form it had."""
    out = list(args)
    index = 0
    while index < len(out):
        arg = out[index]
        if isinstance(arg, str):
            name, equals, _ = arg.partition("=")
            if name == flag and equals:
                out[index] = f"{flag}={value}"
            elif name == flag and index + 1 < len(out):
                out[index + 1] = str(value)
                index += 1
        index += 1
    return out


def pool_args(spec: dict) -> list[Any]:
    for key in ("containerSpec", "pythonPackageSpec"):
        part = spec.get(key)
        if isinstance(part, dict) and isinstance(part.get("args"), list):
            return part["args"]
    return []


def pool_specs(job: dict) -> list[dict]:
    spec = job.get("jobSpec")
    pools = spec.get("workerPoolSpecs") if isinstance(spec, dict) else None
    return [p if isinstance(p, dict) else {} for p in pools] if isinstance(pools, list) else []


def non_empty_pool(spec: dict) -> bool:
    return bool(spec.get("machineSpec") or spec.get("containerSpec") or spec.get("pythonPackageSpec"))


def pool_summary(index: int, spec: dict) -> PoolSummary:
    info = job_info_from_rest({"jobSpec": {"workerPoolSpecs": [spec]}}).worker_pools[0]
    return PoolSummary(
        index=index,
        machine_type=info.machine_type,
        accelerator_type=info.accelerator_type,
        accelerator_count=info.accelerator_count if info.accelerator_type else 0,
        replica_count=info.replica_count,
        image=info.image_uri,
    )


def machine_key(pool: PoolSummary) -> tuple[Any, ...]:
    return pool.machine_type, pool.accelerator_type, pool.accelerator_count


def scheduling_parts(raw: dict) -> list[str]:
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


def regional_warnings(raw: dict, failed_region: str, region: str) -> list[str]:
    """Warnings for moving the job to `region`: the resources it names that live in a region."""
    if region == failed_region:
        return []
    spec = raw.get("jobSpec") if isinstance(raw.get("jobSpec"), dict) else {}
    names = [label for key, label in _REGIONAL_FIELDS.items() if spec.get(key)]
    if raw.get("encryptionSpec"):
        names.append("KMS key (encryptionSpec)")
    if any(isinstance(p, dict) and (p.get("machineSpec") or {}).get("reservationAffinity") for p in pool_specs(raw)):
        names.append("reservation")
    if not names:
        return []
    return [
        f"The job uses a {', '.join(names)} tied to {failed_region}: check that it exists in {region}, "
        "or the new job will fail to start."
    ]
