"""A rerun plan for a terminal and for JSON (`trainmedic diagnose --custom-job JOB.json --rerun-plan LOG`): the same
plan, in the same order, as the alert's Rerun button, its confirmation and the modal (bot.render.modal) show it.
Pure: plan in, text or a dict out."""

from __future__ import annotations

from typing import Any

from bot.chat.rerun_offer import CHANGE_TEXT
from bot.chat.rerun_plan import RerunPlan
from bot.render.redact import redact

_STATUS = {"proposed": "proposed", "next": "next option", "not applicable": "does not apply"}


def rerun_plan_text(plan: RerunPlan) -> str:
    """The plan: what a rerun of this class is (headline), the button and its confirmation, each change of the
    class's policy with its status for this job, the settings the proposed rerun changes, and the warnings."""
    offer = plan.offer
    label, _, confirm = offer.button()
    lines = [
        f"Rerun plan for {plan.failure_class} (job {plan.job_id}):",
        f"  {offer.headline()}",
        f'  button: "{label}" - {confirm}',
    ]
    for number, step in enumerate(plan.steps, 1):
        what = CHANGE_TEXT.get(step.change, step.change)
        lines.append(f"  {number}. {what} - {_STATUS[step.status]}: {step.text}")
    changes = plan.changes
    lines.append("  the proposed rerun changes: " + ("; ".join(changes) if changes else "nothing (the same spec)"))
    lines += [f"  warning: {warning}" for warning in plan.warnings]
    return redact("\n".join(lines))


def rerun_plan_dict(plan: RerunPlan) -> dict[str, Any]:
    """The plan as JSON: mode, headline, button and confirmation, steps, changes, warnings."""
    offer = plan.offer
    label, title, confirm = offer.button()
    return {
        "mode": offer.mode,
        "headline": redact(offer.headline()),
        "button": {"text": label, "confirm_title": title, "confirm_text": redact(confirm)},
        "steps": [
            {"change": step.change, "status": step.status, "text": redact(step.text)} for step in plan.steps
        ],
        "changes": [redact(change) for change in plan.changes],
        "warnings": [redact(warning) for warning in plan.warnings],
    }
