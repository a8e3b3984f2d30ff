"""Classifier speed: lines/s and the time to classify a 5,000-line job log (target: under 20 ms).

Run: ./dev bench   (or .venv/bin/python benchmarks/bench_classifier.py)
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import load_knowledge
from bot.intake.log_input import parse_log_text

ROOT = Path(__file__).resolve().parent.parent


def make_log(lines: int, seed: int = 7, noise: float = 0.1) -> str:
    """Progress lines, INFO chatter, `noise` share of error lines from every class, and one OOM near the end."""
    rng = random.Random(seed)
    corpus = [json.loads(line)["text"] for line in (ROOT / "tests/fixtures/corpus_dev.jsonl").open()]
    out = []
    for i in range(lines):
        roll = rng.random()
        if roll < (1 - noise) * 0.65:
            out.append(f"[2026-11-29 10:{i // 60 % 60:02d}:{i % 60:02d}] step {i} loss={2.5 - i / lines:.4f} lr=3e-4")
        elif roll < 1 - noise:
            out.append(f"I1129 10:00:{i % 60:02d}.123456 12345 trainer.py:{rng.randint(1, 900)}] processed batch {i}")
        else:
            out.append(rng.choice(corpus).splitlines()[0][:300])
    out.insert(int(lines * 0.95), "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0)")
    return "\n".join(out[:lines])


def main() -> None:
    classifier = Classifier(load_knowledge())
    for label, noise in (("typical (1% error lines)", 0.01), ("noisy (10% error lines, every class)", 0.1)):
        lines = parse_log_text(make_log(5000, noise=noise))
        classifier.classify(lines)  # warm up
        timings = []
        for _ in range(30):
            started = time.perf_counter()
            classifier.classify(lines)
            timings.append(time.perf_counter() - started)
        median = statistics.median(timings)
        print(
            f"classify 5,000-line log, {label}: median {median * 1000:.1f} ms, best {min(timings) * 1000:.1f} ms "
            f"(target < 20 ms), {len(lines) / median:,.0f} lines/s"
        )
    big = parse_log_text(make_log(100_000))
    started = time.perf_counter()
    classifier.classify(big)
    elapsed = time.perf_counter() - started
    print(f"classify 100,000-line log: {elapsed * 1000:.0f} ms, {len(big) / elapsed:,.0f} lines/s")
    text = make_log(5000)
    parses = []
    for _ in range(10):
        started = time.perf_counter()
        parse_log_text(text)
        parses.append(time.perf_counter() - started)
    print(  # 3 of 5 lines have a timestamp in front that comes off (bot/intake/line_prefix.py)
        f"parse 5,000 plain lines: median {statistics.median(parses) * 1000:.1f} ms, best {min(parses) * 1000:.1f} ms"
    )
    # the whole command as a user runs it: interpreter start, imports, knowledge base load and compile, one log
    case = json.loads((ROOT / "tests/fixtures/corpus_dev.jsonl").open().readline())["text"]
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as file:
        file.write(case)
    cli = [sys.executable, "-c", "import sys; from handlers.cli import main; sys.exit(main(sys.argv[1:]))"]
    cli += ["diagnose", file.name]
    runs = []
    for _ in range(5):
        started = time.perf_counter()
        done = subprocess.run(cli, cwd=ROOT, capture_output=True, text=True, check=True)
        assert "class:" in done.stdout, done.stdout[:200]  # it diagnosed (a silent exit would time nothing)
        runs.append(time.perf_counter() - started)
    Path(file.name).unlink()
    print(
        f"trainmedic diagnose on one file (process start to exit): median {statistics.median(runs) * 1000:.0f} ms, "
        f"best {min(runs) * 1000:.0f} ms (target < 1 s)"
    )


if __name__ == "__main__":
    main()
