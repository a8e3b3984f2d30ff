"""Classifier behaviour beyond the corpus: confusers, cascades across replicas, structured job signals."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import load_knowledge
from bot.intake.log_input import entries_to_lines, text_to_lines
from bot.models import JobInfo, LogLine, WorkerPool

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier(load_knowledge())


def entry(text: str, task: str, seconds: float, severity: str = "ERROR", job_id: str = "4242") -> dict:
    return {
        "insertId": f"{task}-{seconds}",
        "resource": {"type": "ml_job", "labels": {"job_id": job_id, "project_id": "acme-ml", "task_name": task}},
        "severity": severity,
        "textPayload": text,
        "timestamp": (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z"),
    }


def watchdog_timeout(worker: int, second: float) -> dict:
    """NCCL's watchdog on `workerpool1-(worker-1)`: the collective timed out waiting for a replica that failed."""
    return entry(
        f"[Rank {worker}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) "
        "ran for 600000 milliseconds before timing out.",
        f"workerpool1-{worker - 1}",
        second,
    )


def test_tpu_resource_exhausted_out_of_memory_is_device_memory_not_quota(classifier: Classifier) -> None:
    text = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8.1G"
    diagnosis = classifier.classify(text_to_lines(text))
    assert diagnosis.failure_class == "accelerator_oom"
    assert "quota_exhausted" not in {a.failure_class for a in diagnosis.alternatives}


def test_benign_allocator_warning_alone_is_not_an_oom(classifier: Classifier) -> None:
    text = (
        "W tensorflow/core/common_runtime/bfc_allocator.cc:246] Allocator (GPU_0_bfc) ran out of memory trying to "
        "allocate 2.1GiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that "
        "there could be performance gains if more memory were available."
    )
    diagnosis = classifier.classify(text_to_lines(text * 1))
    assert diagnosis.failure_class == "unknown"
    assert diagnosis.confidence < 0.5


_RETRY_LINES = [
    f"I tensorflow/stream_executor/cuda/cuda_driver.cc:789] failed to allocate {size}M ({int(size * 1048576)} bytes) "
    "from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory"
    for size in (613.15, 551.84, 496.66)
]
_EPOCHS = [f"Epoch {e}/30\n19/19 - 12s - loss: {0.9 / e:.4f} - accuracy: {0.6 + e / 100:.4f}" for e in range(1, 31)]


@pytest.mark.parametrize(
    ("ending", "expected"),
    [
        # the run finished: the retried allocations were no failure
        ("\n\nProcess finished with exit code 0", "unknown"),
        # no end reported, an end that hedges, or a log that raised another exception: the allocator's retries came
        # before the thirty epochs training then logged, so the run went on past them
        ("", "unknown"),
        ("\nTraining finished. If you see error messages above, training did not complete.", "unknown"),
        ("\nStorageError: upload retried\nTraining complete.", "unknown"),
    ],
)
def test_memory_words_before_a_run_that_went_on_name_no_failure(
    classifier: Classifier, ending: str, expected: str
) -> None:
    text = "\n".join([*_RETRY_LINES, *_EPOCHS]) + ending
    assert classifier.classify(text_to_lines(text)).failure_class == expected


def test_memory_words_once_training_ran_are_a_failure_s(classifier: Classifier) -> None:
    # the same retries after the curve began, and no end reported: they are what the log ends on
    text = "\n".join([*_EPOCHS[:10], *_RETRY_LINES])
    assert classifier.classify(text_to_lines(text)).failure_class == "accelerator_oom"
    # ... and with a clean end after them the run finished: no failure
    finished = text + "\n" + "\n".join(_EPOCHS[10:]) + "\n\nProcess finished with exit code 0"
    assert classifier.classify(text_to_lines(finished)).failure_class == "unknown"


def test_keyerror_inside_a_dataloader_worker_is_an_application_error(classifier: Classifier) -> None:
    text = (
        "KeyError: Caught KeyError in DataLoader worker process 3.\n"
        "Original Traceback (most recent call last):\n"
        '  File "/app/data.py", line 51, in __getitem__\n'
        "    return self.index[key]\n"
        "KeyError: 'sample_991'"
    )
    assert classifier.classify(text_to_lines(text)).failure_class == "application_error"


def test_healthy_log_is_unknown_with_low_confidence(classifier: Classifier) -> None:
    lines = [f"step {i} loss={2.0 - i * 0.01:.3f} lr=3e-4 throughput=812 samples/s" for i in range(200)]
    diagnosis = classifier.classify(text_to_lines("\n".join(lines)))
    assert diagnosis.failure_class == "unknown"
    assert diagnosis.confidence < 0.5


def test_a_checkpoint_callback_starting_from_inf_is_no_divergence(classifier: Classifier) -> None:
    """Keras's ModelCheckpoint and EarlyStopping compare the first epoch with inf (or -inf): not a NaN loss."""
    log = (
        "Epoch 1/10\n100/100 [====] - 5s 50ms/step - loss: 0.6931 - val_loss: 0.6500\n"
        "Epoch 00001: val_loss improved from inf to 0.65000, saving model to best.h5\n"
        "Epoch 00001: val_accuracy improved from -inf to 0.61000, saving model to best.h5\n"
    )
    diagnosis = classifier.classify(text_to_lines(log))
    assert diagnosis.failure_class == "unknown"
    assert "numerical_instability" not in [a.failure_class for a in diagnosis.alternatives if a.source == "rules"]
    # the same words about a real loss still point at divergence
    diverged = classifier.classify(text_to_lines("Epoch 00003: loss is inf, stopping\n"))
    assert diverged.failure_class == "numerical_instability"


def test_empty_input_is_unknown(classifier: Classifier) -> None:
    diagnosis = classifier.classify([])
    assert diagnosis.failure_class == "unknown" and diagnosis.evidence == []


def test_oom_on_one_replica_then_nccl_timeouts_is_diagnosed_as_the_oom(classifier: Classifier) -> None:
    entries = [entry("Epoch 2 step 400 loss: 1.93", "workerpool0-0", 0, "INFO")]
    entries.append(
        entry(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of "
            "39.39 GiB of which 1.02 GiB is free.",
            "workerpool0-0",
            10,
        )
    )
    for worker in range(1, 8):
        entries.append(
            entry(
                f"[rank{worker}]:[E ProcessGroupNCCL.cpp:616] [Rank {worker}] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600031 milliseconds "
                "before timing out.",
                f"workerpool1-{worker - 1}",
                610 + worker,
            )
        )
        entries.append(
            entry(f"RuntimeError: NCCL communicator was aborted on rank {worker}.", f"workerpool1-{worker - 1}", 620)
        )
    # Pub/Sub and gcloud deliver out of order: the classifier must use timestamps, not arrival order.
    lines = entries_to_lines(list(reversed(entries)))
    diagnosis = classifier.classify(lines)
    assert diagnosis.failure_class == "accelerator_oom"
    assert diagnosis.first_failing_replica == "workerpool0-0"
    assert len(diagnosis.cascade) == 7
    assert all(line.startswith("workerpool1-") for line in diagnosis.cascade)
    assert any("CUDA out of memory" in line for line in diagnosis.evidence)
    assert "distributed_setup" in {a.failure_class for a in diagnosis.alternatives}


def test_collective_timeout_alone_stays_a_distributed_failure(classifier: Classifier) -> None:
    lines = entries_to_lines(
        [
            entry(
                "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3) ran for 1800000 milliseconds "
                "before timing out.",
                f"workerpool{p}-0",
                5 + p,
            )
            for p in (0, 1)
        ]
        + [entry("RuntimeError: NCCL error: unhandled system error", "workerpool0-0", 9)]
    )
    diagnosis = classifier.classify(lines)
    assert diagnosis.failure_class == "distributed_setup"
    assert diagnosis.cascade == []


def test_a_setup_error_raised_as_an_exception_is_the_setup_failure_not_a_bare_traceback(
    classifier: Classifier,
) -> None:
    # The exception line is the distributed set-up failure itself: the catch-all sees no line of its own but the
    # traceback header, so it explains nothing and the secondary class stays the answer.
    text = (
        "Traceback (most recent call last):\n"
        '  File "task.py", line 30, in <module>\n'
        "    strategy = tf.distribute.MultiWorkerMirroredStrategy()\n"
        "ValueError: TF_CONFIG could not be parsed: Expecting property name enclosed in double quotes"
    )
    diagnosis = classifier.classify(text_to_lines(text))
    assert diagnosis.failure_class == "distributed_setup"
    assert "application_error" in {a.failure_class for a in diagnosis.alternatives}


def test_a_bug_on_one_replica_still_explains_the_collective_timeouts_on_the_others(classifier: Classifier) -> None:
    entries = [
        entry("Traceback (most recent call last):", "workerpool0-0", 10),
        entry("KeyError: 'labels'", "workerpool0-0", 11),
    ]
    entries += [watchdog_timeout(worker, 610 + worker) for worker in (1, 2)]
    diagnosis = classifier.classify(entries_to_lines(entries))
    assert diagnosis.failure_class == "application_error"
    assert diagnosis.first_failing_replica == "workerpool0-0"
    assert len(diagnosis.cascade) == 2


def test_an_exception_line_behind_a_rank_prefix_is_still_an_exception_line(classifier: Classifier) -> None:
    """... and torchrun's rank tags tell the failing rank from the one that timed out waiting for it."""
    text = (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "train.py", line 77, in <module>\n'
        "[rank0]: KeyError: 'labels'\n"
        "[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out."
    )
    diagnosis = classifier.classify(text_to_lines(text))
    assert diagnosis.failure_class == "application_error"
    assert diagnosis.first_failing_replica == "rank0"
    assert [line.split(" (")[0] for line in diagnosis.cascade] == ["rank1"]


def test_job_resource_error_message_is_used(classifier: Classifier) -> None:
    job = JobInfo(
        job_id="77",
        project="acme-ml",
        region="europe-west4",
        state="JOB_STATE_FAILED",
        error_code=8,
        error_message="Replicas low on memory: workerpool0. Specify a machine with larger memory and try again.",
        worker_pools=[WorkerPool(machine_type="n1-standard-4", replica_count=1)],
    )
    diagnosis = classifier.classify([], job)
    assert diagnosis.failure_class == "host_oom"
    assert diagnosis.details["project"] == "acme-ml" and diagnosis.details["region"] == "europe-west4"


def test_spot_job_that_dies_without_an_error_is_preemption(classifier: Classifier) -> None:
    job = JobInfo(job_id="5", project="p1", region="us-central1", state="JOB_STATE_FAILED", spot=True)
    lines = [LogLine(text=f"step {i} loss: {3 - i / 100:.2f}", replica="workerpool0-0") for i in range(50)]
    diagnosis = classifier.classify(lines, job)
    assert diagnosis.failure_class == "preemption"
    not_spot = classifier.classify(lines, job.model_copy(update={"spot": False}))
    assert not_spot.confidence < diagnosis.confidence


def test_exit_code_137_is_host_memory(classifier: Classifier) -> None:
    text = "The replica workerpool0-0 exited with a non-zero status of 137. Termination reason: Error."
    diagnosis = classifier.classify(text_to_lines(text))
    assert diagnosis.failure_class == "host_oom"
    assert diagnosis.first_failing_replica == "workerpool0-0"


def test_a_bare_killed_that_ends_the_log_outweighs_an_earlier_warning_the_program_ran_past(
    classifier: Classifier,
) -> None:
    # a native extension's missing symbol printed as a warning, then the program went on loading the model: the
    # kernel's SIGKILL at the very end is what stopped it, not the warning
    text = (
        "/usr/lib/python3/site-packages/apex/fused_adam_cuda.so: undefined symbol: _ZN2at6detail10empty_cudaE\n"
        "UserWarning: CUDA Setup failed despite GPU being available; 8-bit kernels are unavailable\n"
        "Loading model weights from /models/llama-13b ...\n"
        "Loading checkpoint shards:   0%|          | 0/3 [00:00<?, ?it/s]\n"
        "Killed\n"
    )
    diagnosis = classifier.classify(text_to_lines(text))
    assert diagnosis.failure_class == "host_oom", diagnosis.public_dict()
    assert any(line.strip() == "Killed" for line in diagnosis.evidence)
    # the same kill with the warning as the last word: the kill is no longer what ended the log
    moved = classifier.classify(text_to_lines("Killed\n" + text.replace("Killed\n", "")))
    assert moved.failure_class != "host_oom" or moved.confidence < diagnosis.confidence


def test_rpc_code_7_supports_permission_and_code_8_quota(classifier: Classifier) -> None:
    denied = JobInfo(job_id="1", project="p1", state="JOB_STATE_FAILED", error_code=7, error_message="Request denied.")
    assert classifier.classify([], denied).failure_class == "permission_denied"
    exhausted = JobInfo(
        job_id="2",
        project="p1",
        state="JOB_STATE_FAILED",
        error_code=8,
        error_message="Insufficient regional quota to satisfy request.",
    )
    assert classifier.classify([], exhausted).failure_class == "quota_exhausted"


def test_stockout_is_told_apart_from_quota(classifier: Classifier) -> None:
    text = (
        "code: 8 message: The zone 'us-central1-a' does not have enough resources available to fulfill the request."
        " Try a different zone, or try again later."
    )
    diagnosis = classifier.classify(text_to_lines(text))
    assert diagnosis.failure_class == "quota_exhausted"
    assert "stockout" in diagnosis.title.lower()
    assert not any("quota increase" in step.lower() for step in diagnosis.remediation)
    assert any("quota increase" in step.lower() for step in diagnosis.avoid)


def test_evidence_is_redacted_and_bounded(classifier: Classifier) -> None:
    lines = [f"RuntimeError: CUDA out of memory (attempt {i}) token=xoxb-1234567890-abcdefghij" for i in range(50)]
    diagnosis = classifier.classify(text_to_lines("\n".join(lines)))
    assert diagnosis.failure_class == "accelerator_oom"
    assert 1 <= len(diagnosis.evidence) <= 10
    assert all("xoxb-1234567890" not in line for line in diagnosis.evidence)


def test_five_thousand_line_log_with_one_decisive_line(classifier: Classifier) -> None:
    lines = [f"[2026-11-29 12:{i // 60:02d}:{i % 60:02d}] step {i} loss {1.5 - i / 10000:.4f}" for i in range(5000)]
    lines.insert(4000, "RuntimeError: Expected all tensors to be on the same device, but found cuda:0 and cpu!")
    diagnosis = classifier.classify(text_to_lines("\n".join(lines)))
    assert diagnosis.failure_class == "application_error"
    assert diagnosis.evidence == [
        "RuntimeError: Expected all tensors to be on the same device, but found cuda:0 and cpu!"
    ]


@pytest.mark.parametrize(
    "line",
    [
        "INFO Using /dev/shm for the dataset cache (64 GiB)",
        "I1129 trainer.py:40] preemptible=False spot=False checkpoint_every=500",
        "Downloading model weights: 100%|##########| 1.2G/1.2G",
        "W0000 warnings.py:109] UserWarning: TypedStorage is deprecated.",
    ],
)
def test_benign_mentions_are_not_failures(classifier: Classifier, line: str) -> None:
    diagnosis = classifier.classify(text_to_lines(f"{line}\nEpoch 1 loss: 0.52\nEpoch 2 loss: 0.41"))
    assert diagnosis.failure_class == "unknown", diagnosis.public_dict()


def test_code_that_starts_empty_prediction_lists_is_no_model_decoding_nothing(classifier: Classifier) -> None:
    """A notebook echoing its own code ("preds = []") is no sequence model decoding nothing ("decoded:[]")."""
    echoed = "".join(f"In [{i}]: preds = []\n" for i in range(1, 5))
    diagnosis = classifier.classify(text_to_lines(f"{echoed}Epoch 1 loss: 0.52\nEpoch 2 loss: 0.41"))
    assert diagnosis.failure_class == "unknown"
    assert not [a for a in diagnosis.alternatives if a.source == "rules"], diagnosis.alternatives
    decoding = "".join(f"sample {i}: decoded: []\n" for i in range(1, 5))
    assert classifier.classify(text_to_lines(decoding)).failure_class == "underfitting"


def test_a_weak_diagnosis_keeps_unknown_among_the_alternatives(classifier: Classifier) -> None:
    flat = "\n".join(f"Iteration {i}, loss = {6.37 + (i % 3) * 0.001:.5f}" for i in range(0, 1000, 100))
    weak = classifier.classify(text_to_lines(flat))
    assert weak.failure_class == "underfitting" and weak.confidence < 0.8
    assert "unknown" in [a.failure_class for a in weak.alternatives[:2]]
    strong = classifier.classify(text_to_lines("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB"))
    assert strong.confidence >= 0.8 and "unknown" not in [a.failure_class for a in strong.alternatives]


def test_a_line_repeated_verbatim_is_evidence_once(classifier: Classifier) -> None:
    text = "\n".join(["{'loss': nan, 'grad_norm': nan}"] * 5 + ["Epoch 3 loss: nan"])
    diagnosis = classifier.classify(text_to_lines(text))
    assert diagnosis.failure_class == "numerical_instability"
    assert diagnosis.evidence == ["{'loss': nan, 'grad_norm': nan}", "Epoch 3 loss: nan"]


def test_a_missing_module_after_progress_does_not_claim_no_training_output(classifier: Classifier) -> None:
    failure = "Traceback (most recent call last):\n  File train.py, line 80\nModuleNotFoundError: No module named wandb"
    late = classifier.classify(text_to_lines("Epoch 1/3 loss: 0.9\nEpoch 2/3 loss: 0.7\n" + failure))
    early = classifier.classify(text_to_lines(failure))
    assert late.failure_class == early.failure_class == "container_startup"
    assert "no training output" in early.symptom
    assert "no training output" not in late.symptom and "failed to start" not in late.title


def test_an_overfitting_diagnosis_states_the_turn_and_shows_its_lines(classifier: Classifier) -> None:
    text = "epoch,train_loss,val_loss\n1,1.20,1.10\n2,0.80,0.90\n3,0.50,0.85\n4,0.30,0.95\n5,0.15,1.20\n6,0.08,1.45"
    diagnosis = classifier.classify(text_to_lines(text))
    assert diagnosis.failure_class == "overfitting"
    assert diagnosis.finding is not None and diagnosis.finding.startswith("val_loss best 0.85 at epoch 3, 1.45")
    assert "3,0.50,0.85" in diagnosis.evidence and "6,0.08,1.45" in diagnosis.evidence
    assert diagnosis.public_dict()["finding"] == diagnosis.finding
    healthy = "epoch,train_loss,val_loss\n1,1.20,1.10\n2,0.80,0.90\n3,0.50,0.70\n4,0.30,0.60"
    assert classifier.classify(text_to_lines(healthy)).finding is None


# ---- ranking under the wrappings real job logs add (benchmarks/probe_ranking.py) ------------------------------

LAUNCHER_TAIL = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/bin/launch.py", line 52, in <module>\n'
    "    subprocess.run(command, check=True)\n"
    "subprocess.CalledProcessError: Command '['python3', '-m', 'trainer.task']' returned non-zero exit status 1.\n"
    "The replica workerpool0-0 exited with a non-zero status of 1. To find out more about why your job exited "
    "please check the logs: https://console.cloud.google.com/logs/viewer?project=1234"
)


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("The job could not get enough quota for the requested accelerators in us-central1", "quota_exhausted"),
        (
            "Loading shards from gs://acme-data/tfrecords/: the input pipeline is stuck waiting for a batch",
            "input_pipeline",
        ),
    ],
)
def test_a_launcher_s_generic_exit_does_not_hide_a_weak_specific_cause(
    classifier: Classifier, words: str, expected: str
) -> None:
    # the catch-all sees a bare traceback (CalledProcessError says only that a child failed); the words say what
    diagnosis = classifier.classify(text_to_lines(words + "\n" + LAUNCHER_TAIL))
    assert diagnosis.failure_class == expected
    assert "application_error" in {a.failure_class for a in diagnosis.alternatives}


def test_a_specific_bug_keeps_the_catch_all_ahead_of_words(classifier: Classifier) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 633, in __next__\n'
        "    data = self._next_data()\n"
        '  File "/root/trainer/data.py", line 40, in __getitem__\n'
        "    return self.rows[index]['label']\n"
        "KeyError: 'label'"
    )
    assert classifier.classify(text_to_lines(text + "\n" + LAUNCHER_TAIL)).failure_class == "application_error"


def test_the_traceback_header_before_an_oom_does_not_make_the_oom_a_bare_traceback_in_a_cascade(
    classifier: Classifier,
) -> None:
    entries = [
        entry("Traceback (most recent call last):", "workerpool0-0", 10),
        entry('  File "/root/trainer/task.py", line 88, in train_step', "workerpool0-0", 10.1),
        entry("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "workerpool0-0", 10.2),
    ]
    for worker in (1, 2, 3):  # the others' timeouts score higher (0.99) than the OOM itself (0.97)
        entries += [
            watchdog_timeout(worker, 610 + worker),
            entry(
                f"[Rank {worker}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of "
                "CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
                f"workerpool1-{worker - 1}",
                611 + worker,
            ),
            entry(
                "terminate called after throwing an instance of 'c10::DistBackendError'",
                f"workerpool1-{worker - 1}",
                612,
            ),
        ]
    diagnosis = classifier.classify(entries_to_lines(entries))
    assert diagnosis.failure_class == "accelerator_oom"
    assert diagnosis.first_failing_replica == "workerpool0-0"
    assert len(diagnosis.cascade) == 3


def test_a_healthy_run_s_set_up_and_data_chatter_is_no_failure(classifier: Classifier) -> None:
    text = "\n".join(
        [
            "INFO:root:Reading training data from gs://acme-data/train-*.tfrecord",
            "INFO:torch.distributed.distributed_c10d:Added key: store_based_barrier_key:1 to store for rank: 0",
            "INFO:torch.distributed.distributed_c10d:Rank 0: Completed store-based barrier for key:"
            "store_based_barrier_key:1 with 4 nodes.",
            "cmle-training-7f3a:312:401 [0] NCCL INFO comm 0x55d8 rank 0 nranks 4 cudaDev 0 busId 40 - Init COMPLETE",
            "INFO:root:GPU memory allocated 10.21 GiB, reserved 12.00 GiB",
        ]
        + [
            f"INFO:root:epoch 1 step {step}/5000 loss={2.0 - step / 5000:.4f} (4.1 it/s)"
            for step in range(50, 2000, 50)
        ]
    )
    diagnosis = classifier.classify(text_to_lines(text))
    assert diagnosis.failure_class == "unknown"
    assert diagnosis.confidence <= 0.45


HEALTHY_START = [
    "INFO:root:Reading training data from gs://acme-data/train-*.tfrecord with tf.data, prefetch=AUTOTUNE",
    "INFO:torch.distributed.distributed_c10d:Added key: store_based_barrier_key:1 to store for rank: 0",
    "cmle-training-7f3a:312:312 [0] NCCL INFO Bootstrap : Using eth0:10.128.0.12<0>",
    "I0423 06:47:26.398192 139841385358528 utils.py:1954] Initializing the input pipeline for task 'pretrain'",
]


def test_words_on_a_healthy_info_line_do_not_outweigh_the_failure_s_words(classifier: Classifier) -> None:
    # the data and cluster words of the INFO lines are a running job's chatter; the failure's words decide
    failure = (
        "ERROR: Failed to create pipeline job. Error: The image us-docker.pkg.dev/acme/repo/trainer:v3 does not exist"
    )
    diagnosis = classifier.classify(text_to_lines("\n".join([*HEALTHY_START, failure])))
    assert diagnosis.failure_class == "container_startup"


def test_torchrun_s_report_of_a_failed_worker_is_no_cluster_evidence(classifier: Classifier) -> None:
    text = "\n".join(
        [
            "Failed to create pipeline job. Error: The image us-docker.pkg.dev/acme/repo/trainer:v3 does not exist",
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 312) of "
            "binary: /opt/conda/bin/python3",
            '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/run.py", line 794, in main',
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        ]
    )
    assert classifier.classify(text_to_lines(text)).failure_class == "container_startup"


def test_a_registry_refusing_the_pulling_identity_is_permission_even_with_the_exit_line(classifier: Classifier) -> None:
    text = (
        "$ docker pull gcr.io/acme/trainer:latest\n"
        "Error response from daemon: unauthorized: You don't have the needed permissions to perform this operation, "
        "and you may have invalid credentials.\n"
        "The replica workerpool0-0 exited with a non-zero status of 1. To find out more about why your job exited "
        "please check the logs."
    )
    assert classifier.classify(text_to_lines(text)).failure_class == "permission_denied"


def nccl_timeouts(first_second: float) -> list[dict]:
    entries = []
    for worker in (1, 2, 3):
        entries += [
            watchdog_timeout(worker, first_second + worker),
            entry(
                f"[Rank {worker}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of "
                "CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
                f"workerpool1-{worker - 1}",
                first_second + worker + 0.5,
            ),
        ]
    return entries


def test_a_killed_worker_named_by_torchrun_explains_the_other_replicas_timeouts(classifier: Classifier) -> None:
    # the torchrun line names torch.distributed (cluster words) on the OOM's own replica: no collective symptom there
    entries = [
        entry(
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 29066) of "
            "binary: /opt/conda/bin/python3",
            "workerpool0-0",
            10,
        ),
        *nccl_timeouts(600),
    ]
    diagnosis = classifier.classify(entries_to_lines(entries))
    assert diagnosis.failure_class == "host_oom"
    assert diagnosis.first_failing_replica == "workerpool0-0"


def test_a_weak_cause_on_the_one_replica_without_a_timeout_explains_the_timeouts(classifier: Classifier) -> None:
    # words alone (0.4) on workerpool0-0, which never timed out: the replica the others waited for
    entries = [
        entry("Error: the caller does not have the required credentials for bucket acme-data", "workerpool0-0", 10),
        *nccl_timeouts(600),
    ]
    assert classifier.classify(entries_to_lines(entries)).failure_class == "permission_denied"


def test_a_cloud_storage_write_that_fails_is_no_input_failure(classifier: Classifier) -> None:
    read = (
        "NOT_FOUND: Error executing an HTTP request: HTTP response code 404 with body 'No such object'\n"
        "\t when reading gs://team-data/train/part-0007.tfrecord"
    )
    write = (
        "UNAVAILABLE: Error executing an HTTP request: HTTP response code 503 with body 'Service Unavailable'\n"
        "\t when initiating an upload to gs://team-models/run-12/ckpt-4000.data-00000-of-00001"
    )
    assert classifier.classify(text_to_lines(read)).failure_class == "input_pipeline"
    written = classifier.classify(text_to_lines(write))
    # no rule reads a checkpoint write as an input failure; the text model's words (an HTTP error on gs://) may
    # still suggest one where no rule has evidence - said as likely, never with a rule's confidence
    assert written.failure_class != "input_pipeline" or (written.basis == "words" and written.confidence < 0.8)
    kb = load_knowledge()
    kb.text_model = None
    assert Classifier(kb).classify(text_to_lines(write)).failure_class != "input_pipeline"


def test_the_jobs_bare_exit_report_speaks_for_no_alternative() -> None:
    """Every failed Vertex AI job's error says a replica exited with status 1: those words are no lead, so no
    alternative is listed on that line (before, host_oom and container_startup showed up on every such job)."""
    job = JobInfo(
        job_id="8501620632646057984",
        project="acme-ml",
        region="us-central1",
        state="JOB_STATE_FAILED",
        error_message="The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error.",
    )
    text = (
        'E1203 09:14:02.118201 gcs: Req 0x1c: -> CreateObject("logs/events.out.tfevents") (31.2ms): error in '
        "closing writer : googleapi: Error 403: Access denied., forbidden"
    )
    diagnosis = Classifier(load_knowledge()).classify(text_to_lines(text), job)
    assert diagnosis.failure_class == "permission_denied"
    assert not [a for a in diagnosis.alternatives if "non-zero status" in a.evidence], diagnosis.alternatives


def test_a_class_reading_only_the_proven_answers_own_line_is_no_alternative(classifier: Classifier) -> None:
    # "out of memory" in a CUDA OOM's line is no host OOM: that class has no evidence of its own (issue 11)
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of "
        "79.15 GiB of which 1.02 GiB is free."
    )
    diagnosis = classifier.classify(text_to_lines(oom))
    assert diagnosis.failure_class == "accelerator_oom"
    assert "host_oom" not in {a.failure_class for a in diagnosis.alternatives}
    # with a line of its own (the kernel's OOM killer), host memory stays a lead to follow
    both = classifier.classify(
        text_to_lines(oom + "\n[Fri Mar  1 10:00:00 2024] Out of memory: Killed process 4121 (python3)")
    )
    assert "host_oom" in {both.failure_class, *(a.failure_class for a in both.alternatives)}


def _keras_epochs(rows: list[tuple[float, float, float, float]], extra: dict[int, str] | None = None) -> list[str]:
    lines = []
    for epoch, (loss, acc, val_loss, val_acc) in enumerate(rows, start=1):
        lines.append(f"Epoch {epoch}/{len(rows)}")
        lines.append(
            f"300/300 [==============================] - 9s - loss: {loss:.4f} - accuracy: {acc:.4f} - "
            f"val_loss: {val_loss:.4f} - val_accuracy: {val_acc:.4f}"
        )
        if extra and epoch in extra:
            lines.append(extra[epoch])
    return lines


# an attempt that memorises its training data: validation best at epoch 3, then early stopping, and a summary line
# with a train/validation accuracy gap
MEMORISING = _keras_epochs(
    [(1.2, 0.6, 1.1, 0.62), (0.7, 0.78, 0.9, 0.7), (0.4, 0.88, 0.85, 0.72), (0.2, 0.95, 0.98, 0.71),
     (0.1, 0.98, 1.2, 0.7), (0.05, 0.99, 1.45, 0.69)],
    {6: "Epoch 6: early stopping\nRestoring model weights from the end of the best epoch: 3."},
) + ["final: train accuracy: 0.99, val accuracy: 0.69"]  # fmt: skip
# the relaunch with dropout and augmentation: both losses fall together to the end
REGULARISED = _keras_epochs([(1.3 - 0.12 * i, 0.55 + 0.04 * i, 1.28 - 0.11 * i, 0.56 + 0.035 * i) for i in range(8)])


def test_an_earlier_attempts_overfitting_says_nothing_of_the_relaunch(classifier) -> None:
    """The curve classes are judged on the log's last run: once the epochs count from 1 again with a new loss, the
    earlier attempt's early stopping and accuracy gap no longer count (alone, the same lines are overfitting)."""
    assert classifier.classify(text_to_lines("\n".join(MEMORISING))).failure_class == "overfitting"
    relaunched = "\n".join([*MEMORISING, "relaunching with dropout=0.3 and augmentation", *REGULARISED])
    diagnosis = classifier.classify(text_to_lines(relaunched))
    assert diagnosis.failure_class == "unknown", (diagnosis.failure_class, diagnosis.evidence)
    # the other way round the last run is the memorising one: overfitting, with its own lines as evidence
    other_way = "\n".join([*REGULARISED, "relaunching without regularisation", *MEMORISING])
    diagnosis = classifier.classify(text_to_lines(other_way))
    assert diagnosis.failure_class == "overfitting"
    assert any("early stopping" in line or "val_loss: 1.4500" in line for line in diagnosis.evidence)


@pytest.mark.parametrize(
    "stop",
    [
        "hit patience 5\nhit #5 trial\nearly stop!",
        "Ran out of patience.  Stopping training.",
        "Early stopping triggered after epoch 14.",
        # Ultralytics YOLO's EarlyStopping, in its own words
        "Stopping training early as no improvement observed in last 50 epochs. Best results observed at epoch 71.",
    ],
)
def test_an_early_stop_alone_lists_overfitting_without_claiming_it(classifier: Classifier, stop: str) -> None:
    diagnosis = classifier.classify(text_to_lines(f"validation: iter 94000, dev. ppl 17.209386\n{stop}"))
    assert diagnosis.failure_class == "unknown"  # early stopping is also what a healthy plateau does
    overfitting = next(a for a in diagnosis.alternatives if a.failure_class == "overfitting")
    assert overfitting.source != "text model"  # the rules' own hint, from the stop line itself
    assert overfitting.evidence in stop.splitlines()


def _fastai_table(metric: str, rows: list[tuple[float, float, float]]) -> str:
    header = f"epoch\ttrain_loss\tvalid_loss\t{metric}\ttime"
    return "\n".join([header, *(f"{i}\t{t:.6f}\t{v:.6f}\t{m:.6f}\t00:04" for i, (t, v, m) in enumerate(rows))])


@pytest.mark.parametrize(
    ("metric", "values", "expected"),
    [
        ("error_rate", (0.71, 0.69, 0.7, 0.66, 0.64), "underfitting"),
        ("error_rate", (0.31, 0.29, 0.3, 0.27, 0.26), "unknown"),
        ("accuracy", (0.29, 0.31, 0.3, 0.33, 0.34), "underfitting"),
        ("accuracy", (0.69, 0.71, 0.7, 0.73, 0.74), "unknown"),
    ],
)
def test_a_flat_training_loss_beside_an_easing_validation_loss_is_underfitting_when_half_stays_wrong(
    classifier: Classifier, metric: str, values: tuple[float, ...], expected: str
) -> None:
    """A training loss that never moves from the first epoch while the validation loss eases by a tenth: with the
    validation error rate at half or more (accuracy at half or less) every epoch, the model does not learn the task
    (a learning rate far too low); with most predictions right, an easing validation loss is learning and nothing is
    claimed."""
    train, valid = (1.3021, 1.2987, 1.3044, 1.2969, 1.3002), (1.4113, 1.3652, 1.3301, 1.3049, 1.2877)
    rows = list(zip(train, valid, values, strict=True))
    diagnosis = classifier.classify(text_to_lines(_fastai_table(metric, rows)))
    assert diagnosis.failure_class == expected, diagnosis.public_dict()


def test_an_infinite_best_so_far_is_no_divergence(classifier: Classifier) -> None:
    """A run that never evaluated reports its best-so-far placeholder; an infinite loss itself is still a blow-up."""
    placeholder = "Configuration: {'epochs': 0}\nBest model found at epoch 0, Val Loss: inf, AUC: 0.00%\nDone"
    assert classifier.classify(text_to_lines(placeholder)).failure_class != "numerical_instability"
    diverged = "epoch 3 | step 1200 | Val Loss: inf | AUC: 0.00%\nepoch 4 | step 1600 | Val Loss: inf | AUC: 0.00%"
    assert classifier.classify(text_to_lines(diverged)).failure_class == "numerical_instability"


@pytest.mark.parametrize(
    ("path", "is_data"),
    [
        ("data/train_pairs.csv", True),
        ("/mnt/corpus/valid.jsonl", True),
        ("annotations/labels_test.json", True),
        ("configs/train_config.json", False),  # the code's own configuration
        ("outputs/test_predictions.csv", False),  # a file being written, not read
        ("checkpoints/train_state.pkl", False),
    ],
)
def test_a_missing_file_named_as_data_is_the_input_pipeline(classifier: Classifier, path: str, is_data: bool) -> None:
    text = (
        "Traceback (most recent call last):\n  File \"run.py\", line 40, in <module>\n    main()\n"
        f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'"
    )
    diagnosis = classifier.classify(text_to_lines(text))
    assert (diagnosis.failure_class == "input_pipeline") is is_data, diagnosis.public_dict()


def test_tensorflow_probing_for_the_metadata_server_off_google_cloud_is_no_storage_failure(
    classifier: Classifier,
) -> None:
    # TF looks for Google credentials on any machine; off Google Cloud the metadata host does not resolve and its
    # retry helper says so. No rule reads that as a Cloud Storage read failing.
    text = (
        "I tensorflow/core/platform/cloud/retrying_utils.cc:73] The operation failed and will be automatically "
        "retried in 1.4 seconds (attempt 4 out of 10), caused by: Unavailable: Error executing an HTTP request: "
        "libcurl code 6 meaning 'Couldn't resolve host name', error details: Couldn't resolve host 'metadata'\n"
        "Loaded 50000 training images from ./data/cifar10"
    )
    diagnosis = classifier.classify(text_to_lines(text))
    assert not (diagnosis.basis == "rules" and diagnosis.failure_class == "input_pipeline"), diagnosis.public_dict()
    # the same retry on a real read of a bucket still is one
    read = text.replace("Couldn't resolve host 'metadata'", "Couldn't resolve host 'storage.googleapis.com'")
    assert classifier.classify(text_to_lines(read)).failure_class == "input_pipeline"


def test_ray_reading_its_own_empty_dashboard_log_is_no_damaged_data_file(classifier: Classifier) -> None:
    line = "ERROR services.py:1409 -- Failed to read dashboard.err file: cannot mmap an empty file."
    diagnosis = classifier.classify(text_to_lines(line))
    assert not (diagnosis.basis == "rules" and diagnosis.failure_class == "input_pipeline")  # no rule says so
    damaged = "ValueError: cannot mmap an empty file (while loading /data/shards/train_00017.npy)"
    assert classifier.classify(text_to_lines(damaged)).failure_class == "input_pipeline"


def test_an_orchestrators_ssh_tunnel_to_its_instance_is_no_cluster_peer(classifier: Classifier) -> None:
    # dstack / SkyPilot reach the instance they rent through an SSH tunnel: when it is refused, the instance went
    # away; a launcher's "ssh: connect to host" (mpirun, pdsh) is about a cluster peer
    refused = "ssh: connect to host 203.0.113.18 port 10022: Connection refused"
    tunnel = "\n".join(f"[09:41:0{i}] DEBUG    SSH tunnel failed: b'{refused}'" for i in range(3))
    lost = classifier.classify(text_to_lines(tunnel))
    assert lost.basis == "words" and lost.confidence <= 0.75  # no rule proves a cluster failure; words may guess
    launcher = "\n".join(f"[09:41:0{i}] {refused}" for i in range(3))
    peer = classifier.classify(text_to_lines(launcher))
    assert (peer.failure_class, peer.basis) == ("distributed_setup", "rules")


def test_a_log_that_ends_as_ranks_join_the_process_group_hung_there(classifier: Classifier) -> None:
    joining = "\n".join(
        f"[rank: {r}] Seed set to 7\nInitializing distributed: GLOBAL_RANK: {r}, MEMBER: {r + 1}/4" for r in (0, 2, 3)
    )
    hung = classifier.classify(text_to_lines(joining))
    assert hung.failure_class == "distributed_setup" and hung.confidence >= 0.8
    assert "Initializing distributed: GLOBAL_RANK: 3" in hung.evidence[-1]
    assert hung.finding is None  # a log line, not a curve: the alert shows no "The curve:"
    # every rank joined and training went on: the same announcements are no hang
    went_on = joining + "\nAll distributed processes registered. Starting with 4 processes\nEpoch 0: 100%| loss=2.31"
    assert classifier.classify(text_to_lines(went_on)).failure_class == "unknown"


def test_cudnns_plan_that_did_not_fit_is_a_warning_not_an_oom(classifier: Classifier) -> None:
    warning = (
        "/opt/venv/lib/python3.11/site-packages/torch/autograd/graph.py:825: UserWarning: Plan failed with an "
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 1.12 GiB. (Triggered internally at "
        "../aten/src/ATen/native/cudnn/Conv_v8.cpp:919.)"
    )
    went_on = warning + "\nEpoch: [4] Total time: 0:01:01 (0.5110 s / it)\nRuntimeError: step 5 failed"
    assert classifier.classify(text_to_lines(went_on)).failure_class != "accelerator_oom"
    # the allocation itself failing is the accelerator's memory
    failed = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.12 GiB. GPU 0 has 602.31 MiB free"
    assert classifier.classify(text_to_lines(failed)).failure_class == "accelerator_oom"


def test_lightnings_refusal_of_a_missing_accelerator_is_no_proof_of_a_code_bug(classifier: Classifier) -> None:
    # MisconfigurationException is how Lightning refuses the program's own wiring (a loop's dataloader method
    # missing): decisive for a code bug. Refusing an accelerator the machine lacks is the environment's doing.
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/workspace/train.py", line 60, in <module>\n'
        '    trainer = pl.Trainer(accelerator="gpu", devices=1, max_epochs=20)\n'
        '  File "/usr/local/lib/python3.10/site-packages/lightning/pytorch/trainer/connectors/'
        'accelerator_connector.py", line 355, in _check_device_config_and_set_final_flags\n'
        "    raise MisconfigurationException(\n"
        "lightning_fabric.utilities.exceptions.MisconfigurationException: "
    )
    wiring = traceback + "No `val_dataloader()` method defined to run `Trainer.validate`."
    assert classifier.classify(text_to_lines(wiring)).failure_class == "application_error"
    machine = traceback + "CUDAAccelerator can not run on your system since the accelerator is not available."
    refused = classifier.classify(text_to_lines(machine))
    assert refused.confidence < 0.6  # a bare traceback's level: no decisive code-bug signal (0.92 with one)


def test_a_preemption_counter_in_a_metrics_header_is_no_reclaim(classifier: Classifier) -> None:
    """AlgoPerf's metric CSVs carry a preemption_count column: the word in a header is no event, so a healthy run's
    table lists no preemption among its alternatives. The same word in a message still does."""
    header = "global_step,preemption_count,score,train/loss,validation/loss,total_duration"
    rows = [f"{1000 * i},0,{60 * i},{2.3 - 0.15 * i:.3f},{2.35 - 0.14 * i:.3f},{65 * i}" for i in range(1, 9)]
    diagnosis = classifier.classify(text_to_lines("\n".join([header, *rows])))
    assert "preemption" not in [a.failure_class for a in diagnosis.alternatives], diagnosis.alternatives
    reclaimed = "\n".join([header, *rows, "Instance was preempted by the platform; job will be restarted"])
    listed = classifier.classify(text_to_lines(reclaimed))
    assert "preemption" in [listed.failure_class, *(a.failure_class for a in listed.alternatives)]


def test_a_loader_worker_that_exited_is_input_but_not_a_sure_one(classifier: Classifier) -> None:
    """A DataLoader worker that "exited unexpectedly" is as often the OOM killer taking it (host memory) as a sample
    it could not read: the line's own word "DataLoader" does not count a second time, so the answer stays under 0.8
    with host memory beside it. A worker that names its cause keeps the sure answer."""
    bare = classifier.classify(text_to_lines("RuntimeError: DataLoader worker (pid(s) 73110) exited unexpectedly"))
    assert bare.failure_class == "input_pipeline"
    assert bare.confidence < 0.8
    assert "host_oom" in [a.failure_class for a in bare.alternatives]
    shm = classifier.classify(
        text_to_lines(
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
            "(shm).\nRuntimeError: DataLoader worker (pid(s) 73110) exited unexpectedly"
        )
    )
    assert shm.failure_class == "input_pipeline" and shm.confidence >= 0.9


@pytest.mark.parametrize(
    "stop_line",
    [
        "slurmstepd: error: *** JOB 4411 ON node07 CANCELLED AT 2025-05-01T02:00:03 DUE TO TIME LIMIT ***",
        "TERM_OWNER: job killed by owner.",
        "job killed after reaching LSF run time limit.",  # the exit reason's sentence without its code
        "=>> PBS: job killed: walltime 3611 exceeded limit 3600",
    ],
)
def test_a_job_its_scheduler_stopped_at_its_limit_says_so_and_is_no_reclaim(
    classifier: Classifier, stop_line: str
) -> None:
    """The scheduler's own line says it ended the job (time limit, owner): the SIGTERM after it is the scheduler's,
    so the answer is no preemption; the card names the stop and shows that line first."""
    log = "\n".join(
        [
            "epoch 3 | step 1200 | loss 1.913",
            "epoch 3 | step 1300 | loss 1.902",
            stop_line,
            "[rank: 0] Received SIGTERM: 15",
            "Exited with exit code 143.",
        ]
    )
    diagnosis = classifier.classify(text_to_lines(log))
    assert diagnosis.failure_class == "unknown", diagnosis.public_dict()
    assert diagnosis.title.startswith("The job was stopped at its time limit or by its owner")
    assert diagnosis.evidence and diagnosis.evidence[0] == stop_line
    assert all(a.confidence < 0.5 for a in diagnosis.alternatives if a.failure_class == "preemption")
    # the same log without the scheduler's line is the reclaim the SIGTERM suggests
    bare = classifier.classify(text_to_lines(log.replace(stop_line + "\n", "")))
    assert bare.failure_class == "preemption", bare.public_dict()


def test_a_rerun_of_a_job_stopped_at_its_limit_says_why_in_the_words_of_the_stop(classifier: Classifier) -> None:
    """The card says the scheduler stopped the job; the Rerun's reason must not say that nothing was found."""
    from bot.chat.rerun_offer import rerun_offer

    log = "step 900 | loss 0.88\nTERM_RUNLIMIT: job killed after reaching LSF run time limit.\nExited with code 140."
    diagnosis = classifier.classify(text_to_lines(log))
    offer = rerun_offer(classifier.kb, diagnosis)
    assert "time limit" in offer.why and "Nothing known matched" not in offer.why, offer


def test_an_answer_and_its_alternatives_never_claim_more_than_all_of_it_together(classifier: Classifier) -> None:
    """Issue 11: a textbook CUDA OOM whose NCCL watchdog fired after it read "94%, also possible: distributed_setup
    85%". The answer's confidence is the chance it is right: its alternatives share what is left."""
    text = (
        "Epoch 1/10\n"
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 98, in main\n'
        "    loss.backward()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "39.39 GiB of which 1.12 GiB is free.\n"
        "[rank0]:[E1130 10:02:11.000000 ProcessGroupNCCL.cpp:1430] [PG 0 Rank 0] Watchdog caught collective "
        "operation timeout\n"
    )
    diagnosis = classifier.classify(text_to_lines(text))
    assert diagnosis.failure_class == "accelerator_oom" and diagnosis.confidence >= 0.9
    listed = {a.failure_class: a.confidence for a in diagnosis.alternatives}
    assert "distributed_setup" in listed  # still named (it is in the top three)...
    assert listed["distributed_setup"] <= 1.0 - diagnosis.confidence  # ...below what the answer leaves
    assert diagnosis.confidence + sum(listed.values()) <= 1.0 + 0.001 * len(listed)  # (each figure rounded)
    ranked = [a.confidence for a in diagnosis.alternatives]
    assert ranked == sorted(ranked, reverse=True) and ranked[0] > ranked[-1]  # the order of the rules' scores kept
