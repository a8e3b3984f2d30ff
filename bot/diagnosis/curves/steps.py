"""The step a curve line belongs to, as the frameworks print it: `Epoch 2/10`, `epoch 3`, `[500]` (an XGBoost or
LightGBM round), `Epoch[3]`, `[1,    20]` (epoch, batch), or a line just before that names it."""

from __future__ import annotations

import re

from bot.diagnosis.curves.series import STEP_WORDS
from bot.intake.log_document import LogDocument

EPOCH_BRACKET = re.compile(  # "Epoch[3]", "Epoch [1][50/1000]", "Epoch(val) [1][500]"
    r"\b(epoch|iter(?:ation)?)(?:\(\w+\))?\s*:?\s*\[\s*(\d+)\s*\]", re.IGNORECASE
)
BARE_STEP = re.compile(r"^\W*(epoch|step|iteration|iter)\W{0,3}(\d+)\b", re.IGNORECASE)
BRACKET_STEP = re.compile(r"^\s*\[(\d+)\]")  # XGBoost / LightGBM round
EPOCH_BATCH = re.compile(r"\[\s*(\d+),\s*\d+\s*\]")  # "[1,    20] loss: 2.29" (epoch, batch)
# glog's line prefix (Caffe, TensorFlow C++): "I1010 17:36:18.471542 24907 solver.cpp:247] Iteration 0, Testing net"
_GLOG_PREFIX = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]+:\d+\] ")
FRACTION_STEP = re.compile(r"\b(epoch|step|iter(?:ation)?)\s*[:#=]?\s*\[?(\d+)\s*/\s*(\d+)", re.IGNORECASE)


def step_of(text: str) -> str | None:
    """'Epoch: 01 | Epoch Time: 0m 57s', 'epoch 3', 'Epoch 2/10', '[500]' -> the step it names, else None."""
    if text[:1] in "IWEF" and (glog := _GLOG_PREFIX.match(text)):
        text = text[glog.end() :]
    bracket = BRACKET_STEP.match(text)
    if bracket:
        return f"round {int(bracket.group(1))}"
    # a step word and its number: "Epoch 2/10" (counted), "epoch 3" (at the start), "Epoch [1][50/1000]"
    named = FRACTION_STEP.search(text) or BARE_STEP.match(text) or EPOCH_BRACKET.search(text)
    if named:
        return f"{STEP_WORDS.get(named.group(1).lower(), 'iteration')} {int(named.group(2))}"
    epoch_batch = EPOCH_BATCH.search(text[:60])
    if epoch_batch:
        return f"epoch {int(epoch_batch.group(1))}"
    return None


def step_before(doc: LogDocument, index: int) -> str | None:
    """The step a metric line belongs to when a line just before it names it ('epoch 3' then 'loss: 0.4')."""
    for back in range(index - 1, max(-1, index - 4), -1):
        text = doc.lines[back].text
        if len(text) <= 200:
            step = step_of(text)
            if step is not None:
                return step
    return None
