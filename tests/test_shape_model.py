"""The shape model (bot/diagnosis/shape/, data in knowledge/shape_model/model.json): the numbers a curve's shape is
read as, strict loading, the trees' arithmetic, and what the classifier does with it where no rule judged a curve.

Real parts: the bundled knowledge base and classifier, with the shape model replaced by a small real ShapeModel whose
one split is chosen here (so that each condition is seen to decide); and the bundled model file, loaded as shipped.
"""

from __future__ import annotations

import json
import math
import shutil
import struct
from pathlib import Path

import pytest

from bot.diagnosis.calibration import Curve
from bot.diagnosis.classifier import DOUBT_NOTE, Classifier, document
from bot.diagnosis.facts import derive_facts
from bot.diagnosis.knowledge import default_knowledge_dir, load_knowledge
from bot.diagnosis.shape.features import FEATURES, curve_shape
from bot.diagnosis.shape.model import SHAPE_MODEL_FILE, ShapeModel, Tree, load_shape_model
from bot.errors import KnowledgeBaseError
from bot.intake.log_input import text_to_lines
from bot.render.alert_blocks import SHAPE_NOTE, WORDS_NOTE
from bot.render.alert_context import AlertContext
from bot.render.channel_message import diagnosis_message
from bot.render.diagnosis_card import diagnosis_card
from bot.render.text import diagnosis_text

BUNDLED = default_knowledge_dir() / SHAPE_MODEL_FILE
VAL_LOGGED = FEATURES.index("val_loss.logged")
ANSWER = Curve(((0.8, 0.6), (0.95, 0.72)))
# a Keras run that improved on both splits to its end: no rule judges it
HEALTHY = "\n".join(
    f"Epoch {e}/6 - loss: {tl:.2f} - accuracy: {ta:.2f} - val_loss: {vl:.2f} - val_accuracy: {va:.2f}"
    for e, tl, ta, vl, va in [
        (1, 1.20, 0.55, 1.10, 0.60), (2, 0.90, 0.68, 0.85, 0.70), (3, 0.70, 0.76, 0.70, 0.76),
        (4, 0.55, 0.82, 0.58, 0.80), (5, 0.46, 0.86, 0.50, 0.84), (6, 0.40, 0.88, 0.45, 0.86),
    ]
)  # fmt: skip
TRAIN_ONLY = "\n".join(f"Epoch {e}/6 - loss: {1.2 / e:.2f} - accuracy: {0.5 + e / 20:.2f}" for e in range(1, 7))


def leaf(value: float) -> Tree:
    return Tree(feature=(-2,), threshold=(-2.0,), left=(-1,), right=(-1,), value=(value,))


def split(feature: int, threshold: float, low: float, high: float) -> Tree:
    return Tree(feature=(feature, -2, -2), threshold=(threshold, -2.0, -2.0), left=(1, -1, -1), right=(2, -1, -1),
                value=(0.0, low, high))  # fmt: skip


def tiny(answer_min: float = 0.8) -> ShapeModel:
    """Overfitting scores 3 when a validation loss was logged, else 0; the other classes always 0."""
    stage = (split(VAL_LOGGED, 0.5, 0.0, 3.0), leaf(0.0), leaf(0.0))
    return ShapeModel(("overfitting", "underfitting", "unknown"), (0.0, 0.0, 0.0), (stage,), answer_min, ANSWER)


DOUBT = Curve(((0.0, 0.3), (0.7, 0.6)))
# a validation loss best at its third value, then worse twice, while training kept falling: the rules read overfitting
TURNED = "\n".join(
    f"Epoch {e}/5 - loss: {tl} - val_loss: {vl}" for e, tl, vl in
    [(1, 0.9, 0.5), (2, 0.7, 0.4), (3, 0.5, 0.35), (4, 0.4, 0.45), (5, 0.3, 0.6)]
)  # fmt: skip


def doubting(doubt_min: float | None = 0.3) -> ShapeModel:
    """`unknown` (a healthy run) scores 3 when a validation loss was logged: probability e^3 / (e^3 + 2) = 0.909."""
    stage = (leaf(0.0), leaf(0.0), split(VAL_LOGGED, 0.5, 0.0, 3.0))
    classes = ("overfitting", "underfitting", "unknown")
    return ShapeModel(classes, (0.0, 0.0, 0.0), (stage,), 0.8, ANSWER, doubt_min, DOUBT if doubt_min else None)


def as_json(model: ShapeModel) -> dict:
    trees = [
        [{"feature": list(t.feature), "threshold": list(t.threshold), "left": list(t.left), "right": list(t.right),
          "value": list(t.value)} for t in stage]
        for stage in model.stages
    ]  # fmt: skip
    row = [0.0] * len(FEATURES)
    row[VAL_LOGGED] = 1.0
    probabilities = model.probabilities(row)
    return {
        "features": list(FEATURES),
        "classes": list(model.classes),
        "start": list(model.start),
        "stages": trees,
        "checks": [{"row": row, "probabilities": [probabilities[c] for c in model.classes]}],
        "answer": {"min_probability": model.answer_min, "curve": [list(p) for p in ANSWER.points]},
        **(
            {"doubt": {"min_probability": model.doubt_min, "curve": [list(p) for p in model.doubt_curve.points]}}
            if model.doubt_min is not None and model.doubt_curve is not None
            else {}
        ),
    }


def classify(text: str, shape: ShapeModel | None):
    kb = load_knowledge()
    kb.shape_model = shape
    return Classifier(kb).classify(text_to_lines(text))


def test_the_bundled_model_loads_reproduces_its_examples_and_names_only_curve_classes() -> None:
    model = load_shape_model(BUNDLED)
    assert model is not None
    kb = load_knowledge()
    curve_classes = {c.id for c in kb.classes.values() if c.judged_on_curves}
    assert "unknown" in model.classes and set(model.classes) - {"unknown"} <= curve_classes
    raw = json.loads(BUNDLED.read_text(encoding="utf-8"))
    assert raw["features"] == list(FEATURES) and raw["checks"]
    assert "test" not in raw["fitted_on"]
    assert max(y for _, y in raw["answer"]["curve"]) < 0.8  # a shape alone never claims a rule's proof


def test_probabilities_are_a_softmax_of_each_class_start_plus_its_trees_leaves() -> None:
    model = tiny()
    row = [0.0] * len(FEATURES)
    assert model.probabilities(row) == pytest.approx({"overfitting": 1 / 3, "underfitting": 1 / 3, "unknown": 1 / 3})
    row[VAL_LOGGED] = 0.5  # a value equal to the threshold goes left, as the fitting library sends it
    assert model.probabilities(row)["overfitting"] == pytest.approx(1 / 3)
    row[VAL_LOGGED] = 1.0
    total = math.exp(3.0) + 2.0
    assert model.probabilities(row) == pytest.approx(
        {"overfitting": math.exp(3.0) / total, "underfitting": 1 / total, "unknown": 1 / total}
    )
    two = ShapeModel(model.classes, (1.0, 0.0, 0.0), model.stages * 2, 0.8, ANSWER)  # stages add up
    assert two.probabilities(row)["overfitting"] == pytest.approx(math.exp(7.0) / (math.exp(7.0) + 2.0))


def write(tmp_path: Path, document_: dict) -> Path:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(document_), encoding="utf-8")
    return path


def test_a_model_as_written_by_the_fitter_loads_as_the_same_model(tmp_path: Path) -> None:
    loaded = load_shape_model(write(tmp_path, as_json(tiny())))
    assert loaded == tiny() and loaded.doubt_min is None  # no `doubt` section: it never doubts
    assert load_shape_model(write(tmp_path, as_json(doubting()))) == doubting()


def _broken(change: str) -> dict:
    raw = as_json(tiny())
    if change == "features":
        raw["features"] = raw["features"][:-1]
    elif change == "three trees":
        raw["stages"][0] = raw["stages"][0][:2]
    elif change == "backwards":
        raw["stages"][0][0]["left"][0] = 0
    elif change == "one child":
        raw["stages"][0][0]["right"][0] = -1
    elif change == "outside features":
        raw["stages"][0][0]["feature"][0] = len(FEATURES)
    elif change == "minimum":
        raw["answer"]["min_probability"] = 0
    elif change == "curve":
        raw["answer"]["curve"] = [[0.9, 0.7], [0.8, 0.6]]
    elif change == "checks":
        raw["checks"][0]["probabilities"] = [0.5, 0.25, 0.25]
    elif change == "no checks":
        raw["checks"] = []
    elif change == "no unknown":
        raw["classes"] = ["overfitting", "underfitting", "host_oom"]
    elif change == "doubt":
        raw["doubt"] = {"min_probability": 0.3, "curve": [[0.5, 0.6], [0.2, 0.7]]}
    return raw


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("features", "other curve features"),
        ("three trees", r"stages\[0\]: must hold 3 trees"),
        ("backwards", "node 0 points outside"),
        ("one child", "node 0 has one child"),
        ("outside features", "node 0 points outside the tree or the features"),
        ("minimum", "answer.min_probability"),
        ("curve", "answer.curve"),
        ("checks", r"checks\[0\]: this reader gives probabilities"),
        ("no checks", "at least one example"),
        ("no unknown", "`unknown` among them"),
        ("doubt", "doubt.curve"),
    ],
)
def test_a_malformed_model_is_refused_naming_the_field(tmp_path: Path, change: str, problem: str) -> None:
    with pytest.raises(KnowledgeBaseError, match=problem):
        load_shape_model(write(tmp_path, _broken(change)))


def test_a_missing_file_is_no_model_and_a_class_not_judged_on_curves_fails_the_knowledge_base(tmp_path: Path) -> None:
    assert load_shape_model(tmp_path / "absent.json") is None
    directory = tmp_path / "knowledge"
    shutil.copytree(default_knowledge_dir(), directory)
    raw = as_json(tiny())
    raw["classes"] = ["host_oom", "underfitting", "unknown"]
    (directory / SHAPE_MODEL_FILE).write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match="not a class judged on curves: host_oom"):
        load_knowledge(directory)
    assert load_knowledge(directory, shape_model=False).shape_model is None


def test_the_shape_of_a_validation_loss_that_turned_is_read_as_numbers() -> None:
    text = "\n".join(
        f"Epoch {e}/5 - loss: {tl} - val_loss: {vl}" for e, tl, vl in
        [(1, 0.9, 0.5), (2, 0.7, 0.4), (3, 0.5, 0.35), (4, 0.4, 0.45), (5, 0.3, 0.6)]
    )  # fmt: skip
    facts = derive_facts(document(text_to_lines(text)), None)
    row = dict(zip(FEATURES, curve_shape(facts.curves, facts.findings), strict=True))
    assert row["val_loss.logged"] == 1.0 and row["train_acc.logged"] == 0.0
    assert row["val_loss.best_at"] == pytest.approx(0.5)  # the third of five values
    assert row["val_loss.end_from_best"] == pytest.approx(1.0, rel=1e-4)  # ended at its worst
    assert row["train_loss.best_at"] == pytest.approx(1.0)  # training still improving at the end
    assert row["last_step"] == pytest.approx(math.log1p(5) / 2, rel=1e-6)
    assert row["finding.val_loss_rising"] == float("val_loss_rising" in facts.findings)
    for value in row.values():  # single precision, as the fitting library compares them
        assert struct.unpack("f", struct.pack("f", value))[0] == value


def test_where_no_rule_judged_the_curve_its_shape_names_the_class_with_the_points_it_names() -> None:
    assert classify(HEALTHY, None).failure_class == "unknown"
    diagnosis = classify(HEALTHY, tiny())
    assert (diagnosis.failure_class, diagnosis.basis) == ("overfitting", "shape")
    assert diagnosis.confidence == pytest.approx(ANSWER(math.exp(3.0) / (math.exp(3.0) + 2.0)), abs=1e-3)
    assert diagnosis.finding == "val_loss best 0.45 at epoch 6, 0.45 at epoch 6; loss 1.2 at epoch 1, 0.4 at epoch 6"
    assert diagnosis.evidence == [HEALTHY.splitlines()[0], HEALTHY.splitlines()[-1]]
    assert "unknown" in [a.failure_class for a in diagnosis.alternatives]


def test_an_unlikely_shape_or_a_log_with_no_curve_names_nothing() -> None:
    assert classify(HEALTHY, tiny(answer_min=0.95)).failure_class == "unknown"  # 0.91 is below this minimum
    assert classify(TRAIN_ONLY, tiny()).failure_class == "unknown"  # no validation loss: a third each
    assert classify("Loading shards\nStarting the job\nDone.", tiny(answer_min=0.3)).failure_class == "unknown"


def test_a_rules_answer_is_never_replaced_by_the_shape() -> None:
    text = HEALTHY + "\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB"
    diagnosis = classify(text, tiny())
    assert (diagnosis.failure_class, diagnosis.basis) == ("accelerator_oom", "rules")


def test_the_alert_its_card_and_the_cli_say_the_shape_named_the_class() -> None:
    diagnosis = classify(HEALTHY, tiny())
    ctx = AlertContext(job_id="8501620632646057984", job_key="p/8501620632646057984", project="p", region="us-central1")
    for blocks in (diagnosis_message(diagnosis, ctx)["blocks"], diagnosis_card(diagnosis, ctx)["blocks"]):
        shown = json.dumps(blocks)
        assert SHAPE_NOTE in shown and WORDS_NOTE not in shown
    assert "the shape of its training curve" in diagnosis_text(diagnosis)
    silent = classify(HEALTHY, None)
    assert SHAPE_NOTE not in json.dumps(diagnosis_message(silent, ctx)["blocks"])
    assert diagnosis.public_dict()["basis"] == "shape"


def test_a_rules_curve_answer_on_a_curve_shaped_like_a_healthy_run_keeps_its_class_at_a_lower_confidence() -> None:
    sure = classify(TURNED, None)
    assert (sure.failure_class, sure.basis) == ("overfitting", "rules") and sure.confidence >= 0.8
    doubted = classify(TURNED, doubting())
    healthy = math.exp(3.0) / (math.exp(3.0) + 2.0)
    assert (doubted.failure_class, doubted.basis) == ("overfitting", "rules")
    assert doubted.confidence == pytest.approx(DOUBT(1.0 - healthy), abs=1e-3)
    assert doubted.evidence == sure.evidence and doubted.finding == sure.finding + DOUBT_NOTE  # it says why
    assert "unknown" in [a.failure_class for a in doubted.alternatives]
    # below the model's doubt minimum, or with no doubt section, the rule's confidence stands
    for undoubted in (classify(TURNED, doubting(doubt_min=0.95)), classify(TURNED, doubting(doubt_min=None))):
        assert (undoubted.confidence, undoubted.finding) == (sure.confidence, sure.finding)


def test_the_shape_never_doubts_an_answer_that_is_no_curve_reading() -> None:
    text = TURNED + "\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB"
    assert classify(text, doubting()).confidence == classify(text, None).confidence


def test_the_bundled_model_doubts_from_a_fitted_minimum_and_never_raises_a_confidence() -> None:
    model = load_shape_model(BUNDLED)
    assert model is not None and model.doubt_min is not None and model.doubt_curve is not None
    assert 0.0 < model.doubt_min < 1.0
    assert max(y for _, y in model.doubt_curve.points) < 0.95  # where it doubts, a rule's reading is no proof
