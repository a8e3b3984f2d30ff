"""Each redaction rule on its own: the secret goes, the marker of that rule takes its place, the rest stays."""

from __future__ import annotations

import pytest

from bot.render.redact import REDACTED, redact

GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

RULES = [
    ("github personal token", f"git push https://github.com/acme/x using {GITHUB} now", GITHUB, "gh_" + REDACTED),
    ("github oauth token", "cloning with gho_" + "x" * 36 + " done", "gho_" + "x" * 36, "gh_" + REDACTED),
    ("github app token", "ghs_" + "Z9" * 18 + " expired", "ghs_" + "Z9" * 18, "gh_" + REDACTED),
    ("github refresh token", "ghr_" + "Q" * 40, "ghr_" + "Q" * 40, "gh_" + REDACTED),
    ("github user token", "ghu_" + "7" * 30, "ghu_" + "7" * 30, "gh_" + REDACTED),
    ("slack user token", "slack says xoxp-2222222222-3333333333-abcdef123456 failed", "xoxp-2222222222", "xox?-"),
    ("slack bot token", "xoxb-1234567-abcdefgh", "xoxb-1234567", "xox?-" + REDACTED),
    ("slack refresh token", "xoxr-1234567-abcdefgh", "xoxr-1234567", "xox?-" + REDACTED),
    ("slack app token", "xapp-1-A0123-456-abcdef", "xapp-1-A0123", "xapp-" + REDACTED),
    (
        "slack webhook",
        "POST https://hooks.slack.com/services/T000/B000/XXXXXXXX failed",
        "T000/B000/XXXXXXXX",
        "https://hooks.slack.com/services/" + REDACTED,
    ),
    ("openai key", "calling the API with sk-proj-AbCdEfGhIjKlMnOpQrStUvWx rate limited", "AbCdEfGhIjKl", "sk-"),
    ("openai legacy key", "sk-" + "A1" * 24, "A1A1A1A1A1", "sk-" + REDACTED),
    ("hugging face token", "hf_" + "abcdefghij" * 3 + "XYZ", "hf_abcdefghij", "hf_" + REDACTED),
    ("google api key", "AIza" + "S" * 35, "AIza" + "S" * 35, "AIza" + REDACTED),
    ("google oauth token", "got ya29.a0AfH6SMBxyz012 back", "a0AfH6SMBxyz012", "ya29." + REDACTED),
    ("aws key id", "ASIAIOSFODNN7EXAMPLE in use", "ASIAIOSFODNN7EXAMPLE", "AKIA" + REDACTED),
    ("basic auth", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA", "Basic " + REDACTED),
    ("url credentials", "pip from https://user:tok3n@pypi.example/simple", "tok3n", "https://" + REDACTED + "@"),
    ("secret kv", "client_secret: abc123def", "abc123def", "client_secret: " + REDACTED),
    ("quoted kv", "{'access_token': 'q-w-e-r-t-y'}", "q-w-e-r-t-y", REDACTED),
]


@pytest.mark.parametrize(("name", "line", "secret", "marker"), RULES, ids=[r[0] for r in RULES])
def test_each_rule_redacts_its_secret(name: str, line: str, secret: str, marker: str) -> None:
    cleaned = redact(line)
    assert secret not in cleaned
    assert marker in cleaned


def test_the_text_around_a_secret_is_kept() -> None:
    assert redact(f"push with {GITHUB} to origin") == f"push with gh_{REDACTED} to origin"
    assert redact("token xoxp-2222222222-abcdef ok") == f"token xox?-{REDACTED} ok"
    assert redact("key sk-" + "b" * 30 + ".") == f"key sk-{REDACTED}."


@pytest.mark.parametrize(
    "line",
    [
        "ghp_short",  # too short to be a GitHub token
        "sk-learn is installed",  # a package name, not a key
        "hf_hub_download(repo_id='bert')",
        "xoxb-1",
        "risk-averse ask-me task-12345678901234567890",  # "sk-" inside words is not a key
    ],
)
def test_lookalikes_are_not_redacted(line: str) -> None:
    assert redact(line) == line


def test_several_secrets_on_one_line_all_go() -> None:
    line = f"{GITHUB} xoxp-2222222222-abcdef sk-{'c' * 25} hf_{'d' * 34}"
    cleaned = redact(line)
    assert cleaned.count(REDACTED) == 4
    for secret in (GITHUB, "2222222222", "c" * 25, "d" * 34):
        assert secret not in cleaned
