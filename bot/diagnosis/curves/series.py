"""The training curves a log holds: points, series and their naming (a printed key such as `val_loss` or
`Train Acc` read as a split and a metric group). bot.diagnosis.curves.reader reads them from the log's lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

TRAIN, VAL = "train", "val"
LOSS, ERROR, ACC = "loss", "error", "acc"  # metric groups: loss-like and error-like fall, accuracy-like rises

SPLIT_WORDS = {
    "train": TRAIN, "training": TRAIN, "trn": TRAIN, "tr": TRAIN, "main": TRAIN, "learn": TRAIN,
    "val": VAL, "valid": VAL, "validation": VAL, "vali": VAL, "eval": VAL, "evaluation": VAL, "dev": VAL,
    "test": VAL, "tst": VAL, "holdout": VAL, "validate": VAL, "testing": VAL, "validating": VAL,
}  # fmt: skip
METRIC_WORDS = {
    "loss": LOSS, "cost": LOSS, "nll": LOSS, "logloss": LOSS, "mlogloss": LOSS, "xent": LOSS, "ce": LOSS,
    "bce": LOSS, "crossentropy": LOSS,
    "error": ERROR, "err": ERROR, "merror": ERROR, "mse": ERROR, "rmse": ERROR, "mae": ERROR,
    "perplexity": ERROR, "ppl": ERROR, "wer": ERROR, "cer": ERROR, "l1": ERROR, "l2": ERROR,
    # XGBoost / LightGBM / scikit-learn regression and likelihood metrics: lower is better
    "rmsle": ERROR, "msle": ERROR, "mape": ERROR, "smape": ERROR, "rmspe": ERROR, "mspe": ERROR,
    "nloglik": ERROR, "deviance": ERROR, "huber": ERROR,
    "acc": ACC, "accuracy": ACC, "top1": ACC, "acc1": ACC, "auc": ACC, "f1": ACC,
    "map": ACC, "map50": ACC, "ap": ACC, "ap50": ACC, "ap75": ACC, "fscore": ACC,
    "mrr": ACC, "ndcg": ACC, "hr": ACC,  # ranking scores of recommenders and retrieval (hit ratio at k)
}  # fmt: skip
# Detection scores (mAP, AP50) are measured on held-out images, ranking scores (HR@k, NDCG@k, MRR) on held-out
# interactions: named without a split, they are validation values.
_EVAL_ONLY_WORDS = frozenset({"map", "map50", "ap", "ap50", "ap75", "hr", "ndcg", "mrr"})
_TEST_WORDS = frozenset({"test", "tst", "testing"})
CHANCE_WORDS = frozenset({"loss", "cost", "nll", "logloss", "mlogloss", "xent", "ce", "bce", "crossentropy"})
ACC_CHANCE_WORDS = frozenset({"acc", "accuracy", "top1", "acc1"})
STEP_WORDS = {"epoch": "epoch", "iters": "iteration", "epochs": "epoch", "step": "step", "steps": "step",
              "iter": "iteration",
              "iteration": "iteration", "it": "iteration", "global_step": "step", "round": "round",
              "pass": "epoch"}  # fmt: skip  (PaddlePaddle counts its epochs as passes: "[Pass 0, train batch 10]")

# a list of values saved under a plural name ({"train_losses": [...], "accuracies": [...]}) names the same metric
_PLURALS = {"losses": "loss", "accuracies": "accuracy", "accs": "acc", "errors": "error", "costs": "cost"}
# Chinese logs name a metric by its split and its measure ("训练损失: 4.61 | 验证损失: 6.01", "验证集准确率：0.83"):
# read as the English key they stand for ("train_loss: 4.61"). Only a measure word makes a name: "训练" alone is
# "training" in any sentence, not a metric; nor is a numeric precision ("混合精度" mixed precision, "半精度" half).
_CHINESE_SPLITS = {"训练": "train", "验证": "val", "校验": "val", "测试": "test"}
_CHINESE_MEASURES = {"损失": "loss", "损失值": "loss", "准确率": "acc", "正确率": "acc", "准确度": "acc", "精度": "acc",
                     "误差": "error"}  # fmt: skip
_CHINESE_NAME = re.compile(
    r"(?:(?P<split>训练|验证|校验|测试)集?(?:上的|的)?)?(?:平均)?"
    r"(?P<measure>损失值?|准确率|正确率|准确度|(?<!混合)(?<![半单双全高低])精度|误差)\s*(?P<colon>：)?"
)
CHINESE_MEASURE_WORDS = "|".join(_CHINESE_MEASURES)  # for a filter that keeps the lines naming a metric


def _english_name(found: re.Match[str]) -> str:
    split = _CHINESE_SPLITS.get(found.group("split") or "")
    name = _CHINESE_MEASURES[found.group("measure")]
    colon = ":" if found.group("colon") else ""
    return f" {split}_{name}{colon} " if split else f" {name}{colon} "


def english_names(text: str) -> str:
    """A line's Chinese metric names as English keys ("训练损失：4.6" -> " train_loss: 4.6"); other text unchanged."""
    if text.isascii():
        return text
    return _CHINESE_NAME.sub(_english_name, text)


_WORD_SPLIT = re.compile(r"[_\-/.\s()'\[\]:@]+|(?<=[a-z])(?=[A-Z])")
_MAX_KEY_WORDS = 5
_SOURCE_FILE = re.compile(r"\.(?:py|pyx|cc|cpp|cu|c|h|hpp|go|rs|java|js|ts|lua|scala)$", re.IGNORECASE)
_DIMENSION = re.compile(r"(?<=[a-z])[123]d$")


@dataclass(frozen=True)
class Point:
    line: int  # index into the LogDocument
    value: float
    step: str | None  # "epoch 12", "step 400", "round 500" when the log says so

    @property
    def count(self) -> tuple[str, float] | None:
        """The step as its word and number ("epoch 12" -> ("epoch", 12.0)); None when the log names none."""
        word, _, number = (self.step or "").partition(" ")
        try:
            return (word, float(number)) if word else None
        except ValueError:
            return None


@dataclass
class Series:
    split: str
    group: str
    key: str  # as printed, e.g. "val_loss"
    norm: str  # the series' identity, e.g. "val/loss", "test/accuracy", "train/nll/loss"
    chance: bool  # the metric's chance level is known (cross-entropy loss: ln k; accuracy: 1/k)
    plain: bool  # the key is only split + metric words (not a component such as "box_loss")
    points: list[Point] = field(default_factory=list)
    listed: bool = False  # read from a saved list of values (a History's JSON): its epochs, not its lines, say when

    @property
    def values(self) -> list[float]:
        return [p.value for p in self.points]


@dataclass
class Curves:
    series: dict[str, Series] = field(default_factory=dict)  # by normalised key
    improve_messages: list[tuple[int, str, float, bool]] = field(default_factory=list)  # line, key, value, improved
    bar_totals: dict[int, int] = field(default_factory=dict)  # line -> batches in the progress bar it ends
    learning_rates: list[tuple[int, float]] = field(default_factory=list)  # line, learning rate printed on a curve line
    grad_norms: list[tuple[int, float]] = field(default_factory=list)  # line, a table's gradient-norm column value
    # line, the rate a scheduler announced it reduced the learning rate to (Keras / PyTorch ReduceLROnPlateau)
    lr_reductions: list[tuple[int, float]] = field(default_factory=list)
    epoch_position: dict[int, tuple[int, float]] = field(default_factory=dict)  # line -> epoch, share of it done
    planned_steps: int = 0  # the run's length in steps or iterations, when a "step 3/100" count says it
    run_start: int | None = None  # the line where the log's last run starts, when an earlier one came before it
    boosting_stopped: int | None = None  # the line where gradient boosting's early stopping named its best round

    @property
    def any(self) -> bool:
        return any(s.points for s in self.series.values())

    def primary(self, split: str, group: str) -> Series | None:
        """The series a practitioner would plot for this split and metric group: plain names first, then longest."""
        found = [s for s in self.series.values() if s.split == split and s.group == group and s.points]
        if not found:
            return None
        return max(found, key=lambda s: (s.plain, len(s.points), not s.norm.startswith("test/")))

    def component_pairs(self, group: str) -> list[tuple[Series, Series]]:
        """(validation, training) series of one named component of a metric, logged under both splits: YOLO's
        val/obj_loss beside train/obj_loss. A loss made of parts can turn in one part while the others hold."""
        pairs = []
        for series in self.series.values():
            if series.split != VAL or series.group != group or series.plain or not series.points:
                continue
            train = self.series.get(TRAIN + series.norm.removeprefix(VAL))
            if train is not None and train.group == group and train.points:
                pairs.append((series, train))
        return pairs


@dataclass(frozen=True)
class SeriesKey:
    split: str
    group: str
    norm: str
    chance: bool
    plain: bool
    acc_chance: bool


@lru_cache(maxsize=4096)
def parse_key(key: str) -> SeriesKey | None:
    """'val_loss' -> (val, loss); 'validation/main/loss' -> (val, loss); 'Train Acc' -> (train, acc); else None."""
    if _SOURCE_FILE.search(key):
        return None  # a logger's source location ("loss_scaler.py:183"), not a metric
    key = english_names(key)
    # a dimension suffix names the same metric: Trax "CrossEntropy3d", "Accuracy2d"
    words = [_DIMENSION.sub("", w.lower()) or w.lower() for w in _WORD_SPLIT.split(key.strip()) if w]
    words = [_PLURALS.get(w, w) for w in words]
    if not words or len([w for w in words if w not in SPLIT_WORDS]) > _MAX_KEY_WORDS:  # "val_" adds no word
        return None
    if "cross" in words and "entropy" in words:  # MXNet "Train-cross-entropy", "cross_entropy_loss"
        words = [w for w in words if w != "cross"]
        words[words.index("entropy")] = "crossentropy"
    metric_words = [w for w in words if w in METRIC_WORDS]
    if not metric_words:
        return None
    metric = metric_words[-1]
    if metric == "error" and "code" in words:
        return None  # "error code is 126": a process's status, not an error rate
    split_words = [w for w in words if w in SPLIT_WORDS and w != "main"]
    split = SPLIT_WORDS[split_words[0]] if split_words else VAL if metric in _EVAL_ONLY_WORDS else TRAIN
    neutral = {"main", "epoch", "step", "avg", "average", "mean", "total", "running", "batch", "overall", "s", "b", "m"}
    # Another metric word before the last one qualifies it: fairseq's nll_loss is a series apart from its loss.
    qualifiers = [w for w in words[: words.index(metric) if metric in words else len(words)] if w in METRIC_WORDS]
    qualifiers += [w for w in words if w not in METRIC_WORDS and w not in SPLIT_WORDS and w not in neutral]
    rest = [w for w in qualifiers if not w.isdigit()]
    # a learning rate, a gradient norm, a timing, fp16's "loss scale": numbers beside a metric, not one
    if any(w in ("lr", "learning", "grad", "norm", "time", "best", "min", "max", "scale") for w in rest):
        return None
    plain = not rest and "step" not in words
    # A held-out test set is a curve apart from the validation set (printed side by side they would interleave).
    head = "test" if split_words and split_words[0] in _TEST_WORDS else split
    norm = "/".join([head, *qualifiers, metric])  # XGBoost's validation_0 and validation_1 stay two series
    return SeriesKey(split, METRIC_WORDS[metric], norm, metric in CHANCE_WORDS, plain, metric in ACC_CHANCE_WORDS)


def split_only_key(key: str, *, percent: bool, loss: bool = False) -> SeriesKey | None:
    """A bare split name with a value: 'Train: 99.9% | Validation: 77.3%' (accuracy), CatBoost 'learn: 0.27', or
    the split's loss beside the named training loss ('loss: 3.07 | val: 2.96': `loss`)."""
    word = key.strip().lower()
    if word not in SPLIT_WORDS or word == "main":
        return None
    split = SPLIT_WORDS[word]
    head = "test" if word in _TEST_WORDS else split
    if loss:
        return SeriesKey(split, LOSS, f"{head}/loss", True, True, False)
    if percent:
        return SeriesKey(split, ACC, f"{head}/accuracy", True, True, True)
    return SeriesKey(split, ERROR, f"{head}/objective", False, True, False)


@lru_cache(maxsize=4096)
def names_split(key: str) -> bool:
    """Whether a metric's name says its split ("val_loss", "train acc"); a log repeats its few names on every line."""
    return any(w.lower() in SPLIT_WORDS for w in _WORD_SPLIT.split(key) if w)


def as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def add_point(curves: Curves, parsed: SeriesKey, key: str, point: Point) -> None:
    series = curves.series.get(parsed.norm)
    if series is None:
        series = curves.series[parsed.norm] = Series(
            parsed.split, parsed.group, key, parsed.norm, parsed.chance or parsed.acc_chance, parsed.plain
        )
    elif series.points and series.points[-1].line == point.line:
        return  # one value per line and series (Lightning prints both `loss=` and `train_loss=`)
    series.points.append(point)
