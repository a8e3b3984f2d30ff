"""Training curves read from whatever a job printed: points of (log line, split, metric, value, step).

Read, whatever the framework:
- key/value pairs in any separator style: Keras `loss: 0.69 - val_loss: 0.70`, dict prints
  `{'loss': 0.5, 'eval_loss': 0.6}`, `train_loss=0.5`, `Valid Loss: 0.3`, `validation/main/loss`, fairseq
  `| epoch 003 | loss 9.8 |`, XGBoost `[500] train-logloss:0.1 eval-logloss:0.4`, LightGBM
  `valid_0's binary_logloss: 0.3`, percentages `Acc: 45.2%`;
- tables with a header row (CSV, tab, pipe and markdown, whitespace columns as Chainer, skorch, fastai, HF
  notebooks and pandas print them), one point per numeric cell under a metric column;
- a Keras History saved as JSON, one list per metric and one value a line (bot.diagnosis.curves.history);
- Keras checkpoint / early-stopping messages (`val_acc did not improve from 0.10000`).
Keys are split into words: a split word (train, val, valid, validation, eval, test, dev...) and a metric word
(loss, cost, logloss, error, perplexity, accuracy, auc...) make a series; a key with neither is not a metric.

`read_curves` only looks at lines that mention a metric word (RE2 passes over the joined log) and, in a long log,
at the first and the last of them: the start of a curve and its recent course are what the facts use.
"""

from __future__ import annotations

import re

import re2

from bot.diagnosis.curves.history import read_value_list
from bot.diagnosis.curves.line_pairs import KEY_START, KEY_WORD, NUM, LinePairs, read_line
from bot.diagnosis.curves.runs import keep_last_run
from bot.diagnosis.curves.series import (
    ACC,
    CHINESE_MEASURE_WORDS,
    LOSS,
    TRAIN,
    VAL,
    Curves,
    Point,
    Series,
    add_point,
    as_number,
    names_split,
    parse_key,
)
from bot.diagnosis.curves.steps import step_before
from bot.diagnosis.curves.tables import BAR_SUFFIX, header_columns, read_table, stacked_header
from bot.diagnosis.re2_spans import match_spans
from bot.intake.log_document import LogDocument

_METRIC_WORD = (
    r"(?:loss|acc|cost|err|perplexity|ppl|auc|f1|fscore|mse|mae|nll|improve|entropy|map(?:\d|@|_|\b)|\d avg,|step,value"
    r"|\bmrr\b|\bndcg|\bhr@|mape|mspe|msle|nloglik|deviance|huber"
    r"|\bl[12]\b|(?:train|val|valid\w*|learn|test) ?[:=] ?[\d.]"
    rf"|{CHINESE_MEASURE_WORDS})"
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
_DIGITS = str.maketrans("", "", "0123456789")
_IMPROVE = re.compile(
    rf"{KEY_START}(?P<key>{KEY_WORD}) (?:did not improve(?: from (?P<best>{NUM}))?"
    rf"|improved from (?:{NUM}|inf) to (?P<new>{NUM}))",
    re.IGNORECASE,
)
# Boosting early stopping (XGBoost "Stopping. Best iteration:", LightGBM "Early stopping, best iteration is:") restates
# the best round on the next line: a summary, no new point of the curve.
_BEST_ROUND_FOLLOWS = re.compile(r"(?i)\bbest iteration(?: is)?:\s*$")


def _add_pairs(curves: Curves, doc: LogDocument, index: int, pairs: LinePairs) -> None:
    """Line `index`'s values as points of their series (at the step a line just before names, when it names none)."""
    curves.planned_steps = max(curves.planned_steps, pairs.planned)
    if not pairs.found:
        return
    step = pairs.step if pairs.step is not None else step_before(doc, index)
    if pairs.bar_total is not None:
        curves.bar_totals[index] = pairs.bar_total
    if pairs.position is not None:
        curves.epoch_position[index] = pairs.position
    for parsed, key, value in pairs.found:
        add_point(curves, parsed, key, Point(index, value, step))


def _lines_matching(doc: LogDocument, pattern: re2._Regexp, begin: int, end: int) -> list[int]:
    data = doc.data[begin:end]  # a slice, as the patterns were written for (its end is the text's end)
    return [doc.line_at(begin + spans[0][0]) for spans in match_spans(pattern, data, 0, len(data))]


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


# the learning rate printed beside the loss: "lr: 5.797e-05", "'learning_rate': 2e-05", "lr=0.001", "LR 3.00e-04",
# a scheduler's list of one rate per parameter group ("Learning Rate [1.5e-05]", "lr: [0.001]")
_LEARNING_RATE = re.compile(
    r"""(?i)(?<![\w/])['"]?(?:lr|learning_rate|learning rate)['"]?\s*[:=]?\s*\[?"""
    r"""(?P<value>\d+(?:\.\d+)?(?:e[-+]?\d+)?)\b"""
)


# "ReduceLROnPlateau reducing learning rate to 4e-07.", "reducing learning rate of group 0 to 1.0000e-04."
_LR_REDUCED = re.compile(rb"educing learning rate (?:of group \d+ )?to (\d+(?:\.\d+)?(?:e[-+]?\d+)?)", re.IGNORECASE)


def _one_reading_per_bare_split(curves: Curves) -> None:
    """A bare split name ("val: 2.96") read as that split's loss on the lines where its value sat on the training
    loss's scale and as an accuracy elsewhere (the two curves apart at the start, or drifting apart later) is one
    series, a loss: a value on the loss's own scale says what the name prints."""
    for name in list(curves.series):
        loss = curves.series.get(name)
        if loss is None or loss.group != LOSS or not name.endswith("/loss") or parse_key(loss.key) is not None:
            continue
        score = curves.series.get(name.removesuffix("/loss") + "/accuracy")
        if score is None or score.key != loss.key or not score.points:
            continue
        loss.points = sorted(loss.points + score.points, key=lambda p: p.line)
        del curves.series[score.norm]


def read_curves(doc: LogDocument) -> Curves:
    curves = Curves()
    if not doc.data:
        return curves
    if b"educing learning rate" in doc.data:
        for match in _LR_REDUCED.finditer(doc.data):
            value = as_number(match.group(1).decode())
            if value is not None:
                curves.lr_reductions.append((doc.line_at(match.start()), value))
    candidates = _candidate_lines(doc)
    # a line's text -> whether it is a table's header, and what it says (a log repeats its lines)
    headers: dict[str, bool] = {}
    lines_read: dict[str, LinePairs] = {}
    consumed = -1
    for index in candidates:
        if index <= consumed:
            continue
        text = doc.lines[index].text
        if index and "teration" in (before := doc.lines[index - 1].text) and _BEST_ROUND_FOLLOWS.search(before):
            curves.boosting_stopped = index - 1
            continue
        if len(text) > 2_000 and "\b" in text:  # Keras progress bars redrawn with backspaces: the last one counts
            text = text.rstrip("\b")
            text = text[text.rfind("\b") + 1 :]
        if len(text) > 2_000:
            continue
        improve = _IMPROVE.search(text) if "mprove" in text else None
        if improve:
            parsed = parse_key(improve.group("key"))
            value = as_number(improve.group("best") or improve.group("new") or "nan")  # old Keras names no value
            if parsed is not None and value is not None:
                curves.improve_messages.append((index, improve.group("key"), value, improve.group("new") is not None))
            continue
        if text.rstrip().endswith("[") and (end := read_value_list(curves, doc, index)) > index:
            consumed = end  # a History saved as JSON: one list per metric, one value a line
            continue
        header = headers.get(text)
        if header is None:
            head = BAR_SUFFIX.sub("", text) if "%|" in text else text
            digits = len(head) - len(head.translate(_DIGITS))  # a header names columns ("mAP50-95" has a few digits)
            header = headers[text] = (digits <= 4 or digits <= 0.1 * len(head)) and header_columns(text) is not None
        stacked = stacked_header(doc, index) if text.count("|") >= 3 else None  # names over two lines
        if header or stacked is not None:
            end = read_table(curves, doc, index, stacked)
            if end > index:
                consumed = end
                continue
        pairs = lines_read.get(text)
        if pairs is None:
            pairs = lines_read[text] = read_line(text)
        _add_pairs(curves, doc, index, pairs)
        named = "lr" in text or "Lr" in text or "LR" in text or "earning" in text
        rate = _LEARNING_RATE.search(text) if named else None
        if rate is not None and (value := as_number(rate.group("value"))) is not None:
            curves.learning_rates.append((index, value))
    if curves.bar_totals:
        _split_passes(curves)
    keep_last_run(curves)
    _one_reading_per_bare_split(curves)
    for series in curves.series.values():
        if series.norm == "train/value" and len(series.points) >= 2:  # an unnamed TensorBoard scalar
            values = series.values
            if values[-1] > values[0] and 0.0 <= min(values) and max(values) <= 1.0:
                series.group = ACC  # rising and within 0..1: a score, not a loss
        if series.group == ACC and series.points and max(p.value for p in series.points) > 1.0:
            if max(p.value for p in series.points) <= 100.0:  # accuracy printed in percent without a % sign
                series.points = [Point(p.line, p.value / 100.0, p.step) for p in series.points]
    return curves
