from __future__ import annotations

import base64
import json
import socket

import pytest

from bot.errors import ApiUnavailable, PushAuthError
from bot.intake.oidc import PushTokenVerifier
from standins.oidc import SigningKey

AUDIENCE = "https://trainmedic-abc123-uc.a.run.app/pubsub/push"
PUSH_SA = "push-sa@my-proj.iam.gserviceaccount.com"


@pytest.fixture
def verifier(oidc_issuer) -> PushTokenVerifier:
    return PushTokenVerifier(audience=AUDIENCE, service_account=PUSH_SA, certs_url=oidc_issuer.certs_url)


def bearer(token: str) -> str:
    return f"Bearer {token}"


def test_a_valid_push_token_is_accepted(oidc_issuer, verifier):
    claims = verifier.verify(bearer(oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA)))

    assert claims["email"] == PUSH_SA
    assert claims["aud"] == AUDIENCE
    assert claims["iss"] == "https://accounts.google.com"
    (request,) = oidc_issuer.server.requests
    assert (request.method, request.path) == ("GET", "/oauth2/v1/certs")


def test_the_bare_issuer_form_and_a_lowercase_scheme_are_accepted(oidc_issuer, verifier):
    token = oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA, iss="accounts.google.com")
    assert verifier.verify(f"bearer {token}")["iss"] == "accounts.google.com"


def test_certs_are_fetched_once_across_many_verifications(oidc_issuer, verifier):
    for _ in range(20):
        verifier.verify(bearer(oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA)))
    with pytest.raises(PushAuthError):
        verifier.verify(bearer(oidc_issuer.mint(audience="https://elsewhere", email=PUSH_SA)))

    assert oidc_issuer.fetch_count == 1


def test_certs_are_fetched_again_when_their_max_age_is_zero(oidc_issuer):
    oidc_issuer.max_age = 0
    verifier = PushTokenVerifier(audience=AUDIENCE, service_account=PUSH_SA, certs_url=oidc_issuer.certs_url)
    for _ in range(3):
        verifier.verify(bearer(oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA)))
    assert oidc_issuer.fetch_count == 3


def _tampered(token: str) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["email"] = "attacker@evil.example"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (None, "missing Authorization header"),
        ("", "missing Authorization header"),
        ("Basic dXNlcjpwYXNz", "not 'Bearer <token>'"),
        ("Bearer ", "not 'Bearer <token>'"),
        ("Bearer not-a-jwt", "invalid token"),
        ("Bearer a.b.c", "invalid token"),
        ("Bearer W10.W10.W10", "invalid token"),  # segments that decode to JSON lists, not objects
    ],
)
def test_missing_or_malformed_headers_are_401(verifier, header, reason):
    with pytest.raises(PushAuthError, match=reason) as caught:
        verifier.verify(header)
    assert caught.value.forbidden is False


@pytest.mark.parametrize(
    ("make_token", "reason"),
    [
        (
            lambda issuer: issuer.mint(audience=AUDIENCE, email=PUSH_SA, key=SigningKey.generate(kid=issuer.key.kid)),
            "signature",
        ),
        (lambda issuer: issuer.mint(audience=AUDIENCE, email=PUSH_SA, key=SigningKey.generate()), "key id"),
        (lambda issuer: _tampered(issuer.mint(audience=AUDIENCE, email=PUSH_SA)), "signature"),
        (lambda issuer: issuer.mint(audience=AUDIENCE, email=PUSH_SA, exp_in=-120), "expired"),
        (lambda issuer: issuer.mint(audience="https://other-service.a.run.app", email=PUSH_SA), "audience"),
        (lambda issuer: issuer.mint(audience=AUDIENCE, email=PUSH_SA, iss="https://evil.example"), "issuer"),
    ],
    ids=["forged-same-kid", "forged-unknown-kid", "tampered-claims", "expired", "wrong-audience", "wrong-issuer"],
)
def test_bad_tokens_are_401(oidc_issuer, verifier, make_token, reason):
    with pytest.raises(PushAuthError, match=reason) as caught:
        verifier.verify(bearer(make_token(oidc_issuer)))
    assert caught.value.forbidden is False


def test_a_valid_token_for_another_account_is_403(oidc_issuer, verifier):
    token = oidc_issuer.mint(audience=AUDIENCE, email="someone-else@my-proj.iam.gserviceaccount.com")
    with pytest.raises(PushAuthError, match="not the push service account") as caught:
        verifier.verify(bearer(token))
    assert caught.value.forbidden is True


def test_an_unverified_email_is_403(oidc_issuer, verifier):
    token = oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA, email_verified=False)
    with pytest.raises(PushAuthError, match="not verified") as caught:
        verifier.verify(bearer(token))
    assert caught.value.forbidden is True


def test_a_token_without_email_is_403(oidc_issuer, verifier):
    token = oidc_issuer.mint(audience=AUDIENCE, email=None)
    with pytest.raises(PushAuthError) as caught:
        verifier.verify(bearer(token))
    assert caught.value.forbidden is True


def test_unreachable_certs_are_api_unavailable_not_an_auth_failure(oidc_issuer):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    verifier = PushTokenVerifier(
        audience=AUDIENCE, service_account=PUSH_SA, certs_url=f"http://127.0.0.1:{port}/oauth2/v1/certs"
    )
    with pytest.raises(ApiUnavailable, match="certificates"):
        verifier.verify(bearer(oidc_issuer.mint(audience=AUDIENCE, email=PUSH_SA)))


def test_audience_and_service_account_are_required():
    with pytest.raises(ValueError):
        PushTokenVerifier(audience="", service_account=PUSH_SA)
