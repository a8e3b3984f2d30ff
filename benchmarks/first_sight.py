"""First-sight scores: every train case as the knowledge base scored it *before* any rule was written from it.

Run: .venv/bin/python benchmarks/first_sight.py [--out FILE]   (needs the git history; about a minute)

The train split grew by harvests, each added in one commit and scored before its rules were written. For each such
commit, the cases it added are classified by the code and knowledge base of the commit before it (a git worktree),
with the confidence calibration removed: the raw score an unseen log got. That is the closest thing to "logs nobody
here has seen" the project has besides the frozen test split, which this never reads (only train cases are scored;
the first split's test half is left out by id).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRAIN = "tests/fixtures/corpus/train.jsonl"
# A case whose source is a file committed to a repository (a notebook's output, a log file), not a log someone
# posted (an issue thread, a forum, a docs page): the two kinds part ways at first sight (docs/accuracy-history.md)
COMMITTED = re.compile(r"github\.com/[^/]+/[^/]+/(blob|raw|tree)/|raw\.githubusercontent\.com|gist\.github")


def posted(case: dict) -> bool:
    """Someone posted the log (a thread, a forum, docs): its source is no committed file (COMMITTED)."""
    return not COMMITTED.search(case.get("source", ""))

# Runs inside a worktree of an older commit: its own modules, its own layout, no calibration.
SCORER = r"""
import json, sys
from pathlib import Path
# the project's own editable install maps `bot` to today's code: the worktree's code must be the only one found
sys.meta_path = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path = [".", *(p for p in sys.path if "__editable__" not in p)]
for name in [m for m in sys.modules if m == "bot" or m.startswith("bot.")]:
    del sys.modules[name]
try:
    from bot.diagnosis.classifier import Classifier
    from bot.diagnosis.knowledge import load_knowledge
except ImportError:
    from bot.classifier import Classifier
    from bot.knowledge import load_knowledge
try:
    from bot.intake.log_input import text_to_lines
except ImportError:
    from bot.log_input import text_to_lines
for name in ("knowledge/calibration/confidence.yaml",):
    Path(name).unlink(missing_ok=True)
kb = load_knowledge()
if hasattr(kb, "calibration"):
    kb.calibration = type(kb.calibration)()
classifier = Classifier(kb)
for line in sys.stdin:
    case = json.loads(line)
    d = classifier.classify(text_to_lines(case["text"]))
    best = max((a.confidence for a in d.alternatives if a.failure_class != "unknown"), default=0.0)
    print(json.dumps({"answer": d.failure_class, "confidence": d.confidence, "best_alternative": best}))
assert Path(sys.modules[Classifier.__module__].__file__).resolve().is_relative_to(Path(".").resolve())
"""


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def _cases(commit: str) -> dict[str, dict]:
    try:
        text = _git("show", f"{commit}:{TRAIN}")
    except subprocess.CalledProcessError:
        return {}
    return {case["id"]: case for case in map(json.loads, filter(str.strip, text.splitlines()))}


def collect(report: bool = True) -> list[dict]:
    """Every train case (with today's label) as the commit before its harvest scored it, in harvest order."""
    current = _cases("HEAD")
    commits = _git("log", "--reverse", "--format=%H", "--", TRAIN).split()
    records: list[dict] = []
    seen: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for commit in commits:
            before, after = _cases(f"{commit}^"), _cases(commit)
            # cases this commit added that are still train cases today, with the label they have today
            added = [current[i] for i in after if i not in before and i in current and i not in seen]
            if not added:
                continue
            parent = _git("rev-parse", "--short", f"{commit}^").strip()
            tree = Path(tmp) / parent
            _git("worktree", "add", "--detach", "-f", str(tree), parent)
            try:
                feed = "".join(json.dumps({"text": case["text"]}) + "\n" for case in added)
                run = subprocess.run(
                    [sys.executable, "-c", SCORER], cwd=tree, input=feed, capture_output=True, text=True, check=True
                )
            finally:
                _git("worktree", "remove", "--force", str(tree))
            for case, line in zip(added, run.stdout.splitlines(), strict=True):
                scored = json.loads(line)
                records.append(
                    {
                        "id": case["id"],
                        "class": case["class"],
                        "scored_by": parent,
                        "posted": posted(case),
                        **scored,
                        "right": scored["answer"] == case["class"],
                    }
                )
                seen.add(case["id"])
            if report:
                right = sum(r["right"] for r in records[-len(added) :])
                print(f"{commit[:7]} (scored by {parent}): {len(added)} cases, right at first sight {right}")
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write each case's first-sight answer and score (JSONL)")
    args = parser.parse_args()
    records = collect()
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    total = sum(r["right"] for r in records)
    print(f"{len(records)} train cases scored at first sight: top-1 {total / len(records):.3f}")


if __name__ == "__main__":
    main()
