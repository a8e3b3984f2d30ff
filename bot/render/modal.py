"""The Rerun confirmation modal: pure Block Kit view dicts for views.open / views.update, within Slack's limits.

Limits kept (platform-facts 6.5): title and button texts ≤ 24 characters, ≤ 100 blocks, section text ≤ 3000,
section fields ≤ 10 of ≤ 2000, option text ≤ 75 and value ≤ 150, `private_metadata` ≤ 3000 (it holds the
job key and nothing else). Every string from the job (display name, image, service account) is escaped.

Layout:
    section       display name, job id, what the diagnosis found
    section       Rerun plan: what the class's knowledge file says (an unchanged rerun helps / fails the same way /
                  apply the fix first), then each of its changes in order: proposed, next option, or not applicable
    section       What will run: image, machine and accelerator, replicas, region, scheduling, ... (fields)
    section       other worker pools (distributed jobs)
    section       Suggested changes: the diff against the failed job
    section       warnings
    divider
    input × 5-7   region, machine type, accelerator type, accelerator count, replicas, and the per-device batch
                  size (when the container args set one) and capacity (for a Spot job); prefilled, editable
    context       the labels the new job gets

The plan section names the same things, in the same order, as the alert's Rerun button and its confirmation
(bot.chat.rerun_offer.RerunOffer.button).
"""

from __future__ import annotations

from typing import Any

from bot.chat.rerun_body import LABEL_RERUN_BY, LABEL_RERUN_OF, label_value
from bot.chat.rerun_offer import CHANGE_TEXT
from bot.chat.rerun_plan import RerunPlan
from bot.chat.rerun_settings import (
    CAPACITY_SPOT,
    CAPACITY_STANDARD,
    FIELD_ACCELERATOR_COUNT,
    FIELD_ACCELERATOR_TYPE,
    FIELD_BATCH_SIZE,
    FIELD_CAPACITY,
    FIELD_MACHINE_TYPE,
    FIELD_REGION,
    FIELD_REPLICA_COUNT,
    MAX_ACCELERATORS,
    MAX_BATCH_SIZE,
    MAX_REPLICAS,
    NO_ACCELERATOR,
    accelerator_choices,
    accelerator_text,
    settings_values,
)
from bot.chat.rerun_spec import PoolSummary
from bot.render.mrkdwn import inline_code, one_line, safe_text, truncate

VIEW_RERUN = "rerun_confirm"  # callback_id of the confirmation modal
VIEW_RERUN_INFO = "rerun_info"  # callback_id of the loading / error views (no submit)
MAX_TITLE = 24
MAX_BUTTON = 24
MAX_BLOCKS = 100
MAX_PRIVATE_METADATA = 3000
MAX_SECTION_TEXT = 3000
MAX_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_OPTIONS = 100
MAX_OPTION_TEXT = 75
MAX_OPTION_VALUE = 150
MAX_INITIAL_VALUE = 3000
MAX_WARNINGS = 8


def rerun_modal(plan: RerunPlan, *, user: str | None = None) -> dict:
    """The confirmation modal for `plan`, prefilled with the suggested settings (`user`: who will submit it)."""
    initial = settings_values(plan.suggested)
    blocks: list[dict] = [
        _section(_intro(plan)),
        _section(_plan(plan)),
        _fields_section("*What will run* (copied from the failed job)", _what_runs(plan)),
    ]
    others = _other_pools(plan)
    if others:
        blocks.append(_section(others))
    blocks.append(_section(_suggestion(plan)))
    if plan.warnings:
        shown = [f":warning: {safe_text(w, 600)}" for w in plan.warnings[:MAX_WARNINGS]]
        blocks.append(_section("\n".join(shown)))
    blocks.append({"type": "divider"})
    blocks += [
        _input(
            FIELD_REGION,
            "Region",
            _select(FIELD_REGION, plan.regions, initial[FIELD_REGION]),
            "Where the new job runs. Quota and capacity are per region.",
        ),
        _input(
            FIELD_MACHINE_TYPE,
            "Machine type",
            _text_input(FIELD_MACHINE_TYPE, initial[FIELD_MACHINE_TYPE]),
            _pools_hint(plan),
        ),
        _input(
            FIELD_ACCELERATOR_TYPE,
            "Accelerator type",
            _select(
                FIELD_ACCELERATOR_TYPE,
                accelerator_choices(plan.failed.accelerator_type),
                initial[FIELD_ACCELERATOR_TYPE],
            ),
            f"Choose {NO_ACCELERATOR} for a CPU-only job.",
        ),
        _input(
            FIELD_ACCELERATOR_COUNT,
            "Accelerators per replica",
            _number_input(FIELD_ACCELERATOR_COUNT, initial[FIELD_ACCELERATOR_COUNT], 0, MAX_ACCELERATORS),
            None,
        ),
        _input(
            FIELD_REPLICA_COUNT,
            "Replicas" if plan.replica_pool == 0 else f"Worker replicas (pool {plan.replica_pool})",
            _number_input(FIELD_REPLICA_COUNT, initial[FIELD_REPLICA_COUNT], 1, MAX_REPLICAS),
            None,
        ),
    ]
    if plan.batch is not None and FIELD_BATCH_SIZE in initial:
        blocks.append(
            _input(
                FIELD_BATCH_SIZE,
                "Per-device batch size",
                _number_input(FIELD_BATCH_SIZE, initial[FIELD_BATCH_SIZE], 1, MAX_BATCH_SIZE),
                f"{plan.batch.flag} in the container args (the failed job had {plan.batch.value}).",
            )
        )
    if plan.failed.spot:
        blocks.append(
            _input(
                FIELD_CAPACITY,
                "Capacity",
                _choice(
                    FIELD_CAPACITY,
                    [(CAPACITY_SPOT, "Spot (as the failed job)"), (CAPACITY_STANDARD, "Standard (on-demand)")],
                    initial[FIELD_CAPACITY],
                ),
                "Spot is cheaper but can be preempted again; standard capacity is not preempted.",
            )
        )
    blocks += [
        _context(
            f"The new job gets the labels `{LABEL_RERUN_OF}={label_value(plan.job_id)}` and "
            f"`{LABEL_RERUN_BY}={label_value(user) if user else '&lt;your Slack user id&gt;'}`; everything else "
            "is copied from the failed job. Its link is posted in the alert's thread."
        ),
    ]
    return _view(VIEW_RERUN, "Rerun training job", blocks, plan.job_key, submit="Rerun")


def info_modal(job_key: str, title: str, text: str) -> dict:
    """A view with one message and a Close button: "preparing...", or why the rerun cannot go ahead."""
    return _view(VIEW_RERUN_INFO, title, [_section(text)], job_key, submit=None)


def job_key_of(view: dict) -> str:
    """The job key a submitted view carries in private_metadata ("" if none)."""
    value = view.get("private_metadata") if isinstance(view, dict) else None
    return value if isinstance(value, str) else ""


def submitted_values(view: dict) -> dict[str, str | None]:
    """The values of the modal's inputs from a view_submission's `view.state.values` (field name -> value)."""
    state = view.get("state") if isinstance(view, dict) else None
    values = state.get("values") if isinstance(state, dict) else None
    out: dict[str, str | None] = {}
    if not isinstance(values, dict):
        return out
    for block_id, actions in values.items():
        element = actions.get(block_id) if isinstance(actions, dict) else None
        if not isinstance(element, dict):
            continue
        selected = element.get("selected_option")
        if isinstance(selected, dict):
            out[block_id] = selected.get("value")
        elif isinstance(element.get("value"), str | type(None)):
            out[block_id] = element.get("value")
    return out


# ------------------------------------------------------------------------------------------------ content


def _intro(plan: RerunPlan) -> str:
    name = safe_text(plan.display_name, 200)
    title = safe_text(plan.diagnosis_title, 300)
    confidence = f"{round(plan.confidence * 100)}%"
    return (
        f"Rerun *{name}* (job {inline_code(plan.job_id, 40)} in {inline_code(plan.failed.region, 40)})\n"
        f"Diagnosed as {inline_code(plan.failure_class, 60)} ({confidence}): {title}"
    )


_MODE_ICON = {"transient": ":repeat:", "fix_first": ":wrench:", "changes": ":no_entry:", "none": ":no_entry_sign:"}
_STATUS = {"proposed": "*proposed*", "next": "next option", "not applicable": "does not apply"}


def _plan(plan: RerunPlan) -> str:
    """What the class's knowledge file says about a rerun, and each of its changes for this job, in order."""
    offer = plan.offer
    lines = [
        f"*Rerun plan* for {inline_code(plan.failure_class, 60)}",
        f"{_MODE_ICON[offer.mode]} {safe_text(offer.headline(), 600)}",
    ]
    for number, step in enumerate(plan.steps, 1):
        what = CHANGE_TEXT.get(step.change, step.change)
        lines.append(f"{number}. {safe_text(what, 200)} — {_STATUS[step.status]}: {safe_text(step.text, 500)}")
    if offer.mode == "fix_first":
        lines.append("The form below reruns the same spec: submit it once the fix is in place.")
    return truncate("\n".join(lines), MAX_SECTION_TEXT)


def _what_runs(plan: RerunPlan) -> list[str]:
    primary = plan.pools[0]
    fields = [
        f"*Image*\n{_code(primary.image or 'unknown')}",
        f"*Machine*\n{_code(primary.machine_type or 'default')}",
        f"*Accelerator*\n{_code(accelerator_text(primary))}",
        f"*Replicas*\n{_replicas(plan)}",
        f"*Region*\n{_code(plan.failed.region)}",
        f"*Scheduling*\n{safe_text(', '.join(plan.scheduling), 300)}",
        f"*Checkpoint directory*\n{_code(plan.checkpoint_dir) if plan.checkpoint_dir else ':warning: none'}",
    ]
    if plan.service_account:
        fields.append(f"*Service account*\n{_code(plan.service_account)}")
    return fields


def _replicas(plan: RerunPlan) -> str:
    counts = [f"pool {p.index}: {p.replica_count}" for p in plan.pools if p.replica_count]
    return safe_text(", ".join(counts) if len(plan.pools) > 1 else str(plan.pools[0].replica_count), 300)


def _other_pools(plan: RerunPlan) -> str:
    lines = [_pool_line(pool) for pool in plan.pools[1:] if pool.replica_count or pool.machine_type]
    if not lines:
        return ""
    shown = lines[:10]
    more = f"\n…and {len(lines) - 10} more pools" if len(lines) > 10 else ""
    return truncate("*Other worker pools*\n" + "\n".join(shown) + more, MAX_SECTION_TEXT)


def _pool_line(pool: PoolSummary) -> str:
    parts = [f"pool {pool.index}: {pool.replica_count} × {_code(pool.machine_type or 'default')}"]
    if pool.accelerator_type:
        parts.append(_code(accelerator_text(pool)))
    if pool.image:
        parts.append(_code(pool.image))
    return " · ".join(parts)


def _suggestion(plan: RerunPlan) -> str:
    changes = plan.changes
    if changes:
        diff = "\n".join(f"• {safe_text(line, 300)}" for line in changes)
        head = f"*Suggested changes* (diff against the failed job; edit them below)\n{diff}"
    else:
        head = "*Suggested changes*: none, the same spec as the failed job."
    reasons = "\n".join(f"_{safe_text(reason, 600)}_" for reason in plan.reasons)
    return truncate(head + ("\n" + reasons if reasons else ""), MAX_SECTION_TEXT)


def _pools_hint(plan: RerunPlan) -> str | None:
    if len(plan.edited_pools) > 1:
        pools = ", ".join(str(i) for i in plan.edited_pools)
        return f"Machine type and accelerators apply to pools {pools} (they share the primary's machine spec)."
    return None


# ------------------------------------------------------------------------------------------------ blocks


def _view(callback_id: str, title: str, blocks: list[dict], job_key: str, *, submit: str | None) -> dict:
    view: dict[str, Any] = {
        "type": "modal",
        "callback_id": callback_id,
        "title": _plain(title, MAX_TITLE),
        "close": _plain("Cancel" if submit else "Close", MAX_BUTTON),
        "private_metadata": job_key[:MAX_PRIVATE_METADATA],
        "blocks": blocks[:MAX_BLOCKS],
    }
    if submit:
        view["submit"] = _plain(submit, MAX_BUTTON)
    return view


def _plain(text: str, limit: int) -> dict:
    return {"type": "plain_text", "text": truncate(one_line(text), limit) or " ", "emoji": True}


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, MAX_SECTION_TEXT) or " "}}


def _fields_section(text: str, fields: list[str]) -> dict:
    return {
        "type": "section",
        "text": {"type": "mrkdwn", "text": text},
        "fields": [{"type": "mrkdwn", "text": truncate(f, MAX_FIELD_TEXT)} for f in fields[:MAX_FIELDS]],
    }


def _context(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": truncate(text, MAX_SECTION_TEXT)}]}


def _code(value: str) -> str:
    return inline_code(value, 300)


def _input(block_id: str, label: str, element: dict, hint: str | None) -> dict:
    block: dict[str, Any] = {
        "type": "input",
        "block_id": block_id,
        "label": _plain(label, 2000),
        "element": element,
    }
    if hint:
        block["hint"] = _plain(hint, 2000)
    return block


def _option(value: str) -> dict:
    return {"text": _plain(value, MAX_OPTION_TEXT), "value": value[:MAX_OPTION_VALUE]}


def _select(action_id: str, values: list[str], initial: str) -> dict:
    choices = list(dict.fromkeys(values))
    if initial not in choices:
        choices.insert(0, initial)
    options = [_option(v) for v in choices[:MAX_OPTIONS]]
    element: dict[str, Any] = {"type": "static_select", "action_id": action_id, "options": options}
    if initial in choices[:MAX_OPTIONS]:
        element["initial_option"] = _option(initial)
    return element


def _choice(action_id: str, choices: list[tuple[str, str]], initial: str) -> dict:
    """A static select whose options show a text other than their value."""
    options = [{"text": _plain(text, MAX_OPTION_TEXT), "value": value[:MAX_OPTION_VALUE]} for value, text in choices]
    element: dict[str, Any] = {"type": "static_select", "action_id": action_id, "options": options}
    chosen = next((option for option in options if option["value"] == initial), None)
    if chosen is not None:
        element["initial_option"] = chosen
    return element


def _text_input(action_id: str, initial: str) -> dict:
    element: dict[str, Any] = {"type": "plain_text_input", "action_id": action_id, "max_length": 64}
    if initial:
        element["initial_value"] = initial[:MAX_INITIAL_VALUE]
    return element


def _number_input(action_id: str, initial: str, minimum: int, maximum: int) -> dict:
    return {
        "type": "number_input",
        "action_id": action_id,
        "is_decimal_allowed": False,
        "initial_value": initial,
        "min_value": str(minimum),
        "max_value": str(maximum),
    }
