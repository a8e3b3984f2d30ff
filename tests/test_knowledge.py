"""The knowledge base loads strictly: a bad file is rejected with its path and the field at fault."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.diagnosis.knowledge import CLASS_IDS, default_knowledge_dir, load_knowledge
from bot.errors import KnowledgeBaseError

TRAPS = {
    "accelerator_oom": "worker",
    "permission_denied": "your own",
    "numerical_instability": "raise the learning rate",
    "preemption": "without checkpointing",
    "input_pipeline": "profile",
}


def test_bundled_knowledge_loads_every_class() -> None:
    kb = load_knowledge()
    assert list(kb.order) == list(CLASS_IDS)
    for failure_class in kb:
        assert failure_class.title and failure_class.symptom and failure_class.first_checks
        assert failure_class.remediation


def test_oom_remediation_follows_the_order_of_preference() -> None:
    steps = [step.lower() for step in load_knowledge()["accelerator_oom"].remediation]
    keywords = ["batch size", "gradient accumulation", "mixed precision", "checkpointing", "shard", "more memory"]
    positions = [next(i for i, step in enumerate(steps) if word in step) for word in keywords]
    assert positions == sorted(positions)


@pytest.mark.parametrize(("class_id", "trap"), sorted(TRAPS.items()))
def test_each_trap_is_named_in_avoid(class_id: str, trap: str) -> None:
    avoid = " ".join(load_knowledge()[class_id].avoid).lower()
    assert trap in avoid


def _copy_kb(tmp_path: Path) -> Path:
    target = tmp_path / "knowledge"
    shutil.copytree(default_knowledge_dir(), target)
    return target


def _edit(directory: Path, class_id: str, change) -> Path:
    path = directory / f"{class_id}.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _set_signal(key: str, value: object):
    def change(data: dict) -> None:
        data["signals"][0][key] = value

    return change


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        (lambda d: d.update(colour="red"), "colour", "unknown key"),
        (lambda d: d.pop("title"), "title", "required field is missing"),
        (_set_signal("pattern", "CUDA out of (memory"), "signals[0](cuda_out_of_memory).pattern", "invalid regex"),
        (_set_signal("pattern", "(?<=CUDA) out of memory"), "signals[0](cuda_out_of_memory).pattern", "RE2"),
        (_set_signal("weight", 1.5), "signals[0](cuda_out_of_memory).weight", "less than or equal to 1"),
        (_set_signal("facts", ["moon_phase"]), "signals[0](cuda_out_of_memory).facts", "unknown fact"),
        (_set_signal("wieght", 0.5), "signals[0](cuda_out_of_memory).wieght", "unknown key"),
        (lambda d: d.update(id="gpu_oom"), "id", "must equal the file name"),
        (lambda d: d.update(remediation=[]), "remediation", "at least 1"),
        (lambda d: d.update(commands=[{"title": "x", "template": "rm -rf /"}]), "commands[0](x).template", "gcloud"),
        (
            lambda d: d["rerun"].update(changes=["buy_more_gpus"]),
            "rerun.changes",
            "unknown change(s) ['buy_more_gpus']",
        ),
        (lambda d: d["rerun"].update(changes=["larger_accelerator"] * 2), "rerun.changes", "listed twice"),
        (lambda d: d["rerun"].update(retries=3), "rerun.retries", "unknown key"),
        (lambda d: d["rerun"].pop("transient"), "rerun.transient", "required field is missing"),
        (lambda d: d["rerun"].update(why="two\nlines"), "rerun.why", "should match pattern"),
        (lambda d: d["rerun"].update(fix_first=["grant {role}"]), "rerun.fix_first", "the last template must have"),
        (lambda d: d["rerun"].update(fix_first=["grant {Role}", "x"]), "rerun.fix_first", "placeholders are {name}"),
        (lambda d: d["rerun"].update(transient=True, fix_first=["x"]), "rerun", "nothing to fix first"),
        (lambda d: d["rerun"].update(variants={"spot": {}}), "(top level)", "rerun.variants.spot: no variant 'spot'"),
    ],
)
def test_bad_file_is_rejected_naming_file_and_field(tmp_path: Path, change, field: str, problem: str) -> None:
    directory = _copy_kb(tmp_path)
    path = _edit(directory, "accelerator_oom", change)
    with pytest.raises(KnowledgeBaseError) as caught:
        load_knowledge(directory)
    assert caught.value.path == str(path)
    assert caught.value.field == field
    assert problem in caught.value.problem


def test_not_yaml_is_rejected(tmp_path: Path) -> None:
    directory = _copy_kb(tmp_path)
    (directory / "host_oom.yaml").write_text("id: host_oom\ntitle: [unclosed\n")
    with pytest.raises(KnowledgeBaseError, match="host_oom.yaml: \\(file\\): not valid YAML"):
        load_knowledge(directory)


def test_a_key_given_twice_in_one_signal_is_rejected(tmp_path: Path) -> None:
    # YAML's own rule keeps the last of two equal keys: a signal's first `unless_facts` would vanish without a word
    directory = _copy_kb(tmp_path)
    path = directory / "host_oom.yaml"
    text = path.read_text(encoding="utf-8")
    signal = "  - name: dataloader_worker_died\n"
    assert signal in text
    path.write_text(
        text.replace(signal, signal + "    unless_facts: [finished_cleanly]\n    unless_facts: [steps_logged]\n"),
        encoding="utf-8",
    )
    refused = r"(?s)host_oom\.yaml: \(file\): not valid YAML.*duplicate key 'unless_facts'"
    with pytest.raises(KnowledgeBaseError, match=refused):
        load_knowledge(directory)


def test_missing_class_is_rejected(tmp_path: Path) -> None:
    directory = _copy_kb(tmp_path)
    (directory / "preemption.yaml").unlink()
    with pytest.raises(KnowledgeBaseError, match="missing failure classes: preemption"):
        load_knowledge(directory)


def test_a_new_class_is_just_a_file(tmp_path: Path) -> None:
    directory = _copy_kb(tmp_path)
    (directory / "disk_full.yaml").write_text(
        yaml.safe_dump(
            {
                "id": "disk_full",
                "title": "The boot disk filled up",
                "symptom": "Writes failed with ENOSPC.",
                "first_checks": ["Check disk usage of the replica."],
                "remediation": ["Write checkpoints to Cloud Storage, or raise bootDiskSizeGb."],
                "avoid": ["Do not retry unchanged."],
                "signals": [{"name": "enospc", "pattern": r"No space left on device", "weight": 0.9}],
            }
        )
    )
    from bot.diagnosis.classifier import Classifier
    from bot.intake.log_input import text_to_lines

    kb = load_knowledge(directory)
    diagnosis = Classifier(kb).classify(text_to_lines("OSError: [Errno 28] No space left on device: '/tmp/ckpt'"))
    assert diagnosis.failure_class == "disk_full"


def test_every_class_says_what_a_rerun_can_do() -> None:
    kb = load_knowledge()
    assert all(failure_class.rerun is not None for failure_class in kb)
    transient = {c.id for c in kb if c.rerun is not None and c.rerun.transient}
    assert transient == {"preemption", "distributed_setup"}
    assert kb["quota_exhausted"].rerun.for_variant("stockout").transient  # a stockout, not a quota
    assert kb["accelerator_oom"].rerun.changes == ["halve_batch_size", "larger_accelerator"]  # remediation order


WIDGET_FLAKE = {
    "id": "widget_flake",
    "title": "The widget service flaked",
    "symptom": "A call to the widget service timed out once.",
    "first_checks": ["Check the widget service's status page."],
    "remediation": ["Rerun in another region; the widget service is regional."],
    "avoid": ["Do not rewrite the widget client."],
    "signals": [{"name": "widget_timeout", "pattern": r"WIDGET_SERVICE_TIMEOUT", "weight": 0.95}],
    "rerun": {
        "transient": True,
        "why": "A widget timeout is transient: the widget service was briefly unreachable.",
        "changes": ["other_region"],
    },
}


def test_a_throwaway_class_is_classified_rendered_and_planned_from_its_own_file(tmp_path: Path) -> None:
    from bot.chat.rerun_offer import rerun_offer
    from bot.chat.rerun_plan import plan_rerun
    from bot.diagnosis.classifier import Classifier
    from bot.intake.log_input import text_to_lines
    from bot.render.alert_actions import ACTION_RERUN
    from bot.render.alert_context import AlertContext
    from bot.render.channel_message import diagnosis_message
    from bot.render.modal import rerun_modal
    from standins.google_apis import custom_job_json

    directory = _copy_kb(tmp_path)
    (directory / "widget_flake.yaml").write_text(yaml.safe_dump(WIDGET_FLAKE, sort_keys=False))
    kb = load_knowledge(directory)
    raw = custom_job_json("acme-ml", "us-central1", "42")
    raw["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {"machineType": "n1-standard-8"}  # any region will do

    diagnosis = Classifier(kb).classify(text_to_lines("ERROR widget call failed: WIDGET_SERVICE_TIMEOUT after 30s"))
    offer = rerun_offer(kb, diagnosis)
    message = diagnosis_message(diagnosis, AlertContext(job_id="42", job_key="acme-ml/42", rerun_offer=offer))
    plan = plan_rerun(raw, diagnosis, job_key="acme-ml/42", regions=["us-central1", "europe-west4"], knowledge=kb)

    assert diagnosis.failure_class == "widget_flake"
    [rerun] = [
        e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"] if e["action_id"] == ACTION_RERUN
    ]
    assert rerun["text"]["text"] == "Rerun"
    assert rerun["confirm"]["text"]["text"].startswith(
        "An unchanged rerun can help. A widget timeout is transient: the widget service was briefly unreachable. "
        "The form proposes another configured region that offers the accelerator."
    )
    assert plan.suggested.region == "europe-west4" and plan.steps[0].status == "proposed"
    modal = json.dumps(rerun_modal(plan), ensure_ascii=False)
    assert "A widget timeout is transient" in modal and "region: us-central1 → europe-west4" in modal
    with pytest.raises(KeyError):
        load_knowledge()["widget_flake"]  # the bundled knowledge base is untouched


def _kb_check(directory: Path) -> subprocess.CompletedProcess:
    """`trainmedic kb check --knowledge DIRECTORY`, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "bot", "kb", "check", "--knowledge", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_kb_check_command_exits_non_zero_with_a_clear_message(tmp_path: Path) -> None:
    directory = _copy_kb(tmp_path)
    _edit(directory, "quota_exhausted", _set_signal("pattern", "quota ("))
    bad = _kb_check(directory)
    assert bad.returncode == 1
    assert "quota_exhausted.yaml" in bad.stderr and "signals[0](quota_metrics_exceed_limits).pattern" in bad.stderr
    good = subprocess.run([sys.executable, "-m", "bot", "kb", "check"], capture_output=True, text=True, timeout=60)
    assert good.returncode == 0 and "13 classes" in good.stdout


def test_kb_check_words_a_pattern_re2_refuses_without_re2s_own_log_lines(tmp_path: Path) -> None:
    directory = _copy_kb(tmp_path)
    _edit(directory, "quota_exhausted", _set_signal("pattern", "(?<=GPU)s exceeded"))  # Python's re takes it
    done = _kb_check(directory)
    assert done.returncode == 1
    # the problem and the count, nothing else: no "re2.cc" error line or absl warning from RE2's C++ logging
    problem, summary = done.stderr.splitlines()
    assert problem.endswith(
        "signals[0](quota_metrics_exceed_limits).pattern: not RE2 syntax (no look-around or back-references): "
        "invalid perl operator: (?<="
    )
    assert summary == "trainmedic kb check: 1 problem(s) in 1 file(s)"


def test_every_problem_of_every_file_is_reported(tmp_path: Path) -> None:
    directory = _copy_kb(tmp_path)
    oom = _edit(directory, "accelerator_oom", lambda d: d.update(colour="red", remediation=[]))
    quota = _edit(directory, "quota_exhausted", _set_signal("pattern", "quota ("))
    host = _edit(directory, "host_oom", lambda d: (d.update(id="ram_oom"), _set_signal("weight", 7)(d)))
    with pytest.raises(KnowledgeBaseError) as caught:
        load_knowledge(directory)
    problems = [(Path(path).stem, field) for path, field, _ in caught.value.problems]
    assert sorted(problems) == sorted(
        [
            ("accelerator_oom", "remediation"),
            ("accelerator_oom", "colour"),
            ("host_oom", f"signals[0]({yaml.safe_load(host.read_text())['signals'][0]['name']}).weight"),
            ("host_oom", "id"),
            ("quota_exhausted", "signals[0](quota_metrics_exceed_limits).pattern"),
        ]
    )

    done = _kb_check(directory)

    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[-1] == "trainmedic kb check: 5 problem(s) in 3 file(s)"
    assert "more problem" not in done.stderr
    for path in (oom, quota, host):
        assert sum(line.startswith(f"{path}: ") for line in lines) == (1 if path == quota else 2)
    assert f"{oom}: colour: unknown key" in lines
    assert f"{oom}: remediation: List should have at least 1 item after validation, not 0" in lines
    assert f"{host}: id: 'ram_oom' must equal the file name 'host_oom'" in lines


def test_all_of_a_class_files_rules_are_reported_at_once(tmp_path: Path) -> None:
    directory = _copy_kb(tmp_path)
    path = _edit(directory, "host_oom", lambda d: (d.update(avoid=[]), d["signals"].append(dict(d["signals"][0]))))
    with pytest.raises(KnowledgeBaseError) as caught:
        load_knowledge(directory)
    assert caught.value.path == str(path)
    assert "avoid: say what not to do" in caught.value.problem and "duplicate names" in caught.value.problem
    assert not caught.value.problem.startswith("Value error")
