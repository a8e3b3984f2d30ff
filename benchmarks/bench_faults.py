"""Faults under load: the alert path's one-message-per-job promise while instances die, the store goes away and
Slack misbehaves.

Every scenario replays Pub/Sub pushes for failed jobs (default: 2,000 pushes for 50 jobs, every message delivered
3 times) against real `trainmedic serve` processes, OIDC-signed as Pub/Sub signs them, with the local stand-ins
for Slack's Web API, Vertex AI, Cloud Logging and Google's token certificates. Jobs fail one after another over
the load window: each job's error entries arrive while its CustomJob is still running (held), then its
`Job failed.` entry (the CustomJob turns JOB_STATE_FAILED the moment that entry is first sent), and Pub/Sub's
duplicates within a couple of seconds of each original. Like Pub/Sub, any push answered non-2xx or cut off is
delivered again later (backoff 1 s doubling to 10 s, a random live instance) until it gets a 2xx or the
scenario's deadline passes. A signed `/diagnose help` goes to a live instance every 2 s during the load.

Scenarios (`--scenario NAME`, repeatable; default all):
  sqlite           one instance, SQLite, no fault (the reference)
  firestore        two instances sharing the Firestore emulator, no fault
  kill9            two instances on Firestore; `kill -9` of one the moment Slack has carried out one of its posts
                   (before it hears the answer); what it never answered is redelivered to the other
  store-firestore  two instances on Firestore; the store unreachable for ~20 s mid-load: connections cut and
                   refused (a loopback relay sits between the instances and the emulator), the emulator
                   exported, stopped, restarted with its data, then connections accepted again
  store-sqlite     one instance on SQLite; the database locked for writes for ~20 s mid-load (another process
                   holds BEGIN EXCLUSIVE)
  slack-slow       one instance on SQLite; Slack carries every call out at once but answers 12 s later, for ~20 s
                   mid-load
  slack-429        one instance on SQLite; Slack answers 429 with Retry-After: 2 for ~20 s
  slack-500        one instance on SQLite; Slack answers HTTP 500 (nothing carried out) for ~20 s
  sigterm          one instance on SQLite; Slack posts answer in 12 s; SIGTERM while posts are in flight (SIGKILL
                   10 s later if still running, as Cloud Run does); a new instance takes over the redeliveries
  large            one instance on SQLite; 4 jobs x 200 entries x 250 KB, each pushed once (`Job failed.` 3 times)
                   and also in Cloud Logging (the service fetches 200 per job when it posts)

One row per scenario: visible messages per job in the Slack stand-in (posted minus deleted: min-max, jobs with
!= 1, lost jobs with 0), p50/p99 latency of the push requests that got an HTTP answer, peak RSS (VmHWM) of the
service process(es), and the latency of Slack's acknowledgement of `/diagnose help` (p50/max). The exit status is
1 when a job has no message or more than one.

Run: .venv/bin/python benchmarks/bench_faults.py [--quick | --full] [--scenario NAME ...] [--keep DIR]
(~10 min; --quick ~5 min, most of it the 60 s claim lease that kill9 waits out). `./dev bench` runs it with
TRAINMEDIC_DEV_BENCH=1 and no arguments: then the module default DEV_BENCH_QUICK makes it the quick set.
"""

from __future__ import annotations

import argparse
import base64
import heapq
import itertools
import json
import os
import random
import signal
import socket
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry  # noqa: E402
from standins.oidc import OidcIssuer  # noqa: E402
from standins.slack_api import FakeSlackApi, signature_headers, slash_command_body  # noqa: E402
from tests.emulators import Emulator, free_port, start_firestore  # noqa: E402
from tests.live_service import ServeProcess, base_environ  # noqa: E402

# `./dev bench` runs this file without arguments: then it runs the quick set unless --full is given. A plain
# `python benchmarks/bench_faults.py` (not under ./dev, which sets TRAINMEDIC_DEV_BENCH) runs the full set.
DEV_BENCH_QUICK = True

REGION = "us-central1"
CHANNEL = "#ml-alerts"
SECRET = "bench-signing-secret"
AUDIENCE = "https://trainmedic-bench.a.run.app/pubsub/push"
PUSH_SA = "trainmedic-push@bench-proj.iam.gserviceaccount.com"
SLOW_SLACK_SECONDS = 12.0
KILL_GRACE_SECONDS = 10.0  # Cloud Run: SIGKILL this long after SIGTERM
SENDERS = 32  # pushes outstanding at once (Pub/Sub push delivers many messages concurrently)
MIN_BACKOFF, MAX_BACKOFF = 1.0, 10.0  # Pub/Sub's retry policy (deploy/setup: 10 s..600 s), scaled down
SLACK_METHODS = ("chat.postMessage", "chat.update", "chat.delete", "conversations.history", "conversations.list")
TEXTS = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1) ran for 600000 milliseconds before timing out.",
    "ModuleNotFoundError: No module named 'transformers'",
    "step 1200 loss=nan grad_norm=nan",
    "google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/storage/v1/b/data: "
    "trainer@bench.iam.gserviceaccount.com does not have storage.objects.list access",
]
LOG_EVENTS = {  # service log messages worth counting per scenario
    "adopted the message an earlier attempt posted": "adopted",
    "posted message withdrawn: the store could not record it": "withdrawn",
    "claim settled at shutdown": "settled",
    "cannot look for an earlier message; posting may duplicate it": "unsearchable",
    "posted message could not be recorded nor withdrawn: a redelivery will adopt it": "unrecorded",
}


@dataclass(frozen=True)
class Scale:
    jobs: int = 50
    pushes: int = 2000
    copies: int = 3
    window: float = 34.0  # seconds over which the first deliveries arrive
    job_span: float = 6.0  # seconds between a job's first entry and its "Job failed."
    fault: float = 20.0  # how long a store outage or a Slack fault lasts
    give_up: float = 150.0  # redeliveries stop this long after the window (Pub/Sub: dead letter)
    large_jobs: int = 4
    large_entries: int = 200
    large_bytes: int = 250_000
    large_copies: int = 1  # the large set is about memory: each entry delivered once (the marker 3 times)
    probe_every: float = 2.0


FULL = Scale()
QUICK = Scale(jobs=10, pushes=300, window=10.0, job_span=3.0, fault=6.0, large_jobs=2, large_entries=30)


# ------------------------------------------------------------------------------------------------ messages


@dataclass
class Message:
    """One Pub/Sub message (a LogEntry of one job); delivered `copies` times."""

    message_id: str
    job_id: str
    entry: dict
    at: float  # seconds into the window of its first delivery
    marker: bool = False  # the job's "Job failed." entry
    filler: str | None = None  # appended to the text when the body is built (large entries, kept once)

    def body(self, attempt: int) -> bytes:
        entry = self.entry
        if self.filler is not None:
            entry = {**entry, "textPayload": entry["textPayload"] + self.filler}
        data = base64.b64encode(json.dumps(entry).encode()).decode()
        envelope = {
            "message": {
                "data": data,
                "messageId": self.message_id,
                "message_id": self.message_id,
                "publishTime": "2026-11-30T12:00:00.000Z",
                "publish_time": "2026-11-30T12:00:00.000Z",
                "attributes": {"logging.googleapis.com/timestamp": entry["timestamp"]},
            },
            "subscription": "projects/bench-proj/subscriptions/trainmedic-push",
            "deliveryAttempt": attempt,  # set by Pub/Sub when the subscription dead-letters (deploy/setup does)
        }
        return json.dumps(envelope).encode()


def job_messages(project: str, scale: Scale, *, large: bool) -> tuple[list[Message], dict[str, list[dict]]]:
    """The messages of every job and each job's entries as Cloud Logging holds them."""
    jobs = scale.large_jobs if large else scale.jobs
    per_job = scale.large_entries + 1 if large else max(2, scale.pushes // scale.copies // scale.jobs)
    filler = None
    if large:
        line = "step 1000 loss=0.4213 lr=3.0e-04 tokens/s=51234 mem=61.2GiB data=gs://bench-data/shard-00042\n"
        filler = "\n" + (line * (scale.large_bytes // len(line) + 1))[: scale.large_bytes]
    messages: list[Message] = []
    logged: dict[str, list[dict]] = {}
    span = min(scale.job_span, scale.window / 2)
    for j in range(jobs):
        job_id = str(7_100_000 + j)
        start = (scale.window - span) * j / max(1, jobs - 1)
        entries = []
        for k in range(per_job - 1):
            text = TEXTS[(j + k) % len(TEXTS)] if k % 3 == 0 or large else f"step {k * 100} loss=0.{k:04d}"
            entry = log_entry(
                project,
                job_id,
                f"{text} [{job_id}/{k}]",
                task_name=f"workerpool0-{k % 2}",
                severity="ERROR" if k % 3 == 0 else "INFO",
                timestamp=f"2026-11-30T10:{k // 60 % 60:02d}:{k % 60:02d}.{k:06d}Z",
                insert_id=f"{job_id}-{k}",
            )
            entries.append(entry)
            at = start + span * k / (per_job - 1)
            messages.append(Message(f"m-{job_id}-{k}", job_id, entry, at, filler=filler))
        marker = log_entry(
            project, job_id, "Job failed.", insert_id=f"{job_id}-failed", timestamp="2026-11-30T11:00:00Z"
        )
        messages.append(Message(f"m-{job_id}-failed", job_id, marker, start + span, marker=True))
        logged[job_id] = [{**e, "textPayload": e["textPayload"] + filler} if filler else e for e in entries]
    return messages, logged


def schedule(messages: list[Message], scale: Scale, *, large: bool, rng: random.Random) -> list[tuple[float, Message]]:
    """Every delivery: (offset, message); each message `copies` times, duplicates within 2 s of the first."""
    deliveries = []
    for message in messages:
        deliveries.append((message.at, message))
        copies = scale.large_copies if large and not message.marker else scale.copies
        for _ in range(copies - 1):
            deliveries.append((message.at + rng.uniform(0.0, 2.0), message))
    target = len(deliveries) if large else scale.pushes
    while len(deliveries) < target:  # top up with more duplicates to reach exactly `pushes`
        message = rng.choice(messages)
        deliveries.append((message.at + rng.uniform(0.0, 2.0), message))
    return sorted(deliveries[:target], key=lambda d: d[0])


# ------------------------------------------------------------------------------------------------ instances


class Cluster:
    """The scenario's `trainmedic serve` processes; `targets()` are those Pub/Sub and Slack reach now."""

    def __init__(self, environ: dict[str, str], workdir: Path) -> None:
        self.environ = environ
        self.workdir = workdir
        self.instances: list[ServeProcess] = []
        self._live: list[ServeProcess] = []
        self._lock = threading.Lock()
        self._numbers = itertools.count()
        self.peak_kib: dict[int, int] = {}
        self._sampling = threading.Event()
        self._sampler = threading.Thread(target=self._sample_loop, daemon=True)

    def start(self) -> ServeProcess:
        server = ServeProcess(self.environ, self.workdir / f"serve-{next(self._numbers)}.log")
        server.wait_ready(60)
        with self._lock:
            self.instances.append(server)
            self._live.append(server)
        if not self._sampler.is_alive():
            self._sampler.start()
        return server

    def targets(self) -> list[ServeProcess]:
        with self._lock:
            return list(self._live)

    def withdraw(self, server: ServeProcess) -> None:
        """No new requests reach `server` (Cloud Run stops routing to an instance it stops)."""
        with self._lock:
            if server in self._live:
                self._live.remove(server)

    def kill(self, server: ServeProcess) -> None:
        self.withdraw(server)
        self._sample(server)
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(timeout=10)

    def terminate(self, server: ServeProcess) -> tuple[float, bool]:
        """SIGTERM, then SIGKILL after KILL_GRACE_SECONDS: (seconds to exit, whether it had to be killed)."""
        self.withdraw(server)
        began = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        while server.proc.poll() is None and time.monotonic() - began < KILL_GRACE_SECONDS:
            self._sample(server)
            time.sleep(0.05)
        killed = server.proc.poll() is None
        if killed:
            server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(timeout=10)
        return time.monotonic() - began, killed

    def _sample(self, server: ServeProcess) -> None:
        try:
            status = Path(f"/proc/{server.proc.pid}/status").read_text()
        except OSError:
            return
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                kib = int(line.split()[1])
                self.peak_kib[server.proc.pid] = max(kib, self.peak_kib.get(server.proc.pid, 0))

    def _sample_loop(self) -> None:
        while not self._sampling.wait(0.25):
            for server in list(self.instances):
                if server.proc.poll() is None:
                    self._sample(server)

    def stop_all(self) -> None:
        for server in self.instances:
            if server.proc.poll() is None:
                self._sample(server)
                self.terminate(server)
        self._sampling.set()
        for server in self.instances:
            server.stop()  # closes the log (the process has exited)

    def log_counts(self) -> Counter:
        counts: Counter = Counter()
        for server in self.instances:
            for line in server.log_path.read_text(errors="replace").splitlines():
                if '"message"' not in line:
                    continue
                try:
                    text = json.loads(line).get("message")
                except ValueError:
                    continue
                if text in LOG_EVENTS:
                    counts[LOG_EVENTS[text]] += 1
        return counts


# ------------------------------------------------------------------------------------------------ Pub/Sub


class Tokens:
    """Pub/Sub's OIDC tokens: one minted and reused until near its expiry, as Pub/Sub does."""

    def __init__(self, issuer: OidcIssuer) -> None:
        self.issuer = issuer
        self._token = ""
        self._minted = 0.0
        self._lock = threading.Lock()

    def header(self) -> str:
        with self._lock:
            if time.monotonic() - self._minted > 600:
                self._token = self.issuer.mint(audience=AUDIENCE, email=PUSH_SA)
                self._minted = time.monotonic()
            return f"Bearer {self._token}"


@dataclass(order=True)
class _Due:
    due: float
    seq: int
    message: Message = field(compare=False)
    attempt: int = field(default=1, compare=False)


class PubSub:
    """Push deliveries with Pub/Sub's contract: at-least-once, redelivered until a 2xx or the deadline."""

    def __init__(self, cluster: Cluster, tokens: Tokens, on_first_send: Callable[[Message], None]) -> None:
        self.cluster = cluster
        self.tokens = tokens
        self.on_first_send = on_first_send
        self._heap: list[_Due] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._outstanding = 0
        self._give_up_at = float("inf")
        self._sent_first: set[str] = set()
        self.latencies: list[float] = []
        self.statuses: Counter = Counter()
        self.sent = 0
        self.unacked = 0
        self.max_attempt = 0
        self.in_flight: dict[tuple[str, int], int] = {}  # (job id, instance pid) -> pushes in flight

    def run(self, deliveries: list[tuple[float, Message]], start: float, give_up_at: float) -> None:
        with self._cond:
            for offset, message in deliveries:
                heapq.heappush(self._heap, _Due(start + offset, next(self._seq), message))
            self._outstanding = len(deliveries)
            self._give_up_at = give_up_at
        workers = [threading.Thread(target=self._worker, daemon=True) for _ in range(SENDERS)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

    def _worker(self) -> None:
        with httpx.Client(timeout=httpx.Timeout(60.0, connect=5.0), trust_env=False) as client:
            while True:
                with self._cond:
                    while True:
                        if self._outstanding == 0:
                            return
                        now = time.monotonic()
                        if self._heap and self._heap[0].due <= now:
                            item = heapq.heappop(self._heap)
                            break
                        wait = self._heap[0].due - now if self._heap else 0.5
                        self._cond.wait(min(wait, 0.5))
                self._deliver(client, item)

    def _deliver(self, client: httpx.Client, item: _Due) -> None:
        message = item.message
        targets = self.cluster.targets()
        status: int | None = None
        if targets:
            server = random.choice(targets)
            if message.marker and message.message_id not in self._sent_first:
                self._sent_first.add(message.message_id)
                self.on_first_send(message)
            body = message.body(item.attempt)
            key = (message.job_id, server.proc.pid)
            with self._cond:
                self.in_flight[key] = self.in_flight.get(key, 0) + 1
            began = time.monotonic()
            try:
                answer = client.post(
                    server.url + "/pubsub/push",
                    content=body,
                    headers={"Content-Type": "application/json", "Authorization": self.tokens.header()},
                )
                status = answer.status_code
            except httpx.HTTPError:
                status = None
            took = time.monotonic() - began
            with self._cond:
                self.in_flight[key] -= 1
                if status is not None:
                    self.latencies.append(took)
        with self._cond:
            self.sent += 1  # a delivery attempt, whatever came of it (no instance up: refused at the front end)
            self.statuses["cut off" if status is None and targets else "no instance" if status is None else status] += 1
            self.max_attempt = max(self.max_attempt, item.attempt)
            if status in (102, 200, 201, 202, 204):
                self._outstanding -= 1
            else:
                backoff = min(MAX_BACKOFF, MIN_BACKOFF * 2 ** (item.attempt - 1)) * random.uniform(0.8, 1.2)
                due = time.monotonic() + backoff
                if due < self._give_up_at:
                    heapq.heappush(self._heap, _Due(due, next(self._seq), message, item.attempt + 1))
                else:
                    self.unacked += 1
                    self._outstanding -= 1
            self._cond.notify_all()

    def jobs_in_flight(self, pid: int) -> set[str]:
        with self._cond:
            return {job for (job, p), n in self.in_flight.items() if p == pid and n > 0}


class SlackProbe:
    """A signed `/diagnose help` to a live instance every `every` seconds; Slack wants the ack within 3 s."""

    def __init__(self, cluster: Cluster, slack: FakeSlackApi, every: float) -> None:
        self.cluster, self.slack, self.every = cluster, slack, every
        self.latencies: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> SlackProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        channel = self.slack.conversation_id(CHANNEL)
        for n in itertools.count():
            if self._stop.wait(self.every):
                return
            targets = self.cluster.targets()
            if not targets:
                continue
            body = slash_command_body(
                "help",
                user="U0PROBE01",
                channel=channel,
                response_url=self.slack.response_url(f"probe-{n}"),
                trigger_id=f"probe-{n}",
            )
            headers = signature_headers(SECRET, body, content_type="application/x-www-form-urlencoded")
            began = time.monotonic()
            try:
                answer = httpx.post(
                    random.choice(targets).url + "/slack/events",
                    content=body,
                    headers=headers,
                    timeout=10,
                    trust_env=False,
                )
                ok = answer.status_code == 200 and "/diagnose" in answer.text
            except httpx.HTTPError:
                ok = False
            if ok:
                self.latencies.append(time.monotonic() - began)
            else:
                self.failures += 1


# ------------------------------------------------------------------------------------------------ the store


class CuttableRelay:
    """A loopback TCP relay to the Firestore emulator. `cut()` closes every connection and refuses new ones
    (the store unreachable); `restore()` accepts again on the same port."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._pairs: set[tuple[socket.socket, socket.socket]] = set()
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() in progress (close() alone does not)
            except OSError:
                pass
            listener.close()
        with self._lock:
            pairs, self._pairs = self._pairs, set()
        for pair in pairs:
            for sock in pair:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pair = (client, upstream)
            with self._lock:
                self._pairs.add(pair)
            threading.Thread(target=self._pump, args=(client, upstream, pair), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, pair), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, pair: tuple[socket.socket, socket.socket]) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for sock in pair:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self._lock:
            self._pairs.discard(pair)


class FirestoreBackend:
    """One Firestore emulator for the run, behind a CuttableRelay; `outage()` stops and restarts it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.emulator: Emulator = start_firestore("bench-proj")
        self.relay = CuttableRelay(int(self.emulator.host.rsplit(":", 1)[1]))
        self.relay.restore()
        self._warm_up()

    def _warm_up(self) -> None:
        saved = os.environ.get("FIRESTORE_EMULATOR_HOST")
        os.environ["FIRESTORE_EMULATOR_HOST"] = self.emulator.host
        try:
            from bot.store.firestore import FirestoreStore

            store = FirestoreStore(project=self.emulator.project, deadline=30.0)  # a cold emulator takes ~1 s
            store.get_alert("warm-up/0")
            store.close()
        finally:
            if saved is None:
                os.environ.pop("FIRESTORE_EMULATOR_HOST", None)
            else:
                os.environ["FIRESTORE_EMULATOR_HOST"] = saved

    def environ(self) -> dict[str, str]:
        return {
            "TRAINMEDIC_STORE": "firestore",
            "GOOGLE_CLOUD_PROJECT": self.emulator.project,
            "FIRESTORE_EMULATOR_HOST": self.relay.host,
        }

    def reset(self) -> None:
        self.emulator.reset()

    def outage(self, seconds: float, notes: list[str]) -> None:
        """Unreachable for `seconds`: cut the relay, export, stop the emulator, restart it with its data."""
        cut_at = time.monotonic()
        self.relay.cut()
        export_dir = Path(tempfile.mkdtemp(prefix="firestore-export-", dir=self.workdir))
        metadata = self.emulator.export(export_dir)
        port = int(self.emulator.host.rsplit(":", 1)[1])
        self.emulator.stop()
        stopped_at = time.monotonic()
        time.sleep(max(0.0, cut_at + seconds / 2 - time.monotonic()))  # a restart takes 2-10 s here
        self.emulator = start_firestore("bench-proj", port=port, import_data=metadata)
        restarted_at = time.monotonic()
        time.sleep(max(0.0, cut_at + seconds - time.monotonic()))
        self.relay.restore()
        notes.append(
            f"store unreachable {time.monotonic() - cut_at:.1f} s (emulator down {restarted_at - stopped_at:.1f} s, "
            "restarted with its exported data)"
        )

    def close(self) -> None:
        self.relay.cut()
        self.emulator.stop()


def lock_sqlite(path: Path, seconds: float, notes: list[str]) -> None:
    """Hold the database's write lock for `seconds` from another connection (BEGIN EXCLUSIVE, WAL mode)."""
    began = time.monotonic()
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        db.execute("BEGIN EXCLUSIVE")
        locked = time.monotonic()
        time.sleep(seconds)
        db.execute("ROLLBACK")
        notes.append(f"SQLite write-locked {time.monotonic() - locked:.1f} s (lock taken after {locked - began:.2f} s)")
    finally:
        db.close()


# ------------------------------------------------------------------------------------------------ scenarios


@dataclass
class Context:
    scale: Scale
    cluster: Cluster
    slack: FakeSlackApi
    google: FakeGoogleApis
    pubsub: PubSub
    notes: list[str]
    firestore: FirestoreBackend | None
    sqlite_path: Path | None
    load_started: float = 0.0

    def at(self, fraction: float) -> float:
        """Seconds to wait from now until `fraction` of the load window."""
        return max(0.0, self.load_started + self.scale.window * fraction - time.monotonic())


def slack_fault(kind: str) -> Callable[[Context], None]:
    def fault(ctx: Context) -> None:
        time.sleep(ctx.at(0.3))
        began, calls_before = time.monotonic(), len(ctx.slack.calls)
        for method in SLACK_METHODS:
            if kind == "slow":
                ctx.slack.slow(method, SLOW_SLACK_SECONDS)
            elif kind == "429":
                ctx.slack.rate_limit(method, times=10**9, retry_after=2)
            else:
                ctx.slack.server_error(method, times=10**9, status=500)
        time.sleep(ctx.scale.fault)
        for method in SLACK_METHODS:
            ctx.slack.slow(method, 0)
            ctx.slack.clear_faults(method)
        calls = len(ctx.slack.calls) - calls_before
        ctx.notes.append(f"Slack {kind} for {time.monotonic() - began:.1f} s ({calls} Slack calls meanwhile)")

    return fault


def kill9(ctx: Context) -> None:
    time.sleep(ctx.at(0.25))
    victim = ctx.cluster.targets()[0]
    done = threading.Event()

    def arm() -> None:
        ctx.slack.after_call("chat.postMessage", on_post)

    def on_post() -> None:  # in the Slack stand-in, after it carried a post out and before it answers
        posted = ctx.slack.calls_to("chat.postMessage")[-1].args
        job_key = str(((posted.get("metadata") or {}).get("event_payload") or {}).get("job_key", ""))
        job_id = job_key.rsplit("/", 1)[-1]
        others = [s for s in ctx.cluster.targets() if s is not victim]
        mine = job_id in ctx.pubsub.jobs_in_flight(victim.proc.pid)
        theirs = any(job_id in ctx.pubsub.jobs_in_flight(s.proc.pid) for s in others)
        if mine and not theirs:
            ctx.cluster.kill(victim)
            ctx.notes.append(
                f"kill -9 of instance {victim.proc.pid} at {time.monotonic() - ctx.load_started:.1f} s, right after "
                f"Slack carried out its post for job {job_id}"
            )
            done.set()
        else:
            arm()

    arm()
    if not done.wait(ctx.scale.window * 2):
        ctx.slack.after_call("chat.postMessage", lambda: None)
        ctx.cluster.kill(victim)
        ctx.notes.append(f"kill -9 of instance {victim.proc.pid} (no post of its own seen in time)")


def store_outage(ctx: Context) -> None:
    time.sleep(ctx.at(0.3))
    if ctx.sqlite_path is not None:
        lock_sqlite(ctx.sqlite_path, ctx.scale.fault, ctx.notes)
    else:
        assert ctx.firestore is not None
        ctx.firestore.outage(ctx.scale.fault, ctx.notes)


def sigterm(ctx: Context) -> None:
    time.sleep(ctx.at(0.3))
    ctx.slack.slow("chat.postMessage", SLOW_SLACK_SECONDS)
    posts_before = len(ctx.slack.calls_to("chat.postMessage"))
    slow_from = time.monotonic()
    while len(ctx.slack.calls_to("chat.postMessage")) - posts_before < 3 and time.monotonic() - slow_from < 8:
        time.sleep(0.05)
    in_flight = len(ctx.slack.calls_to("chat.postMessage")) - posts_before
    old = ctx.cluster.targets()[0]
    replacement = threading.Thread(target=ctx.cluster.start, daemon=True)
    replacement.start()  # Cloud Run starts another instance for the traffic
    took, killed = ctx.cluster.terminate(old)
    replacement.join()
    time.sleep(max(0.0, slow_from + ctx.scale.fault - time.monotonic()))
    ctx.slack.slow("chat.postMessage", 0)
    ctx.notes.append(
        f"SIGTERM with {in_flight} slow posts in flight: the instance exited in {took:.1f} s"
        + (" (SIGKILLed at 10 s)" if killed else "")
        + "; a new instance took the redeliveries"
    )


@dataclass(frozen=True)
class Scenario:
    name: str
    store: str  # "sqlite" | "firestore"
    instances: int
    fault: Callable[[Context], None] | None = None
    large: bool = False


SCENARIOS = [
    Scenario("sqlite", "sqlite", 1),
    Scenario("firestore", "firestore", 2),
    Scenario("kill9", "firestore", 2, kill9),
    Scenario("store-firestore", "firestore", 2, store_outage),
    Scenario("store-sqlite", "sqlite", 1, store_outage),
    Scenario("slack-slow", "sqlite", 1, slack_fault("slow")),
    Scenario("slack-429", "sqlite", 1, slack_fault("429")),
    Scenario("slack-500", "sqlite", 1, slack_fault("500")),
    Scenario("sigterm", "sqlite", 1, sigterm),
    Scenario("large", "sqlite", 1, large=True),
]


@dataclass
class Row:
    scenario: Scenario
    pushes: int
    sent: int
    statuses: Counter
    unacked: int
    max_attempt: int
    per_job: dict[str, int]
    p50: float
    p99: float
    peak_mib: list[float]
    ack_p50: float
    ack_max: float
    ack_failures: int
    seconds: float
    notes: list[str]
    events: Counter

    @property
    def defective(self) -> bool:
        return any(n != 1 for n in self.per_job.values())


def run_scenario(
    scenario: Scenario, scale: Scale, issuer: OidcIssuer, firestore: FirestoreBackend | None, workdir: Path
) -> Row:
    began = time.monotonic()
    rng = random.Random(scenario.name)
    project = f"bench-{scenario.name}"[:30]
    folder = workdir / scenario.name
    folder.mkdir()
    notes: list[str] = []
    with FakeSlackApi() as slack, FakeGoogleApis() as google:
        messages, logged = job_messages(project, scale, large=scenario.large)
        for job_id, entries in logged.items():
            google.seed_job(custom_job_json(project, REGION, job_id, state="JOB_STATE_RUNNING", error=None))
            google.seed_log_entries(entries)
        deliveries = schedule(messages, scale, large=scenario.large, rng=rng)
        config = folder / "trainmedic.yaml"
        config.write_text(yaml.safe_dump({"default_channel": CHANNEL, "regions": [REGION]}))
        sqlite_path = folder / "state.db" if scenario.store == "sqlite" else None
        environ = base_environ(
            folder,
            SLACK_BOT_TOKEN="xoxb-bench-token",
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_API_URL=slack.base_url,
            VERTEX_API_ENDPOINT=google.base_url,
            LOGGING_API_ENDPOINT=google.base_url,
            TRAINMEDIC_CONFIG=str(config),
            PUBSUB_VERIFY_TOKEN="true",
            PUBSUB_PUSH_AUDIENCE=AUDIENCE,
            PUBSUB_PUSH_SERVICE_ACCOUNT=PUSH_SA,
            OIDC_CERTS_URL=issuer.certs_url,
        )
        if scenario.store == "firestore":
            assert firestore is not None
            firestore.reset()
            environ.update(firestore.environ())
        cluster = Cluster(environ, folder)
        try:
            for _ in range(scenario.instances):
                cluster.start()

            def job_failed(message: Message) -> None:  # the CustomJob fails as its "Job failed." entry is sent
                google.seed_job(custom_job_json(project, REGION, message.job_id))

            pubsub = PubSub(cluster, Tokens(issuer), job_failed)
            ctx = Context(scale, cluster, slack, google, pubsub, notes, firestore, sqlite_path)
            ctx.load_started = time.monotonic() + 0.5
            fault = None
            if scenario.fault is not None:
                fault = threading.Thread(target=scenario.fault, args=(ctx,), daemon=True)
                fault.start()
            with SlackProbe(cluster, slack, scale.probe_every) as probe:
                pubsub.run(deliveries, ctx.load_started, ctx.load_started + scale.window + scale.give_up)
            if fault is not None:
                fault.join(timeout=120)
            time.sleep(0.5)  # let anything still running after its answer land in Slack
        finally:
            cluster.stop_all()
        per_job = {job_id: 0 for job_id in logged}
        replies: Counter = Counter()  # trainmedic's thread replies under each job's messages (if any)
        for message in slack.posted():
            key = _job_key(message)
            job_project, _, job_id = key.partition("/")
            if job_project == project and job_id in per_job:
                per_job[job_id] += 1
                if hasattr(slack, "replies"):  # a stand-in that keeps threads
                    thread = slack.replies(message["channel"], message["ts"])
                    replies[job_id] += sum(1 for reply in thread if _job_key(reply) == key)
            else:
                notes.append(f"a message not about a job of this scenario: {key or message.get('text', '')[:60]!r}")
        if replies:
            counts = [replies[job_id] for job_id in per_job]
            notes.append(f"thread replies naming their job, per job: {min(counts)}-{max(counts)}")
        deletes = len(slack.calls_to("chat.delete"))
        posts = len(slack.calls_to("chat.postMessage"))
        notes.append(f"chat.postMessage calls {posts}, chat.delete calls {deletes}")
    latencies = sorted(pubsub.latencies)
    acks = sorted(probe.latencies)
    return Row(
        scenario=scenario,
        pushes=len(deliveries),
        sent=pubsub.sent,
        statuses=pubsub.statuses,
        unacked=pubsub.unacked,
        max_attempt=pubsub.max_attempt,
        per_job=per_job,
        p50=statistics.median(latencies) if latencies else float("nan"),
        p99=latencies[max(0, int(len(latencies) * 0.99) - 1)] if latencies else float("nan"),
        peak_mib=[kib / 1024 for kib in cluster.peak_kib.values()],
        ack_p50=statistics.median(acks) if acks else float("nan"),
        ack_max=acks[-1] if acks else float("nan"),
        ack_failures=probe.failures,
        seconds=time.monotonic() - began,
        notes=notes,
        events=cluster.log_counts(),
    )


def _job_key(message: dict) -> str:
    """The job a message's metadata names (trainmedic's alerts carry it), or ""."""
    return str(((message.get("metadata") or {}).get("event_payload") or {}).get("job_key", ""))


# ------------------------------------------------------------------------------------------------ report

HEADER = (
    f"{'scenario':<16}{'store':<11}{'inst':>4}{'pushes':>7}{'sent':>6}{'non-2xx':>8}{'unacked':>8}"
    f"{'msgs/job':>9}{'!=1':>4}{'lost':>5}{'p50 ms':>8}{'p99 ms':>8}{'RSS MiB':>9}{'ack ms p50/max':>16}{'time s':>7}"
)


def format_row(row: Row) -> str:
    counts = list(row.per_job.values())
    non2xx = sum(n for status, n in row.statuses.items() if status not in (200, 201, 202, 204, 102))
    store = f"{row.scenario.store}"
    acks = f"{row.ack_p50 * 1000:.0f}/{row.ack_max * 1000:.0f}" + (
        f" ({row.ack_failures} failed)" if row.ack_failures else ""
    )
    return (
        f"{row.scenario.name:<16}{store:<11}{len(row.peak_mib):>4}{row.pushes:>7}{row.sent:>6}{non2xx:>8}"
        f"{row.unacked:>8}{f'{min(counts)}-{max(counts)}':>9}{sum(1 for n in counts if n != 1):>4}"
        f"{sum(1 for n in counts if n == 0):>5}{row.p50 * 1000:>8.0f}{row.p99 * 1000:>8.0f}"
        f"{max(row.peak_mib, default=float('nan')):>9.0f}{acks:>16}{row.seconds:>7.0f}"
    )


def details(row: Row) -> str:
    statuses = ", ".join(f"{status}: {n}" for status, n in sorted(row.statuses.items(), key=lambda i: str(i[0])))
    events = ", ".join(f"{name} {n}" for name, n in sorted(row.events.items())) or "none"
    rss = "/".join(f"{mib:.0f}" for mib in row.peak_mib)
    lines = [f"  {row.scenario.name}: answers {statuses}; most attempts for one delivery {row.max_attempt}; "
             f"peak RSS per instance {rss} MiB; service events: {events}"]  # fmt: skip
    lines += [f"    {note}" for note in row.notes]
    bad = {job: n for job, n in row.per_job.items() if n != 1}
    if bad:
        lines.append(f"    DEFECT: jobs with != 1 message: {bad}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="smoke run: fewer jobs and pushes, shorter faults")
    mode.add_argument("--full", action="store_true", help="the full run (the default, except under ./dev bench)")
    parser.add_argument("--keep", type=Path, help="keep the service logs and databases in this folder")
    parser.add_argument(
        "--scenario", action="append", choices=[s.name for s in SCENARIOS], help="run only this scenario (repeatable)"
    )
    args = parser.parse_args(argv)
    under_dev_bench = os.environ.get("TRAINMEDIC_DEV_BENCH") == "1"
    quick = args.quick or (under_dev_bench and DEV_BENCH_QUICK and not args.full)
    scale = QUICK if quick else FULL
    chosen = [s for s in SCENARIOS if not args.scenario or s.name in args.scenario]
    began = time.monotonic()
    print(
        f"Faults under load ({'quick' if quick else 'full'}): {scale.pushes} pushes for {scale.jobs} failed jobs "
        f"({scale.copies}x delivery) over {scale.window:.0f} s, {SENDERS} concurrent senders, OIDC-signed; "
        f"faults last {scale.fault:.0f} s; large set {scale.large_jobs} jobs x {scale.large_entries} entries x "
        f"{scale.large_bytes // 1000} KB",
        flush=True,
    )
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp, OidcIssuer() as issuer:
        workdir = Path(tmp)
        if args.keep:
            workdir = args.keep
            workdir.mkdir(parents=True, exist_ok=True)
        firestore = FirestoreBackend(workdir) if any(s.store == "firestore" for s in chosen) else None
        try:
            print(HEADER, flush=True)
            for scenario in chosen:
                row = run_scenario(scenario, scale, issuer, firestore, workdir)
                rows.append(row)
                print(format_row(row), flush=True)
        finally:
            if firestore is not None:
                firestore.close()
    print("Details:")
    for row in rows:
        print(details(row))
    print(
        "msgs/job: messages visible in the Slack stand-in per job (min-max); !=1: jobs without exactly one; lost: "
        "jobs with none. p50/p99: push requests that got an HTTP answer. RSS: peak (VmHWM) of the service "
        "process(es), max. ack: /diagnose help, signed, every "
        f"{scale.probe_every:.0f} s during the load. Total {time.monotonic() - began:.0f} s."
    )
    defective = [row.scenario.name for row in rows if row.defective]
    if defective:
        print(f"FAIL: a job without exactly one message in: {', '.join(defective)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
