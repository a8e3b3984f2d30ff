"""A diagnosis as readable terminal text (`trainmedic diagnose`, the demo). Pure: returns a string.

Log-derived text is printed in full, but control characters (ANSI escape sequences included) are shown as
`\\xNN` so a log line cannot rewrite the terminal.
"""

from __future__ import annotations

import math

from bot.models import Diagnosis
from bot.sanitize import show_unsafe

_BOLD, _DIM, _RED, _YELLOW, _CYAN, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[33m", "\x1b[36m", "\x1b[0m"
_INDENT = "    "


def diagnosis_text(diagnosis: Diagnosis, *, source: str | None = None, color: bool = False) -> str:
    """Render `diagnosis` for a terminal.

    Args:
        diagnosis: the classifier's answer.
        source: where the logs came from (a file name or job id), shown under the title.
        color: add ANSI colours (only when writing to a terminal).

    Returns:
        The text, ending in a newline.
    """

    def paint(text: str, style: str) -> str:
        return f"{style}{text}{_RESET}" if color else text

    out: list[str] = [paint(_clean(diagnosis.title) or "Training job failed", _BOLD)]
    if diagnosis.failure_class == "unknown":
        out.append(f"  class:      {paint('unknown', _YELLOW)} (no known failure pattern matched)")
    else:
        confidence = paint(_percent(diagnosis.confidence), _BOLD)
        out.append(f"  class:      {paint(_clean(diagnosis.failure_class), _CYAN)}  confidence: {confidence}")
    if source:
        out.append(f"  source:     {_clean(source)}")
    if diagnosis.finding:
        out.append(f"  the curve:  {_clean(diagnosis.finding)}")
    if diagnosis.first_failing_replica:
        out.append(f"  first failing replica: {_clean(diagnosis.first_failing_replica)}")
    if diagnosis.cascade:
        out.append("  failed as a consequence:")
        out += [f"{_INDENT}{_clean(entry)}" for entry in diagnosis.cascade]
    if diagnosis.symptom:
        out += ["", _clean(diagnosis.symptom)]

    def section(title: str, lines: list[str]) -> None:
        if lines:
            out.extend(["", paint(title, _BOLD), *lines])

    section("Evidence:", [paint(f"{_INDENT}{line}", _DIM) for line in _split(diagnosis.evidence)])
    section("Check first:", [f"  - {_clean(item)}" for item in diagnosis.first_checks])
    section("What to do:", [f"  {i}. {_clean(item)}" for i, item in enumerate(diagnosis.remediation, 1)])
    section("Avoid:", [f"  - {paint(_clean(item), _RED)}" for item in diagnosis.avoid])
    commands: list[str] = []
    for command in diagnosis.commands:
        commands.append(f"  {_clean(command.title)}:")
        commands += [f"{_INDENT}{line}" for line in _split([command.command])]
    section("Commands:", commands)
    if diagnosis.alternatives:
        shown = [f"{_clean(a.failure_class)} {_percent(a.confidence)}" for a in diagnosis.alternatives]
        out += ["", "Also possible: " + ", ".join(shown)]
    return "\n".join(out) + "\n"


def _clean(text: str) -> str:
    """One line of text with control characters made visible (bot.sanitize, shared with the Slack renderer)."""
    return show_unsafe(" ".join(text.splitlines()))


def _split(texts: list[str]) -> list[str]:
    """Multi-line entries as separate cleaned lines (tabs kept, other control characters made visible)."""
    return [show_unsafe(line) for text in texts for line in text.splitlines()]


def _percent(value: float) -> str:
    if not math.isfinite(value):
        return "?%"
    return f"{round(min(max(value, 0.0), 1.0) * 100)}%"
