"""Collector prefixes and colour codes come off each line; the program's own words, indentation included, stay."""

from __future__ import annotations

import json

import pytest

from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import load_knowledge
from bot.intake.line_prefix import split_line_prefix, strip_line_prefix
from bot.intake.log_input import parse_log_text


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier(load_knowledge())


BODY = '  File "/app/train.py", line 12, in <module>'


@pytest.mark.parametrize(
    "prefixed",
    [
        "2026-11-30T09:01:13.512310771Z " + BODY,  # kubectl logs --timestamps
        "2026-11-30 09:01:13,512 " + BODY,  # a logging format's asctime
        "[2026-11-30 09:01:13] " + BODY,
        "2026-11-30 09:01:13.018974: " + BODY,  # TF's C++ logger inside a Vertex jsonPayload message
        "2026-11-30T09:01:13+01:00 " + BODY,
        "[rank3]: " + BODY,  # torchrun
        "[default0]: " + BODY,
        "(RayTrainWorker pid=4312, ip=10.0.0.3) " + BODY,  # Ray
        "(pid=4312) " + BODY,
        "[1,0]<stderr>:" + BODY,  # mpirun --tag-output
        "[pod/trainer-worker-0/pytorch] " + BODY,  # kubectl logs --prefix
        "master-replica-0: " + BODY,
        "ERROR\t2026-02-21 18:15:12 -0500\tworkerpool0-0\t" + BODY,  # gcloud ai custom-jobs stream-logs
        "[rank0]: 2026-11-30T09:01:13Z " + BODY,  # two in a row
    ],
)
def test_collector_prefix_comes_off_and_indentation_stays(prefixed: str) -> None:
    assert strip_line_prefix(prefixed) == BODY


@pytest.mark.parametrize(
    "line",
    [
        BODY,
        "Epoch 3/30",
        "0:\tlearn: 0.6812345\ttest: 0.6901234\tbest: 0.6901234 (0)\ttotal: 12ms\tremaining: 11s",  # CatBoost
        "I1102 10:00:00.123 140231 basic_session_run_hooks.py:260] loss = 2.3, step = 100",  # glog: steps are read
        "2026-11-30 is the day the run started",  # a date, no time: the program's words
        "[rank3] lost its connection",  # no colon: not torchrun's tag
        "workerpool0-1 exited with a non-zero status of 1",  # Vertex's own sentence names the replica
        "RuntimeError: CUDA out of memory.",
    ],
)
def test_a_line_in_the_programs_own_words_is_unchanged(line: str) -> None:
    assert strip_line_prefix(line) == line


@pytest.mark.parametrize(
    ("prefixed", "replica"),
    [
        ("[rank3]: " + BODY, "rank3"),
        ("[pod/trainer-worker-1/pytorch] " + BODY, "trainer-worker-1"),
        ("ERROR\t2026-02-21 18:15:12 -0500\tworkerpool0-1\t" + BODY, "workerpool0-1"),
        ("INFO\t2026-02-21 18:15:12 -0500\tworkerpool0-1\t[rank3]: " + BODY, "workerpool0-1"),  # outermost
        ("[rank2]: 2026-11-30T09:01:13Z " + BODY, "rank2"),  # a later prefix naming none keeps it
        ("2026-11-30T09:01:13Z [rank2]: " + BODY, "rank2"),
        ("2026-11-30T09:01:13Z " + BODY, None),
        (BODY, None),
    ],
)
def test_the_replica_a_prefix_names_comes_with_the_line(prefixed: str, replica: str | None) -> None:
    assert split_line_prefix(prefixed) == (BODY, replica)
    assert [(line.text, line.replica) for line in parse_log_text(prefixed)] == [(BODY, replica)]


def test_a_log_entrys_own_task_name_outranks_the_one_in_its_text() -> None:
    entry = {"resource": {"labels": {"task_name": "workerpool1-0"}}, "textPayload": "[rank5]: Traceback (most"}
    [line] = parse_log_text(json.dumps([entry]))
    assert (line.text, line.replica) == ("Traceback (most", "workerpool1-0")


def test_colour_codes_come_off_anywhere_in_the_line() -> None:
    coloured = "\x1b[1m200/200\x1b[0m \x1b[32m━━━━\x1b[0m - loss: \x1b[31m0.4123\x1b[0m - val_loss: 0.5123\x1b[K"
    assert strip_line_prefix(coloured) == "200/200 ━━━━ - loss: 0.4123 - val_loss: 0.5123"


def test_a_line_that_was_only_a_prefix_is_dropped_like_a_blank_line() -> None:
    text = "2026-11-30T09:00:00Z epoch,train_loss,val_loss\n2026-11-30T09:00:01Z \n2026-11-30T09:00:02Z 0,0.9,0.8"
    assert [line.text for line in parse_log_text(text)] == ["epoch,train_loss,val_loss", "0,0.9,0.8"]


def test_log_entry_text_loses_its_prefixes_too() -> None:
    entry = {"resource": {"labels": {"task_name": "workerpool0-0"}}, "textPayload": "[rank1]: Traceback (most recent"}
    assert [line.text for line in parse_log_text(json.dumps([entry]))] == ["Traceback (most recent"]


def _table(prefix: str) -> str:
    rows = [(1.92, 1.71), (1.21, 1.12), (0.83, 0.95), (0.52, 0.97), (0.31, 1.08), (0.18, 1.24), (0.1, 1.41)]
    lines = [f"{prefix}epoch     train_loss  valid_loss  time"]
    lines += [f"{prefix}{epoch:<9} {train:.6f}    {valid:.6f}  01:02" for epoch, (train, valid) in enumerate(rows)]
    return "\n".join(lines)


@pytest.mark.parametrize("prefix", ["", "2026-11-30T09:01:13.512310771Z ", "[rank0]: ", "\x1b[0m"])
def test_a_table_behind_a_prefix_reads_as_the_bare_table(classifier: Classifier, prefix: str) -> None:
    diagnosis = classifier.classify(parse_log_text(_table(prefix)))
    assert diagnosis.failure_class == "overfitting"
    assert any("1.410000" in line for line in diagnosis.evidence)

