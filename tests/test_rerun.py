from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

from bot.alerting.incidents import Incident
from bot.chat.rerun_body import create_body, label_value
from bot.chat.rerun_offer import RerunOffer, rerun_offer
from bot.chat.rerun_plan import RerunPlan, plan_rerun, run_warnings
from bot.chat.rerun_settings import (
    RerunInputError,
    RerunSettings,
    accelerator_choices,
    diff_lines,
    parse_settings,
    settings_values,
)
from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import CLASS_IDS, load_knowledge
from bot.gcp.job_resource import OUTPUT_ONLY_FIELDS
from bot.intake.log_input import text_to_lines
from bot.models import Diagnosis
from bot.render.alert_actions import ACTION_RERUN
from bot.render.alert_context import AlertContext
from bot.render.channel_message import diagnosis_message
from standins.google_apis import custom_job_json

PROJECT, REGION, OTHER = "acme-ml", "us-central1", "europe-west4"
REGIONS = [REGION, OTHER]
OFFERED = {"NVIDIA_TESLA_A100": (REGION, OTHER, "us-east1")}  # where each accelerator is offered, for these tests


def diagnosis(failure_class: str, **fields: object) -> Diagnosis:
    return Diagnosis(failure_class=failure_class, confidence=0.9, title=f"{failure_class} title", **fields)


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


def test_preemption_resumes_from_the_output_directory_and_warns_without_one() -> None:
    with_checkpoints = plan("preemption")
    raw = job()
    del raw["jobSpec"]["baseOutputDirectory"]
    without = plan("preemption", raw)

    assert with_checkpoints.offer.mode == "transient"
    assert with_checkpoints.suggested == with_checkpoints.failed and with_checkpoints.changes == []
    [step] = with_checkpoints.steps
    assert (step.change, step.status) == ("resume_from_checkpoint", "proposed")
    assert f"AIP_CHECKPOINT_DIR is gs://{PROJECT}-out/42/checkpoints/ again" in step.text
    assert not any("checkpoint" in w for w in with_checkpoints.warnings)
    assert without.steps[0].status == "not applicable"
    assert any("no checkpoint directory" in w for w in without.warnings)
    assert not any("fail the same way" in w for w in without.warnings)  # transient: an unchanged rerun can help
    assert "An unchanged rerun can help" in without.offer.headline()


def test_a_spot_job_keeps_spot_unless_standard_capacity_is_chosen() -> None:
    raw = job()
    raw["jobSpec"]["scheduling"] = {"strategy": "SPOT"}
    result = plan("preemption", raw)

    assert result.failed.spot is True and result.suggested.spot is True
    assert settings_values(result.suggested)["capacity"] == "spot"
    assert any("keeps Spot unless you choose standard" in r for r in result.reasons)
    kept = create_body(raw, result.suggested, plan=result, user="U1")
    assert kept["jobSpec"]["scheduling"] == {"strategy": "SPOT"}
    chosen = parse_settings({**values(), "capacity": "standard"}, regions=REGIONS)
    dropped = create_body(raw, chosen, plan=result, user="U1")
    assert dropped["jobSpec"]["scheduling"] == {"strategy": "STANDARD"}
    assert result.diff(chosen) == ["capacity: Spot → standard (on-demand)"]
    assert "capacity" not in settings_values(plan("preemption").failed) or not plan("preemption").failed.spot


QUOTA_DETAILS = {"quota_metric": "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus", "region": REGION}


def test_quota_asks_for_the_quota_increase_first_and_names_the_other_region_as_the_next_option() -> None:
    result = plan_rerun(
        job(),
        diagnosis("quota_exhausted", details=QUOTA_DETAILS),
        job_key=f"{PROJECT}/42",
        regions=REGIONS,
        offered_in=OFFERED,
    )

    assert result.offer.mode == "fix_first"
    assert result.offer.fix_first == f"request a quota increase for {QUOTA_DETAILS['quota_metric']} in {REGION}"
    assert result.suggested == result.failed  # once the quota grew, the same spec runs
    assert [(s.change, s.status) for s in result.steps] == [
        ("other_region", "next"),
        ("fewer_accelerators", "not applicable"),  # one A100: nothing to halve
    ]
    assert OTHER in result.steps[0].text
    assert any(w.startswith("Apply the fix first: request a quota increase") for w in result.warnings)
    assert run_warnings(result, result.failed) == [
        f"This reruns the same spec: it passes only if the fix was applied first ({result.offer.fix_first})."
    ]
    raw = job()
    raw["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {
        "machineType": "a2-highgpu-4g",
        "acceleratorType": "NVIDIA_TESLA_A100",
        "acceleratorCount": 4,
    }
    alone = plan_rerun(raw, diagnosis("quota_exhausted"), job_key=f"{PROJECT}/42", regions=[REGION])
    assert [(s.change, s.status) for s in alone.steps] == [
        ("other_region", "not applicable"),
        ("fewer_accelerators", "next"),
    ]
    assert "2 accelerators per replica instead of 4 (on a2-highgpu-2g)" in alone.steps[1].text
    bare = plan("quota_exhausted")  # the error named no metric: the fix is still named
    assert bare.offer.fix_first == "request a quota increase for the quota named in the error, in the region of the job"


def stockout() -> Diagnosis:
    title = load_knowledge()["quota_exhausted"].variants["stockout"].title
    return Diagnosis(failure_class="quota_exhausted", confidence=0.9, title=title)


def test_a_stockout_moves_to_a_configured_region_that_offers_the_accelerator() -> None:
    regions = [REGION, "asia-south1", OTHER]  # asia-south1 offers no A100 40 GB here
    result = plan_rerun(job(), stockout(), job_key=f"{PROJECT}/42", regions=regions, offered_in=OFFERED)

    assert result.offer.mode == "transient" and result.offer.fix_first is None
    assert result.suggested.region == OTHER
    assert result.changes == [f"region: {REGION} → {OTHER}"]
    assert f"{OTHER} is another configured region that offers NVIDIA_TESLA_A100" in result.steps[0].text
    assert result.regions == regions

    nowhere = plan_rerun(
        job(), stockout(), job_key=f"{PROJECT}/42", regions=[REGION, "asia-south1"], offered_in=OFFERED
    )
    assert nowhere.suggested == nowhere.failed  # transient: an unchanged rerun later can pass
    assert nowhere.steps[0].status == "not applicable"
    assert nowhere.steps[0].text == (
        "No other configured region offers NVIDIA_TESLA_A100 (regions that do: us-central1, europe-west4, "
        "us-east1; add one to `regions` in the routing file)."
    )
    unlisted = plan_rerun(job(), stockout(), job_key=f"{PROJECT}/42", regions=[REGION, "asia-south1"], offered_in={})
    assert unlisted.suggested.region == "asia-south1"  # an accelerator the table does not list is not filtered
    assert unlisted.steps[0].text.startswith("asia-south1 is another configured region; quota and capacity")


def test_the_regions_that_offer_an_accelerator_come_from_the_knowledge_bases_table() -> None:
    shared = load_knowledge()
    shared.tables = {
        "accelerator_regions": SimpleNamespace(
            rows=[SimpleNamespace(accelerator="NVIDIA_TESLA_A100", regions=["asia-south1"])]
        )
    }
    result = plan_rerun(job(), stockout(), job_key=f"{PROJECT}/42", regions=[*REGIONS, "asia-south1"], knowledge=shared)
    assert result.suggested.region == "asia-south1"


@pytest.mark.parametrize(
    ("args", "flag", "before", "after"),
    [
        (["--epochs=3", "--batch-size=512"], "--batch-size", "--batch-size=512", "--batch-size=256"),
        (["--batch_size", "512", "--epochs", "3"], "--batch_size", "--batch_size 512", "--batch_size 256"),
        (["--train-batch-size", "9"], "--train-batch-size", "--train-batch-size 9", "--train-batch-size 4"),
        (["--train_batch_size=64"], "--train_batch_size", "--train_batch_size=64", "--train_batch_size=32"),
        (  # the per-device flag is the one that sets device memory
            ["--batch_size=512", "--per_device_train_batch_size=32"],
            "--per_device_train_batch_size",
            "--per_device_train_batch_size=32",
            "--per_device_train_batch_size=16",
        ),
    ],
)
def test_accelerator_oom_halves_the_batch_size_the_args_set(args: list, flag: str, before: str, after: str) -> None:
    raw = job()
    raw["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] = args

    result = plan("accelerator_oom", raw)

    assert result.batch is not None and result.batch.flag == flag
    assert result.offer.mode == "changes"
    assert [(s.change, s.status) for s in result.steps] == [
        ("halve_batch_size", "proposed"),
        ("larger_accelerator", "next"),
    ]
    assert f"The job's args set {before}: the rerun halves the per-device batch size to {after}" in result.steps[0].text
    assert "NVIDIA_A100_80GB (80 GB) on a2-ultragpu-1g" in result.steps[1].text  # a bigger device: only next
    assert result.suggested.machine_type == result.failed.machine_type == "a2-highgpu-1g"
    assert result.changes == [f"args: {before} → {after}"]
    assert settings_values(result.suggested)["batch_size"] == after.split("=")[-1].split()[-1]
    body = create_body(raw, result.suggested, plan=result, user="U1")
    new_args = body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"]
    assert " ".join(new_args) == " ".join(args).replace(before, after)
    assert raw["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] == args  # not mutated


@pytest.mark.parametrize(
    "args", [["-b", "512"], ["--batch-size-eval=4"], ["--eval_batch_size=8"], ["--batch-size"], ["--batch-size=0"]]
)
def test_only_the_long_batch_size_flags_with_a_value_count(args: list) -> None:
    raw = job()
    raw["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] = args
    result = plan("accelerator_oom", raw)
    assert result.batch is None and "batch_size" not in settings_values(result.suggested)
    assert result.steps[0].status == "not applicable" and result.steps[1].status == "proposed"


def test_accelerator_oom_without_a_batch_size_proposes_more_device_memory_with_the_machine_it_comes_on() -> None:
    a100 = plan("accelerator_oom")
    raw = job()
    raw["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {
        "machineType": "n1-standard-8",
        "acceleratorType": "NVIDIA_TESLA_T4",
        "acceleratorCount": 2,
    }
    t4 = plan("accelerator_oom", raw)

    assert (a100.suggested.machine_type, a100.suggested.accelerator_type) == ("a2-ultragpu-1g", "NVIDIA_A100_80GB")
    assert [(s.change, s.status) for s in a100.steps] == [
        ("halve_batch_size", "not applicable"),
        ("larger_accelerator", "proposed"),
    ]
    assert "set no per-device batch size" in a100.steps[0].text
    assert "NVIDIA_TESLA_A100 (40 GB)" in a100.steps[1].text and "NVIDIA_A100_80GB (80 GB)" in a100.steps[1].text
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
    assert [s.status for s in result.steps] == ["not applicable", "not applicable"]
    assert "shard the model" in result.steps[1].text
    assert any(w.startswith("No rerun change applies to this job.") for w in result.warnings)


def test_host_oom_suggests_more_memory_per_vcpu() -> None:
    raw = job()
    raw["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {"machineType": "n1-standard-16"}

    result = plan("host_oom", raw)

    assert result.suggested.machine_type == "n1-highmem-16"
    assert result.failed.accelerator_type is None and result.failed.accelerator_count == 0
    assert result.steps[0].text == "The replica ran out of RAM: n1-highmem-16 has more memory than n1-standard-16."


def test_a_missing_permission_is_fixed_first_and_named() -> None:
    details = {"permission": "storage.objects.get", "role": "roles/storage.objectViewer"}
    result = plan_rerun(
        job(), diagnosis("permission_denied", details=details), job_key=f"{PROJECT}/42", regions=REGIONS
    )

    assert result.offer.mode == "fix_first"
    assert result.offer.fix_first == (
        f"grant roles/storage.objectViewer (it has storage.objects.get) to trainer@{PROJECT}.iam.gserviceaccount.com"
    )
    assert result.suggested == result.failed and result.steps == []
    assert run_warnings(result, result.failed)[0].startswith("This reruns the same spec: it passes only if the fix")


def test_a_permission_refused_to_a_person_names_that_person_in_the_fix_first_step() -> None:
    # gsutil ran on the credentials of the person it names: the grant, and so the step before a rerun, is theirs
    text = "AccessDeniedException: 403 alice@acme.com does not have storage.objects.list access to acme-train-data."
    found = Classifier(load_knowledge()).classify(text_to_lines(text))
    result = plan_rerun(job(), found, job_key=f"{PROJECT}/42", regions=REGIONS)

    assert result.offer.mode == "fix_first"
    assert result.offer.fix_first == "grant roles/storage.objectViewer (it has storage.objects.list) to alice@acme.com"
    assert any("--member=user:alice@acme.com" in command.command for command in found.commands)


@pytest.mark.parametrize(
    "failure_class",
    ["numerical_instability", "application_error", "container_startup", "input_pipeline", "unknown", "overfitting"],
)
def test_classes_whose_rerun_cannot_help_offer_none(failure_class: str) -> None:
    result = plan(failure_class)

    assert result.offer.mode == "none" and not result.offer.offered
    assert result.suggested == result.failed and result.steps == []
    assert any(w.startswith(f"Rerun is not offered for {failure_class}.") for w in result.warnings)
    assert run_warnings(result, result.failed)  # submitted anyway (forged): it says so
    assert not run_warnings(plan("preemption"), plan("preemption").failed)


def test_a_distributed_flake_offers_an_unchanged_rerun_and_says_when_it_helps() -> None:
    result = plan("distributed_setup")

    assert result.offer.mode == "transient"
    assert result.suggested == result.failed and result.steps == []
    assert "a wrong world size or address fails again" in result.offer.headline()
    assert not any("fail the same way" in w for w in result.warnings)


def test_moving_region_warns_about_regional_resources() -> None:
    raw = job()
    raw["jobSpec"]["network"] = "projects/1/global/networks/train"
    raw["encryptionSpec"] = {"kmsKeyName": "projects/acme-ml/locations/us-central1/keyRings/r/cryptoKeys/k"}

    result = plan_rerun(raw, stockout(), job_key=f"{PROJECT}/42", regions=REGIONS, offered_in=OFFERED)

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


# ------------------------------------------------------------------------------------------------ the button


def rerun_buttons(offer: RerunOffer | None, **ctx: object) -> list[dict]:
    context = AlertContext(job_id="42", job_key=f"{PROJECT}/42", rerun_offer=offer, **ctx)
    message = diagnosis_message(diagnosis("accelerator_oom"), context)
    return [
        e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"] if e["action_id"] == ACTION_RERUN
    ]


@pytest.mark.parametrize("failure_class", list(CLASS_IDS))
def test_every_bundled_class_gets_a_button_that_fits_slacks_confirmation(failure_class: str) -> None:
    long = "x" * 120
    details = {"quota_metric": long, "region": long, "permission": long, "role": long, "service_account": long}
    offer = rerun_offer(load_knowledge(), diagnosis(failure_class, details=details))

    buttons = rerun_buttons(offer)

    if not offer.offered:
        assert buttons == []
        return
    [button] = buttons
    confirm = button["confirm"]
    assert len(confirm["title"]["text"]) <= 100 and len(confirm["text"]["text"]) <= 300
    assert len(confirm["confirm"]["text"]) <= 30 and button["text"]["text"] == confirm["confirm"]["text"]
    assert "same spec" not in confirm["text"]["text"] or offer.mode in ("fix_first", "transient")
    assert ("An unchanged rerun can help" in confirm["text"]["text"]) == (offer.mode == "transient")


def test_no_offer_is_a_plain_rerun_that_promises_nothing_and_an_incident_has_none() -> None:
    [button] = rerun_buttons(None)
    assert button["text"]["text"] == "Rerun"
    assert "same spec" not in button["confirm"]["text"]["text"]
    incident = Incident(incident_id="0.1", state="open", policy_name="Low GPU utilization")
    assert rerun_buttons(rerun_offer(load_knowledge(), diagnosis("accelerator_oom")), incident=incident) == []


def test_a_refusal_outside_google_cloud_asks_for_that_services_fix_not_an_iam_grant() -> None:
    hub = load_knowledge()["permission_denied"].variants["hub_access"]
    refused = Diagnosis(failure_class="permission_denied", confidence=0.9, title=hub.title or "")
    result = plan_rerun(job(), refused, job_key=f"{PROJECT}/42", regions=REGIONS)
    assert result.offer.mode == "fix_first"
    assert "Hugging Face token" in (result.offer.fix_first or "")
    assert "grant" not in (result.offer.fix_first or "")
