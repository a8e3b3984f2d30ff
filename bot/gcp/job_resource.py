"""Read a Vertex AI CustomJob resource (REST JSON or proto-plus) into a JobInfo, and build a rerun body.

The REST form is what `GET .../customJobs/ID` returns: camelCase keys, int64 values as strings, enums as
names (or as numbers when the request asked for `enum-encoding=int`, as the generated clients do), times
as RFC 3339 strings. Missing fields are fine (proto3 JSON omits defaults); a field of the wrong type raises
ValueError naming its path.
"""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime
from typing import Any

from bot.jobs.identity import JobIdError, JobKind, parse_resource_name
from bot.models import JobInfo, WorkerPool

JOB_STATES: dict[int, str] = {
    0: "JOB_STATE_UNSPECIFIED",
    1: "JOB_STATE_QUEUED",
    2: "JOB_STATE_PENDING",
    3: "JOB_STATE_RUNNING",
    4: "JOB_STATE_SUCCEEDED",
    5: "JOB_STATE_FAILED",
    6: "JOB_STATE_CANCELLING",
    7: "JOB_STATE_CANCELLED",
    8: "JOB_STATE_PAUSED",
    9: "JOB_STATE_EXPIRED",
    10: "JOB_STATE_UPDATING",
    11: "JOB_STATE_PARTIALLY_SUCCEEDED",
}

ACCELERATOR_TYPES: dict[int, str] = {
    0: "ACCELERATOR_TYPE_UNSPECIFIED",
    1: "NVIDIA_TESLA_K80",
    2: "NVIDIA_TESLA_P100",
    3: "NVIDIA_TESLA_V100",
    4: "NVIDIA_TESLA_P4",
    5: "NVIDIA_TESLA_T4",
    6: "TPU_V2",
    7: "TPU_V3",
    8: "NVIDIA_TESLA_A100",
    9: "NVIDIA_A100_80GB",
    10: "TPU_V4_POD",
    11: "NVIDIA_L4",
    12: "TPU_V5_LITEPOD",
    13: "NVIDIA_H100_80GB",
    14: "NVIDIA_H100_MEGA_80GB",
    15: "NVIDIA_H200_141GB",
    16: "NVIDIA_B200",
    17: "NVIDIA_GB200",
    18: "NVIDIA_RTX_PRO_6000",
}

SCHEDULING_STRATEGIES: dict[int, str] = {
    0: "STRATEGY_UNSPECIFIED",
    1: "ON_DEMAND",
    2: "LOW_COST",
    3: "STANDARD",
    4: "SPOT",
    6: "FLEX_START",
}

OUTPUT_ONLY_FIELDS: frozenset[str] = frozenset(
    {
        "name",
        "state",
        "error",
        "createTime",
        "startTime",
        "endTime",
        "updateTime",
        "webAccessUris",
        "satisfiesPzs",
        "satisfiesPzi",
        # the same fields as a proto-plus `to_dict()` spells them
        "create_time",
        "start_time",
        "end_time",
        "update_time",
        "web_access_uris",
        "satisfies_pzs",
        "satisfies_pzi",
    }
)


def parse_job_name(name: str) -> tuple[str, str, str]:
    """Split `projects/P/locations/L/customJobs/ID` into (project, region, job_id); ValueError otherwise."""
    try:
        ref = parse_resource_name(name)
    except JobIdError:
        ref = None
    if ref is None or ref.kind is not JobKind.CUSTOM_JOB or ref.region is None:
        raise ValueError(f"name: not a CustomJob resource name: {name!r}")
    return ref.project, ref.region, ref.id


def job_info_from_rest(data: dict, *, region_hint: str | None = None) -> JobInfo:
    """Build a JobInfo from a CustomJob in REST JSON form.

    Args:
        data: The CustomJob as returned by the REST API (camelCase).
        region_hint: The region to report when `data` has no `name` to take it from.

    Raises:
        ValueError: A field has the wrong type or the name is not a CustomJob name.
    """
    job = _mapping(data, "job")
    project = job_id = None
    region = region_hint
    name = _opt_str(job, "name")
    if name:
        project, region, job_id = parse_job_name(name)
    error = _opt_mapping(job, "error", "error")
    spec = _opt_mapping(job, "jobSpec", "jobSpec")
    scheduling = _opt_mapping(spec, "scheduling", "jobSpec.scheduling")
    strategy = _enum(scheduling, "strategy", "jobSpec.scheduling", SCHEDULING_STRATEGIES)
    output = _opt_mapping(spec, "baseOutputDirectory", "jobSpec.baseOutputDirectory")
    return JobInfo(
        name=name or None,
        job_id=job_id,
        project=project,
        region=region,
        display_name=_opt_str(job, "displayName"),
        state=_enum(job, "state", "", JOB_STATES),
        error_code=_opt_int(error, "code", "error"),
        error_message=_opt_str(error, "message", "error"),
        worker_pools=_worker_pools(spec.get("workerPoolSpecs")),
        service_account=_opt_str(spec, "serviceAccount", "jobSpec") or None,
        spot=strategy == "SPOT",
        base_output_directory=_opt_str(output, "outputUriPrefix", "jobSpec.baseOutputDirectory") or None,
        labels=_labels(job.get("labels"), "labels"),
        create_time=_opt_time(job, "createTime"),
        start_time=_opt_time(job, "startTime"),
        end_time=_opt_time(job, "endTime"),
    )


def custom_job_to_rest(job: Any) -> dict:
    """Convert a CustomJob message (proto-plus or raw protobuf) to its REST JSON dict."""
    from google.protobuf.json_format import MessageToDict  # lazy: keep `import bot.*` cheap

    message = type(job).pb(job) if hasattr(type(job), "pb") else job
    return MessageToDict(message, preserving_proto_field_name=False)


def job_info_from_proto(job: Any, *, region_hint: str | None = None) -> JobInfo:
    """Build a JobInfo from a `google.cloud.aiplatform_v1.types.CustomJob` (or its raw protobuf)."""
    return job_info_from_rest(custom_job_to_rest(job), region_hint=region_hint)


def rerun_body(data: dict, *, labels: dict[str, str]) -> dict:
    """A deep copy of a CustomJob REST dict, fit to create again: output-only fields dropped, labels merged.

    Raises:
        ValueError: `data` is not a mapping or a label is not a str -> str pair.
    """
    job = _mapping(data, "job")
    extra = _labels(labels, "labels argument")
    body = {key: copy.deepcopy(value) for key, value in job.items() if key not in OUTPUT_ONLY_FIELDS}
    body["labels"] = {**_labels(job.get("labels"), "labels"), **extra}
    return body


# ----------------------------------------------------------------------------------------------- helpers


def _where(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _mapping(value: Any, path: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected an object, got {type(value).__name__}")
    return value


def _opt_mapping(parent: dict, key: str, path: str) -> dict:
    value = parent.get(key)
    return {} if value is None else _mapping(value, path)


def _opt_str(parent: dict, key: str, path: str = "") -> str | None:
    value = parent.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{_where(path, key)}: expected a string, got {type(value).__name__}")


def _to_int(value: Any, where: str) -> int:
    # proto3 JSON: int64 is a decimal string; int32 is a number, but parsers accept either form
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    raise ValueError(f"{where}: expected an integer, got {value!r}")


def _opt_int(parent: dict, key: str, path: str = "") -> int | None:
    value = parent.get(key)
    return None if value is None else _to_int(value, _where(path, key))


def _enum(parent: dict, key: str, path: str, names: dict[int, str]) -> str | None:
    """An enum given by name or number; an unknown number (a newer API) is kept as its decimal string."""
    value = parent.get(key)
    if value is None or isinstance(value, str):
        return value
    number = _to_int(value, _where(path, key))
    return names.get(number, str(number))


def _opt_time(parent: dict, key: str) -> datetime | None:
    value = _opt_str(parent, key)
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{key}: not an RFC 3339 time: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _labels(value: Any, path: str) -> dict[str, str]:
    if value is None:
        return {}
    labels = _mapping(value, path)
    for key, item in labels.items():
        if not isinstance(key, str) or not key or not isinstance(item, str):
            raise ValueError(f"{path}: labels must map non-empty strings to strings, got {key!r}: {item!r}")
    return dict(labels)


def _worker_pools(value: Any) -> list[WorkerPool]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"jobSpec.workerPoolSpecs: expected a list, got {type(value).__name__}")
    return [_worker_pool(item, f"jobSpec.workerPoolSpecs[{index}]") for index, item in enumerate(value)]


def _worker_pool(value: Any, path: str) -> WorkerPool:
    pool = _mapping(value, path)
    machine = _opt_mapping(pool, "machineSpec", f"{path}.machineSpec")
    container = _opt_mapping(pool, "containerSpec", f"{path}.containerSpec")
    package = _opt_mapping(pool, "pythonPackageSpec", f"{path}.pythonPackageSpec")
    accelerator = _enum(machine, "acceleratorType", f"{path}.machineSpec", ACCELERATOR_TYPES)
    replicas = _opt_int(pool, "replicaCount", path)
    if replicas is not None and replicas < 0:
        raise ValueError(f"{path}.replicaCount: must not be negative, got {replicas}")
    if replicas is None:
        # proto3 JSON omits zero; an empty placeholder pool ({}) has no replicas, a configured one has 1
        replicas = 1 if (machine or container or package) else 0
    return WorkerPool(
        machine_type=_opt_str(machine, "machineType", f"{path}.machineSpec") or None,
        accelerator_type=None if accelerator == "ACCELERATOR_TYPE_UNSPECIFIED" else accelerator,
        accelerator_count=_opt_int(machine, "acceleratorCount", f"{path}.machineSpec") or 0,
        replica_count=replicas,
        image_uri=(
            _opt_str(container, "imageUri", f"{path}.containerSpec")
            or _opt_str(package, "executorImageUri", f"{path}.pythonPackageSpec")
            or None
        ),
        package_uris=_str_list(package, "packageUris", f"{path}.pythonPackageSpec"),
        args=(
            *_str_list(container, "command", f"{path}.containerSpec"),
            *_str_list(container, "args", f"{path}.containerSpec"),
            *_str_list(package, "args", f"{path}.pythonPackageSpec"),
        ),
    )


def _str_list(parent: dict, key: str, path: str) -> tuple[str, ...]:
    value = parent.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{_where(path, key)}: expected a list of strings, got {value!r}")
    return tuple(value)
