import pytest

from bot.render.mrkdwn import (
    MIN_CODE_BLOCK,
    break_fences,
    code_block,
    escape,
    fit_list,
    inline_code,
    one_line,
    safe_text,
    truncate,
)


def test_escape_replaces_only_the_three_control_characters():
    assert escape("<!channel> & <@U1> <http://x|y>") == "&lt;!channel&gt; &amp; &lt;@U1&gt; &lt;http://x|y&gt;"
    untouched = "\"quotes\" 'single' *bold* _it_ ~s~ `code` é 😀 \n\t"
    assert escape(untouched) == untouched


def test_escape_is_not_idempotent_on_purpose():
    # An already-escaped string is text like any other: its & is escaped again.
    assert escape("&lt;") == "&amp;lt;"


def test_truncate_keeps_short_text_and_marks_cuts():
    assert truncate("hello", 5) == "hello"
    assert truncate("hello world", 6) == "hello…"
    assert len(truncate("x" * 100, 10)) == 10
    assert truncate("anything", 0) == ""


@pytest.mark.parametrize("limit", range(1, 14))
def test_truncate_never_splits_an_entity(limit):
    text = escape("ab<c&d>efgh")  # ab&lt;c&amp;d&gt;efgh
    out = truncate(text, limit)
    assert len(out) <= limit
    body = out.removesuffix("…")
    assert text.startswith(body)
    amp = body.rfind("&")
    if amp != -1:
        assert body[amp:].startswith(("&amp;", "&lt;", "&gt;"))


def test_one_line_collapses_whitespace():
    assert one_line("a\n b\t\tc  \r\n") == "a b c"


def test_inline_code_cannot_be_broken_out_of():
    out = inline_code("x` <!here>\nnext", 40)
    assert out.startswith("`") and out.endswith("`")
    assert out.count("`") == 2
    assert "<" not in out and "\n" not in out
    assert len(inline_code("y" * 500, 40)) == 40


def test_code_block_fits_whole_lines():
    assert code_block(["a", "b"], 100) == "```\na\nb\n```"


def test_code_block_of_nothing_is_empty():
    assert code_block([], 100) == ""


def test_code_block_rejects_a_limit_too_small_to_say_anything():
    with pytest.raises(ValueError):
        code_block(["a"], MIN_CODE_BLOCK - 1)


def test_code_block_escapes_and_neutralises_fences():
    out = code_block(["<!channel> & <@U123>", "before ``` after", "````` five"], 500)
    assert "<" not in out and "& " not in out
    assert "&lt;!channel&gt; &amp; &lt;@U123&gt;" in out
    assert out.count("```") == 2  # only our own fences
    assert out.startswith("```\n") and out.endswith("\n```")


def test_code_block_counts_lines_left_out():
    lines = [f"line {i:02d} " + "x" * 20 for i in range(50)]
    out = code_block(lines, 300)
    assert len(out) <= 300
    body = out.removeprefix("```\n").removesuffix("\n```").split("\n")
    shown = [line for line in body if line.startswith("line ")]
    assert body[-1] == f"… ({50 - len(shown)} more lines)"
    assert shown[0] == lines[0]


def test_code_block_cuts_a_single_huge_line():
    out = code_block(["y" * 10_000], 200)
    assert len(out) <= 200
    assert out.startswith("```\nyyy") and "…" in out
    assert "more line" not in out  # nothing was left out entirely


def test_code_block_cuts_the_last_line_that_does_not_fit_and_counts_in_the_singular():
    out = code_block(["a" * 10, "b" * 200, "c"], 64)
    body = out.removeprefix("```\n").removesuffix("\n```").split("\n")
    assert body == ["a" * 10, "b" * 27 + "…", "… (1 more line)"]
    assert len(out) <= 64


@pytest.mark.parametrize("limit", [MIN_CODE_BLOCK, 65, 80, 99, 150, 333, 1000, 2999])
def test_code_block_never_exceeds_its_limit(limit):
    cases = [
        ["short"],
        ["x" * 5000] * 10,
        ["<&>" * 700, "a"],  # escaping triples the length
        ["`" * 300],  # fence-breaking adds characters
        [f"{i}" for i in range(5000)],
        ["&" * 61, "tail"],
    ]
    for lines in cases:
        out = code_block(lines, limit)
        assert len(out) <= limit, (limit, lines[:1])
        assert out.startswith("```\n") and out.endswith("\n```")
        assert out.count("```") == 2
        inner = out[4:-4]
        assert "<" not in inner and ">" not in inner


def test_code_block_shows_everything_when_it_fits_exactly():
    lines = ["a" * 55, "b"]
    exact = "```\n" + "a" * 55 + "\nb\n```"
    assert code_block(lines, len(exact)) == exact


def test_safe_text_escapes_breaks_fences_and_flattens():
    out = safe_text("a <!here>\n```b```", 100)
    assert out == "a &lt;!here&gt; `\u200b`\u200b`b`\u200b`\u200b`"
    assert safe_text("line1\nline2", 100, flatten=False) == "line1\nline2"
    assert len(safe_text("<" * 1000, 50)) <= 50


def test_break_fences_leaves_shorter_runs_alone():
    assert break_fences("`a` ``b``") == "`a` ``b``"
    assert "```" not in break_fences("`" * 10)


def test_fit_list_shows_everything_that_fits():
    assert fit_list("*H*", ["a", "b <x>"], 100, numbered=True) == "*H*\n1. a\n2. b &lt;x&gt;"
    assert fit_list("*H*", ["a"], 100) == "*H*\n• a"
    assert fit_list("*H*", [], 100) == ""


def test_fit_list_counts_what_it_leaves_out():
    items = [f"item {i} " + "x" * 50 for i in range(100)]
    out = fit_list("*Do*", items, 300, numbered=True)
    assert len(out) <= 300
    lines = out.split("\n")
    shown = len(lines) - 2
    assert lines[0] == "*Do*" and lines[1].startswith("1. item 0 ")
    assert lines[-1] == f"_…and {100 - shown} more_"


@pytest.mark.parametrize("limit", [0, 10, 30, 41, 64, 100, 999, 3000])
def test_fit_list_never_exceeds_its_limit(limit):
    for items in (["y" * 5000] * 3, ["&" * 2000] * 50, ["z"] * 10_000):
        assert len(fit_list("*Heading*", items, limit, numbered=True)) <= limit
