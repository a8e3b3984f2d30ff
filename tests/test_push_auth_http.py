"""/pubsub/push verifies Pub/Sub's OIDC token: signed by Google's keys (served locally), our audience, our push
service account, verified email."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from standins.google_apis import FakeGoogleApis, log_entry
from standins.oidc import OidcIssuer, SigningKey
from standins.slack_api import FakeSlackApi
from tests.live_service import LiveService, envelope, standin_environ

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
        PUBSUB_VERIFY_TOKEN="true",
        PUBSUB_PUSH_AUDIENCE=AUDIENCE,
        PUBSUB_PUSH_SERVICE_ACCOUNT=PUSH_SA,
        OIDC_CERTS_URL=oidc_issuer.certs_url,
    )
    with LiveService(environ) as service:
        yield service


BODY = envelope(log_entry("acme-ml", "555", "INFO line", task_name="workerpool0-0"), "m-1")


def send(live: LiveService, token: str | None) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.post(live.url + "/pubsub/push", json=BODY, headers=headers, timeout=30)


def test_valid_token_is_accepted_and_certs_are_cached(live, oidc_issuer) -> None:
    for _ in range(5):
        answer = send(live, oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA))
        assert answer.status_code == 200, answer.text
    assert oidc_issuer.fetch_count == 1


@pytest.mark.parametrize(
    ("case", "status"),
    [
        ("missing", 401),
        ("garbage", 401),
        ("forged", 401),
        ("expired", 401),
        ("wrong_audience", 401),
        ("wrong_issuer", 401),
        ("other_account", 403),
        ("unverified_email", 403),
    ],
)
def test_bad_tokens_are_refused(live, oidc_issuer, fake_slack, case: str, status: int) -> None:
    tokens = {
        "missing": None,
        "garbage": "not-a-jwt",
        "forged": oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA, key=SigningKey.generate(kid="attacker")),
        "expired": oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA, exp_in=-600),
        "wrong_audience": oidc_issuer.mint(audience="https://elsewhere.example/push", email=PUSH_SA),
        "wrong_issuer": oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA, iss="https://evil.example"),
        "other_account": oidc_issuer.mint(audience=AUDIENCE, email="someone@evil.iam.gserviceaccount.com"),
        "unverified_email": oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA, email_verified=False),
    }
    answer = send(live, tokens[case])
    assert answer.status_code == status
    assert answer.json()["status"] == "rejected"
    assert live.services.store.entries("acme-ml/555") == []  # nothing was processed
