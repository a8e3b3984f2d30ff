"""Every print format of a training curve that the reader must take in, each with lines written for this test:
what series it reads, what it decides, and that a curve improving normally is no diagnosis (the job answers
`unknown`)."""

from __future__ import annotations

import math

import pytest

from bot.diagnosis.classifier import Classifier
from bot.diagnosis.curves.facts import curve_findings
from bot.diagnosis.curves.line_pairs import read_line
from bot.diagnosis.curves.reader import read_curves
from bot.diagnosis.curves.series import ACC
from bot.diagnosis.knowledge import load_knowledge
from bot.intake.log_document import LogDocument
from bot.intake.log_input import text_to_lines


def _curves(text: str):
    return read_curves(LogDocument(text_to_lines(text)))


def _findings(text: str) -> dict:
    return {name: f for name, f in curve_findings(_curves(text)).items() if name != "curves_logged"}


def _values(text: str, norm: str) -> list[float]:
    series = _curves(text).series.get(norm)
    assert series is not None, f"{norm} not read: {sorted(_curves(text).series)}"
    return [round(p.value, 4) for p in series.points]


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier(load_knowledge())


# a split word opening a pipe-separated part names the split of the bare keys after it
PIPE_PARTS = (
    "12:01:07 | INFO | Epoch  1/40 | Train Loss: 2.1904 Acc: 0.2460 | Val Loss: 2.2811 Acc: 0.1180 F1: 0.0391 |\n"
    "12:01:19 | INFO | Epoch  2/40 | Train Loss: 2.1712 Acc: 0.2510 | Val Loss: 2.2690 Acc: 0.1310 F1: 0.0420 |"
)


# a dash with a space after it between a key and its value (segmentation_models_pytorch's epoch runner, hand-rolled
# loops): "dice_loss - 0.61", "Train Loss - 2.3027"; a minus sign before a digit is still a negative value
DASH_SEPARATED = (
    "train: 100%|##########| 46/46 [00:31<00:00,  1.46it/s, dice_loss - 0.6121, iou_score - 0.3504]\n"
    "valid: 100%|##########| 12/12 [00:03<00:00,  3.80it/s, dice_loss - 0.6544, iou_score - 0.3012]\n"
    "Epoch 2/12 | Train Loss - 2.3027 | Val Loss - 2.3031 | reward -0.5"
)


# a sentence's "is" between a key and its value: "training loss is 0.59", "validation loss is 0.45"
KEY_IS_VALUE = (
    "training loss is  0.59 and training accuracy is 16724/25000      66.9\n"
    "validation loss is  0.45 and validation accuracy is 19687/25000     78.75"
)


# --- reading: each format gives the series a practitioner would plot -------------------------------------------

SKORCH_BLANK_CP = (
    "  epoch    train_loss    valid_acc    valid_loss    cp     dur\n"
    "-------  ------------  -----------  ------------  ----  ------\n"
    "      1        0.5204       0.7400        0.4711     +  0.0512\n"
    "      2        0.3310       0.7900        0.4102     +  0.0498\n"
    "      3        0.2105       0.7800        0.4530        0.0503\n"
    "      4        0.1202       0.7750        0.5208        0.0501\n"
    "      5        0.0611       0.7700        0.6013        0.0507"
)
TENSORBOARD_CSV = (
    "run-resnet_validation-tag-epoch_loss.csv\nWall time,Step,Value\n1700000000.5,0,1.91\n1700000300.1,1,1.42\n"
    "1700000600.7,2,1.18\n1700000900.2,3,1.05"
)
DARKNET = (
    " 812: 6.908012, 6.907911 avg loss, 0.001000 rate, 3.02 seconds, 51968 images\n"
    " 813: 6.907502, 6.907870 avg loss, 0.001000 rate, 3.01 seconds, 52032 images\n"
    " 814: 6.908421, 6.907925 avg loss, 0.001000 rate, 3.03 seconds, 52096 images\n"
    " 815: 6.907611, 6.907894 avg loss, 0.001000 rate, 3.02 seconds, 52160 images"
)
BRACKET_KEYS = (
    "2020-03-01 11:02:10 - trainer - INFO - [epoch]: 4, [batch]: 300, [loss]: 1.0986\n"
    "2020-03-01 11:02:40 - trainer - INFO - [epoch]: 4, [batch]: 400, [loss]: 1.0987\n"
    "2020-03-01 11:03:10 - trainer - INFO - [epoch]: 5, [batch]: 100, [loss]: 1.0985"
)
TRAIN_AND_VAL_SECTIONS = (
    "Epoch 1 | Train: loss 0.812 acc 0.611 | Val: loss 0.744 acc 0.652\n"
    "Epoch 2 | Train: loss 0.503 acc 0.792 | Val: loss 0.790 acc 0.660\n"
    "Epoch 3 | Train: loss 0.214 acc 0.931 | Val: loss 0.987 acc 0.648\n"
    "Epoch 4 | Train: loss 0.077 acc 0.981 | Val: loss 1.264 acc 0.633"
)
TQDM_TRAIN_THEN_VAL = "\n".join(
    f"100%|##########| {n}/{n} [00:{s}<00:00, 19.1it/s, loss={loss}, acc={acc}]"
    for n, s, loss, acc in (
        (625, 31, 0.905, 0.66),
        (125, "04", 0.801, 0.71),
        (625, 31, 0.551, 0.80),
        (125, "04", 0.823, 0.72),
        (625, 31, 0.302, 0.90),
        (125, "04", 0.967, 0.71),
        (625, 31, 0.140, 0.96),
        (125, "04", 1.215, 0.70),
    )
)
HF_LOG_HISTORY_CSV = (
    "loss,grad_norm,learning_rate,epoch,step,eval_loss,eval_wer,eval_runtime\n"
    "41.102,80.1,6e-05,0.5,200,,,\n6.731,3.1,0.00012,1.0,400,,,\n,,,1.0,400,6.602,1.0,40.2\n"
    "6.655,1.2,0.00018,1.5,600,,,\n6.640,0.8,0.00024,2.0,800,,,\n,,,2.0,800,6.598,1.0,40.1\n"
    "6.662,0.9,0.00029,2.5,1000,,,\n,,,2.5,1000,6.611,1.0,40.3"
)
YOLO_WITH_VALIDATION = (
    "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
    "       1/30      2.11G      1.512      2.304      1.401         41        640: 100%|#####| 52/52 [00:21<00:00]\n"
    "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|##########| 7/7\n"
    "                   all        101        388      0.402      0.361      0.334      0.187\n"
    "\n"
    "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
    "       2/30      2.30G      1.388      1.905      1.322         37        640: 100%|#####| 52/52 [00:20<00:00]\n"
    "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|##########| 7/7\n"
    "                   all        101        388      0.488      0.422      0.419      0.244"
)
FASTAI_ERROR_RATE = (
    "epoch     train_loss  valid_loss  error_rate  time    \n"
    "0         1.301221    0.912310    0.281000    00:21     \n"
    "1         0.822104    0.700923    0.221000    00:20     \n"
    "2         0.561002    0.612340    0.190000    00:20     "
)
BQML_TRAINING_INFO = (  # BigQuery ML's ML.TRAINING_INFO, newest iteration first, as pandas prints it
    "   training_run  iteration      loss  eval_loss  learning_rate  duration_ms\n"
    "0             0          3  0.402113   0.415870            0.2        30117\n"
    "1             0          2  0.455920   0.466301            0.2        29804\n"
    "2             0          1  0.611472   0.620055            0.2        31230\n"
    "3             0          0  1.905310   1.912284            0.1        35512"
)
FASTAI_V1_TIMED = (  # fastai v1: no time column in the header, each row ends in its duration
    "epoch train_loss valid_loss accuracy\n"
    "1 0.904512 0.651200 0.712000 (00:31)\n"
    "2 0.610877 0.533019 0.781500 (00:29)\n"
    "3 0.455190 0.498114 0.802750 (00:30)"
)
MXNET = (
    "INFO:root:Epoch[0] Batch [200]\tSpeed: 2101.5 samples/sec\taccuracy=0.412500\n"
    "INFO:root:Epoch[0] Train-accuracy=0.455210\nINFO:root:Epoch[0] Validation-accuracy=0.501200\n"
    "INFO:root:Epoch[1] Train-accuracy=0.611023\nINFO:root:Epoch[1] Validation-accuracy=0.602100"
)
TF_ESTIMATOR = (
    "INFO:tensorflow:loss = 1.3862944, step = 1\nINFO:tensorflow:loss = 1.3862901, step = 101 (2.1 sec)\n"
    "INFO:tensorflow:loss = 1.3862930, step = 201 (2.1 sec)\n"
    "INFO:tensorflow:Saving dict for global step 500: accuracy = 0.25, global_step = 500, loss = 1.3862928"
)
CAFFE_TEST_NET = (
    "I0412 10:11:12.000001  1201 solver.cpp:330] Iteration 500, Testing net (#0)\n"
    "I0412 10:11:14.000001  1201 solver.cpp:397]     Test net output #0: accuracy = 0.0998\n"
    "I0412 10:11:14.000002  1201 solver.cpp:397]     Test net output #1: loss = 2.30251 (* 1 = 2.30251 loss)\n"
    "I0412 10:11:15.000001  1201 solver.cpp:218] Iteration 500 (4.1 iter/s, 24.3s/100 iters), loss = 2.30262\n"
    "I0412 10:13:12.000001  1201 solver.cpp:330] Iteration 1000, Testing net (#0)\n"
    "I0412 10:13:14.000001  1201 solver.cpp:397]     Test net output #0: accuracy = 0.1001\n"
    "I0412 10:13:14.000002  1201 solver.cpp:397]     Test net output #1: loss = 2.30259 (* 1 = 2.30259 loss)\n"
    "I0412 10:13:15.000001  1201 solver.cpp:218] Iteration 1000 (4.1 iter/s, 24.2s/100 iters), loss = 2.30248"
)
TORCH_TUTORIAL = (
    "[1,  2000] loss: 2.304\n[1,  4000] loss: 2.303\n[2,  2000] loss: 2.303\n"
    "Accuracy of the network on the 10000 test images: 10 %"
)
IMAGENET_EXAMPLE = (
    "Epoch: [3][ 100/5005]\tTime  0.412 ( 0.420)\tLoss 6.9080e+00 (6.9079e+00)\tAcc@1   0.10 (  0.09)\n"
    "Epoch: [3][ 200/5005]\tTime  0.409 ( 0.418)\tLoss 6.9076e+00 (6.9078e+00)\tAcc@1   0.00 (  0.10)\n"
    "Epoch: [3][ 300/5005]\tTime  0.411 ( 0.418)\tLoss 6.9079e+00 (6.9078e+00)\tAcc@1   0.20 (  0.10)"
)
PANDAS_SUMMARY_ROWS = (
    "   TestAcc  TestLoss\n1    0.041     3.911\n2    0.022     3.913\n3    0.035     3.909\n"
    "mean 0.033    3.911\nstd  0.010    0.002"
)

# Trax's training loop prints one metric a line, split and name before a bar
TRAX_LOOP = """Step     50: Ran 49 train steps in 45.91 secs
Step     50: train CrossEntropy3d |  2.21896791
Step     50: eval  CrossEntropy3d |  1.99541283
Step     50: eval        Accuracy |  0.30110000
Did not save checkpoint as output_dir is None

Step    100: train CrossEntropy3d |  1.97824812
Step    100: eval  CrossEntropy3d |  1.94622588
Step    100: eval        Accuracy |  0.31020000

Step    150: train CrossEntropy3d |  1.96946120
Step    150: eval  CrossEntropy3d |  1.95210052
Step    150: eval        Accuracy |  0.30870000
"""


@pytest.mark.parametrize(
    ("text", "norm", "values"),
    [
        (SKORCH_BLANK_CP, "val/loss", [0.4711, 0.4102, 0.453, 0.5208, 0.6013]),
        (TENSORBOARD_CSV, "val/loss", [1.91, 1.42, 1.18, 1.05]),
        (DARKNET, "train/loss", [6.9079, 6.9079, 6.9079, 6.9079]),
        (BRACKET_KEYS, "train/loss", [1.0986, 1.0987, 1.0985]),
        (TRAIN_AND_VAL_SECTIONS, "val/loss", [0.744, 0.79, 0.987, 1.264]),
        (TRAIN_AND_VAL_SECTIONS, "train/loss", [0.812, 0.503, 0.214, 0.077]),
        (TQDM_TRAIN_THEN_VAL, "val/loss", [0.801, 0.823, 0.967, 1.215]),
        (TQDM_TRAIN_THEN_VAL, "train/loss", [0.905, 0.551, 0.302, 0.14]),
        (HF_LOG_HISTORY_CSV, "val/wer", [1.0, 1.0, 1.0]),
        (HF_LOG_HISTORY_CSV, "train/loss", [41.102, 6.731, 6.655, 6.64, 6.662]),
        (YOLO_WITH_VALIDATION, "val/ap50", [0.334, 0.419]),
        (FASTAI_ERROR_RATE, "val/rate/error", [0.281, 0.221, 0.19]),
        (FASTAI_V1_TIMED, "val/loss", [0.6512, 0.533, 0.4981]),
        (BQML_TRAINING_INFO, "val/loss", [1.9123, 0.6201, 0.4663, 0.4159]),
        (MXNET, "val/accuracy", [0.5012, 0.6021]),
        (TF_ESTIMATOR, "val/accuracy", [0.25]),
        (CAFFE_TEST_NET, "test/accuracy", [0.0998, 0.1001]),
        (TORCH_TUTORIAL, "test/accuracy", [0.1]),
        (IMAGENET_EXAMPLE, "train/1/acc", [0.001, 0.0, 0.002]),
        (PANDAS_SUMMARY_ROWS, "test/loss", [3.911, 3.913, 3.909]),
        (TRAX_LOOP, "val/crossentropy", [1.9954, 1.9462, 1.9521]),
        (TRAX_LOOP, "train/crossentropy", [2.219, 1.9782, 1.9695]),
        (TRAX_LOOP, "val/accuracy", [0.3011, 0.3102, 0.3087]),
        ("Iter 5100: Training Loss = 0.0552, Accuracy = 0.9800\nIter 5120: Testing Accuracy = 0.4336", "test/accuracy",
         [0.4336]),
        (PIPE_PARTS, "val/acc", [0.118, 0.131]),
        (PIPE_PARTS, "train/acc", [0.246, 0.251]),
        (DASH_SEPARATED, "train/dice/loss", [0.6121]),
        (DASH_SEPARATED, "val/dice/loss", [0.6544]),
        (DASH_SEPARATED, "val/loss", [2.3031]),
        (KEY_IS_VALUE, "train/loss", [0.59]),
        (KEY_IS_VALUE, "val/loss", [0.45]),
        (KEY_IS_VALUE, "val/accuracy", [0.7875]),
    ],
    ids=[
        "skorch-blank-cell", "tensorboard-csv", "darknet", "bracket-keys", "sections-val", "sections-train",
        "tqdm-val-pass", "tqdm-train-pass", "hf-csv-empty-cells", "hf-csv-train", "yolo-map", "fastai-error-rate",
        "fastai-v1-timed-rows", "bqml-newest-first", "mxnet", "tf-estimator-eval-dict", "caffe-test-net",
        "torch-tutorial-accuracy", "imagenet-acc-at-1", "pandas-summary-rows",
        "trax-eval-dimension-suffix", "trax-train", "trax-accuracy", "testing-is-held-out",
        "pipe-part-val", "pipe-part-train", "dash-smp-train", "dash-smp-valid", "dash-epoch-line",
        "key-is-train", "key-is-val", "key-is-val-count",
    ],
)  # fmt: skip
def test_the_reader_takes_in_the_format(text: str, norm: str, values: list[float]) -> None:
    assert _values(text, norm) == values


# Chinese names: a split and a measure ("训练损失" train loss, "验证集准确率" validation-set accuracy), full-width
# colons
CHINESE_NAMES = (
    "Epoch 1 完成 | 训练损失: 2.3011 | 验证损失: 2.2950 | 时间: 61.2s\n"
    "Epoch 2 完成 | 训练损失: 1.8125 | 验证损失: 1.9733 | 时间: 60.8s\n"
    "第3轮 训练集准确率：0.6120，验证集准确率：0.5480\n"
    "第4轮 训练集准确率：0.7315，验证集准确率：0.5702"
)
# bare split names with "=" and no metric word: one objective per split ("train=7.61 [cls=1.37 | reg=4.50] | val=...")
BARE_SPLITS_EQUALS = (
    "  Epoch  20 | train=7.6119 [cls=1.3755 | reg=4.5000] | val=265.9421 | lr=5.64e-04\n"
    "  Epoch  21 | train=7.5893 [cls=1.3547 | reg=4.5000] | val=264.9039 | lr=5.21e-04"
)


# two or three dots after each value (the PyTorch course loops many notebooks copy); a version's dots are no end
DOTTED_COURSE_LOOP = (
    "Epoch 1/8.. Train loss: 0.464.. Test loss: 4.610.. Test accuracy: 0.012..\n"
    "Epoch 2/8.. Train loss: 0.231.. Test loss: 3.712.. Test accuracy: 0.204..\n"
    "Epoch: 3/30... Step: 280... Loss: 1.9494... Val Loss: 1.9430\n"
    "Epoch: 4/30... Step: 420... Loss: 1.6350... Val Loss: 1.6608\n"
    "torch version: 1.13.1 loss: 0.5"
)


@pytest.mark.parametrize(
    ("text", "norm", "values"),
    [
        (DOTTED_COURSE_LOOP, "train/loss", [0.464, 0.231, 1.9494, 1.635, 0.5]),
        (DOTTED_COURSE_LOOP, "test/accuracy", [0.012, 0.204]),
        (CHINESE_NAMES, "train/loss", [2.3011, 1.8125]),
        (CHINESE_NAMES, "val/loss", [2.295, 1.9733]),
        (CHINESE_NAMES, "val/acc", [0.548, 0.5702]),
        (BARE_SPLITS_EQUALS, "train/objective", [7.6119, 7.5893]),
        (BARE_SPLITS_EQUALS, "val/objective", [265.9421, 264.9039]),
    ],
    ids=[
        "dotted-train-loss", "dotted-test-accuracy", "chinese-train-loss", "chinese-val-loss", "chinese-val-acc",
        "equals-train", "equals-val",
    ],
)
def test_the_reader_takes_in_names_without_english_metric_words(text: str, norm: str, values: list[float]) -> None:
    assert _values(text, norm) == values


def test_a_gap_between_losses_that_overflowed_is_no_memorising() -> None:
    # a held-out loss of 2e22 beside a training loss of 1.5e10: the run blew up, whatever the gap
    text = "Epoch 1/160.. Train loss: 14892892290.250.. Test loss: 20263487121007182872576.000.. Test accuracy: 0.125"
    assert _values(text, "test/loss") == [2.0263487121007183e22]
    assert _findings(text) == {}
    ordinary = text.replace("14892892290.250", "0.912").replace("20263487121007182872576.000", "7.3")
    assert _findings(ordinary)["generalization_gap"].summary == "Test loss 7.3 against Train loss 0.912 at epoch 1"


def test_a_chinese_word_for_training_alone_names_no_metric() -> None:
    # "开始训练 3 轮" (start training, 3 rounds): no measure word, no series
    assert read_line("开始训练 3 轮").found == ()
    assert _curves("开始训练 3 轮\n开始训练 4 轮").series == {}
    # nor does a numeric precision ("混合精度" mixed precision, "半精度" half precision), whatever number follows it
    assert _curves("混合精度: 1\n半精度: 0\n混合精度: 1").series == {}
    assert _values("训练精度: 0.61\n训练精度: 0.73", "train/acc") == [0.61, 0.73]


def test_a_validation_loss_turning_in_chinese_is_found() -> None:
    text = "\n".join(
        f"Epoch {e} 完成 | 训练损失: {t} | 验证损失: {v}"
        for e, t, v in ((1, 2.10, 2.05), (2, 1.52, 1.61), (3, 1.01, 1.48), (4, 0.62, 1.71), (5, 0.31, 2.04))
    )
    found = _findings(text)
    assert "val_loss_rising" in found
    assert found["val_loss_rising"].summary.startswith("val_loss best 1.48 at epoch 3, 2.04 at epoch 5")


def test_steps_are_read_from_bracketed_epochs() -> None:
    steps = [p.step for p in _curves(MXNET).series["val/accuracy"].points]
    assert steps == ["epoch 0", "epoch 1"]
    assert [p.step for p in _curves(IMAGENET_EXAMPLE).series["train/loss"].points] == ["epoch 3"] * 3


def test_the_best_epoch_a_line_names_is_no_step_of_that_line() -> None:
    # Keras prints its restore message on the progress bar's line: "best epoch: 3" is no step back to epoch 3
    text = (
        "Epoch 8/50\n930/938 [============================>.] - ETA: 0s - loss: 0.1180 - accuracy: 0.9620"
        "Restoring model weights from the end of the best epoch: 3."
    )
    assert [p.step for p in _curves(text).series["train/loss"].points] == ["epoch 8"]


def test_an_error_code_is_no_error_rate() -> None:
    assert _curves("Check that the CUDA driver is configured correctly. (error code is 126)").series == {}


def test_a_hf_run_summary_is_not_a_point_on_the_curve() -> None:
    text = (
        "{'loss': 0.8, 'learning_rate': 4e-05, 'epoch': 1.0}\n{'loss': 0.4, 'learning_rate': 2e-05, 'epoch': 2.0}\n"
        "{'train_runtime': 310.2, 'train_samples_per_second': 41.0, 'train_loss': 0.6, 'epoch': 2.0}"
    )
    assert _values(text, "train/loss") == [0.8, 0.4]


def test_a_progress_bar_value_and_a_logged_value_on_one_line_are_one_point() -> None:
    text = "Epoch 2: 100%|#####| 400/400 [00:21<00:00, loss=0.412, v_num=3, val_loss=0.51, train_loss=0.405]"
    assert _values(text, "train/loss") == [0.405]  # the value the line names as training's, not the bar's running one


# --- deciding -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", [SKORCH_BLANK_CP, TRAIN_AND_VAL_SECTIONS, TQDM_TRAIN_THEN_VAL], ids=["skorch", "sections", "tqdm"]
)
def test_validation_turning_is_found_in_these_formats(text: str) -> None:
    found = _findings(text)
    assert "val_loss_rising" in found
    assert " best " in found["val_loss_rising"].summary


def test_xgboost_scikit_learn_eval_sets_first_is_the_training_set() -> None:
    text = "\n".join(
        f"[{r}]\tvalidation_0-logloss:{a}\tvalidation_1-logloss:{b}"
        for r, a, b in ((0, 0.652, 0.661), (100, 0.301, 0.402), (200, 0.152, 0.431), (300, 0.071, 0.489),
                        (400, 0.033, 0.547))
    )  # fmt: skip
    found = _findings(text)
    assert "val_loss_rising" in found
    assert found["val_loss_rising"].summary.startswith(
        "validation_1-logloss best 0.402 at round 100, 0.547 at round 400"
    )


@pytest.mark.parametrize(
    "text",
    [DARKNET, BRACKET_KEYS, TF_ESTIMATOR, CAFFE_TEST_NET, TORCH_TUTORIAL, IMAGENET_EXAMPLE],
    ids=["darknet-ln1000", "bracket-ln3", "estimator-ln4", "caffe-ln10", "tutorial-ln10", "imagenet-ln1000"],
)
def test_chance_level_in_these_formats(text: str) -> None:
    assert "loss_at_chance" in _findings(text)


def test_a_loss_at_ln_50_with_an_accuracy_near_1_over_50() -> None:
    text = "\n".join(
        f"  * {p}%|#   | {e}/200 [12:01<40:00, 58.2s/ep] TrnAcc={a} ValAcc={v} TrnLoss={lt} ValLoss={lv}"
        for p, e, a, v, lt, lv in ((5, 10, 0.024, 0.019, 3.915, 3.914), (10, 20, 0.031, 0.022, 3.909, 3.912))
    )
    assert "no_better_than_chance" in _findings(text)


def test_two_values_both_at_ln_10() -> None:
    assert "loss_at_chance" in _findings("epoch 7 loss: 2.3025\nepoch 8 loss: 2.3027")
    assert "loss_at_chance" not in _findings("epoch 7 loss: 2.2711\nepoch 8 loss: 2.3405")


_GLOG_EVALS = """I0322 09:12:01.100288 3141 solver.cpp:347] Iteration 0, Testing net (#0)
I0322 09:13:40.551020 3141 solver.cpp:415]     Test net output #0: accuracy = {first}
I0322 09:14:02.301120 3141 solver.cpp:218] Iteration 0, loss = 2.9104
I0322 09:17:02.301120 3141 solver.cpp:218] Iteration 1000, loss = 2.6417
I0322 09:20:02.301120 3141 solver.cpp:218] Iteration {last_step}, loss = 2.4035
I0322 09:33:05.002310 3141 solver.cpp:347] Iteration {last_step}, Testing net (#0)
I0322 09:34:44.871200 3141 solver.cpp:415]     Test net output #0: accuracy = {last}
"""


def test_glog_prefixed_lines_name_their_iteration() -> None:
    text = _GLOG_EVALS.format(first=0.1642, last=0.1642, last_step=2000)
    steps = [p.step for p in _curves(text).series["test/accuracy"].points]
    assert steps == ["iteration 0", "iteration 2000"]


def test_a_validation_accuracy_still_at_its_untrained_value() -> None:
    found = _findings(_GLOG_EVALS.format(first=0.1642, last=0.1642, last_step=2000))
    assert "before any training" in found["metric_stuck"].summary
    # the accuracy moved off its initial value, or too few steps passed to tell: no finding
    for first, last, last_step in ((0.1642, 0.1711, 2000), (0.1642, 0.1642, 500)):
        found = _findings(_GLOG_EVALS.format(first=first, last=last, last_step=last_step))
        assert "metric_stuck" not in found, (first, last, last_step)


def _steps(values: list[float], first_step: int = 4000, restart_at: int | None = None) -> str:
    steps = [first_step + 100 * i for i in range(len(values))]
    if restart_at is not None:
        steps = steps[:restart_at] + [100 * (i + 1) for i in range(len(values) - restart_at)]
    return "\n".join(f"step {s} | loss {v} | loss scale 1024.0 | lr 0.0003" for s, v in zip(steps, values, strict=True))


def test_a_loss_that_blew_up_mid_run_and_stayed_up() -> None:
    found = _findings(_steps([2.41, 2.39, 2.40, 2.38, 6.93, 7.41, 6.88]))
    assert found["loss_spiked"].summary == (
        "loss steady near 2.41 until step 4300, 6.93 at step 4400 and still 6.88 at step 4600: the run blew up and "
        "did not recover"
    )
    assert found["loss_spiked"].lines == (3, 5)  # the last steady value and the peak
    # a blow-up that climbs over two evaluations: 1.7 times its level, then double and more
    assert "loss_spiked" in _findings(_steps([2.41, 2.39, 2.40, 2.38, 4.10, 5.20, 6.30]))
    assert "loss scale" not in {s.key for s in _curves(_steps([2.4, 2.3])).series.values()}  # fp16's, not a loss
    for values, restart in (
        ([2.41, 2.39, 2.40, 2.38, 6.93, 7.41, 6.88], 4),  # the steps start over: a new run from scratch
        ([2.41, 2.39, 2.40, 2.38, 6.93, 3.10, 2.51], None),  # back down after the spike
        ([2.41, 1.20, 3.02, 1.75, 6.93, 7.41, 6.88], None),  # a noisy loss with no steady stretch before
        ([2.41, 2.39, 2.40, 2.38, 3.90, 4.10, 4.30], None),  # up by half and more, never double: no blow-up yet
        ([2.41, 2.39, 2.40, 2.38, 4.10, 5.20, 3.40], None),  # at 1.4 times its level again: it came back
    ):
        assert "loss_spiked" not in _findings(_steps(values, restart_at=restart)), values


def test_a_loggers_source_location_is_no_metric() -> None:
    text = "\n".join(
        f"[2025-03-02 09:14:0{i},118] [INFO] [loss_scaler.py:190:update_scale] [deepspeed] OVERFLOW! Rank 0"
        for i in range(6)
    )
    assert not _curves(text).series


def test_a_validation_loss_repeated_exactly_means_frozen_weights() -> None:
    text = (
        "[INFO] Step 120000/500000; acc:  31.20; ppl: 61.02; xent: 4.11; lr: 0.00000\n"
        "[INFO] Validation perplexity: 63.4471\n[INFO] Validation accuracy: 30.1881\n"
        "[INFO] Step 140000/500000; acc:  30.77; ppl: 60.31; xent: 4.10; lr: 0.00000\n"
        "[INFO] Validation perplexity: 63.4471\n[INFO] Validation accuracy: 30.1881"
    )
    found = _findings(text)
    assert "loss_flat" in found and "the weights did not change" in found["loss_flat"].summary
    # the same value printed twice for one evaluation (same step) is not a second evaluation
    once = "epoch 3 {'eval_loss': 0.41237, 'epoch': 3.0}\n{'eval_loss': 0.41237, 'epoch': 3.0}"
    assert "loss_flat" not in _findings(once)


def test_a_loss_of_zero_from_the_first_value() -> None:
    text = "Training the model...\nLOSS      P       R       F\n" + "\n".join(
        "0.000   0.000   0.000   0.000" for _ in range(10)
    )
    assert "loss_flat" in _findings(text)


def test_a_word_error_rate_of_100_percent_at_every_evaluation() -> None:
    assert "metric_stuck" in _findings(HF_LOG_HISTORY_CSV)


def test_validation_accuracy_frozen_while_validation_loss_falls() -> None:
    text = "epoch,loss,accuracy,val_loss,val_accuracy\n" + "\n".join(
        f"{i},{0.9 / (i + 1):.4f},{0.80 + i * 0.01:.4f},{0.7 / (i + 1):.4f},0.951273" for i in range(9)
    )
    assert "metric_stuck" in _findings(text)


def test_a_loss_stuck_high_for_most_of_a_long_run_with_sparse_late_epochs() -> None:
    early = [(e, 0.6931 - 0.09 * (e > 1) - 0.002 * e) for e in range(1, 21)]
    late = [(e, 0.505 + 0.003 * (e % 2)) for e in range(294, 301)]
    text = "\n".join(f"Epoch {e}/300 | Loss: {v:.4f}" for e, v in early + late)
    assert "loss_plateau_high" in _findings(text)


def test_a_noisy_validation_rise_while_validation_stays_below_training_is_no_turn() -> None:
    val = [0.46, 0.42, 0.30, 0.28, 0.31, 0.29, 0.27, 0.31, 0.26, 0.31, 0.30, 0.24, 0.19, 0.22, 0.28]
    train = [0.76, 0.69, 0.69, 0.66, 0.62, 0.59, 0.49, 0.50, 0.49, 0.51, 0.49, 0.42, 0.49, 0.43, 0.44]
    text = "epoch,loss,val_loss\n" + "\n".join(f"{i},{t},{v}" for i, (t, v) in enumerate(zip(train, val, strict=True)))
    assert "val_loss_rising" not in _findings(text)


def test_validation_flat_after_its_first_epochs_while_training_falls() -> None:
    val = [1.85, 1.78, 1.77, 1.76, 1.78, 1.75, 1.77, 1.77, 1.76, 1.75, 1.747, 1.774, 1.766, 1.745, 1.742]
    val += [1.76, 1.751, 1.756, 1.789, 1.76, 1.743, 1.751, 1.774, 1.748, 1.754, 1.742, 1.718, 1.745, 1.73, 1.721]
    train = [1.74 - 0.025 * i for i in range(30)]
    text = "train_loss,val_loss\n" + "\n".join(f"{t:.4f},{v}" for t, v in zip(train, val, strict=True))
    assert "val_stalled_train_improving" in _findings(text)


def test_a_gap_with_training_that_hardly_improved_is_no_overfitting() -> None:
    train = [0.60, 0.61, 0.55, 0.55, 0.48, 0.51, 0.46, 0.51, 0.53]
    val = [0.57, 0.53, 0.54, 0.76, 0.22, 0.44, 1.15, 0.32, 2.03]
    text = "epoch,loss,val_loss\n" + "\n".join(f"{i},{t},{v}" for i, (t, v) in enumerate(zip(train, val, strict=True)))
    assert "generalization_gap" not in _findings(text)


# --- a healthy curve, in any format, is no diagnosis ------------------------------------------------------------

HEALTHY = {
    "keras": "\n".join(
        f"Epoch {e}/6\n469/469 [==============================] - 4s 8ms/step - loss: {lt} - accuracy: {at} - "
        f"val_loss: {lv} - val_accuracy: {av}"
        for e, lt, at, lv, av in (
            (1, 0.512, 0.842, 0.301, 0.910),
            (2, 0.281, 0.915, 0.233, 0.931),
            (3, 0.214, 0.936, 0.192, 0.944),
            (4, 0.175, 0.948, 0.168, 0.951),
            (5, 0.150, 0.955, 0.149, 0.956),
            (6, 0.131, 0.961, 0.141, 0.958),
        )
    ),  # fmt: skip
    "hf-dicts": "\n".join(
        f"{{'loss': {lt}, 'learning_rate': {lr}, 'epoch': {e}.0}}\n{{'eval_loss': {lv}, 'eval_accuracy': {a}, "
        f"'eval_runtime': 12.1, 'epoch': {e}.0}}"
        for e, lt, lr, lv, a in (
            (1, 0.61, 4e-05, 0.44, 0.81),
            (2, 0.39, 3e-05, 0.36, 0.85),
            (3, 0.28, 2e-05, 0.33, 0.87),
            (4, 0.22, 1e-05, 0.31, 0.88),
        )
    ),  # fmt: skip
    "tensorboard-csv": TENSORBOARD_CSV,
    "yolo": YOLO_WITH_VALIDATION,
    "fastai": FASTAI_ERROR_RATE,
    "lightgbm": "\n".join(
        f"[{r}]\ttraining's auc: {a}\tvalid_1's auc: {b}"
        for r, a, b in ((50, 0.801, 0.792), (100, 0.842, 0.828), (150, 0.866, 0.846), (200, 0.881, 0.857))
    ),
    "fairseq": "\n".join(
        f"2023-05-02 | INFO | train | epoch {e:03d} | loss {lt} | nll_loss {lt} | ppl {pt} | wps 21000\n"
        f"2023-05-02 | INFO | valid | epoch {e:03d} | valid on 'valid' subset | loss {lv} | ppl {pv}"
        for e, lt, pt, lv, pv in (
            (1, 9.41, 680.1, 8.82, 451.9),
            (2, 7.62, 196.7, 7.31, 158.7),
            (3, 6.55, 93.7, 6.51, 91.1),
            (4, 5.91, 60.1, 6.02, 64.9),
        )
    ),  # fmt: skip
    "pipe-table": "| Epoch | Train Loss | Valid Loss | Valid Acc |\n|------:|-----------:|-----------:|----------:|\n"
    + "\n".join(
        f"| {e} | {lt} | {lv} | {a}% |"
        for e, lt, lv, a in (
            (1, 1.402, 1.201, 56.1),
            (2, 1.011, 0.952, 66.3),
            (3, 0.821, 0.812, 71.0),
            (4, 0.702, 0.744, 73.9),
        )
    ),  # fmt: skip
    "tqdm-passes": "\n".join(
        f"100%|##########| {n}/{n} [00:31<00:00, 19.1it/s, loss={loss}, acc={acc}]"
        for n, loss, acc in (
            (625, 0.905, 0.66),
            (125, 0.801, 0.71),
            (625, 0.701, 0.75),
            (125, 0.690, 0.76),
            (625, 0.552, 0.81),
            (125, 0.604, 0.79),
            (625, 0.481, 0.83),
            (125, 0.571, 0.80),
        )
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_a_healthy_curve_is_no_diagnosis(classifier: Classifier, name: str) -> None:
    text = HEALTHY[name]
    assert _curves(text).any
    assert _findings(text) == {}
    diagnosis = classifier.classify(text_to_lines(text))
    assert diagnosis.failure_class == "unknown", (diagnosis.failure_class, diagnosis.evidence)


def test_a_keras_progress_line_redrawn_with_backspaces_reads_its_last_state() -> None:
    redraws = [f"{i * 20}/200 [{'=' * i}>{'.' * (29 - i)}] - ETA: 2s - loss: {0.9 + 1 / i:.4f}" for i in range(1, 25)]
    rows = []
    for epoch, (loss, val) in enumerate(((0.61, 0.55), (0.33, 0.51), (0.18, 0.58), (0.09, 0.67), (0.04, 0.81)), 1):
        last = f"200/200 [==============================] - 4s 20ms/step - loss: {loss:.4f} - val_loss: {val:.4f}"
        rows.append(f"Epoch {epoch}/5\n" + ("\b" * 60).join([*redraws, last]) + "\b" * 300)
    text = "\n".join(rows)
    assert max(len(line) for line in text.splitlines()) > 2_000
    assert _values(text, "val/loss") == [0.55, 0.51, 0.58, 0.67, 0.81]
    assert "val_loss_rising" in _findings(text)


def test_mxnet_cross_entropy_is_a_loss() -> None:
    text = "\n".join(
        f"INFO:root:Epoch[0] Batch [{b}]\tSpeed: 912.40 samples/sec\tTrain-cross-entropy={v}"
        for b, v in ((20, 6.9093), (40, 6.9071), (60, 6.9082))
    )
    assert "loss_at_chance" in _findings(text)


def test_a_flat_validation_accuracy_far_below_training_is_a_gap_not_a_stuck_model() -> None:
    text = "\n".join(
        f"Epoch {e}/40\n300/300 - 6s - loss: {lt} - acc: {at} - val_loss: {lv} - val_acc: {av}"
        for e, lt, at, lv, av in ((38, 0.0131, 0.9985, 1.9411, 0.6430), (39, 0.0127, 0.9987, 1.9630, 0.6418),
                                  (40, 0.0122, 0.9989, 1.9902, 0.6425))
    )  # fmt: skip
    found = _findings(text)
    assert "generalization_gap" in found and "metric_stuck" not in found


def test_the_turn_names_the_best_value_as_printed() -> None:
    val = [0.74, 0.61, 0.52, 0.55, 0.60, 0.66, 0.71, 0.79]
    train = [0.80, 0.55, 0.40, 0.30, 0.21, 0.15, 0.10, 0.07]
    text = "epoch,train_loss,val_loss\n" + "\n".join(
        f"{i},{t},{v}" for i, (t, v) in enumerate(zip(train, val, strict=True), 1)
    )
    finding = _findings(text)["val_loss_rising"]
    assert finding.summary.startswith("val_loss best 0.52 at epoch 3, 0.79 at epoch 8")
    lines = text.splitlines()
    assert [lines[i] for i in finding.lines] == ["3,0.4,0.52", "8,0.07,0.79"]


def _lm_log(ppls: list[float]) -> str:
    return "\n".join(
        f"| epoch {i:3d} |  2800/ 2983 batches | lr 20.0000 | loss {math.log(p):5.2f} | ppl {p:10.2f}"
        for i, p in enumerate(ppls, start=1)
    )


def test_a_perplexity_worse_than_any_vocabulary_is_a_blow_up() -> None:
    found = _findings(_lm_log([5.1e7, 8.6e7, 6.7e7, 1.8e8]))
    assert "any vocabulary" in found["loss_spiked"].summary
    for healthy in (
        [3.3e4, 1.2e3, 410.0, 180.0],  # starts near the vocabulary's size, then learns
        [5.1e7, 8.6e7, 6.7e7, 6.7e3],  # diverged, then came back under a million
        [5.1e7, 8.6e7],  # two values are too few to say
    ):
        assert "loss_spiked" not in _findings(_lm_log(healthy)), healthy


def _boosting_cv(test_auc: list[float]) -> str:
    rounds = [
        f"[{i}]\ttrain-auc:{0.63 + 0.0085 * i:.6f}+0.004\ttest-auc:{auc:.6f}+0.006"
        for i, auc in enumerate(test_auc, start=1)
    ]
    return "\n".join(rounds) + "\nStopping. Best iteration:"


def test_a_validation_score_that_slid_since_its_best_while_training_climbed(classifier: Classifier) -> None:
    # test AUC best at round 31, then lower at most of the ten rounds after it; train AUC climbing all the way
    peak = [0.63 + 0.0035 * i for i in range(31)]
    slid = [peak[-1] - d for d in (0.0002, 0.0006, 0.0005, 0.0013, 0.0014, 0.0020, 0.0026, 0.0033, 0.0036)]
    found = _findings(_boosting_cv(peak + slid))
    assert found["val_loss_crept_up"].summary.startswith("test-auc best 0.735 at round 31, then lower at 8 of the 9")
    assert classifier.classify(text_to_lines(_boosting_cv(peak + slid))).failure_class == "overfitting"
    # still reaching new bests: no finding
    assert "val_loss_crept_up" not in _findings(_boosting_cv(peak + [peak[-1] + 0.0004 * i for i in range(1, 10)]))


def test_ranking_scores_and_an_f_score_are_accuracy_like_series() -> None:
    text = "\n".join(
        f"epoch {e}, mean_loss: {0.13 / e:.4f}, test HR@50: {0.33 - 0.004 * e:.4f}, "
        f"test MRR: {0.035 - 0.0004 * e:.4f}, NDCG@10: {0.21 - 0.002 * e:.4f}"
        for e in range(1, 8)
    )
    groups = {s.key: s.group for s in _curves(text).series.values()}
    assert groups["test HR@50"] == groups["test MRR"] == groups["NDCG@10"] == ACC
    # a classifier that predicts nothing: its f-score at exactly zero epoch after epoch
    zero = "\n".join(
        f"Train performance at epoch {e} is precision: 0.000000, recall: 0.000000, fscore: 0.000000, right: 0, "
        f"predict: 0, standard: 259686.\nLoss is: 0.17{e}."
        for e in range(1, 6)
    )
    assert "metric_stuck" in _findings(zero)


def test_a_loss_that_turned_nan_in_a_metrics_table() -> None:
    rows = [f"{0.9 / (e + 1):.4f},{1.1 / (e + 1):.4f},{e},{e * 50}" for e in range(6)] + [
        f"nan,nan,{e},{e * 50}" for e in range(6, 9)
    ]
    text = "train_loss,val_loss,epoch,step\n" + "\n".join(rows)
    found = _findings(text)["loss_spiked"]
    assert found.summary == (
        "train_loss 0.15 at epoch 5, then nan at epoch 6 and at every value after it: the run diverged"
    )
    assert found.lines == (6, 7)  # the last finite row and the first NaN row (line 0 is the header)
    # the bounds: two numbers then two NaNs is a divergence; one number then NaNs is a run that never printed a loss
    header = "train_loss,epoch\n"
    assert "loss_spiked" in _findings(header + "0.91,1\n0.74,2\nnan,3\nnan,4")
    assert "loss_spiked" not in _findings(header + "0.91,1\nnan,2\nnan,3\nnan,4")
    # an accuracy column before the loss is passed over, not the end of the search
    with_acc = [f"0.{50 + e},{0.9 / (e + 1):.4f},{e}" for e in range(6)] + [f"0.{56 + e},nan,{e}" for e in range(6, 9)]
    assert "loss_spiked" in _findings("train_acc,train_loss,epoch\n" + "\n".join(with_acc))
    # one NaN row at the end is no trend; a NaN that came back to numbers is no divergence either
    assert "loss_spiked" not in _findings("train_loss,val_loss,epoch,step\n" + "\n".join(rows[:7]))
    back = rows[:7] + [f"{0.12:.4f},{0.15:.4f},7,350", f"{0.11:.4f},{0.14:.4f},8,400"]
    assert "loss_spiked" not in _findings("train_loss,val_loss,epoch,step\n" + "\n".join(back))



def _batch_log(train_acc: list[float]) -> str:
    val = [0.10, 0.18, 0.23, 0.35, 0.41, 0.55, 0.75, 0.81, 0.889, 0.887, 0.886, 0.885]
    # the validation loss stops improving where the validation accuracy does (a loss still reaching new bests is a
    # model that still generalises better, whatever the accuracies' gap)
    val_loss = [1.2 - min(i, 8) * 0.06 + max(0, i - 8) * 0.01 for i in range(len(val))]
    return "\n".join(
        f"Iter [{i * 20:3d}/11250] | Train Loss {1.5 - i * 0.1:.4f} | Train Acc {b:.4f} | "
        f"Valid Loss {vl:.4f} | Valid Acc {v:.4f}"
        for i, (b, v, vl) in enumerate(zip(train_acc, val, val_loss, strict=True))
    )


def test_a_training_accuracy_on_a_batch_of_four_is_no_memorising() -> None:
    """Per-batch accuracy on four samples reads 0.25, 0.5, 0.75 or 1.0: its last 1.0 is no sign the model memorised."""
    quarters = [0.0, 0.75, 0.25, 0.25, 0.5, 0.5, 0.75, 1.0, 0.75, 1.0, 1.0, 1.0]
    assert "generalization_gap" not in _findings(_batch_log(quarters))
    # the same gap with a training accuracy measured on many samples is memorising
    smooth = [0.11, 0.2, 0.31, 0.42, 0.55, 0.68, 0.79, 0.88, 0.95, 0.98, 0.992, 0.996]
    assert "generalization_gap" in _findings(_batch_log(smooth))


@pytest.mark.parametrize("metric", ["rmsle", "mape", "poisson-nloglik", "gamma-deviance"])
def test_boosting_regression_metrics_are_errors_and_their_turn_is_found(metric: str) -> None:
    # XGBoost's eval log with a regression metric: validation best at round 10, then worse while training improves
    rows = [(10, 0.412, 0.701), (20, 0.371, 0.705), (30, 0.336, 0.722), (40, 0.305, 0.741), (50, 0.279, 0.767),
            (60, 0.254, 0.790), (70, 0.233, 0.812)]  # fmt: skip
    text = "\n".join(f"[{n}]\ttrain-{metric}:{t:.6f}\teval-{metric}:{v:.6f}" for n, t, v in rows)
    assert _values(text, f"val/{metric.replace('-', '/')}") == [v for _, _, v in rows]
    assert "val_loss_rising" in _findings(text)


def test_a_validation_value_that_never_changes_is_no_stall_after_learning(classifier: Classifier) -> None:
    # the model's validation output is constant (the same loss to four places at every epoch) while training creeps
    # down: Keras reports the stall, but nothing was learnt to lose - not the overfitting an early stop means
    epochs = [(2, 0.2411), (3, 0.2375), (4, 0.2342), (5, 0.2308), (6, 0.2281), (7, 0.2250)]
    lines = ["Epoch 00001: val_loss improved from inf to 0.25000, saving model to weights.01.h5"]
    for n, loss in epochs:
        lines += [f"Epoch {n}/20", f"900/900 [==============================] - 61s 68ms/step - loss: {loss} - "
                  "val_loss: 0.2500", f"Epoch {n:05d}: val_loss did not improve from 0.25000"]  # fmt: skip
    text = "\n".join(lines)
    assert "val_stalled_train_improving" not in _findings(text)
    assert classifier.classify(text_to_lines(text)).failure_class == "underfitting"
    moving = text.replace("val_loss: 0.2500", "val_loss: 0.2507", 3)  # the same log with a validation that moves
    assert "val_stalled_train_improving" in _findings(moving)


def _history_json(history: dict[str, list[float]], indent: int = 4) -> str:
    import json

    return json.dumps(history, indent=indent)


def test_a_keras_history_saved_as_json_reads_one_series_per_list_with_its_epochs(classifier: Classifier) -> None:
    history = {
        "loss": [2.01, 1.52, 1.19, 0.93, 0.74, 0.58, 0.45, 0.35, 0.27, 0.2],
        "accuracy": [0.28, 0.45, 0.58, 0.67, 0.74, 0.8, 0.85, 0.89, 0.92, 0.94],
        "val_loss": [1.71, 1.38, 1.2, 1.12, 1.11, 1.16, 1.24, 1.35, 1.47, 1.6],
        "val_accuracy": [0.39, 0.5, 0.57, 0.6, 0.61, 0.6, 0.6, 0.59, 0.58, 0.58],
    }
    text = _history_json(history)
    curves = _curves(text)
    assert curves.run_start is None  # each list starts at epoch 1 again: another metric, not another run
    assert _values(text, "val/loss") == history["val_loss"]
    assert [p.step for p in curves.series["train/loss"].points][:2] == ["epoch 1", "epoch 2"]
    rising = _findings(text)["val_loss_rising"].summary
    # compared epoch by epoch, not by the lines the lists sit on
    assert rising == "val_loss best 1.11 at epoch 5, 1.6 at epoch 10 while loss went 0.74 -> 0.2"
    assert classifier.classify(text_to_lines(text)).failure_class == "overfitting"
    healthy = {
        "loss": [2.01, 1.52, 1.19, 0.98, 0.84, 0.74, 0.67, 0.61],
        "val_loss": [1.8, 1.41, 1.16, 1.0, 0.89, 0.82, 0.77, 0.73],
    }
    assert classifier.classify(text_to_lines(_history_json(healthy, indent=2))).failure_class == "unknown"


def test_a_list_of_one_value_or_of_words_is_no_curve() -> None:
    assert _curves('{\n  "loss": [\n    0.52\n  ],\n  "val_loss": [\n    0.61\n  ]\n}').series == {}
    assert _curves('{\n  "loss_names": [\n    "ce",\n    "kl"\n  ]\n}').series == {}


HF_EVALUATION_TABLE = """| Epoch | Step | Validation Loss | Accuracy | F1     |
|:-----:|:----:|:---------------:|:--------:|:------:|
| 1     | 500  | 0.5214          | 0.7412   | 0.7388 |
| 2     | 1000 | 0.4817          | 0.7703   | 0.7691 |
| 3     | 1500 | 0.5036          | 0.7790   | 0.7781 |
| 4     | 2000 | 0.5593          | 0.7768   | 0.7752 |
| 5     | 2500 | 0.6281          | 0.7801   | 0.7795 |
| 6     | 3000 | 0.6944          | 0.7779   | 0.7770 |"""


def test_an_evaluation_table_without_training_loss(classifier: Classifier) -> None:
    # a model card's table: no training loss column, so its bare metric columns are validation ones
    assert _values(HF_EVALUATION_TABLE, "val/accuracy") == [0.7412, 0.7703, 0.779, 0.7768, 0.7801, 0.7779]
    rising = _findings(HF_EVALUATION_TABLE)["val_loss_rising"].summary
    assert rising.startswith("Validation Loss best 0.4817 at epoch 2, 0.6944 at epoch 6 while Accuracy held at 0.7779")
    assert classifier.classify(text_to_lines(HF_EVALUATION_TABLE)).failure_class == "overfitting"
    # the same loss with the accuracy falling away: a run that diverges, not one that memorises
    falling = HF_EVALUATION_TABLE.replace("0.7801", "0.6102").replace("0.7779   | 0.7770", "0.5214   | 0.5013")
    assert "val_loss_rising" not in _findings(falling)
    # Keras' CSV log names its training columns bare: they stay training series
    keras = "epoch,accuracy,loss,val_accuracy,val_loss\n0,0.61,0.92,0.66,0.85\n1,0.72,0.71,0.70,0.77"
    assert _values(keras, "train/accuracy") == [0.61, 0.72]


def test_an_eval_set_named_by_its_file_keeps_its_split() -> None:
    # LightGBM's CLI names a validation set by its path: a name too long to be a key, whose split still counts
    text = "\n".join(
        f"[LightGBM] [Info] Iteration:{n}, training's auc: {t}\n"
        f"[LightGBM] [Info] Iteration:{n}, /mnt/exp/holdout/valid_fold2.csv's auc: {v}"
        for n, t, v in [(1, 0.91, 0.83), (2, 0.93, 0.85), (3, 0.95, 0.84)]
    )
    assert _values(text, "train/auc") == [0.91, 0.93, 0.95]
    assert _values(text, "val/auc") == [0.83, 0.85, 0.84]


def test_a_flat_loss_over_the_first_few_of_many_planned_steps_is_too_soon_to_judge() -> None:
    losses = [6.912, 6.871, 6.935, 6.902, 6.889, 6.921, 6.897, 6.908]
    early_on = "\n".join(f"[Step {n}/2000] Loss: {v} | tokens/s: 812.4" for n, v in enumerate(losses))
    assert "loss_flat" not in _findings(early_on)  # 8 of 2,000 steps
    whole_run = "\n".join(f"[Step {n}/8] Loss: {v} | tokens/s: 812.4" for n, v in enumerate(losses))
    assert "loss_flat" in _findings(whole_run)  # the same values over the whole planned run


def test_a_quoted_csv_field_holding_commas_is_one_cell() -> None:
    text = (
        "run,epoch,layers,accuracy,loss\n"
        '3 hidden,1,"(64, 32, 16)",0.31,1.95\n'
        '3 hidden,2,"(64, 32, 16)",0.42,1.61\n'
        '3 hidden,3,"(64, 32, 16)",0.48,1.40\n'
    )
    assert _values(text, "train/loss") == [1.95, 1.61, 1.40]


def test_training_losses_nan_from_the_first_epoch_diverged_from_the_start() -> None:
    header = "epoch,train/box_loss,train/cls_loss,metrics/mAP50(B),val/box_loss\n"
    rows = "\n".join(f"{e},nan,nan,0,nan" for e in range(1, 6))
    found = _findings(header + rows)["loss_spiked"]
    assert found.summary.endswith("the run diverged from its first step") and "epoch 1" in found.summary
    # one column the script never filled, beside a training loss that is a number: no divergence
    filled = "\n".join(f"{e},{1.0 / e:.3f},nan,0.{e},0.5" for e in range(1, 6))
    assert "loss_spiked" not in _findings(header + filled)
    # two NaN rows are too few to say the run never had a number
    assert "loss_spiked" not in _findings(header + "1,nan,nan,0,nan\n2,nan,nan,0,nan")


def test_a_line_opened_by_a_split_word_and_a_full_stop_is_that_splits() -> None:
    text = "\n".join(
        f"Step: {100 * (e + 1)}. Epoch: {e}/50. Total loss: {t}\nVal. Epoch: {e}/50. Total loss: {v}"
        for e, (t, v) in enumerate([(3.1, 3.4), (2.2, 2.6), (1.5, 2.0), (1.1, 1.7)])
    )
    assert _values(text, "train/loss") == [3.1, 2.2, 1.5, 1.1]
    assert _values(text, "val/loss") == [3.4, 2.6, 2.0, 1.7]
    # a file name is no split: "test.py" opens no test section
    assert _values("I0312 test.py:41] loss: 0.52\nI0312 test.py:41] loss: 0.47", "train/loss") == [0.52, 0.47]


def test_a_bare_split_name_before_a_count_is_the_loops_progress_not_a_score() -> None:
    # NeuroNLP2-style loops: "train: 100/937" is batches done, "train: 937 ... time" the epoch's last batch count
    log = "\n".join(
        [f"train: {n}/937 loss: {1.8 - n / 5000:.4f}, time left (estimated): 9.50s" for n in range(100, 1000, 100)]
        + ["train: 937 loss: 1.6012, time: 14.92s", "dev acc: 98.03%, precision: 82.51%, F1: 82.35%"]
    )
    curves = _curves(log)
    assert "train/accuracy" not in curves.series  # no accuracy read from the counters
    assert curves.series["val/acc"].points[0].value == pytest.approx(0.9803)
    assert "generalization_gap" not in _findings(log)
    # a bare split with a score beside a named loss is still read ("Train: 99.1% | loss: 0.03")
    assert _values("Train: 99.1% | loss: 0.031\nTrain: 99.4% | loss: 0.024", "train/accuracy") == [0.991, 0.994]


def test_boosting_early_stopping_restates_its_best_round_which_is_no_new_point() -> None:
    rounds = "\n".join(f"[{r}]\tvalid_0's l2: {v}" for r, v in [(10, 0.41), (20, 0.32), (30, 0.30), (40, 0.36)])
    for announcement in ("Early stopping, best iteration is:", "Did not meet early stopping. Best iteration is:"):
        log = f"{rounds}\n{announcement}\n[30]\tvalid_0's l2: 0.30"
        assert _values(log, "val/0/l2") == [0.41, 0.32, 0.30, 0.36]
    xgboost = "[0]\tvalidation_0-error:0.20\n[1]\tvalidation_0-error:0.15\nStopping. Best iteration:\n"
    xgboost += "[1]\tvalidation_0-error:0.15"
    assert _values(xgboost, "val/0/error") == [0.20, 0.15]


def test_a_boosted_validation_curve_that_turned_is_memorising_without_a_training_curve() -> None:
    errors = [0.158, 0.105, 0.118, 0.132, 0.118, 0.145, 0.145, 0.145, 0.158, 0.171, 0.171, 0.184]
    rounds = "\n".join(f"[{r}]\tvalidation_0-error:{v}" for r, v in enumerate(errors))
    stopped = f"{rounds}\nStopping. Best iteration:\n[1]\tvalidation_0-error:0.105"
    assert "best 0.105 at round 1" in _findings(stopped)["val_loss_rising"].summary
    # the same curve with no early stopping said: a validation curve alone may be plain divergence
    assert "val_loss_rising" not in _findings(rounds)


def test_an_accuracy_settled_half_way_to_perfect_above_its_start_learnt_a_one_class_share_did_not() -> None:
    def keras(accuracies: list[float]) -> str:
        return "\n".join(
            f"Epoch {e}/{len(accuracies)}\n625/625 - 3s - loss: 0.5 - val_accuracy: {a:.4f}"
            for e, a in enumerate(accuracies, 1)
        )

    climbed = [0.512, 0.583, 0.641, 0.702, 0.744, 0.771, 0.7912, 0.7921, 0.7915, 0.7926, 0.7919, 0.7924]
    assert "metric_stuck" not in _findings(keras(climbed))  # 0.51 -> 0.79: more than half the way to 1.0
    one_class = [0.701, 0.742, 0.7431, 0.7428, 0.7431, 0.7430, 0.7429, 0.7431, 0.7430, 0.7431, 0.7429, 0.7430]
    assert "metric_stuck" in _findings(keras(one_class))  # at one class's share from the second epoch on


def test_a_validation_loss_repeated_while_the_validation_accuracy_beside_it_moved_is_a_coincidence() -> None:
    line = "782/782 - 21s 27ms/step - loss: {} - accuracy: {} - val_loss: 0.4712 - val_accuracy: {}"
    rows = [(0.4121, 0.8202, 0.7790), (0.4052, 0.8241, 0.7836)]
    text = "\n".join(f"Epoch {e}/9\n" + line.format(*row) for e, row in enumerate(rows, 8))
    assert "loss_flat" not in _findings(text)  # the predictions changed: so did the weights
    frozen = text.replace("0.7836", "0.7790")  # the accuracy beside it the very same too: nothing moved
    found = _findings(frozen)
    assert "loss_flat" in found and "the weights did not change" in found["loss_flat"].summary


def test_a_validation_turn_is_no_overfitting_when_the_training_accuracy_only_fell() -> None:
    line = "469/469 - 2s - accuracy: {} - loss: {} - val_accuracy: 0.30 - val_loss: {}"
    losses = [9.1274, 3.0118, 2.7702, 2.6125, 2.4851, 2.4410, 2.4102, 2.3915]
    val_losses = [2.2187, 2.2344, 2.2391, 2.2307, 2.1905, 2.2980, 2.3511, 2.9702]

    def log(accuracies: list[float]) -> str:
        rows = zip(accuracies, losses, val_losses, strict=True)
        return "\n".join(f"Epoch {e}/8\n" + line.format(*row) for e, row in enumerate(rows, 1))

    fell = [0.3712, 0.2811, 0.2754, 0.2698, 0.2713, 0.2672, 0.2651, 0.2633]  # never above its first: nothing learnt
    assert "val_loss_rising" not in _findings(log(fell))
    rose = [0.2633, 0.2811, 0.2954, 0.3098, 0.3213, 0.3372, 0.3451, 0.3533]  # learning the training data
    assert "val_loss_rising" in _findings(log(rose))


def test_a_progress_bars_percentage_is_no_metric_with_or_without_its_bar() -> None:
    text = "\n".join(
        f"Valid:  99% 5632/5667 [00:02<00:00, 2489.53 uttr/s, accuracy={a}, loss={v}]\n"
        f"Valid: 100%|##########| 5667/5667 [00:02<00:00, 2489.53 uttr/s, accuracy={a}, loss={v}]"
        for a, v in ((0.01, 12.02), (0.04, 11.15), (0.11, 10.27))
    )
    keys = {s.key for s in _curves(text).series.values()}
    assert "Valid" not in keys  # no series from "99%" or "100%"
    assert _values(text, "val/accuracy")[:2] == [0.01, 0.01]  # the bar's postfix is read
    assert _values("Valid: 99% acc", "val/accuracy") == [0.99]  # a percentage with no count after it is a value



def test_a_bare_split_on_the_training_losss_scale_is_that_splits_loss_for_the_whole_run() -> None:
    # "val: 2.53" beside "loss: 2.48": the validation loss, also on the later lines where the two drifted apart
    text = (
        "it   500 | loss: 2.4817 | val: 2.5304\n"
        "it  2000 | loss: 1.3318 | val: 1.7692\n"
        "it  4000 | loss: 0.5212 | val: 2.2710"
    )
    curves = _curves(text)
    assert _values(text, "val/loss") == [2.5304, 1.7692, 2.271]
    assert "val/accuracy" not in curves.series
    # apart at the first line, on the loss's scale after: a loss from the start too
    apart_first = "it 0 | loss: 9.81 | val: 3.10\nit 100 | loss: 3.02 | val: 2.95\nit 200 | loss: 2.71 | val: 2.80"
    assert _values(apart_first, "val/loss") == [3.1, 2.95, 2.8]
    assert "val/accuracy" not in _curves(apart_first).series
    # far from the loss, or beside a loss below 1: a score, as before
    scores = "epoch 1: loss=3.7670 train=0.0000 test=0.0100\nepoch 2: loss=3.2920 train=0.0229 test=0.0229"
    assert _values(scores, "test/accuracy") == [0.01, 0.0229]
    assert "test/loss" not in _curves(scores).series
    fractions = (
        "Epoch: 001, Loss: 1.9490, Train: 0.1786, Val: 0.1500\nEpoch: 002, Loss: 0.9010, Train: 0.6120, Val: 0.5580"
    )
    assert _values(fractions, "val/accuracy") == [0.15, 0.558]


def test_two_metrics_under_one_key_are_read_in_their_order_and_keep_the_split() -> None:
    # i2dl's solver: "TRAIN acc/loss: 0.741/0.733", its validation line padded to align ("VAL   acc/loss")
    text = (
        "[Epoch 1/2] TRAIN acc/loss: 0.612/1.104\n"
        "[Epoch 1/2] VAL   acc/loss: 0.655/0.982\n"
        "[Epoch 2/2] TRAIN acc/loss: 0.741/0.733\n"
        "[Epoch 2/2] VAL   acc/loss: 0.702/0.861"
    )
    assert _values(text, "train/loss") == [1.104, 0.733]
    assert _values(text, "train/acc") == [0.612, 0.741]
    assert _values(text, "val/loss") == [0.982, 0.861]
    assert _values(text, "val/acc") == [0.655, 0.702]
    # names that are not two metrics keep their one value: a count over a total is no pair
    assert "train/acc/loss" not in _curves(text).series
    assert _values("epoch 1 step 10/200 loss: 2.31\nepoch 1 step 20/200 loss: 2.12", "train/loss") == [2.31, 2.12]


def test_a_native_checks_failure_report_is_no_metric_line() -> None:
    # "error=35" beside "file=... line=74" is CUDA's status code, not an error rate: no curve, so no training progress
    text = (
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=74 error=35 : CUDA driver version is "
        "insufficient for CUDA runtime version"
    )
    assert not _curves(text).any
    assert _values("step 10 error=0.35\nstep 20 error=0.31", "train/error") == [0.35, 0.31]


def test_a_loggers_record_location_is_no_metric() -> None:
    # loguru's "module:function:line - " and a formatter's "[file:function:line]": a function named train, and its line
    # number, read as a training value at a constant 35 would be a curve stuck at 1/3
    loguru = "\n".join(
        f"2026-11-29 10:0{i}:02.114 | INFO     | __main__:train:35 - loss: {v}" for i, v in enumerate((2.5, 1.9, 1.4))
    )
    assert sorted(_curves(loguru).series) == ["train/loss"]
    assert _values(loguru, "train/loss") == [2.5, 1.9, 1.4]
    bracketed = "[trainer.py:train:212] val_loss: 0.41\n[trainer.py:train:212] val_loss: 0.38"
    assert sorted(_curves(bracketed).series) == ["val/loss"]
    # a step number after a colon is still read where no logger location stands before it
    assert _values("Epoch 1:loss=0.5\nEpoch 2:loss=0.4", "train/loss") == [0.5, 0.4]


def test_a_split_word_a_wide_gap_then_metrics_names_their_split() -> None:
    # i2dl's solver: "TRAINING   acc = 16.500 (33/200)   loss = 2.283", "VALIDATION   acc = 10.000      loss = 2.310"
    text = (
        "TRAINING   acc = 16.500 (33/200)   loss = 2.283\nVALIDATION   acc = 10.000      loss = 2.310\n"
        "TRAINING   acc = 35.000 (70/200)   loss = 1.843\nVALIDATION   acc = 20.200      loss = 2.177"
    )
    assert _values(text, "train/loss") == [2.283, 1.843]
    assert _values(text, "val/loss") == [2.31, 2.177]


def test_one_metric_then_its_value_per_split_is_read_as_that_metrics_splits() -> None:
    # "[Loss] TRAIN 0.6931 / VALID 0.6933": the metric opens the line, each split's value is that metric's
    text = (
        " [Loss] TRAIN 0.6931 / VALID 0.6933\n [ACC] TRAIN 0.4997 / VALID 0.5055\n"
        " [Loss] TRAIN 0.6930 / VALID 0.6932\n [ACC] TRAIN 0.5003 / VALID 0.4945\n"
        "Accuracy: train 0.91, val 0.88"
    )
    assert _values(text, "train/loss") == [0.6931, 0.693]
    assert _values(text, "val/loss") == [0.6933, 0.6932]
    assert _values(text, "train/acc") == [0.4997, 0.5003]
    assert _values(text, "val/acc") == [0.5055, 0.4945]
    assert _values(text, "val/accuracy") == [0.88]
    # a word that is no metric names nothing: the splits stay bare scores
    bare = read_line("[Phase] TRAIN 0.69 / VALID 0.70").found
    assert [(parsed.norm, value) for parsed, _, value in bare] == [("train/objective", 0.69), ("val/objective", 0.7)]


# MATLAB's trainNetwork prints its column names over two lines ("Mini-batch" above "Accuracy"), between separator
# rules, and percent values: each column is the two names joined
MATLAB_TABLE = (
    "|=============================================================================================|\n"
    "|  Epoch  |  Iteration  |  Time Elapsed  |  Mini-batch  |  Validation  |  Mini-batch  |  Validation  |\n"
    "|         |             |   (hh:mm:ss)   |   Accuracy   |   Accuracy   |     Loss     |     Loss     |\n"
    "|=============================================================================================|\n"
    "|       1 |           1 |       00:00:03 |       18.75% |       35.10% |       2.0431 |       1.7702 |\n"
    "|       4 |          50 |       00:00:27 |       81.25% |       79.82% |       0.5518 |       0.6034 |\n"
    "|       8 |         100 |       00:00:51 |       96.88% |       82.41% |       0.1120 |       0.5587 |\n"
    "|      12 |         150 |       00:01:15 |      100.00% |       81.95% |       0.0231 |       0.6912 |\n"
    "|      16 |         200 |       00:01:39 |      100.00% |       81.60% |       0.0094 |       0.8120 |\n"
    "|=============================================================================================|"
)


def test_a_header_stacked_over_two_lines_names_each_column_by_both() -> None:
    assert _values(MATLAB_TABLE, "val/loss") == [1.7702, 0.6034, 0.5587, 0.6912, 0.812]
    assert _values(MATLAB_TABLE, "val/accuracy") == [0.351, 0.7982, 0.8241, 0.8195, 0.816]
    assert _values(MATLAB_TABLE, "train/mini/loss") == [2.0431, 0.5518, 0.112, 0.0231, 0.0094]
    steps = [p.step for p in _curves(MATLAB_TABLE).series["val/loss"].points]
    assert steps == ["epoch 1", "epoch 4", "epoch 8", "epoch 12", "epoch 16"]
    # a second header line with a value in it is a data row, not names: no column is named by it
    row_below = MATLAB_TABLE.replace("|   (hh:mm:ss)   |   Accuracy   |", "|   (hh:mm:ss)   |   0.5      |", 1)
    assert "val/loss" not in _curves(row_below).series
    # two pipe rows with as many pipes but not as many cells (one framed, one not) are no stacked header, and no error
    unframed = "|  Epoch  |  Mini-batch  |  Validation  |\nTrain Loss | Loss | Loss | x |\n|   1 |   0.5 |   0.6 |"
    keys = {series.key for series in _curves(unframed).series.values()}
    assert not keys & {"Mini-batch Loss", "Validation Loss"}


def test_a_markdown_header_under_another_tables_rule_is_read_alone() -> None:
    table = (
        "|-----|-----|-----|-----|-----|\n"
        "| Training Loss | Epoch | Step | Validation Loss | Accuracy |\n"
        "|:---:|:---:|:---:|:---:|:---:|\n"
        "| 0.6812 | 1.0 | 100 | 0.6420 | 0.6100 |\n"
        "| 0.5123 | 2.0 | 200 | 0.5011 | 0.7400 |\n"
        "| 0.3907 | 3.0 | 300 | 0.4408 | 0.7900 |"
    )
    assert _values(table, "val/loss") == [0.642, 0.5011, 0.4408]
    assert _values(table, "train/loss") == [0.6812, 0.5123, 0.3907]
    assert {series.key for series in _curves(table).series.values()} == {"Training Loss", "Validation Loss", "Accuracy"}


def test_a_value_that_ends_a_sentence_is_read_and_a_version_is_not() -> None:
    line = "Epoch [3/20]. Step [311/311]. Loss: 0.422. Acc: 0.797. Test loss: 0.432. Test acc: 0.683"
    assert [(key.norm, value) for key, _, value in read_line(line).found] == [
        ("train/loss", 0.422),
        ("train/acc", 0.797),
        ("test/loss", 0.432),
        ("test/acc", 0.683),
    ]
    assert not read_line("loss 1.2.3 and acc 10.0.0.1").found
