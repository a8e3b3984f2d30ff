"""The cascade of a distributed failure in one line: which replicas failed as a consequence, what they did,
and after which replica's failure (shown in the alert's summary).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.render.alert_context import UNKNOWN_CLASS
from bot.render.mrkdwn import safe_text, truncate

_CASCADE_CAP = 320


# The cascade in one line: "workerpool0-1..3 and workerpool1-0 timed out in NCCL collectives after workerpool0-0
# ran out of GPU memory". The classifier gives one entry per replica: "REPLICA (CLASS): its first line" (older
# stored diagnoses: "REPLICA: its first line").
_CASCADE_ENTRY = re.compile(
    r"(?:(?P<replica>\S+) \((?P<failure_class>[^()\s]*)\)|(?P<bare>workerpool\d+-\d+|\?)): (?P<text>.*)", re.DOTALL
)


_WORKER = re.compile(r"workerpool(\d{1,4})-(\d{1,6})")


_COLLECTIVE = re.compile(
    r"nccl|collective|all_?reduce|all_?gather|reduce_?scatter|broadcast|barrier|processgroup|watchdog|gloo",
    re.IGNORECASE,
)


_TIMEOUT = re.compile(r"time ?out|timed out|deadline exceeded", re.IGNORECASE)


_CASCADE_ACTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"rendezvous", re.IGNORECASE), "failed to rendezvous"),
    (
        re.compile(r"connection (?:reset|refused|closed)|broken pipe|socket|peer", re.IGNORECASE),
        "lost contact with the other replicas",
    ),
    (re.compile(r"SIGTERM|SIGKILL|terminated|killed", re.IGNORECASE), "got a termination signal"),
    (re.compile(r"exited with a non-zero status", re.IGNORECASE), "exited with an error"),
)


_CASCADE_BY_CLASS = {
    "distributed_setup": "lost contact with the other replicas",
    "accelerator_oom": "ran out of device memory too",
    "host_oom": "ran out of host memory too",
}


_CAUSES = {
    "host_oom": "ran out of host memory",
    "numerical_instability": "hit a NaN/Inf loss",
    "application_error": "crashed with an exception",
    "container_startup": "failed to start",
    "input_pipeline": "failed in its input pipeline",
    "permission_denied": "was denied a permission",
    "quota_exhausted": "hit a quota limit",
    "preemption": "was preempted",
    "distributed_setup": "failed in distributed setup",
}


_MAX_CASCADE_RUNS = 6


def cascade_line(
    cascade: Sequence[str], first: str | None, failure_class: str | None = None, evidence: Sequence[str] = ()
) -> str:
    """One line naming the replicas that failed as a consequence, what they did, and after what."""
    what: dict[str, list[str]] = {}  # what they did -> replicas, in the order first seen
    for entry in cascade:
        match = _CASCADE_ENTRY.fullmatch(entry.strip())
        replica, text = (match["replica"] or match["bare"], match["text"]) if match else ("?", entry)
        action = _cascade_action((match["failure_class"] or "") if match else "", text)
        if replica not in what.setdefault(action, []):
            what[action].append(replica)
    clauses = [f"{_replica_runs(replicas)} {action}" for action, replicas in what.items()]
    if first:
        cause = f"after {safe_text(first, 60)} {_cause(failure_class, evidence)}"
    else:
        cause = "as a consequence of the failure above"
    return truncate(f":link: *Cascade:* {_join(clauses)} {cause}.", _CASCADE_CAP)


def _cascade_action(failure_class: str, text: str) -> str:
    head = text[:2000]
    if _COLLECTIVE.search(head) and _TIMEOUT.search(head):
        return "timed out in NCCL collectives" if "nccl" in head.lower() else "timed out in collective operations"
    for pattern, action in _CASCADE_ACTIONS:
        if pattern.search(head):
            return action
    if failure_class in _CASCADE_BY_CLASS:
        return _CASCADE_BY_CLASS[failure_class]
    return f"failed ({safe_text(failure_class, 40)})" if failure_class else "failed"


def _cause(failure_class: str | None, evidence: Sequence[str]) -> str:
    if failure_class == "accelerator_oom":
        text = " ".join(evidence)[:5000]
        if re.search(r"\bTPU\b|\bHBM\b|XLA", text):
            return "ran out of TPU memory"
        if re.search(r"CUDA|\bGPU\b|cuda|HIP", text):
            return "ran out of GPU memory"
        return "ran out of accelerator memory"
    if failure_class in _CAUSES:
        return _CAUSES[failure_class]
    return f"failed ({safe_text(failure_class, 40)})" if failure_class and failure_class != UNKNOWN_CLASS else "failed"


def _replica_runs(replicas: list[str]) -> str:
    """Each pool's consecutive replicas as one run, escaped: "workerpool0-1..3 and workerpool1-0"."""
    pools: dict[str, list[int]] = {}  # "workerpool0" -> indices, pools in the order first seen
    others: list[str] = []
    for replica in replicas:
        match = _WORKER.fullmatch(replica)
        if match:
            pools.setdefault(f"workerpool{int(match[1])}", []).append(int(match[2]))
        else:
            others.append("another replica" if replica == "?" else safe_text(replica, 40))
    runs: list[str] = []
    for pool, indices in pools.items():
        ordered = sorted(set(indices))
        start = previous = ordered[0]
        for index in [*ordered[1:], None]:
            if index is not None and index == previous + 1:
                previous = index
                continue
            if previous - start >= 2:
                runs.append(f"{pool}-{start}..{previous}")
            else:
                runs += [f"{pool}-{i}" for i in range(start, previous + 1)]
            if index is not None:
                start = previous = index
    runs += others
    if len(runs) > _MAX_CASCADE_RUNS:
        hidden = len(runs) - _MAX_CASCADE_RUNS + 1
        runs = [*runs[: _MAX_CASCADE_RUNS - 1], f"{hidden} more"]
    return _join(runs)


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
