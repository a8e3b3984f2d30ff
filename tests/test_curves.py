"""The training-curve reader and what it decides, on every print format the issue tracker shows."""

from __future__ import annotations

import pytest

from bot.diagnosis.curve_facts import curve_findings
from bot.diagnosis.curves import ACC, LOSS, TRAIN, VAL, parse_key, read_curves
from bot.intake.log_document import LogDocument
from bot.intake.log_input import text_to_lines


def _curves(text: str):
    return read_curves(LogDocument(text_to_lines(text)))


def _findings(text: str) -> dict:
    """The decisive findings ('curves_logged' only says a curve was printed)."""
    return {name: f for name, f in curve_findings(_curves(text)).items() if name != "curves_logged"}


@pytest.mark.parametrize(
    ("key", "split", "group"),
    [
        ("val_loss", VAL, LOSS),
        ("loss", TRAIN, LOSS),
        ("Valid Loss", VAL, LOSS),
        ("Vali Loss", VAL, LOSS),
        ("validation/main/loss", VAL, LOSS),
        ("main/accuracy", TRAIN, ACC),
        ("eval-logloss", VAL, LOSS),
        ("train-logloss", TRAIN, LOSS),
        ("Cost", TRAIN, LOSS),
        ("test_acc", VAL, ACC),
        ("dev_accuracy", VAL, ACC),
        ("trainLoss", TRAIN, LOSS),
    ],
)
def test_keys_name_a_split_and_a_metric(key: str, split: str, group: str) -> None:
    parsed = parse_key(key)
    assert parsed is not None and (parsed.split, parsed.group) == (split, group)


@pytest.mark.parametrize("key", ["learning_rate", "lr", "grad_norm", "epoch", "samples_per_second", "loss_scale"])
def test_keys_that_are_not_metrics(key: str) -> None:
    parsed = parse_key(key)
    assert parsed is None or key == "loss_scale" and parsed.plain is False


CSV = (
    "epoch,train_loss,val_loss,train_acc,val_acc\n1,1.20,1.10,0.55,0.58\n2,0.80,0.90,0.70,0.66\n"
    "3,0.50,0.85,0.82,0.70\n4,0.30,0.95,0.90,0.69\n5,0.15,1.20,0.95,0.66\n6,0.08,1.45,0.98,0.64"
)
MARKDOWN = (
    "| Epoch | Training Loss | Validation Loss | Accuracy |\n|---|---|---|---|\n| 1 | 0.512 | 0.401 | 0.81 |\n"
    "| 2 | 0.301 | 0.389 | 0.83 |\n| 3 | 0.150 | 0.455 | 0.83 |\n| 4 | 0.061 | 0.532 | 0.82 |\n"
    "| 5 | 0.020 | 0.611 | 0.82 |"
)
XGBOOST = (
    "[0]\ttrain-logloss:0.61\teval-logloss:0.62\n[100]\ttrain-logloss:0.30\teval-logloss:0.41\n"
    "[200]\ttrain-logloss:0.18\teval-logloss:0.44\n[300]\ttrain-logloss:0.10\teval-logloss:0.49\n"
    "[400]\ttrain-logloss:0.05\teval-logloss:0.55"
)
HF_DICTS = (
    "{'loss': 0.9, 'learning_rate': 4e-05, 'epoch': 1.0}\n{'eval_loss': 0.7, 'eval_accuracy': 0.71, 'epoch': 1.0}\n"
    "{'loss': 0.5, 'learning_rate': 3e-05, 'epoch': 2.0}\n{'eval_loss': 0.65, 'eval_accuracy': 0.73, 'epoch': 2.0}\n"
    "{'loss': 0.2, 'learning_rate': 2e-05, 'epoch': 3.0}\n{'eval_loss': 0.8, 'eval_accuracy': 0.72, 'epoch': 3.0}\n"
    "{'loss': 0.05, 'learning_rate': 1e-05, 'epoch': 4.0}\n{'eval_loss': 0.95, 'eval_accuracy': 0.71, 'epoch': 4.0}"
)


@pytest.mark.parametrize("text", [CSV, MARKDOWN, XGBOOST, HF_DICTS], ids=["csv", "markdown", "xgboost", "hf-dicts"])
def test_validation_turning_while_training_improves(text: str) -> None:
    found = _findings(text)
    assert "val_loss_rising" in found
    assert "loss_at_chance" not in found and "loss_flat" not in found
    summary = found["val_loss_rising"].summary
    assert " best " in summary and "while" in summary


def test_the_turn_is_stated_with_best_and_latest_and_their_lines() -> None:
    text = CSV
    finding = _findings(text)["val_loss_rising"]
    assert finding.summary.startswith("val_loss best 0.85 at epoch 3, 1.45 at epoch 6")
    lines = text.splitlines()
    assert [lines[i].split(",")[0] for i in finding.lines] == ["3", "6"]


@pytest.mark.parametrize(
    "text",
    [
        # fastai / whitespace table
        "epoch     train_loss  valid_loss  accuracy  time\n"
        + "\n".join(f"{i}         2.30{2585 + i}    2.302585    0.100000  00:12" for i in range(5)),
        # the classic "Cost after iteration" print
        "\n".join(f"Cost after iteration {i * 100}: 0.69314{i}" for i in range(5)),
        # Keras with accuracy at 1/10 reported by the checkpoint callback
        "Epoch 1/50\nEpoch 00001: val_acc improved from -inf to 0.10000\n"
        "Epoch 00002: val_acc did not improve from 0.10000"
        "\nEpoch 00003: val_acc did not improve from 0.10000",
        # percent accuracies at 1/2
        "\n".join(f"Epoch: {i} Train Acc: 50.{i}% Valid Acc: 49.9%" for i in range(1, 6)),
    ],
    ids=["whitespace-table", "cost", "keras-checkpoint", "percent"],
)
def test_chance_level(text: str) -> None:
    assert "loss_at_chance" in _findings(text)


def test_fairseq_validation_lines_are_validation() -> None:
    text = (
        "| epoch 001 | loss 9.812 | ppl 899.1 | wps 5000\n| epoch 001 | valid on 'valid' subset | loss 9.71 | ppl 837\n"
        "| epoch 002 | loss 9.811 | ppl 898.2\n| epoch 002 | valid on 'valid' subset | loss 9.70 | ppl 831"
    )
    curves = _curves(text)
    assert curves.primary(TRAIN, LOSS).values == [9.812, 9.811]
    assert curves.primary(VAL, LOSS).values == [9.71, 9.70]


def test_chainer_table_and_healthy_curves_give_no_finding() -> None:
    chainer = (
        "epoch       main/loss   validation/main/loss  main/accuracy  validation/main/accuracy  elapsed_time\n"
        "1           0.191       0.090                 0.942          0.971                     10.3\n"
        "2           0.074       0.078                 0.977          0.976                     20.1\n"
        "3           0.048       0.071                 0.984          0.978                     30.0\n"
        "4           0.036       0.068                 0.988          0.979                     40.2"
    )
    curves = _curves(chainer)
    assert curves.primary(VAL, LOSS).values == [0.09, 0.078, 0.071, 0.068]
    assert _findings(chainer) == {}
    keras = "\n".join(
        f"Epoch {i}/5 - loss: {0.9 / i:.3f} - accuracy: {0.6 + i / 20:.2f} - val_loss: {0.8 / i:.3f} - val_accuracy: "
        f"{0.62 + i / 20:.2f}"
        for i in range(1, 6)
    )
    assert _findings(keras) == {}


def test_a_gap_while_validation_still_improves_is_learning() -> None:
    text = "\n".join(
        f"Epoch: {i} Train Loss: {t} Valid Loss: {v}"
        for i, (t, v) in enumerate([(1.9, 1.8), (1.2, 1.3), (0.8, 1.2), (0.5, 1.1)], 1)
    )
    assert _findings(text) == {}


def test_a_rising_validation_loss_without_training_curve_is_not_overfitting() -> None:
    text = "\n".join(f"epoch {i} val_loss={v}" for i, v in enumerate([0.5, 0.4, 0.45, 0.6, 0.9], 1))
    assert "val_loss_rising" not in _findings(text)


def test_long_logs_are_read_at_head_and_tail() -> None:
    lines = [f"step {i} loss={2.302585 + (i % 3) * 1e-6:.6f}" for i in range(20_000)]
    curves = _curves("\n".join(lines))
    series = curves.primary(TRAIN, LOSS)
    assert 60 <= len(series.points) <= 80
    assert series.points[-1].line == 19_999
    assert "loss_at_chance" in curve_findings(curves)


def test_a_printed_curve_is_noted_with_its_extent() -> None:
    found = curve_findings(_curves("epoch 1 loss: 0.9\nepoch 2 loss: 0.5\nepoch 3 loss: 0.3"))
    assert found["curves_logged"].summary == "loss logged 3 times"
    assert found["curves_logged"].lines == (0, 2)
    assert "curves_logged" not in curve_findings(_curves("epoch 1 loss: 0.9"))
