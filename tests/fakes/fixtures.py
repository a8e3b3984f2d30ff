"""pytest fixtures for the local fakes (load with `pytest_plugins = ["tests.fakes.fixtures"]`).

Each fixture starts a fresh server for the test and stops it afterwards (a server starts in about 1 ms).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from standins.google_apis import FakeGoogleApis
from standins.oidc import OidcIssuer
from standins.slack_api import FakeSlackApi


@pytest.fixture
def fake_google() -> Iterator[FakeGoogleApis]:
    with FakeGoogleApis() as server:
        yield server


@pytest.fixture
def fake_slack() -> Iterator[FakeSlackApi]:
    with FakeSlackApi() as server:
        yield server


@pytest.fixture
def oidc_issuer() -> Iterator[OidcIssuer]:
    with OidcIssuer() as issuer:
        yield issuer
