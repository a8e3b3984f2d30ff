"""bot.config reads the environment in one place, and only from the mapping it is given."""

from __future__ import annotations

import pytest

from bot.config import load_settings, load_settings_for_tools
from bot.errors import ConfigError

SECRETS = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "s3cret"}


def test_the_mapping_given_is_the_only_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PUBSUB_VERIFY_TOKEN", "false")  # in the process environment, not in the mapping
    monkeypatch.setenv("TRAINMEDIC_KNOWLEDGE", "/elsewhere")
    with pytest.raises(ConfigError, match="PUBSUB_PUSH_AUDIENCE"):
        load_settings(dict(SECRETS))  # verification stays on: it needs the audience and the push account
    assert load_settings_for_tools({}).TRAINMEDIC_KNOWLEDGE is None


def test_strings_become_their_types_and_a_bad_one_is_named() -> None:
    settings = load_settings({**SECRETS, "PUBSUB_VERIFY_TOKEN": "false", "PORT": "9090", "STUCK_QUEUED_MINUTES": "12"})
    assert settings.PUBSUB_VERIFY_TOKEN is False
    assert settings.PORT == 9090
    assert settings.STUCK_QUEUED_MINUTES == 12.0
    with pytest.raises(ConfigError, match="PUBSUB_VERIFY_TOKEN"):
        load_settings({**SECRETS, "PUBSUB_VERIFY_TOKEN": "maybe"})
    with pytest.raises(ConfigError, match="PORT"):
        load_settings({**SECRETS, "PUBSUB_VERIFY_TOKEN": "0", "PORT": "0"})
    assert load_settings({**SECRETS, "PUBSUB_VERIFY_TOKEN": "0", "UNRELATED": "x"}).PUBSUB_VERIFY_TOKEN is False
