"""One log line's metric values: the key/value pairs it prints (`loss: 0.69 - val_loss: 0.70`, `{'loss': 0.5}`,
`train_loss=0.5`, fairseq `| epoch 003 | loss 9.8 |`, XGBoost `[500] train-logloss:0.1`, `Accuracy: 1135/10000`,
`Cost after iteration 100: 0.69`, Darknet and Trax lines), each as a series key and a value, and the step the line
names. What a line says depends on its text alone: a log that repeats a line (the same progress line from every
replica, one evaluation printed again) is read once per text (bot.diagnosis.curves.reader)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from bot.diagnosis.curves.series import (
    ACC,
    METRIC_WORDS,
    SPLIT_WORDS,
    STEP_WORDS,
    TRAIN,
    SeriesKey,
    as_number,
    english_names,
    names_split,
    parse_key,
    split_only_key,
)
from bot.diagnosis.curves.steps import BRACKET_STEP, EPOCH_BATCH, EPOCH_BRACKET, FRACTION_STEP


@dataclass(frozen=True)
class LinePairs:
    found: tuple[tuple[SeriesKey, str, float], ...]  # (series key, the key as printed, value) in line order
    step: str | None  # the step the line names ("epoch 3"); None: a line before it may name it
    planned: int = 0  # the run's length in steps, when a "step 3/100" count says it
    bar_total: int | None = None  # batches in the progress bar the line ends with
    position: tuple[int, float] | None = None  # epoch, and the share of it done ("Epoch: [0][14/5005]")


NOTHING = LinePairs((), None)

_NAME_WORDS = re.compile(r"[^a-z]+")
NUM = r"nan|[-+]?inf(?:inity)?|[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"
KEY_WORD = r"[A-Za-z][A-Za-z0-9_\-/.()'@]*"
# A key starts at a letter no letter precedes: a key from a letter inside a word ends where the key from that
# word's earlier letter ends, and what follows a key (a separator, a space, a bracket) is no key character, so one
# fails wherever the other does; Python's regex engine would try, and fail, each of them in turn (quadratic in a
# long dotted name such as torch.distributed.elastic.multiprocessing.errors). No match is changed by this.
KEY_START = r"(?<![A-Za-z])"
# "[loss]: 2.3" too, "Train Loss - 1.2971" (a dash with a space after it) and "training loss is 0.59"; "Accuracy:
# 1135/10000" is a count of the samples right. Two dots or more end a value: the PyTorch course loops many notebooks
# copy print "Epoch 1/8.. Train loss: 0.464.. Test loss: 4.610.." and "Step: 10... Loss: 3.1993... Val Loss: 3.1480";
# so does a sentence's full stop before the next key ("Loss: 0.479. Acc: 0.766. Test loss: 0.716"); one dot and a
# digit is a version or an address, and a full stop that ends the line is left unread as it always was
_PAIR = re.compile(
    rf"""{KEY_START}(?P<key>{KEY_WORD}(?: {KEY_WORD})?)['"\]]?\s*(?:[:=]|-(?=\s)|\s+(?:is|was)\s|\s)\s*['"]?"""
    rf"""(?:tensor\()?"""
    rf"""(?P<value>{NUM})"""
    # ("50%-fire-rate" is a name)
    rf"""(?![\w]|\.(?!\.|\s+[A-Za-z])|,\d{{3}}|\s?%[-\w])(?:/(?P<den>\d+)(?![\w.]))?(?P<pct>\s?%)?""",
    re.IGNORECASE,
)
_DARKNET = re.compile(  # Darknet: "1200: 2.31, 2.35 avg loss, 0.001 rate" / "40245, 4.021: 6.91, 6.91 avg, 0.08 rate"
    rf"^\s*(?P<step>\d+)(?:,\s*[\d.]+)?:\s*(?:{NUM}),\s*(?P<value>{NUM})\s+avg\b"
)
# A progress bar's batch count: "| 782/782 [00:40<00:00", "(3708/3708)", Keras "64/64 [=====]"
_BAR_TOTAL = re.compile(r"(?:^\s*|\|\s*|\()\d+/(\d+)\s*[\[)]")
_AFTER_STEP = re.compile(  # "Cost after iteration 100: 0.6931", "loss at step 200 = 1.2"
    rf"{KEY_START}(?P<key>{KEY_WORD}) (?:after|at|@) (?P<word>epoch|iteration|iter|step) ?(?P<step>\d+)"
    rf"\s*[:=]\s*(?P<value>{NUM})",
    re.IGNORECASE,
)
_SPLIT_WORD = r"(train(?:ing)?|val(?:id(?:ation)?)?|eval(?:uation)?|test|dev)"  # a split's name, as group 1
_LINE_SPLIT = re.compile(  # "| valid on 'valid' subset | loss 9.7", "Test set: Average loss: 0.1", "[eval] loss=..."
    rf"\b{_SPLIT_WORD}\b"  # Caffe "Test net output", mmdet "(val)"
    # "Val. Epoch: 3/100." (not "test.py"); "Validation - loss=2.98"; "Test iter: 15500, acc:0.40"
    # "TRAINING   acc = 16.500 (33/200)   loss = 2.283" (i2dl's solver): the word, a wide gap, then a metric's value
    r"(?:\s+(?:on|set|subset|results?|phase|net|iter(?:ation)?|step|epoch)\b|\s*[:\]|)]|\.(?=\s)|\s+-\s"
    r"|\s{2,}(?=[A-Za-z][\w ]{0,30}?\s*[:=]\s*[-+\d.]))",
    re.IGNORECASE,
)
# a split word opening a pipe-separated part of the line: "| Train Loss: 2.01 Acc: 0.22 | Val Loss: 2.29 Acc: 0.10 |"
_PIPE_SPLIT = re.compile(rf"(?:^|\|)\s*{_SPLIT_WORD}\b", re.IGNORECASE)
# a split word opening the line (after a clock time, if any), then the metrics' names: "Eval mean loss: 0.61",
# "02:46:35    Eval norm l2 loss: 1.0062, norm total loss: 1.0090" - the pair's key holds two words at most, so the
# split word before a longer name would be lost
_OPENING_SPLIT = re.compile(
    rf"^\s*(?:[\[(]?\d{{1,2}}:\d\d:\d\d(?:[.,]\d+)?[\])]?\s+)?{_SPLIT_WORD}\s+(?=[A-Za-z])",
    re.IGNORECASE,
)
_TIME_UNIT = re.compile(r"\s?(?:sec(?:onds?)?|ms|s)\b")  # after a value: the value was a time
_EVAL_DICT = re.compile(r"Saving dict for global step \d+:")  # TF Estimator's evaluation results
# "Accuracy of the network on the 10000 test images: 54 %" (the PyTorch tutorial), "loss on the dev set = 0.4"
_METRIC_OF = re.compile(
    r"\b(?P<metric>accuracy|loss|error)\b (?:of|on)\b[^:=\n]{0,60}?"
    rf"\b(?P<split>train(?:ing)?|val\w*|test|dev|eval\w*)\b[^:=\n]{{0,30}}[:=]\s*(?P<value>{NUM})(?P<pct>\s?%)?",
    re.IGNORECASE,
)
# what follows a tqdm bar's percentage: its bar, or (rendered without one, as in a notebook) its count and timing
_BAR_AFTER = re.compile(r"\||\s+\d+/\d+\s+\[")
_PERCENT_KEY = re.compile(r"(?:acc|prec)@\d", re.IGNORECASE)  # ImageNet top-k accuracy is printed in percent
# a line that names its loss: bare splits are scores - unless on the loss's own scale (bare_split_loss)
_NAMED_LOSS = re.compile(rf"\bloss\b\s*[:=]\s*(?P<value>{NUM})?", re.IGNORECASE)
_AFTER_STEP_WORDS = re.compile(r" (?:after|at|@) (?:epoch|iter|step)", re.IGNORECASE)  # what _AFTER_STEP needs
_KEY_EPOCH_BATCH = re.compile(  # "Loss [32, 100](epoch, minibatch):  2.609"
    rf"{KEY_START}(?P<key>{KEY_WORD})\s*\[\s*(?P<step>\d+),\s*\d+\s*\](?:\([^)\n]{{0,40}}\))?\s*[:=]\s*(?P<value>{NUM})",
    re.IGNORECASE,
)
# Trax's training loop: "Step    100: train CrossEntropyLoss |  1.97824812", "Step    100: eval  Accuracy |  0.41"
_STEP_SPLIT_BAR = re.compile(
    rf"^\s*Step\s+(?P<step>\d+): (?P<split>train|eval|valid\w*|test)\s+(?P<metric>{KEY_WORD})"
    rf"\s+\|\s+(?P<value>{NUM})\s*$",
    re.IGNORECASE,
)
# "Epoch: [0][14/5005]" (the ImageNet example), "Epoch [2][400/2503]" (mmcv), "TRAIN [0][10/3416]" (MLPerf's GNMT):
# the epoch and the batch within it
_EPOCH_POSITION = re.compile(
    r"(?i)\b(?:epoch|train(?:ing)?)\s*:?\s*\[\s*(?P<epoch>\d+)\s*\]\s*\[\s*(?P<batch>\d+)\s*/\s*(?P<of>\d+)\s*\]"
)


# Two metrics under one key, their values in the same order: "TRAIN acc/loss: 0.912/0.301" (i2dl's solver),
# "accuracy/loss: 0.47/0.69"
_SLASHED_PAIR = re.compile(
    rf"{KEY_START}(?P<split>(?:train(?:ing)?|val(?:id(?:ation)?)?|eval|test|dev)\s+)?(?P<first>[A-Za-z]+)/"
    rf"(?P<second>[A-Za-z]+)\s*[:=]\s*(?P<a>{NUM})/(?P<b>{NUM})(?![\w.])",
    re.IGNORECASE,
)


# One metric, then its value per split: "[Loss] TRAIN 0.6931 / VALID 0.6933", "Accuracy: train 0.91, val 0.88" - the
# whole line; each split's value is that metric's
_METRIC_THEN_SPLITS = re.compile(
    rf"^\s*[\[(]?(?P<metric>[A-Za-z]+)[\])]?\s*:?\s+"
    rf"(?P<pairs>{_SPLIT_WORD}\s*[:=]?\s*(?:{NUM})(?:\s*[/|,;]\s*{_SPLIT_WORD}\s*[:=]?\s*(?:{NUM}))+)\s*$",
    re.IGNORECASE,
)
_SPLIT_VALUE = re.compile(rf"{_SPLIT_WORD}\s*[:=]?\s*({NUM})", re.IGNORECASE)


def _metric_per_split(text: str) -> str:
    """"[Loss] TRAIN 0.69 / VALID 0.70" -> "TRAIN Loss: 0.69 VALID Loss: 0.70" when the word before them is a metric."""
    found = _METRIC_THEN_SPLITS.match(text)
    if found is None or found.group("metric").lower() not in METRIC_WORDS:
        return text
    metric = found.group("metric")
    return " ".join(f"{split} {metric}: {value}" for split, value in _SPLIT_VALUE.findall(found.group("pairs")))


def _one_key_per_value(found: re.Match[str]) -> str:
    """"TRAIN acc/loss: 0.9/0.3" -> "TRAIN acc: 0.9 TRAIN loss: 0.3" when both names are metrics."""
    first, second = found.group("first"), found.group("second")
    if first.lower() not in METRIC_WORDS or second.lower() not in METRIC_WORDS:
        return found.group(0)
    split = f"{found.group('split').strip()} " if found.group("split") else ""  # "VAL   acc/loss": one space
    return f"{split}{first}: {found.group('a')} {split}{second}: {found.group('b')}"


# A C/C++ check reporting where it failed: "THCudaCheck FAIL file=.../THCGeneral.cpp line=74 error=35 : ..." - its
# error is a status code, not an error rate
_SOURCE_LOCATION = re.compile(r"\bfile=\S+ line=\d+")
# A logger's record location before the message: loguru's "| __main__:train:35 - loss: 2.50" (module, function,
# line), a formatter's "[trainer.py:fit:212]": a function named train or eval, and its line number, are no metric
_LOGGER_LOCATION = re.compile(r"(?:^|[\s|\[])[\w.<>-]+:[\w<>]+:\d+(?=\s+-\s|\]\s)")


def read_line(text: str) -> LinePairs:
    """The metric values one line prints, and the step it names (the same for every line with this text)."""
    text = english_names(text)
    if "file=" in text and _SOURCE_LOCATION.search(text):
        return NOTHING
    if ":" in text and _LOGGER_LOCATION.search(text):
        text = _LOGGER_LOCATION.sub(" ", text)
    if "/" in text and _SLASHED_PAIR.search(text):
        text = _SLASHED_PAIR.sub(_one_key_per_value, text)
    text = _metric_per_split(text)
    darknet = _DARKNET.match(text)
    if darknet:
        parsed, value = parse_key("avg loss"), as_number(darknet.group("value"))
        if parsed is not None and value is not None:
            return LinePairs(((parsed, "avg loss", value),), f"iteration {int(darknet.group('step'))}")
        return NOTHING
    bar = _STEP_SPLIT_BAR.match(text)
    if bar:
        key = f"{bar.group('split')} {bar.group('metric')}"
        parsed, value = parse_key(key), as_number(bar.group("value"))
        if parsed is not None and value is not None:
            return LinePairs(((parsed, key, value),), f"step {int(bar.group('step'))}")
        return NOTHING
    after = _AFTER_STEP.search(text) if _AFTER_STEP_WORDS.search(text) else None
    if after:
        parsed, value = parse_key(after.group("key")), as_number(after.group("value"))
        if parsed is not None and value is not None:
            step = f"{STEP_WORDS[after.group('word').lower()]} {int(after.group('step'))}"
            return LinePairs(((parsed, after.group("key"), value),), step)
        return NOTHING
    keyed = _KEY_EPOCH_BATCH.search(text) if "[" in text else None
    if keyed:
        parsed, value = parse_key(keyed.group("key")), as_number(keyed.group("value"))
        if parsed is not None and value is not None:
            return LinePairs(((parsed, keyed.group("key"), value),), f"epoch {int(keyed.group('step'))}")
    if "train_runtime" in text:
        return NOTHING  # HF Trainer's closing summary: its train_loss is the mean over the run, no point of a curve
    step: str | None = None
    planned = 0
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
            planned = int(fraction.group(3))
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
        if word is not None:  # "epoch 3", "Train Epoch: 3" - not "the best epoch: 14", which is no step of this line
            if step is None and math.isfinite(value) and value >= 0 and not key.lower().startswith("best "):
                step = f"{word} {value:g}"
            continue
        if match.group("pct") and _BAR_AFTER.match(text, match.end()):
            continue  # a progress bar ("Validation: 100%|####|", "Valid:  99% 5632/5667 [00:02<..."), not a metric
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
            named_loss = _NAMED_LOSS.search(text)
            percent = bool(match.group("pct")) or bool(named_loss)
            # a bare split name before a count is the loop's progress ("train: 100/937 loss: 1.61", "train: 937
            # loss: 1.76, time: 14.9s"): batches done, not a score
            if match.group("den") or (percent and not match.group("pct") and value > 100):
                continue
            parsed = split_only_key(key, percent=percent, loss=bare_split_loss(named_loss, match, value))
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
    # A line naming its training loss outright ("train_loss = 0.32") says which value that is; a bare "loss" beside
    # it is another (an evaluation's, DeepICF's "loss = 0.25 ... train_loss = 0.32"; Lightning's running twin)
    named = {parsed.norm for parsed, key, _ in found if names_split(key)}
    found = [item for item in found if names_split(item[1]) or item[0].norm not in named]
    if not found:
        return LinePairs((), step, planned)
    bar = _BAR_TOTAL.search(text)
    position = _EPOCH_POSITION.search(text)
    at = None
    if position and int(position.group("of")) > 0:
        at = (int(position.group("epoch")), int(position.group("batch")) / int(position.group("of")))
    return LinePairs(tuple(found), step, planned, int(bar.group(1)) if bar else None, at)


def bare_split_loss(named_loss: re.Match[str] | None, match: re.Match[str], value: float) -> bool:
    """A bare split's value beside a named loss greater than 1, on that loss's scale (between half and twice it), no
    percent sign: the split's loss ("loss: 3.07 | val: 2.96"), not an accuracy of 3% ("loss=3.29 train=0.0229")."""
    if named_loss is None or match.group("pct") or named_loss.group("value") is None:
        return False
    loss = as_number(named_loss.group("value"))
    return loss is not None and loss > 1 and loss / 2 <= value <= loss * 2


def _sections(text: str) -> list[tuple[int, str]]:
    """Where each split's part of a line begins ("Train: loss 0.2 | Val: loss 0.9"), and its split word."""
    sections = [(m.start(), m.group(1)) for m in _LINE_SPLIT.finditer(text)]
    opening = _OPENING_SPLIT.match(text)
    if opening and not sections:
        sections.insert(0, (opening.start(1), opening.group(1)))
    if "|" in text:
        sections = sorted({*sections, *((m.start(1), m.group(1)) for m in _PIPE_SPLIT.finditer(text))})
    if "Saving dict" in text and _EVAL_DICT.search(text):
        sections.insert(0, (0, "eval"))
    return sections
