"""Fit the text model (knowledge/text_model/model.json) on the train split, the dev corpus and the hand-written cases.

Run after the corpus grows (scikit-learn is in the `fit` extra, not needed at run time):
    .venv/bin/pip install -e '.[fit]' && .venv/bin/python benchmarks/fit_text_model.py
The test split is never read here. `--cross-validate` first prints how the model does on sources it has not seen:
each harvest of the train split (hA, hB, ...) held out in turn, fitted on the rest. The same held-out answers fit
when the model may answer for the rules (`answer` in the file; needs the git history, see answer_curve).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_accuracy import SPLITS, load_cases  # noqa: E402
from first_sight import collect  # noqa: E402

from bot.diagnosis.calibration import Curve, fit_isotonic  # noqa: E402
from bot.diagnosis.facts import derive_facts  # noqa: E402
from bot.diagnosis.knowledge import default_knowledge_dir, load_knowledge  # noqa: E402
from bot.diagnosis.knowledge_schema import UNKNOWN  # noqa: E402
from bot.diagnosis.words.text_model import MODEL_FILE, TextModel, load_text_model, model_text  # noqa: E402
from bot.diagnosis.words.word_evidence import WordReader  # noqa: E402
from bot.intake.log_document import LogDocument  # noqa: E402
from bot.intake.log_input import text_to_lines  # noqa: E402

FIT_ON = ("train", "dev", "handwritten")
TOKEN_PATTERN = r"[A-Za-z_][A-Za-z0-9_]+"
MAX_TERMS = 5000
STRENGTH = 10.0  # inverse regularisation (C); chosen by the held-out-harvest figures below, on train only
DIGITS = 4
CHECKS = 12
ANSWER_MIN = 0.4  # the model answers for the rules from this probability (held-out first-sight figures, train only)
ANSWER_CAP = 0.75  # words alone never claim the confidence of a rule's proof (0.8 and above)


def vectoriser() -> TfidfVectorizer:
    return TfidfVectorizer(
        token_pattern=TOKEN_PATTERN, ngram_range=(1, 2), min_df=2, sublinear_tf=True, max_features=MAX_TERMS
    )


def read(case: dict) -> str:
    """A case's text as the classifier's text model reads it at run time (bot.diagnosis.words.text_model.model_text)."""
    return model_text([line.text for line in text_to_lines(case["text"])])


def fit(texts: list[str], labels: list[str]) -> tuple[TfidfVectorizer, LogisticRegression]:
    vec = vectoriser()
    matrix = vec.fit_transform(texts)
    model = LogisticRegression(C=STRENGTH, max_iter=5000)
    model.fit(matrix, labels)
    return vec, model


def in_memory(vec: TfidfVectorizer, model: LogisticRegression) -> TextModel:
    """The fitted model as bot.diagnosis.words.text_model reads it, answering for the rules from ANSWER_MIN."""
    idf = vec.idf_
    terms = {
        term: (float(idf[column]), tuple(float(x) for x in model.coef_[:, column]))
        for term, column in vec.vocabulary_.items()
    }
    intercept = tuple(float(x) for x in model.intercept_)
    classes = tuple(str(c) for c in model.classes_)
    return TextModel(classes, intercept, terms, re.compile(TOKEN_PATTERN), ANSWER_MIN, Curve(((0.0, 0.5),)))


def held_out(
    cases: list[dict], extra: list[dict], first: dict[str, dict]
) -> tuple[dict[str, list[tuple[str, float]]], list[tuple[float, bool, bool]]]:
    """Each train case's three likeliest classes by a model fitted without its harvest (hA, hB, ...); and, for the
    cases the rules answered `unknown` at first sight, the answer that held-out model gives for the rules as the
    classifier would (bot.diagnosis.words.word_evidence, the running-job condition included): (probability, right,
    a truly healthy log called a failure)."""
    kb = load_knowledge()
    ranked: dict[str, list[tuple[str, float]]] = {}
    answers: list[tuple[float, bool, bool]] = []
    for group in sorted({case["id"][:2] for case in cases}):
        held = [c for c in cases if c["id"][:2] == group]
        rest = [c for c in cases if c["id"][:2] != group] + extra
        vec, model = fit([read(c) for c in rest], [c["class"] for c in rest])
        probabilities = model.predict_proba(vec.transform([read(c) for c in held]))
        for case, row in zip(held, probabilities, strict=True):
            ranked[case["id"]] = [(str(model.classes_[i]), float(row[i])) for i in np.argsort(-row)[:3]]
        text_model = in_memory(vec, model)
        for case in held:
            if first.get(case["id"], {}).get("answer") != UNKNOWN:
                continue
            doc = LogDocument([line for line in text_to_lines(case["text"]) if line.text.strip()])
            if {"steps_logged", "no_error_lines"} <= derive_facts(doc, None)[0]:
                continue  # a running job's chatter: the classifier lets no words answer there
            reader = WordReader(text_model, doc)
            answer = reader.answer(kb)
            if answer is not None:
                name = answer.failure_class.id
                answers.append((reader.probabilities[name], name == case["class"], case["class"] == UNKNOWN))
    return ranked, answers


def cross_validate(cases: list[dict], ranked: dict[str, list[tuple[str, float]]]) -> None:
    right = sum(ranked[c["id"]][0][0] == c["class"] for c in cases)
    top3 = sum(c["class"] in [name for name, _ in ranked[c["id"]]] for c in cases)
    n, groups = len(cases), len({case["id"][:2] for case in cases})
    print(f"held-out harvests ({groups}): top-1 {right / n:.3f}  top-3 {top3 / n:.3f}  ({n} cases)")


def answer_curve(answers: list[tuple[float, bool, bool]]) -> dict:
    """When the model may answer for the rules, and how often it is then right.

    The rules answer `unknown` when no class has evidence enough. There the model may name a class (see
    bot/diagnosis/words/word_evidence.py for the conditions). The confidence is fitted on the train cases the rules
    answered `unknown` at first sight (benchmarks/first_sight.py), each read by a model that never saw its harvest,
    under the classifier's own conditions; capped at ANSWER_CAP.
    """
    pairs = [(probability, right) for probability, right, _ in answers]
    curve = [[x, min(y, ANSWER_CAP)] for x, y in fit_isotonic(pairs)]
    right, healthy = sum(r for _, r, _ in answers), sum(h for _, _, h in answers)
    print(
        f"answers for the rules' unknown (first sight, held out): {len(answers)}, right {right}, "
        f"truly healthy logs called a failure {healthy}; curve {curve}"
    )
    fitted_on = f"{len(answers)} held-out first-sight answers, {right} right"
    return {"min_probability": ANSWER_MIN, "curve": curve, "fitted_on": fitted_on}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cross-validate", action="store_true")
    args = parser.parse_args()
    train = load_cases(SPLITS["train"])
    extra = [case for split in FIT_ON[1:] for case in load_cases(SPLITS[split])]
    first = {record["id"]: record for record in collect(report=False)}
    ranked, answers = held_out(train, extra, first)
    if args.cross_validate:
        cross_validate(train, ranked)
    answer = answer_curve(answers)
    cases = train + extra
    vec, model = fit([read(c) for c in cases], [c["class"] for c in cases])
    classes = [str(c) for c in model.classes_]
    idf = vec.idf_
    terms = {
        term: [round(float(idf[column]), DIGITS)] + [round(float(x), DIGITS) for x in model.coef_[:, column]]
        for term, column in sorted(vec.vocabulary_.items())
    }
    step = max(1, len(cases) // CHECKS)
    samples = [read(cases[i]) for i in range(0, len(cases), step)][:CHECKS]
    checks = [
        {"text": text, "probabilities": [round(float(p), 6) for p in row]}
        for text, row in zip(samples, model.predict_proba(vec.transform(samples)), strict=True)
    ]
    counts = {split: len(load_cases(SPLITS[split])) for split in FIT_ON}
    document = {
        "about": (
            "TF-IDF (words and word pairs) + multinomial logistic regression; see bot/diagnosis/words/text_model.py"
        ),
        "fitted_on": counts,
        "token_pattern": TOKEN_PATTERN,
        "classes": classes,
        "intercept": [round(float(x), DIGITS) for x in model.intercept_],
        "terms": terms,
        "checks": checks,
        "answer": answer,
    }
    path = default_knowledge_dir() / MODEL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
    load_text_model(path)  # the reader reproduces the fitted probabilities, or this fails
    print(f"wrote {path.relative_to(ROOT)}: {len(terms)} terms x {len(classes)} classes, fitted on {counts}")


if __name__ == "__main__":
    main()
