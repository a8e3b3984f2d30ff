"""Fit the text model (knowledge/text_model/model.json) on the train split, the dev corpus and the hand-written cases.

Run after the corpus grows (scikit-learn is in the `fit` extra, not needed at run time):
    .venv/bin/pip install -e '.[fit]' && .venv/bin/python benchmarks/fit_text_model.py
The test split is never read here. `--cross-validate` first prints how the model does on sources it has not seen:
each harvest of the train split (hA, hB, ...) held out in turn, fitted on the rest.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_accuracy import SPLITS, load_cases  # noqa: E402

from bot.diagnosis.knowledge import default_knowledge_dir  # noqa: E402
from bot.diagnosis.text_model import MODEL_FILE, load_text_model  # noqa: E402

FIT_ON = ("train", "dev", "handwritten")
TOKEN_PATTERN = r"[A-Za-z_][A-Za-z0-9_]+"
MAX_TERMS = 5000
STRENGTH = 10.0  # inverse regularisation (C); chosen by the held-out-harvest figures below, on train only
DIGITS = 4
CHECKS = 12


def vectoriser() -> TfidfVectorizer:
    return TfidfVectorizer(
        token_pattern=TOKEN_PATTERN, ngram_range=(1, 2), min_df=2, sublinear_tf=True, max_features=MAX_TERMS
    )


def fit(texts: list[str], labels: list[str]) -> tuple[TfidfVectorizer, LogisticRegression]:
    vec = vectoriser()
    matrix = vec.fit_transform(texts)
    model = LogisticRegression(C=STRENGTH, max_iter=5000)
    model.fit(matrix, labels)
    return vec, model


def cross_validate(cases: list[dict], extra: list[dict]) -> None:
    groups = sorted({case["id"][:2] for case in cases})
    right = top3 = 0
    for group in groups:
        held = [c for c in cases if c["id"][:2] == group]
        rest = [c for c in cases if c["id"][:2] != group] + extra
        vec, model = fit([c["text"] for c in rest], [c["class"] for c in rest])
        probabilities = model.predict_proba(vec.transform([c["text"] for c in held]))
        for case, row in zip(held, probabilities, strict=True):
            ranked = [model.classes_[i] for i in np.argsort(-row)[:3]]
            right += ranked[0] == case["class"]
            top3 += case["class"] in ranked
    n = len(cases)
    print(f"held-out harvests ({len(groups)}): top-1 {right / n:.3f}  top-3 {top3 / n:.3f}  ({n} cases)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cross-validate", action="store_true")
    args = parser.parse_args()
    train = load_cases(SPLITS["train"])
    extra = [case for split in FIT_ON[1:] for case in load_cases(SPLITS[split])]
    if args.cross_validate:
        cross_validate(train, extra)
    cases = train + extra
    vec, model = fit([c["text"] for c in cases], [c["class"] for c in cases])
    classes = [str(c) for c in model.classes_]
    idf = vec.idf_
    terms = {
        term: [round(float(idf[column]), DIGITS)] + [round(float(x), DIGITS) for x in model.coef_[:, column]]
        for term, column in sorted(vec.vocabulary_.items())
    }
    step = max(1, len(cases) // CHECKS)
    samples = [cases[i]["text"] for i in range(0, len(cases), step)][:CHECKS]
    checks = [
        {"text": text, "probabilities": [round(float(p), 6) for p in row]}
        for text, row in zip(samples, model.predict_proba(vec.transform(samples)), strict=True)
    ]
    counts = {split: len(load_cases(SPLITS[split])) for split in FIT_ON}
    document = {
        "about": "TF-IDF (words and word pairs) + multinomial logistic regression; see bot/diagnosis/text_model.py",
        "fitted_on": counts,
        "token_pattern": TOKEN_PATTERN,
        "classes": classes,
        "intercept": [round(float(x), DIGITS) for x in model.intercept_],
        "terms": terms,
        "checks": checks,
    }
    path = default_knowledge_dir() / MODEL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8")
    load_text_model(path)  # the reader reproduces the fitted probabilities, or this fails
    print(f"wrote {path.relative_to(ROOT)}: {len(terms)} terms x {len(classes)} classes, fitted on {counts}")


if __name__ == "__main__":
    main()
