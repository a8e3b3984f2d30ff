from __future__ import annotations

import copy
import json

from bot.chat.rerun_offer import CHANGE_TEXT
from bot.chat.rerun_plan import RerunPlan, plan_rerun
from bot.chat.rerun_settings import parse_settings
from bot.diagnosis.knowledge import load_knowledge
from bot.models import Diagnosis
from bot.render.modal import (
    MAX_BLOCKS,
    MAX_OPTION_TEXT,
    MAX_OPTION_VALUE,
    MAX_PRIVATE_METADATA,
    MAX_TITLE,
    VIEW_RERUN,
    info_modal,
    job_key_of,
    rerun_modal,
    submitted_values,
)
from standins.google_apis import custom_job_json

JOB_KEY = "acme-ml/42"


def make_plan(raw: dict | None = None, failure_class: str = "accelerator_oom", title: str = "OOM") -> RerunPlan:
    return plan_rerun(
        raw or custom_job_json("acme-ml", "us-central1", "42"),
        Diagnosis(failure_class=failure_class, confidence=0.87, title=title),
        job_key=JOB_KEY,
        regions=["us-central1", "europe-west4"],
        offered_in={},  # every configured region offers every accelerator here
    )


def texts(node: object) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "text" and isinstance(v, str)] + [
            t for v in node.values() for t in texts(v)
        ]
    if isinstance(node, list):
        return [t for v in node for t in texts(v)]
    return []


def assert_within_slack_limits(view: dict) -> None:
    assert view["type"] == "modal"
    assert 0 < len(view["title"]["text"]) <= MAX_TITLE
    assert len(view["close"]["text"]) <= 24 and len(view.get("submit", {}).get("text", "")) <= 24
    assert len(view["private_metadata"]) <= MAX_PRIVATE_METADATA
    assert 0 < len(view["blocks"]) <= MAX_BLOCKS
    for block in view["blocks"]:
        if block["type"] == "section":
            assert 0 < len(block["text"]["text"]) <= 3000
            assert len(block.get("fields", [])) <= 10
            assert all(len(f["text"]) <= 2000 for f in block.get("fields", []))
        if block["type"] == "input":
            element = block["element"]
            assert len(block["block_id"]) <= 255 and len(block["label"]["text"]) <= 2000
            for option in element.get("options", []):
                assert len(option["text"]["text"]) <= MAX_OPTION_TEXT and len(option["value"]) <= MAX_OPTION_VALUE
            assert len(element.get("options", [])) <= 100
            if "initial_option" in element:
                assert element["initial_option"] in element["options"]
    assert len(json.dumps(view)) < 250_000


def inputs(view: dict) -> dict[str, dict]:
    return {block["block_id"]: block["element"] for block in view["blocks"] if block["type"] == "input"}


def test_the_modal_shows_what_will_run_and_is_prefilled_with_the_suggestion() -> None:
    view = rerun_modal(make_plan())

    assert_within_slack_limits(view)
    assert view["callback_id"] == VIEW_RERUN and view["private_metadata"] == JOB_KEY
    assert view["submit"]["text"] == "Rerun"
    shown = "\n".join(texts(view["blocks"]))
    for fact in (
        "train-42",
        "us-docker.pkg.dev/p/train/trainer:1",
        "`a2-highgpu-1g`",
        "`1× NVIDIA_TESLA_A100`",
        "*Replicas*\n1",
        "`us-central1`",
        "*Scheduling*\nstandard (defaults)",
        "gs://acme-ml-out/42",
        "trainer@acme-ml.iam.gserviceaccount.com",
        "accelerator_oom",
        "87%",
        "machine type: a2-highgpu-1g → a2-ultragpu-1g",
        "An unchanged rerun will fail the same way",
        "rerun-of=42",
    ):
        assert fact in shown, fact
    fields = inputs(view)
    assert list(fields) == ["region", "machine_type", "accelerator_type", "accelerator_count", "replica_count"]
    assert fields["region"]["initial_option"]["value"] == "us-central1"
    assert fields["machine_type"]["initial_value"] == "a2-ultragpu-1g"
    assert fields["accelerator_type"]["initial_option"]["value"] == "NVIDIA_A100_80GB"
    assert fields["accelerator_count"] == {
        "type": "number_input",
        "action_id": "accelerator_count",
        "is_decimal_allowed": False,
        "initial_value": "1",
        "min_value": "0",
        "max_value": "16",
    }
    assert fields["replica_count"]["initial_value"] == "1"


def test_untrusted_job_text_is_escaped_and_cut() -> None:
    raw = custom_job_json("acme-ml", "us-central1", "42", displayName="<!channel> " + "x" * 5000)
    raw["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUri"] = "img:<@U1>" + "y" * 5000

    view = rerun_modal(make_plan(raw, title="<https://evil|click> " * 300))

    assert_within_slack_limits(view)
    dumped = json.dumps(view)
    assert "<!channel>" not in dumped and "<@U1>" not in dumped and "<https://evil" not in dumped
    assert "&lt;!channel&gt;" in dumped


def test_a_large_distributed_job_stays_within_the_limits() -> None:
    raw = custom_job_json("acme-ml", "us-central1", "42")
    pool = raw["jobSpec"]["workerPoolSpecs"][0]
    raw["jobSpec"]["workerPoolSpecs"] = [copy.deepcopy(pool) for _ in range(40)]
    raw["jobSpec"]["scheduling"] = {"strategy": "SPOT", "timeout": "86400s", "restartJobOnWorkerRestart": True}

    stockout = load_knowledge()["quota_exhausted"].variants["stockout"].title
    view = rerun_modal(make_plan(raw, failure_class="quota_exhausted", title=stockout))

    assert_within_slack_limits(view)
    shown = "\n".join(texts(view["blocks"]))
    assert "strategy SPOT, timeout 86400s, restart on worker restart" in shown
    assert "…and 29 more pools" in shown
    assert "Worker replicas (pool 1)" in shown
    assert inputs(view)["region"]["initial_option"]["value"] == "europe-west4"
    capacity = inputs(view)["capacity"]  # a Spot job: keep Spot, or choose standard capacity
    assert capacity["initial_option"]["value"] == "spot"
    assert [o["value"] for o in capacity["options"]] == ["spot", "standard"]


def test_submitted_state_values_parse_back_into_settings() -> None:
    view = rerun_modal(make_plan())
    state = {
        "region": {"region": {"type": "static_select", "selected_option": {"value": "europe-west4"}}},
        "machine_type": {"machine_type": {"type": "plain_text_input", "value": "a2-highgpu-2g"}},
        "accelerator_type": {
            "accelerator_type": {"type": "static_select", "selected_option": {"value": "NVIDIA_TESLA_A100"}}
        },
        "accelerator_count": {"accelerator_count": {"type": "number_input", "value": "2"}},
        "replica_count": {"replica_count": {"type": "number_input", "value": "1"}},
    }

    values = submitted_values({**view, "state": {"values": state}})

    assert values == {
        "region": "europe-west4",
        "machine_type": "a2-highgpu-2g",
        "accelerator_type": "NVIDIA_TESLA_A100",
        "accelerator_count": "2",
        "replica_count": "1",
    }
    settings = parse_settings(values, regions=["us-central1", "europe-west4"])
    assert (settings.region, settings.accelerator_count) == ("europe-west4", 2)
    assert submitted_values({}) == {} and job_key_of({"private_metadata": JOB_KEY}) == JOB_KEY


def test_info_modal_has_no_submit_and_keeps_the_job_key() -> None:
    view = info_modal(JOB_KEY, "A title that is far too long for Slack", "Reading the failed job…")

    assert_within_slack_limits(view)
    assert "submit" not in view and view["close"]["text"] == "Close"
    assert job_key_of(view) == JOB_KEY


def plan_section(view: dict) -> str:
    return next(t for t in texts(view["blocks"]) if t.startswith("*Rerun plan*"))


def test_the_plan_names_the_buttons_changes_in_the_same_order_and_prefills_the_halved_batch_size() -> None:
    raw = custom_job_json("acme-ml", "us-central1", "42")
    raw["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] = ["--epochs=3", "--batch-size=512"]
    plan = make_plan(raw)

    view = rerun_modal(plan)

    assert_within_slack_limits(view)
    section = plan_section(view)
    label, _, confirm = plan.offer.button()
    assert label == "Rerun with changes"
    first, second = CHANGE_TEXT["halve_batch_size"], CHANGE_TEXT["larger_accelerator"]
    assert confirm.index(first) < confirm.index(second)  # the button's order ...
    assert section.index(f"1. {first} — *proposed*") < section.index(f"2. {second} — next option")  # ... the plan's
    assert "An unchanged rerun fails the same way." in section and "An unchanged rerun fails the same way" in confirm
    assert "--batch-size=512" in section and "--batch-size=256" in section
    assert "args: --batch-size=512 → --batch-size=256" in "\n".join(texts(view["blocks"]))
    batch = inputs(view)["batch_size"]
    assert (batch["type"], batch["initial_value"], batch["min_value"]) == ("number_input", "256", "1")
    hint = next(b["hint"]["text"] for b in view["blocks"] if b.get("block_id") == "batch_size")
    assert hint == "--batch-size in the container args (the failed job had 512)."
    assert inputs(view)["machine_type"]["initial_value"] == "a2-highgpu-1g"  # the bigger device is only next
    assert "capacity" not in inputs(view)  # not a Spot job


def test_a_fix_first_plan_says_the_fix_and_reruns_the_same_spec() -> None:
    plan = plan_rerun(
        custom_job_json("acme-ml", "us-central1", "42"),
        Diagnosis(
            failure_class="permission_denied",
            confidence=0.9,
            title="The job's identity lacks an IAM permission",
            details={"permission": "storage.objects.get", "role": "roles/storage.objectViewer"},
        ),
        job_key=JOB_KEY,
        regions=["us-central1"],
    )

    view = rerun_modal(plan)

    section = plan_section(view)
    fix = "grant roles/storage.objectViewer (it has storage.objects.get) to trainer@acme-ml.iam.gserviceaccount.com"
    assert f":wrench: Apply the fix first: {fix}." in section
    assert "The form below reruns the same spec: submit it once the fix is in place." in section
    assert f"Do this first: {fix}." in plan.offer.button()[2] and plan.offer.button()[0] == "Rerun after the fix"
    assert "Suggested changes*: none" in "\n".join(texts(view["blocks"]))
