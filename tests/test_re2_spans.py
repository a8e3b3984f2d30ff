"""The RE2 program behind a pattern (bot.diagnosis.re2_spans) gives the spans google-re2's public finditer gives."""

from __future__ import annotations

import json
from pathlib import Path

import re2

from bot.diagnosis.knowledge import load_knowledge
from bot.diagnosis.re2_spans import match_spans, public_match_spans
from bot.intake.log_document import LogDocument
from bot.intake.log_input import parse_log_text

DEV = Path(__file__).parent / "fixtures" / "corpus_dev.jsonl"


def test_match_spans_agree_with_the_public_finditer_for_every_pattern() -> None:
    texts = [json.loads(line)["text"] for line in DEV.open(encoding="utf-8")]
    doc = LogDocument(parse_log_text("\n".join(texts) + "\nzero-width: ab\n\u00e9t\u00e9 caf\u00e9 \u2603"))
    middle = len(doc.data) // 2
    compared = 0
    for failure_class in load_knowledge():
        for signal in failure_class.signals:
            if signal.compiled is None:
                continue
            for begin, end in ((0, len(doc.data)), (middle, len(doc.data)), (0, middle)):
                fast = [list(spans) for spans in match_spans(signal.compiled, doc.data, begin, end)]
                public = [list(spans) for spans in public_match_spans(signal.compiled, doc.data, begin, end)]
                assert fast == public, (failure_class.id, signal.name, begin, end)
                compared += len(public)
    assert compared > 500  # the dev corpus matches the knowledge base's patterns many times over


def test_match_spans_step_over_adjacent_and_empty_matches_as_finditer_does() -> None:
    data = b"aaa 12 345\nx=1;y=22 ERROR ERRORERROR"
    for pattern in (rb"a", rb"\d+", rb"x*", rb"(?P<k>[a-z])=(?P<v>\d+)|ERROR", rb"(?m)^", rb"\b"):
        compiled = re2.compile(pattern)
        for begin, end in ((0, len(data)), (2, len(data) - 3), (len(data), len(data))):
            fast = [list(spans) for spans in match_spans(compiled, data, begin, end)]
            public = [list(spans) for spans in public_match_spans(compiled, data, begin, end)]
            assert fast == public, (pattern, begin, end)
            assert public or begin == end or pattern == rb"x*"
