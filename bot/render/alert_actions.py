"""The bottom of the channel message: who acted (status) and the buttons.

    context      Acknowledged by <@U…> at … / Rerun by <@U…> as job N
    actions      Acknowledge | Undo acknowledge, Rerun (primary, confirm; gone once a rerun was made). The Rerun
                 button and its confirmation say what the class's knowledge file offers (ctx.rerun_offer): an
                 unchanged rerun (transient causes), changes in order, or the fix to apply first; no Rerun for
                 a class that offers none, nor for an incident, nor for a pipeline run.

Button values hold the job key and nothing else; the ACTION_* ids are what the Slack listeners match.
"""

from __future__ import annotations

from bot.chat.pipeline_rerun import PIPELINE_BUTTON, PIPELINE_OFFERED_MODES
from bot.chat.rerun_offer import GENERIC_BUTTON
from bot.jobs.identity import JobIdError, JobKind, key_kind, parse_resource_name
from bot.render import links
from bot.render.alert_context import AlertContext, project_of, region_of
from bot.render.block_kit import LINK_URL_CAP, button, mention, mrkdwn_text, plain_text, slack_date
from bot.render.mrkdwn import escape, inline_code, truncate

ACTION_ACKNOWLEDGE = "diagnosis_acknowledge"


ACTION_UNACKNOWLEDGE = "diagnosis_unacknowledge"


ACTION_RERUN = "diagnosis_rerun"


def status_block(ctx: AlertContext) -> dict | None:
    lines: list[str] = []
    if ctx.acknowledged_by is not None:
        when = f" at {slack_date(ctx.acknowledged_at)}" if ctx.acknowledged_at is not None else ""
        lines.append(f":white_check_mark: Acknowledged by {mention(ctx.acknowledged_by)}{when}")
    if ctx.rerun_made:
        who = f" by {mention(ctx.rerun_by)}" if ctx.rerun_by is not None else ""
        if ctx.rerun_job_id:
            project, region, new_id = project_of(ctx), region_of(ctx), ctx.rerun_job_id
            pipeline_run = False
            if new_id.startswith("projects/"):  # the created job's resource name: link it in its own region
                try:
                    ref = parse_resource_name(new_id)
                    project, region, new_id = ref.project, ref.region, ref.id
                    pipeline_run = ref.kind is JobKind.PIPELINE_JOB
                except JobIdError:
                    pass
            console = links.pipeline_run_console_url if pipeline_run else links.job_console_url
            url = console(project, region, new_id)
            job = inline_code(new_id, 80)
            target = f"<{url}|{job.strip('`')}>" if len(url) <= LINK_URL_CAP else job
            outcome = f": *{escape(ctx.rerun_outcome)}*" if ctx.rerun_outcome else ""
            lines.append(f":repeat: Rerun{who} as job {target}{outcome}")
        else:
            lines.append(f":repeat: Rerun requested{who}")
    if not lines:
        return None
    return {"type": "context", "elements": [mrkdwn_text(line) for line in lines]}


RERUNNABLE = (JobKind.CUSTOM_JOB, JobKind.PIPELINE_JOB)


def actions_block(ctx: AlertContext) -> dict:
    if ctx.acknowledged_by is None:
        buttons = [button("Acknowledge", ACTION_ACKNOWLEDGE, ctx.job_key)]
    else:
        buttons = [button("Undo acknowledge", ACTION_UNACKNOWLEDGE, ctx.job_key)]
    offer = ctx.rerun_offer
    offered = offer is None or offer.offered
    kind = key_kind(ctx.job_key)  # a refused creation has no job to rerun; an incident's job has not failed
    if kind is JobKind.PIPELINE_JOB:  # an unchanged run of the pipeline, only where that can help
        offered = offer is not None and offer.mode in PIPELINE_OFFERED_MODES
    if not ctx.rerun_made and ctx.incident is None and kind in RERUNNABLE and offered:
        label, title, text = (
            PIPELINE_BUTTON
            if kind is JobKind.PIPELINE_JOB
            else (offer.button() if offer is not None else GENERIC_BUTTON)
        )
        rerun = button(label, ACTION_RERUN, ctx.job_key)
        rerun["style"] = "primary"
        rerun["confirm"] = {
            "title": plain_text(truncate(title, 100)),
            "text": plain_text(truncate(text, 300)),
            "confirm": plain_text(truncate(label, 30)),
            "deny": plain_text("Cancel"),
        }
        buttons.append(rerun)
    return {"type": "actions", "elements": buttons}
