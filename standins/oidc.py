"""A stand-in for Google's token issuer: serves certs like https://www.googleapis.com/oauth2/v1/certs and
signs RS256 ID tokens like the ones Pub/Sub push puts in `Authorization: Bearer ...`.

    issuer = OidcIssuer().start()
    PushTokenVerifier(audience=AUD, service_account=SA, certs_url=issuer.certs_url)
    token = issuer.mint(audience=AUD, email=SA)
    issuer.fetch_count      # how many times the certs were downloaded
"""

from __future__ import annotations

import datetime
import functools
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from google.auth import crypt, jwt

from standins.http_server import LocalHttpServer, RecordedRequest, Reply

CERTS_PATH = "/oauth2/v1/certs"


@dataclass(frozen=True)
class SigningKey:
    kid: str
    private_pem: bytes
    cert_pem: bytes

    @functools.cached_property
    def signer(self) -> crypt.RSASigner:
        return crypt.RSASigner.from_string(self.private_pem, key_id=self.kid)  # slow (~40 ms): built once

    @classmethod
    def generate(cls, kid: str | None = None) -> SigningKey:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-accounts.google.com")])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .sign(key, hashes.SHA256())
        )
        private_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return cls(kid or uuid.uuid4().hex, private_pem, cert.public_bytes(serialization.Encoding.PEM))


@functools.cache
def shared_key() -> SigningKey:
    """One key for every issuer in the process (RSA key generation takes 50-300 ms)."""
    return SigningKey.generate()


class OidcIssuer:
    """Serves one signing key's cert in Google's v1 format ({kid: PEM}) with Cache-Control max-age."""

    def __init__(self, *, key: SigningKey | None = None, max_age: int = 3600) -> None:
        self.key = key or shared_key()
        self.max_age = max_age
        self.server = LocalHttpServer(self._handle)

    def start(self) -> OidcIssuer:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> OidcIssuer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def certs_url(self) -> str:
        return f"{self.server.base_url}{CERTS_PATH}"

    @property
    def fetch_count(self) -> int:
        return sum(1 for request in self.server.requests if request.path == CERTS_PATH)

    def mint(
        self,
        *,
        audience: str,
        email: str,
        email_verified: bool = True,
        iss: str = "https://accounts.google.com",
        exp_in: int = 3600,
        key: SigningKey | None = None,
        **extra_claims: Any,
    ) -> str:
        """An RS256 ID token like Pub/Sub's; `key` signs instead of ours (a forgery when it is not served)."""
        signing = key or self.key
        now = int(time.time())
        claims = {
            "aud": audience,
            "azp": "113774264463038321964",
            "email": email,
            "email_verified": email_verified,
            "exp": now + exp_in,
            "iat": min(now, now + exp_in - 60),
            "iss": iss,
            "sub": "113774264463038321964",
            **extra_claims,
        }
        return jwt.encode(signing.signer, claims).decode()

    def _handle(self, request: RecordedRequest) -> Reply:
        if request.path != CERTS_PATH:
            return Reply.text("not found", 404)
        body = json.dumps({self.key.kid: self.key.cert_pem.decode()})
        headers = {"Cache-Control": f"public, max-age={self.max_age}, must-revalidate, no-transform"}
        return Reply(status=200, body=body.encode(), headers={"Content-Type": "application/json", **headers})
