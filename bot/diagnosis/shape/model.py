"""The shape model: gradient-boosted trees that read a training curve's shape (bot.diagnosis.shape.features) as
underfitting, overfitting or a healthy run, where no rule judged the curve.

It is data, not code: knowledge/shape_model/model.json holds, for each boosting stage, one regression tree per
class (the learning rate already folded into its leaves) and the starting score of each class, fitted by
benchmarks/fit_shape_model.py on the train split, the dev corpus and the hand-written cases (never the test split).
A class's score is its start plus the leaf each of its trees sends the row to; probabilities are their softmax. The
file names the features it was fitted on (loading fails unless they are this code's) and carries examples with the
probabilities the fitting library gave them (loading fails unless this reader reproduces them).

`answer` says when the model may answer for the rules - from what probability of its likeliest class other than
`unknown` - and with what confidence: a curve fitted on held-out answers, kept below a rule's proof. `doubt` says
when the model's reading of a healthy run lowers the confidence of a rule's curve answer, and to what: a curve of
how often such answers were right, fitted on held-out readings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.diagnosis.calibration import Curve
from bot.diagnosis.model_files import answer_section, finite_numbers, read_model_file
from bot.diagnosis.shape.features import FEATURES
from bot.errors import KnowledgeBaseError

SHAPE_MODEL_FILE = "shape_model/model.json"  # inside the knowledge directory
CHECK_TOLERANCE = 1e-4  # leaves are stored rounded; the examples' probabilities must agree this closely
_LEAF = -1  # a node with no children


@dataclass(frozen=True)
class Tree:
    """One regression tree: node i splits on row[feature[i]] <= threshold[i] (left) or not (right)."""

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    value: tuple[float, ...]

    def leaf(self, row: Sequence[float]) -> float:
        node = 0
        while self.left[node] != _LEAF:
            node = self.left[node] if row[self.feature[node]] <= self.threshold[node] else self.right[node]
        return self.value[node]


@dataclass(frozen=True)
class ShapeModel:
    classes: tuple[str, ...]
    start: tuple[float, ...]  # each class's score before any tree
    stages: tuple[tuple[Tree, ...], ...]  # one tree per class in each stage
    answer_min: float  # the probability from which the model answers for the rules
    answer_curve: Curve  # that answer's confidence, by probability
    # from what probability of a healthy run the model doubts a rule's curve answer, and that answer's confidence
    # then, by 1 - that probability (the file's optional `doubt` section; None: it never doubts)
    doubt_min: float | None = None
    doubt_curve: Curve | None = None

    def probabilities(self, row: Sequence[float]) -> dict[str, float]:
        scores = list(self.start)
        for trees in self.stages:
            for i, tree in enumerate(trees):
                scores[i] += tree.leaf(row)
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = sum(exps)
        return {cls: e / total for cls, e in zip(self.classes, exps, strict=True)}


def load_shape_model(path: Path) -> ShapeModel | None:
    """The model in `path`, checked against its own examples; None when the file does not exist.

    Raises:
        KnowledgeBaseError: the file is malformed, was fitted on other features, or this reader does not reproduce
            its examples.
    """
    raw = read_model_file(path)
    if raw is None:
        return None
    where = str(path)
    if raw.get("features") != list(FEATURES):
        raise KnowledgeBaseError(
            where, "features", "fitted on other curve features than bot/diagnosis/shape/features.py reads: refit it"
        )
    model = _parse(where, raw)
    checks = raw.get("checks")
    if not isinstance(checks, list) or not checks:
        raise KnowledgeBaseError(where, "checks", "at least one example with its fitted probabilities is required")
    for n, check in enumerate(checks):
        row, expected = (check.get("row"), check.get("probabilities")) if isinstance(check, dict) else (None, None)
        if not finite_numbers(row, len(FEATURES)) or not finite_numbers(expected, len(model.classes)):
            raise KnowledgeBaseError(where, f"checks[{n}]", "needs a row of features and one probability per class")
        got = model.probabilities(row)
        worst = max(abs(got[c] - float(p)) for c, p in zip(model.classes, expected, strict=True))
        if worst > CHECK_TOLERANCE:
            raise KnowledgeBaseError(
                where, f"checks[{n}]", f"this reader gives probabilities {worst:.5f} away from the fitted model's"
            )
    return model


def _parse(where: str, raw: dict) -> ShapeModel:
    classes = raw.get("classes")
    if not isinstance(classes, list) or len(classes) < 2 or not all(isinstance(c, str) and c for c in classes):
        raise KnowledgeBaseError(where, "classes", "must list at least two class ids")
    if len(set(classes)) != len(classes) or "unknown" not in classes:
        raise KnowledgeBaseError(where, "classes", "must list each class once, `unknown` among them")
    width = len(classes)
    if not finite_numbers(raw.get("start"), width):
        raise KnowledgeBaseError(where, "start", f"must be {width} numbers")
    stages_raw = raw.get("stages")
    if not isinstance(stages_raw, list) or not stages_raw:
        raise KnowledgeBaseError(where, "stages", "must list the boosting stages")
    stages = []
    for s, stage in enumerate(stages_raw):
        if not isinstance(stage, list) or len(stage) != width:
            raise KnowledgeBaseError(where, f"stages[{s}]", f"must hold {width} trees, one per class")
        stages.append(tuple(_tree(where, f"stages[{s}][{c}]", tree) for c, tree in enumerate(stage)))
    minimum, curve = answer_section(where, raw.get("answer"))
    doubt_min, doubt_curve = (None, None) if "doubt" not in raw else answer_section(where, raw["doubt"], "doubt")
    start = tuple(float(x) for x in raw["start"])
    return ShapeModel(tuple(classes), start, tuple(stages), minimum, curve, doubt_min, doubt_curve)


def _tree(where: str, field: str, raw: object) -> Tree:
    """A tree from its five node arrays, every child index pointing forward inside it (no cycle, no gap)."""
    keys = ("feature", "threshold", "left", "right", "value")
    if not isinstance(raw, dict) or set(raw) != set(keys):
        raise KnowledgeBaseError(where, field, f"a tree is an object of the node arrays {', '.join(keys)}")
    size = len(raw["value"]) if isinstance(raw["value"], list) else 0
    if size == 0 or not all(finite_numbers(raw[key], size) for key in keys):
        raise KnowledgeBaseError(where, field, "node arrays of one length, numbers only")
    feature, left, right = ([int(x) for x in raw[key]] for key in ("feature", "left", "right"))
    for node in range(size):
        leaf = left[node] == _LEAF
        if leaf != (right[node] == _LEAF):
            raise KnowledgeBaseError(where, field, f"node {node} has one child")
        if not leaf and not (
            node < left[node] < size and node < right[node] < size and 0 <= feature[node] < len(FEATURES)
        ):
            raise KnowledgeBaseError(where, field, f"node {node} points outside the tree or the features")
    threshold, value = tuple(map(float, raw["threshold"])), tuple(map(float, raw["value"]))
    return Tree(tuple(feature), threshold, tuple(left), tuple(right), value)
