"""Judge confidence-calibration choices on train alone: each harvest held out in turn, side by side.

Run: .venv/bin/python benchmarks/judge_calibration.py   (needs the git history; about ten minutes)

The test split is the one measure of logs the rules were not written from, and a calibration choice tried on it
first is chosen on it. This judge fits the confidence curves (fit_calibration.fit_curves) with five folds of
harvests left out - their first-sight records (benchmarks/first_sight.py) and their cases' scores today - and states
each left-out first-sight answer's confidence with them, as the classifier does. It prints the calibration error
of those answers for every choice of which curves read posted logs only (first_sight.posted): over all of them, the
posted ones, and the posted ones of the newest third of harvests (scored by knowledge bases nearest today's).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_accuracy import SPLITS, load_cases  # noqa: E402
from first_sight import collect  # noqa: E402
from fit_calibration import FIT_ON, first_sight_pairs, fit_curves  # noqa: E402

from bot.diagnosis.calibration import Calibration, Curve  # noqa: E402
from bot.diagnosis.class_scores import DECISION_FLOOR  # noqa: E402
from bot.diagnosis.classifier import UNKNOWN_CAP, Classifier  # noqa: E402
from bot.diagnosis.knowledge import load_knowledge  # noqa: E402
from bot.diagnosis.knowledge_schema import UNKNOWN  # noqa: E402
from bot.intake.log_input import text_to_lines  # noqa: E402

FOLDS = 5
CHOICES = {  # which curves read the first sight of posted logs only
    "none (all first sight)": (),
    "diagnosis, generic": ("diagnosis", "generic"),
    "diagnosis, generic, unknown": ("diagnosis", "generic", "unknown"),
}
BINS = ((0.0, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01))


def today_scores() -> list[tuple[str, float, bool]]:
    """(id, raw score, right?) of today's rule answers naming a class, on train and dev (what fit_curves reads)."""
    kb = load_knowledge()
    kb.calibration = Calibration()
    classifier = Classifier(kb)
    scores = []
    for split in FIT_ON:
        for case in load_cases(SPLITS[split]):
            result = classifier.classify(text_to_lines(case["text"]))
            if result.failure_class != UNKNOWN and result.basis == "rules":
                scores.append((case["id"], result.confidence, result.failure_class == case["class"]))
    return scores


def stater(curves: dict[str, list[list[float]]], generic_classes: set[str]) -> Callable[[dict], float]:
    """The confidence the classifier states for a first-sight record's answer with these curves (its own rules:
    bot/diagnosis/classifier.py - a catch-all's curve never below the floor, `unknown` never above its cap)."""
    diagnosis, unknown, generic = (
        Curve(tuple((x, y) for x, y in curves[name])) for name in ("diagnosis", "unknown", "generic")
    )

    def stated(record: dict) -> float:
        raw = record["confidence"]
        if record["answer"] == UNKNOWN:
            return min(UNKNOWN_CAP, unknown(1 - record["best_alternative"] / 0.8))
        if record["answer"] in generic_classes:
            return max(min(DECISION_FLOOR, diagnosis(raw)), generic(raw))
        return diagnosis(raw)

    return stated


def calibration_error(pairs: list[tuple[float, bool]]) -> tuple[float, str]:
    error, shown = 0.0, []
    for low, high in BINS:
        in_bin = [(p, right) for p, right in pairs if low <= p < high]
        if in_bin:
            stated = sum(p for p, _ in in_bin) / len(in_bin)
            right = sum(r for _, r in in_bin) / len(in_bin)
            error += len(in_bin) * abs(stated - right)
            shown.append(f"{low:.1f}-{min(high, 1.0):.1f} {len(in_bin)}/{stated:.2f}/{right:.2f}")
    return (error / len(pairs) if pairs else 0.0), "  ".join(shown)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    generic_classes = {c.id for c in load_knowledge() if c.generic}
    today = today_scores()
    records = collect(report=False)
    harvests = list(dict.fromkeys(r["scored_by"] for r in records))  # oldest first
    newest = set(harvests[2 * len(harvests) // 3 :])
    print(f"{len(records)} first-sight records, {len(harvests)} harvests in {FOLDS} folds; bins: answers/stated/right")
    for name, posted_only in CHOICES.items():
        stated_all: list[tuple[dict, float]] = []
        for fold in range(FOLDS):
            held = {h for i, h in enumerate(harvests) if i % FOLDS == fold}
            held_ids = {r["id"] for r in records if r["scored_by"] in held}
            curves = fit_curves(
                [(raw, right) for case_id, raw, right in today if case_id not in held_ids],
                first_sight_pairs([r for r in records if r["scored_by"] not in held], generic_classes, posted_only),
            )
            stated = stater(curves, generic_classes)
            stated_all += [(r, stated(r)) for r in records if r["scored_by"] in held]
        for subset, keep in (
            ("all", lambda r: True),
            ("posted", lambda r: r["posted"]),
            ("posted, newest third", lambda r: r["posted"] and r["scored_by"] in newest),
        ):
            pairs = [(p, r["right"]) for r, p in stated_all if keep(r)]
            error, shown = calibration_error(pairs)
            print(f"{name:28s} {subset:21s} {len(pairs):5d}  error {error:.3f}  {shown}")


if __name__ == "__main__":
    main()
