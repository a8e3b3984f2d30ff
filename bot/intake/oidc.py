"""Verify the Google-signed OIDC token Pub/Sub puts on each push request.

A push is ours when its `Authorization: Bearer <JWT>` is signed by Google (certs from `certs_url`), is
unexpired, is for our audience, is already valid (`nbf`, when present), was issued by accounts.google.com,
and names our push service account as a verified `email`. google-auth checks the signature, `exp`, `iat` and
the audience; the rest is checked here. Google's certs are
fetched through a CacheControl session, so they are downloaded once per their Cache-Control max-age.
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any

from bot.errors import ApiUnavailable, PushAuthError

if TYPE_CHECKING:
    import requests

GOOGLE_CERTS_URL = "https://www.googleapis.com/oauth2/v1/certs"
GOOGLE_ISSUERS = frozenset({"accounts.google.com", "https://accounts.google.com"})


class PushTokenVerifier:
    """Checks push requests' bearer tokens (thread-safe; keep one for the process)."""

    def __init__(
        self,
        *,
        audience: str,
        service_account: str,
        certs_url: str = GOOGLE_CERTS_URL,
        session: requests.Session | None = None,
        clock_skew_seconds: int = 10,
        timeout: float = 10.0,
    ) -> None:
        import requests
        from cachecontrol import CacheControl
        from google.auth.transport.requests import Request

        if not audience or not service_account:
            raise ValueError("audience and service_account are required")
        self._audience = audience
        self._service_account = service_account.casefold()
        self._certs_url = certs_url
        self._clock_skew = clock_skew_seconds
        self._request = functools.partial(Request(CacheControl(session or requests.Session())), timeout=timeout)

    def verify(self, authorization_header: str | None) -> dict[str, Any]:
        """The token's claims, if the request carries a valid token from our push service account.

        Raises:
            PushAuthError: forbidden=False (HTTP 401) for a missing, malformed, forged, expired, not yet
                valid, wrong-audience or wrong-issuer token; forbidden=True (HTTP 403) for a valid Google token
                whose `email` is not our push service account or is not verified.
            ApiUnavailable: Google's certificates could not be fetched (transient).
        """
        claims = self._verified_claims(_bearer_token(authorization_header))
        if claims.get("iss") not in GOOGLE_ISSUERS:
            raise PushAuthError(f"token issuer is not Google: {claims.get('iss')!r}")
        if "nbf" in claims:
            not_before = claims["nbf"]
            if isinstance(not_before, bool) or not isinstance(not_before, int | float):
                raise PushAuthError(f"token nbf is not a time: {not_before!r}"[:200])
            if not_before > time.time() + self._clock_skew:
                raise PushAuthError(f"token is not valid yet (nbf {int(not_before)})")
        email = claims.get("email")
        if not isinstance(email, str) or email.casefold() != self._service_account:
            raise PushAuthError(f"token is for {email!r}, not the push service account", forbidden=True)
        if claims.get("email_verified") is not True:
            raise PushAuthError(f"token email {email!r} is not verified", forbidden=True)
        return claims

    def _verified_claims(self, token: str) -> dict[str, Any]:
        from google.auth import exceptions as auth_exceptions
        from google.oauth2 import id_token

        try:
            claims = id_token.verify_token(
                token,
                self._request,
                audience=self._audience,
                certs_url=self._certs_url,
                clock_skew_in_seconds=self._clock_skew,
            )
        except auth_exceptions.TransportError as exc:
            raise ApiUnavailable(f"could not fetch Google's token certificates: {exc}") from exc
        except (ValueError, TypeError, KeyError, AttributeError, auth_exceptions.GoogleAuthError) as exc:
            # malformed input surfaces as any of these from google.auth.jwt's decoding
            raise PushAuthError(f"invalid token: {type(exc).__name__}: {exc}") from exc
        if not isinstance(claims, dict):
            raise PushAuthError("invalid token: claims are not an object")
        return claims


def _bearer_token(authorization_header: str | None) -> str:
    if not authorization_header:
        raise PushAuthError("missing Authorization header")
    scheme, _, token = authorization_header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise PushAuthError("Authorization header is not 'Bearer <token>'")
    return token
