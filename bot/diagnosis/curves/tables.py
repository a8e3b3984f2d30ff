"""Training curves printed as tables with a header row: CSV, tab, pipe and markdown, whitespace columns (Chainer,
skorch, fastai, HF notebooks, pandas, YOLO validation rows), TensorBoard scalar exports (Wall time,Step,Value);
one point per numeric cell under a metric column."""

from __future__ import annotations

import csv
import re

from bot.diagnosis.curves.series import (
    ERROR,
    LOSS,
    METRIC_WORDS,
    SPLIT_WORDS,
    STEP_WORDS,
    TRAIN,
    VAL,
    Curves,
    Point,
    SeriesKey,
    add_point,
    as_number,
    names_split,
    parse_key,
)
from bot.diagnosis.curves.steps import step_before
from bot.intake.log_document import LogDocument

BAR_SUFFIX = re.compile(r"\s*:?\s*\d{1,3}%\|.*$")  # a header line that ends in a progress bar (YOLO validation)
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
_MAX_TABLE_ROWS = 2_000
# a metrics table's gradient-norm column (AlgoPerf's "global_step,grad_norm,loss,..."): no curve of its own (a norm
# is no metric), but read for the blow-up it may show (bot.diagnosis.curves.blowups.gradient_norm_exploded)
_GRAD_NORM = re.compile(r"(?i)^(?:train[_/ ])?grad(?:ient)?[_ ]?norm$")


def _cells(text: str, width: int | None = None) -> list[str] | None:
    stripped = text.strip().strip("|").strip()
    if '"' in stripped and "," in stripped:  # a quoted CSV field may hold commas: "(1, 3, 1)" is one cell
        quoted = [c.strip() for c in next(csv.reader([stripped], skipinitialspace=True), [])]
        if len(quoted) >= 2 and (width is None or len(quoted) in (width, width + 1)):
            return quoted
    for splitter in _CELL_SPLITS:
        cells = [c.strip() for c in splitter.split(stripped)]
        if len(cells) >= 2 and (width is None or len(cells) in (width, width + 1)):
            return cells
    return None


def header_columns(text: str) -> list[str] | None:
    """Column names of a table header, merging 'Training Loss' style two-word names split by one space."""
    if "%|" in text:
        text = BAR_SUFFIX.sub("", text)
    text = text.rstrip()
    if text.endswith("\\") and not text.endswith("\\\\"):
        text = text[:-1]  # pandas ends each but the last block of a frame too wide for the screen with a backslash
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
    if len(cells) < 2 or sum(as_number(c.removesuffix("%")) is not None for c in cells) > 0:  # "61.2%" a value
        return None
    if not any(parse_key(c) for c in cells) and [c.lower() for c in cells] != _TENSORBOARD_HEADER:
        return None
    return cells


def _pipe_cells(text: str) -> list[str]:
    return [c.strip() for c in text.strip().strip("|").split("|")]


def stacked_header(doc: LogDocument, index: int) -> str | None:
    """A header whose column names run over two lines (MATLAB's trainNetwork: "| Mini-batch | Validation |" above
    "| Accuracy | Accuracy |"), `index` its lower line: the names joined cell by cell, when the line above is a pipe
    row of as many cells and neither holds a value."""
    text = doc.lines[index].text
    if text.count("|") < 3 or index < 1:
        return None
    above = doc.lines[index - 1].text
    if above.count("|") != text.count("|") or _SEPARATOR_ROW.match(above):  # a rule above is no line of names
        return None
    top, bottom = _pipe_cells(above), _pipe_cells(text)
    if len(top) != len(bottom) or not any(bottom) or any(as_number(c.rstrip("%")) is not None for c in top + bottom):
        return None
    merged = " | ".join(f"{a} {b}".strip() for a, b in zip(top, bottom, strict=True))
    return merged if header_columns(merged) is not None else None


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


def read_table(curves: Curves, doc: LogDocument, header_index: int, header: str | None = None) -> int:
    """Rows under a header line (or under the last line of a `header` stacked over two); returns the index of the
    last line consumed."""
    header = doc.lines[header_index].text if header is None else header
    columns = header_columns(header)
    if columns is None:
        return header_index
    whitespace = not any(sep in header for sep in "|,\t")
    parsed = [parse_key(c) for c in columns]
    # Beside a column named for training ("train_loss", "Training Loss"), a metric named for no split is measured on
    # validation data (fastai's accuracy / error_rate, the HF Trainer's table); Keras names its training columns bare.
    # So is one in an evaluation table: a column named for validation and no training loss at all (a Hugging Face
    # model card's "Epoch | Step | Validation Loss | Accuracy"; Keras' CSV always has its bare "loss").
    named = [(p, c) for p, c in zip(parsed, columns, strict=True) if p is not None]
    evaluation = any(p.split == VAL and names_split(c) for p, c in named) and not any(
        p.split == TRAIN and p.group == LOSS for p, _ in named
    )
    # A bare loss beside a training loss and a validation loss both named is neither: the loss of each step, the
    # named ones an evaluation's (AlgoPerf's "global_step,grad_norm,loss,train/loss,validation/loss,...").
    step_loss = any(p.split == VAL and p.group == LOSS and names_split(c) for p, c in named)
    if evaluation or any(p.split == TRAIN and names_split(c) for p, c in named):
        parsed = [
            parse_key(f"valid {c}")
            if p is not None and p.split == TRAIN and not names_split(c) and not (step_loss and p.group == LOSS)
            else p
            for p, c in zip(parsed, columns, strict=True)
        ]
    if [c.lower() for c in columns] == _TENSORBOARD_HEADER:
        parsed[2], columns[2] = _tensorboard_key(doc, header_index)
    step_column = next((i for i, c in enumerate(columns) if c.lower().strip("# ") in STEP_WORDS), None)
    norm_column = next((i for i, c in enumerate(columns) if _GRAD_NORM.match(c)), None)
    index = header_index
    rows = 0
    pending: list[tuple[SeriesKey, str, Point]] = []
    row_steps: list[float] = []
    while index + 1 < len(doc.lines) and rows < _MAX_TABLE_ROWS:
        text = doc.lines[index + 1].text
        if _SEPARATOR_ROW.match(text) and text.strip():
            index += 1
            continue
        words = text.split(None, 1)
        if len(words) == 2 and words[0].lower() in _SUMMARY_ROWS and as_number(words[1].split()[0]) is not None:
            index += 1  # pandas describe() / a printed summary: "mean  0.037  3.908" sums the rows up, no step
            continue
        cells = _cells(text, len(columns))
        if cells is None and whitespace and text.strip():
            cells = _aligned_cells(header, columns, text)
        if cells is None:
            break
        row_label = None
        if len(cells) == len(columns) + 1:
            if cells[0].isdigit() and as_number(cells[-1].rstrip("%+*")) is not None:
                row_label, cells = cells[0], cells[1:]  # pandas prints its row index first (CSV: an unnamed column)
            else:  # a row that ends in a progress bar (YOLO: "640: 100%|###| 69/69 [00:19<00:00]") or a time (fastai
                cells = cells[: len(columns)]  # v1: "1 1.513 1.041 0.507 (00:13)" under four names)
        cells = [c.strip("*") if c.startswith("**") else c for c in cells]  # a markdown table's bold value: **0.629**
        numbers = [as_number(c.rstrip("%+*")) for c in cells]
        if step_column is not None and numbers[step_column] is None and "/" in cells[step_column]:
            numbers[step_column] = as_number(cells[step_column].split("/")[0])  # "12/50": epoch 12 of 50
        if sum(n is not None for n in numbers) < max(1, sum(bool(c) for c in cells) // 2):
            break  # (empty cells are columns not logged on this row: HF Trainer's log_history as CSV)
        index += 1
        rows += 1
        step = None if step_column is not None else step_before(doc, header_index + 1)
        if step is None and row_label is not None and row_label.isdigit():
            step = f"row {int(row_label)}"
        if step_column is not None and numbers[step_column] is not None:
            word = STEP_WORDS[columns[step_column].lower().strip("# ")]
            step = f"{word} {numbers[step_column]:g}"
            row_steps.append(numbers[step_column])
        if norm_column is not None and numbers[norm_column] is not None:
            curves.grad_norms.append((index, numbers[norm_column]))
        for column, key, number, cell in zip(columns, parsed, numbers, cells, strict=False):
            if key is not None and number is not None:
                value = number / 100.0 if cell.endswith("%") else number
                pending.append((key, column, Point(index, value, step)))
    # a table printed newest first (BigQuery ML's ML.TRAINING_INFO, a history sorted descending): its curves run
    # from the last row up, in the order the steps were taken
    newest_first = len(row_steps) >= 3 and all(b < a for a, b in zip(row_steps, row_steps[1:], strict=False))
    for key, column, point in reversed(pending) if newest_first else pending:
        add_point(curves, key, column, point)
    return index
