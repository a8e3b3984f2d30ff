"""The demo's samples through the real alert path and renderer: one alert per failure class, each channel message
one screen (at most CHANNEL_MESSAGE_TEXT characters of text in its blocks), its full card the first reply in its
thread, holding every remedy and everything to avoid.

The service as `trainmedic serve` (and the demo) builds it (SQLite store, slack_sdk to the Slack stand-in, the
Vertex AI / Cloud Logging clients to the Google stand-in, the bundled knowledge base), its AlertService fed each
sample's deliveries directly, in the order the demo pushes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from bot.config import load_settings
from bot.render.block_kit import text_length
from bot.render.channel_message import CHANNEL_MESSAGE_TEXT
from bot.render.mrkdwn import safe_text
from bot.slack.poster import ALERT_EVENT_TYPE, CARD_EVENT_TYPE
from handlers.app import build_services
from handlers.demo_samples import DEMO_ROUTING, Sample, samples
from handlers.demo_samples_more import lifecycle_samples
from standins.google_apis import FakeGoogleApis
from standins.slack_api import FakeSlackApi
from tests.live_service import base_environ


@dataclass
class Alert:
    sample: Sample
    message: dict  # the channel message, as Slack holds it
    replies: list[dict]  # its thread
    stored: dict  # what the store keeps: {"diagnosis", "context", "card", ...}

    @property
    def card(self) -> dict:
        return self.replies[0]


@pytest.fixture(scope="module")
def alerts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Alert]]:
    """Every sample pushed once (in order, deliveries as the demo sends them), then what Slack holds."""
    scenario = samples()
    folder = tmp_path_factory.mktemp("samples")
    (folder / "trainmedic.yaml").write_text(yaml.safe_dump(DEMO_ROUTING))
    with FakeSlackApi() as slack, FakeGoogleApis() as google:
        for sample in scenario:
            for resource in filter(None, [sample.job, *sample.more_jobs]):
                google.seed_job(resource)
            google.seed_log_entries([d for d in sample.deliveries if "resource" in d] + sample.logged)
        environ = base_environ(
            folder,
            TRAINMEDIC_CONFIG=str(folder / "trainmedic.yaml"),
            SLACK_API_URL=slack.base_url,
            VERTEX_API_ENDPOINT=google.base_url,
            LOGGING_API_ENDPOINT=google.base_url,
        )
        services = build_services(load_settings(environ))  # as `trainmedic serve` (and the demo) builds it
        service, store = services.alerts, services.store
        service.job_cache_seconds = 0.0  # the recovered job's later state is read, as minutes later it would be
        by_key: dict[str, Sample] = {}
        for number, sample in enumerate(scenario):
            for index, data in enumerate(sample.deliveries):
                message_id = f"sample-{number}-{index}"
                if "incident" in data:
                    outcome = service.handle_incident(data, message_id=message_id, deadline=service.deadline(25))
                else:
                    outcome = service.handle_log_entry(data, message_id=message_id, deadline=service.deadline(25))
                if outcome.job_key:
                    by_key[outcome.job_key] = sample
            if sample.final_job is not None:
                google.seed_job(sample.final_job)
        found = []
        for message in slack.posted():
            key = message["metadata"]["event_payload"]["job_key"]
            record = store.get_alert(key)
            assert record is not None and record.message_ts == message["ts"]
            replies = slack.replies(slack.conversation_id(message["channel"]), message["ts"])
            found.append(Alert(by_key[key], message, replies, record.diagnosis or {}))
        store.close()
        yield found


def texts(node: object) -> list[str]:
    """Every "text" string in a block tree, counted independently of the renderer."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            found += [value] if key == "text" and isinstance(value, str) else texts(value)
    elif isinstance(node, list):
        for value in node:
            found += texts(value)
    return found


def test_one_alert_per_failure_class_and_none_for_the_recovered_job(alerts: list[Alert]) -> None:
    classes = {path.stem for path in (Path(__file__).parent.parent / "knowledge").glob("*.yaml")}
    assert len(classes) == 13
    lifecycle = {sample.title for sample in lifecycle_samples()}  # a pipeline run and a refused creation, besides
    per_class = [a for a in alerts if a.sample.title not in lifecycle]
    assert sorted(a.stored["diagnosis"]["failure_class"] for a in per_class) == sorted(classes)
    for alert in alerts:
        assert alert.stored["diagnosis"]["failure_class"] == alert.sample.failure_class, alert.sample.title
    assert len(alerts) == sum(1 for s in samples() if s.expect_message)
    assert all(a.message["metadata"]["event_type"] == ALERT_EVENT_TYPE for a in alerts)


def test_every_channel_message_is_one_screen(alerts: list[Alert]) -> None:
    for alert in alerts:
        blocks = alert.message["blocks"]
        size = text_length(blocks)
        assert size == sum(len(t) for t in texts(blocks))  # measured independently of the renderer
        assert size <= CHANNEL_MESSAGE_TEXT, (alert.sample.title, size)
        kinds = [b["type"] for b in blocks]
        assert kinds[0] == "header" and kinds[-1] == "actions"
        shown = json.dumps(blocks)
        diagnosis = alert.stored["diagnosis"]
        assert f"`{diagnosis['failure_class']}`" in shown or diagnosis["failure_class"] == "unknown"
        steps = diagnosis["remediation"][:2] or diagnosis["first_checks"][:2]
        assert len(steps) == 2
        for step in steps:  # the first two remedies, each at least begun (long ones are cut short here)
            assert json.dumps(safe_text(step, 1000)[:36])[1:-1] in shown, (alert.sample.title, step)
        assert "*Evidence*" in shown, alert.sample.title
        assert "In the thread" in shown


def test_every_alert_has_its_full_card_as_the_first_thread_reply(alerts: list[Alert]) -> None:
    for alert in alerts:
        [card] = alert.replies  # exactly one reply: the card, posted once
        assert card["thread_ts"] == alert.message["ts"]
        assert card["metadata"]["event_type"] == CARD_EVENT_TYPE
        assert card["metadata"]["event_payload"]["job_key"] == alert.message["metadata"]["event_payload"]["job_key"]
        assert alert.stored["card"]["ts"] == card["ts"]  # stored with the alert
        shown = "\n".join(texts(card["blocks"]))
        diagnosis = alert.stored["diagnosis"]
        for item in diagnosis["remediation"] + diagnosis["avoid"] + diagnosis["first_checks"]:
            assert safe_text(item, 1000) in shown, (alert.sample.title, item)
        assert diagnosis["avoid"] and "*Avoid*" in shown  # every class names its traps
        for command in diagnosis["commands"]:
            assert safe_text(command["title"], 200) in shown
        assert all(b["type"] != "actions" for b in card["blocks"])  # the buttons are on the channel message
        assert 1 <= len(card["blocks"]) <= 50 and text_length(card["blocks"]) <= 10_000


def test_the_cascade_is_one_line_naming_the_replicas(alerts: list[Alert]) -> None:
    [alert] = [a for a in alerts if a.stored["diagnosis"]["cascade"]]
    lines = [line for t in texts(alert.message["blocks"]) for line in t.splitlines() if "Cascade" in line]
    assert lines == [
        ":link: *Cascade:* workerpool1-0..2 timed out in NCCL collectives after workerpool0-0 ran out of GPU memory."
    ]
    assert lines[0] in "\n".join(texts(alert.card["blocks"]))
