"""Healthy-curve control set: does a training curve that improves normally stay `unknown`?

Run: .venv/bin/python benchmarks/probe_curves.py [--seed N] [--per-shape N] [--show N]

The curve reader turns a printed training curve into findings (at chance, flat, a high plateau, validation turning,
a widening gap...) that make the answer underfitting or overfitting. The bigger risk of such rules is a healthy run
called a failure. This probe generates HEALTHY curves, the shapes a normal run has:

  fast       converges in a few epochs, then settles low
  slow       falls steadily all the way (still learning at the end)
  noisy      a falling trend under batch-to-batch noise
  plateau    falls, then settles at a low loss for the last third of the run
  early_stop validation best near the end, a few evaluations at noise level above it, then early stopping
  excerpt    only the last stretch of a long converged run (the loss barely moves, at its low final level)
  regression an MSE/MAE objective (no accuracy, no chance level) falling to its floor

in the formats the reader knows (Keras progress lines, HF Trainer dict prints, Lightning progress bars, CSV
history tables, PyTorch-style `Epoch 3/20 | Train Loss ...` prints, XGBoost rounds, LM step logs, mmcv iteration
logs with evaluations, YOLO result tables), with class counts 2..1000 (and language-model vocabularies), plus the
healthy cases of the train, dev and hand-written sets (never the frozen test split). It prints how many are called
a failure (any answer but `unknown`), by shape and format, and the first few of them. The target is zero.

The other side, in the same formats: FAILING curves of textbook shapes, and how many get their class (recall):

  chance     underfitting: the loss stays at ln k (accuracy at 1/k) for the whole run
  stalled    underfitting: the loss drops a little at first, then stays flat far above zero (60-95% of ln k)
  turn       overfitting: validation loss best a third to half way in, then rising 25-80% while training falls on
  collapse   overfitting: validation accuracy best early, then falling while the training accuracy climbs to ~1
  mild_turn  overfitting: validation loss best 40-70% of the way in, then only 8-25% worse by the end
  gap        overfitting: training loss to ~0 and accuracy to ~1, validation settled early at 55-75% and flat

Last, two runs in one log (a relaunch, an earlier attempt in the same file): a healthy run then a failing one must
get the failing run's class, a failing run then a healthy one `unknown`: the reader judges the last run.

Both sides come from one generator and one renderer, so a format the reader misses shows as a recall gap on the
failing side and a rule that fires on any curve shows as a false alarm on the healthy side.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_accuracy import SPLITS, load_cases  # noqa: E402
from bot.diagnosis.classifier import Classifier  # noqa: E402
from bot.diagnosis.knowledge import load_knowledge  # noqa: E402
from bot.intake.log_input import text_to_lines  # noqa: E402

SHAPES = ("fast", "slow", "noisy", "plateau", "early_stop", "excerpt", "regression")
FAILING = {
    "chance": "underfitting",
    "stalled": "underfitting",
    "turn": "overfitting",
    "collapse": "overfitting",
    "mild_turn": "overfitting",
    "gap": "overfitting",
}
FORMATS = ("keras", "hf", "lightning", "csv", "pytorch", "xgboost", "lm_steps", "mmcv", "yolo")


@dataclass
class Run:
    """One healthy run: per logged epoch (or step) its train/val loss and accuracy (None where not logged)."""

    steps: list[int]
    train_loss: list[float]
    val_loss: list[float]
    train_acc: list[float] | None
    val_acc: list[float] | None
    early_stopped_at_best: int | None = None  # index of the best epoch when early stopping fired
    classes: int = 0  # k of a classification run (0: regression)


def _curve(rng: random.Random, n: int, start: float, end: float, tau: float, noise: float) -> list[float]:
    """start -> end, exponential approach with time constant tau (in logged points), multiplicative noise."""
    out = []
    for i in range(n):
        level = end + (start - end) * math.exp(-i / tau)
        out.append(level * (1 + rng.gauss(0, noise)))
    return out


def make_run(rng: random.Random, shape: str) -> Run:
    k = rng.choice((2, 3, 5, 10, 10, 20, 100, 1000))
    chance_loss = math.log(k)
    n = rng.choice((6, 8, 10, 15, 20, 30, 50))
    noise = {"noisy": rng.uniform(0.03, 0.08)}.get(shape, rng.uniform(0.003, 0.012))
    if shape == "fast":
        tau, final_frac = rng.uniform(0.6, 2.0), rng.uniform(0.03, 0.3)
    elif shape == "slow":
        tau, final_frac = rng.uniform(n * 0.6, n * 1.5), rng.uniform(0.05, 0.4)
    elif shape == "plateau":
        tau, final_frac = rng.uniform(n / 8, n / 5), rng.uniform(0.03, 0.25)
    elif shape == "early_stop":
        tau, final_frac = rng.uniform(n / 6, n / 3), rng.uniform(0.1, 0.35)
    elif shape == "excerpt":
        tau, final_frac = rng.uniform(2, 6), rng.uniform(0.03, 0.3)
    elif shape == "regression":
        tau, final_frac = rng.uniform(1, n / 3), rng.uniform(0.02, 0.3)
    else:
        tau, final_frac = rng.uniform(1.5, n / 3), rng.uniform(0.05, 0.35)
    start = chance_loss * rng.uniform(0.9, 1.05)
    if shape == "regression":
        start = rng.choice((0.9, 4.2, 35.0, 1200.0)) * rng.uniform(0.8, 1.2)
    end = start * final_frac
    offset = 0
    if shape == "excerpt":  # the last n epochs of a run of 3n: the loss has settled
        offset = 2 * n
        full = _curve(rng, 3 * n, start, end, tau, noise)
        train = full[offset:]
    else:
        train = _curve(rng, n, start, end, tau, noise)
    # validation: a little above (or, with dropout/augmentation, a little below) training, and it keeps improving
    # or settles - it never turns clearly worse
    ratio = rng.uniform(0.9, 1.35)
    vnoise = max(noise, rng.uniform(0.005, 0.03))
    if shape == "excerpt":
        vfull = _curve(rng, 3 * n, start * ratio, end * ratio, tau * rng.uniform(0.9, 1.3), vnoise)
        val = vfull[offset:]
    else:
        val = _curve(rng, n, start * rng.uniform(0.95, 1.05), end * ratio, tau * rng.uniform(0.9, 1.3), vnoise)
    best = None
    if shape == "early_stop":  # best a few evaluations before the end, then noise-level wobble above it
        patience = rng.choice((2, 3, 5))
        n_keep = max(n - patience, 3)
        best_value = min(val[:n_keep])
        best = min(range(n_keep), key=val.__getitem__)
        wobble = [best_value * (1 + abs(rng.gauss(0, 0.006)) + 0.001) for _ in range(patience)]
        val = val[: best + 1] + wobble
        # stopping at a good value: training has settled too (it moves by a percent or two after the best)
        train = train[: best + 1] + [train[best] * (1 - 0.004 * (j + 1)) for j in range(patience)]
    steps = list(range(offset + 1, offset + len(train) + 1))
    if shape == "regression":
        return Run(steps, train, val, None, None, best, 0)

    # the final accuracy: training a little above validation (a healthy gap of a few points)
    final_train = rng.uniform(0.72, 0.995) if k < 1000 else rng.uniform(0.55, 0.8)
    finals = iter((final_train, final_train - rng.uniform(0.0, 0.06)))

    def acc_of(losses: list[float], lo: float) -> list[float]:
        # accuracy from the loss: 1/k at ln k, rising towards a final accuracy as the loss reaches its floor lo
        final = next(finals)
        out = []
        for v in losses:
            progress = min(1.0, max(0.0, (chance_loss - v) / max(chance_loss - lo, 1e-9)))
            out.append(min(0.999, 1 / k + (final - 1 / k) * progress**0.7 + rng.gauss(0, 0.004)))
        return out

    floor = end if shape == "excerpt" else min(train)
    return Run(
        steps,
        train,
        val,
        acc_of(train, floor),
        acc_of(val, floor * ratio if shape == "excerpt" else min(val)),
        best,
        k,
    )


def make_failing_run(rng: random.Random, shape: str) -> Run:
    """A run of one of the FAILING shapes, with the same class counts, lengths and noise as the healthy ones."""
    k = rng.choice((2, 3, 5, 10, 10, 20, 100, 1000))
    chance_loss = math.log(k)
    n = rng.choice((8, 10, 15, 20, 30, 50))
    noise = rng.uniform(0.003, 0.02)
    steps = list(range(1, n + 1))
    if shape in ("chance", "stalled"):
        level = chance_loss * (rng.uniform(0.97, 1.03) if shape == "chance" else rng.uniform(0.6, 0.95))
        drop = 0 if shape == "chance" else max(2, n // 6)
        train = _curve(rng, n, chance_loss * rng.uniform(0.98, 1.05), level, drop / 2 or 0.5, noise)
        val = [v * rng.uniform(0.99, 1.04) for v in train]
        progress = [max(0.0, min(1.0, (chance_loss - v) / chance_loss)) for v in train]
        train_acc = [min(0.99, 1 / k + (0.45 - 1 / k) * p + rng.gauss(0, 0.003)) for p in progress]
        val_acc = [max(0.0, a - rng.uniform(0.0, 0.01)) for a in train_acc]
        return Run(steps, train, val, train_acc, val_acc, None, k)
    if shape == "gap":  # training memorises (loss -> ~0, accuracy -> ~1); validation settles early and stays put
        end = chance_loss * rng.uniform(0.005, 0.05)
        train = _curve(rng, n, chance_loss, end, rng.uniform(n / 5, n / 3), noise)
        settle = chance_loss * rng.uniform(0.35, 0.6)
        val = _curve(rng, n, chance_loss, settle, rng.uniform(1, n / 6), max(noise, 0.01))
        train_acc = [min(0.999, 1 / k + (0.995 - 1 / k) * (1 - v / chance_loss)) for v in train]
        peak = rng.uniform(0.55, 0.75)
        val_acc = [min(peak, 1 / k + (peak - 1 / k) * (1 - v / chance_loss) / (1 - settle / chance_loss)) for v in val]
        return Run(steps, train, val, train_acc, [max(0.0, a + rng.gauss(0, 0.004)) for a in val_acc], None, k)
    # overfitting: training keeps falling towards a small loss; validation best early, then worse
    end = chance_loss * rng.uniform(0.01, 0.1)
    train = _curve(rng, n, chance_loss, end, rng.uniform(n / 6, n / 3), noise)
    best = rng.randint(max(2, n // 4), max(3, n // 2))
    best_value = chance_loss * rng.uniform(0.3, 0.6)
    rise = rng.uniform(1.25, 1.8)
    if shape == "mild_turn":  # later and smaller: best 40-70% of the way in, then 8-25% worse by the end
        best = rng.randint(max(2, int(n * 0.4)), max(3, int(n * 0.7)))
        rise = rng.uniform(1.08, 1.25)
    val = []
    for i in range(n):
        if i <= best:
            level = chance_loss + (best_value - chance_loss) * (i / best) ** 0.7
        else:
            level = best_value * (1 + (rise - 1) * (i - best) / (n - 1 - best))
        val.append(level * (1 + rng.gauss(0, max(noise, 0.01))))
    train_acc = [min(0.999, 1 / k + (0.995 - 1 / k) * (1 - v / chance_loss)) for v in train]
    peak = rng.uniform(0.6, 0.85)
    val_acc = []
    for i in range(n):
        if i <= best:
            a = 1 / k + (peak - 1 / k) * (i / best) ** 0.7
        else:
            a = peak - (peak - 1 / k) * rng.uniform(0.15, 0.3) * (i - best) / (n - 1 - best)
        val_acc.append(max(0.0, a + rng.gauss(0, 0.004)))
    if shape == "collapse":  # the accuracy tells it: the validation loss stays near its best (label smoothing...)
        val = [min(v, best_value * rng.uniform(1.0, 1.05)) for v in val]
    return Run(steps, train, val, train_acc, val_acc, None, k)


def _fmt(v: float, digits: int = 4) -> str:
    return f"{v:.{digits}f}"


def render(run: Run, fmt: str, rng: random.Random) -> str:
    n = len(run.steps)
    last = run.steps[-1] + (0 if run.early_stopped_at_best is not None else rng.choice((0, 0, 5)))
    lines: list[str] = []
    acc = run.train_acc is not None
    if fmt == "keras":
        for i, e in enumerate(run.steps):
            lines.append(f"Epoch {e}/{last}")
            part = f"loss: {_fmt(run.train_loss[i])}"
            if acc:
                part += f" - accuracy: {_fmt(run.train_acc[i])}"
            part += f" - val_loss: {_fmt(run.val_loss[i])}"
            if acc:
                part += f" - val_accuracy: {_fmt(run.val_acc[i])}"
            lines.append(f"1563/1563 [==============================] - 12s 8ms/step - {part}")
        if run.early_stopped_at_best is not None:
            lines.append(f"Restoring model weights from the end of the best epoch: {run.early_stopped_at_best + 1}.")
            lines.append(f"Epoch {run.steps[-1]}: early stopping")
    elif fmt == "hf":
        per = rng.choice((100, 250, 500))
        for i, e in enumerate(run.steps):
            lines.append(
                f"{{'loss': {run.train_loss[i]:.4f}, 'grad_norm': {rng.uniform(0.5, 4):.3f}, "
                f"'learning_rate': {2e-5 * (1 - i / (n + 1)):.3e}, 'epoch': {float(e):.1f}}}"
            )
            ev = f"{{'eval_loss': {run.val_loss[i]:.4f}, "
            if acc:
                ev += f"'eval_accuracy': {run.val_acc[i]:.4f}, "
            ev += (
                f"'eval_runtime': {rng.uniform(5, 30):.2f}, 'eval_samples_per_second': 151.2, 'epoch': {float(e):.1f}}}"
            )
            lines.append(ev)
            lines.append(f" {int(100 * (i + 1) / n)}%|████      | {per * (i + 1)}/{per * n} [01:23<02:10, 3.1it/s]")
        lines.append(
            f"{{'train_runtime': 812.4, 'train_loss': {sum(run.train_loss) / n:.4f}, 'epoch': {float(last):.1f}}}"
        )
    elif fmt == "lightning":
        for i, e in enumerate(run.steps):
            extra = f", val_acc={run.val_acc[i]:.3f}" if acc else ""
            lines.append(
                f"Epoch {e - 1}: 100%|██████████| 250/250 [00:10<00:00, 24.51it/s, loss={run.train_loss[i]:.3g}, "
                f"v_num=0, val_loss={run.val_loss[i]:.3f}{extra}, train_loss={run.train_loss[i]:.3f}]"
            )
        if run.early_stopped_at_best is not None:
            lines.append("Monitored metric val_loss did not improve in the last 3 records. Signaling Trainer to stop.")
    elif fmt == "csv":
        header = "epoch,train_loss,val_loss" + (",train_acc,val_acc" if acc else "") + ",lr"
        lines.append(header)
        for i, e in enumerate(run.steps):
            row = f"{e - 1},{run.train_loss[i]},{run.val_loss[i]}"
            if acc:
                row += f",{run.train_acc[i]},{run.val_acc[i]}"
            lines.append(row + f",{1e-3 * 0.95**i:.6g}")
    elif fmt == "pytorch":
        for i, e in enumerate(run.steps):
            if acc:
                lines.append(
                    f"Epoch {e}/{last} | Train Loss: {run.train_loss[i]:.4f} | Train Acc: "
                    f"{100 * run.train_acc[i]:.2f}% "
                    f"| Val Loss: {run.val_loss[i]:.4f} | Val Acc: {100 * run.val_acc[i]:.2f}%"
                )
            else:
                lines.append(
                    f"Epoch {e}/{last} | Train Loss: {run.train_loss[i]:.4f} | Val Loss: {run.val_loss[i]:.4f}"
                )
        if run.early_stopped_at_best is not None:
            lines.append(
                f"Early stopping triggered. Best val loss {min(run.val_loss):.4f} "
                f"at epoch {run.early_stopped_at_best + 1}"
            )
    elif fmt == "xgboost":
        # XGBoost's own metric names: binary "logloss" (it starts at ln 2 and falls below it), multi-class
        # "mlogloss" (from ln k), "rmse" for a regression; the loss as generated, not rescaled
        metric = ("logloss" if run.classes == 2 else "mlogloss") if acc else "rmse"
        every = 10
        stopping = run.early_stopped_at_best is not None
        if stopping:
            patience = (len(run.steps) - 1 - run.early_stopped_at_best) * every
            lines.append(f"Will train until eval-{metric} hasn't improved in {patience} rounds.")
        rows = [
            f"[{(e - run.steps[0]) * every if stopping else (e - 1) * every}]\ttrain-{metric}:{run.train_loss[i]:.5f}\t"
            f"eval-{metric}:{run.val_loss[i]:.5f}"
            for i, e in enumerate(run.steps)
        ]
        lines.extend(rows)
        if stopping:  # xgboost.train(..., early_stopping_rounds=N, verbose_eval=10) before 1.3
            lines.append("Stopping. Best iteration:")
            lines.append(rows[run.early_stopped_at_best])
    elif fmt == "lm_steps":
        every = rng.choice((50, 100, 500))
        for i, e in enumerate(run.steps):
            lines.append(
                f"step {e * every} | loss {run.train_loss[i]:.4f} | lr 3.00e-04 | tokens/s 51234 | grad_norm 0.91"
            )
            if i % 3 == 2 or i == n - 1:
                lines.append(
                    f"step {e * every} | val_loss {run.val_loss[i]:.4f} "
                    f"| val_ppl {math.exp(min(run.val_loss[i], 50)):.2f}"
                )
    elif fmt == "mmcv":
        total = 1000 * (last + 1)
        for i, e in enumerate(run.steps):
            lines.append(
                f"2023-05-01 10:{i % 60:02d}:00,000 - mmseg - INFO - Iter [{e * 1000}/{total}]\t"
                "lr: 1.0e-02, eta: 1:02:03, "
                f"time: 0.410, data_time: 0.012, memory: 3512, decode.loss_ce: {run.train_loss[i] * 0.7:.4f}, "
                + (f"decode.acc_seg: {100 * run.train_acc[i]:.4f}, " if acc else "")
                + f"loss: {run.train_loss[i]:.4f}"
            )
            if acc and i % 2 == 1:
                lines.append(
                    f"2023-05-01 10:{i % 60:02d}:30,000 - mmseg - INFO - Iter(val) [{e * 1000}]\taAcc: "
                    f"{100 * run.val_acc[i]:.2f}, mIoU: {100 * run.val_acc[i] * 0.7:.2f}, "
                    f"mAcc: {100 * run.val_acc[i] * 0.8:.2f}"
                )
    elif fmt == "yolo":
        m = rng.uniform(0.4, 0.8)
        own = random.Random(run.train_loss[0])  # its own stream: the runs generated after this one stay the same

        def part(v: float) -> str:
            # each loss is an epoch mean over its own batches: it carries its own noise (a fraction of a percent),
            # it is not the training loss shifted by a constant and so flat to four digits once that settles
            return f"{v * (1 + own.gauss(0, 0.004)):.4g}"

        for i, e in enumerate(run.steps):
            f = 1 - math.exp(-(i + 1) / max(1.0, n / 4))
            loss = run.train_loss[i]
            lines.append("      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size")
            lines.append(
                f"{e:>8}/{last}      3.11G      {part(loss / 2 + 0.6)}      {part(loss + 0.3)}"
                f"      {part(loss / 3 + 0.9)}         31        640: 100%|██████████| 69/69 [00:19<00:00]"
            )
            lines.append(
                "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): "
                "100%|██████████| 8/8"
            )
            mp = m * f + rng.gauss(0, 0.005)
            lines.append(
                f"                   all        128        929      {min(0.99, mp + 0.1):.3g}      {mp * 0.9:.3g}      "
                f"{mp:.3g}      {mp * 0.6:.3g}"
            )
            lines.append("")
    return "\n".join(lines)


def generated(seed: int, per_shape: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    cases = []
    for shape in SHAPES:
        for j in range(per_shape):
            fmt = FORMATS[j % len(FORMATS)]
            run = make_run(rng, shape)
            if fmt == "yolo" and shape == "regression":
                fmt = "csv"
            cases.append((shape, fmt, render(run, fmt, rng)))
    return cases


def failing(seed: int, per_shape: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed + 1)
    cases = []
    formats = [f for f in FORMATS if f != "yolo"]  # its renderer prints no validation loss or accuracy of the run
    for shape in FAILING:
        for j in range(per_shape):
            fmt = formats[j % len(formats)]
            cases.append((shape, fmt, render(make_failing_run(rng, shape), fmt, rng)))
    return cases


def two_runs(seed: int, per_shape: int) -> list[tuple[str, str, str, str]]:
    """One log holding two runs in the same format (a relaunch, an earlier attempt): a healthy run, then a failing
    one (the answer is the failing run's class); and a failing run, then a healthy one (the answer is `unknown`)."""
    rng = random.Random(seed + 2)
    cases = []
    formats = [f for f in FORMATS if f != "yolo"]
    for shape in FAILING:
        for j in range(per_shape):
            fmt = formats[j % len(formats)]
            healthy = render(make_run(rng, rng.choice(["fast", "slow", "noisy", "plateau"])), fmt, rng)
            bad = render(make_failing_run(rng, shape), fmt, rng)
            cases.append(("healthy, then failing", fmt, f"{healthy}\n{bad}", FAILING[shape]))
            cases.append(("failing, then healthy", fmt, f"{bad}\n{healthy}", "unknown"))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--per-shape", type=int, default=180)
    parser.add_argument("--show", type=int, default=3)
    args = parser.parse_args()
    classifier = Classifier(load_knowledge())
    called: Counter[str] = Counter()
    total: Counter[str] = Counter()
    answers: Counter[str] = Counter()
    shown = 0
    for shape, fmt, text in generated(args.seed, args.per_shape):
        diagnosis = classifier.classify(text_to_lines(text))
        for key in (f"shape {shape}", f"format {fmt}", "generated"):
            total[key] += 1
        if diagnosis.failure_class != "unknown":
            answers[diagnosis.failure_class] += 1
            for key in (f"shape {shape}", f"format {fmt}", "generated"):
                called[key] += 1
            if shown < args.show:
                shown += 1
                print(f"--- {shape}/{fmt} -> {diagnosis.failure_class} {diagnosis.confidence:.2f}")
                print(text[:1500])
    for split in ("train", "dev", "handwritten"):
        for case in load_cases(SPLITS[split]):
            if case["class"] != "unknown":
                continue
            key = f"corpus {split}"
            total[key] += 1
            diagnosis = classifier.classify(text_to_lines(case["text"]))
            if diagnosis.failure_class != "unknown":
                called[key] += 1
                answers[diagnosis.failure_class] += 1
                print(
                    f"    {split} {case['id']} ({case.get('kind')}) "
                    f"-> {diagnosis.failure_class} {diagnosis.confidence:.2f}"
                )
    print("\nhealthy controls called a failure:")
    for key in sorted(total):
        print(f"  {key:<22} {called[key]:4d} / {total[key]}")
    print(f"  answers given: {dict(answers)}")
    right: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    wrong: Counter[str] = Counter()
    shown = 0
    for shape, fmt, text in failing(args.seed, args.per_shape // 2):
        diagnosis = classifier.classify(text_to_lines(text))
        ok = diagnosis.failure_class == FAILING[shape]
        for key in (f"shape {shape}", f"format {fmt}", f"{shape}/{fmt}", "failing"):
            seen[key] += 1
            right[key] += ok
        if not ok:
            wrong[diagnosis.failure_class] += 1
            if shown < args.show:
                shown += 1
                print(f"--- {shape}/{fmt} -> {diagnosis.failure_class} {diagnosis.confidence:.2f}")
                print(text[:1500])
    print("\nfailing curves given their class (recall):")
    for key in sorted(seen, key=lambda x: (x.count("/"), x)):
        print(f"  {key:<22} {right[key]:4d} / {seen[key]}")
    print(f"  answers instead: {dict(wrong)}")
    right.clear()
    seen.clear()
    for order, fmt, text, expected in two_runs(args.seed, args.per_shape // 6):
        ok = classifier.classify(text_to_lines(text)).failure_class == expected
        for key in (order, f"{order}/{fmt}"):
            seen[key] += 1
            right[key] += ok
    print("\ntwo runs in one log, judged on the last (the failing run's class, or unknown after a healthy one):")
    for key in sorted(seen, key=lambda x: (x.count("/"), x)):
        print(f"  {key:<32} {right[key]:4d} / {seen[key]}")


if __name__ == "__main__":
    main()
