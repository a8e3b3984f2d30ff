"""Training curves read from whatever a job printed: points of (log line, split, metric, value, step).

Read, whatever the framework:
- key/value pairs in any separator style: Keras `loss: 0.69 - val_loss: 0.70`, dict prints
  `{'loss': 0.5, 'eval_loss': 0.6}`, `train_loss=0.5`, `Valid Loss: 0.3`, `validation/main/loss`, fairseq
  `| epoch 003 | loss 9.8 |`, XGBoost `[500] train-logloss:0.1 eval-logloss:0.4`, LightGBM
  `valid_0's binary_logloss: 0.3`, percentages `Acc: 45.2%`;
- tables with a header row (CSV, tab, pipe and markdown, whitespace columns as Chainer, skorch, fastai, HF
  notebooks and pandas print them), one point per numeric cell under a metric column;
- Keras checkpoint / early-stopping messages (`val_acc did not improve from 0.10000`).
Keys are split into words: a split word (train, val, valid, validation, eval, test, dev...) and a metric word
(loss, cost, logloss, error, perplexity, accuracy, auc...) make a series; a key with neither is not a metric.

`read_curves` only looks at lines that mention a metric word (RE2 passes over the joined log) and, in a long log,
at the first and the last of them: the start of a curve and its recent course are what the facts use.
"""

from __future__ import annotations

import math
import re

import re2

from bot.diagnosis.curve_series import (
    ACC,
    METRIC_WORDS,
    SPLIT_WORDS,
    STEP_WORDS,
    TRAIN,
    Curves,
    Point,
    Series,
    SeriesKey,
    names_split,
    parse_key,
    split_only_key,
)
from bot.intake.log_document import LogDocument

_METRIC_WORD = r"(?:loss|acc|cost|err|perplexity|ppl|auc|f1|mse|mae|nll|improve|(?:train|valid\w*|learn|test): ?[\d.])"
_SPLIT_WORD = r"(?:val|eval|test|dev)"
_METRIC_LINE = re2.compile(rf"(?i)[^\n]*{_METRIC_WORD}[^\n]*")
_VAL_METRIC_LINE = re2.compile(
    rf"(?i)[^\n]*{_SPLIT_WORD}[^\n]*{_METRIC_WORD}[^\n]*|[^\n]*{_METRIC_WORD}[^\n]*{_SPLIT_WORD}[^\n]*"
)
# What is read of a long log: the metric lines of its first and last bytes (the start of a curve and its recent
# course), and every validation line (once per epoch or evaluation, so few) up to a cap at each end.
_HEAD_BYTES, _TAIL_BYTES = 4_096, 16_384
_HEAD_LINES, _TAIL_LINES = 12, 48
_VAL_HEAD_LINES, _VAL_TAIL_LINES = 12, 60
_MAX_TABLE_ROWS = 2_000
_DIGITS = str.maketrans("", "", "0123456789")
_NUM = r"nan|[-+]?inf(?:inity)?|[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"
_KEY_WORD = r"[A-Za-z][A-Za-z0-9_\-/.()']*"
_PAIR = re.compile(
    rf"""(?P<key>{_KEY_WORD}(?:\s{_KEY_WORD})?)['"]?\s*(?:[:=]|\s)\s*['"]?(?:tensor\()?(?P<value>{_NUM})(?![\w.]|,\d{{3}})(?P<pct>\s?%)?""",
    re.IGNORECASE,
)
_AFTER_STEP = re.compile(  # "Cost after iteration 100: 0.6931", "loss at step 200 = 1.2"
    rf"(?P<key>{_KEY_WORD}) (?:after|at|@) (?P<word>epoch|iteration|iter|step) ?(?P<step>\d+)"
    rf"\s*[:=]\s*(?P<value>{_NUM})",
    re.IGNORECASE,
)
_LINE_SPLIT = re.compile(  # "| valid on 'valid' subset | loss 9.7", "Test set: Average loss: 0.1", "[eval] loss=..."
    r"\b(valid(?:ation)?|eval(?:uation)?|test|dev)\b(?:\s+(?:on|set|subset|results?)\b|\s*[:\]|])", re.IGNORECASE
)
_NAMED_LOSS = re.compile(r"\bloss\b\s*[:=]", re.IGNORECASE)  # a line that names its loss: bare splits are scores
_BARE_STEP = re.compile(r"^\W*(epoch|step|iteration|iter)\W{0,3}(\d+)\b", re.IGNORECASE)
_BRACKET_STEP = re.compile(r"^\s*\[(\d+)\]")  # XGBoost / LightGBM round
_EPOCH_BATCH = re.compile(r"\[\s*(\d+),\s*\d+\s*\]")  # "[1,    20] loss: 2.29" (epoch, batch)
_KEY_EPOCH_BATCH = re.compile(  # "Loss [32, 100](epoch, minibatch):  2.609"
    rf"(?P<key>{_KEY_WORD})\s*\[\s*(?P<step>\d+),\s*\d+\s*\](?:\([^)\n]{{0,40}}\))?\s*[:=]\s*(?P<value>{_NUM})",
    re.IGNORECASE,
)
_FRACTION_STEP = re.compile(r"\b(epoch|step|iter(?:ation)?)\s*[:#=]?\s*\[?(\d+)\s*/\s*\d+", re.IGNORECASE)
_IMPROVE = re.compile(
    rf"(?P<key>{_KEY_WORD}) (?:did not improve(?: from (?P<best>{_NUM}))?"
    rf"|improved from (?:{_NUM}|inf) to (?P<new>{_NUM}))",
    re.IGNORECASE,
)
_CELL_SPLITS = (
    re.compile(r"\s*\|\s*"),
    re.compile(r"\s*,\s*"),
    re.compile(r"\t+"),
    re.compile(r"\s{2,}"),
    re.compile(r"\s+"),
)
_SEPARATOR_ROW = re.compile(r"^[\s|:+=\-]*$")


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _add(curves: Curves, parsed: SeriesKey, key: str, point: Point) -> None:
    series = curves.series.get(parsed.norm)
    if series is None:
        series = curves.series[parsed.norm] = Series(
            parsed.split, parsed.group, key, parsed.norm, parsed.chance or parsed.acc_chance, parsed.plain
        )
    series.points.append(point)


def _step_of(text: str) -> str | None:
    """'Epoch: 01 | Epoch Time: 0m 57s', 'epoch 3', 'Epoch 2/10', '[500]' -> the step it names, else None."""
    bracket = _BRACKET_STEP.match(text)
    if bracket:
        return f"round {int(bracket.group(1))}"
    fraction = _FRACTION_STEP.search(text)
    if fraction:
        return f"{STEP_WORDS.get(fraction.group(1).lower(), 'iteration')} {int(fraction.group(2))}"
    bare = _BARE_STEP.match(text)
    if bare:
        return f"{STEP_WORDS[bare.group(1).lower()]} {int(bare.group(2))}"
    epoch_batch = _EPOCH_BATCH.search(text[:60])
    if epoch_batch:
        return f"epoch {int(epoch_batch.group(1))}"
    return None


def _step_before(doc: LogDocument, index: int) -> str | None:
    """The step a metric line belongs to when a line just before it names it ('epoch 3' then 'loss: 0.4')."""
    for back in range(index - 1, max(-1, index - 4), -1):
        text = doc.lines[back].text
        if len(text) <= 200:
            step = _step_of(text)
            if step is not None:
                return step
    return None


def _read_pairs(curves: Curves, doc: LogDocument, index: int, text: str) -> None:
    after = _AFTER_STEP.search(text)
    if after:
        parsed, value = parse_key(after.group("key")), _number(after.group("value"))
        if parsed is not None and value is not None:
            step = f"{STEP_WORDS[after.group('word').lower()]} {int(after.group('step'))}"
            _add(curves, parsed, after.group("key"), Point(index, value, step))
        return
    keyed = _KEY_EPOCH_BATCH.search(text)
    if keyed:
        parsed, value = parse_key(keyed.group("key")), _number(keyed.group("value"))
        if parsed is not None and value is not None:
            _add(curves, parsed, keyed.group("key"), Point(index, value, f"epoch {int(keyed.group('step'))}"))
            return
    step: str | None = None
    bracket = _BRACKET_STEP.match(text)
    fraction = None if bracket else _FRACTION_STEP.search(text)
    epoch_batch = None if bracket or fraction else _EPOCH_BATCH.match(text.lstrip())
    if bracket:
        step = f"round {int(bracket.group(1))}"
    elif fraction:
        step = f"{STEP_WORDS.get(fraction.group(1).lower(), 'iteration')} {int(fraction.group(2))}"
    elif epoch_batch:
        step = f"epoch {int(epoch_batch.group(1))}"
    line_split = _LINE_SPLIT.search(text)
    found: list[tuple[SeriesKey, str, float]] = []
    for match in _PAIR.finditer(text):
        key = match.group("key").strip("'\"")
        value = _number(match.group("value"))
        if value is None:
            continue
        word = STEP_WORDS.get(key.lower())
        if word is not None:
            if step is None and math.isfinite(value) and value >= 0:
                step = f"{word} {value:g}"
            continue
        if match.group("pct") and text[match.end() : match.end() + 1] == "|":
            continue  # a progress bar ("Validation: 100%|####|"), not a metric
        parsed = parse_key(key)
        if parsed is None and " " in key:  # "Epoch loss" / "| epoch 3 | loss": the last word may be the key
            key = key.split()[-1]
            parsed = parse_key(key)
        if parsed is None:
            percent = bool(match.group("pct")) or bool(_NAMED_LOSS.search(text))
            parsed = split_only_key(key, percent=percent)
        if parsed is None:
            continue
        if line_split is not None and parsed.split == TRAIN and not names_split(key):
            parsed = parse_key(f"{line_split.group(1)} {key}") or parsed
        found.append((parsed, key, value / 100.0 if match.group("pct") else value))
    if found and step is None:
        step = _step_before(doc, index)
    for parsed, key, value in found:
        _add(curves, parsed, key, Point(index, value, step))


def _cells(text: str, width: int | None = None) -> list[str] | None:
    stripped = text.strip().strip("|").strip()
    for splitter in _CELL_SPLITS:
        cells = [c.strip() for c in splitter.split(stripped)]
        if len(cells) >= 2 and (width is None or len(cells) in (width, width + 1)):
            return cells
    return None


def _header_columns(text: str) -> list[str] | None:
    """Column names of a table header, merging 'Training Loss' style two-word names split by one space."""
    for splitter in _CELL_SPLITS[:-1]:
        cells = [c.strip() for c in splitter.split(text.strip().strip("|").strip()) if c.strip()]
        if len(cells) >= 2:
            break
    else:
        words = text.split()
        cells = []
        for word in words:
            if cells and cells[-1].lower() in SPLIT_WORDS and word.lower() in METRIC_WORDS:
                cells[-1] = f"{cells[-1]} {word}"
            else:
                cells.append(word)
    if len(cells) < 2 or sum(_number(c) is not None for c in cells) > 0:
        return None
    if not any(parse_key(c) for c in cells):
        return None
    return cells


def _read_table(curves: Curves, doc: LogDocument, header_index: int) -> int:
    """Rows under a header line; returns the index of the last line consumed."""
    columns = _header_columns(doc.lines[header_index].text)
    if columns is None:
        return header_index
    parsed = [parse_key(c) for c in columns]
    step_column = next((i for i, c in enumerate(columns) if c.lower().strip("# ") in STEP_WORDS), None)
    index = header_index
    rows = 0
    while index + 1 < len(doc.lines) and rows < _MAX_TABLE_ROWS:
        text = doc.lines[index + 1].text
        if _SEPARATOR_ROW.match(text) and text.strip():
            index += 1
            continue
        cells = _cells(text, len(columns))
        if cells is None:
            break
        row_label = None
        if len(cells) == len(columns) + 1:
            if cells[0].isdigit():  # pandas prints its row index first (CSV: an unnamed first column)
                row_label, cells = cells[0], cells[1:]
            else:  # YOLO rows end in a progress bar ("640: 100%|###| 69/69 [00:19<00:00, 3.47it/s]")
                cells = cells[: len(columns)]
        numbers = [_number(c.rstrip("%+*")) for c in cells]
        if step_column is not None and numbers[step_column] is None and "/" in cells[step_column]:
            numbers[step_column] = _number(cells[step_column].split("/")[0])  # "12/50": epoch 12 of 50
        if sum(n is not None for n in numbers) < max(1, len(cells) // 2):
            break
        index += 1
        rows += 1
        step = None if step_column is not None else _step_before(doc, header_index + 1)
        if step is None and row_label is not None and row_label.isdigit():
            step = f"row {int(row_label)}"
        if step_column is not None and numbers[step_column] is not None:
            word = STEP_WORDS[columns[step_column].lower().strip("# ")]
            step = f"{word} {numbers[step_column]:g}"
        for column, key, number, cell in zip(columns, parsed, numbers, cells, strict=False):
            if key is not None and number is not None:
                value = number / 100.0 if cell.endswith("%") else number
                _add(curves, key, column, Point(index, value, step))
    return index


def _lines_matching(doc: LogDocument, pattern: re2._Regexp, begin: int, end: int) -> list[int]:
    return [doc.line_at(begin + m.start()) for m in pattern.finditer(doc.data[begin:end])]


def _candidate_lines(doc: LogDocument) -> list[int]:
    size = len(doc.data)
    if size <= _HEAD_BYTES + _TAIL_BYTES:
        metric = _lines_matching(doc, _METRIC_LINE, 0, size)
    else:
        tail_start = doc.starts[doc.line_at(size - _TAIL_BYTES)]
        metric = _lines_matching(doc, _METRIC_LINE, 0, _HEAD_BYTES) + _lines_matching(
            doc, _METRIC_LINE, tail_start, size
        )
    if len(metric) > _HEAD_LINES + _TAIL_LINES:
        metric = metric[:_HEAD_LINES] + metric[-_TAIL_LINES:]
    validation = _lines_matching(doc, _VAL_METRIC_LINE, 0, size)
    if len(validation) > _VAL_HEAD_LINES + _VAL_TAIL_LINES:
        validation = validation[:_VAL_HEAD_LINES] + validation[-_VAL_TAIL_LINES:]
    return sorted(set(metric) | set(validation))


def read_curves(doc: LogDocument) -> Curves:
    curves = Curves()
    if not doc.data:
        return curves
    candidates = _candidate_lines(doc)
    consumed = -1
    for index in candidates:
        if index <= consumed:
            continue
        text = doc.lines[index].text
        if len(text) > 2_000:
            continue
        improve = _IMPROVE.search(text) if "mprove" in text else None
        if improve:
            parsed = parse_key(improve.group("key"))
            value = _number(improve.group("best") or improve.group("new") or "nan")  # old Keras names no value
            if parsed is not None and value is not None:
                curves.improve_messages.append((index, improve.group("key"), value, improve.group("new") is not None))
            continue
        digits = len(text) - len(text.translate(_DIGITS))  # a header names columns ("mAP50-95" has a few digits)
        if (digits <= 4 or digits <= 0.1 * len(text)) and _header_columns(text) is not None:
            end = _read_table(curves, doc, index)
            if end > index:
                consumed = end
                continue
        _read_pairs(curves, doc, index, text)
    for series in curves.series.values():
        if series.group == ACC and series.points and max(p.value for p in series.points) > 1.0:
            if max(p.value for p in series.points) <= 100.0:  # accuracy printed in percent without a % sign
                series.points = [Point(p.line, p.value / 100.0, p.step) for p in series.points]
    return curves
