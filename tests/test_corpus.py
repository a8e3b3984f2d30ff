"""Every labelled case lands in its class: the dev corpus (real logs from public issue trackers) and a set of
hand-written cases in other phrasings and frameworks, to keep the rules general."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.classifier import Classifier
from bot.knowledge import CLASS_IDS, load_knowledge
from bot.log_input import text_to_lines

FIXTURES = Path(__file__).parent / "fixtures"


def _cases(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines() if line.strip()]


DEV = _cases("corpus_dev.jsonl")
HANDWRITTEN = _cases("cases_handwritten.jsonl")


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier(load_knowledge())


@pytest.mark.parametrize("case", DEV + HANDWRITTEN, ids=lambda case: case["id"])
def test_case_lands_in_its_class(classifier: Classifier, case: dict) -> None:
    diagnosis = classifier.classify(text_to_lines(case["text"]))
    assert diagnosis.failure_class == case["class"], diagnosis.public_dict()
    if case["class"] == "unknown":
        assert diagnosis.confidence < 0.5
    else:
        assert diagnosis.confidence >= 0.35
        assert diagnosis.evidence or case["class"] in ("underfitting", "overfitting")
        assert diagnosis.remediation and diagnosis.title


def test_corpus_covers_every_class() -> None:
    assert {case["class"] for case in DEV} == set(CLASS_IDS)


def test_alternatives_are_other_classes_best_first(classifier: Classifier) -> None:
    for case in DEV:
        diagnosis = classifier.classify(text_to_lines(case["text"]))
        confidences = [alt.confidence for alt in diagnosis.alternatives]
        assert confidences == sorted(confidences, reverse=True)
        assert diagnosis.failure_class not in {alt.failure_class for alt in diagnosis.alternatives}
        assert all(0.0 <= value <= 1.0 for value in confidences)
