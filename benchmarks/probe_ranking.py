"""Ranking probes: does the answer hold when a case appears the way real job logs show it?

Run: .venv/bin/python benchmarks/probe_ranking.py [--splits train dev handwritten] [--changes N]

For every case of a specific class (train, dev and hand-written only: never the frozen test split) whose plain
text the classifier already answers right, the same failure is wrapped the ways Vertex AI jobs really print it:

  a1  re-raised by the program: `The above exception was the direct cause ...` then `RuntimeError: ... failed`
  a2  reported by a launcher script: `subprocess.CalledProcessError: Command [...] returned non-zero exit status 1.`
  a3  reported by torchrun: `torch.distributed.elastic.multiprocessing.errors.ChildFailedError` and its summary
  b   followed by Vertex AI's service line `The replica workerpool0-0 exited with a non-zero status of 1 ...`
  ab  a1 and b together (what a failed custom job's log usually ends with)
  c   preceded by 200 lines of healthy training progress and INFO chatter
  d   a multi-replica job (LogEntry JSON, one replica per task_name): the case on workerpool0-0, then NCCL
      watchdog timeouts and aborts on three other replicas
  e   the case as a LogEntry JSON array (gcloud logging read --format=json), newest first

It prints, per class and variant, how many answers change and to what. The catch-all classes are probed as
controls: application_error must stay application_error under a, c, d and e (a specific class must not be
invented from the wrapping), and `unknown` (healthy logs) under c and e.
Curve classes (underfitting, overfitting) get chatter without loss values in c: their case is the curve.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_accuracy import SPLITS, as_log_entries, load_cases  # noqa: E402
from bot.diagnosis.classifier import Classifier  # noqa: E402
from bot.diagnosis.knowledge import load_knowledge  # noqa: E402
from bot.intake.log_input import parse_log_text, text_to_lines  # noqa: E402
from bot.models import LogLine  # noqa: E402

CATCH_ALL = ("application_error", "unknown")
CURVE_CLASSES = ("underfitting", "overfitting")
VARIANTS = ("a1", "a2", "a3", "b", "ab", "c", "d", "e")
CONTROL_VARIANTS = {"application_error": ("a1", "a2", "c", "d", "e"), "unknown": ("c", "e")}

SERVICE_LINE = (
    "The replica workerpool0-0 exited with a non-zero status of 1. To find out more about why your job exited "
    "please check the logs: https://console.cloud.google.com/logs/viewer?project=123456789012&resource=ml_job%2F"
    "job_id%2F1234567890123456789&advancedFilter=resource.type%3D%22ml_job%22%0Aresource.labels.job_id%3D%22"
    "1234567890123456789%22"
)


def reraised(text: str) -> str:
    return "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/root/trainer/task.py", line 141, in train_step',
            "    outputs = step_fn(batch)",
            text,
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            "Traceback (most recent call last):",
            '  File "/opt/conda/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
            "    return _run_code(code, main_globals, None,",
            '  File "/root/trainer/task.py", line 212, in <module>',
            "    main()",
            '  File "/root/trainer/task.py", line 205, in main',
            '    raise RuntimeError("Training step failed") from err',
            "RuntimeError: Training step failed",
        ]
    )


def launcher(text: str) -> str:
    return "\n".join(
        [
            text,
            "Traceback (most recent call last):",
            '  File "/usr/local/bin/launch.py", line 52, in <module>',
            "    subprocess.run(command, check=True)",
            '  File "/opt/conda/lib/python3.10/subprocess.py", line 526, in run',
            "    raise CalledProcessError(retcode, process.args,",
            "subprocess.CalledProcessError: Command '['python3', '-m', 'trainer.task', '--epochs=20']' returned "
            "non-zero exit status 1.",
        ]
    )


def torchrun(text: str) -> str:
    return "\n".join(
        [
            text,
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 312) of "
            "binary: /opt/conda/bin/python3",
            "Traceback (most recent call last):",
            '  File "/opt/conda/bin/torchrun", line 8, in <module>',
            "    sys.exit(main())",
            '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/run.py", line 794, in main',
            "    run(args)",
            '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/launcher/api.py", line 263, in '
            "launch_agent",
            "    raise ChildFailedError(",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "============================================================",
            "trainer/task.py FAILED",
            "------------------------------------------------------------",
            "Failures:",
            "  <NO_OTHER_FAILURES>",
            "------------------------------------------------------------",
            "Root Cause (first observed failure):",
            "[0]:",
            "  time      : 2026-11-30_12:04:11",
            "  host      : cmle-training-workerpool0-ab12cd34ef-0",
            "  rank      : 0 (local_rank: 0)",
            "  exitcode  : 1 (pid: 312)",
            "  error_file: <N/A>",
            "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
            "============================================================",
        ]
    )


def chatter(with_losses: bool, count: int = 200) -> list[str]:
    """Healthy start-up and training progress lines (PyTorch / TF / HF / tqdm / Vertex wording)."""
    lines = [
        "I1130 12:00:01.118372 140312 cpu_feature_guard.cc:182] This TensorFlow binary is optimized to use "
        "available CPU instructions in performance-critical operations.",
        "INFO:root:Running task with arguments: --epochs=20 --batch_size=64 --lr=0.0003",
        "INFO:root:Reading training data from gs://demo-bucket/data/train-*.tfrecord",
        "INFO:torch.distributed.distributed_c10d:Added key: store_based_barrier_key:1 to store for rank: 0",
        "INFO:torch.distributed.distributed_c10d:Rank 0: Completed store-based barrier for key:"
        "store_based_barrier_key:1 with 1 nodes.",
        "cmle-training-7f3a:312:312 [0] NCCL INFO Bootstrap : Using eth0:10.128.0.12<0>",
        "cmle-training-7f3a:312:401 [0] NCCL INFO Channel 00/02 :    0   1   2   3",
        "cmle-training-7f3a:312:401 [0] NCCL INFO comm 0x55d8c0a0 rank 0 nranks 4 cudaDev 0 busId 40 - Init COMPLETE",
        "Loading checkpoint shards: 100%|##########| 2/2 [00:04<00:00,  2.11s/it]",
        "INFO:root:GPU memory allocated 10.21 GiB, reserved 12.00 GiB of 39.59 GiB",
        "INFO:root:Model has 124,439,808 trainable parameters",
    ]
    step = 0
    while len(lines) < count:
        step += 50
        if with_losses:
            loss = 2.3 * (0.985 ** (step / 50)) + 0.1
            lines.append(f"INFO:root:epoch 1 step {step}/5000 loss={loss:.4f} lr=3.0e-04 (4.12 it/s)")
        else:
            lines.append(f"INFO:root:epoch 1 step {step}/5000 (4.12 it/s, 263.7 samples/s)")
        if step % 500 == 0:
            lines.append(f"INFO:root:Saved checkpoint to gs://demo-bucket/ckpt/step_{step}")
        if step % 300 == 0:
            lines.append(f" {step // 50}%|#         | {step}/5000 [01:{step % 60:02d}<19:12,  4.12it/s]")
    return lines[:count]


def healthy_prefix(text: str, cls: str) -> str:
    return "\n".join(chatter(with_losses=cls not in CURVE_CLASSES) + [text])


def entries(lines: list[tuple[str, str]], job_id: str = "1234567890123456789") -> str:
    """(replica, text) pairs, oldest first, as a LogEntry JSON array, newest first."""
    start = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    out = []
    for i, (replica, line) in enumerate(lines):
        stamp = (start + timedelta(milliseconds=10 * i)).isoformat().replace("+00:00", "Z")
        out.append(
            {
                "insertId": f"id{i:06d}",
                "logName": f"projects/demo-project/logs/{replica}",
                "resource": {
                    "labels": {"job_id": job_id, "project_id": "demo-project", "task_name": replica},
                    "type": "ml_job",
                },
                "severity": "ERROR" if "error" in line.lower() else "INFO",
                "textPayload": line,
                "timestamp": stamp,
            }
        )
    return json.dumps(list(reversed(out)))


def multi_replica(text: str) -> str:
    pairs = [("workerpool0-0", line) for line in text.splitlines() if line.strip()]
    for n, replica in enumerate(("workerpool1-0", "workerpool1-1", "workerpool1-2"), start=1):
        pairs += [
            (
                replica,
                f"[rank{n}]:[E1130 12:10:{n:02d}.482113 {300 + n} ProcessGroupNCCL.cpp:616] [Rank {n}] Watchdog "
                "caught collective operation timeout: WorkNCCL(SeqNum=88213, OpType=ALLREDUCE, NumelIn=1, "
                "NumelOut=1, Timeout(ms)=600000) ran for 600071 milliseconds before timing out.",
            ),
            (
                replica,
                f"[rank{n}]:[E1130 12:10:{n:02d}.483002 {300 + n} ProcessGroupNCCL.cpp:1664] [PG 0 Rank {n}] "
                "Timeout at NCCL work: 88213, last enqueued NCCL work: 88213, last completed NCCL work: 88212.",
            ),
            (
                replica,
                f"[rank{n}]:[E1130 12:10:{n:02d}.483110 {300 + n} ProcessGroupNCCL.cpp:630] [Rank {n}] Some NCCL "
                "operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent "
                "GPU operations might run on corrupted/incomplete data.",
            ),
            (replica, "terminate called after throwing an instance of 'c10::DistBackendError'"),
        ]
    return entries(pairs)


def variant_lines(text: str, cls: str, variant: str) -> list[LogLine]:
    if variant == "a1":
        return text_to_lines(reraised(text))
    if variant == "a2":
        return text_to_lines(launcher(text))
    if variant == "a3":
        return text_to_lines(torchrun(text))
    if variant == "b":
        return text_to_lines(text + "\n" + SERVICE_LINE)
    if variant == "ab":
        return text_to_lines(reraised(text) + "\n" + SERVICE_LINE)
    if variant == "c":
        return text_to_lines(healthy_prefix(text, cls))
    if variant == "d":
        return parse_log_text(multi_replica(text))
    if variant == "e":
        return parse_log_text(as_log_entries(text))
    raise ValueError(variant)


def probe(classifier: Classifier, cases: list[dict]) -> tuple[dict, dict]:
    """{(class, variant): [n, Counter(new answer)]} over cases answered right as they stand; and top-3 kept."""
    changes: dict[tuple[str, str], list] = defaultdict(lambda: [0, Counter()])
    top3_lost: dict[tuple[str, str], int] = Counter()
    for case in cases:
        cls = case["class"]
        if classifier.classify(text_to_lines(case["text"])).failure_class != cls:
            continue
        for variant in CONTROL_VARIANTS.get(cls, VARIANTS):
            diagnosis = classifier.classify(variant_lines(case["text"], cls, variant))
            cell = changes[(cls, variant)]
            cell[0] += 1
            if diagnosis.failure_class != cls:
                cell[1][diagnosis.failure_class] += 1
                listed = [diagnosis.failure_class] + [a.failure_class for a in diagnosis.alternatives]
                top3_lost[(cls, variant)] += cls not in listed[:3]
    return changes, top3_lost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", nargs="*", default=["train", "dev", "handwritten"])
    parser.add_argument("--changes", type=int, default=0, help="list up to N changed cases per class and variant")
    args = parser.parse_args()
    if "test" in args.splits:
        raise SystemExit("the test split is frozen: probes are built from train, dev and hand-written cases only")
    classifier = Classifier(load_knowledge())
    cases = [case for name in args.splits for case in load_cases(SPLITS[name])]
    changes, top3_lost = probe(classifier, cases)

    print(f"cases probed (answered right as they stand): {len(cases)} read")
    print(f"{'class':<22} " + " ".join(f"{v:>5}" for v in VARIANTS) + "   (changed answers / probed)")
    totals = Counter()
    for cls in sorted({c for c, _ in changes}, key=lambda c: (c in CATCH_ALL, c)):
        row = []
        for variant in VARIANTS:
            if (cls, variant) not in changes:
                row.append(f"{'-':>5}")
                continue
            n, moved = changes[(cls, variant)]
            changed = sum(moved.values())
            group = "control" if cls in CATCH_ALL else "specific"
            totals[(group, variant, "n")] += n
            totals[(group, variant, "changed")] += changed
            row.append(f"{changed:>5}")
        n_class = max(changes[(cls, v)][0] for v in VARIANTS if (cls, v) in changes)
        print(f"{cls:<22} " + " ".join(row) + f"   of {n_class}")
    for group in ("specific", "control"):
        cells = []
        for variant in VARIANTS:
            n = totals[(group, variant, "n")]
            cells.append(f"{totals[(group, variant, 'changed')] / n:5.3f}" if n else f"{'-':>5}")
        changed = sum(totals[(group, v, "changed")] for v in VARIANTS)
        n_all = sum(totals[(group, v, "n")] for v in VARIANTS)
        print(
            f"{'share changed, ' + group:<22} " + " ".join(cells) + f"   all {changed}/{n_all} = {changed / n_all:.3f}"
        )
    lost = sum(top3_lost.values())
    print(f"changed answers that also drop the class from the top 3: {lost}")

    print("\nwhere changed answers went (class / variant: new answer x count):")
    for (cls, variant), (_, moved) in sorted(changes.items()):
        if moved:
            went = ", ".join(f"{k} x{v}" for k, v in moved.most_common())
            print(f"  {cls:<22} {variant:<3} {went}")
    destinations = Counter()
    for (cls, _), (_, moved) in changes.items():
        if cls not in CATCH_ALL:
            destinations.update(moved)
    print(
        "\nspecific classes' changed answers, by new answer: "
        + ", ".join(f"{k} x{v}" for k, v in destinations.most_common())
    )

    if args.changes:
        print("\nchanged cases:")
        shown: Counter = Counter()
        for case in cases:
            cls = case["class"]
            if classifier.classify(text_to_lines(case["text"])).failure_class != cls:
                continue
            for variant in CONTROL_VARIANTS.get(cls, VARIANTS):
                if shown[(cls, variant)] >= args.changes:
                    continue
                diagnosis = classifier.classify(variant_lines(case["text"], cls, variant))
                if diagnosis.failure_class != cls:
                    shown[(cls, variant)] += 1
                    print(f"  {case['id']} [{variant}] {cls} -> {diagnosis.failure_class} {diagnosis.confidence:.2f}")


if __name__ == "__main__":
    main()
