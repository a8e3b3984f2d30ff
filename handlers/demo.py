"""`trainmedic demo`: the real service, in-process, against local stand-ins, fed sample failures over HTTP.

No cloud account is needed: Slack's Web API, Vertex AI, Cloud Logging and Google's OIDC certificates are local
stand-ins speaking their real wire formats; the store is SQLite. Each sample (one per failure class) is pushed as
Pub/Sub would push a log sink's messages (OIDC-signed, some twice), and every Slack message that results is shown
with its size and saved as Block Kit JSON, with the full card its thread holds (NN-....json and
NN-....thread.json: paste either into https://app.slack.com/block-kit-builder).
"""

from __future__ import annotations

import base64
import json
import logging
import re
import shutil
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import yaml

DEMO_SIGNING_SECRET = "demo-signing-secret"
DEMO_AUDIENCE = "https://trainmedic.example/pubsub/push"
DEMO_PUSH_SA = "trainmedic-push@acme-ml.iam.gserviceaccount.com"
DEMO_SCHEDULER_SA = "trainmedic-sched@acme-ml.iam.gserviceaccount.com"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _envelope(data: Any, message_id: str) -> dict:
    return {
        "message": {
            "data": base64.b64encode(json.dumps(data).encode()).decode(),
            "messageId": message_id,
            "publishTime": "2026-11-29T09:00:00Z",
            "attributes": {"logging.googleapis.com/timestamp": "2026-11-29T09:00:00Z"},
        },
        "subscription": "projects/acme-ml/subscriptions/trainmedic-push",
    }


def run_demo(*, out_dir: Path, keep_running: bool = False) -> int:
    import httpx
    import uvicorn

    from bot.alerting.event_log import configure_json_logging
    from bot.config import load_settings
    from bot.render.block_kit import text_length
    from bot.render.channel_message import CHANNEL_MESSAGE_TEXT
    from bot.slack.poster import CARD_EVENT_TYPE
    from handlers.app import build_services, create_app
    from handlers.demo_sample_kit import PROJECT
    from handlers.demo_samples import DEMO_ROUTING, samples
    from handlers.demo_samples_more import REFUSED_BY
    from handlers.demo_scenes import rerun_scene, stuck_scene
    from standins.google_apis import FakeGoogleApis
    from standins.oidc import OidcIssuer
    from standins.slack_api import FakeSlackApi

    out_dir = out_dir.resolve()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "blocks").mkdir(parents=True)
    log_file = (out_dir / "service.log").open("w")
    configure_json_logging(stream=log_file)
    (out_dir / "trainmedic.yaml").write_text(yaml.safe_dump(DEMO_ROUTING, sort_keys=False))

    slack, google, issuer = FakeSlackApi().start(), FakeGoogleApis().start(), OidcIssuer().start()
    # The demo workspace: everyone is in every alert channel; U0DEMO001 and the S0DEMOGRP group may rerun.
    for channel in {DEMO_ROUTING["default_channel"], *DEMO_ROUTING["class_channels"].values()} | {
        route["channel"] for route in DEMO_ROUTING["routes"]
    }:
        slack.seed_members(channel, ["U0DEMO001", "U0DEMO002", "U0DEMO003"])
    slack.seed_usergroup("S0DEMOGRP", ["U0DEMO003"])
    slack.seed_user(REFUSED_BY, "U0DEMO004")  # the submitter of a refused job creation is told directly
    scenario = samples()
    for sample in scenario:
        for resource in filter(None, [sample.job, *sample.more_jobs]):
            google.seed_job(resource)
        # Cloud Logging holds the same entries the sink exports (the bot reads them for /diagnose and enrichment)
        google.seed_log_entries([d for d in sample.deliveries if "resource" in d] + sample.logged)
    port = _free_port()
    environ = {
        "SLACK_BOT_TOKEN": "xoxb-demo-token",
        "SLACK_SIGNING_SECRET": DEMO_SIGNING_SECRET,
        "SLACK_API_URL": slack.base_url,
        "TRAINMEDIC_CONFIG": str(out_dir / "trainmedic.yaml"),
        "TRAINMEDIC_STORE": f"sqlite:///{out_dir / 'state.db'}",
        "VERTEX_API_ENDPOINT": google.base_url,
        "LOGGING_API_ENDPOINT": google.base_url,
        "QUOTAS_API_ENDPOINT": google.base_url,
        "PUBSUB_VERIFY_TOKEN": "true",
        "PUBSUB_PUSH_AUDIENCE": DEMO_AUDIENCE,
        "PUBSUB_PUSH_SERVICE_ACCOUNT": DEMO_PUSH_SA,
        "OIDC_CERTS_URL": issuer.certs_url,
        "SCHEDULER_SERVICE_ACCOUNT": DEMO_SCHEDULER_SA,
        "PORT": str(port),
    }
    services = build_services(load_settings(environ))
    server = uvicorn.Server(
        uvicorn.Config(create_app(services), host="127.0.0.1", port=port, log_config=None, access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    url = f"http://127.0.0.1:{port}"
    out = sys.stdout
    out.write(f"trainmedic demo: the service is up at {url} (SQLite store, local Slack and Vertex AI stand-ins)\n\n")

    counts: dict[str, int] = {}
    token = issuer.mint(audience=DEMO_AUDIENCE, email=DEMO_PUSH_SA)
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=60) as client:
        for number, sample in enumerate(scenario, start=1):
            out.write(f"[{number}] {sample.title}\n")
            for index, data in enumerate(sample.deliveries):
                message_id = f"demo-{number}-{index}"
                for _attempt in range(20):  # as Pub/Sub does: redeliver until acknowledged
                    answer = client.post("/pubsub/push", json=_envelope(data, message_id))
                    if answer.status_code < 300:
                        break
                    time.sleep(0.2)
                status = answer.json().get("status", str(answer.status_code))
                counts[status] = counts.get(status, 0) + 1
                out.write(f"      push {message_id:<10} -> HTTP {answer.status_code} {status}\n")
            if sample.final_job is not None:
                google.seed_job(sample.final_job)
                out.write("      (the job then succeeded: nothing is posted for it)\n")
            for note in sample.notes:
                out.write(f"      note: {note}\n")
        scheduler = issuer.mint(audience=DEMO_AUDIENCE, email=DEMO_SCHEDULER_SA)
        with (
            httpx.Client(base_url=url, headers={"authorization": f"Bearer {scheduler}"}, timeout=60) as scans,
            httpx.Client(base_url=url, timeout=60) as chat,
        ):
            out.write(f"[{len(scenario) + 1}] a job waiting in QUEUED for 45 min (the scheduler's POST /tasks/scan)\n")
            scenes_ok = stuck_scene(scans, google, slack, out)
            spot = next(s for s in scenario if s.failure_class == "preemption" and s.job is not None)
            rerun_key = f"{PROJECT}/{str(spot.job['name']).rsplit('/', 1)[-1]}"  # type: ignore[index]
            out.write(f"[{len(scenario) + 2}] a rerun from chat of the reclaimed Spot job, which then succeeds\n")
            scenes_ok = (
                rerun_scene(chat, scans, google, slack, services.store, rerun_key, secret=DEMO_SIGNING_SECRET, out=out)
                and scenes_ok
            )
        out.write("\n")

    posted = slack.posted()
    sizes: list[int] = []
    cards = 0
    for number, message in enumerate(posted, start=1):
        name = re.sub(r"[^a-z0-9]+", "-", f"{number:02d}-{message['channel']}-{message['text'][:40]}".lower()).strip(
            "-"
        )
        path = out_dir / "blocks" / f"{name}.json"
        path.write_text(json.dumps({"blocks": message["blocks"]}, indent=2, ensure_ascii=False))
        sizes.append(text_length(message["blocks"]))
        out.write(render_message(message))
        out.write(f"  {sizes[-1]} characters of text (at most {CHANNEL_MESSAGE_TEXT}); Block Kit JSON: {path}\n")
        replies = slack.replies(slack.conversation_id(message["channel"]), message["ts"])
        for reply in replies:  # the full card (the first reply), then what happened (a rerun and its outcome)
            if (reply.get("metadata") or {}).get("event_type") != CARD_EVENT_TYPE:
                out.write(f"  In its thread: {_plain(str(reply.get('text', '')))[:200]}\n")
                continue
            card_path = out_dir / "blocks" / f"{name}.thread.json"
            card_path.write_text(json.dumps({"blocks": reply["blocks"]}, indent=2, ensure_ascii=False))
            cards += 1
            out.write(
                f"  In its thread, the full card: {len(reply['blocks'])} blocks, {text_length(reply['blocks'])} "
                f"characters; Block Kit JSON: {card_path}\n"
            )
        out.write("\n")

    expected = sum(1 for sample in scenario if sample.expect_message)
    pushes = sum(counts.values())
    summary = ", ".join(f"{count} {status}" for status, count in sorted(counts.items()))
    out.write(f"Summary: {pushes} pushes ({summary}); {len(posted)} Slack messages: {expected} failed jobs and ")
    out.write("1 stuck job (one message each, duplicates suppressed, the recovered job never posted), ")
    out.write(f"{cards} full cards in their threads; channel messages of {min(sizes, default=0)}")
    out.write(f"-{max(sizes, default=0)} characters of text.\n")
    out.write(f"Block Kit JSON in {out_dir / 'blocks'}; the service's JSON log in {out_dir / 'service.log'}.\n")
    first = next((sample for sample in scenario if sample.expect_message), None)
    if first is not None:
        from bot.gcp.job_resource import parse_job_name

        project, _region, job_id = parse_job_name(first.job["name"])
        out.write(
            f"The demo's store is {out_dir / 'state.db'}; what was done about a job (its alert, "
            f"acknowledgements, reruns):\n  {history_command(out_dir, f'{project}/{job_id}')}\n"
        )
    ok = (
        len(posted) == expected + 1  # and the stuck job's message, which has no card
        and cards == expected
        and scenes_ok
        and all(size <= CHANNEL_MESSAGE_TEXT for size in sizes)
    )
    if keep_running:
        out.write(
            f"\nThe service stays up at {url} (Slack signing secret '{DEMO_SIGNING_SECRET}'); the Slack stand-in "
            f"is at {slack.base_url}, the Vertex AI stand-in at {google.base_url}.\n"
            "Users U0DEMO001..U0DEMO003 are in every channel; U0DEMO001 and group S0DEMOGRP may rerun.\n"
            "Send it signed Slack requests (standins.slack_api: signature_headers, slash_command_body,\n"
            "block_action_body, view_submission_body): see docs/chat-actions.md, 'Try the chat actions locally'.\n"
            "Press Ctrl+C to stop.\n"
        )
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    server.should_exit = True
    thread.join(timeout=10)
    for stand_in in (slack, google, issuer):
        stand_in.stop()
    logging.getLogger().handlers.clear()
    log_file.close()
    return 0 if ok else 1


def history_command(out_dir: Path, job_key: str, *, cwd: Path | None = None) -> str:
    """`trainmedic history` pointed at the demo's store (its SQLite file in `out_dir`): a path relative to the
    current folder when the demo wrote under it, else the absolute one."""
    store = out_dir.resolve() / "state.db"
    here = (cwd or Path.cwd()).resolve()
    shown = store.relative_to(here) if store.is_relative_to(here) else store
    return f"trainmedic history --store sqlite:///{shown.as_posix()} {job_key}"


# --------------------------------------------------------------------------- Block Kit -> terminal text

_MRKDWN_LINK = re.compile(r"<(https?://[^|>]+)\|([^>]+)>")
_MENTION = re.compile(r"<@([A-Z0-9]+)>")
_DATE = re.compile(r"<!date\^\d+\^[^|]*\|([^>]+)>")


def _plain(text: str) -> str:
    text = _DATE.sub(r"\1", text)
    text = _MRKDWN_LINK.sub(r"\2 (\1)", text)
    text = _MENTION.sub(r"@\1", text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def render_message(message: dict) -> str:
    """A readable terminal view of a Block Kit message (what Slack would show, roughly)."""
    title = f"{message['channel']} (ts {message.get('ts', '?')})"
    lines = [f"+-- {title} " + "-" * max(0, 70 - len(title))]
    for block in message.get("blocks", []):
        kind = block.get("type")
        if kind == "header":
            lines.append(f"| {block['text']['text']}")
            lines.append("|")
        elif kind == "section" and block.get("text"):
            lines.extend(f"| {line}" for line in _plain(block["text"]["text"]).splitlines())
            lines.append("|")
        elif kind == "context":
            parts = [_plain(e.get("text", "")) for e in block.get("elements", []) if e.get("text")]
            lines.append("| " + "  ·  ".join(parts))
            lines.append("|")
        elif kind == "actions":
            buttons = [f"[ {e['text']['text']} ]" for e in block.get("elements", []) if e.get("type") == "button"]
            lines.append("| " + "  ".join(buttons))
        elif kind == "divider":
            lines.append("| " + "-" * 40)
    lines.append("+" + "-" * 74)
    return "\n".join(lines) + "\n"
