"""Alert path under load: 1,000 Pub/Sub pushes for 20 failed jobs, every message delivered 3 times, over HTTP.

Prints throughput, p50/p99 latency per push, the number of Slack posts (must be 20), RSS after, and the cold
start of `trainmedic serve` (process start to /healthz 200; target under 2 s).

Run: ./dev bench   (or .venv/bin/python benchmarks/bench_push.py)
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry  # noqa: E402
from standins.slack_api import FakeSlackApi  # noqa: E402
from tests.live_service import LiveService, ServeProcess, base_environ, envelope  # noqa: E402

JOBS = 20
PUSHES = 1000
COPIES = 3
PROJECT = "bench-proj"
TEXTS = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1) ran for 600000 milliseconds before timing out.",
    "ModuleNotFoundError: No module named 'transformers'",
    "step 1200 loss=nan grad_norm=nan",
]


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def build_deliveries() -> list[dict]:
    unique_per_job = PUSHES // COPIES // JOBS  # entries per job, each delivered COPIES times
    messages = []
    for j in range(JOBS):
        job_id = str(900000 + j)
        for k in range(unique_per_job - 1):
            entry = log_entry(
                PROJECT,
                job_id,
                TEXTS[(j + k) % len(TEXTS)],
                task_name=f"workerpool{min(k, 1)}-{k}",
                severity="ERROR",
                timestamp=f"2026-11-29T10:{k // 60:02d}:{k % 60:02d}Z",
                insert_id=f"{job_id}-{k}",
            )
            messages.append((f"{job_id}-{k}", entry))
        messages.append(
            (
                f"{job_id}-failed",
                log_entry(PROJECT, job_id, "Job failed.", insert_id=f"{job_id}-jf", timestamp="2026-11-29T10:59:59Z"),
            )
        )
    deliveries = [envelope(entry, message_id) for message_id, entry in messages for _ in range(COPIES)]
    while len(deliveries) < PUSHES:  # top up with more duplicates to reach exactly PUSHES
        deliveries.append(deliveries[len(deliveries) % len(messages)])
    random.Random(5).shuffle(deliveries)
    return deliveries[:PUSHES]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeSlackApi() as slack, FakeGoogleApis() as google:
        for j in range(JOBS):
            google.seed_job(
                custom_job_json(PROJECT, "us-central1", str(900000 + j), state="JOB_STATE_RUNNING", error=None)
            )
        environ = base_environ(
            Path(tmp),
            SLACK_API_URL=slack.base_url,
            VERTEX_API_ENDPOINT=google.base_url,
            LOGGING_API_ENDPOINT=google.base_url,
        )
        deliveries = build_deliveries()
        latencies: list[float] = []
        redeliveries = 0
        with LiveService(environ) as service, httpx.Client(base_url=service.url, timeout=60) as client:

            def deliver(body: dict) -> None:
                nonlocal redeliveries
                while True:
                    started = time.perf_counter()
                    status = client.post("/pubsub/push", json=body).status_code
                    latencies.append(time.perf_counter() - started)
                    if status == 200:
                        return
                    redeliveries += 1
                    time.sleep(0.05)

            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=8) as pool:
                list(pool.map(deliver, deliveries))
            elapsed = time.perf_counter() - started
        latencies.sort()
        posts = len(slack.posted())
        print(f"{len(deliveries)} pushes for {JOBS} failed jobs ({COPIES}x delivery), 8 concurrent senders")
        print(f"  throughput: {len(deliveries) / elapsed:,.0f} pushes/s ({elapsed:.2f} s)")
        print(
            f"  per push: p50 {statistics.median(latencies) * 1000:.1f} ms, "
            f"p99 {latencies[int(len(latencies) * 0.99) - 1] * 1000:.1f} ms; {redeliveries} 503s redelivered"
        )
        print(f"  Slack posts: {posts} (must be {JOBS}); chat.update calls: {len(slack.calls_to('chat.update'))}")
        print(f"  RSS after (service, stand-ins and sender in one process): {rss_mib():.0f} MiB")
        if posts != JOBS:
            raise SystemExit(f"FAIL: {posts} posts for {JOBS} failed jobs")

        starts = []
        for run in range(3):
            server = ServeProcess(environ, Path(tmp) / f"serve-{run}.log")
            try:
                starts.append(server.wait_ready())
            finally:
                server.stop()
        print(
            f"cold start, process start to /healthz 200: median {statistics.median(starts):.2f} s "
            f"(runs: {', '.join(f'{s:.2f}' for s in starts)}; target < 2 s)"
        )


if __name__ == "__main__":
    main()
