"""Classifier accuracy on the labelled corpus: per split, as plain text and as a LogEntry JSON array.

Run: ./dev bench   (or .venv/bin/python benchmarks/bench_accuracy.py [--cases FILE ...])

Splits (tests/fixtures/corpus/): `train` (rules may be written from it), `test` (frozen: never read to write a
rule; its figures are the ones README reports), plus the shared `dev` corpus and the hand-written cases.
For each split and form it prints per-class precision / recall / F1, macro-F1, top-1, top-3, the answers that
were wrong at confidence >= 0.8, and a calibration table (confidence bin -> answers, share right).
Baselines, measured side by side in the same run: a keyword matcher (one phrase list per class, first hit wins), and
the rules alone (the knowledge base without its text and shape models, which answer only where the rules are silent
and fill the alternatives).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.diagnosis.classifier import Classifier  # noqa: E402
from bot.diagnosis.knowledge import CLASS_IDS, load_knowledge  # noqa: E402
from bot.intake.log_input import parse_log_text, text_to_lines  # noqa: E402
from bot.models import Diagnosis  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
SPLITS = {
    "test": FIXTURES / "corpus" / "test.jsonl",
    "train": FIXTURES / "corpus" / "train.jsonl",
    "dev": FIXTURES / "corpus_dev.jsonl",
    "handwritten": FIXTURES / "cases_handwritten.jsonl",
}
CONFIDENT = 0.8
BINS = ((0.0, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01))


def load_cases(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def as_log_entries(text: str, job_id: str = "1234567890123456789") -> str:
    """The case as `gcloud logging read --format=json` prints it: a JSON array of LogEntry, newest first."""
    start = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    entries = []
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        entries.append(
            {
                "insertId": f"id{i:06d}",
                "logName": "projects/demo-project/logs/workerpool0-0",
                "receiveTimestamp": (start + timedelta(milliseconds=i + 1)).isoformat().replace("+00:00", "Z"),
                "resource": {
                    "labels": {"job_id": job_id, "project_id": "demo-project", "task_name": "workerpool0-0"},
                    "type": "ml_job",
                },
                "severity": "ERROR" if "error" in line.lower() else "INFO",
                "textPayload": line,
                "timestamp": (start + timedelta(milliseconds=i)).isoformat().replace("+00:00", "Z"),
            }
        )
    return json.dumps(list(reversed(entries)), indent=2)


@dataclass
class Answer:
    expected: str
    predicted: str
    confidence: float
    top3: list[str]


def diagnose_case(classifier: Classifier, case: dict, form: str) -> Diagnosis:
    if form == "entries":
        return classifier.classify(parse_log_text(as_log_entries(case["text"])))
    return classifier.classify(text_to_lines(case["text"]))


def answers_for(classifier: Classifier, cases: list[dict], form: str = "text") -> list[Answer]:
    out = []
    for case in cases:
        diagnosis = diagnose_case(classifier, case, form)
        ranked = [diagnosis.failure_class] + [a.failure_class for a in diagnosis.alternatives]
        out.append(Answer(case["class"], diagnosis.failure_class, diagnosis.confidence, ranked[:3]))
    return out


@dataclass
class Report:
    n: int
    top1: float
    top3: float
    macro_f1: float
    confident_wrong: int
    per_class: dict[str, tuple[float, float, float, float, int]]  # precision, recall, f1, top-3 recall, support
    calibration: list[tuple[str, int, float, float]]  # bin, answers, mean confidence, share right
    ece: float  # expected calibration error


def score(answers: list[Answer]) -> Report:
    n = len(answers) or 1
    top1 = sum(a.predicted == a.expected for a in answers) / n
    top3 = sum(a.expected in a.top3 for a in answers) / n
    per_class = {}
    f1s = []
    for cls in CLASS_IDS:
        tp = sum(a.predicted == cls and a.expected == cls for a in answers)
        fp = sum(a.predicted == cls and a.expected != cls for a in answers)
        support = sum(a.expected == cls for a in answers)
        if not support and not fp:
            continue
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / support if support else 0.0
        in_top3 = sum(a.expected == cls and cls in a.top3 for a in answers) / support if support else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class[cls] = (precision, recall, f1, in_top3, support)
        if support:
            f1s.append(f1)
    calibration = []
    ece = 0.0
    for low, high in BINS:
        inside = [a for a in answers if low <= a.confidence < high]
        if not inside:
            continue
        mean_conf = sum(a.confidence for a in inside) / len(inside)
        right = sum(a.predicted == a.expected for a in inside) / len(inside)
        calibration.append((f"{low:.1f}-{min(high, 1.0):.1f}", len(inside), mean_conf, right))
        ece += len(inside) / n * abs(mean_conf - right)
    return Report(
        n=len(answers),
        top1=top1,
        top3=top3,
        macro_f1=sum(f1s) / len(f1s) if f1s else 0.0,
        confident_wrong=sum(a.predicted != a.expected and a.confidence >= CONFIDENT for a in answers),
        per_class=per_class,
        calibration=calibration,
        ece=ece,
    )


# --- baseline: an afternoon's keyword matcher, measured in the same run --------------------------------------
KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("accelerator_oom", ("cuda out of memory", "outofmemoryerror", "resource_exhausted: out of memory", "hbm")),
    ("quota_exhausted", ("quota", "resource_exhausted", "stockout", "insufficient")),
    ("permission_denied", ("permission", "403", "access denied", "accessdenied", "forbidden", "unauthorized")),
    ("host_oom", ("killed", "oomkilled", "memoryerror", "exit code 137", "sigkill")),
    ("numerical_instability", ("nan", "inf loss", "overflow")),
    ("preemption", ("preempt", "spot", "maintenance", "sigterm")),
    ("distributed_setup", ("nccl", "rendezvous", "gloo", "collective", "deadline_exceeded")),
    ("container_startup", ("no module named", "imagepull", "entrypoint", "exec format", "errimagepull")),
    ("input_pipeline", ("dataloader", "end of sequence", "truncated", "tfrecord", "shm")),
    ("overfitting", ("overfit", "val_loss increas")),
    ("underfitting", ("not decreasing", "underfit")),
    ("application_error", ("traceback", "error")),
)


def keyword_answers(cases: list[dict]) -> list[Answer]:
    out = []
    for case in cases:
        text = case["text"].lower()
        hits = [cls for cls, words in KEYWORDS if any(w in text for w in words)]
        predicted = hits[0] if hits else "unknown"
        out.append(Answer(case["class"], predicted, 0.5, (hits + ["unknown"])[:3]))
    return out


def print_report(
    title: str, report: Report, baseline: Report | None = None, rules_alone: Report | None = None
) -> None:
    print(f"\n== {title}: {report.n} cases")
    line = (
        f"top-1 {report.top1:.3f}  top-3 {report.top3:.3f}  macro-F1 {report.macro_f1:.3f}  "
        f"wrong at >= {CONFIDENT}: {report.confident_wrong}  calibration error {report.ece:.3f}"
    )
    print(line)
    if rules_alone is not None:
        print(
            f"rules alone (no text or shape model): top-1 {rules_alone.top1:.3f}  top-3 {rules_alone.top3:.3f}  "
            f"macro-F1 {rules_alone.macro_f1:.3f}"
        )
    if baseline is not None:
        print(
            f"baseline (keyword matcher): top-1 {baseline.top1:.3f}  top-3 {baseline.top3:.3f}  "
            f"macro-F1 {baseline.macro_f1:.3f}"
        )
    print(f"  {'class':<22} {'prec':>5} {'recall':>6} {'F1':>5} {'top-3':>5} {'n':>4}")
    for cls, (p, r, f, t3, s) in report.per_class.items():
        print(f"  {cls:<22} {p:5.2f} {r:6.2f} {f:5.2f} {t3:5.2f} {s:4d}")
    print(f"  {'confidence':<12} {'answers':>7} {'mean conf':>9} {'right':>6}")
    for label, count, mean_conf, right in report.calibration:
        print(f"  {label:<12} {count:7d} {mean_conf:9.2f} {right:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", type=Path, help="extra JSONL case files to score")
    parser.add_argument("--splits", nargs="*", default=list(SPLITS), help="which splits (default: all)")
    parser.add_argument("--misses", action="store_true", help="list the misses (never on the test split)")
    args = parser.parse_args()
    classifier = Classifier(load_knowledge())
    kb_rules = load_knowledge(shape_model=False)
    kb_rules.text_model = None
    rules_classifier = Classifier(kb_rules)
    sets = [(name, load_cases(SPLITS[name])) for name in args.splits]
    sets += [(str(path), load_cases(path)) for path in args.cases or ()]
    for name, cases in sets:
        if not cases:
            print(f"\n== {name}: no cases")
            continue
        for form in ("text", "entries"):
            answers = answers_for(classifier, cases, form)
            baseline = score(keyword_answers(cases)) if form == "text" else None
            rules_alone = score(answers_for(rules_classifier, cases, form)) if form == "text" else None
            print_report(
                f"{name} ({'plain text' if form == 'text' else 'LogEntry JSON, newest first'})",
                score(answers),
                baseline,
                rules_alone,
            )
            if args.misses and name != "test" and form == "text":
                for case, answer in zip(cases, answers, strict=True):
                    if answer.predicted != answer.expected:
                        print(
                            f"   MISS {case['id']}: {answer.expected} -> {answer.predicted} "
                            f"{answer.confidence:.2f} top3={answer.top3}"
                        )


if __name__ == "__main__":
    main()
