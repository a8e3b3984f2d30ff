"""`trainmedic` as a user runs it: a real subprocess, real files and stdin."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OOM = "Epoch 3/10\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)\n"
ENTRIES = [
    {
        "insertId": "1",
        "resource": {"type": "ml_job", "labels": {"job_id": "99", "project_id": "acme", "task_name": "workerpool0-0"}},
        "severity": "ERROR",
        "textPayload": "ModuleNotFoundError: No module named 'transformers'",
        "timestamp": "2026-11-29T10:00:00Z",
    }
]


def run(
    *args: str, stdin: str | None = None, env: dict | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def test_diagnose_json_prints_one_object_per_path(tmp_path: Path) -> None:
    plain = tmp_path / "oom.log"
    plain.write_text(OOM)
    array = tmp_path / "entries.json"
    array.write_text(json.dumps(ENTRIES, indent=2))
    lines = tmp_path / "entries.jsonl"
    lines.write_text("\n".join(json.dumps(e) for e in ENTRIES * 2))
    done = run("diagnose", "--format", "json", str(plain), str(array), "-", str(lines), stdin=OOM)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row["source"] for row in rows] == [str(plain), str(array), "-", str(lines)]
    assert [row["failure_class"] for row in rows] == [
        "accelerator_oom",
        "container_startup",
        "accelerator_oom",
        "container_startup",
    ]
    for row in rows:
        assert {"failure_class", "confidence", "title", "evidence", "remediation", "avoid", "commands"} <= set(row)
        assert all(set(alt) == {"failure_class", "confidence"} for alt in row["alternatives"])
        assert 0 <= row["confidence"] <= 1


def test_diagnose_text_reads_well(tmp_path: Path) -> None:
    path = tmp_path / "oom.log"
    path.write_text(OOM)
    done = run("diagnose", str(path))
    assert done.returncode == 0
    assert "Accelerator (GPU/TPU) ran out of device memory" in done.stdout
    assert "CUDA out of memory" in done.stdout
    assert "\x1b[" not in done.stdout  # no colour codes when not a terminal


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    done = run("diagnose", str(tmp_path / "nope.log"))
    assert done.returncode == 2
    assert f"{tmp_path / 'nope.log'}: cannot read it: No such file or directory" in done.stderr
    assert done.stdout == ""


def test_unusable_inputs_are_refused_with_the_reason_and_the_other_paths_still_diagnosed(tmp_path: Path) -> None:
    good = tmp_path / "oom.log"
    good.write_text(OOM)
    empty = tmp_path / "empty.log"
    empty.write_text("")
    blank = tmp_path / "blank.log"
    blank.write_text("\n  \n\t\n")
    nul = tmp_path / "core.bin"
    nul.write_bytes(b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 200 + b"CUDA out of memory")
    noise = tmp_path / "noise.dat"
    noise.write_bytes(bytes(range(128, 256)) * 20)  # not one valid UTF-8 sequence
    gzipped = tmp_path / "job.log.gz"
    gzipped.write_bytes(gzip.compress(OOM.encode()))
    folder = tmp_path / "logs"
    folder.mkdir()
    missing = tmp_path / "nope.log"
    no_entries = tmp_path / "entries.json"
    no_entries.write_text("[]\n")  # what gcloud logging read prints when the filter matches nothing
    paths = [empty, good, blank, nul, noise, gzipped, folder, missing, no_entries, "-", good]

    done = run("diagnose", "--format", "json", *map(str, paths), stdin="")

    assert done.returncode == 2
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(row["source"], row["failure_class"]) for row in rows] == [(str(good), "accelerator_oom")] * 2
    errors = done.stderr.splitlines()
    assert errors == [
        f"trainmedic diagnose: {empty}: the input is empty; not diagnosed",
        f"trainmedic diagnose: {blank}: the input is empty; not diagnosed",
        errors[2],
        errors[3],
        errors[4],
        f"trainmedic diagnose: {folder}: cannot read it: Is a directory; not diagnosed",
        f"trainmedic diagnose: {missing}: cannot read it: No such file or directory; not diagnosed",
        f"trainmedic diagnose: {no_entries}: the input is empty: a JSON array with no log entries (did the log "
        "filter match none?); not diagnosed",
        "trainmedic diagnose: stdin (-): the input is empty; not diagnosed",
    ]
    assert errors[2].startswith(f"trainmedic diagnose: {nul}: looks binary (")
    assert errors[3].startswith(f"trainmedic diagnose: {noise}: looks binary (")
    assert errors[4].startswith(f"trainmedic diagnose: {gzipped}: looks binary (gzip-compressed")
    text = run("diagnose", str(empty), str(good))
    assert text.returncode == 2 and "no known failure pattern" not in text.stdout
    assert text.stdout.startswith("Accelerator (GPU/TPU) ran out of device memory")


def test_an_unreadable_file_is_named_and_the_rest_diagnosed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from handlers import cli

    good = tmp_path / "oom.log"
    good.write_text(OOM)
    locked = tmp_path / "locked.log"
    locked.write_text(OOM)
    read_bytes = Path.read_bytes

    def refuse(path: Path) -> bytes:  # chmod 000 does not stop root, who runs these tests in CI containers
        if path == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    assert cli.main(["diagnose", "--format", "json", str(locked), str(good)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"trainmedic diagnose: {locked}: cannot read it: Permission denied; not diagnosed\n"
    assert [json.loads(line)["source"] for line in captured.out.splitlines()] == [str(good)]


def test_kb_list_json() -> None:
    done = run("kb", "list", "--format", "json")
    assert done.returncode == 0
    rows = json.loads(done.stdout)
    assert len(rows) == 13
    assert all({"id", "title", "first_checks", "remediation", "avoid"} <= set(row) for row in rows)


def test_help_needs_no_credentials_or_network_and_is_quick() -> None:
    env = {"GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent.json", "NO_PROXY": "*", "HTTPS_PROXY": "http://127.0.0.1:9"}
    started = time.monotonic()
    done = run("--help", env=env)
    assert done.returncode == 0 and "diagnose" in done.stdout
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("module", ["google.cloud.aiplatform", "google.cloud.aiplatform_v1", "google.cloud.logging"])
def test_diagnose_keeps_google_clients_off_its_path(tmp_path: Path, module: str) -> None:
    path = tmp_path / "oom.log"
    path.write_text(OOM)
    code = (
        f"import sys, runpy; sys.argv=['trainmedic','diagnose','--format','json',{str(path)!r}]\n"
        "try:\n    runpy.run_module('bot', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        f"sys.stderr.write('LOADED' if {module!r} in sys.modules else 'CLEAN')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.stderr.endswith("CLEAN"), done.stderr


def test_diagnose_with_the_custom_job_resource(tmp_path: Path) -> None:
    from standins.google_apis import custom_job_json

    job = custom_job_json(
        "acme", "europe-west4", "77", error={"code": 8, "message": "Replicas low on memory: workerpool0."}
    )
    job["jobSpec"]["serviceAccount"] = ""
    (tmp_path / "job.json").write_text(json.dumps(job))
    log = tmp_path / "empty.log"
    log.write_text("INFO service Job is running.\n")
    done = run("diagnose", "--format", "json", "--custom-job", str(tmp_path / "job.json"), str(log))
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert row["failure_class"] == "host_oom"
    assert row["details"]["region"] == "europe-west4" and row["details"]["project"] == "acme"
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    failed = run("diagnose", "--custom-job", str(bad), str(log))
    assert failed.returncode == 1 and "not a CustomJob" in failed.stderr


# ------------------------------------------------------------------------------------- the job's facts


def _numbered_job(tmp_path: Path, **spec: object) -> Path:
    """A CustomJob as `gcloud ai custom-jobs describe` prints it: its name holds the project NUMBER."""
    from standins.google_apis import custom_job_json

    job = custom_job_json(
        "608533675308",
        "europe-west4",
        "77",
        error={
            "code": 8,
            "message": "Replicas low on memory: workerpool0. token=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        },
    )
    job["jobSpec"]["workerPoolSpecs"].append(
        {"machineSpec": {"machineType": "n1-highmem-16"}, "replicaCount": "3", "containerSpec": {"imageUri": "x"}}
    )
    job["jobSpec"]["scheduling"] = {"strategy": "SPOT"}
    job["jobSpec"].update(spec)
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return path


def test_text_shows_the_job_facts_it_used_and_keeps_the_project_id(tmp_path: Path) -> None:
    job = _numbered_job(tmp_path, serviceAccount="trainer@acme.iam.gserviceaccount.com")
    entries = tmp_path / "entries.json"
    entries.write_text(json.dumps(ENTRIES))  # resource.labels.project_id: "acme"

    done = run("diagnose", "--custom-job", str(job), str(entries))

    assert done.returncode == 0, done.stderr
    facts = done.stdout.split("The job:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert facts == [
        "  state:            JOB_STATE_FAILED",
        "  error:            8 RESOURCE_EXHAUSTED: Replicas low on memory: workerpool0. token=[REDACTED]",
        "  workerpool0:      a2-highgpu-1g, NVIDIA_TESLA_A100 x 1, 1 replica",
        "  workerpool1:      n1-highmem-16, 3 replicas",
        "  Spot:             yes",
        "  service account:  trainer@acme.iam.gserviceaccount.com",
        "  region:           europe-west4",
        "  project:          acme (number 608533675308)",
    ]
    assert "ghp_" not in done.stdout
    without = run("diagnose", str(entries))
    assert "The job:" not in without.stdout

    row = json.loads(run("diagnose", "--format", "json", "--custom-job", str(job), str(entries)).stdout)
    assert row["details"]["project"] == "acme" and row["details"]["project_number"] == "608533675308"
    assert all("--project=608533675308" not in command["command"] for command in row["commands"])


def test_a_project_id_read_from_the_service_accounts_address_is_said_to_be_read_there(tmp_path: Path) -> None:
    # the job's name holds its number only and the log names no project: the id comes from the account's address,
    # which a shared identity project's account would get wrong - the text says where it came from
    job = _numbered_job(tmp_path, serviceAccount="runner@shared-identities.iam.gserviceaccount.com")
    log = tmp_path / "plain.log"
    log.write_text(OOM)

    guessed = run("diagnose", "--custom-job", str(job), str(log))
    assert guessed.returncode == 0, guessed.stderr
    assert (
        "  project:          shared-identities (number 608533675308; id read from a service account's address: "
        "--project if not)"
    ) in guessed.stdout.splitlines()
    given = run("diagnose", "--custom-job", str(job), "--project", "acme-ml", str(log))
    assert "  project:          acme-ml (number 608533675308)" in given.stdout.splitlines()
    assert "read from" not in given.stdout


def test_a_job_without_a_service_account_runs_as_the_service_agent_and_a_number_is_never_the_project(
    tmp_path: Path,
) -> None:
    job = _numbered_job(tmp_path, serviceAccount="")
    log = tmp_path / "plain.log"
    log.write_text("INFO service Job is running.\n")  # no project id anywhere but the number in the job's name

    text = run("diagnose", "--custom-job", str(job), str(log)).stdout
    row = json.loads(run("diagnose", "--format", "json", "--custom-job", str(job), str(log)).stdout)

    agent = "service-608533675308@gcp-sa-aiplatform-cc.iam.gserviceaccount.com"
    assert f"  service account:  not set: Vertex AI's custom code service agent ({agent})" in text
    assert "  project:          id unknown (number 608533675308)" in text
    assert row["details"]["service_account"] == agent
    assert "project" not in row["details"] and row["details"]["project_number"] == "608533675308"


PERMISSION = (
    "google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/storage/v1/b/acme-data/o: "
    "someone@example.com does not have storage.objects.list access to the Google Cloud Storage bucket."
)


@pytest.mark.parametrize("with_job", [False, True])
def test_json_details_never_carry_a_placeholder(tmp_path: Path, with_job: bool) -> None:
    from standins.google_apis import custom_job_json

    log = tmp_path / "denied.log"
    log.write_text(PERMISSION + "\n")
    args = ["diagnose", "--format", "json", str(log)]
    if with_job:  # a job without a service account, and no project number anywhere: the agent is unknown
        job = custom_job_json("acme", "europe-west4", "77")
        job["jobSpec"]["serviceAccount"] = ""
        (tmp_path / "job.json").write_text(json.dumps(job))
        args[1:1] = ["--custom-job", str(tmp_path / "job.json")]

    row = json.loads(run(*args).stdout)

    assert row["failure_class"] == "permission_denied"
    assert "service_account" not in row["details"] and "project_number" not in row["details"]
    for value in row["details"].values():
        assert not re.search(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b", value), row["details"]  # SERVICE_ACCOUNT_EMAIL...
    commands = " ".join(command["command"] for command in row["commands"])
    assert "serviceAccount:SERVICE_ACCOUNT_EMAIL" in commands  # the command says what to fill in


def test_a_fetched_job_keeps_the_project_id_it_was_asked_for() -> None:
    from bot.chat.diagnose import JobDiagnoser
    from bot.diagnosis.classifier import Classifier
    from bot.diagnosis.knowledge import load_knowledge
    from bot.jobs.reference import parse_job_reference
    from standins.google_apis import custom_job_json

    class Jobs:  # Vertex AI answers with the project NUMBER in the job's name
        def get_job_raw(self, *, project: str, region: str, job_id: str) -> dict:
            return custom_job_json(
                "608533675308", region, job_id, error={"code": 8, "message": "Replicas low on memory"}
            )

    diagnoser = JobDiagnoser(
        jobs=Jobs(), logs=None, classifier=Classifier(load_knowledge()), regions=["us-central1"], default_project=None
    )
    result = diagnoser.diagnose(parse_job_reference("acme-ml/77"))

    assert result.diagnosis.details["project"] == "acme-ml"
    assert result.diagnosis.details["project_number"] == "608533675308"
    assert result.context.job.project == "acme-ml" and result.job.job_key == "acme-ml/77"


def test_diagnose_job_shows_the_facts_of_the_fetched_job(tmp_path: Path) -> None:
    from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry

    with FakeGoogleApis() as google:
        google.seed_job(custom_job_json("acme-ml", "us-central1", "1501"))
        google.seed_log_entries([log_entry("acme-ml", "1501", OOM, task_name="workerpool0-0", severity="ERROR")])
        env = {"VERTEX_API_ENDPOINT": google.base_url, "LOGGING_API_ENDPOINT": google.base_url}
        done = run("diagnose", "--job", "acme-ml/1501", "--region", "us-central1", env=env)

    assert done.returncode == 0, done.stderr
    assert "class:      accelerator_oom" in done.stdout
    assert "  workerpool0:      a2-highgpu-1g, NVIDIA_TESLA_A100 x 1, 1 replica" in done.stdout
    assert "  project:          acme-ml\n" in done.stdout
    both = run("diagnose", "--job", "acme-ml/1501", "--custom-job", str(tmp_path / "job.json"))
    assert both.returncode == 2 and "not both" in both.stderr


# ------------------------------------------------------------------------------------- history


def test_history_after_the_demo_finds_the_demos_store(tmp_path: Path) -> None:
    demo = run("demo", "--out", str(tmp_path / "demo"))
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    command = next(line.strip() for line in demo.stdout.splitlines() if line.strip().startswith("trainmedic history"))
    assert command == f"trainmedic history --store sqlite:///{tmp_path / 'demo' / 'state.db'} acme-ml/7310001"

    done = run(*command.split()[1:])

    assert done.returncode == 0, done.stderr
    alert, actions = done.stdout.splitlines()
    assert alert.startswith("alert posted in channel C") and "accelerator_oom (" in alert
    assert actions.startswith("no recorded actions for acme-ml/7310001 in sqlite:///")


def test_history_with_no_store_named_reads_the_demos_store_where_the_demo_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new user runs `trainmedic demo`, then `trainmedic history JOB` in the same folder: no bot store is there,
    the demo's is, and that is the one read (said on stderr). Named stores are never swapped for it."""
    monkeypatch.delenv("TRAINMEDIC_STORE", raising=False)
    demo = run("demo", cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert (tmp_path / "demo-output" / "state.db").is_file()

    done = run("history", "acme-ml/7310001", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "reading the demo's store" in done.stderr and str(tmp_path / "demo-output" / "state.db") in done.stderr
    assert done.stdout.startswith("alert posted in channel C") and "accelerator_oom (" in done.stdout
    assert not (tmp_path / ".trainmedic").exists()  # looking did not create the default store
    named = run("history", "--store", f"sqlite:///{tmp_path / 'other.db'}", "acme-ml/7310001", cwd=tmp_path)
    assert named.returncode == 1 and "no store at" in named.stderr


def test_history_says_which_store_it_read_and_how_to_read_another(tmp_path: Path) -> None:
    absent = tmp_path / "absent" / "state.db"
    missing = run("history", "acme/1", env={"TRAINMEDIC_STORE": f"sqlite:///{absent}"})
    assert missing.returncode == 1
    assert f"no store at {absent} (sqlite:///{absent}, from TRAINMEDIC_STORE)" in missing.stderr
    assert "--store" in missing.stderr and "demo-output/state.db" in missing.stderr
    assert not absent.parent.exists()  # looking does not create an empty store

    from bot.store.sqlite import SqliteStore

    SqliteStore(tmp_path / "state.db").close()
    empty = run("history", "--store", f"sqlite:///{tmp_path / 'state.db'}", "acme/1")
    assert empty.returncode == 0
    assert f"no alert and no recorded actions for acme/1 in sqlite:///{tmp_path / 'state.db'} (from --store)" in (
        empty.stdout
    )
    bad = run("history", "--store", "postgres://x", "acme/1")
    assert bad.returncode == 2 and "--store" in bad.stderr


def test_the_demo_prints_a_history_command_relative_to_where_it_runs(tmp_path: Path) -> None:
    from handlers.demo import history_command

    assert history_command(tmp_path / "demo-output", "p/1", cwd=tmp_path) == (
        "trainmedic history --store sqlite:///demo-output/state.db p/1"
    )
    elsewhere = tmp_path / "elsewhere"
    assert history_command(tmp_path / "out", "p/1", cwd=elsewhere) == (
        f"trainmedic history --store sqlite:///{tmp_path / 'out' / 'state.db'} p/1"
    )


def test_diagnose_fills_the_commands_with_the_project_and_region_given_for_plain_logs(tmp_path: Path) -> None:
    log = tmp_path / "refused.log"
    log.write_text(
        "google.api_core.exceptions.PermissionDenied: 403 Permission 'aiplatform.customJobs.create' denied.\n"
    )
    done = run("diagnose", "--format", "json", "--project", "acme-ml", "--region", "europe-west4", str(log))
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert row["details"]["project"] == "acme-ml" and row["details"]["region"] == "europe-west4"
    assert any("projects add-iam-policy-binding acme-ml " in c["command"] for c in row["commands"])
    assert not any("PROJECT_ID" in c["command"] for c in row["commands"])


def test_dev_runs_trainmedic_where_it_was_typed(tmp_path: Path) -> None:
    """`./dev trainmedic diagnose job.log` from another folder reads that folder's job.log (the script changes into
    the repository only to set up)."""
    (tmp_path / "job.log").write_text("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    # the virtualenv running this test (`./dev test` made it): set up already, so ./dev only runs the command
    venv = Path(sys.prefix)
    assert sys.prefix != sys.base_prefix and (venv / "bin" / "trainmedic").exists(), "run the tests from a virtualenv"
    env = {**os.environ, "TRAINMEDIC_VENV": str(venv)}
    done = subprocess.run(
        [str(ROOT / "dev"), "trainmedic", "diagnose", "--format", "json", "job.log"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["failure_class"] == "accelerator_oom"


def test_the_rerun_plan_of_an_oom_job_halves_its_batch_size_in_text_and_json(tmp_path: Path) -> None:
    from standins.google_apis import custom_job_json

    raw = custom_job_json("608533675308", "europe-west4", "77")
    raw["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] = ["--data=gs://acme-data/train/", "--batch-size=512"]
    job = tmp_path / "job.json"
    job.write_text(json.dumps(raw))
    log = tmp_path / "oom.log"
    log.write_text(OOM)

    text = run("diagnose", "--custom-job", str(job), "--rerun-plan", str(log))
    assert text.returncode == 0, text.stderr
    plan = text.stdout.split("Rerun plan for accelerator_oom (job 77):\n", 1)[1].splitlines()
    assert plan[1].startswith('  button: "Rerun with changes" - ')
    assert plan[2].startswith("  1. half the per-device batch size (if the job's args set one) - proposed: ")
    assert "  the proposed rerun changes: args: --batch-size=512 → --batch-size=256" in plan

    done = run("diagnose", "--format", "json", "--custom-job", str(job), "--rerun-plan", str(log))
    row = [json.loads(line) for line in done.stdout.splitlines()]
    assert row[0]["failure_class"] == "accelerator_oom"
    rerun = row[1]["rerun_plan"]
    assert rerun["mode"] == "changes" and rerun["changes"] == ["args: --batch-size=512 → --batch-size=256"]
    assert [(s["change"], s["status"]) for s in rerun["steps"]][0] == ("halve_batch_size", "proposed")


def test_a_rerun_plan_needs_the_jobs_spec(tmp_path: Path) -> None:
    log = tmp_path / "oom.log"
    log.write_text(OOM)
    done = run("diagnose", "--rerun-plan", str(log))
    assert done.returncode == 2 and done.stdout == ""
    assert "--rerun-plan needs the job's spec: give --custom-job FILE" in done.stderr
