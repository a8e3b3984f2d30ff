"""What a Rerun of a diagnosis offers: the alert's Rerun button and its confirmation say it, the modal shows it.

The failure class's `rerun:` block in the knowledge base (bot.diagnosis.knowledge.RerunPolicy) says per class:
- whether an unchanged rerun can help (transient causes only: a preemption, a capacity stockout, a flake);
- what must be done outside the job spec first (`fix_first`: an IAM grant, a quota increase), which the
  button asks for, naming it;
- which spec changes apply, in the class's remediation order (RERUN_CHANGES): the first one that applies to
  the failed job is proposed, the others are named as next options (bot.chat.rerun_plan).

The offer (`rerun_offer`) and the plan (`bot.chat.rerun_plan.plan_rerun`) come from the same policy, so they agree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.diagnosis.knowledge import KnowledgeBase
from bot.diagnosis.knowledge_schema import RerunPolicy
from bot.models import Diagnosis, JobInfo

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
