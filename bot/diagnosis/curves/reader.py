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

import math
import re

import re2

from bot.diagnosis.curves.history import read_value_list
from bot.diagnosis.curves.runs import keep_last_run
from bot.diagnosis.curves.series import (
    ACC,
    SPLIT_WORDS,
    STEP_WORDS,
    TRAIN,
    VAL,
    Curves,
    Point,
    Series,
    SeriesKey,
    add_point,
    as_number,
    names_split,
    parse_key,
    split_only_key,
)
from bot.diagnosis.curves.steps import BRACKET_STEP, EPOCH_BATCH, EPOCH_BRACKET, FRACTION_STEP, step_before
from bot.diagnosis.curves.tables import BAR_SUFFIX, header_columns, read_table
from bot.diagnosis.re2_spans import match_spans
from bot.intake.log_document import LogDocument

_METRIC_WORD = (
    r"(?:loss|acc|cost|err|perplexity|ppl|auc|f1|fscore|mse|mae|nll|improve|entropy|map(?:\d|@|_|\b)|\d avg,|step,value"
    r"|\bmrr\b|\bndcg|\bhr@|mape|mspe|msle|nloglik|deviance|huber"
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
_DIGITS = str.maketrans("", "", "0123456789")
_NAME_WORDS = re.compile(r"[^a-z]+")
_NUM = r"nan|[-+]?inf(?:inity)?|[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"
_KEY_WORD = r"[A-Za-z][A-Za-z0-9_\-/.()'@]*"
# A key starts at a letter no letter precedes: a key from a letter inside a word ends where the key from that
# word's earlier letter ends, and what follows a key (a separator, a space, a bracket) is no key character, so one
# fails wherever the other does; Python's regex engine would try, and fail, each of them in turn (quadratic in a
# long dotted name such as torch.distributed.elastic.multiprocessing.errors). No match is changed by this.
_KEY_START = r"(?<![A-Za-z])"
_PAIR = re.compile(  # "[loss]: 2.3" too; "Accuracy: 1135/10000" is a count of the samples right
    rf"""{_KEY_START}(?P<key>{_KEY_WORD}(?: {_KEY_WORD})?)['"\]]?\s*(?:[:=]|\s)\s*['"]?(?:tensor\()?(?P<value>{_NUM})"""
    rf"""(?![\w.]|,\d{{3}}|\s?%[-\w])(?:/(?P<den>\d+)(?![\w.]))?(?P<pct>\s?%)?""",  # "50%-fire-rate" is a name
    re.IGNORECASE,
)
_DARKNET = re.compile(  # Darknet: "1200: 2.31, 2.35 avg loss, 0.001 rate" / "40245, 4.021: 6.91, 6.91 avg, 0.08 rate"
    rf"^\s*(?P<step>\d+)(?:,\s*[\d.]+)?:\s*(?:{_NUM}),\s*(?P<value>{_NUM})\s+avg\b"
)
# A progress bar's batch count: "| 782/782 [00:40<00:00", "(3708/3708)", Keras "64/64 [=====]"
_BAR_TOTAL = re.compile(r"(?:^\s*|\|\s*|\()\d+/(\d+)\s*[\[)]")
_AFTER_STEP = re.compile(  # "Cost after iteration 100: 0.6931", "loss at step 200 = 1.2"
    rf"{_KEY_START}(?P<key>{_KEY_WORD}) (?:after|at|@) (?P<word>epoch|iteration|iter|step) ?(?P<step>\d+)"
    rf"\s*[:=]\s*(?P<value>{_NUM})",
    re.IGNORECASE,
)
_LINE_SPLIT = re.compile(  # "| valid on 'valid' subset | loss 9.7", "Test set: Average loss: 0.1", "[eval] loss=..."
    r"\b(train(?:ing)?|val(?:id(?:ation)?)?|eval(?:uation)?|test|dev)\b"  # Caffe "Test net output", mmdet "(val)"
    # "Val. Epoch: 3/100." (not "test.py"); "Validation - loss=2.98"; "Test iter: 15500, acc:0.40"
    r"(?:\s+(?:on|set|subset|results?|phase|net|iter(?:ation)?|step|epoch)\b|\s*[:\]|)]|\.(?=\s)|\s+-\s)",
    re.IGNORECASE,
)
# a split word opening a pipe-separated part of the line: "| Train Loss: 2.01 Acc: 0.22 | Val Loss: 2.29 Acc: 0.10 |"
_PIPE_SPLIT = re.compile(r"(?:^|\|)\s*(train(?:ing)?|val(?:id(?:ation)?)?|eval(?:uation)?|test|dev)\b", re.IGNORECASE)
_TIME_UNIT = re.compile(r"\s?(?:sec(?:onds?)?|ms|s)\b")  # after a value: the value was a time
_EVAL_DICT = re.compile(r"Saving dict for global step \d+:")  # TF Estimator's evaluation results
# "Accuracy of the network on the 10000 test images: 54 %" (the PyTorch tutorial), "loss on the dev set = 0.4"
_METRIC_OF = re.compile(
    r"\b(?P<metric>accuracy|loss|error)\b (?:of|on)\b[^:=\n]{0,60}?"
    rf"\b(?P<split>train(?:ing)?|val\w*|test|dev|eval\w*)\b[^:=\n]{{0,30}}[:=]\s*(?P<value>{_NUM})(?P<pct>\s?%)?",
    re.IGNORECASE,
)
_PERCENT_KEY = re.compile(r"(?:acc|prec)@\d", re.IGNORECASE)  # ImageNet top-k accuracy is printed in percent
_NAMED_LOSS = re.compile(r"\bloss\b\s*[:=]", re.IGNORECASE)  # a line that names its loss: bare splits are scores
_AFTER_STEP_WORDS = re.compile(r" (?:after|at|@) (?:epoch|iter|step)", re.IGNORECASE)  # what _AFTER_STEP needs
_KEY_EPOCH_BATCH = re.compile(  # "Loss [32, 100](epoch, minibatch):  2.609"
    rf"{_KEY_START}(?P<key>{_KEY_WORD})\s*\[\s*(?P<step>\d+),\s*\d+\s*\](?:\([^)\n]{{0,40}}\))?\s*[:=]\s*(?P<value>{_NUM})",
    re.IGNORECASE,
)
# Trax's training loop: "Step    100: train CrossEntropyLoss |  1.97824812", "Step    100: eval  Accuracy |  0.41"
_STEP_SPLIT_BAR = re.compile(
    rf"^\s*Step\s+(?P<step>\d+): (?P<split>train|eval|valid\w*|test)\s+(?P<metric>{_KEY_WORD})"
    rf"\s+\|\s+(?P<value>{_NUM})\s*$",
    re.IGNORECASE,
)
_IMPROVE = re.compile(
    rf"{_KEY_START}(?P<key>{_KEY_WORD}) (?:did not improve(?: from (?P<best>{_NUM}))?"
    rf"|improved from (?:{_NUM}|inf) to (?P<new>{_NUM}))",
    re.IGNORECASE,
)


def _read_pairs(curves: Curves, doc: LogDocument, index: int, text: str) -> None:
    darknet = _DARKNET.match(text)
    if darknet:
        parsed, value = parse_key("avg loss"), as_number(darknet.group("value"))
        if parsed is not None and value is not None:
            add_point(curves, parsed, "avg loss", Point(index, value, f"iteration {int(darknet.group('step'))}"))
        return
    bar = _STEP_SPLIT_BAR.match(text)
    if bar:
        key = f"{bar.group('split')} {bar.group('metric')}"
        parsed, value = parse_key(key), as_number(bar.group("value"))
        if parsed is not None and value is not None:
            add_point(curves, parsed, key, Point(index, value, f"step {int(bar.group('step'))}"))
        return
    after = _AFTER_STEP.search(text) if _AFTER_STEP_WORDS.search(text) else None
    if after:
        parsed, value = parse_key(after.group("key")), as_number(after.group("value"))
        if parsed is not None and value is not None:
            step = f"{STEP_WORDS[after.group('word').lower()]} {int(after.group('step'))}"
            add_point(curves, parsed, after.group("key"), Point(index, value, step))
        return
    keyed = _KEY_EPOCH_BATCH.search(text) if "[" in text else None
    if keyed:
        parsed, value = parse_key(keyed.group("key")), as_number(keyed.group("value"))
        if parsed is not None and value is not None:
            add_point(curves, parsed, keyed.group("key"), Point(index, value, f"epoch {int(keyed.group('step'))}"))
            return
    if "train_runtime" in text:
        return  # HF Trainer's closing summary: its train_loss is the mean over the run, not a point on the curve
    step: str | None = None
    bracket = BRACKET_STEP.match(text)
    # each pattern only where the character it needs is ("/" of a count, "[" of a bracket)
    fraction = None if bracket or "/" not in text else FRACTION_STEP.search(text)
    epoch_batch = None if bracket or fraction else EPOCH_BATCH.match(text.lstrip())
    bracket_epoch = None if bracket or fraction or epoch_batch or "[" not in text else EPOCH_BRACKET.search(text)
    if bracket:
        step = f"round {int(bracket.group(1))}"
    elif fraction:
        step = f"{STEP_WORDS.get(fraction.group(1).lower(), 'iteration')} {int(fraction.group(2))}"
        if not fraction.group(1).lower().startswith("epoch"):
            curves.planned_steps = max(curves.planned_steps, int(fraction.group(3)))
    elif epoch_batch:
        step = f"epoch {int(epoch_batch.group(1))}"
    elif bracket_epoch:
        step = f"{STEP_WORDS.get(bracket_epoch.group(1).lower(), 'iteration')} {int(bracket_epoch.group(2))}"
    sections: list[tuple[int, str]] | None = None  # where a split's section begins: read at the first pair only
    found: list[tuple[SeriesKey, str, float]] = []
    for match in _PAIR.finditer(text):
        key = match.group("key").strip("'\"")
        value = as_number(match.group("value"))
        if value is None:
            continue
        word = STEP_WORDS.get(key.lower()) or (STEP_WORDS.get(key.split()[-1].lower()) if " " in key else None)
        if word is not None:  # "epoch 3", "Train Epoch: 3"
            if step is None and math.isfinite(value) and value >= 0:
                step = f"{word} {value:g}"
            continue
        if match.group("pct") and text[match.end() : match.end() + 1] == "|":
            continue  # a progress bar ("Validation: 100%|####|"), not a metric
        if _TIME_UNIT.match(text, match.end()):
            continue  # a duration ("batch_cost: 0.13 sec", Paddle's reader_cost): a timing, not a metric
        parsed = parse_key(key)
        if parsed is None and " " in key:  # "Epoch loss" / "| epoch 3 | loss": the last word may be the key
            # ... keeping a split the long name states (LightGBM names an eval set by its file: "data/val_1.csv's auc")
            split = next((w for w in _NAME_WORDS.split(key.lower()) if w in SPLIT_WORDS and w != "main"), None)
            last = key.split()[-1]
            key = last if split is None or names_split(last) else f"{split} {last}"
            parsed = parse_key(key)
        if parsed is None:
            percent = bool(match.group("pct")) or bool(_NAMED_LOSS.search(text))
            # a bare split name before a count is the loop's progress ("train: 100/937 loss: 1.61", "train: 937
            # loss: 1.76, time: 14.9s"): batches done, not a score
            if match.group("den") or (percent and not match.group("pct") and value > 100):
                continue
            parsed = split_only_key(key, percent=percent)
        if parsed is None:
            continue
        if sections is None:
            sections = _sections(text)
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
        value = as_number(metric_of.group("value")) if metric_of else None
        if parsed is not None and value is not None:
            key = f"{metric_of.group('split')} {metric_of.group('metric')}"
            found.append((parsed, key, value / 100.0 if metric_of.group("pct") else value))
    if found and step is None:
        step = step_before(doc, index)
    # A line naming its training loss outright ("train_loss = 0.32") says which value that is; a bare "loss" beside
    # it is another (an evaluation's, DeepICF's "loss = 0.25 ... train_loss = 0.32"; Lightning's running twin)
    named = {parsed.norm for parsed, key, _ in found if names_split(key)}
    found = [item for item in found if names_split(item[1]) or item[0].norm not in named]
    if found:
        bar = _BAR_TOTAL.search(text)
        if bar:
            curves.bar_totals[index] = int(bar.group(1))
        position = _EPOCH_POSITION.search(text)
        if position and int(position.group("of")) > 0:
            done = int(position.group("batch")) / int(position.group("of"))
            curves.epoch_position[index] = (int(position.group("epoch")), done)
    for parsed, key, value in found:
        add_point(curves, parsed, key, Point(index, value, step))


def _sections(text: str) -> list[tuple[int, str]]:
    """Where each split's part of a line begins ("Train: loss 0.2 | Val: loss 0.9"), and its split word."""
    sections = [(m.start(), m.group(1)) for m in _LINE_SPLIT.finditer(text)]
    if "|" in text:
        sections = sorted({*sections, *((m.start(1), m.group(1)) for m in _PIPE_SPLIT.finditer(text))})
    if "Saving dict" in text and _EVAL_DICT.search(text):
        sections.insert(0, (0, "eval"))
    return sections


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


# "Epoch: [0][14/5005]" (the ImageNet example), "Epoch [2][400/2503]" (mmcv): the epoch and the batch within it
_EPOCH_POSITION = re.compile(
    r"(?i)\bepoch\s*:?\s*\[\s*(?P<epoch>\d+)\s*\]\s*\[\s*(?P<batch>\d+)\s*/\s*(?P<of>\d+)\s*\]"
)
# the learning rate printed beside the loss: "lr: 5.797e-05", "'learning_rate': 2e-05", "lr=0.001", "LR 3.00e-04"
_LEARNING_RATE = re.compile(
    r"""(?i)(?<![\w/])['"]?(?:lr|learning_rate|learning rate)['"]?\s*[:=]?\s*(?P<value>\d+(?:\.\d+)?(?:e[-+]?\d+)?)\b"""
)


# "ReduceLROnPlateau reducing learning rate to 4e-07.", "reducing learning rate of group 0 to 1.0000e-04."
_LR_REDUCED = re.compile(rb"educing learning rate (?:of group \d+ )?to (\d+(?:\.\d+)?(?:e[-+]?\d+)?)", re.IGNORECASE)


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
            value = as_number(improve.group("best") or improve.group("new") or "nan")  # old Keras names no value
            if parsed is not None and value is not None:
                curves.improve_messages.append((index, improve.group("key"), value, improve.group("new") is not None))
            continue
        if text.rstrip().endswith("[") and (end := read_value_list(curves, doc, index)) > index:
            consumed = end  # a History saved as JSON: one list per metric, one value a line
            continue
        head = BAR_SUFFIX.sub("", text) if "%|" in text else text
        digits = len(head) - len(head.translate(_DIGITS))  # a header names columns ("mAP50-95" has a few digits)
        if (digits <= 4 or digits <= 0.1 * len(head)) and header_columns(text) is not None:
            end = read_table(curves, doc, index)
            if end > index:
                consumed = end
                continue
        _read_pairs(curves, doc, index, text)
        named = "lr" in text or "Lr" in text or "LR" in text or "earning" in text
        rate = _LEARNING_RATE.search(text) if named else None
        if rate is not None and (value := as_number(rate.group("value"))) is not None:
            curves.learning_rates.append((index, value))
    if curves.bar_totals:
        _split_passes(curves)
    keep_last_run(curves)
    for series in curves.series.values():
        if series.norm == "train/value" and len(series.points) >= 2:  # an unnamed TensorBoard scalar
            values = series.values
            if values[-1] > values[0] and 0.0 <= min(values) and max(values) <= 1.0:
                series.group = ACC  # rising and within 0..1: a score, not a loss
        if series.group == ACC and series.points and max(p.value for p in series.points) > 1.0:
            if max(p.value for p in series.points) <= 100.0:  # accuracy printed in percent without a % sign
                series.points = [Point(p.line, p.value / 100.0, p.step) for p in series.points]
    return curves
