"""The training-curve reader and what it decides, on every print format the issue tracker shows."""

from __future__ import annotations

import pytest

from bot.diagnosis.curves.blowups import nonfinite_only_at_start, validation_loss_never_finite
from bot.diagnosis.curves.facts import curve_findings
from bot.diagnosis.curves.reader import read_curves
from bot.diagnosis.curves.series import ACC, ERROR, LOSS, TRAIN, VAL, parse_key
from bot.diagnosis.facts import derive_facts
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


def test_a_loss_at_chance_in_the_first_few_steps_is_only_where_training_starts() -> None:
    values = (6.9312, 6.9170, 6.8544)
    first = "\n".join(f"step {i + 1} | loss {v} | lr {i + 1}.0e-05" for i, v in enumerate(values))
    assert "loss_at_chance" not in _findings(first)
    later = "\n".join(f"step {100 * (i + 1)} | loss {v} | lr 1.0e-04" for i, v in enumerate(values))
    assert "loss_at_chance" in _findings(later)


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
    assert found["curves_logged"].summary == "loss logged 3 times: 0.9 at epoch 1, 0.3 at epoch 3"
    assert found["curves_logged"].lines == (0, 2)
    assert "curves_logged" not in curve_findings(_curves("epoch 1 loss: 0.9"))


def test_the_noted_curve_is_the_validation_loss_when_there_is_one() -> None:
    text = "\n".join(
        f"epoch {e} acc: 0.{e}{e} loss: {1 - e / 10:.2f} val_loss: {1.1 - e / 20:.2f}" for e in range(1, 6)
    )
    found = curve_findings(_curves(text))
    assert found["curves_logged"].summary == "val_loss logged 5 times: 1.05 at epoch 1, 0.85 at epoch 5"
    assert found["curves_logged"].lines == (0, 4)


def test_a_qualified_loss_is_its_own_series() -> None:
    text = (
        "| epoch 001 | loss 9.80 | nll_loss 9.10 | ppl 560\n| epoch 002 | loss 9.75 | nll_loss 9.05 | ppl 555\n"
        "| epoch 002 | valid on 'valid' subset | loss 11.7 | nll_loss 11.1 | ppl 2200"
    )
    curves = _curves(text)
    assert curves.primary(TRAIN, LOSS).values == [9.80, 9.75]
    assert curves.series["train/nll/loss"].values == [9.10, 9.05]
    assert curves.primary(VAL, LOSS).values == [11.7]


def test_a_thousands_separator_is_not_a_value() -> None:
    curves = _curves("Accuracy on 10,000 test images:  23.5 %\nAccuracy on 10,000 test images:  24.1 %")
    assert all(10.0 not in s.values and 0.1 not in s.values for s in curves.series.values())


def test_yolo_rows_ending_in_a_progress_bar_keep_their_columns() -> None:
    text = (
        "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
        "       1/50      3.59G      3.074      17.88      2.114         18        640: 100%|##########| 69/69 "
        "[00:19<00:00,  3.47it/s]\n"
        "       2/50      3.13G      2.411      17.94      1.653          5        640: 100%|##########| 69/69 "
        "[00:19<00:00,  3.61it/s]"
    )
    curves = _curves(text)
    box = curves.series["train/box/loss"]
    assert box.values == [3.074, 2.411]
    assert [p.step for p in box.points] == ["epoch 1", "epoch 2"]


def test_epoch_and_batch_in_brackets_name_the_epoch() -> None:
    tutorial = "\n".join(f"[{e},   {b}] loss: {2.3 - e * 0.1 - b / 10_000:.4f}" for e in (1, 2) for b in (20, 40))
    series = _curves(tutorial).primary(TRAIN, LOSS)
    assert [p.step for p in series.points] == ["epoch 1", "epoch 1", "epoch 2", "epoch 2"]
    keyed = "\n".join(
        f"Loss [{e}, {b}](epoch, minibatch):  {3.2 - b / 100_000:.6f}" for e in (31, 32) for b in (100, 200)
    )
    series = _curves(keyed).primary(TRAIN, LOSS)
    assert len(series.points) == 4 and series.points[0].step == "epoch 31"


def test_keras_checkpoint_messages_without_a_value_are_counted() -> None:
    text = "\n".join(
        f"Epoch {i:05d}: val_acc did not improve\n"
        f"472/472 [====] - 0s - loss: {0.52 - i / 1000:.4f} - acc: 0.76 - val_loss: 1.29 - val_acc: 0.4151"
        for i in (1, 2)
    )
    curves = _curves(text)
    assert [improved for *_, improved in curves.improve_messages] == [False, False]
    assert "val_stalled_train_improving" in _findings(text)


def test_a_test_set_is_kept_apart_from_the_validation_set() -> None:
    text = "Training Accuracy = 1.0000\nValid Accuracy = 0.7600\nTraining Accuracy = 0.9995\nValid Accuracy = 0.7600\n"
    text += "Test Accuracy = 0.7987"
    curves = _curves(text)
    assert curves.primary(VAL, ACC).values == [0.76, 0.76]
    assert curves.series["test/accuracy"].values == [0.7987]
    assert "generalization_gap" in _findings(text)


@pytest.mark.parametrize(
    "text",
    [
        # two loss values at ln 2 with an accuracy at 1/2
        "Epoch 6 - Train iter 19926 - XE Loss: 0.6889\nEpoch 6 - Train iter 20006 - XE Loss: 0.7019\n"
        '{"epoch": 6, "valid_acc": 50.9}',
        # XGBoost: a binary log loss that never gets below ln 2
        "\n".join(
            f"[{i}]\ttrain-logloss:{0.96 - i * 0.025:.4f}\teval-logloss:{1.0 - i * 0.025:.4f}" for i in range(10)
        ),
        # an AUC that stays at 0.5
        "\n".join(f"[{i}]\tvalid_0's auc: {0.5 + (i % 3) * 0.01:.3f}" for i in range(6)),
    ],
    ids=["loss-and-accuracy", "binary-logloss", "auc"],
)
def test_chance_level_read_from_related_metrics(text: str) -> None:
    found = _findings(text)
    assert "no_better_than_chance" in found and "loss_at_chance" not in found


def test_a_loss_that_stops_changing_at_all() -> None:
    values = [0.64 - i * 0.03 for i in range(8)] + [0.2504, 0.2503, 0.2503, 0.2503, 0.2502, 0.2502, 0.2502, 0.2503]
    text = "train_loss,epoch\n" + "\n".join(f"{v:.4f},{(i + 1) * 25}" for i, v in enumerate(values))
    assert "the same value" in _findings(text)["loss_flat"].summary
    healthy = "train_loss,epoch\n" + "\n".join(f"{0.9 * 0.8**i:.4f},{i + 1}" for i in range(16))
    assert "loss_flat" not in _findings(healthy)


def test_a_training_accuracy_frozen_at_the_majority_share() -> None:
    text = ",loss,accuracy,val_loss,val_accuracy\n" + "\n".join(
        f"{i},{0.142 - i * 0.001:.4f},0.9383,{0.15 + (i % 4) * 0.005:.4f},0.9375" for i in range(12)
    )
    assert "metric_stuck" in _findings(text)
    # a small validation set repeats its accuracy while training moves: that alone is not stuck
    moving = ",loss,accuracy,val_loss,val_accuracy\n" + "\n".join(
        f"{i},{0.3 - i * 0.01:.4f},{0.9 + i * 0.005:.4f},{0.05:.4f},0.9884" for i in range(12)
    )
    assert "metric_stuck" not in _findings(moving)


def test_a_noisy_accuracy_near_zero_that_never_climbs_is_stuck() -> None:
    scatter = [0.065, 0.04, 0.065, 0.025, 0.06, 0.055, 0.045, 0.06, 0.05, 0.065, 0.055, 0.06, 0.04]
    text = "\n".join(f"Step: {i * 200}; Accuracy: {v};" for i, v in enumerate(scatter))
    assert "metric_stuck" in _findings(text)
    # the same scatter climbing off zero is a slow start, and nine values are too few to call it
    climbing = "\n".join(f"Step: {i * 200}; Accuracy: {v + i * 0.0025:.4f};" for i, v in enumerate(scatter))
    assert "metric_stuck" not in _findings(climbing)
    few = "\n".join(f"Step: {i * 200}; Accuracy: {v};" for i, v in enumerate(scatter[:9]))
    assert "metric_stuck" not in _findings(few)
    # above a tenth, scatter without a trend is no sign: a hard task's accuracy settles there
    higher = "\n".join(f"Step: {i * 200}; Accuracy: {v + 0.1:.3f};" for i, v in enumerate(scatter))
    assert "metric_stuck" not in _findings(higher)


def test_a_flat_accuracy_over_a_few_batches_of_one_late_epoch_is_no_verdict() -> None:
    accs = [57.58, 57.87, 57.28, 57.58]
    late = "\n".join(f"Epoch 13, {64500 + 50 * i}/64667; acc: {a:6.2f}; ppl: 8.0" for i, a in enumerate(accs))
    assert "metric_stuck" not in _findings(late)  # a converged model's batches: flat at what the task allows
    across = "\n".join(f"Epoch {i + 1}, 64650/64667; acc: {a:6.2f}; ppl: 8.0" for i, a in enumerate(accs))
    assert "metric_stuck" in _findings(across)  # the same values epoch after epoch: it does not move


def _detectron_log(rates: list[float]) -> str:
    losses = [1.194, 1.172, 1.120, 1.091, 1.115, 1.108, 1.070]
    return "\n".join(
        f"[11/01 11:23:38 d2.utils.events]: eta: 8:08:27  iter: {639 + 20 * i}  total_loss: {loss:.3f}  "
        f"time: 0.3326  data_time: 0.0328  lr: {rate:.6f}  max_mem: 3961M"
        for i, (loss, rate) in enumerate(zip(losses, rates, strict=True))
    )


def test_a_loss_that_barely_moves_while_the_learning_rate_climbs_at_every_step_is_a_warm_up() -> None:
    climbing = [0.006394 + 0.0002 * i for i in range(7)]  # 19% over the slice: part of a longer warm-up
    assert "loss_plateau_high" not in _findings(_detectron_log(climbing))
    assert "loss_plateau_high" in _findings(_detectron_log([0.0064] * 7))
    wobbling = [0.0064, 0.0065, 0.0066, 0.0065, 0.0066, 0.0067, 0.0068]  # up 6%, not at every step
    assert "loss_plateau_high" in _findings(_detectron_log(wobbling))


def test_a_slowly_rising_score_is_not_stuck() -> None:
    text = "\n".join(f"epoch {i} F1: {0.457 + i * 0.001:.3f}" for i in range(1, 9))
    assert "metric_stuck" not in _findings(text)


def test_one_epoch_of_a_progress_bar_is_no_plateau() -> None:
    text = "\n".join(
        f"Epoch 0:  {i * 5}%|##| {i}/18 [00:17<01:02,  4.47s/it, loss={10.5 - i * 0.1:.3f}, v_num=1]"
        for i in range(1, 10)
    )
    assert "loss_plateau_high" not in _findings(text)


def test_validation_still_reaching_new_bests_is_learning() -> None:
    plateau = [(0.35, 0.274), (0.314, 0.2742), (0.3065, 0.2692), (0.3033, 0.2694), (0.3006, 0.2695), (0.299, 0.2709)]
    plateau += [
        (0.2955, 0.2667),
        (0.2942, 0.2671),
        (0.294, 0.2649),
        (0.2923, 0.2673),
        (0.2894, 0.2648),
        (0.288, 0.2634),
    ]
    text = "\n".join(f"Epoch {i}/20 - loss: {t} - val_loss: {v}" for i, (t, v) in enumerate(plateau, 1))
    assert _findings(text) == {}
    late = "\n".join(
        f"Epoch {i}/200 - loss: {0.7744 - (i % 2) * 0.002:.4f} - val_acc: {0.7737 + (i - 39) * 0.003:.4f}"
        for i in range(39, 46)
    )
    assert "loss_flat" not in _findings(late)


def test_validation_flat_while_training_keeps_falling() -> None:
    text = "epoch,loss,val_loss\n" + "\n".join(
        f"{i},{0.406 - i * 0.0045:.4f},{0.811 - (i % 3) * 0.003:.4f}" for i in range(24, 54)
    )
    assert "val_stalled_train_improving" in _findings(text)


def test_memorised_training_with_validation_only_creeping() -> None:
    text = "\n".join(
        f"Epoch: {i:03d}/050 | Train: 100.00% | Validation: {82.38 + (i - 44) * 0.04:.2f}%" for i in range(44, 52)
    )
    text += "\n" + "\n".join(f"Epoch: {i:03d}/050 | Batch 0100/0175 | Loss: 0.0002" for i in range(44, 52))
    assert "generalization_gap" in _findings(text)


def test_validation_that_never_improves_at_a_low_accuracy() -> None:
    rows = [(2.31, 0.14, 1.799, 0.159), (2.05, 0.16, 1.861, 0.222), (1.96, 0.18, 1.820, 0.206),
            (1.94, 0.22, 1.803, 0.191), (1.88, 0.18, 1.820, 0.222), (1.83, 0.24, 1.796, 0.191),
            (1.80, 0.25, 1.809, 0.206), (1.79, 0.24, 1.801, 0.222)]  # fmt: skip
    text = "\n".join(
        f"Epoch {i}/80 - loss: {a} - acc: {b} - val_loss: {c} - val_acc: {d}" for i, (a, b, c, d) in enumerate(rows, 1)
    )
    assert "validation_never_improved" in _findings(text)
    assert "val_stalled_train_improving" not in _findings(text)


def test_a_noisy_validation_loss_that_never_gets_back_to_its_best() -> None:
    text = "\n".join(
        f"Epoch : {i} | Train loss : {t} | Validation loss : {v}"
        for i, (t, v) in enumerate(
            [(0.135, 0.0696), (0.066, 0.0621), (0.054, 0.0719), (0.047, 0.0658), (0.040, 0.0724)]
        )
    )
    found = _findings(text)
    assert "val_stalled_train_improving" in found and "val_loss_rising" not in found


def test_an_accuracy_gap_while_validation_still_climbs_is_learning() -> None:
    val = [0.04 + 0.006 * i + (0.08 if i == 28 else 0.0) for i in range(34)]  # noisy: its best a few epochs back
    text = "\n".join(f"Epoch {i} - accuracy: {0.07 + 0.01 * i:.4f} - val_accuracy: {v:.4f}" for i, v in enumerate(val))
    assert "generalization_gap" not in _findings(text)
    stalled = [0.04 + 0.006 * min(i, 6) + (0.02 if i == 5 else 0.0) for i in range(34)]  # flat after epoch 6
    text = "\n".join(
        f"Epoch {i} - accuracy: {0.07 + 0.01 * i:.4f} - val_accuracy: {v:.4f}" for i, v in enumerate(stalled)
    )
    assert "generalization_gap" in _findings(text)


def test_a_confusion_matrix_with_one_predicted_class() -> None:
    matrix = "Training Confusion Matrix for Epoch 65:\n [[    0     0  7917     0]\n [    0     0  2748     0]\n"
    matrix += " [    0     0 17009     0]\n [    0     0  5407     0]]"
    facts, findings, _ = derive_facts(LogDocument(text_to_lines(matrix)), None)
    assert "single_class_predictions" in facts
    assert "column 3 of 4" in findings["single_class_predictions"].summary
    spread = matrix.replace("[    0     0  2748     0]", "[    0  2748     0     0]")
    assert "single_class_predictions" not in derive_facts(LogDocument(text_to_lines(spread)), None)[0]


def test_a_slow_upward_drift_after_the_best_is_a_turn() -> None:
    val = [3.72, 3.64, 3.61, 3.60, 3.56, 3.53, 3.51, 3.53, 3.52, 3.50, 3.49, 3.52, 3.52, 3.51, 3.50, 3.54, 3.55, 3.55]
    val += [3.54, 3.58, 3.60, 3.60, 3.60, 3.64, 3.66, 3.67, 3.67]
    text = "\n".join(f"Epoch {i}: Train Loss: {3.79 - i * 0.04:.4f}, Val Loss: {v:.4f}" for i, v in enumerate(val, 1))
    assert "val_loss_rising" in _findings(text)


def test_a_last_evaluation_far_above_the_best_in_a_short_run() -> None:
    text = "epoch,accuracy,loss,val_accuracy,val_loss\n0,0.78,0.4443,0.864,0.2904\n1,0.90,0.2465,0.888,0.2678\n"
    text += "2,0.95,0.1339,0.876,0.3689"
    found = _findings(text)
    assert "val_stalled_train_improving" in found and "val_loss_rising" not in found


def test_a_results_csv_header_with_digits_in_its_names() -> None:
    text = "epoch,time,train/box_loss,metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,lr/pg0,lr/pg1,lr/pg2\n"
    text += "\n".join(f"{e},{e * 4.1:.1f},{1.6 - e * 0.01:.4f},0.87,0.44,{1.6 + e * 0.02:.4f},0.0019,0.0019,0.0019"
                      for e in range(10, 60, 5))  # fmt: skip
    curves = _curves(text)
    assert curves.series["train/box/loss"].points[0].step == "epoch 10"
    assert len(curves.series["val/box/loss"].points) == 10


def test_bare_split_names_beside_a_named_loss_are_scores() -> None:
    text = "Epoch: 001, Loss: 1.9490, Train: 0.1786, Val: 0.1140, Test: 0.1120"
    curves = _curves(text)
    assert curves.primary(TRAIN, ACC).values == [0.1786]
    assert curves.primary(VAL, ACC).values == [0.114]
    catboost = "0:\tlearn: 0.6569860\ttest: 0.6570642\tbest: 0.6570642 (0)\ttotal: 70.1ms"
    assert _curves(catboost).primary(TRAIN, ACC) is None


def test_a_noisy_batch_loss_hovering_at_ln_2_is_chance() -> None:
    noise = [0.05, -0.02, 0.03, 0.0, 0.08, -0.01, 0.02, 0.04, -0.015, 0.01, 0.025, -0.005, 0.015, 0.0, 0.03, -0.01]
    text = "\n".join(f"batch step: {i} loss: {0.70 + d:.4f}" for i, d in enumerate(noise))
    finding = _findings(text)["loss_at_chance"]
    assert "ln(2)" in finding.summary and "noisy" in finding.summary
    falling = "\n".join(f"batch step: {i} loss: {2.9 - i * 0.05 + (0.06 if i % 2 else -0.06):.4f}" for i in range(24))
    assert "loss_at_chance" not in _findings(falling)  # passes ln 10 on its way down
    learning = "\n".join(f"batch step: {i} loss: {0.70 * 0.93**i + (0.05 if i % 3 else 0.0):.4f}" for i in range(16))
    assert "loss_at_chance" not in _findings(learning)


def test_a_loss_from_the_first_twentieth_of_the_first_epoch_is_too_early_for_chance() -> None:
    noise = [0.05, -0.02, 0.03, 0.0, 0.08, -0.01, 0.02, 0.04, -0.015, 0.01, 0.025, -0.005, 0.015, 0.0, 0.03, -0.01]
    dicts = "{{'loss': {:.4f}, 'learning_rate': 1e-06, 'epoch': {}}}"
    start = "\n".join(dicts.format(0.70 + d, round(0.002 * (i + 1), 3)) for i, d in enumerate(noise))
    assert "loss_at_chance" not in _findings(start)  # minutes into a Hugging Face run: every run starts at ln 2
    later = "\n".join(dicts.format(0.70 + d, round(1.2 + 0.05 * i, 2)) for i, d in enumerate(noise))
    assert "ln(2)" in _findings(later)["loss_at_chance"].summary  # the same losses a whole epoch on: at chance


def test_an_accuracy_at_exactly_1_over_k_lets_a_loss_near_ln_k_count() -> None:
    text = "eval_accuracy = 0.1, eval_loss = 2.391, global_step = 300\neval_accuracy = 0.1, eval_loss = 2.389"
    assert "no_better_than_chance" in _findings(text)  # 4% above ln 10, accuracy exactly 1/10
    loose = "eval_accuracy = 0.115, eval_loss = 2.391, global_step = 300\neval_accuracy = 0.112, eval_loss = 2.389"
    assert "no_better_than_chance" not in _findings(loose)


@pytest.mark.parametrize(
    "text",
    [
        "Test loss: 2.3026\nTest accuracy: 0.1000",  # one final evaluation, at ln 10 and 1/10
        "wandb: Run summary:\nwandb:      train_loss 0.69312\nwandb:       train_acc 0.5004",
    ],
)
def test_a_single_final_loss_and_accuracy_at_chance(text: str) -> None:
    assert "no_better_than_chance" in _findings(text)


@pytest.mark.parametrize("text", ["Test loss: 2.25\nTest accuracy: 0.1000", "Test loss: 0.2911\nTest accuracy: 0.9135"])
def test_a_single_value_near_chance_is_not_enough(text: str) -> None:
    assert "no_better_than_chance" not in _findings(text)


def test_percent_values_are_not_a_table_header() -> None:
    curves = _curves("Training accuracy: 99.6%\nValidation accuracy: 58.9%")
    assert [p.value for p in curves.series["train/accuracy"].points] == [pytest.approx(0.996)]
    assert "generalization_gap" in _findings("Training accuracy: 99.6%\nValidation accuracy: 58.9%")


def test_a_settled_loss_late_in_a_run_with_a_high_accuracy_is_converged() -> None:
    text = "\n".join(
        f"Epoch {e}/40 | Train Loss: {0.3712 + 0.002 * (e % 3):.4f} | Train Acc: {0.951 + 0.001 * (e % 2):.3f} "
        f"| Val Loss: {0.4120 + 0.003 * (e % 2):.4f} | Val Acc: {0.931 + 0.002 * (e % 3):.3f}"
        for e in range(31, 39)
    )
    assert _findings(text) == {}


def test_a_loss_that_came_down_to_ln_k_from_far_above_is_no_chance_level() -> None:
    # a 1000-class loss (6.9 at the start) settling at 1.61 = ln 5 learnt its way there
    values = [6.91, 4.2, 2.9, 2.1, 1.8] + [1.612 - 0.004 * (i % 3) for i in range(40)]
    text = "\n".join(f"step {100 * (i + 1)} | loss {v:.4f} | lr 3.00e-04" for i, v in enumerate(values))
    assert "loss_at_chance" not in _findings(text)


_YOLO_EPOCH = (
    "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
    "{e:>8}/100      4.02G      {box}      {cls}      {dfl}         22        640: 100%|##########| 120/120\n"
    "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|######| 9/9\n"
    "                   all        250        812      {p}      {r}      {m50}      {m95}\n"
)


def test_a_detection_score_at_zero_while_the_loss_does_not_fall_is_stuck() -> None:
    # two evaluations are enough (the "metric stuck" check needs three)
    rows = [(1, "2.912", "24.31", "2.204"), (2, "2.951", "24.40", "2.231")]
    text = "".join(_YOLO_EPOCH.format(e=e, box=b, cls=c, dfl=d, p="0", r="0", m50="0", m95="0") for e, b, c, d in rows)
    found = _findings(text)
    assert "metric_stuck" in found and "zero at all" in found["metric_stuck"].summary


def test_a_detection_score_at_zero_in_the_first_epochs_of_a_falling_loss_is_a_start() -> None:
    rows = [(1, "3.104", "5.872", "2.611", "0", "0"), (2, "2.233", "3.410", "1.925", "0", "0")]
    rows.append((3, "1.716", "2.265", "1.533", "0.0412", "0.0187"))
    text = "".join(
        _YOLO_EPOCH.format(e=e, box=b, cls=c, dfl=d, p="0.31", r="0.12", m50=m, m95=n) for e, b, c, d, m, n in rows
    )
    assert "metric_stuck" not in _findings(text)
    text = "".join(
        _YOLO_EPOCH.format(e=e, box=b, cls=c, dfl=d, p="0", r="0", m50="0", m95="0") for e, b, c, d, *_ in rows[:2]
    )
    assert "metric_stuck" not in _findings(text)


def test_an_imbalanced_binary_task_at_its_class_prior_is_no_better_than_chance() -> None:
    # 82% of the samples are negatives: accuracy 0.82 from the first epoch and a loss at H(0.82) = 0.471
    rows = [(0.5973, 0.8116, 0.5021, 0.8203), (0.4877, 0.8192, 0.4760, 0.8203), (0.4753, 0.8199, 0.4731, 0.8203)]
    rows += [(0.4741, 0.8201, 0.4722, 0.8203), (0.4738, 0.8205, 0.4729, 0.8203), (0.4730, 0.8198, 0.4725, 0.8203)]
    text = "\n".join(
        f"Epoch {e + 1}/30 - loss: {a:.4f} - binary_accuracy: {b:.4f} - val_loss: {c:.4f} - "
        f"val_binary_accuracy: {d:.4f}"
        for e, (a, b, c, d) in enumerate(rows)
    )
    assert "no_better_than_chance" in _findings(text)


def test_a_healthy_binary_model_at_a_similar_accuracy_has_a_loss_well_below_the_entropy() -> None:
    # accuracy 0.80-0.84 from the first epoch, but confident where right: the loss near 0.33, far below H(0.82)
    rows = [(0.4210, 0.8012, 0.3915, 0.8124), (0.3702, 0.8190, 0.3563, 0.8247), (0.3460, 0.8288, 0.3391, 0.8302)]
    rows += [(0.3322, 0.8341, 0.3322, 0.8331), (0.3251, 0.8377, 0.3301, 0.8350), (0.3193, 0.8402, 0.3297, 0.8344)]
    text = "\n".join(
        f"Epoch {e + 1}/30 - loss: {a:.4f} - accuracy: {b:.4f} - val_loss: {c:.4f} - val_accuracy: {d:.4f}"
        for e, (a, b, c, d) in enumerate(rows)
    )
    assert "no_better_than_chance" not in _findings(text)


def _early_stopped(val: list[float], train: list[float]) -> str:
    lines = [
        f"Epoch {e + 1}/50\n310/310 [==============================] - 4s 12ms/step - loss: {t:.4f} - val_loss: {v:.4f}"
        for e, (t, v) in enumerate(zip(train, val, strict=True))
    ]
    best = min(range(len(val)), key=val.__getitem__)
    lines.append(f"Restoring model weights from the end of the best epoch: {best + 1}.")
    lines.append(f"Epoch {len(val)}: early stopping")
    return "\n".join(lines)


def test_early_stopping_after_a_small_steady_rise_is_overfitting() -> None:
    from bot.diagnosis.classifier import Classifier
    from bot.diagnosis.knowledge import load_knowledge

    # a percent or two above its best, higher at four of its five evaluations since, training still falling
    val = [0.9134, 0.7712, 0.7120, 0.6894, 0.6751, 0.6768, 0.6790, 0.6782, 0.6811, 0.6834]
    train = [0.9820, 0.7305, 0.6409, 0.5911, 0.5540, 0.5216, 0.4930, 0.4662, 0.4421, 0.4187]
    text = _early_stopped(val, train)
    found = _findings(text)
    assert "val_loss_crept_up" in found and "val_loss_rising" not in found
    assert Classifier(load_knowledge()).classify(text_to_lines(text)).failure_class == "overfitting"


def test_early_stopping_on_a_wobble_about_the_best_is_no_rise() -> None:
    # after its best the validation loss goes up and down at noise level: an ordinary early stop
    val = [0.9134, 0.7712, 0.7120, 0.6894, 0.6751, 0.6779, 0.6760, 0.6791, 0.6772, 0.6788]
    train = [0.9820, 0.7305, 0.6409, 0.5911, 0.5540, 0.5216, 0.4930, 0.4662, 0.4421, 0.4187]
    assert "val_loss_crept_up" not in _findings(_early_stopped(val, train))
    # the same small climb, but training settled as well: nothing is being memorised
    val = [0.9134, 0.7712, 0.7120, 0.6894, 0.6751, 0.6768, 0.6790, 0.6782, 0.6811, 0.6834]
    train = [0.9820, 0.7305, 0.6409, 0.5911, 0.5540, 0.5531, 0.5525, 0.5519, 0.5522, 0.5514]
    assert "val_loss_crept_up" not in _findings(_early_stopped(val, train))


def _stalled_epochs(score: str, final: float) -> str:
    """A loss that fell from 2.30 to ~1.35 in four epochs, then stayed there for twelve, with `score` beside it."""
    losses = [2.30, 1.90, 1.62, 1.45] + [1.36 + (i % 3) * 0.004 for i in range(12)]
    scores = [0.10, 0.16, 0.19, 0.21] + [final + (i % 2) * 0.003 for i in range(12)]
    return "\n".join(
        f"Epoch {i}/16 - loss: {loss:.4f} - {score}: {value:.4f}"
        for i, (loss, value) in enumerate(zip(losses, scores, strict=True), 1)
    )


def test_a_loss_that_fell_by_less_than_half_and_stalled_with_a_low_accuracy() -> None:
    # 41% down, then flat, the classification accuracy stuck at 22%: it learnt too little
    assert "loss_plateau_high" in _findings(_stalled_epochs("accuracy", 0.22))
    # the same loss beside an accuracy that reached 80%: a model that converged
    assert "loss_plateau_high" not in _findings(_stalled_epochs("accuracy", 0.80))
    # a detector's mAP settles far below one in healthy runs: no chance level, no verdict from its value
    assert "loss_plateau_high" not in _findings(_stalled_epochs("mAP50-95", 0.22))


def _below_training(rise: list[float]) -> str:
    """Validation loss under the training loss all run long (dropout, augmentation), falling to 0.30 at epoch 10, then
    the values in `rise`, while the training loss keeps falling."""
    val = [1.05, 0.93, 0.81, 0.70, 0.60, 0.51, 0.43, 0.37, 0.33, 0.30] + rise
    train = [1.50 - 0.05 * i for i in range(len(val))]
    return "epoch train_loss valid_loss\n" + "\n".join(
        f"{i} {t:.4f} {v:.4f}" for i, (t, v) in enumerate(zip(train, val, strict=True), 1)
    )


def test_a_validation_loss_under_training_that_climbs_at_every_evaluation_turned() -> None:
    # four rises in a row, 0.30 -> 0.345 (+15%), while training fell on: the model starts memorising
    assert "val_loss_rising" in _findings(_below_training([0.31, 0.32, 0.333, 0.345]))
    # the same climb, but small (+4%): still under the training loss, that is noise
    assert "val_loss_rising" not in _findings(_below_training([0.303, 0.306, 0.309, 0.312]))
    # a big rise that fell back once: not a climb at every evaluation
    assert "val_loss_rising" not in _findings(_below_training([0.31, 0.305, 0.33, 0.335]))


def _imagenet_example(rows: list[tuple[float, float, float, float]]) -> str:
    """The PyTorch ImageNet example's progress lines: each step's time and data time, their running averages."""
    return "\n".join(
        f"Epoch: [1][{100 * i}/5005]\tTime {t:.3f} ({ta:.3f})\tData {d:.3f} ({da:.3f})\tLoss 6.2 (6.5)"
        for i, (t, ta, d, da) in enumerate(rows, 1)
    )


def test_the_running_averages_of_step_and_data_time_decide_the_wait() -> None:
    from bot.diagnosis.facts import derive_facts

    def facts(text: str) -> frozenset[str]:
        return derive_facts(LogDocument(text_to_lines(text)), None)[0]

    # most steps find their batch ready (data 0.000), but one in a few waits 15 s: on average 86% of a step is waiting
    starved = _imagenet_example([(0.43, 2.78, 0.0, 2.40), (0.42, 2.78, 0.0, 2.40), (15.8, 2.78, 15.55, 2.40)])
    assert "data_wait_dominates" in facts(starved)
    # one slow batch, but the averages say the loader keeps up (5% of a step)
    fed = _imagenet_example([(0.43, 0.45, 0.01, 0.02), (0.42, 0.45, 0.01, 0.02), (3.1, 0.46, 2.9, 0.03)])
    assert "data_wait_dominates" not in facts(fed)


def test_a_first_epoch_below_the_class_prior_does_not_hide_it() -> None:
    # epoch 1 averages the random start (0.64); from epoch 2 on the accuracy is the majority share 0.7951 and the loss
    # settles at H(0.7951) = 0.507
    rows = [(0.6402, 0.6431), (0.5215, 0.7951), (0.5122, 0.7951), (0.5107, 0.7951), (0.5101, 0.7951), (0.5099, 0.7951)]
    text = "\n".join(f"Epoch {e + 1}/10 - loss: {a:.4f} - acc: {b:.4f}" for e, (a, b) in enumerate(rows))
    assert "no_better_than_chance" in _findings(text)
    # with only four epochs the first one still counts: too little to set it aside
    assert "no_better_than_chance" not in _findings("\n".join(text.splitlines()[:4]))


def _dict_epochs(first: int, values: list[float]) -> str:
    return "\n".join(f'{{"train_loss": {v}, "epoch": {first + i}}}' for i, v in enumerate(values))


def test_a_late_loss_at_an_unusual_ln_k_is_a_coincidence_of_scale() -> None:
    at_ln3 = [1.0995, 1.0990, 1.1001, 1.0968, 1.0935, 1.0952, 1.0921, 1.0915, 1.0861, 1.0874, 1.0822]
    # epochs 199-209 of a self-supervised run whose loss happens to be near ln 3 = 1.0986 (drifting down past it)
    assert "loss_at_chance" not in _findings(_dict_epochs(199, at_ln3))
    # late, but at ln 3 to the fourth decimal: that is no coincidence
    assert "loss_at_chance" in _findings(_dict_epochs(199, [1.0986, 1.0987, 1.0985, 1.0986, 1.0986]))
    # the same values from the first epoch on: a 3-class model that never got far from guessing
    assert "loss_at_chance" in _findings(_dict_epochs(1, at_ln3))
    # late, but at ln 10 = 2.3026: a usual class count stays a verdict
    at_ln10 = [2.3031, 2.3019, 2.3027, 2.3024, 2.3030, 2.3021, 2.3026, 2.3023]
    assert "loss_at_chance" in _findings(_dict_epochs(199, at_ln10))


def _mmcls_epoch_two(rates: list[float]) -> str:
    losses = [6.711, 6.702, 6.690, 6.684, 6.676, 6.668, 6.659, 6.651]
    return "\n".join(
        f"2024-01-05 09:{10 + i}:00,000 - mmcls - INFO - Epoch [2][{100 * (i + 4)}/2503]\tlr: {r:.3e}, "
        f"eta: 3 days, 19:30:00, time: 0.425, data_time: 0.001, memory: 12880, loss: {v:.4f}"
        for i, (r, v) in enumerate(zip(rates, losses, strict=True))
    )


def test_a_flat_loss_during_learning_rate_warm_up_is_no_verdict() -> None:
    rising = [5.0e-05 + i * 2.0e-06 for i in range(8)]  # 5.0e-05 -> 6.4e-05: still warming up
    assert "loss_flat" not in _findings(_mmcls_epoch_two(rising))
    # the same loss at a steady learning rate: the model does not learn
    assert "loss_flat" in _findings(_mmcls_epoch_two([1.0e-04] * 8))


def _imagenet_start(epoch: int, first_batch: int) -> str:
    return "\n".join(
        f"Epoch: [{epoch}][{first_batch + 10 * i}/5005]\tTime 0.154 (0.160)\tData 0.001 (0.002)\t"
        f"Loss {6.9078 - 0.0001 * (i % 3):.4f} (6.9079)\tAcc@1 0.000 (0.095)\tAcc@5 0.391 (0.498)"
        for i in range(8)
    )


def test_the_first_batches_of_the_first_epoch_are_too_early_to_judge() -> None:
    # batches 10-80 of 5005 in epoch 0: a 1000-class loss at ln 1000 = 6.908 is where every run begins
    assert _findings(_imagenet_start(0, 10)) == {}
    # the same loss half-way through the epoch: the model has not left guessing
    assert "loss_at_chance" in _findings(_imagenet_start(0, 2500))
    # and in the first batches of a later epoch
    assert "loss_at_chance" in _findings(_imagenet_start(3, 10))


def test_a_newest_first_table_pairs_each_validation_value_with_its_own_training_value() -> None:
    # BigQuery ML's training info, newest iteration first: eval_loss best at iteration 2, then worse three times
    # while the training loss keeps falling
    rows = [(5, 0.3501, 1.4120), (4, 0.4488, 1.2467), (3, 0.6010, 1.1205), (2, 0.8032, 1.0511), (1, 1.2045, 1.3020)]
    rows += [(0, 1.9033, 1.9214)]
    text = "   training_run  iteration      loss  eval_loss  learning_rate  duration_ms\n" + "\n".join(
        f"{i}             0          {it}  {t:.6f}   {v:.6f}            0.1        30000"
        for i, (it, t, v) in enumerate(rows)
    )
    finding = _findings(text)["val_loss_rising"]
    assert "1.051 at iteration 2" in finding.summary and "0.601 -> 0.3501" in finding.summary  # iteration 3 -> 5


def _lightning(rows: list[tuple[float, float, float]]) -> str:
    """Lightning progress bars, one an epoch: (train_loss, val_loss, val_acc)."""
    return "\n".join(
        f"Epoch {i}: 100%|##########| 250/250 [00:10<00:00, 24.51it/s, loss={t:.3g}, v_num=0, val_loss={v:.3f}, "
        f"val_acc={a:.3f}, train_loss={t:.3f}]"
        for i, (t, v, a) in enumerate(rows)
    )


# training loss falling by a third an epoch; validation loss gains under 5% over its last four evaluations
SATURATED = [
    (2.29, 2.299, 0.096), (1.39, 1.766, 0.431), (0.832, 1.561, 0.567), (0.508, 1.388, 0.671),
    (0.314, 1.361, 0.696), (0.198, 1.356, 0.697), (0.128, 1.361, 0.690), (0.086, 1.334, 0.706),
]  # fmt: skip


def test_validation_saturated_while_training_keeps_falling_is_overfitting() -> None:
    found = _findings(_lightning(SATURATED))
    assert "val_stalled_train_improving" in found, found
    assert "1.361 at epoch 4" in found["val_stalled_train_improving"].summary


def test_validation_still_gaining_beside_a_falling_training_loss_is_no_finding() -> None:
    """The same run with validation still gaining 5% or more over its last four evaluations: learning, not a turn."""
    improving = [(t, v if i < 4 else v * (1 - 0.03 * (i - 3)), a) for i, (t, v, a) in enumerate(SATURATED)]
    assert not _findings(_lightning(improving))


def _keras_regression(rows: list[tuple[float, float]]) -> str:
    """Keras progress lines of a regression (MSE loss, no accuracy): (loss, val_loss) an epoch."""
    lines = []
    for i, (loss, val) in enumerate(rows, start=1):
        lines.append(f"Epoch {i}/{len(rows)}")
        lines.append(
            f"312/312 [==============================] - 2s 6ms/step - loss: {loss:.4f} - mae: {loss**0.5:.4f} "
            f"- val_loss: {val:.4f} - val_mae: {val**0.5:.4f}"
        )
    return "\n".join(lines)


# the training loss level after its first epoch, the validation loss never 3% below its first value
NOTHING_LEARNT = [(48.2, 41.37), (40.96, 41.02), (43.5, 41.3), (40.71, 42.2), (41.88, 40.95), (42.3, 41.6),
                  (40.5, 41.1), (41.9, 42.4)]  # fmt: skip


def test_a_loss_only_run_whose_validation_never_improved_from_the_start_is_underfitting() -> None:
    found = _findings(_keras_regression(NOTHING_LEARNT))
    assert "validation_never_improved" in found, found
    assert found["validation_never_improved"].summary.startswith("val_loss 41.37 at epoch 1, 42.4 at epoch 8")


def test_a_loss_only_run_whose_validation_improved_or_that_trains_ahead_is_not_never_improved() -> None:
    improving = [(t, v * (1 - 0.01 * i)) for i, (t, v) in enumerate(NOTHING_LEARNT)]
    assert "validation_never_improved" not in _findings(_keras_regression(improving))
    memorising = [(t * (1 - 0.05 * i), v) for i, (t, v) in enumerate(NOTHING_LEARNT)]  # training pulls away
    assert "validation_never_improved" not in _findings(_keras_regression(memorising))


def _keras_f1(values: list[float]) -> str:
    return "\n".join(
        f"Epoch {i}/30\n131/131 [==============================] - 45s 340ms/step - loss: {0.5 - 0.01 * i:.3f} - "
        f"f1_score: {v + 0.01:.4f} - val_loss: {0.52 - 0.01 * i:.3f} - val_f1_score: {v:.4f}"
        for i, v in enumerate(values, start=1)
    )


def test_a_high_score_settled_to_the_third_decimal_is_no_stuck_metric_but_a_low_one_is() -> None:
    """An F1 (a score with no chance level) repeating to 0.002 at 0.88 is a converged model; at 0.31, one that keeps
    giving the same answers."""
    settled = [0.8833, 0.8817, 0.8831, 0.8833, 0.8820, 0.8821, 0.8827]
    assert "metric_stuck" not in _findings(_keras_f1(settled))
    low = [0.3101, 0.3104, 0.3101, 0.3102, 0.3101, 0.3103, 0.3101]
    assert "metric_stuck" in _findings(_keras_f1(low))


def test_a_percentage_that_begins_a_name_is_not_a_value() -> None:
    # Caffe prints each output blob by name; "50%-fire-rate" names a blob, it is no 50% loss
    curves = _curves(
        "I0314 17:24:19.773170 27053 solver.cpp:242] Iteration 17200, loss = 2.21847\n"
        "I0314 17:24:19.773236 27053 solver.cpp:258]     Train net output #0: loss: 50%-fire-rate = 0.0034709 "
        "(* 1 = 0.0034709 loss)\n"
        "I0314 17:24:39.260385 27053 solver.cpp:242] Iteration 17300, loss = 2.17777\n"
    )
    assert [p.value for p in curves.series["train/loss"].points] == [2.21847, 2.17777]


def _keras_run(losses: list[tuple[float, float]], start: int = 1) -> str:
    total = len(losses) + start - 1
    return "\n".join(
        f"Epoch {i}/{total}\n100/100 [==============================] - 3s - loss: {t:.4f} - val_loss: {v:.4f}"
        for i, (t, v) in enumerate(losses, start=start)
    )


HEALTHY_RUN = [(2.1 - 0.25 * i, 2.15 - 0.24 * i) for i in range(7)]  # both losses fall to ~0.6
CHANCE_RUN = [(2.3026 + 0.0004 * (i % 2), 2.3027 - 0.0003 * (i % 3)) for i in range(8)]  # ln(10), epoch after epoch


def test_a_second_run_in_the_same_log_is_judged_alone() -> None:
    """A relaunch printed after an earlier run's progress: its epochs count from 1 again and its loss starts over,
    so only its own points make the curve (the earlier run's fall would hide that this one learns nothing)."""
    text = _keras_run(HEALTHY_RUN) + "\nTraining again with the new data loader\n" + _keras_run(CHANCE_RUN)
    assert [round(v, 4) for v in _curves(text).primary(TRAIN, LOSS).values] == [round(t, 4) for t, _ in CHANCE_RUN]
    assert "loss_at_chance" in _findings(text)
    # the other way round, the last run learns: no finding, though the first one was at chance
    assert _findings(_keras_run(CHANCE_RUN) + "\n" + _keras_run(HEALTHY_RUN)) == {}


def test_a_second_table_over_the_same_epochs_is_no_second_run() -> None:
    # accuracies for epochs 1-6, then the losses of the same epochs: the count goes back, no run starts over
    accuracies = "\n".join(f"Epoch {i} | Train acc: {0.5 + 0.05 * i:.2f} | Val acc: {0.5 + 0.04 * i:.2f}" for i in
                           range(1, 7))  # fmt: skip
    losses = "\n".join(f"Epoch {i} | Train loss: {1.0 - 0.1 * i:.2f}" for i in range(1, 7))
    curves = _curves(accuracies + "\n" + losses)
    assert len(curves.primary(TRAIN, ACC).points) == 6
    assert len(curves.primary(TRAIN, LOSS).points) == 6


def test_epochs_counted_anew_while_the_loss_goes_on_are_one_model() -> None:
    """Active learning or a resumed job that counts its epochs from 1 again while the loss continues where it was:
    the same model trained further, so both stretches stay on the curve."""
    first = [(2.2 - 0.2 * i, 2.1 - 0.05 * i) for i in range(5)]
    second = [(first[-1][0] + 0.01 - 0.2 * i, 1.9 + 0.05 * i) for i in range(4)]
    curves = _curves(_keras_run(first) + "\nTrain on 6537 samples\n" + _keras_run(second))
    assert len(curves.primary(TRAIN, LOSS).points) == 9


def test_a_batch_counter_that_starts_over_every_epoch_is_one_run() -> None:
    """Iterations numbered within each epoch go back to 50 at every epoch while the perplexity keeps falling: one run,
    every point kept."""
    text = "\n".join(
        f"Epoch {e} ; Iter {i}/213 ; LR 1.0000 ; PPL {9000 / (4 * (e - 1) + i / 50):.2f} ;"
        for e in range(1, 4)
        for i in (50, 100, 150, 200)
    )
    curves = _curves(text)
    assert len(curves.primary(TRAIN, ERROR).points) == 12


def test_a_loss_that_starts_over_at_a_step_count_going_back_is_a_new_run() -> None:
    """A step-numbered run (no epochs) that learned, then step 100 again with the loss back near its start: a new
    run, judged alone."""
    first = [f"step {s}: loss {4.0 - 0.5 * i:.3f}" for i, s in enumerate(range(100, 700, 100))]
    second = [f"step {s}: loss {3.9 - 0.001 * i:.3f}" for i, s in enumerate(range(100, 1000, 100))]
    curves = _curves("\n".join(first + second))
    assert curves.primary(TRAIN, LOSS).values[0] == 3.9
    assert len(curves.primary(TRAIN, LOSS).points) == 9


def test_a_banner_for_the_next_epoch_printed_early_is_no_new_run() -> None:
    """A progress bar that prints the next epoch's banner on the line of the previous epoch's last batch: the epoch
    count reads 1, 2, 1, 2 - no run of epochs went back, whatever the noisy batch losses do."""
    losses = [0.97, 1.37, 1.24, 0.97, 1.04, 1.17, 1.22, 0.96]
    lines = [f"Epoch 1, Step {i}, Loss: {v:.4f}" for i, v in enumerate(losses)]
    lines[-2] += " Beginning of Epoch 2/18"
    lines += [f"Epoch 2, Step {i}, Loss: {v:.4f}" for i, v in enumerate(losses)]
    assert len(_curves("\n".join(lines)).primary(TRAIN, LOSS).points) == 16


def test_a_relaunch_after_a_run_stuck_at_chance_starts_a_new_curve() -> None:
    """A run stuck at ln(10), then a relaunch of the same task: it starts at ln(10) too, so its first loss goes on
    from where the stuck run was - but that run never fell, so this is a new run, and it learns: no finding."""
    relaunch = [(2.3 - 0.25 * i, 2.31 - 0.24 * i) for i in range(7)]
    text = _keras_run(CHANCE_RUN) + "\nrelaunched with lr=3e-4\n" + _keras_run(relaunch)
    curves = _curves(text)
    assert len(curves.primary(TRAIN, LOSS).points) == len(relaunch)
    assert _findings(text) == {}


def test_a_summary_naming_the_best_epoch_is_no_new_run() -> None:
    """A line after the run that names an earlier epoch ("worse than the best 0.487 (epoch 4)") sends the epoch
    count back once: one count is no run, and the curve before it stays whole (validation turning at epoch 4)."""
    curve = [(0.812, 0.774), (0.544, 0.561), (0.391, 0.498), (0.268, 0.487), (0.171, 0.533), (0.102, 0.612),
             (0.061, 0.705), (0.034, 0.811)]  # fmt: skip
    text = "\n".join(f"epoch {e} | train_loss {t:.3f} | val_loss {v:.3f}" for e, (t, v) in enumerate(curve, start=1))
    text += "\nquality gate: val_loss 0.811 is worse than the best 0.487 (epoch 4); refusing to export"
    curves = _curves(text)
    assert len(curves.primary(TRAIN, LOSS).points) == 8
    assert curves.run_start is None
    turned = _findings(text)["val_loss_rising"].summary
    # the summary names the best epoch, not its own: its value is the latest, told by its line
    assert "best 0.487 at epoch 4" in turned and "0.811 at epoch 4" not in turned and "0.811 on log line 9" in turned


def test_a_relaunch_two_epochs_in_is_already_a_run_of_its_own() -> None:
    text = _keras_run(HEALTHY_RUN) + "\nrelaunched\n" + _keras_run(CHANCE_RUN[:2])
    assert [round(v, 4) for v in _curves(text).primary(TRAIN, LOSS).values] == [round(t, 4) for t, _ in CHANCE_RUN[:2]]


def test_the_earlier_runs_messages_and_rates_are_dropped_with_its_points() -> None:
    """Run 1's improvement messages, learning rates and scheduler cuts say nothing of run 2: they go with its points,
    and a learning rate printed on run 2's first line stays."""
    first = [
        f"Epoch {i}/4 - loss: {2.0 - 0.3 * i:.4f} - val_loss: {2.1 - 0.3 * i:.4f} - lr: 0.0010" for i in range(1, 5)
    ]
    first.insert(2, "Epoch 00002: val_loss improved from 1.80000 to 1.50000, saving model to best.h5")
    first.append("Epoch 00004: ReduceLROnPlateau reducing learning rate to 1e-07.")
    second = [f"Epoch {i}/3 - loss: 2.3026 - val_loss: 2.3026 - lr: 0.0030" for i in range(1, 4)]
    curves = _curves("\n".join(first + second))
    assert curves.run_start is not None
    assert curves.improve_messages == []
    assert curves.lr_reductions == []
    assert [line for line, _ in curves.learning_rates] == [curves.run_start, curves.run_start + 1, curves.run_start + 2]


def test_a_relaunch_whose_loss_starts_a_little_above_where_the_last_run_ended_is_a_new_run() -> None:
    """Run 1 fell from 2.0 to 1.1 in three epochs; run 2 starts at ln(5) = 1.61, half again above where run 1 ended
    (not within a tenth): a new run, judged alone."""
    first = [f"Epoch {i}/3 - loss: {v:.4f}" for i, v in enumerate((2.0, 1.5, 1.1), start=1)]
    second = [f"Epoch {i}/4 - loss: 1.6094" for i in range(1, 5)]
    curves = _curves("\n".join(first + second))
    assert curves.primary(TRAIN, LOSS).values == [1.6094] * 4


def test_a_metric_printed_only_by_the_earlier_run_does_not_hide_the_restart() -> None:
    first = [f"Epoch {i}/4 - aux_loss: {1.0 - 0.1 * i:.3f} - loss: {2.0 - 0.3 * i:.4f}" for i in range(1, 5)]
    second = [f"Epoch {i}/3 - loss: 2.3026" for i in range(1, 4)]
    curves = _curves("\n".join(first + second))
    assert sorted(curves.series) == ["train/loss"]
    assert len(curves.series["train/loss"].points) == 3


def test_step_counts_going_back_are_a_new_run_only_when_the_loss_starts_over() -> None:
    def log(first: list[float], restart: float) -> str:
        lines = [f"step {100 * (i + 1)}: loss {v:.3f}" for i, v in enumerate(first)]
        return "\n".join([*lines, *(f"step {100 * (i + 1)}: loss {restart - 0.001 * i:.3f}" for i in range(4))])

    # three values that fell, then the count back at 100 with the loss above the middle of them: a new run
    assert len(_curves(log([4.0, 2.0, 1.0], 2.6)).primary(TRAIN, LOSS).points) == 4
    assert len(_curves(log([0.9, 0.5, 0.3], 0.85)).primary(TRAIN, LOSS).points) == 4  # a loss below 1 as well
    # the loss back only to below the middle, or a loss that never fell: a batch counter, one run
    assert len(_curves(log([4.0, 2.0, 1.0], 2.0)).primary(TRAIN, LOSS).points) == 7
    assert len(_curves(log([2.0, 2.1, 2.0], 2.05)).primary(TRAIN, LOSS).points) == 7


def test_of_three_runs_in_one_log_the_last_is_judged() -> None:
    """Run 1 falls from 5.0 to 1.0, run 2 sits at ln(10), run 3 starts just below it and learns: run 3's start is
    measured against run 2 alone (which never fell), so run 3 is a run of its own."""
    first = [(5.0 - 1.0 * i, 5.1 - 1.0 * i) for i in range(5)]
    third = [(2.25 - 0.3 * i, 2.3 - 0.3 * i) for i in range(4)]
    curves = _curves("\nrelaunched\n".join(_keras_run(run) for run in (first, CHANCE_RUN, third)))
    assert [round(v, 4) for v in curves.primary(TRAIN, LOSS).values] == [round(t, 4) for t, _ in third]


def test_a_gap_is_measured_between_two_values_of_the_same_score() -> None:
    train = (0.60, 0.80, 0.92, 0.97, 0.99, 0.995)
    held = (0.55, 0.62, 0.64, 0.64, 0.63, 0.64)

    def run(val_key: str) -> dict:
        rows = "\n".join(f"{e + 1},{t},{v}" for e, (t, v) in enumerate(zip(train, held, strict=True)))
        return _findings(f"epoch,train_accuracy,{val_key}\n{rows}")

    assert "generalization_gap" in run("val_accuracy")  # memorised: 0.995 against 0.64
    assert "generalization_gap" not in run("val_mAP")  # a detector's AP is no accuracy: no gap to measure


def test_a_split_prefix_does_not_count_against_a_component_metrics_name() -> None:
    # Keras names each output's metric after its layer; the validation copy adds only "val_"
    parsed = parse_key("val_cls3_fc_pose_xyz_acc")
    assert parsed is not None and (parsed.split, parsed.group) == (VAL, ACC)
    assert parse_key("cls3_fc_pose_xyz_acc") is not None
    assert parse_key("aux_cls3_fc_pose_xyz_acc") is None  # six words of a name: no metric key


def test_a_training_accuracy_that_hardly_moved_memorised_nothing() -> None:
    train = (0.52, 0.51, 0.54, 0.555, 0.54)
    held = (0.57, 0.36, 0.36, 0.36, 0.36)
    rows = "\n".join(f"{e + 1},{t},{v}" for e, (t, v) in enumerate(zip(train, held, strict=True)))
    assert "generalization_gap" not in _findings(f"epoch,train_acc,val_acc\n{rows}")
    # the same validation curve beside a training accuracy that climbed: the gap grew as training memorised
    climbed = "\n".join(f"{e + 1},{0.55 + 0.1 * e},{v}" for e, v in enumerate(held))
    assert "generalization_gap" in _findings(f"epoch,train_acc,val_acc\n{climbed}")


def test_ranking_scores_named_without_a_split_are_held_out_values() -> None:
    for key in ("HR", "NDCG", "MRR", "HR@10"):
        parsed = parse_key(key)
        assert parsed is not None and (parsed.split, parsed.group) == (VAL, ACC), key
    # a recommender whose hit ratio still climbs is learning, however its training loss levels off
    text = "\n".join(
        f"Epoch {e}: HR = {0.53 + 0.02 * e:.4f}, NDCG = {0.30 + 0.012 * e:.4f}, "
        f"train_loss = {0.32 - 0.01 * min(e, 7):.4f}"
        for e in range(12)
    )
    assert not _findings(text)


def test_an_accuracy_still_at_zero_in_the_first_few_steps_is_where_training_starts() -> None:
    losses = (5.22, 4.10, 3.57, 3.37)
    first = "\n".join(f"step: {10 * (i + 1)}  acc: 0  loss: {v}" for i, v in enumerate(losses))
    found = _findings(first)
    assert "loss_at_chance" not in found and "metric_stuck" not in found, found
    # the same accuracy, still 0 hundreds of steps later: the model does not learn
    later = "\n".join(f"step: {300 * (i + 1)}  acc: 0  loss: {v}" for i, v in enumerate(losses))
    assert set(_findings(later)) & {"loss_at_chance", "metric_stuck"}


def test_a_memorised_training_loss_beside_a_validation_loss_at_its_best_is_no_gap() -> None:
    """Training loss near zero, validation loss 40x higher but back within 2% of its best: a model that fits its
    training set, its validation no worse than ever - no generalisation-gap verdict. Ten percent above the best, the
    same gap is one."""
    train = [0.93, 0.41, 0.22, 0.12, 0.062, 0.034, 0.019, 0.011, 0.0071, 0.0049, 0.0038, 0.0031]
    held = [0.52, 0.37, 0.31, 0.286, 0.278, 0.274, 0.2733, 0.2719, 0.2722, 0.2716, 0.2729, 0.2738]
    rows = "\n".join(f"{e},{t},{v}" for e, (t, v) in enumerate(zip(train, held, strict=True)))
    assert "generalization_gap" not in _findings(f"epoch,loss,val_loss\n{rows}")
    held[-1] *= 1.1
    risen = "\n".join(f"{e},{t},{v}" for e, (t, v) in enumerate(zip(train, held, strict=True)))
    assert "generalization_gap" in _findings(f"epoch,loss,val_loss\n{risen}")


def _validation_never_finite(text: str) -> bool:
    return validation_loss_never_finite(_curves(text))


def test_a_validation_loss_nan_at_every_evaluation_beside_finite_training_losses_is_the_evaluation_failing() -> None:
    row = "epoch {} | train_loss {:.2f} | val_loss nan | val_acc {:.2f}"
    rows = [row.format(i, 2.0 - 0.2 * i, 0.4 + 0.05 * i) for i in range(1, 5)]
    assert _validation_never_finite("\n".join(rows))
    # a training loss that turned NaN too is a divergence: the NaN reached the weights
    diverged = rows[:3] + ["epoch 4 | train_loss nan | val_loss nan | val_acc 0.10"]
    assert not _validation_never_finite("\n".join(diverged))
    # a validation loss that was a number once is no evaluation that never worked (a NaN later is a turn to judge)
    once = ["epoch 1 | train_loss 1.80 | val_loss 1.70 | val_acc 0.45", *rows[1:]]
    assert not _validation_never_finite("\n".join(once))
    # two evaluations are too few to say it never worked
    assert not _validation_never_finite("\n".join(rows[:2]))


def _facts(text: str) -> frozenset[str]:
    return derive_facts(LogDocument(text_to_lines(text)), None)[0]


def test_an_r2_below_zero_in_the_first_steps_only_is_no_underfitting_fact() -> None:
    early = "step 100 loss=11.1 R²_rand=-0.1250\nstep 200 loss=9.8 R²_rand=-0.0938\nstep 900 loss=2.1 R²_rand=0.9717"
    assert "r2_ended_good" in _facts(early)
    # the last R² is what the model came to: below 0.5 at the end is no recovery, whatever came first
    assert "r2_ended_good" not in _facts("epoch 1 R2: 0.81\nepoch 2 R2: 0.62\nepoch 3 R2: 0.31")
    assert "r2_ended_good" not in _facts("epoch 1 R2: -0.40\nepoch 9 R2: -0.02")
    # one value is no course to judge
    assert "r2_ended_good" not in _facts("final R2: 0.93")
    # "R²" followed by a colon or a space: no word boundary after the superscript two, and still its name
    assert "r2_ended_good" in _facts("epoch 1  R²: -0.31\nepoch 2  R²: 0.44\nepoch 3  R² = 0.87")


def test_a_loss_infinite_at_its_first_print_then_finite_while_training_went_on_is_no_divergence() -> None:
    """A solver that prints the loss every hundred iterations and the accuracies every epoch: inf at the first print,
    a number at the next, and three or more accuracies logged after the inf - the first batch overflowed and the
    run trained on."""
    epochs = [f"(Epoch {e} / 9) train acc: {0.2 + 0.02 * e:.6f}; val_acc: {0.18 + 0.015 * e:.6f}" for e in range(9)]
    log = ["(Iteration 1 / 300) loss: inf", *epochs[:5], "(Iteration 101 / 300) loss: 2.118734", *epochs[5:]]
    assert nonfinite_only_at_start(_curves("\n".join(log)))
    # two accuracies after the inf are too little to say training went on
    short = ["(Iteration 1 / 300) loss: inf", *epochs[:2], "(Iteration 101 / 300) loss: 2.118734"]
    assert not nonfinite_only_at_start(_curves("\n".join(short)))
    # a NaN at a later print too is a NaN in the weights: a divergence
    later_nan = [*log, "(Iteration 201 / 300) loss: nan"]
    assert not nonfinite_only_at_start(_curves("\n".join(later_nan)))


def test_a_loss_rising_to_a_hundred_times_its_start_is_a_divergence_and_no_plateau() -> None:
    """Rising at four of five prints to 100x its start, its steps growing: a run diverging before NaN. A running
    total (equal steps) is no divergence; a loss that rose to three times its start is no plateau either."""
    rising = [2.41, 3.02, 4.57, 6.10, 9.83, 15.2, 27.9, 44.1, 81.6, 150.3, 262.7]
    text = "\n".join(f"step {1000 + 100 * i} | loss {v:.2f}" for i, v in enumerate(rising))
    assert "loss_spiked" in _findings(text) and "diverging" in _findings(text)["loss_spiked"].summary
    total = "\n".join(f"step {1000 + 100 * i} | loss {0.7 + 120.0 * i:.2f}" for i in range(8))
    assert "loss_spiked" not in _findings(total)
    wobbly = [2.30, 2.28, 2.31, 2.29, 2.35, 2.6, 3.4, 4.1, 3.9, 5.2, 6.8]  # up to three times: not a hundred
    findings = _findings("\n".join(f"epoch {i} | loss {v:.2f}" for i, v in enumerate(wobbly)))
    assert "loss_spiked" not in findings
    assert not any("stopped" in f.summary for f in findings.values())
