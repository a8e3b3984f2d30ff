"""PushTokenVerifier at its edges: clock skew, nbf, the e-mail comparison, header parsing, unreachable certs.
Tokens are really signed (standins.oidc) and really checked (google-auth against the served certs)."""

from __future__ import annotations

import socket
import time

import pytest

from bot.errors import ApiUnavailable, PushAuthError
from bot.intake.oidc import PushTokenVerifier
from standins.oidc import OidcIssuer

AUDIENCE = "https://trainmedic-abc123-uc.a.run.app/pubsub/push"
PUSH_SA = "push-sa@my-proj.iam.gserviceaccount.com"


@pytest.fixture
def verifier(oidc_issuer: OidcIssuer) -> PushTokenVerifier:
    return PushTokenVerifier(audience=AUDIENCE, service_account=PUSH_SA, certs_url=oidc_issuer.certs_url)


def mint(issuer: OidcIssuer, **claims: object) -> str:
    claims.setdefault("audience", AUDIENCE)
    claims.setdefault("email", PUSH_SA)
    return issuer.mint(**claims)  # type: ignore[arg-type]


def rejection(verifier: PushTokenVerifier, header: str | None) -> PushAuthError:
    with pytest.raises(PushAuthError) as caught:
        verifier.verify(header)
    return caught.value


# ------------------------------------------------------------------------------------------ time


def test_a_token_expired_within_the_clock_skew_is_accepted(oidc_issuer, verifier) -> None:
    assert verifier.verify("Bearer " + mint(oidc_issuer, exp_in=-3))["email"] == PUSH_SA
    error = rejection(verifier, "Bearer " + mint(oidc_issuer, exp_in=-30))
    assert "expired" in error.reason.lower() and error.forbidden is False
    assert "expired" in rejection(verifier, "Bearer " + mint(oidc_issuer, exp_in=-11)).reason.lower()  # 10 s skew


def test_the_clock_skew_is_configurable(oidc_issuer) -> None:
    strict = PushTokenVerifier(
        audience=AUDIENCE, service_account=PUSH_SA, certs_url=oidc_issuer.certs_url, clock_skew_seconds=0
    )
    with pytest.raises(PushAuthError):
        strict.verify("Bearer " + mint(oidc_issuer, exp_in=-3))
    lenient = PushTokenVerifier(
        audience=AUDIENCE, service_account=PUSH_SA, certs_url=oidc_issuer.certs_url, clock_skew_seconds=60
    )
    assert lenient.verify("Bearer " + mint(oidc_issuer, exp_in=-30))


def test_a_token_not_valid_yet_is_refused_beyond_the_clock_skew(oidc_issuer, verifier) -> None:
    now = int(time.time())
    assert verifier.verify("Bearer " + mint(oidc_issuer, nbf=now + 5))["nbf"] == now + 5
    assert verifier.verify("Bearer " + mint(oidc_issuer, nbf=now - 100))
    error = rejection(verifier, "Bearer " + mint(oidc_issuer, nbf=now + 120))
    assert error.reason == f"token is not valid yet (nbf {now + 120})"
    assert error.forbidden is False
    fractional = rejection(verifier, "Bearer " + mint(oidc_issuer, nbf=now + 120.7))
    assert fractional.reason == f"token is not valid yet (nbf {now + 120})"


@pytest.mark.parametrize("nbf", ["soon", True, None, [1]])
def test_an_nbf_that_is_not_a_time_is_refused(oidc_issuer, verifier, nbf: object) -> None:
    error = rejection(verifier, "Bearer " + mint(oidc_issuer, nbf=nbf))
    assert error.reason == f"token nbf is not a time: {nbf!r}"
    assert error.forbidden is False


def test_a_long_bad_nbf_is_cut_in_the_reason(oidc_issuer, verifier) -> None:
    error = rejection(verifier, "Bearer " + mint(oidc_issuer, nbf="x" * 500))
    assert error.reason == f"token nbf is not a time: {'x' * 500!r}"[:200]


# ------------------------------------------------------------------------------------------ identity


def test_the_email_matches_whatever_its_case(oidc_issuer) -> None:
    verifier = PushTokenVerifier(audience=AUDIENCE, service_account=PUSH_SA.upper(), certs_url=oidc_issuer.certs_url)
    assert verifier.verify("Bearer " + mint(oidc_issuer, email=PUSH_SA))["email"] == PUSH_SA
    assert verifier.verify("Bearer " + mint(oidc_issuer, email="Push-SA@My-Proj.iam.gserviceaccount.com"))


@pytest.mark.parametrize("email", ["x" + PUSH_SA, PUSH_SA + ".evil", PUSH_SA.split("@")[0], ""])
def test_any_other_email_is_forbidden(oidc_issuer, verifier, email: str) -> None:
    error = rejection(verifier, "Bearer " + mint(oidc_issuer, email=email))
    assert error.forbidden is True
    assert error.reason == f"token is for {email!r}, not the push service account"


@pytest.mark.parametrize("verified", ["true", 1, None])
def test_email_verified_must_be_true_itself(oidc_issuer, verifier, verified: object) -> None:
    error = rejection(verifier, "Bearer " + mint(oidc_issuer, email_verified=verified))
    assert error.forbidden is True
    assert error.reason == f"token email {PUSH_SA!r} is not verified"


def test_an_issuer_that_is_not_google_is_named(oidc_issuer, verifier) -> None:
    error = rejection(verifier, "Bearer " + mint(oidc_issuer, iss="https://accounts.google.com.evil"))
    assert error.reason == "token issuer is not Google: 'https://accounts.google.com.evil'"
    assert error.forbidden is False


# ------------------------------------------------------------------------------------------ the header


@pytest.mark.parametrize("form", ["Bearer {}", "bearer {}", "BEARER {}", "  Bearer   {}  ", "Bearer {}\t"])
def test_the_bearer_scheme_in_any_case_and_spacing(oidc_issuer, verifier, form: str) -> None:
    assert verifier.verify(form.format(mint(oidc_issuer)))["aud"] == AUDIENCE


@pytest.mark.parametrize("header", ["Bearer", "Bearer    ", "Token abc", "Bearerabc", "abc"])
def test_headers_without_a_bearer_token(verifier, header: str) -> None:
    error = rejection(verifier, header)
    assert error.reason == "Authorization header is not 'Bearer <token>'"


@pytest.mark.parametrize("header", [None, ""])
def test_a_missing_header(verifier, header: str | None) -> None:
    assert rejection(verifier, header).reason == "missing Authorization header"


def test_malformed_tokens_say_what_google_auth_found(verifier) -> None:
    error = rejection(verifier, "Bearer abc")
    assert error.reason == "invalid token: MalformedError: Wrong number of segments in token: b'abc'"
    assert error.forbidden is False


# ------------------------------------------------------------------------------------------ certificates


def test_certs_that_never_arrive_are_unavailable_within_the_timeout(oidc_issuer) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/oauth2/v1/certs"
        verifier = PushTokenVerifier(audience=AUDIENCE, service_account=PUSH_SA, certs_url=url, timeout=1.0)
        started = time.monotonic()
        with pytest.raises(ApiUnavailable, match="could not fetch Google's token certificates"):
            verifier.verify("Bearer " + mint(oidc_issuer))
        assert time.monotonic() - started < 5


@pytest.mark.parametrize(("audience", "account"), [("", PUSH_SA), (AUDIENCE, ""), ("", "")])
def test_audience_and_account_are_both_required(audience: str, account: str) -> None:
    with pytest.raises(ValueError, match="^audience and service_account are required$"):
        PushTokenVerifier(audience=audience, service_account=account)
