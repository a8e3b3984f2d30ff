"""`trainmedic` as a user runs it: a real subprocess, real files and stdin."""

from __future__ import annotations

import json
import os
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


def run(*args: str, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
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
    assert done.returncode == 1
    assert "nope.log: No such file or directory" in done.stderr


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
