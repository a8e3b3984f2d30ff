"""Take off what log collectors put in front of a program's own output.

The same Python traceback reaches us bare, or behind a timestamp (`kubectl logs --timestamps`, Docker, TF's C++
logger, a logging format), a launcher's tag (torchrun's `[rank0]:`, Ray's `(pid=123)`, mpirun's
`[1,0]<stderr>:`, `kubectl logs --prefix`'s `[pod/NAME/CONTAINER]`, a Vertex replica name, the gcloud log
stream's `SEVERITY<tab>TIME<tab>`), or wrapped in terminal colour codes. The knowledge base's patterns, the
traceback reader and the curve reader are written for the program's own words: a pattern anchored at the start of
a line, or a table whose header and rows must line up, misses them once a prefix is in front.

`split_line_prefix` removes those prefixes (several in a row too) and colour codes, and nothing else: a line that
starts with the program's own words is returned unchanged; a Vertex task, torchrun rank or pod a prefix names is
returned beside it, to become the line's replica. Line formats a pattern already reads whole (glog's
`I1102 10:00:00.123 140231 file.py:260]`, whose iteration numbers the curve reader uses) are left alone.
"""

from __future__ import annotations

import re

# ECMA-48 control sequences (colours, cursor moves) and the two-character escapes; terminals draw them, logs keep them
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])")

_SEVERITY = r"(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|ALERT|EMERGENCY)"
_PREFIX = re.compile(
    r"""
    (?:
        # gcloud's log stream: SEVERITY <tab> TIME <tab> (the time follows as its own prefix)
        """
    + _SEVERITY
    + r"""\t(?=\d{4}-\d\d-\d\d)
      | # a date and time: RFC 3339 / ISO 8601 or a logging format's "2026-11-30 10:00:00,123", bracketed or not
        \[?\d{4}-\d\d-\d\d[T\ ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:\ ?(?:Z|UTC|[+-]\d\d:?\d\d))?\]?:?(?=\s)
      | \[(?P<rank>(?:rank|default)\d+)\]:              # torchrun --tee / --role tags
      | \[pod/(?P<pod>[^\]\s/]+)/[^\]\s]+\]              # kubectl logs --prefix
      | \((?:[\w.:-]+\ )?pid=\d+(?:,\ ?ip=[\d.]+)?\)    # Ray worker and actor output
      | (?P<task>workerpool\d+-\d+|(?:master|chief|worker|evaluator|ps)-replica-\d+)(?=\t|:\s)  # Vertex task
    )
    (?:\t+|\ ?[:|]\ ?|\ )?  # one separator: the program's own indentation stays
    | \[\d+,\d+\]<std(?:out|err)>:  # mpirun / horovodrun --tag-output: the line follows the colon directly
    """,
    re.VERBOSE,
)
_MAX_PREFIXES = 4


def split_line_prefix(text: str) -> tuple[str, str | None]:
    """`text` without terminal colour codes and the collector prefixes in front of it, and the replica a prefix
    named (a Vertex task, a torchrun rank, a Kubernetes pod), else None."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    replica = None
    for _ in range(_MAX_PREFIXES):
        found = _PREFIX.match(text)
        if found is None:
            break
        # the outermost name wins: a Vertex task's line that torchrun tagged with a rank is that task's
        replica = replica or found.group("task") or found.group("rank") or found.group("pod")
        text = text[found.end() :]  # a line that was nothing but a prefix ends up blank, as it was written
    return text, replica


def strip_line_prefix(text: str) -> str:
    """`text` without terminal colour codes and without the collector prefixes in front of it."""
    return split_line_prefix(text)[0]
