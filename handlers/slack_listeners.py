"""Slack listeners on the Bolt app: /diagnose, @trainmedic mentions, the alert's buttons and the Rerun modal.

Each listener parses, acknowledges within Slack's 3 seconds, calls the core (bot.chat.diagnose, bot.chat.actions) and
replies. The Bolt app runs with process_before_response=False, so the work after ack() goes on in Bolt's
thread pool once the HTTP response is sent (Cloud Run must keep the CPU allocated: --no-cpu-throttling).

Listeners are registered per kind (`register_commands`, `register_events`, `register_actions`, `register_views`)
over one `Listeners` context holding the cores they share.

Slack redelivers what it thinks was not answered in time (X-Slack-Retry-Num): a command, a button click or an
event is handled once per trigger_id / event_id (`store.mark_message`); a rerun submission once per job,
through the store's atomic rerun claim.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.alerting.event_log import event as log_event
from bot.chat.actions import ActionService, refusal_text
from bot.chat.diagnose import JobDiagnoser
from bot.chat.diagnose_request import acknowledgement_text, parse_diagnose_text, parse_mention_text
from bot.errors import ActionRefused, BotError
from bot.jobs.identity import JobKind, key_kind
from bot.render.alert_actions import ACTION_ACKNOWLEDGE, ACTION_RERUN, ACTION_UNACKNOWLEDGE
from bot.render.modal import VIEW_RERUN, info_modal, job_key_of, rerun_modal, submitted_values
from bot.slack.poster import SlackPoster
from bot.store import Store

DIAGNOSE_COMMAND = "/diagnose"


@dataclass(frozen=True)
class Listeners:
    """What every listener shares: the store (redelivery marks), the two cores and the poster (refusals)."""

    store: Store
    diagnoser: JobDiagnoser
    actions: ActionService
    poster: SlackPoster

    def first_delivery(self, kind: str, key: str | None, request: Any) -> bool:
        """False for a redelivery of something already handled (same trigger_id or event_id)."""
        if not key:
            return True
        try:
            if self.store.mark_message(f"slack:{kind}:{key}"):
                return True
        except BotError as exc:  # answering twice beats not answering
            log_event(logging.WARNING, "Slack delivery not deduplicated", kind=kind, key=key, reason=str(exc))
            return True
        log_event(logging.INFO, "Slack redelivery ignored", kind=kind, key=key, retry=_retry_num(request))
        return False

    def refuse(self, channel: str, user: str, exc: ActionRefused) -> None:
        try:
            self.poster.ephemeral(channel, user, refusal_text(exc))
        except BotError as error:
            log_event(logging.WARNING, "refusal not delivered", channel=channel, user=user, reason=str(error))


def register_listeners(bolt: Any, services: Any) -> None:
    """Register every Slack listener on `bolt`, wired to the cores built from `services`."""
    diagnoser = JobDiagnoser(
        jobs=services.jobs,
        logs=services.logs,
        pipelines=services.pipelines,
        quotas=services.quotas,
        classifier=services.classifier,
        regions=services.routing.regions,
        default_project=services.routing.default_project or services.settings.GOOGLE_CLOUD_PROJECT,
        store=services.store,
    )
    actions = services.action_service()
    shared = Listeners(store=services.store, diagnoser=diagnoser, actions=actions, poster=services.poster)
    register_commands(bolt, shared)
    register_events(bolt, shared)
    register_actions(bolt, shared)
    register_views(bolt, shared)
    bolt.error(_handle_error)


# ---------------------------------------------------------------------------------------- commands: /diagnose


def register_commands(bolt: Any, shared: Listeners) -> None:
    def handle_diagnose_command(ack: Any, command: dict, respond: Any, request: Any) -> None:
        wanted = parse_diagnose_text(command.get("text") or "")
        if wanted.reference is None:  # help, or a reference that does not parse
            ack(**shared.diagnoser.answer(wanted))
            return
        if not shared.first_delivery("command", command.get("trigger_id"), request):
            ack()
            return
        ack(text=acknowledgement_text(wanted))
        message = shared.diagnoser.answer(wanted, who=command.get("user_id"))
        respond(
            text=message["text"],
            blocks=message["blocks"],
            response_type="ephemeral" if wanted.private else "in_channel",
            replace_original=False,
        )

    bolt.command(DIAGNOSE_COMMAND)(handle_diagnose_command)


# ---------------------------------------------------------------------------------------- events: @trainmedic


def register_events(bolt: Any, shared: Listeners) -> None:
    def handle_app_mention(body: dict, event: dict, client: Any, request: Any) -> None:  # acked by Bolt
        if not shared.first_delivery("event", body.get("event_id"), request):
            return
        wanted = parse_mention_text(event.get("text") or "")
        channel, user = event["channel"], event.get("user", "")
        thread_ts = event.get("thread_ts") or event["ts"]
        answer = shared.diagnoser.answer
        if wanted.reference is None:
            _reply(client, channel, thread_ts, answer(wanted), private_to=user if wanted.private else None)
            return
        if wanted.private:
            client.chat_postEphemeral(
                channel=channel, user=user, thread_ts=thread_ts, text=acknowledgement_text(wanted)
            )
            _reply(client, channel, thread_ts, answer(wanted, who=user), private_to=user)
            return
        placeholder = client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=acknowledgement_text(wanted))
        message = answer(wanted, who=user)
        client.chat_update(channel=channel, ts=placeholder["ts"], text=message["text"], blocks=message["blocks"])

    bolt.event("app_mention")(handle_app_mention)


# ---------------------------------------------------------------------------------------- actions: buttons


def register_actions(bolt: Any, shared: Listeners) -> None:
    actions = shared.actions

    def act(method: Any, body: dict, action: dict) -> None:
        user, (channel, message_ts) = body["user"]["id"], _message_of(body)
        try:
            method(str(action.get("value") or ""), user=user, channel=channel, message_ts=message_ts)
        except ActionRefused as exc:
            shared.refuse(channel, user, exc)

    def handle_acknowledge_action(ack: Any, body: dict, action: dict, request: Any) -> None:
        ack()
        if shared.first_delivery("action", body.get("trigger_id"), request):
            act(actions.acknowledge, body, action)

    def handle_unacknowledge_action(ack: Any, body: dict, action: dict, request: Any) -> None:
        ack()
        if shared.first_delivery("action", body.get("trigger_id"), request):
            act(actions.unacknowledge, body, action)

    def handle_rerun_action(ack: Any, body: dict, action: dict, client: Any, request: Any) -> None:
        ack()
        if not shared.first_delivery("action", body.get("trigger_id"), request):
            return
        job_key, user, (channel, message_ts) = str(action.get("value") or ""), body["user"]["id"], _message_of(body)
        if key_kind(job_key) is JobKind.PIPELINE_JOB:  # confirmed in the button's dialog: no form
            try:
                actions.rerun_pipeline(job_key, user=user, channel=channel, message_ts=message_ts)
            except ActionRefused as exc:
                shared.refuse(channel, user, exc)
            return
        try:
            actions.request_rerun(job_key, user=user, channel=channel, message_ts=message_ts)
        except ActionRefused as exc:
            shared.refuse(channel, user, exc)
            return
        loading = info_modal(job_key, "Rerun training job", ":hourglass_flowing_sand: Reading the failed job…")
        try:
            opened = client.views_open(trigger_id=body["trigger_id"], view=loading)["view"]
        except SlackApiError as exc:  # e.g. expired_trigger_id: Slack gives 3 s to open a modal
            reason = exc.response.get("error", "error") if exc.response is not None else "error"
            refusal = ActionRefused(f"Slack did not open the Rerun dialog ({reason}): click Rerun again")
            shared.refuse(channel, user, refusal)
            return
        try:
            view = rerun_modal(actions.plan(job_key), user=user)
        except ActionRefused as exc:
            view = info_modal(job_key, "Cannot rerun", refusal_text(exc))
        client.views_update(view_id=opened["id"], hash=opened.get("hash"), view=view)

    bolt.action(ACTION_ACKNOWLEDGE)(handle_acknowledge_action)
    bolt.action(ACTION_UNACKNOWLEDGE)(handle_unacknowledge_action)
    bolt.action(ACTION_RERUN)(handle_rerun_action)


# ---------------------------------------------------------------------------------------- views: the Rerun modal


def register_views(bolt: Any, shared: Listeners) -> None:
    actions = shared.actions

    def handle_rerun_submission(ack: Any, body: dict, view: dict) -> None:
        job_key, user = job_key_of(view), body["user"]["id"]
        try:
            start = actions.begin_rerun(job_key, user=user, values=submitted_values(view))
        except ActionRefused as exc:
            ack(response_action="update", view=info_modal(job_key, "Rerun refused", refusal_text(exc)))
            actions.notify(job_key, user, refusal_text(exc))
            return
        if start.errors:
            ack(response_action="errors", errors=start.errors)
            return
        ack()
        if start.claim is None:  # a retry or a second click of the same person: the first one is running
            return
        try:
            actions.complete_rerun(start.claim)
        except ActionRefused as exc:
            actions.notify(job_key, user, refusal_text(exc))

    bolt.view_submission(VIEW_RERUN)(handle_rerun_submission)


def _handle_error(error: Exception, body: dict) -> None:
    log_event(
        logging.ERROR,
        "Slack listener failed",
        error=f"{type(error).__name__}: {error}",
        payload_type=body.get("type") if isinstance(body, dict) else None,
    )


def _reply(client: Any, channel: str, thread_ts: str, message: dict, *, private_to: str | None) -> None:
    if private_to:
        client.chat_postEphemeral(
            channel=channel, user=private_to, thread_ts=thread_ts, text=message["text"], blocks=message["blocks"]
        )
    else:
        client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=message["text"], blocks=message["blocks"])


def _message_of(body: dict) -> tuple[str, str]:
    """(channel, ts) of the message a button sits on."""
    container = body.get("container") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id") or ""
    ts = container.get("message_ts") or (body.get("message") or {}).get("ts") or ""
    return str(channel), str(ts)


def _retry_num(request: Any) -> str | None:
    values = (getattr(request, "headers", None) or {}).get("x-slack-retry-num") or []
    return values[0] if values else None
