"""The text model (knowledge/text_model/model.json): strict loading, its arithmetic, and what the classifier does
with it."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import default_knowledge_dir, load_knowledge
from bot.diagnosis.words.text_model import MODEL_FILE, load_text_model
from bot.errors import KnowledgeBaseError
from bot.intake.log_input import text_to_lines

BUNDLED = default_knowledge_dir() / MODEL_FILE


def tiny(tmp_path: Path, **change: object) -> Path:
    """Two classes, three terms; probabilities worked out by hand in the tests below."""
    document: dict = {
        "token_pattern": r"[A-Za-z_][A-Za-z0-9_]+",
        "classes": ["input_pipeline", "preemption"],
        "intercept": [0.0, 0.5],
        "terms": {"truncated": [2.0, 3.0, -1.0], "signal": [1.0, -1.0, 2.0], "death signal": [1.5, 0.0, 4.0]},
        "checks": [{"text": "truncated", "probabilities": [0.0, 0.0]}],
    }
    document.update(change)
    # the check's probabilities by hand: only "truncated" present, weight 1 after L2 normalisation
    if "checks" not in change:
        logits = [0.0 + 3.0, 0.5 - 1.0]
        total = sum(math.exp(x) for x in logits)
        document["checks"] = [{"text": "truncated", "probabilities": [math.exp(x) / total for x in logits]}]
    path = tmp_path / "model.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_the_bundled_model_loads_reproduces_its_examples_and_knows_only_real_classes() -> None:
    model = load_text_model(BUNDLED)
    assert model is not None
    kb = load_knowledge()
    assert set(model.classes) <= set(kb.classes)
    assert kb.text_model is not None and kb.text_model.classes == model.classes
    raw = json.loads(BUNDLED.read_text(encoding="utf-8"))
    assert raw["checks"], "the fitted examples are what keeps the reader honest"
    assert "test" not in raw["fitted_on"]


def test_features_are_sublinear_tf_idf_with_word_pairs_and_l2_norm(tmp_path: Path) -> None:
    model = load_text_model(tiny(tmp_path))
    assert model is not None
    got = model.features("Received 15 death signal; signal again. Unrelated words.")
    # "signal" twice: (1 + ln 2) x idf 1; "death signal" once: 1 x 1.5; "truncated" absent; unknown words dropped
    raw = {"signal": 1.0 + math.log(2), "death signal": 1.5}
    norm = math.sqrt(sum(v * v for v in raw.values()))
    assert got == pytest.approx({term: value / norm for term, value in raw.items()})
    assert model.features("nothing known here") == {}


def test_probabilities_are_a_softmax_over_intercept_plus_weighted_coefficients(tmp_path: Path) -> None:
    model = load_text_model(tiny(tmp_path))
    assert model is not None
    p = model.probabilities("death signal")
    w_signal, w_pair = 1.0 / math.sqrt(1 + 1.5**2), 1.5 / math.sqrt(1 + 1.5**2)
    logits = [0.0 + w_signal * -1.0 + w_pair * 0.0, 0.5 + w_signal * 2.0 + w_pair * 4.0]
    total = sum(math.exp(x) for x in logits)
    assert p["preemption"] == pytest.approx(math.exp(logits[1]) / total)
    assert p["input_pipeline"] + p["preemption"] == pytest.approx(1.0)
    # no known word: the intercepts alone
    empty = model.probabilities("")
    assert empty["preemption"] == pytest.approx(math.exp(0.5) / (1 + math.exp(0.5)))


def test_supporting_lines_are_those_whose_words_speak_for_the_class_best_first(tmp_path: Path) -> None:
    model = load_text_model(tiny(tmp_path))
    assert model is not None
    lines = ["epoch 3 done", "image file is truncated", "death signal received", "signal"]
    assert model.supporting_lines(lines, "preemption") == [2, 3]
    assert model.supporting_lines(lines, "preemption", limit=1) == [2]
    assert model.supporting_lines(lines, "input_pipeline") == [1]
    assert model.supporting_lines(["epoch 3 done"], "input_pipeline") == []
    assert model.supporting_lines(lines, "host_oom") == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"classes": ["input_pipeline"]}, "classes"),
        ({"classes": ["input_pipeline", "input_pipeline"]}, "classes"),
        ({"intercept": [0.0]}, "intercept"),
        ({"intercept": [0.0, float("nan")]}, "intercept"),
        ({"intercept": [0.0, True]}, "intercept"),
        ({"token_pattern": ""}, "token_pattern"),
        ({"token_pattern": "("}, "token_pattern"),
        ({"terms": {}}, "terms"),
        ({"terms": {"x": [1.0, 2.0]}}, "terms.x"),
        ({"terms": {"x": [0.0, 1.0, 2.0]}}, "terms.x"),
        ({"terms": {"x": [-1.0, 1.0, 2.0]}}, "terms.x"),
        ({"terms": {"x": [1.0, float("inf"), 2.0]}}, "terms.x"),
        ({"terms": {"x": [1.0, float("-inf"), float("inf")]}}, "terms.x"),  # their sum is nan, still refused
        ({"terms": {"x": [1.0, "2.0", 2.0]}}, "terms.x"),
        ({"terms": {"x": [1.0, False, 2.0]}}, "terms.x"),
        ({"checks": []}, "checks"),
        ({"checks": [{"text": "truncated", "probabilities": [0.5]}]}, "checks[0]"),
        ({"checks": [{"probabilities": [0.5, 0.5]}]}, "checks[0]"),
    ],
)
def test_a_malformed_model_is_refused_naming_the_field(tmp_path: Path, change: dict, field: str) -> None:
    with pytest.raises(KnowledgeBaseError) as caught:
        load_text_model(tiny(tmp_path, **change))
    assert caught.value.problems[0][1] == field


def test_a_reader_that_disagrees_with_the_fitted_probabilities_is_refused(tmp_path: Path) -> None:
    raw = json.loads(BUNDLED.read_text(encoding="utf-8"))
    term = max(raw["terms"], key=lambda t: max(abs(x) for x in raw["terms"][t][1:]))
    raw["terms"][term] = [raw["terms"][term][0]] + [-x for x in raw["terms"][term][1:]]
    raw["checks"].append({"text": term, "probabilities": load_text_model(BUNDLED).probabilities(term)})  # type: ignore[union-attr]
    raw["checks"][-1]["probabilities"] = list(raw["checks"][-1]["probabilities"].values())
    path = tmp_path / "model.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match="away from the fitted model"):
        load_text_model(path)


def test_unreadable_files_are_refused_and_a_missing_one_is_no_model(tmp_path: Path) -> None:
    assert load_text_model(tmp_path / "absent.json") is None
    for content in ("{not json", "[1, 2]"):
        (tmp_path / "bad.json").write_text(content, encoding="utf-8")
        with pytest.raises(KnowledgeBaseError):
            load_text_model(tmp_path / "bad.json")


def copied_knowledge(tmp_path: Path) -> Path:
    target = tmp_path / "knowledge"
    shutil.copytree(default_knowledge_dir(), target)
    return target


def test_a_model_class_missing_from_the_knowledge_base_fails_the_load(tmp_path: Path) -> None:
    directory = copied_knowledge(tmp_path)
    path = directory / MODEL_FILE
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw["classes"][0] = "no_such_class"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(KnowledgeBaseError) as caught:
        load_knowledge(directory)
    assert any("no_such_class" in problem[2] for problem in caught.value.problems)


# A log that no signal of the knowledge base matches, but whose words the corpus has taught the model (a gradient
# norm blowing up): the rules answer `unknown` with no lead; the model adds leads, each with a line of the log.
UNMATCHED = """\
step 3900 lr 0.0003
gradient norm grew to 1e12 at step 4000
"""


def test_when_rules_name_too_few_classes_the_model_fills_the_alternatives_with_their_lines() -> None:
    kb = load_knowledge()
    with_model = Classifier(kb).classify(text_to_lines(UNMATCHED))
    kb.text_model = None
    without = Classifier(kb).classify(text_to_lines(UNMATCHED))
    rules_only = [a.failure_class for a in without.alternatives]
    assert len(rules_only) < 2, "the case must leave the rules short of alternatives"
    added = [a for a in with_model.alternatives if a.source == "text model"]
    assert added, with_model.alternatives
    assert len(with_model.alternatives) == 2
    assert with_model.failure_class == without.failure_class == "unknown"  # the model never changes the answer
    assert "numerical_instability" in [a.failure_class for a in added]
    lines = UNMATCHED.splitlines()
    for alt in added:
        assert alt.failure_class not in ("unknown", with_model.failure_class)
        assert alt.evidence in [line.strip() for line in lines]
        assert 0 < alt.confidence <= 0.5


def test_the_model_never_displaces_the_rules_own_alternatives() -> None:
    log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\nNCCL watchdog timeout\n"
    kb = load_knowledge()
    with_model = Classifier(kb).classify(text_to_lines(log))
    kb.text_model = None
    without = Classifier(kb).classify(text_to_lines(log))
    assert with_model.alternatives[: len(without.alternatives)] == without.alternatives
    assert all(a.source == "rules" for a in without.alternatives)
