"""Where a pattern signal matches: its lines, within the chunks of the log where the classifier's RE2 set found it
(bot.diagnosis.classifier), with the details its named groups capture."""

from __future__ import annotations

from bisect import bisect_right

import re2

from bot.diagnosis.class_scores import Hit
from bot.diagnosis.knowledge_schema import Signal
from bot.diagnosis.re2_spans import match_spans
from bot.diagnosis.traceback_facts import PYTHON_FRAME
from bot.diagnosis.words.word_evidence import tells_of_failure
from bot.intake.log_document import LogDocument

MAX_LINES_PER_SIGNAL = 500  # enough for evidence, counts and cascades; a 100k-line log stays linear and fast


def locate(doc: LogDocument, signal: Signal, spans: list[tuple[int, int]], chatter: dict[str, bool]) -> Hit | None:
    """The lines of `spans` where `signal` matches. A log repeats lines (one error from every replica, a warning
    every step): what a line's text says (`unless`, chatter) is read once per text, in `chatter` across signals."""
    found: list[int] = []
    details: dict[str, str] = dict(signal.sets)
    unless = signal.compiled_unless
    excluded: dict[str, bool] = {}  # a line's text -> whether `unless` matches it
    groups = list(signal.compiled.groupindex.items()) if signal.detail_names else []
    data, starts, texts = doc.data, doc.starts, doc.texts
    last = -1
    for begin, end in spans:
        for group_spans in match_spans(signal.compiled, data, begin, end):
            start = group_spans[0][0]
            index = bisect_right(starts, start) - 1
            if index == last:
                continue
            text = texts[index]
            if unless is not None:
                if text not in excluded:
                    excluded[text] = unless.search(text) is not None
                if excluded[text]:
                    continue
            if signal.hint:
                if text not in chatter:
                    chatter[text] = _chatter(text)
                if chatter[text]:
                    continue
            if not signal.in_quoted_source and index > 0 and quoted_source(text, texts[index - 1]):
                continue
            last = index
            found.append(index)
            for name, group in groups:
                first, after = group_spans[group]
                if after > first and name not in details:
                    details[name] = data[first:after].decode("utf-8", "replace")
            if len(found) >= MAX_LINES_PER_SIGNAL:
                break
        if len(found) >= MAX_LINES_PER_SIGNAL:
            break
    if len(found) < signal.min_count:
        return None
    return Hit(signal, found, details)


# A running job's INFO/DEBUG chatter: a level marker (Python logging, glog's I0423, NCCL's "NCCL INFO", bracketed
# [INFO], a Kubernetes event of type Normal in `kubectl describe`'s table) on a line with no error word. The words a
# hint looks for (`reading ... tfrecord`, `NCCL INFO Bootstrap`, `Added key: store_based_barrier_key`, `Started
# container`) are what a healthy job prints there; a failure's words come on other lines (a Warning event's).
_LEVEL_CHATTER = re2.compile(
    r"(?:^|[\s\[|:])(?:INFO|DEBUG|TRACE)(?:[\s\]|:]|$)|^\s*[ID]\d{4} \d\d:\d\d:\d\d|^\s*Normal\s{2,}[A-Z]\w+\s{2,}"
)


# IPython's (Jupyter's) traceback quotes each frame's source lines numbered, the failing one behind an arrow:
# "    119                'daemonic processes are not allowed to have children'", "---> 42     for batch in loader:"
_NUMBERED_SOURCE = re2.compile(r"^(?:\s+|-+>\s*)\d+\s{2,}\S")


def quoted_source(text: str, previous: str) -> bool:
    """Whether a line is the source code a traceback quotes under a frame: words there are the program's code
    (`return container(name_or_buffer)` in torch.save), not what the run printed."""
    if text[:1].isspace() and PYTHON_FRAME.search(previous) is not None:
        return True
    return _NUMBERED_SOURCE.search(text) is not None


def _chatter(text: str) -> bool:
    """A healthy INFO/DEBUG line: hint words on it are a running job's chatter, not a failure's description."""
    return _LEVEL_CHATTER.search(text) is not None and not tells_of_failure(text)
