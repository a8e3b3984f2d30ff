"""Secrets found in logs never reach evidence."""

from __future__ import annotations

import pytest

from bot.render.redact import REDACTED, redact

SECRETS = [
    ("slack bot token", "posting with xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "xoxb-123456789012"),
    ("slack app token", "SLACK_APP_TOKEN=xapp-1-A0123-456-abcdef", "xapp-1-A0123"),
    ("google api key", "key AIzaSyD-1234567890abcdefghijklmnopqrstu used", "AIzaSyD-1234567890"),
    ("oauth token", "Authorization: Bearer ya29.a0AfH6SMBx-abcdefghijklmnop", "a0AfH6SMBx"),
    ("bearer", "curl -H 'Authorization: Bearer abc.def.ghijklmnopqrst'", "abc.def.ghijklmnopqrst"),
    ("password kv", "connecting with password=hunter2hunter2 host=db", "hunter2hunter2"),
    ("password json", '{"user": "ml", "password": "s3cr3t-value"}', "s3cr3t-value"),
    ("api_key", "HF api_key: hf_abcdefghijklmnopqrstuvwxyz0123456789", "hf_abcdefghij"),
    ("url credentials", "fetching https://bob:pa55w0rd@example.com/data.tar", "pa55w0rd"),
    ("aws key", "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("jwt", "token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLXZhbHVl", "eyJzdWIiOiIxMjM0"),
    (
        "private key",
        '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC'
        '\\n-----END PRIVATE KEY-----\\n"',
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    ),
    ("key block cut", "-----BEGIN RSA PRIVATE KEY----- MIIEowIBAAKCAQEA7", "MIIEowIBAAKCAQEA7"),
]


@pytest.mark.parametrize(("name", "line", "secret"), SECRETS, ids=[s[0] for s in SECRETS])
def test_secret_is_removed(name: str, line: str, secret: str) -> None:
    cleaned = redact(line)
    assert secret not in cleaned
    assert REDACTED in cleaned


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 12.00 GiB total capacity)",
        "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 5e-05, 'epoch': 0.54}",
        "max_tokens=512 num_tokens: 2048",
        "does not have storage.objects.get access to gs_colab/data/tutorial2.",
    ],
)
def test_ordinary_log_text_is_untouched(line: str) -> None:
    assert redact(line) == line


def test_classifier_evidence_is_redacted() -> None:
    from bot.diagnosis.classifier import classify
    from bot.intake.log_input import text_to_lines

    log = (
        "Using token=ghp_abcdefghijklmnopqrstuvwxyz0123456789AB\n"
        "RuntimeError: CUDA out of memory (key=AIzaSyA1234567890123456789012345678901)"
    )
    diagnosis = classify(text_to_lines(log))
    assert diagnosis.failure_class == "accelerator_oom"
    joined = " ".join(diagnosis.evidence)
    assert "AIzaSyA1234567890" not in joined and "CUDA out of memory" in joined


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # the closing bracket after a secret belongs to the sentence, not to the secret
        ("stopping training (token=s3cr3t-v4lue) now", f"stopping training (token={REDACTED}) now"),
        ("[api_key=abcd1234] <password=hunter2>", f"[api_key={REDACTED}] <password={REDACTED}>"),
        # a token another rule already redacted is one value, not a value and a stray bracket
        (
            "stopping training (token=ghp_abcdefghijklmnopqrstuvwxyz0123456789)",
            f"stopping training (token={REDACTED})",
        ),
    ],
)
def test_redaction_keeps_the_text_around_a_secret(line: str, expected: str) -> None:
    assert redact(line) == expected
