"""The train split behind what log collectors put in front of each line: top-1 per form, against the bare text.

Real logs reach the bot behind timestamps (`kubectl logs --timestamps`, TF's C++ logger in a Vertex jsonPayload),
launcher tags (torchrun `[rank0]:`, Ray `(pid=..)`, mpirun `[1,0]<stderr>:`), the gcloud log stream's
`SEVERITY<tab>TIME<tab>TASK<tab>`, `kubectl logs --prefix` and terminal colours. Each form is applied to every line
of every train case; a form that costs accuracy is a prefix bot/intake/line_prefix.py does not take off.

Run: .venv/bin/python benchmarks/probe_prefixes.py   (about two minutes; the test split is not read)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import load_knowledge
from bot.intake.log_input import parse_log_text

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT / "tests/fixtures/corpus/train.jsonl"
TASK = "workerpool0-0"


def each_line(prefix: Callable[[int, str], str]) -> Callable[[str], str]:
    return lambda text: "\n".join(prefix(i, line) for i, line in enumerate(text.split("\n")))


FORMS: dict[str, Callable[[str], str]] = {
    "bare": lambda text: text,
    "kubectl --timestamps": each_line(lambda i, line: f"2026-11-30T10:{i // 60 % 60:02d}:{i % 60:02d}.1234Z {line}"),
    "TF C++ logger time": each_line(lambda i, line: f"2026-11-30 10:00:{i % 60:02d}.018974: {line}"),
    "gcloud stream-logs": each_line(lambda i, line: f"ERROR\t2026-11-30 10:00:{i % 60:02d} +0000\t{TASK}\t{line}"),
    "torchrun [rank0]:": each_line(lambda i, line: f"[rank0]: {line}"),
    "Ray (pid=..)": each_line(lambda i, line: f"(RayTrainWorker pid=4312, ip=10.0.0.3) {line}"),
    "mpirun tag": each_line(lambda i, line: f"[1,0]<stderr>:{line}"),
    "kubectl --prefix": each_line(lambda i, line: f"[pod/trainer-worker-0/pytorch] {line}"),
    "colours": each_line(lambda i, line: f"\x1b[31m{line}\x1b[0m" if i % 2 else line),
}


def main() -> None:
    classifier = Classifier(load_knowledge())
    cases = [json.loads(line) for line in TRAIN.open(encoding="utf-8")]
    print(f"train split, {len(cases)} cases: top-1 with each line behind the prefix")
    for name, form in FORMS.items():
        right = sum(classifier.classify(parse_log_text(form(c["text"]))).failure_class == c["class"] for c in cases)
        print(f"  {name:<22} {right / len(cases):.3f}")


if __name__ == "__main__":
    main()
