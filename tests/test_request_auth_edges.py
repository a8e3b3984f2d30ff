"""Edge cases of request authentication: Slack's timestamp header and the OIDC token's `nbf` claim."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from standins.google_apis import FakeGoogleApis, log_entry
from standins.oidc import OidcIssuer
from standins.slack_api import FakeSlackApi, signature_headers, slash_command_body
from tests.live_service import LiveService, envelope, standin_environ

SECRET = "test-signing-secret"
AUDIENCE = "https://trainmedic-abc.a.run.app/pubsub/push"
PUSH_SA = "trainmedic-push@acme-ml.iam.gserviceaccount.com"


@pytest.fixture
def live(
    tmp_path: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis, oidc_issuer: OidcIssuer
) -> Iterator[LiveService]:
    environ = standin_environ(
        tmp_path,
        fake_slack,
        fake_google,
        SLACK_SIGNING_SECRET=SECRET,
        PUBSUB_VERIFY_TOKEN="true",
        PUBSUB_PUSH_AUDIENCE=AUDIENCE,
        PUBSUB_PUSH_SERVICE_ACCOUNT=PUSH_SA,
        OIDC_CERTS_URL=oidc_issuer.certs_url,
    )
    with LiveService(environ) as service:
        yield service


def help_command(slack: FakeSlackApi) -> bytes:
    return slash_command_body("help", user="U1", channel="C1", response_url=slack.response_url("t"), trigger_id="t")


@pytest.mark.parametrize("stamp", ["abc", "", "1.7e9", "NaN", "12 34", "0x10", "-"])
def test_a_non_numeric_slack_timestamp_is_refused_with_401(live, fake_slack, stamp: str) -> None:
    body = help_command(fake_slack)
    headers = signature_headers(SECRET, body, content_type="application/x-www-form-urlencoded")
    headers["X-Slack-Request-Timestamp"] = stamp

    answer = httpx.post(live.url + "/slack/events", content=body, headers=headers, timeout=30)

    assert answer.status_code == 401, answer.text
    assert live.wait_quiet() and fake_slack.calls == []


def test_a_signed_request_with_a_good_timestamp_still_works(live, fake_slack) -> None:
    body = help_command(fake_slack)
    headers = signature_headers(SECRET, body, content_type="application/x-www-form-urlencoded")
    answer = httpx.post(live.url + "/slack/events", content=body, headers=headers, timeout=30)
    assert answer.status_code == 200 and "/diagnose" in answer.json()["text"]


BODY = envelope(log_entry("acme-ml", "555", "INFO line", task_name="workerpool0-0"), "m-nbf")


@pytest.mark.parametrize(
    ("nbf", "status"),
    [
        (lambda now: now + 3600, 401),  # not valid for another hour
        (lambda now: "soon", 401),  # not a time
        (lambda now: True, 401),  # JSON true is not a time either
        (lambda now: now - 60, 200),  # valid since a minute ago
        (lambda now: now + 5, 200),  # within the clock skew allowed
    ],
    ids=["future", "string", "boolean", "past", "skew"],
)
def test_the_push_tokens_nbf_is_checked(live, oidc_issuer, nbf, status: int) -> None:
    token = oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA, nbf=nbf(int(time.time())))
    answer = httpx.post(
        live.url + "/pubsub/push", json=BODY, headers={"authorization": f"Bearer {token}"}, timeout=30
    )
    assert answer.status_code == status, answer.text
    if status == 401:
        assert answer.json()["status"] == "rejected" and "nbf" in answer.json()["reason"]
        assert live.services.store.entries("acme-ml/555") == []
