"""Memory does not follow the size of the entries a job logs: what is stored per entry and per job is capped, and
a push reads its job's entries once. The alert service is the one handlers/app.py builds (same store cap), driven
one push at a time so that tracemalloc sees exactly one push's allocations."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.alerting.alerts import MAX_JOB_ENTRIES
from bot.config import load_settings
from bot.intake.stored_entry import TEXT_HEAD, TEXT_TAIL
from handlers.app import Services, build_services
from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry
from standins.slack_api import FakeSlackApi
from tests.live_service import standin_environ

PROJECT, REGION = "acme-ml", "us-central1"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has 1.02 GiB free."
MIB = 1024 * 1024


def big_entry(job_id: str, n: int) -> dict:
    """A 250 KB traceback entry whose decisive line is its last."""
    text = "Traceback (most recent call last):\n" + ("  frame " + "x" * 1990 + "\n") * 125 + OOM
    return log_entry(PROJECT, job_id, text, task_name=f"workerpool0-{n % 4}", severity="ERROR", insert_id=f"big-{n}")


@pytest.fixture
def services(tmp_path: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis) -> Iterator[Services]:
    environ = standin_environ(
        tmp_path, fake_slack, fake_google, routing={"default_channel": "#ml-alerts", "regions": [REGION]}
    )
    built = build_services(load_settings(environ))
    yield built
    built.store.close()


def test_a_push_for_a_job_of_forty_250_kb_entries_stays_small(services, fake_slack, fake_google) -> None:
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "5001"))
    alerts = services.alerts
    first = alerts.handle_log_entry(big_entry("5001", 0), deadline=alerts.deadline(25))
    assert first.status == "posted" and first.failure_class == "accelerator_oom"
    for n in range(1, 40):
        alerts.handle_log_entry(big_entry("5001", n), deadline=alerts.deadline(25))

    stored = services.store.entries(f"{PROJECT}/5001")
    assert len(stored) == 40
    assert max(len(json.dumps(entry)) for entry in stored) < TEXT_HEAD + TEXT_TAIL + 2048  # not 250 KB
    assert all(entry["textPayload"].endswith(OOM) for entry in stored)  # the decisive tail is kept

    tracemalloc.start()
    try:
        outcome = alerts.handle_log_entry(big_entry("5001", 40), deadline=alerts.deadline(25))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcome.status in ("updated", "unchanged")
    assert peak < 8 * MIB, f"one push peaked at {peak / MIB:.1f} MiB"
    [message] = fake_slack.posted()
    assert "CUDA out of memory" in json.dumps(message["blocks"])


def test_entries_fetched_from_cloud_logging_are_stored_small_too(services, fake_slack, fake_google) -> None:
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "5002"))
    fake_google.seed_log_entries([big_entry("5002", n) for n in range(3)])
    alerts = services.alerts
    failed = log_entry(PROJECT, "5002", "Job failed.", insert_id="5002-failed", timestamp="2026-02-23T23:59:00Z")

    outcome = alerts.handle_log_entry(failed, deadline=alerts.deadline(25))

    assert outcome.status == "posted" and outcome.failure_class == "accelerator_oom"
    stored = services.store.entries(f"{PROJECT}/5002")
    assert len(stored) == 4 and max(len(json.dumps(entry)) for entry in stored) < TEXT_HEAD + TEXT_TAIL + 2048
    pages = [r.json for r in fake_google.requests if r.path == "/v2/entries:list"]
    assert pages and all(page["pageSize"] <= 50 for page in pages)  # never a thousand 250 KB entries at once


def test_a_job_keeps_at_most_max_job_entries(services) -> None:
    added = [services.store.add_entry(f"{PROJECT}/5003", f"e{n}", {"n": n}) for n in range(MAX_JOB_ENTRIES + 5)]
    assert added.count(True) == MAX_JOB_ENTRIES == services.store.count_entries(f"{PROJECT}/5003")
