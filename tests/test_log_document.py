"""The joined log (bot.intake.log_document): byte offsets of each line whatever its characters, and the chunks the
classifier searches, which cover the log and reach into the next chunk."""

from __future__ import annotations

import pytest

from bot.intake.log_document import LogDocument
from bot.models import LogLine


def _doc(*texts: str) -> LogDocument:
    return LogDocument([LogLine(text=text) for text in texts])


@pytest.mark.parametrize(
    "texts",
    [
        ("plain ascii", "second line", "", "last"),
        ("caf\u00e9 \u2603", "loss 0.5 \u2014 ok", "\u6d4b\u8bd5 done"),
        ("bad \ud800 byte", "after \u00e9", "ascii"),  # a lone surrogate is replaced, never raised
    ],
)
def test_each_line_starts_at_its_byte_offset_and_line_at_finds_it(texts: tuple[str, ...]) -> None:
    doc = _doc(*texts)
    assert doc.data.count(b"\n") == len(texts) - 1
    for index, text in enumerate(texts):
        start = doc.starts[index]
        end = doc.starts[index + 1] - 1 if index + 1 < len(texts) else len(doc.data)
        assert doc.data[start:end] == text.encode("utf-8", "replace")
        assert doc.line_at(start) == index
        if end > start:
            assert doc.line_at(end - 1) == index


def test_chunks_cover_the_log_on_line_boundaries_and_reach_into_the_next() -> None:
    texts = [f"line {n} " + "x" * (n % 37) for n in range(400)]
    doc = _doc(*texts)
    plain = doc.chunks(512)
    assert plain[0][0] == 0 and plain[-1][1] == len(doc.data)
    assert all(a[1] == b[0] for a, b in zip(plain, plain[1:], strict=False))  # no gap, no overlap
    assert all(start in doc.starts for start, _ in plain)
    reaching = doc.chunks(512, overlap_lines=3)
    assert [start for start, _ in reaching] == [start for start, _ in plain]
    for (_, end), (_, plain_end) in zip(reaching[:-1], plain[:-1], strict=True):
        reach = doc.line_at(plain_end) + 3  # three more whole lines, or to the end of the log
        assert end == (doc.starts[reach] if reach < len(doc.starts) else len(doc.data))
    assert reaching[-1][1] == len(doc.data)
