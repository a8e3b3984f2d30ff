"""`trainmedic demo` works for a newcomer: real service, stand-ins, one message per failed job, Block Kit saved."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
    assert "6 Slack messages for 6 failed jobs" in done.stdout
    assert "HTTP 200 duplicate" in done.stdout and "HTTP 200 held" in done.stdout
    files = sorted((out / "blocks").glob("*.json"))
    assert len(files) == 6
    channels = set()
    for path in files:
        blocks = json.loads(path.read_text())["blocks"]
        assert 0 < len(blocks) <= 50
        raw = path.read_text()
        assert "<!channel>" not in raw and "ghp_abcdefghij" not in raw
        channels.add(path.name.split("-training-job")[0].split("-", 1)[1])
    assert {"nlp-alerts", "vision-alerts", "ml-platform", "ml-alerts"} <= channels
    assert "ran out of device memory" in done.stdout and "Cascade" in done.stdout
    log_lines = (out / "service.log").read_text().splitlines()
    assert log_lines and all(json.loads(line)["severity"] for line in log_lines)
