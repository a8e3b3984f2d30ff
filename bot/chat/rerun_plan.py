"""The rerun plan the confirmation modal shows (`plan_rerun`): the failed job's pools and settings, the class's
changes in its order (the first that applies is proposed, the others are named as next options), the
suggested settings, and the reasons and warnings around them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as _replace
from functools import cache
from typing import Literal

from bot.chat.rerun_changes import CHANGES, Situation, no_checkpoint_text
from bot.chat.rerun_offer import RerunOffer, rerun_offer
from bot.chat.rerun_settings import RerunSettings, diff_lines
from bot.chat.rerun_spec import (
    BatchArg,
    PoolSummary,
    find_batch_size,
    machine_key,
    non_empty_pool,
    pool_args,
    pool_specs,
    pool_summary,
    regional_warnings,
    scheduling_parts,
)
from bot.diagnosis.knowledge import KnowledgeBase, load_knowledge
from bot.gcp.job_resource import job_info_from_rest
from bot.models import Diagnosis
from bot.render.links import job_console_url


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
    specs = pool_specs(raw)
    if not specs:
        raise ValueError("the failed job has no worker pools")
    pools = [pool_summary(i, spec) for i, spec in enumerate(specs)]
    primary = pools[0]
    edited = [p.index for p in pools if machine_key(p) == machine_key(primary) and non_empty_pool(specs[p.index])]
    replica_pool = 1 if len(pools) > 1 and non_empty_pool(specs[1]) else 0
    batch = find_batch_size(pool_args(specs[0]))
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
    situation = Situation(
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
        scheduling=scheduling_parts(raw),
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


def _plan_steps(offer: RerunOffer, situation: Situation) -> tuple[RerunSettings, list[PlanStep]]:
    """Each change of the policy, in its order: the first that applies is proposed (unless the fix comes
    first: then the same spec is proposed and every change is an option for whoever cannot wait)."""
    suggested = situation.failed
    steps: list[PlanStep] = []
    proposed = offer.mode == "fix_first" or not offer.offered
    for change in offer.changes:
        result, text = CHANGES[change](situation)
        if result is None:
            steps.append(PlanStep(change, "not applicable", text))
        elif not proposed:
            suggested, proposed = result, True
            steps.append(PlanStep(change, "proposed", text))
        else:
            steps.append(PlanStep(change, "next", text))
    return suggested, steps


def _notes(
    offer: RerunOffer, situation: Situation, steps: list[PlanStep], suggested: RerunSettings
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
        warnings.append(no_checkpoint_text())
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


def run_warnings(plan: RerunPlan, settings: RerunSettings) -> list[str]:
    """Warnings about what was actually submitted (shown in the thread reply)."""
    if plan.resolve(settings) != plan.failed or plan.offer.mode == "transient":
        return []
    if plan.offer.mode == "fix_first":
        return [f"This reruns the same spec: it passes only if the fix was applied first ({plan.offer.fix_first})."]
    return [f"This is an unchanged rerun of a {plan.failure_class} failure: it may fail the same way."]


@cache
def _default_knowledge() -> KnowledgeBase:
    return load_knowledge()


def _offered_in(knowledge: KnowledgeBase) -> Mapping[str, Sequence[str]]:
    """Accelerator -> the regions that offer it, from the knowledge base's `accelerator_regions` table
    (knowledge/tables/accelerator_regions.yaml); empty without one (then no region is filtered out)."""
    table = getattr(knowledge, "tables", {}).get("accelerator_regions")
    return {row.accelerator: tuple(row.regions) for row in getattr(table, "rows", None) or ()}


def announcement(plan: RerunPlan, settings: RerunSettings, user: str, new_job_id: str) -> str:
    """The reply in the alert's thread when a rerun was created: who, the new job (linked), what changed."""
    url = job_console_url(plan.project, settings.region, new_job_id)
    lines = [f":repeat: <@{user}> reran this job as <{url}|job {new_job_id}> in `{settings.region}`."]
    changes = plan.diff(settings)
    lines.append("Changes: " + "; ".join(changes) if changes else "Same spec as the failed job.")
    lines += [f":warning: {warning}" for warning in run_warnings(plan, settings)]
    return "\n".join(lines)
