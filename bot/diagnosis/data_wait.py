"""How long a training step waits for its data, read from the per-step timings loops print (pure: no I/O).

Two facts come of it (bot/diagnosis/facts.py): the wait is most of every step (data_wait_dominates), or batches are
mostly ready at once but some steps wait seconds for theirs (data_wait_stalls). Either makes the input pipeline a
suspect; an evaluation loop's lines, and the first iterations of an epoch while workers start, prove nothing.
"""

from __future__ import annotations

import re

import re2

from bot.diagnosis.curves.finding import Finding
from bot.intake.log_document import LogDocument

# Per-step timings that split out the wait for data: mmcv/mmengine/detectron2 "time: 3.01, data_time: 2.76", the
# PyTorch ImageNet example and its many copies "Time  2.912 ( 3.104)  Data  2.701 ( 2.893)", timm "Data: 0.011",
# PaddlePaddle's suites "reader_cost: 5.339 s, batch_cost: 5.979 s" (PaddleDetection: data_cost); the same keys
# quoted in a JSON or dict line (MMEngine's vis_data/scalars.json: {"data_time": 13.7, ..., "time": 16.7}).
# "Time 15.802 (2.779)": the step's own time, then the running average since the epoch began (the ImageNet example's
# AverageMeter); the average is the steadier figure, one slow batch or one fast one says little
_SECONDS = r"\d+\.\d+(?:[eE][-+]?\d+)?"  # a time in seconds, in plain or scientific notation ("1.40e-01")
_STEP_TIME = re.compile(
    rf"\b(?:(?:batch_|iter_)?time|batch_cost)\b[\"']?\s*[:=]?\s*(?P<value>{_SECONDS})"
    rf"(?:\s*\(\s*(?P<average>{_SECONDS})\s*\))?",
    re.IGNORECASE,
)
# "[ 0/56]", "[10][6/6]": an epoch's iteration and its length (the line's last such pair); its first iteration, and
# every one of an epoch of a few, wait for the loader's workers to start (seconds each epoch unless they persist)
_EPOCH_ITERATION = re.compile(r"\[\s*(\d+)\s*/\s*(\d+)\s*\]")
# An evaluation loop's progress line (MMEngine's "Epoch(val) [1][137/137]", torchvision's "Test:  [10/50]"): with no
# backward pass its step is short, so the wait for data is a large share of it on any healthy run
_EVALUATION_LINE = re.compile(r"\((?:val|test)\)|\b(?:test|val|valid|validation|eval|evaluation):?\s+\[", re.I)
WORKER_START_ITERATIONS = 10
_DATA_TIME = re.compile(
    rf"\b(?:data(?:_time)?|reader_cost|data_cost)\b[\"']?\s*[:=]?\s*(?P<value>{_SECONDS})"
    rf"(?:\s*\(\s*(?P<average>{_SECONDS})\s*\))?",
    re.IGNORECASE,
)
# The wait for data under the other names loops print it: lerobot "data_s:13.330", "load_data_time: 19.6", Lua
# Torch's ImageNet trainer "DataLoadingTime 67.312", and the names above
_DATA_WAIT = re2.compile(
    r"(?mi)^[^\n]*\b(?:load_data_time|data_?loading_?time|data(?:_time|_s)?|reader_cost|data_cost)\b[\"']?\s*[:=]?\s*"
    rf"({_SECONDS})[^\n]*$"
)
STALL_SECONDS = 5.0  # a wait this long for one batch is a stall, on any hardware
STALL_RATIO = 10.0  # ... when the median wait is a tenth of it or less: the loader keeps up most of the time


def data_wait_dominates(doc: LogDocument, waits: list[tuple[int, float]]) -> Finding | None:
    """Most of the step time is the wait for data: over the training lines that print both (an evaluation loop's
    are left out), the median data time is at least half the median step time and a tenth of a second or more (a
    fast loop's few milliseconds prove nothing). Where a line prints running averages beside the step's own figures,
    the averages are compared."""
    timed: list[tuple[int, float, float]] = []
    for index, _ in waits:
        text = doc.lines[index].text
        step, data = _STEP_TIME.search(text), _DATA_TIME.search(text)
        if step is None or data is None or float(step.group("value")) <= 0 or _EVALUATION_LINE.search(text):
            continue
        iterations = _EPOCH_ITERATION.findall(text)  # the last: "Epoch [3/5] Iter [100/2000]" counts epochs first
        if iterations and (int(iterations[-1][0]) == 0 or int(iterations[-1][1]) <= WORKER_START_ITERATIONS):
            continue  # the workers starting, not the loader keeping pace
        group = "average" if step.group("average") and data.group("average") else "value"
        if float(step.group(group)) <= 0:
            continue
        timed.append((index, float(step.group(group)), float(data.group(group))))
        if len(timed) >= 200:
            break
    if not timed:
        return None
    steps = sorted(t for _, t, _ in timed)
    pauses = sorted(d for _, _, d in timed)
    step, wait = steps[len(steps) // 2], pauses[len(pauses) // 2]
    if wait < 0.1 or wait < 0.5 * step:
        return None
    return Finding(
        (timed[0][0], timed[-1][0]),
        f"data loading takes {wait:.3g} s of each {step:.3g} s step ({wait / step:.0%}) over {len(timed)} log lines",
    )


def data_waits(doc: LogDocument) -> list[tuple[int, float]]:
    """The lines printing a wait for data (the first 500), with the wait: one scan serves both data-wait facts."""
    waits: list[tuple[int, float]] = []
    for match in _DATA_WAIT.finditer(doc.data):
        waits.append((doc.line_at(match.start()), float(match.group(1))))
        if len(waits) >= 500:
            break
    return waits


def data_wait_stalls(waits: list[tuple[int, float]]) -> Finding | None:
    """Most batches are ready at once, but past the first timed line (the workers starting) some steps wait
    STALL_SECONDS or more for theirs, STALL_RATIO times the median wait or more: the loader falls behind in bursts
    (too few workers, a slow remote read), which a median over the steps hides."""
    if len(waits) < 4:
        return None
    median = sorted(wait for _, wait in waits)[len(waits) // 2]
    stalls = [(i, wait) for i, wait in waits[1:] if wait >= STALL_SECONDS and wait >= STALL_RATIO * median]
    if not stalls:
        return None
    longest = max(wait for _, wait in stalls)
    return Finding(
        tuple(i for i, _ in stalls[:3]),
        f"the wait for data reaches {longest:.3g} s on {len(stalls)} of {len(waits)} timed steps "
        f"(median {median:.2g} s)",
    )
