"""Why a job is stuck, and what its message says (pure: no I/O). The scan is bot.alerting.stuck_jobs.

A job waits in QUEUED or PENDING; a PENDING job whose logs show Vertex's "Job is preparing." is "preparing". Why:
an image that cannot be pulled; a stockout (not a quota matter); quota (a quota line, or QUEUED, which is how
Vertex waits for quota), with `gcloud beta quotas` commands filled in; otherwise unknown. A Flex-start job still
inside its `maxWaitDuration` is waiting as asked: never stuck.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.alerting.ledger import format_duration
from bot.models import Command, JobInfo, LogLine
from bot.render import links
from bot.render.mrkdwn import code_block, escape, inline_code, safe_text

_PREPARING = re.compile(r"^\s*Job is preparing\.?\s*$", re.IGNORECASE)
_IMAGE = re.compile(
    r"Failed to pull|ErrImagePull|ImagePullBackOff|unable to pull|pull access denied|manifest (?:for \S+ )?"
    r"(?:unknown|not found)|Error response from daemon|artifactregistry\.repositories\.downloadArtifacts",
    re.IGNORECASE,
)
_STOCKOUT = re.compile(
    r"Resources are insufficient in region|\bSTOCKOUT\b|ZONE_RESOURCE_POOL_EXHAUSTED|does not have enough resources",
    re.IGNORECASE,
)
_QUOTA = re.compile(r"Quota '(?P<metric>[A-Z0-9_]+)' exceeded|exceed quota limits|\bquota\b", re.IGNORECASE)
_DURATION = re.compile(r"^(?P<seconds>[0-9]+(?:\.[0-9]+)?)s$")

# Vertex training quota ids (platform-facts §9, [seen] in Google's samples: check with `quotas info describe`)
_QUOTA_NAMES = {
    "NVIDIA_TESLA_A100": "A100GPUs",
    "NVIDIA_A100_80GB": "A10080GBGPUs",
    "NVIDIA_H100_80GB": "H100GPUs",
    "NVIDIA_TESLA_T4": "T4GPUs",
    "NVIDIA_L4": "L4GPUs",
    "NVIDIA_TESLA_V100": "V100GPUs",
    "NVIDIA_TESLA_P100": "P100GPUs",
    "NVIDIA_TESLA_P4": "P4GPUs",
}
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


@dataclass(frozen=True)
class Thresholds:
    """Seconds a job may wait in each phase before it is stuck."""

    queued: float = 1800.0
    pending: float = 1800.0
    preparing: float = 1200.0

    def of(self, phase: str) -> float:
        return {"queued": self.queued, "pending": self.pending, "preparing": self.preparing}[phase]


@dataclass(frozen=True)
class StuckJob:
    job: JobInfo
    phase: str  # queued, pending, preparing
    waited_seconds: float
    reason: str  # quota, stockout, image, unknown
    explanation: str
    evidence: str | None = None
    commands: tuple[Command, ...] = ()


# ------------------------------------------------------------------------------------------ pure decisions


def flex_start_waiting(raw: dict, now: datetime) -> bool:
    """True for a Flex-start job still inside its scheduling.maxWaitDuration (default 24 h; 0 = forever)."""
    scheduling = (raw.get("jobSpec") or {}).get("scheduling") or {}
    if scheduling.get("strategy") not in ("FLEX_START", 6):
        return False
    max_wait = _duration_seconds(scheduling.get("maxWaitDuration"), default=24 * 3600.0)
    if max_wait == 0:
        return True
    created = parse_time(raw.get("createTime"))
    return created is None or (now - created).total_seconds() < max_wait


def waiting_phase(raw: dict, job: JobInfo, lines: list[LogLine], now: datetime) -> tuple[str, float] | None:
    """(phase, seconds in it) for a job in QUEUED / PENDING, or None for any other state."""
    since = parse_time(raw.get("updateTime")) or job.create_time
    if job.state == "JOB_STATE_QUEUED":
        phase = "queued"
    elif job.state == "JOB_STATE_PENDING":
        phase = "pending"
        preparing = [line.timestamp for line in lines if line.timestamp and _PREPARING.match(line.text)]
        if preparing:
            phase, since = "preparing", max(preparing)
    else:
        return None
    return phase, max(0.0, (now - since).total_seconds()) if since else 0.0


def explain(job: JobInfo, phase: str, waited: float, lines: list[LogLine], *, spot: bool) -> StuckJob:
    """Why the job waits, from its state and its log lines (newest evidence wins within a kind)."""
    texts = [line.text.strip() for line in lines if line.text.strip()]
    image = next((t for t in reversed(texts) if _IMAGE.search(t)), None)
    stockout = next((t for t in reversed(texts) if _STOCKOUT.search(t)), None)
    quota = next((t for t in reversed(texts) if _QUOTA.search(t)), None)
    pool = job.primary_pool
    if image is not None:
        uri = pool.image_uri if pool else None
        commands = []
        if uri and _SAFE_ID.match(uri.replace("/", ":").replace("@", ":")):
            commands.append(
                Command(title="Check the image exists", command=f"gcloud artifacts docker images describe {uri}")
            )
        text = (
            "The container image cannot be pulled: check the image URI and tag, and that the job's service account "
            "(or Vertex AI's custom code service agent) has roles/artifactregistry.reader on the repository."
        )
        return StuckJob(job, phase, waited, "image", text, image, tuple(commands))
    if stockout is not None:
        text = (
            "Stockout: the region has no free machines of this type right now. This is not a quota matter: try "
            "another region or accelerator, a reservation, or Dynamic Workload Scheduler (Flex-start)."
        )
        return StuckJob(job, phase, waited, "stockout", text, stockout)
    if quota is not None or job.state == "JOB_STATE_QUEUED":
        text = (
            "Waiting for quota: the job fits the quota limit but not what is left of it (Vertex keeps such jobs "
            "QUEUED until quota frees up). Wait for other jobs to finish, or ask for more quota."
        )
        return StuckJob(job, phase, waited, "quota", text, quota, tuple(quota_commands(job, spot=spot)))
    text = "No reason in the job or its logs yet: Vertex AI is still provisioning it."
    return StuckJob(job, phase, waited, "unknown", text)


def quota_commands(job: JobInfo, *, spot: bool) -> list[Command]:
    """`gcloud beta quotas` commands for the job's accelerators, filled in (quota ids as [seen] in samples)."""
    project, region = job.project, job.region
    if not (project and region and _SAFE_ID.match(project) and _SAFE_ID.match(region)):
        return []
    needed: dict[str, int] = {}
    for pool in job.worker_pools:
        if pool.accelerator_type and pool.accelerator_count and pool.replica_count:
            needed[pool.accelerator_type] = (
                needed.get(pool.accelerator_type, 0) + pool.accelerator_count * pool.replica_count
            )
    commands: list[Command] = []
    for accelerator, count in sorted(needed.items()):
        name = _QUOTA_NAMES.get(accelerator)
        if name is None:
            commands.append(
                Command(
                    title=f"Find the quota for {accelerator}",
                    command=f"gcloud beta quotas info list --service=aiplatform.googleapis.com --project={project}",
                )
            )
            continue
        quota_id = f"CustomModelTraining{'Preemptible' if spot else ''}{name}PerProjectPerRegion"
        commands.append(
            Command(
                title=f"See the {accelerator} quota (this job needs {count} on its own)",
                command=f"gcloud beta quotas info describe {quota_id} --service=aiplatform.googleapis.com "
                f"--project={project}",
            )
        )
        commands.append(
            Command(
                title="Ask for more (set the value to what all your jobs need at once)",
                command=f"gcloud beta quotas preferences create --service=aiplatform.googleapis.com "
                f"--quota-id={quota_id} --preferred-value={count} --dimensions=region={region} "
                f"--email=YOUR_EMAIL --project={project}",
            )
        )
    return commands


# ------------------------------------------------------------------------------------------ messages


def stuck_message(stuck: StuckJob) -> dict:
    job = stuck.job
    name = job.display_name or job.job_id or "Vertex AI job"
    state = (job.state or "").removeprefix("JOB_STATE_").removeprefix("PIPELINE_STATE_")
    title = f"{name}: {stuck.phase} for {format_duration(stuck.waited_seconds)}"
    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": title[:150]}},
        _context(job, f"State {inline_code(state or 'unknown', 40)}"),
        _section(f"*{_REASON_TITLES[stuck.reason]}*\n{escape(stuck.explanation)}"),
    ]
    if stuck.evidence:
        blocks.append(_section("*From the logs*\n" + code_block([stuck.evidence[:500]], 700)))
    for command in stuck.commands[:4]:
        blocks.append(_section(f"*{escape(command.title)}*\n" + code_block([command.command], 900)))
    text = f"{name} has been {stuck.phase} for {format_duration(stuck.waited_seconds)}: {stuck.reason}"
    return {"text": safe_text(text, 300), "blocks": blocks}


def resolved_message(original: dict, new_state: str, now: datetime) -> dict:
    """The stuck message, marked with what became of the job (the rest is kept as it was)."""
    state = new_state.replace("PIPELINE_STATE_", "JOB_STATE_")  # a pipeline run's states read like a job's
    outcome = _OUTCOMES.get(state, f"is now {state.removeprefix('JOB_STATE_')}")
    stamp = f"<!date^{int(now.timestamp())}^{{date_short_pretty}} {{time}}|{now:%Y-%m-%d %H:%M} UTC>"
    note = {"type": "context", "elements": [{"type": "mrkdwn", "text": f"*Update:* the job {outcome} (seen {stamp})."}]}
    blocks = [b for b in original.get("blocks", []) if not (b.get("type") == "context" and "*Update:*" in str(b))]
    return {
        "text": f"{original.get('text', '')} (the job {outcome})"[:3000],
        "blocks": [*blocks[:1], note, *blocks[1:]],
    }


_REASON_TITLES = {
    "quota": ":no_entry: Waiting for quota",
    "stockout": ":package: Stockout",
    "image": ":whale: Image cannot be pulled",
    "unknown": ":hourglass_flowing_sand: Still waiting",
    "pipeline": ":hourglass_flowing_sand: Pipeline run not started",
}
PIPELINE_WAITING_STATES = ("PIPELINE_STATE_QUEUED", "PIPELINE_STATE_PENDING")
_OUTCOMES = {
    "JOB_STATE_RUNNING": "started running",
    "JOB_STATE_SUCCEEDED": "started and has succeeded",
    "JOB_STATE_FAILED": "failed",
    "JOB_STATE_CANCELLING": "is being cancelled",
    "JOB_STATE_CANCELLED": "was cancelled",
    "JOB_STATE_EXPIRED": "expired",
    "GONE": "no longer exists",
}


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}}


def _context(job: JobInfo, extra: str) -> dict:
    facts = [extra]
    for label, value in (("Project", job.project), ("Region", job.region), ("Job", job.job_id)):
        if value:
            facts.append(f"{label} {inline_code(value, 80)}")
    pool = job.primary_pool
    if pool and pool.accelerator_type:
        facts.append(f"{pool.accelerator_count}× {inline_code(pool.accelerator_type, 40)} × {job.replica_total}")
    if job.job_id and "/pipelineJobs/" in (job.name or ""):
        facts.append(f"<{links.pipeline_run_console_url(job.project, job.region, job.job_id)}|Run in console>")
    elif job.job_id:
        facts.append(f"<{links.job_console_url(job.project, job.region, job.job_id)}|Job in console>")
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": f} for f in facts[:10]]}


def _duration_seconds(value: Any, *, default: float) -> float:
    if value is None:
        return default
    match = _DURATION.match(str(value))
    return float(match["seconds"]) if match else default


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    text = value.replace("Z", "+00:00")
    head, _, zone = text.partition("+")
    if "." in head:  # nanoseconds: Python reads at most microseconds
        base, _, fraction = head.partition(".")
        head = f"{base}.{fraction[:6]}"
    try:
        parsed = datetime.fromisoformat(f"{head}+{zone}" if zone else head)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def pipeline_waiting(run: JobInfo, waited: float) -> StuckJob:
    """A pipeline run that has not started its tasks (its tasks' CustomJobs, once created, are scanned as jobs)."""
    state = (run.state or "").removeprefix("PIPELINE_STATE_").lower()
    explanation = (
        f"This pipeline run has waited {format_duration(waited)} in {state or 'a waiting state'} without starting "
        "its tasks. Vertex AI Pipelines holds runs back while the project is at its limit of concurrent runs or "
        "while it prepares the run; look at the run's page and at the other runs of the project."
    )
    return StuckJob(
        job=run,
        phase="queued" if state == "queued" else "pending",
        waited_seconds=waited,
        reason="pipeline",
        explanation=explanation,
    )
