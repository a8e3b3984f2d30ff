"""Split harvested corpus cases into train and test, once, by source.

Run once on the harvest files (JSON Lines as described in tests/fixtures/corpus/README.md):

    .venv/bin/python benchmarks/corpus_split.py HARVEST.jsonl ... --out tests/fixtures/corpus

Every case from one source (a GitHub repository, a Stack Exchange question, a documentation site section) goes to
the same split, so that no phrasing of a project appears on both sides. Sources are taken in the order of a hash
of their name and each goes to the split that is further below its share for the source's main class, which
keeps about `--test-share` of every class in test. Duplicated texts (and texts of the shared dev corpus) are
dropped. The result is deterministic: the same input gives the same split.

Later harvests grow train only (`--add-to-train`): the test split is never rewritten, and a new case whose source
is already in test (or whose text is anywhere in the corpus) is dropped, so test stays unseen.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent


def source_group(url: str) -> str:
    parsed = urlparse(url)
    host = parsed.netloc.lower().removeprefix("www.")
    parts = [p for p in parsed.path.split("/") if p]
    if host in ("github.com", "gitlab.com") and len(parts) >= 2:
        return f"{host}/{parts[0].lower()}/{parts[1].lower()}"
    if host.endswith(("stackoverflow.com", "stackexchange.com", "serverfault.com", "superuser.com")):
        return f"{host}/{'/'.join(parts[:2])}"
    if host.startswith("discuss.") or host.startswith("forums.") or host.startswith("forum."):
        return f"{host}/{'/'.join(parts[:2])}"
    return f"{host}/{parts[0] if parts else ''}"


def _normal(text: str) -> str:
    return " ".join(text.split()).lower()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "tests/fixtures/corpus")
    parser.add_argument("--test-share", type=float, default=0.45)
    parser.add_argument("--add-to-train", action="store_true", help="append new sources to train; test unchanged")
    args = parser.parse_args()
    if args.add_to_train:
        add_to_train(args.files, args.out)
        return

    dev = {_normal(json.loads(line)["text"]) for line in (ROOT / "tests/fixtures/corpus_dev.jsonl").open()}
    seen: set[str] = set(dev)
    groups: dict[str, list[dict]] = defaultdict(list)
    for path in args.files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            case = json.loads(line)
            key = _normal(case["text"])
            if not key or key in seen:
                continue
            seen.add(key)
            groups[source_group(case["source"])].append(case)

    totals = Counter(case["class"] for cases in groups.values() for case in cases)
    in_test: Counter[str] = Counter()
    in_train: Counter[str] = Counter()
    split: dict[str, list[dict]] = {"train": [], "test": []}
    for name in sorted(groups, key=lambda g: hashlib.sha256(g.encode()).hexdigest()):
        cases = groups[name]
        main_class = Counter(c["class"] for c in cases).most_common(1)[0][0]
        test_gap = args.test_share * totals[main_class] - in_test[main_class]
        train_gap = (1 - args.test_share) * totals[main_class] - in_train[main_class]
        side = "test" if test_gap >= train_gap else "train"
        for case in cases:
            (in_test if side == "test" else in_train)[case["class"]] += 1
            split[side].append({**case, "split": side, "source_group": name})
    args.out.mkdir(parents=True, exist_ok=True)
    for side, cases in split.items():
        with (args.out / f"{side}.jsonl").open("w", encoding="utf-8") as handle:
            for case in sorted(cases, key=lambda c: (c["class"], c["id"])):
                handle.write(json.dumps(case, ensure_ascii=False) + "\n")
    print(f"{len(groups)} sources; train {len(split['train'])}, test {len(split['test'])}")
    for cls in sorted(totals):
        print(f"  {cls:<22} train {in_train[cls]:4d}  test {in_test[cls]:4d}")


def add_to_train(files: list[Path], out: Path) -> None:
    existing = {side: [json.loads(line) for line in (out / f"{side}.jsonl").open()] for side in ("train", "test")}
    dev = {_normal(json.loads(line)["text"]) for line in (ROOT / "tests/fixtures/corpus_dev.jsonl").open()}
    seen = dev | {_normal(c["text"]) for cases in existing.values() for c in cases}
    test_groups = {c["source_group"] for c in existing["test"]}
    added: Counter[str] = Counter()
    dropped = 0
    train = existing["train"]
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            case = json.loads(line)
            group = source_group(case["source"])
            key = _normal(case["text"])
            if group in test_groups or not key or key in seen:
                dropped += 1
                continue
            seen.add(key)
            train.append({**case, "split": "train", "source_group": group})
            added[case["class"]] += 1
    with (out / "train.jsonl").open("w", encoding="utf-8") as handle:
        for case in sorted(train, key=lambda c: (c["class"], c["id"])):
            handle.write(json.dumps(case, ensure_ascii=False) + "\n")
    print(f"added {sum(added.values())} cases to train ({dropped} dropped: source in test or duplicate text)")
    for cls in sorted(added):
        print(f"  {cls:<22} +{added[cls]}")


if __name__ == "__main__":
    main()
