"""Remove secrets from log text before it is shown anywhere (terminal, JSON, Slack)."""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM private keys, whole or cut off by the end of the line (also JSON-escaped "\n" forms).
    (
        re.compile(r"-----BEGIN[A-Z ]*PRIVATE KEY-----.*?(?:-----END[A-Z ]*PRIVATE KEY-----|$)", re.DOTALL),
        "-----BEGIN PRIVATE KEY-----" + REDACTED + "-----END PRIVATE KEY-----",
    ),
    (re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{6,}"), "xox?-" + REDACTED),  # Slack tokens
    (re.compile(r"\bxapp-[A-Za-z0-9-]{6,}"), "xapp-" + REDACTED),
    (re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+"), "https://hooks.slack.com/services/" + REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"), "AIza" + REDACTED),  # Google API keys
    (re.compile(r"\bya29\.[0-9A-Za-z._-]{10,}"), "ya29." + REDACTED),  # Google OAuth access tokens
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "AKIA" + REDACTED),  # AWS access key ids
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), "gh_" + REDACTED),  # GitHub tokens
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}"), "hf_" + REDACTED),  # Hugging Face tokens
    (re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"), "sk-" + REDACTED),  # OpenAI-style keys
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), REDACTED),  # JWTs
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    (re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@"), r"\1" + REDACTED + "@"),  # user:pass@host
    (
        re.compile(
            r"""(?ix)
            (["']?\b(?:password|passwd|pwd|secret|client_secret|token|access_token|refresh_token|auth_token|
                       api[_-]?key|access[_-]?key|secret[_-]?key|private_key_id|private_key|credentials?)
             ["']?\s*[=:]\s*)
            ("[^"]*"|'[^']*'|[^\s,;&})\]>\[]*\[REDACTED\]|[^\s,;&})\]>]+)  # a value ends before a closing bracket
            """
        ),
        r"\1" + REDACTED,
    ),
)


def redact(text: str) -> str:
    """Return `text` with tokens, keys, passwords and credentials replaced by [REDACTED]."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
