"""What a Rerun will create: the offer on the alert's button, the plan shown in the confirmation modal, and
the CustomJob body sent on submit.

Pure functions over the failed job's REST dict (as `JobsClient.get_job_raw` returns it), its Diagnosis and the
failure class's `rerun:` block in the knowledge base (bot.diagnosis.knowledge.RerunPolicy), which says per class:
- whether an unchanged rerun can help (transient causes only: a preemption, a capacity stockout, a flake);
- what must be done outside the job spec first (`fix_first`: an IAM grant, a quota increase), which the
  button asks for, naming it;
- which spec changes apply, in the class's remediation order (RERUN_CHANGES): the first one that applies to
  the failed job is proposed, the others are named as next options.

The offer (`rerun_offer`) is what the alert's button and its confirmation say; the plan (`plan_rerun`) is what
the modal shows. Both come from the same policy, so they agree.

The editable settings are the primary pool's machine type and accelerator (applied to every pool that had
the same machine spec, so a homogeneous cluster stays homogeneous), the replica count of the worker pool
(pool 1 in a distributed job, else pool 0), the region, the per-device batch size when the container args
set one (--batch-size, --batch_size, --per_device_train_batch_size, --train_batch_size, --train-batch-size;
`--flag=N` or `--flag N`) and, for a job on Spot capacity, whether to keep Spot.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.diagnosis.knowledge import KnowledgeBase, RerunPolicy, load_knowledge
from bot.errors import BotError
from bot.gcp.job_resource import ACCELERATOR_TYPES, job_info_from_rest, rerun_body
from bot.jobs.reference import REGION
from bot.models import Diagnosis, JobInfo

LABEL_RERUN_OF = "rerun-of"
LABEL_RERUN_BY = "rerun-by"
NO_ACCELERATOR = "none"
MAX_ACCELERATORS = 16
MAX_REPLICAS = 1000
MAX_BATCH_SIZE = 1_000_000
CAPACITY_SPOT = "spot"
CAPACITY_STANDARD = "standard"

FIELD_REGION = "region"
FIELD_MACHINE_TYPE = "machine_type"
FIELD_ACCELERATOR_TYPE = "accelerator_type"
FIELD_ACCELERATOR_COUNT = "accelerator_count"
FIELD_REPLICA_COUNT = "replica_count"
FIELD_BATCH_SIZE = "batch_size"
FIELD_CAPACITY = "capacity"

#: The container-arg flags that set the per-device batch size, most specific first (the first one found wins).
BATCH_SIZE_FLAGS: tuple[str, ...] = (
    "--per_device_train_batch_size",
    "--train_batch_size",
    "--train-batch-size",
    "--batch_size",
    "--batch-size",
)
#: What each change does, as the button's confirmation and the modal name it.
CHANGE_TEXT: dict[str, str] = {
    "halve_batch_size": "half the per-device batch size (if the job's args set one)",
    "larger_accelerator": "an accelerator with more memory per device",
    "more_memory_machine": "a machine type with more memory",
    "other_region": "another configured region that offers the accelerator",
    "fewer_accelerators": "half the accelerators per replica",
    "resume_from_checkpoint": "the same output directory, so the job can resume from its latest checkpoint there",
}
MAX_CONFIRM_TEXT = 300  # Slack's limit for a confirmation dialog's text

# Machine types whose accelerators are fixed by the type: machine -> (accelerator, count).
_FIXED_GPU_MACHINES: dict[str, tuple[str, int]] = {
    **{f"a2-highgpu-{n}g": ("NVIDIA_TESLA_A100", n) for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": ("NVIDIA_TESLA_A100", 16),
    **{f"a2-ultragpu-{n}g": ("NVIDIA_A100_80GB", n) for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": ("NVIDIA_H100_80GB", n) for n in (1, 2, 4, 8)},
    "a3-megagpu-8g": ("NVIDIA_H100_MEGA_80GB", 8),
    "a3-ultragpu-8g": ("NVIDIA_H200_141GB", 8),
    **{f"g2-standard-{n}": ("NVIDIA_L4", 1) for n in (4, 8, 12, 16, 32)},
    "g2-standard-24": ("NVIDIA_L4", 2),
    "g2-standard-48": ("NVIDIA_L4", 4),
    "g2-standard-96": ("NVIDIA_L4", 8),
}
# The machine type to suggest for an accelerator and count (the first one listed above wins).
_MACHINE_FOR: dict[tuple[str, int], str] = {
    **{spec: machine for machine, spec in reversed(_FIXED_GPU_MACHINES.items())},
    ("NVIDIA_L4", 1): "g2-standard-8",
}
_N1_GPUS = frozenset(
    {"NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P4", "NVIDIA_TESLA_T4"}
)
# Accelerators with more memory per device, best first, and memory in GB for the explanation.
_LARGER: dict[str, tuple[str, ...]] = {
    "NVIDIA_TESLA_K80": ("NVIDIA_TESLA_T4",),
    "NVIDIA_TESLA_P4": ("NVIDIA_TESLA_T4",),
    "NVIDIA_TESLA_T4": ("NVIDIA_L4", "NVIDIA_TESLA_A100"),
    "NVIDIA_TESLA_P100": ("NVIDIA_L4", "NVIDIA_TESLA_A100"),
    "NVIDIA_TESLA_V100": ("NVIDIA_TESLA_A100",),
    "NVIDIA_L4": ("NVIDIA_TESLA_A100",),
    "NVIDIA_TESLA_A100": ("NVIDIA_A100_80GB",),
    "NVIDIA_A100_80GB": ("NVIDIA_H200_141GB",),
    "NVIDIA_H100_80GB": ("NVIDIA_H200_141GB",),
    "NVIDIA_H100_MEGA_80GB": ("NVIDIA_H200_141GB",),
}
_MEMORY_GB = {
    "NVIDIA_TESLA_K80": 12,
    "NVIDIA_TESLA_P4": 8,
    "NVIDIA_TESLA_T4": 16,
    "NVIDIA_TESLA_P100": 16,
    "NVIDIA_TESLA_V100": 16,
    "NVIDIA_L4": 24,
    "NVIDIA_TESLA_A100": 40,
    "NVIDIA_A100_80GB": 80,
    "NVIDIA_H100_80GB": 80,
    "NVIDIA_H100_MEGA_80GB": 80,
    "NVIDIA_H200_141GB": 141,
}
_MORE_MEMORY_FAMILIES = ("n1", "n2", "n2d", "e2")
_HIGHMEM_SIZES = {
    "n1": (2, 4, 8, 16, 32, 64, 96),
    "n2": (2, 4, 8, 16, 32, 48, 64, 80, 96, 128),
    "n2d": (2, 4, 8, 16, 32, 48, 64, 80, 96),
    "e2": (2, 4, 8, 16),
}
_MACHINE_TYPE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
_ACCELERATOR_NAME = re.compile(r"[A-Z][A-Z0-9_]{1,60}")
_LABEL_INVALID = re.compile(r"[^a-z0-9_-]")
# Fields that name regional resources: moving the job to another region may break them.
_REGIONAL_FIELDS = {
    "network": "network",
    "reservedIpRanges": "reserved IP ranges",
    "persistentResourceId": "persistent resource",
    "tensorboard": "TensorBoard instance",
    "experiment": "experiment",
    "pscInterfaceConfig": "PSC interface",
}


class RerunInputError(BotError):
    """The modal's values are invalid; `errors` maps a field name to what is wrong with it."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{name}: {problem}" for name, problem in errors.items()))


# ------------------------------------------------------------------------------------------------ the offer


class RerunOffer(BaseModel):
    """What a Rerun of this diagnosis offers: the alert's button and its confirmation say it, the modal shows it.

    mode: "transient" (an unchanged rerun can help), "fix_first" (apply `fix_first` outside the job spec, then
    rerun), "changes" (an unchanged rerun fails the same way: rerun with `changes`), "none" (no rerun).
    """

    model_config = ConfigDict(frozen=True)

    failure_class: str
    mode: Literal["transient", "fix_first", "changes", "none"]
    why: str = ""
    fix_first: str | None = None  # the fix, named: "grant roles/storage.objectViewer (...) to trainer@..."
    changes: list[str] = Field(default_factory=list)  # RERUN_CHANGES names, in the remediation order

    @property
    def offered(self) -> bool:
        return self.mode != "none"

    def headline(self) -> str:
        """One sentence for the modal: what kind of rerun this is, and why."""
        why = _sentence(self.why)
        if self.mode == "fix_first":
            return f"Apply the fix first: {self.fix_first}. {why}".strip()
        if self.mode == "transient":
            return f"An unchanged rerun can help. {why}".strip()
        if self.mode == "changes":
            return f"An unchanged rerun fails the same way. {why}".strip()
        return f"Rerun is not offered for {self.failure_class}. {why}".strip()

    def button(self) -> tuple[str, str, str]:
        """(button label, confirmation title, confirmation text) of the alert's Rerun button."""
        why = _sentence(self.why)
        phrases = [CHANGE_TEXT[c] for c in self.changes if c in CHANGE_TEXT]
        form = "Nothing is created until you submit the form."
        if self.mode == "fix_first":
            texts = [f"Do this first: {self.fix_first}. {why} Then the form reruns the same spec."]
            if phrases:
                texts.insert(0, f"{texts[0]} If you cannot wait, choose {' or '.join(phrases)} in it.")
            return "Rerun after the fix", "Apply the fix first", _fit([f"{t} {form}" for t in texts] + texts)
        if self.mode == "changes":
            text = f"{why} An unchanged rerun fails the same way, so the form proposes {'; else '.join(phrases)}."
            return "Rerun with changes", "Rerun with changes?", _fit([f"{text} {form}", text])
        if self.mode == "none":
            return "Rerun", "Rerun is not offered", _fit([self.headline()])
        proposal = f"The form proposes {'; else '.join(phrases)}." if phrases else "The form proposes the same spec."
        text = f"An unchanged rerun can help. {why} {proposal}"
        return "Rerun", "Rerun this job?", _fit([f"{text} {form}", text])


#: The button of an alert stored before offers existed (or rendered without one): it promises nothing.
GENERIC_BUTTON = (
    "Rerun",
    "Rerun this job?",
    "A form shows the new job and any changes the diagnosis suggests. Nothing is created until you submit it.",
)


def policy_for(knowledge: KnowledgeBase, diagnosis: Diagnosis) -> RerunPolicy | None:
    """The rerun policy of the diagnosis's class and variant (None: the class has no `rerun:` block).

    A Diagnosis names its variant only by its title (the knowledge base checks that a variant with a rerun
    override has a title of its own)."""
    failure_class = knowledge.classes.get(diagnosis.failure_class)
    if failure_class is None or failure_class.rerun is None:
        return None
    variant = next((n for n, v in failure_class.variants.items() if v.title and v.title == diagnosis.title), None)
    return failure_class.rerun.for_variant(variant)


def rerun_offer(knowledge: KnowledgeBase, diagnosis: Diagnosis, job: JobInfo | None = None) -> RerunOffer:
    """What a Rerun offers for this diagnosis (the fix named from the diagnosis's details and the job)."""
    policy = policy_for(knowledge, diagnosis)
    if policy is None:
        why = f"The knowledge base says nothing about rerunning a {diagnosis.failure_class} failure."
        return RerunOffer(failure_class=diagnosis.failure_class, mode="none", why=why)
    fix = _fill_fix(policy.fix_first, _fix_values(diagnosis, job))
    mode: Literal["transient", "fix_first", "changes", "none"]
    if fix:
        mode = "fix_first"
    elif policy.transient:
        mode = "transient"
    elif policy.changes:
        mode = "changes"
    else:
        mode = "none"
    return RerunOffer(
        failure_class=diagnosis.failure_class, mode=mode, why=policy.why, fix_first=fix, changes=list(policy.changes)
    )


def _fix_values(diagnosis: Diagnosis, job: JobInfo | None) -> dict[str, str]:
    values: dict[str, str] = {}
    if job is not None:
        for name, value in (("project", job.project), ("region", job.region), ("service_account", job.service_account)):
            if value:
                values[name] = value
    values.update({k: v for k, v in diagnosis.details.items() if isinstance(v, str) and v.strip()})
    return {k: " ".join(v.split())[:120] for k, v in values.items()}


def _fill_fix(templates: Sequence[str], values: Mapping[str, str]) -> str | None:
    for template in templates:
        names = re.findall(r"\{([a-z][a-z0-9_]*)\}", template)
        if all(values.get(name) for name in names):
            return re.sub(r"\{([a-z][a-z0-9_]*)\}", lambda m: values[m.group(1)], template)
    return None


def _sentence(text: str) -> str:
    text = text.strip()
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def _fit(texts: Sequence[str], limit: int = MAX_CONFIRM_TEXT) -> str:
    """The first of `texts` that fits in `limit` characters, else the last one cut."""
    return next((t for t in texts if len(t) <= limit), _cut(texts[-1], limit))


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@cache
def _default_knowledge() -> KnowledgeBase:
    return load_knowledge()


def _offered_in(knowledge: KnowledgeBase) -> Mapping[str, Sequence[str]]:
    """Accelerator -> the regions that offer it, from the knowledge base's `accelerator_regions` table
    (knowledge/tables/accelerator_regions.yaml); empty without one (then no region is filtered out)."""
    table = getattr(knowledge, "tables", {}).get("accelerator_regions")
    return {row.accelerator: tuple(row.regions) for row in getattr(table, "rows", None) or ()}


# ------------------------------------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class RerunSettings:
    """The editable part of a rerun. batch_size / spot None: as the failed job (see RerunPlan.resolve)."""

    region: str
    machine_type: str | None
    accelerator_type: str | None  # None: no accelerator
    accelerator_count: int
    replica_count: int
    batch_size: int | None = None  # the per-device batch size the container args set
    spot: bool | None = None  # Spot capacity


@dataclass(frozen=True)
class BatchArg:
    """A per-device batch size in the container args: `--flag=value` (joined) or `--flag value`."""

    flag: str
    value: int
    joined: bool

    def text(self, value: int | None = None) -> str:
        shown = self.value if value is None else value
        return f"{self.flag}={shown}" if self.joined else f"{self.flag} {shown}"


@dataclass(frozen=True)
class PoolSummary:
    index: int
    machine_type: str | None
    accelerator_type: str | None
    accelerator_count: int
    replica_count: int
    image: str | None


@dataclass(frozen=True)
class PlanStep:
    """One change of the class's policy, for this job: proposed, the next option, or not applicable (and why)."""

    change: str  # a RERUN_CHANGES name
    status: Literal["proposed", "next", "not applicable"]
    text: str


@dataclass(frozen=True)
class RerunPlan:
    """Everything the confirmation modal shows, and what the submit needs to check the edits."""

    job_key: str
    project: str
    job_id: str
    display_name: str
    failure_class: str
    diagnosis_title: str
    confidence: float
    pools: list[PoolSummary]
    edited_pools: list[int]  # pools whose machine spec follows the edits
    replica_pool: int  # the pool whose replica count is edited
    scheduling: list[str]  # "Spot", "timeout 7d", ...
    service_account: str | None
    checkpoint_dir: str | None  # baseOutputDirectory.outputUriPrefix
    failed: RerunSettings
    suggested: RerunSettings
    offer: RerunOffer
    steps: list[PlanStep] = field(default_factory=list)
    batch: BatchArg | None = None  # the batch-size flag of the primary pool's args
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)  # what the region menu offers

    @property
    def changes(self) -> list[str]:
        return self.diff(self.suggested)

    def diff(self, settings: RerunSettings) -> list[str]:
        """What `settings` change against the failed job, one line per setting."""
        return diff_lines(self.failed, self.resolve(settings), batch=self.batch)

    def resolve(self, settings: RerunSettings) -> RerunSettings:
        """`settings` with what was not chosen (batch size, capacity) taken from the failed job."""
        batch_size = settings.batch_size if self.batch is not None and settings.batch_size else self.failed.batch_size
        spot = self.failed.spot if settings.spot is None else settings.spot
        return _replace(settings, batch_size=batch_size, spot=spot)


def plan_rerun(
    raw: dict,
    diagnosis: Diagnosis,
    *,
    job_key: str,
    regions: Sequence[str],
    knowledge: KnowledgeBase | None = None,
    offered_in: Mapping[str, Sequence[str]] | None = None,
) -> RerunPlan:
    """The rerun the class's policy gives for the failed job `raw` (a CustomJob REST dict).

    Args:
        raw: The failed CustomJob, as `JobsClient.get_job_raw` returns it (it must have its `name`).
        diagnosis: The job's stored diagnosis.
        job_key: "PROJECT/JOB_ID", for the modal's private_metadata.
        regions: The configured regions (where the job may move).
        knowledge: The knowledge base whose `rerun:` policies apply (default: the bundled one).
        offered_in: Accelerator type -> the regions that offer it (default: the knowledge base's
            `accelerator_regions` table; an accelerator it does not list is offered in every region).

    Raises:
        ValueError: `raw` is not a CustomJob with a name and at least one worker pool.
    """
    info = job_info_from_rest(raw)
    if not (info.project and info.region and info.job_id):
        raise ValueError("the failed job has no resource name")
    specs = _pool_specs(raw)
    if not specs:
        raise ValueError("the failed job has no worker pools")
    pools = [_pool_summary(i, spec) for i, spec in enumerate(specs)]
    primary = pools[0]
    edited = [p.index for p in pools if _machine_key(p) == _machine_key(primary) and _non_empty(specs[p.index])]
    replica_pool = 1 if len(pools) > 1 and _non_empty(specs[1]) else 0
    batch = find_batch_size(_pool_args(specs[0]))
    failed = RerunSettings(
        region=info.region,
        machine_type=primary.machine_type,
        accelerator_type=primary.accelerator_type,
        accelerator_count=primary.accelerator_count if primary.accelerator_type else 0,
        replica_count=pools[replica_pool].replica_count,
        batch_size=batch.value if batch else None,
        spot=info.spot,
    )
    knowledge = knowledge or _default_knowledge()
    offer = rerun_offer(knowledge, diagnosis, info)
    situation = _Situation(
        failed=failed,
        regions=list(regions),
        offered_in=_offered_in(knowledge) if offered_in is None else offered_in,
        checkpoint_dir=info.base_output_directory,
        batch=batch,
    )
    suggested, steps = _plan_steps(offer, situation)
    reasons, warnings = _notes(offer, situation, steps, suggested)
    warnings += regional_warnings(raw, failed.region, suggested.region)
    offered = list(dict.fromkeys([failed.region, *regions, suggested.region]))
    return RerunPlan(
        job_key=job_key,
        project=info.project,
        job_id=info.job_id,
        display_name=info.display_name or f"job {info.job_id}",
        failure_class=diagnosis.failure_class,
        diagnosis_title=diagnosis.title,
        confidence=diagnosis.confidence,
        pools=pools,
        edited_pools=edited,
        replica_pool=replica_pool,
        scheduling=_scheduling(raw),
        service_account=info.service_account,
        checkpoint_dir=info.base_output_directory,
        failed=failed,
        suggested=suggested,
        offer=offer,
        steps=steps,
        batch=batch,
        reasons=reasons,
        warnings=warnings,
        regions=offered,
    )


@dataclass(frozen=True)
class _Situation:
    failed: RerunSettings
    regions: list[str]
    offered_in: Mapping[str, Sequence[str]]
    checkpoint_dir: str | None
    batch: BatchArg | None


def _plan_steps(offer: RerunOffer, situation: _Situation) -> tuple[RerunSettings, list[PlanStep]]:
    """Each change of the policy, in its order: the first that applies is proposed (unless the fix comes
    first: then the same spec is proposed and every change is an option for whoever cannot wait)."""
    suggested = situation.failed
    steps: list[PlanStep] = []
    proposed = offer.mode == "fix_first" or not offer.offered
    for change in offer.changes:
        result, text = _CHANGES[change](situation)
        if result is None:
            steps.append(PlanStep(change, "not applicable", text))
        elif not proposed:
            suggested, proposed = result, True
            steps.append(PlanStep(change, "proposed", text))
        else:
            steps.append(PlanStep(change, "next", text))
    return suggested, steps


def _notes(
    offer: RerunOffer, situation: _Situation, steps: list[PlanStep], suggested: RerunSettings
) -> tuple[list[str], list[str]]:
    """(reasons, warnings) the modal shows besides the steps."""
    reasons: list[str] = []
    warnings: list[str] = []
    failed = situation.failed
    if failed.spot:
        reasons.append(
            "The job ran on Spot capacity: the rerun keeps Spot unless you choose standard (on-demand) capacity "
            "below. Spot is cheaper but can be preempted again."
        )
    if any(s.change == "resume_from_checkpoint" and s.status == "not applicable" for s in steps):
        warnings.append(_no_checkpoint_text())
    if offer.mode == "changes":
        lead = "No rerun change applies to this job. " if suggested == failed else ""
        warnings.append(
            f"{lead}An unchanged rerun will fail the same way ({offer.failure_class}), unless the cause was fixed "
            "outside the job spec (new code under the same image tag)."
        )
    elif offer.mode == "fix_first":
        warnings.append(f"Apply the fix first: {offer.fix_first}. Until then a rerun fails the same way.")
    elif offer.mode == "none":
        warnings.append(offer.headline())
    return reasons, warnings


# ---- the changes: each returns (the settings it proposes, what it does) or (None, why it does not apply)


def _halve_batch_size(s: _Situation) -> tuple[RerunSettings | None, str]:
    batch = s.batch
    if batch is None:
        flags = ", ".join(BATCH_SIZE_FLAGS)
        return None, f"The job's container args set no per-device batch size ({flags}): lower it in the code."
    if batch.value < 2:
        return None, f"The job's args set {batch.text()}: the per-device batch size cannot be halved."
    half = batch.value // 2
    return _replace(s.failed, batch_size=half), (
        f"The job's args set {batch.text()}: the rerun halves the per-device batch size to {batch.text(half)}, "
        "so activations take about half the device memory. Keep the effective batch size with gradient "
        "accumulation if the code supports it."
    )


def _larger_accelerator_change(s: _Situation) -> tuple[RerunSettings | None, str]:
    failed = s.failed
    larger = _larger_accelerator(failed)
    if larger is None:
        if not failed.accelerator_type:
            return None, "The job has no accelerator to replace."
        return None, (
            f"No accelerator with more memory per device than {_gpu(failed.accelerator_type)} is known here: "
            "shard the model (FSDP, ZeRO) instead."
        )
    before, after = failed.accelerator_type or "", larger.accelerator_type or ""
    return larger, f"{_gpu(after)} on {larger.machine_type} has more memory per device than {_gpu(before)}."


def _more_memory_machine_change(s: _Situation) -> tuple[RerunSettings | None, str]:
    machine = _more_memory_machine(s.failed.machine_type)
    if machine is None:
        return None, f"No machine type with more memory than {s.failed.machine_type or 'the default'} is known here."
    return _replace(s.failed, machine_type=machine), (
        f"The replica ran out of RAM: {machine} has more memory than {s.failed.machine_type}."
    )


def _other_region(s: _Situation) -> tuple[RerunSettings | None, str]:
    failed = s.failed
    accelerator = failed.accelerator_type
    offering = s.offered_in.get(accelerator) if accelerator else None
    others = [r for r in s.regions if r != failed.region]
    fits = [r for r in others if offering is None or r in offering]
    if fits:
        where = f" that offers {accelerator}" if offering is not None else ""
        return _replace(failed, region=fits[0]), (
            f"{fits[0]} is another configured region{where}; quota and capacity are per region and per "
            "accelerator type."
        )
    if not others:
        return None, "No other region is configured (`regions` in the routing file)."
    listed = ", ".join((offering or ())[:8])
    return None, (
        f"No other configured region offers {accelerator} (regions that do: {listed}; add one to `regions` in the "
        "routing file)."
    )


def _fewer_accelerators(s: _Situation) -> tuple[RerunSettings | None, str]:
    failed = s.failed
    if not failed.accelerator_type or failed.accelerator_count < 2:
        return None, "The job asks for at most one accelerator per replica: there is nothing to halve."
    fewer = _with_accelerators(failed, failed.accelerator_type, failed.accelerator_count // 2)
    return fewer, (
        f"{fewer.accelerator_count} accelerators per replica instead of {failed.accelerator_count}"
        f" (on {fewer.machine_type}), so the request fits a smaller quota."
    )


def _resume_from_checkpoint(s: _Situation) -> tuple[RerunSettings | None, str]:
    if not s.checkpoint_dir:
        return None, _no_checkpoint_text()
    base = s.checkpoint_dir.rstrip("/")
    return s.failed, (
        f"The new job keeps the output directory {base}, so AIP_CHECKPOINT_DIR is {base}/checkpoints/ again: "
        "code that resumes from the latest checkpoint there picks up where the job stopped."
    )


def _no_checkpoint_text() -> str:
    return (
        "The job has no checkpoint directory (baseOutputDirectory is not set), so the rerun starts from scratch "
        "unless the code saves checkpoints somewhere else."
    )


_CHANGES = {
    "halve_batch_size": _halve_batch_size,
    "larger_accelerator": _larger_accelerator_change,
    "more_memory_machine": _more_memory_machine_change,
    "other_region": _other_region,
    "fewer_accelerators": _fewer_accelerators,
    "resume_from_checkpoint": _resume_from_checkpoint,
}


# ------------------------------------------------------------------------------------------------ batch size


def find_batch_size(args: Sequence[Any]) -> BatchArg | None:
    """The per-device batch size the args set (`--flag=N` or `--flag N`; the last occurrence of the most
    specific flag in BATCH_SIZE_FLAGS), or None."""
    found: dict[str, BatchArg] = {}
    for index, arg in enumerate(args):
        if not isinstance(arg, str):
            continue
        flag, equals, value = arg.partition("=")
        if flag not in BATCH_SIZE_FLAGS:
            continue
        if not equals:
            following = args[index + 1] if index + 1 < len(args) else None
            if not isinstance(following, str):
                continue
            value = following
        if re.fullmatch(r"[0-9]{1,7}", value.strip()) and int(value) > 0:
            found[flag] = BatchArg(flag=flag, value=int(value), joined=bool(equals))
    return next((found[flag] for flag in BATCH_SIZE_FLAGS if flag in found), None)


def set_batch_size(args: Sequence[Any], flag: str, value: int) -> list[Any]:
    """`args` with every occurrence of `flag` set to `value`, in the form it had."""
    out = list(args)
    index = 0
    while index < len(out):
        arg = out[index]
        if isinstance(arg, str):
            name, equals, _ = arg.partition("=")
            if name == flag and equals:
                out[index] = f"{flag}={value}"
            elif name == flag and index + 1 < len(out):
                out[index + 1] = str(value)
                index += 1
        index += 1
    return out


def _pool_args(spec: dict) -> list[Any]:
    for key in ("containerSpec", "pythonPackageSpec"):
        part = spec.get(key)
        if isinstance(part, dict) and isinstance(part.get("args"), list):
            return part["args"]
    return []


# ------------------------------------------------------------------------------------------------ machines


def _larger_accelerator(failed: RerunSettings) -> RerunSettings | None:
    if not failed.accelerator_type:
        return None
    for candidate in _LARGER.get(failed.accelerator_type, ()):
        count = failed.accelerator_count
        if candidate in _N1_GPUS:
            if failed.machine_type and failed.machine_type.startswith("n1-"):
                return _replace(failed, accelerator_type=candidate)
            continue
        if (candidate, count) in _MACHINE_FOR:
            return _with_accelerators(failed, candidate, count)
    return None


def _with_accelerators(failed: RerunSettings, accelerator: str, count: int) -> RerunSettings:
    machine = _MACHINE_FOR.get((accelerator, count), failed.machine_type)
    return _replace(failed, machine_type=machine, accelerator_type=accelerator, accelerator_count=count)


def _more_memory_machine(machine_type: str | None) -> str | None:
    parts = (machine_type or "").split("-")
    if len(parts) != 3 or parts[0] not in _MORE_MEMORY_FAMILIES or not parts[2].isdigit():
        return None
    family, kind, size = parts[0], parts[1], int(parts[2])
    if kind in ("standard", "highcpu"):
        return f"{family}-{'highmem' if kind == 'standard' else 'standard'}-{size}"
    if kind == "highmem":
        bigger = next((s for s in _HIGHMEM_SIZES[family] if s > size), None)
        return f"{family}-highmem-{bigger}" if bigger else None
    return None


def regional_warnings(raw: dict, failed_region: str, region: str) -> list[str]:
    """Warnings for moving the job to `region`: the resources it names that live in a region."""
    if region == failed_region:
        return []
    spec = raw.get("jobSpec") if isinstance(raw.get("jobSpec"), dict) else {}
    names = [label for key, label in _REGIONAL_FIELDS.items() if spec.get(key)]
    if raw.get("encryptionSpec"):
        names.append("KMS key (encryptionSpec)")
    if any(isinstance(p, dict) and (p.get("machineSpec") or {}).get("reservationAffinity") for p in _pool_specs(raw)):
        names.append("reservation")
    if not names:
        return []
    return [
        f"The job uses a {', '.join(names)} tied to {failed_region}: check that it exists in {region}, "
        "or the new job will fail to start."
    ]


# ------------------------------------------------------------------------------------------------ edits


def parse_settings(values: Mapping[str, str | None], *, regions: Sequence[str]) -> RerunSettings:
    """The settings a person chose in the modal (field name -> submitted value). The batch size and capacity
    are None when the modal had no such input (RerunPlan.resolve takes them from the failed job).

    Raises:
        RerunInputError: naming each invalid field.
    """
    errors: dict[str, str] = {}
    region = (values.get(FIELD_REGION) or "").strip()
    if not REGION.fullmatch(region) or (regions and region not in regions):
        errors[FIELD_REGION] = "Choose one of the offered regions."
    machine = (values.get(FIELD_MACHINE_TYPE) or "").strip().lower()
    if not _MACHINE_TYPE.fullmatch(machine) or len(machine) > 64:
        errors[FIELD_MACHINE_TYPE] = "Enter a machine type such as n1-standard-8 or a2-highgpu-1g."
    accelerator = (values.get(FIELD_ACCELERATOR_TYPE) or NO_ACCELERATOR).strip()
    if accelerator != NO_ACCELERATOR and not _ACCELERATOR_NAME.fullmatch(accelerator):
        errors[FIELD_ACCELERATOR_TYPE] = "Choose an accelerator type."
    count = _int(values.get(FIELD_ACCELERATOR_COUNT), default=0)
    if count is None or not 0 <= count <= MAX_ACCELERATORS:
        errors[FIELD_ACCELERATOR_COUNT] = f"Enter a whole number from 0 to {MAX_ACCELERATORS}."
    elif accelerator == NO_ACCELERATOR and count:
        errors[FIELD_ACCELERATOR_COUNT] = "Without an accelerator type the count must be 0."
    elif accelerator != NO_ACCELERATOR and not count:
        errors[FIELD_ACCELERATOR_COUNT] = "Enter how many accelerators each replica gets (at least 1)."
    replicas = _int(values.get(FIELD_REPLICA_COUNT), default=None)
    if replicas is None or not 1 <= replicas <= MAX_REPLICAS:
        errors[FIELD_REPLICA_COUNT] = f"Enter a whole number from 1 to {MAX_REPLICAS}."
    batch_size = None
    if FIELD_BATCH_SIZE in values:
        batch_size = _int(values.get(FIELD_BATCH_SIZE), default=None)
        if batch_size is None or not 1 <= batch_size <= MAX_BATCH_SIZE:
            errors[FIELD_BATCH_SIZE] = f"Enter a whole number from 1 to {MAX_BATCH_SIZE}."
    spot = None
    if FIELD_CAPACITY in values:
        capacity = (values.get(FIELD_CAPACITY) or "").strip()
        if capacity not in (CAPACITY_SPOT, CAPACITY_STANDARD):
            errors[FIELD_CAPACITY] = "Choose Spot or standard capacity."
        spot = capacity == CAPACITY_SPOT
    fixed = _FIXED_GPU_MACHINES.get(machine)
    if fixed is not None and not errors.keys() & {FIELD_ACCELERATOR_TYPE, FIELD_ACCELERATOR_COUNT}:
        if (accelerator, count) != fixed:
            errors[FIELD_ACCELERATOR_TYPE] = f"{machine} comes with {fixed[1]}× {fixed[0]}."
    if errors:
        raise RerunInputError(errors)
    assert count is not None and replicas is not None
    return RerunSettings(
        region=region,
        machine_type=machine,
        accelerator_type=None if accelerator == NO_ACCELERATOR else accelerator,
        accelerator_count=count if accelerator != NO_ACCELERATOR else 0,
        replica_count=replicas,
        batch_size=batch_size,
        spot=spot,
    )


def settings_values(settings: RerunSettings) -> dict[str, str]:
    """The modal's initial values for `settings` (the inverse of parse_settings)."""
    values = {
        FIELD_REGION: settings.region,
        FIELD_MACHINE_TYPE: settings.machine_type or "",
        FIELD_ACCELERATOR_TYPE: settings.accelerator_type or NO_ACCELERATOR,
        FIELD_ACCELERATOR_COUNT: str(settings.accelerator_count),
        FIELD_REPLICA_COUNT: str(settings.replica_count),
    }
    if settings.batch_size is not None:
        values[FIELD_BATCH_SIZE] = str(settings.batch_size)
    if settings.spot is not None:
        values[FIELD_CAPACITY] = CAPACITY_SPOT if settings.spot else CAPACITY_STANDARD
    return values


def accelerator_choices(current: str | None) -> list[str]:
    """What the accelerator menu offers: none, every known type, and the job's own (even if unknown here)."""
    known = [name for number, name in sorted(ACCELERATOR_TYPES.items()) if number]
    extra = [current] if current and current not in known else []
    return [NO_ACCELERATOR, *known, *extra]


def diff_lines(before: RerunSettings, after: RerunSettings, *, batch: BatchArg | None = None) -> list[str]:
    """One line per changed setting: "machine type: a2-highgpu-1g → a2-ultragpu-1g", "args: --batch-size=512 →
    --batch-size=256" (with `batch`, the flag the args use), "capacity: Spot → standard (on-demand)"."""
    lines = []
    if after.region != before.region:
        lines.append(f"region: {before.region} → {after.region}")
    if after.machine_type != before.machine_type:
        lines.append(f"machine type: {before.machine_type or 'unset'} → {after.machine_type or 'unset'}")
    if (after.accelerator_type, after.accelerator_count) != (before.accelerator_type, before.accelerator_count):
        lines.append(f"accelerators: {accelerator_text(before)} → {accelerator_text(after)}")
    if after.replica_count != before.replica_count:
        lines.append(f"replicas: {before.replica_count} → {after.replica_count}")
    if None not in (before.batch_size, after.batch_size) and after.batch_size != before.batch_size:
        if batch is not None:
            lines.append(f"args: {batch.text(before.batch_size)} → {batch.text(after.batch_size)}")
        else:
            lines.append(f"per-device batch size: {before.batch_size} → {after.batch_size}")
    if None not in (before.spot, after.spot) and after.spot != before.spot:
        lines.append(f"capacity: {_capacity(before.spot)} → {_capacity(after.spot)}")
    return lines


def _capacity(spot: bool | None) -> str:
    return "Spot" if spot else "standard (on-demand)"


def accelerator_text(settings: RerunSettings | PoolSummary) -> str:
    if not settings.accelerator_type or not settings.accelerator_count:
        return "none"
    return f"{settings.accelerator_count}× {settings.accelerator_type}"


def run_warnings(plan: RerunPlan, settings: RerunSettings) -> list[str]:
    """Warnings about what was actually submitted (shown in the thread reply)."""
    if plan.resolve(settings) != plan.failed or plan.offer.mode == "transient":
        return []
    if plan.offer.mode == "fix_first":
        return [f"This reruns the same spec: it passes only if the fix was applied first ({plan.offer.fix_first})."]
    return [f"This is an unchanged rerun of a {plan.failure_class} failure: it may fail the same way."]


# ------------------------------------------------------------------------------------------------ the body


def label_value(text: str) -> str:
    """`text` as a GCP label value: lowercase, only [a-z0-9_-], at most 63 characters."""
    return _LABEL_INVALID.sub("_", text.lower())[:63]


def create_body(raw: dict, settings: RerunSettings, *, plan: RerunPlan, user: str) -> dict:
    """The CustomJob to create: the failed job's spec (output-only fields dropped), the chosen settings,
    and the labels rerun-of=<failed job id> and rerun-by=<Slack user id, lowercased>."""
    settings = plan.resolve(settings)
    body = rerun_body(raw, labels={LABEL_RERUN_OF: label_value(plan.job_id), LABEL_RERUN_BY: label_value(user)})
    specs = _pool_specs(body)
    for index in plan.edited_pools:
        machine = specs[index].setdefault("machineSpec", {})
        if settings.machine_type:
            machine["machineType"] = settings.machine_type
        if settings.accelerator_type:
            machine["acceleratorType"] = settings.accelerator_type
            machine["acceleratorCount"] = settings.accelerator_count
        else:
            machine.pop("acceleratorType", None)
            machine.pop("acceleratorCount", None)
    specs[plan.replica_pool]["replicaCount"] = str(settings.replica_count)
    batch = plan.batch
    if batch is not None and settings.batch_size is not None and settings.batch_size != batch.value:
        for spec in specs:  # every pool whose args set the same batch size: replicas of one data-parallel job
            args = _pool_args(spec)
            if find_batch_size(args) == batch:
                args[:] = set_batch_size(args, batch.flag, settings.batch_size)
    if settings.spot is not None and settings.spot != plan.failed.spot:
        scheduling = body.setdefault("jobSpec", {}).setdefault("scheduling", {})
        scheduling["strategy"] = "SPOT" if settings.spot else "STANDARD"
    return body


# ------------------------------------------------------------------------------------------------ helpers


def _pool_specs(job: dict) -> list[dict]:
    spec = job.get("jobSpec")
    pools = spec.get("workerPoolSpecs") if isinstance(spec, dict) else None
    return [p if isinstance(p, dict) else {} for p in pools] if isinstance(pools, list) else []


def _non_empty(spec: dict) -> bool:
    return bool(spec.get("machineSpec") or spec.get("containerSpec") or spec.get("pythonPackageSpec"))


def _pool_summary(index: int, spec: dict) -> PoolSummary:
    info = job_info_from_rest({"jobSpec": {"workerPoolSpecs": [spec]}}).worker_pools[0]
    return PoolSummary(
        index=index,
        machine_type=info.machine_type,
        accelerator_type=info.accelerator_type,
        accelerator_count=info.accelerator_count if info.accelerator_type else 0,
        replica_count=info.replica_count,
        image=info.image_uri,
    )


def _machine_key(pool: PoolSummary) -> tuple[Any, ...]:
    return pool.machine_type, pool.accelerator_type, pool.accelerator_count


def _scheduling(raw: dict) -> list[str]:
    spec = raw.get("jobSpec") if isinstance(raw.get("jobSpec"), dict) else {}
    scheduling = spec.get("scheduling") if isinstance(spec.get("scheduling"), dict) else {}
    parts = []
    strategy = scheduling.get("strategy")
    if strategy not in (None, "STRATEGY_UNSPECIFIED", 0):
        parts.append(f"strategy {strategy}")
    if scheduling.get("timeout"):
        parts.append(f"timeout {scheduling['timeout']}")
    if scheduling.get("restartJobOnWorkerRestart"):
        parts.append("restart on worker restart")
    if scheduling.get("disableRetries"):
        parts.append("retries disabled")
    if scheduling.get("maxWaitDuration"):
        parts.append(f"max wait {scheduling['maxWaitDuration']}")
    return parts or ["standard (defaults)"]


def _replace(settings: RerunSettings, **changes: Any) -> RerunSettings:
    return dataclasses.replace(settings, **changes)


def _gpu(name: str) -> str:
    memory = _MEMORY_GB.get(name)
    return f"{name} ({memory} GB)" if memory else name


def _int(value: str | None, *, default: int | None) -> int | None:
    if value is None or not str(value).strip():
        return default
    text = str(value).strip()
    return int(text) if re.fullmatch(r"[0-9]{1,6}", text) else None
