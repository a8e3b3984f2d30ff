"""A linear text model of the failure classes, learned from the train split: words that rules do not name yet.

The rules (knowledge/*.yaml) decide; this model only speaks where they are silent or short of candidates:
it fills the ranked alternatives up to three and may name a class when no rule matched at all (see the
classifier). It is data, not code: knowledge/text_model/model.json holds the vocabulary with its idf weights, one
coefficient per class and term, and the intercepts, fitted by benchmarks/fit_text_model.py on the train split,
the shared dev corpus and the hand-written cases only (never the test split).

Features are those of a TF-IDF vectoriser: lower-cased word tokens (a letter or underscore, then letters, digits
or underscores) and pairs of neighbouring tokens, counted per document, sublinear term frequency (1 + ln tf)
times idf, L2-normalised; scores are a softmax over intercept + features x coefficients. The file carries
examples with the probabilities the fitting library gave them: loading fails unless this code reproduces them,
so the fitter and this reader cannot drift apart.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.diagnosis.calibration import Curve
from bot.diagnosis.model_files import answer_section, finite_numbers, read_model_file
from bot.errors import KnowledgeBaseError

MODEL_FILE = "text_model/model.json"  # inside the knowledge directory
MAX_LINES = 400  # the model reads the end of a log, where a failure is told (a 100k-line log stays cheap)
CHECK_TOLERANCE = 1e-3  # coefficients are stored rounded; the examples' probabilities must agree this closely


def model_text(texts: Sequence[str]) -> str:
    """What the model reads of a log: its last MAX_LINES non-blank lines as the classifier holds them (collector
    prefixes taken off), joined. The fitter reads a corpus case through this too, so both see the same words."""
    kept = [text for text in texts if text.strip()]
    return "\n".join(kept[-MAX_LINES:])


@dataclass(frozen=True)
class TextModel:
    classes: tuple[str, ...]
    intercept: tuple[float, ...]
    terms: dict[str, tuple[float, tuple[float, ...]]]  # term -> (idf, one coefficient per class)
    token_pattern: re.Pattern[str]
    # when the model may answer for the rules (their answer `unknown`): from this probability of its likeliest
    # class, with this calibrated confidence; None: it never answers, it only fills alternatives
    answer_min: float | None = None
    answer_curve: Curve | None = None

    def _grams(self, text: str) -> list[str]:
        tokens = self.token_pattern.findall(text.lower())
        return tokens + [f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False)]

    def features(self, text: str) -> dict[str, float]:
        """The document's TF-IDF vector over the model's vocabulary (terms outside it are dropped)."""
        counts = Counter(gram for gram in self._grams(text) if gram in self.terms)
        weights = {term: (1.0 + math.log(n)) * self.terms[term][0] for term, n in counts.items()}
        norm = math.sqrt(sum(w * w for w in weights.values()))
        return {term: w / norm for term, w in weights.items()} if norm else {}

    def probabilities(self, text: str) -> dict[str, float]:
        logits = list(self.intercept)
        for term, weight in self.features(text).items():
            for i, coefficient in enumerate(self.terms[term][1]):
                logits[i] += weight * coefficient
        top = max(logits)
        exps = [math.exp(x - top) for x in logits]
        total = sum(exps)
        return {cls: e / total for cls, e in zip(self.classes, exps, strict=True)}

    def supporting_lines(self, lines: Sequence[str], failure_class: str, limit: int = 2) -> list[int]:
        """Indexes of the lines whose words speak most for the class (positive support only), best first."""
        if failure_class not in self.classes:
            return []
        column = self.classes.index(failure_class)
        scored = []
        for index, text in enumerate(lines):
            grams = {gram for gram in self._grams(text) if gram in self.terms}
            support = sum(self.terms[gram][0] * self.terms[gram][1][column] for gram in grams)
            if support > 0:
                scored.append((-support, index))
        return [index for _, index in sorted(scored)[:limit]]


def load_text_model(path: Path) -> TextModel | None:
    """The model in `path`, checked against its own examples; None when the file does not exist.

    Raises:
        KnowledgeBaseError: the file is malformed or this reader does not reproduce its examples.
    """
    raw = read_model_file(path)
    if raw is None:
        return None
    where = str(path)
    model = _parse(where, raw)
    for n, check in enumerate(raw.get("checks") or []):
        if not isinstance(check, dict) or not isinstance(check.get("text"), str):
            raise KnowledgeBaseError(where, f"checks[{n}]", "must be an object with a text and probabilities")
        expected = check.get("probabilities")
        if not isinstance(expected, list) or len(expected) != len(model.classes):
            raise KnowledgeBaseError(where, f"checks[{n}]", "needs one probability per class")
        got = model.probabilities(check["text"])
        worst = max(abs(got[c] - float(p)) for c, p in zip(model.classes, expected, strict=True))
        if worst > CHECK_TOLERANCE:
            raise KnowledgeBaseError(
                where, f"checks[{n}]", f"this reader gives probabilities {worst:.4f} away from the fitted model's"
            )
    if not raw.get("checks"):
        raise KnowledgeBaseError(where, "checks", "at least one example with its fitted probabilities is required")
    return model


def _parse(where: str, raw: dict) -> TextModel:
    classes = raw.get("classes")
    if not isinstance(classes, list) or len(classes) < 2 or not all(isinstance(c, str) and c for c in classes):
        raise KnowledgeBaseError(where, "classes", "must list at least two class ids")
    if len(set(classes)) != len(classes):
        raise KnowledgeBaseError(where, "classes", "lists a class twice")
    width = len(classes)
    intercept = raw.get("intercept")
    if not finite_numbers(intercept, width):
        raise KnowledgeBaseError(where, "intercept", f"must be {width} numbers")
    try:
        pattern = re.compile(str(raw.get("token_pattern", "")))
    except re.error as exc:
        raise KnowledgeBaseError(where, "token_pattern", f"not a regular expression: {exc}") from exc
    if not pattern.pattern:
        raise KnowledgeBaseError(where, "token_pattern", "is required")
    terms_raw = raw.get("terms")
    if not isinstance(terms_raw, dict) or not terms_raw:
        raise KnowledgeBaseError(where, "terms", "must map each term to [idf, coefficients...]")
    terms: dict[str, tuple[float, tuple[float, ...]]] = {}
    for term, row in terms_raw.items():
        if not finite_numbers(row, width + 1) or row[0] <= 0:
            raise KnowledgeBaseError(where, f"terms.{term}", f"must be [idf > 0, then {width} coefficients]")
        terms[term] = (float(row[0]), tuple(map(float, row[1:])))
    answer_min, answer_curve = _answer(where, raw.get("answer"))
    return TextModel(tuple(classes), tuple(float(x) for x in intercept), terms, pattern, answer_min, answer_curve)


def _answer(where: str, raw: object) -> tuple[float | None, Curve | None]:
    """The `answer` section, optional here: without it the model only fills alternatives."""
    return (None, None) if raw is None else answer_section(where, raw)
