"""`trainmedic demo` works for a newcomer: real service, stand-ins, one message per failed job, Block Kit saved."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bot.render.block_kit import text_length
from bot.render.channel_message import CHANNEL_MESSAGE_TEXT

ROOT = Path(__file__).resolve().parent.parent


def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "bot", "demo", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "17 Slack messages: 16 failed jobs and 1 stuck job" in done.stdout
    assert "16 full cards in their threads" in done.stdout
    assert "HTTP 200 duplicate" in done.stdout and "HTTP 200 held" in done.stdout and "HTTP 200 owned" in done.stdout
    every = sorted(p for p in (out / "blocks").glob("*.json") if not p.name.endswith(".thread.json"))
    cards = sorted((out / "blocks").glob("*.thread.json"))
    messages = [m for m in every if m.with_name(m.name.removesuffix(".json") + ".thread.json").exists()]
    [stuck] = [m for m in every if m not in messages]  # the stuck job's message has no card
    assert "Waiting for quota" in stuck.read_text() and "quotas preferences create" in stuck.read_text()
    assert len(messages) == len(cards) == 16
    assert [c.name for c in cards] == [m.name.removesuffix(".json") + ".thread.json" for m in messages]
    channels = set()
    for path, card_path in zip(messages, cards, strict=True):
        blocks = json.loads(path.read_text())["blocks"]
        card = json.loads(card_path.read_text())["blocks"]
        assert 0 < len(blocks) <= 50 and 0 < len(card) <= 50
        assert text_length(blocks) <= CHANNEL_MESSAGE_TEXT, path.name  # one screen in the channel
        assert blocks[-1]["type"] == "actions" and all(b["type"] != "actions" for b in card)
        assert "*Avoid*" in card_path.read_text() and "*What to do*" in card_path.read_text()
        for raw in (path.read_text(), card_path.read_text()):
            assert "<!channel>" not in raw and "ghp_abcdefghij" not in raw
        channels.add(path.name.split("-", 1)[1].split("-training-job")[0].split("-incident")[0])
    assert {"nlp-alerts", "vision-alerts", "ml-platform", "ml-alerts"} <= channels
    assert "ran out of device memory" in done.stdout
    assert "workerpool1-0..2 timed out in NCCL collectives after workerpool0-0 ran out of GPU memory" in done.stdout
    assert done.stdout.count("characters of text (at most 1200)") == 17
    # the lifecycle: a failed pipeline run (one message naming its task), a refused creation told to its submitter,
    # a stuck job found by the scan, and a rerun from chat whose success is told in the alert's thread
    assert "| Pipeline churn-pipeline (train-model): " in done.stdout
    assert "-- D0DEMO004 (ts" in done.stdout  # the direct message to the submitter, found by email
    # a 403 naming nothing: the audit log's refused check names the permission and the bucket, and the card grants
    assert "Audit log: Permission 'storage.objects.get' denied" in done.stdout
    [audit_card] = [c for c in cards if "features-v7-train" in c.name]
    assert "add-iam-policy-binding gs://acme-ml-features" in audit_card.read_text()
    assert "scan -> 1 stuck job posted; scan again -> 0 posted" in done.stdout
    assert "scan -> 1 outcome told (Rerun succeeded in 2 h 10 min); scan again -> 0" in done.stdout
    assert "In its thread: Rerun succeeded in 2 h 10 min" in done.stdout
    log_lines = (out / "service.log").read_text().splitlines()
    assert log_lines and all(json.loads(line)["severity"] for line in log_lines)
