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
    ERROR,
    METRIC_WORDS,
    SPLIT_WORDS,
    STEP_WORDS,
    TRAIN,
    VAL,
    Curves,
    Point,
    Series,
    SeriesKey,
    names_split,
    parse_key,
    split_only_key,
)
from bot.intake.log_document import LogDocument

_METRIC_WORD = (
    r"(?:loss|acc|cost|err|perplexity|ppl|auc|f1|mse|mae|nll|improve|entropy|map(?:\d|@|_|\b)|\d avg,|step,value"
    r"|\bl[12]\b|(?:train|valid\w*|learn|test): ?[\d.])"
)
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
_KEY_WORD = r"[A-Za-z][A-Za-z0-9_\-/.()'@]*"
_PAIR = re.compile(  # "[loss]: 2.3" too; "Accuracy: 1135/10000" is a count of the samples right
    rf"""(?P<key>{_KEY_WORD}(?: {_KEY_WORD})?)['"\]]?\s*(?:[:=]|\s)\s*['"]?(?:tensor\()?(?P<value>{_NUM})"""
    rf"""(?![\w.]|,\d{{3}})(?:/(?P<den>\d+)(?![\w.]))?(?P<pct>\s?%)?""",
    re.IGNORECASE,
)
_DARKNET = re.compile(  # Darknet: "1200: 2.31, 2.35 avg loss, 0.001 rate" / "40245, 4.021: 6.91, 6.91 avg, 0.08 rate"
    rf"^\s*(?P<step>\d+)(?:,\s*[\d.]+)?:\s*(?:{_NUM}),\s*(?P<value>{_NUM})\s+avg\b"
)
# A progress bar's batch count: "| 782/782 [00:40<00:00", "(3708/3708)", Keras "64/64 [=====]"
_BAR_TOTAL = re.compile(r"(?:^\s*|\|\s*|\()\d+/(\d+)\s*[\[)]")
_BAR_SUFFIX = re.compile(r"\s*:?\s*\d{1,3}%\|.*$")  # a header line that ends in a progress bar (YOLO validation)
_AFTER_STEP = re.compile(  # "Cost after iteration 100: 0.6931", "loss at step 200 = 1.2"
    rf"(?P<key>{_KEY_WORD}) (?:after|at|@) (?P<word>epoch|iteration|iter|step) ?(?P<step>\d+)"
    rf"\s*[:=]\s*(?P<value>{_NUM})",
    re.IGNORECASE,
)
_LINE_SPLIT = re.compile(  # "| valid on 'valid' subset | loss 9.7", "Test set: Average loss: 0.1", "[eval] loss=..."
    r"\b(train(?:ing)?|val(?:id(?:ation)?)?|eval(?:uation)?|test|dev)\b"  # Caffe "Test net output", mmdet "(val)"
    r"(?:\s+(?:on|set|subset|results?|phase|net)\b|\s*[:\]|)])",
    re.IGNORECASE,
)
_EVAL_DICT = re.compile(r"Saving dict for global step \d+:")  # TF Estimator's evaluation results
_EPOCH_BRACKET = re.compile(  # "Epoch[3]", "Epoch [1][50/1000]", "Epoch(val) [1][500]"
    r"\b(epoch|iter(?:ation)?)(?:\(\w+\))?\s*:?\s*\[\s*(\d+)\s*\]", re.IGNORECASE
)
# "Accuracy of the network on the 10000 test images: 54 %" (the PyTorch tutorial), "loss on the dev set = 0.4"
_METRIC_OF = re.compile(
    r"\b(?P<metric>accuracy|loss|error)\b (?:of|on)\b[^:=\n]{0,60}?"
    rf"\b(?P<split>train(?:ing)?|val\w*|test|dev|eval\w*)\b[^:=\n]{{0,30}}[:=]\s*(?P<value>{_NUM})(?P<pct>\s?%)?",
    re.IGNORECASE,
)
_PERCENT_KEY = re.compile(r"(?:acc|prec)@\d", re.IGNORECASE)  # ImageNet top-k accuracy is printed in percent
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
_SUMMARY_ROWS = frozenset({"mean", "std", "min", "max", "count", "avg", "average", "median", "sum", "total"})
_TENSORBOARD_HEADER = ["wall time", "step", "value"]
_TAG = re.compile(r"[A-Za-z][\w\-/.]*")


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
    elif series.points and series.points[-1].line == point.line:
        return  # one value per line and series (Lightning prints both `loss=` and `train_loss=`)
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
    bracket_epoch = _EPOCH_BRACKET.search(text)
    if bracket_epoch:
        return f"{STEP_WORDS.get(bracket_epoch.group(1).lower(), 'iteration')} {int(bracket_epoch.group(2))}"
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
    darknet = _DARKNET.match(text)
    if darknet:
        parsed, value = parse_key("avg loss"), _number(darknet.group("value"))
        if parsed is not None and value is not None:
            _add(curves, parsed, "avg loss", Point(index, value, f"iteration {int(darknet.group('step'))}"))
        return
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
    if "train_runtime" in text:
        return  # HF Trainer's closing summary: its train_loss is the mean over the run, not a point on the curve
    step: str | None = None
    bracket = _BRACKET_STEP.match(text)
    fraction = None if bracket else _FRACTION_STEP.search(text)
    epoch_batch = None if bracket or fraction else _EPOCH_BATCH.match(text.lstrip())
    bracket_epoch = None if bracket or fraction or epoch_batch else _EPOCH_BRACKET.search(text)
    if bracket:
        step = f"round {int(bracket.group(1))}"
    elif fraction:
        step = f"{STEP_WORDS.get(fraction.group(1).lower(), 'iteration')} {int(fraction.group(2))}"
    elif epoch_batch:
        step = f"epoch {int(epoch_batch.group(1))}"
    elif bracket_epoch:
        step = f"{STEP_WORDS.get(bracket_epoch.group(1).lower(), 'iteration')} {int(bracket_epoch.group(2))}"
    sections = [(m.start(), m.group(1)) for m in _LINE_SPLIT.finditer(text)]
    if "Saving dict" in text and _EVAL_DICT.search(text):
        sections.insert(0, (0, "eval"))
    found: list[tuple[SeriesKey, str, float]] = []
    for match in _PAIR.finditer(text):
        key = match.group("key").strip("'\"")
        value = _number(match.group("value"))
        if value is None:
            continue
        word = STEP_WORDS.get(key.lower()) or (STEP_WORDS.get(key.split()[-1].lower()) if " " in key else None)
        if word is not None:  # "epoch 3", "Train Epoch: 3"
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
        section = next((word for start, word in reversed(sections) if start < match.start()), None)
        other_split = section is not None and SPLIT_WORDS[section.lower()] != TRAIN
        if other_split and parsed.split == TRAIN and not names_split(key):
            in_section = parse_key(f"{section} {key}")  # "Train: loss 0.2 | Val: loss 0.9"
            if in_section is not None:
                parsed, key = in_section, f"{section} {key}"
        if match.group("den"):
            if parsed.group != ACC or int(match.group("den")) == 0:
                continue
            value = value / int(match.group("den"))  # "Accuracy: 1135/10000 (11%)"
        percent = match.group("pct") or (parsed.group == ACC and "@" in key and _PERCENT_KEY.search(key))
        found.append((parsed, key, value / 100.0 if percent else value))
    if not found and (" of " in text or " on " in text):
        metric_of = _METRIC_OF.search(text)
        parsed = parse_key(f"{metric_of.group('split')} {metric_of.group('metric')}") if metric_of else None
        value = _number(metric_of.group("value")) if metric_of else None
        if parsed is not None and value is not None:
            key = f"{metric_of.group('split')} {metric_of.group('metric')}"
            found.append((parsed, key, value / 100.0 if metric_of.group("pct") else value))
    if found and step is None:
        step = _step_before(doc, index)
    if found:
        bar = _BAR_TOTAL.search(text)
        if bar:
            curves.bar_totals[index] = int(bar.group(1))
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
    if "%|" in text:
        text = _BAR_SUFFIX.sub("", text)
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
    cells = [c.strip("*=~") for c in cells]  # "*****train_loss,...,valid_acc*****"
    cells = [c[:-1] if c.endswith(")") and c.count(")") > c.count("(") else c for c in cells]  # "mAP50-95)"
    if len(cells) < 2 or sum(_number(c) is not None for c in cells) > 0:
        return None
    if not any(parse_key(c) for c in cells) and [c.lower() for c in cells] != _TENSORBOARD_HEADER:
        return None
    return cells


def _tensorboard_key(doc: LogDocument, header_index: int) -> tuple[SeriesKey, str]:
    """A TensorBoard scalar export (Wall time,Step,Value) is named by its file: 'run-val-tag-epoch_loss.csv'."""
    for back in range(header_index - 1, max(-1, header_index - 3), -1):
        for token in _TAG.findall(doc.lines[back].text[:300]):
            run, _, tag = token.rpartition("tag-")
            tag = tag.removesuffix(".csv").removesuffix(".json")
            parsed = parse_key(tag)
            if parsed is None:
                continue
            split = next((w for w in re.split(r"[\W_]+", run) if w.lower() in SPLIT_WORDS), None)
            if split is not None and not names_split(tag):
                tag = f"{split} {tag}"
                parsed = parse_key(tag) or parsed
            return parsed, tag
    # unnamed: a falling curve read as a loss-like value (with no chance level), a rising one as a score
    return SeriesKey(TRAIN, ERROR, "train/value", False, True, False), "Value"


def _aligned_cells(header: str, columns: list[str], text: str) -> list[str] | None:
    """A whitespace table row with empty cells (skorch leaves its `cp` column blank when a value is no new best):
    each value goes to the column whose name it sits under."""
    spans, start = [], 0
    for column in columns:
        at = header.find(column, start)
        if at < 0:
            return None
        spans.append((at, at + len(column)))
        start = at + len(column)
    cells = [""] * len(columns)
    for token in re.finditer(r"\S+", text):
        a, b = token.span()
        overlap = [min(b, end) - max(a, begin) for begin, end in spans]
        best = max(range(len(spans)), key=lambda i: (overlap[i], -abs((a + b) / 2 - sum(spans[i]) / 2)))
        if cells[best]:
            return None  # two values under one name: not this table's row
        cells[best] = token.group()
    return cells if sum(bool(c) for c in cells) >= 2 else None


def _read_table(curves: Curves, doc: LogDocument, header_index: int) -> int:
    """Rows under a header line; returns the index of the last line consumed."""
    header = doc.lines[header_index].text
    columns = _header_columns(header)
    if columns is None:
        return header_index
    whitespace = not any(sep in header for sep in "|,\t")
    parsed = [parse_key(c) for c in columns]
    # Beside a column named for training ("train_loss", "Training Loss"), a metric named for no split is measured on
    # validation data (fastai's accuracy / error_rate, the HF Trainer's table); Keras names its training columns bare.
    if any(p is not None and p.split == TRAIN and names_split(c) for p, c in zip(parsed, columns, strict=True)):
        parsed = [
            parse_key(f"valid {c}") if p is not None and p.split == TRAIN and not names_split(c) else p
            for p, c in zip(parsed, columns, strict=True)
        ]
    if [c.lower() for c in columns] == _TENSORBOARD_HEADER:
        parsed[2], columns[2] = _tensorboard_key(doc, header_index)
    step_column = next((i for i, c in enumerate(columns) if c.lower().strip("# ") in STEP_WORDS), None)
    index = header_index
    rows = 0
    while index + 1 < len(doc.lines) and rows < _MAX_TABLE_ROWS:
        text = doc.lines[index + 1].text
        if _SEPARATOR_ROW.match(text) and text.strip():
            index += 1
            continue
        words = text.split(None, 1)
        if len(words) == 2 and words[0].lower() in _SUMMARY_ROWS and _number(words[1].split()[0]) is not None:
            index += 1  # pandas describe() / a printed summary: "mean  0.037  3.908" sums the rows up, no step
            continue
        cells = _cells(text, len(columns))
        if cells is None and whitespace and text.strip():
            cells = _aligned_cells(header, columns, text)
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
        if sum(n is not None for n in numbers) < max(1, sum(bool(c) for c in cells) // 2):
            break  # (empty cells are columns not logged on this row: HF Trainer's log_history as CSV)
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


def _split_passes(curves: Curves) -> None:
    """A training loop and a validation loop that print the same keys in their progress bars ("782/782 [...,
    loss=0.51]" then "157/157 [..., loss=0.78]") interleave two curves under one name: the bar with fewer batches
    is the validation pass."""
    for norm, series in list(curves.series.items()):
        if series.split != TRAIN or len(series.points) < 4 or names_split(series.key):
            continue
        totals = [curves.bar_totals.get(p.line) for p in series.points]
        if None in totals or len(set(totals)) != 2:
            continue
        small = min(totals)
        changes = sum(a != b for a, b in zip(totals, totals[1:], strict=False))
        val_norm = f"{VAL}/{norm.partition('/')[2]}"
        if changes < 3 or totals.count(small) < 2 or val_norm in curves.series:
            continue
        val = Series(VAL, series.group, f"validation {series.key}", val_norm, series.chance, series.plain)
        val.points = [p for p, t in zip(series.points, totals, strict=True) if t == small]
        series.points = [p for p, t in zip(series.points, totals, strict=True) if t != small]
        curves.series[val_norm] = val


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
        if len(text) > 2_000 and "\b" in text:  # Keras progress bars redrawn with backspaces: the last one counts
            text = text.rstrip("\b")
            text = text[text.rfind("\b") + 1 :]
        if len(text) > 2_000:
            continue
        improve = _IMPROVE.search(text) if "mprove" in text else None
        if improve:
            parsed = parse_key(improve.group("key"))
            value = _number(improve.group("best") or improve.group("new") or "nan")  # old Keras names no value
            if parsed is not None and value is not None:
                curves.improve_messages.append((index, improve.group("key"), value, improve.group("new") is not None))
            continue
        head = _BAR_SUFFIX.sub("", text) if "%|" in text else text
        digits = len(head) - len(head.translate(_DIGITS))  # a header names columns ("mAP50-95" has a few digits)
        if (digits <= 4 or digits <= 0.1 * len(head)) and _header_columns(text) is not None:
            end = _read_table(curves, doc, index)
            if end > index:
                consumed = end
                continue
        _read_pairs(curves, doc, index, text)
    if curves.bar_totals:
        _split_passes(curves)
    for series in curves.series.values():
        if series.norm == "train/value" and len(series.points) >= 2:  # an unnamed TensorBoard scalar
            values = series.values
            if values[-1] > values[0] and 0.0 <= min(values) and max(values) <= 1.0:
                series.group = ACC  # rising and within 0..1: a score, not a loss
        if series.group == ACC and series.points and max(p.value for p in series.points) > 1.0:
            if max(p.value for p in series.points) <= 100.0:  # accuracy printed in percent without a % sign
                series.points = [Point(p.line, p.value / 100.0, p.step) for p in series.points]
    return curves
