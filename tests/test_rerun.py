from __future__ import annotations

import copy

import pytest

from bot.job_resource import OUTPUT_ONLY_FIELDS
from bot.models import Diagnosis
from bot.rerun import (
    RerunInputError,
    RerunPlan,
    RerunSettings,
    accelerator_choices,
    create_body,
    diff_lines,
    label_value,
    parse_settings,
    plan_rerun,
    run_warnings,
    settings_values,
)
from standins.google_apis import custom_job_json

PROJECT, REGION, OTHER = "acme-ml", "us-central1", "europe-west4"
REGIONS = [REGION, OTHER]


def diagnosis(failure_class: str) -> Diagnosis:
    return Diagnosis(failure_class=failure_class, confidence=0.9, title=f"{failure_class} title")


def job(**fields: object) -> dict:
    return custom_job_json(PROJECT, REGION, "42", **fields)


def distributed_job() -> dict:
    raw = job()
    chief = raw["jobSpec"]["workerPoolSpecs"][0]
    workers = copy.deepcopy(chief)
    workers["replicaCount"] = "3"
    server = {"machineSpec": {"machineType": "n1-highmem-16"}, "replicaCount": "1", "containerSpec": {"imageUri": "rs"}}
    raw["jobSpec"]["workerPoolSpecs"] = [chief, workers, server]
    return raw


def plan(failure_class: str, raw: dict | None = None, regions: list[str] = REGIONS) -> RerunPlan:
    return plan_rerun(raw or job(), diagnosis(failure_class), job_key=f"{PROJECT}/42", regions=regions)


# ------------------------------------------------------------------------------------------------ suggestions


def test_preemption_suggests_the_same_spec_and_warns_without_checkpoints() -> None:
    with_checkpoints = plan("preemption")
    raw = job()
    del raw["jobSpec"]["baseOutputDirectory"]
    without = plan("preemption", raw)

    assert with_checkpoints.suggested == with_checkpoints.failed and with_checkpoints.changes == []
    assert not any("checkpoint" in w for w in with_checkpoints.warnings)
    assert any("no checkpoint directory" in w for w in without.warnings)
    assert not any("fail the same way" in w for w in without.warnings)  # not deterministic


def test_quota_suggests_another_configured_region() -> None:
    result = plan("quota_exhausted")

    assert result.suggested.region == OTHER
    assert result.changes == [f"region: {REGION} → {OTHER}"]
    assert result.regions == REGIONS
    assert "per region" in result.reasons[0]


def test_quota_without_another_region_suggests_fewer_accelerators_on_a_matching_machine() -> None:
    raw = job()
    raw["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {
        "machineType": "a2-highgpu-4g",
        "acceleratorType": "NVIDIA_TESLA_A100",
        "acceleratorCount": 4,
    }

    result = plan("quota_exhausted", raw, regions=[REGION])

    assert (result.suggested.machine_type, result.suggested.accelerator_count) == ("a2-highgpu-2g", 2)
    assert result.changes == [
        "machine type: a2-highgpu-4g → a2-highgpu-2g",
        "accelerators: 4× NVIDIA_TESLA_A100 → 2× NVIDIA_TESLA_A100",
    ]


def test_accelerator_oom_suggests_more_device_memory_with_the_machine_it_comes_on() -> None:
    a100 = plan("accelerator_oom")
    raw = job()
    raw["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {
        "machineType": "n1-standard-8",
        "acceleratorType": "NVIDIA_TESLA_T4",
        "acceleratorCount": 2,
    }
    t4 = plan("accelerator_oom", raw)

    assert (a100.suggested.machine_type, a100.suggested.accelerator_type) == ("a2-ultragpu-1g", "NVIDIA_A100_80GB")
    assert "NVIDIA_TESLA_A100 (40 GB)" in a100.reasons[0] and "NVIDIA_A100_80GB (80 GB)" in a100.reasons[0]
    assert (t4.suggested.machine_type, t4.suggested.accelerator_type, t4.suggested.accelerator_count) == (
        "g2-standard-24",
        "NVIDIA_L4",
        2,
    )
    assert any("An unchanged rerun will fail the same way" in w for w in a100.warnings)


def test_accelerator_oom_on_the_largest_device_suggests_no_change_and_says_why() -> None:
    raw = job()
    raw["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {
        "machineType": "a3-ultragpu-8g",
        "acceleratorType": "NVIDIA_H200_141GB",
        "acceleratorCount": 8,
    }

    result = plan("accelerator_oom", raw)

    assert result.suggested == result.failed
    assert "shard the model" in result.reasons[0]


def test_host_oom_suggests_more_memory_per_vcpu() -> None:
    raw = job()
    raw["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {"machineType": "n1-standard-16"}

    result = plan("host_oom", raw)

    assert result.suggested.machine_type == "n1-highmem-16"
    assert result.failed.accelerator_type is None and result.failed.accelerator_count == 0


@pytest.mark.parametrize("failure_class", ["numerical_instability", "permission_denied", "application_error"])
def test_deterministic_failures_warn_that_an_unchanged_rerun_fails_the_same_way(failure_class: str) -> None:
    result = plan(failure_class)

    assert result.suggested == result.failed
    assert any("An unchanged rerun will fail the same way" in w for w in result.warnings)
    assert run_warnings(result, result.failed)
    assert not run_warnings(plan("preemption"), result.failed)


def test_moving_region_warns_about_regional_resources() -> None:
    raw = job()
    raw["jobSpec"]["network"] = "projects/1/global/networks/train"
    raw["encryptionSpec"] = {"kmsKeyName": "projects/acme-ml/locations/us-central1/keyRings/r/cryptoKeys/k"}

    result = plan("quota_exhausted", raw)

    assert any("network, KMS key" in w and OTHER in w for w in result.warnings)


def test_distributed_job_edits_the_matching_pools_and_the_worker_replicas() -> None:
    result = plan("accelerator_oom", distributed_job())

    assert result.edited_pools == [0, 1]  # the parameter server keeps its own machine
    assert result.replica_pool == 1 and result.failed.replica_count == 3


def test_a_job_without_pools_or_name_cannot_be_planned() -> None:
    raw = job()
    raw["jobSpec"]["workerPoolSpecs"] = []
    with pytest.raises(ValueError, match="no worker pools"):
        plan("preemption", raw)
    with pytest.raises(ValueError, match="no resource name"):
        plan("preemption", {k: v for k, v in job().items() if k != "name"})


# ------------------------------------------------------------------------------------------------ inputs


def values(**overrides: str) -> dict[str, str]:
    base = {
        "region": REGION,
        "machine_type": "a2-highgpu-1g",
        "accelerator_type": "NVIDIA_TESLA_A100",
        "accelerator_count": "1",
        "replica_count": "1",
    }
    return {**base, **overrides}


def test_parse_settings_round_trips_the_modal_values() -> None:
    settings = parse_settings(values(), regions=REGIONS)

    assert settings == RerunSettings(REGION, "a2-highgpu-1g", "NVIDIA_TESLA_A100", 1, 1)
    assert settings_values(settings) == values()
    cpu = parse_settings(
        values(machine_type="n1-standard-8", accelerator_type="none", accelerator_count="0"), regions=REGIONS
    )
    assert (cpu.accelerator_type, cpu.accelerator_count) == (None, 0)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"region": "mars-north1"}, "region"),
        ({"region": "us central1"}, "region"),
        ({"machine_type": "A2 High GPU"}, "machine_type"),
        ({"machine_type": ""}, "machine_type"),
        ({"accelerator_type": "nvidia<script>"}, "accelerator_type"),
        ({"accelerator_count": "x"}, "accelerator_count"),
        ({"accelerator_count": "99"}, "accelerator_count"),
        ({"accelerator_count": "0"}, "accelerator_count"),
        ({"machine_type": "n1-standard-8", "accelerator_type": "none", "accelerator_count": "2"}, "accelerator_count"),
        ({"replica_count": "0"}, "replica_count"),
        ({"replica_count": None}, "replica_count"),
        ({"accelerator_count": "2"}, "accelerator_type"),  # a2-highgpu-1g comes with exactly one A100
    ],
)
def test_parse_settings_names_the_bad_field(overrides: dict, field: str) -> None:
    with pytest.raises(RerunInputError) as caught:
        parse_settings(values(**overrides), regions=REGIONS)
    assert field in caught.value.errors


def test_accelerator_choices_include_none_and_an_unknown_current_type() -> None:
    assert accelerator_choices("NVIDIA_TESLA_A100")[0] == "none"
    assert "NVIDIA_TESLA_A100" in accelerator_choices(None)
    assert accelerator_choices("NVIDIA_FUTURE_GPU")[-1] == "NVIDIA_FUTURE_GPU"


# ------------------------------------------------------------------------------------------------ the body


def test_label_values_follow_gcp_rules() -> None:
    assert label_value("U0ABC123") == "u0abc123"
    assert label_value("W0ENTERPRISE.user@x") == "w0enterprise_user_x"
    assert len(label_value("U" * 100)) == 63


def test_create_body_is_the_failed_job_plus_the_changes_and_labels() -> None:
    raw = job()
    result = plan("accelerator_oom", raw)

    body = create_body(raw, result.suggested, plan=result, user="U0ALICE")

    assert not set(body) & OUTPUT_ONLY_FIELDS
    assert body["displayName"] == raw["displayName"]
    assert body["labels"] == {"team": "vision", "rerun-of": "42", "rerun-by": "u0alice"}
    machine = body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    assert machine == {"machineType": "a2-ultragpu-1g", "acceleratorType": "NVIDIA_A100_80GB", "acceleratorCount": 1}
    expected = copy.deepcopy(raw["jobSpec"])
    expected["workerPoolSpecs"][0]["machineSpec"] = machine
    assert body["jobSpec"] == expected
    assert raw["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["machineType"] == "a2-highgpu-1g"  # not mutated


def test_create_body_for_a_distributed_job_and_a_cpu_only_choice() -> None:
    raw = distributed_job()
    result = plan("accelerator_oom", raw)
    chosen = RerunSettings(REGION, "n1-highmem-32", None, 0, 5)

    body = create_body(raw, chosen, plan=result, user="U1")

    pools = body["jobSpec"]["workerPoolSpecs"]
    assert pools[0]["machineSpec"] == pools[1]["machineSpec"] == {"machineType": "n1-highmem-32"}
    assert pools[0]["replicaCount"] == "1" and pools[1]["replicaCount"] == "5"
    assert pools[2] == raw["jobSpec"]["workerPoolSpecs"][2]


def test_diff_lines_list_each_changed_setting() -> None:
    before = RerunSettings(REGION, "a2-highgpu-1g", "NVIDIA_TESLA_A100", 1, 1)
    after = RerunSettings(OTHER, "a2-highgpu-2g", "NVIDIA_TESLA_A100", 2, 4)

    assert diff_lines(before, before) == []
    assert diff_lines(before, after) == [
        f"region: {REGION} → {OTHER}",
        "machine type: a2-highgpu-1g → a2-highgpu-2g",
        "accelerators: 1× NVIDIA_TESLA_A100 → 2× NVIDIA_TESLA_A100",
        "replicas: 1 → 4",
    ]
