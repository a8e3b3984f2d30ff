"""Sample failed jobs for `trainmedic demo`: what a log sink would export for them, and their CustomJobs.

One sample per failure class in knowledge/ (`Sample.failure_class`), plus a worker restart that recovers and is
never posted. The log lines are written for the demo, in the shapes Vertex AI and the usual frameworks print.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from standins.google_apis import custom_job_json, log_entry

PROJECT = "acme-ml"
REGION = "us-central1"


@dataclass
class Sample:
    title: str
    job: dict
    deliveries: list[dict]  # LogEntries (or Monitoring notifications) in the order Pub/Sub delivers them
    final_job: dict | None = None  # the job's state after the deliveries (a restart that recovers)
    expect_message: bool = True
    notes: list[str] = field(default_factory=list)
    failure_class: str | None = None  # the class the alert should show (None: nothing is posted)


def _t(second: int) -> str:
    return f"2026-11-29T09:{second // 60:02d}:{second % 60:02d}.000000001Z"


def _failed(job_id: str, second: int) -> dict:
    return log_entry(PROJECT, job_id, "Job failed.", timestamp=_t(second), insert_id=f"{job_id}-job-failed")


def _job(job_id: str, name: str, **fields: object) -> dict:
    times = {"createTime": _t(0), "startTime": _t(1), "endTime": _t(55), "updateTime": _t(55)}
    return custom_job_json(PROJECT, REGION, job_id, displayName=name, **{**times, **fields})


def _spec(job_id: str, *, machine: dict | None = None, replicas: int = 1, **fields: object) -> dict:
    """The job spec of `custom_job_json` with another machine, replica count or other fields."""
    spec = custom_job_json(PROJECT, REGION, job_id)["jobSpec"]
    pool = {**spec["workerPoolSpecs"][0], "replicaCount": str(replicas)}
    if machine is not None:
        pool["machineSpec"] = machine
    return {**spec, "workerPoolSpecs": [pool], **fields}


_EXITED = "The replica workerpool0-0 exited with a non-zero status of {status}. Termination reason: Error."


def _lines(job_id: str, texts: list[str], *, task: str = "workerpool0-0", start: int = 10) -> list[dict]:
    """One ERROR entry per text (the container's stderr), a second apart, from `task`."""
    return [
        log_entry(
            PROJECT,
            job_id,
            text,
            task_name=task,
            severity="ERROR",
            timestamp=_t(start + i),
            insert_id=f"{job_id}-{task}-{start + i}",
        )
        for i, text in enumerate(texts)
    ]


def _service(job_id: str, text: str, second: int) -> dict:
    """An ERROR entry Vertex AI itself writes (task_name "service")."""
    return log_entry(PROJECT, job_id, text, severity="ERROR", timestamp=_t(second), insert_id=f"{job_id}-svc-{second}")


def samples() -> list[Sample]:
    cascade_id = "7310001"
    workers = [
        log_entry(
            PROJECT,
            cascade_id,
            f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=4711, OpType=ALLREDUCE, NumelIn=9801523, Timeout(ms)=600000) ran for 600031 "
            "milliseconds before timing out.",
            task_name=f"workerpool1-{r - 1}",
            severity="ERROR",
            timestamp=_t(40 + r),
            insert_id=f"{cascade_id}-nccl-{r}",
        )
        for r in range(1, 4)
    ]
    oom = log_entry(
        PROJECT,
        cascade_id,
        'Traceback (most recent call last):\n  File "/app/train.py", line 212, in train_step\n'
        "    loss.backward()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total capacity of "
        "39.39 GiB of which 2.12 GiB is free. Of the allocated memory 34.1 GiB is allocated by PyTorch.",
        task_name="workerpool0-0",
        severity="ERROR",
        timestamp=_t(30),
        insert_id=f"{cascade_id}-oom",
    )
    cascade_deliveries = [oom, *workers, _failed(cascade_id, 50)]
    multi_spec = {
        **custom_job_json(PROJECT, REGION, cascade_id)["jobSpec"],
        "workerPoolSpecs": [
            custom_job_json(PROJECT, REGION, cascade_id)["jobSpec"]["workerPoolSpecs"][0],
            {**custom_job_json(PROJECT, REGION, cascade_id)["jobSpec"]["workerPoolSpecs"][0], "replicaCount": "3"},
        ],
    }

    iam_id = "7310002"
    quota_id = "7310003"
    nan_id = "7310004"
    entry_id = "7310005"
    recover_id = "7310006"
    util_id = "7310007"
    return [
        Sample(
            "Multi-replica OOM: workerpool0-0 runs out of GPU memory, the other replicas then time out in NCCL",
            _job(cascade_id, "llm-finetune-7b", jobSpec=multi_spec, labels={"team": "nlp"}),
            cascade_deliveries + cascade_deliveries,  # every entry delivered twice (at-least-once delivery)
            notes=["every entry delivered twice"],
            failure_class="accelerator_oom",
        ),
        Sample(
            "IAM: the job's service account cannot read the training bucket",
            _job(
                iam_id,
                "resnet50-imagenet",
                labels={"team": "vision"},
                jobSpec={**custom_job_json(PROJECT, REGION, iam_id)["jobSpec"], "serviceAccount": ""},
            ),
            [
                log_entry(
                    PROJECT,
                    iam_id,
                    "google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/storage/v1/b/"
                    "acme-imagenet/o/train%2Fshard-0001.tfrecord?alt=media: service-608533675308@gcp-sa-aiplatform-cc."
                    "iam.gserviceaccount.com does not have storage.objects.get access to the Google Cloud Storage "
                    "object. Permission 'storage.objects.get' denied on resource (or it may not exist).",
                    task_name="workerpool0-0",
                    severity="ERROR",
                    timestamp=_t(10),
                ),
                _failed(iam_id, 12),
            ],
            failure_class="permission_denied",
        ),
        Sample(
            "Quota: 16 A100s requested where the region allows 8 (routed to the platform channel)",
            _job(quota_id, "bert-pretrain-16x", labels={"team": "nlp"}),
            [
                log_entry(
                    PROJECT,
                    quota_id,
                    'Training failed with: code: 8 message: "The following quota metrics exceed quota limits: '
                    'aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"',
                    severity="ERROR",
                    timestamp=_t(3),
                ),
                _failed(quota_id, 4),
            ],
            failure_class="quota_exhausted",
        ),
        Sample(
            "Divergence: the loss turns NaN after a learning-rate bump",
            _job(nan_id, "ctr-model-v9", labels={"team": "ads"}),
            [
                log_entry(
                    PROJECT,
                    nan_id,
                    "\n".join(
                        [
                            f"{{'loss': {2.31 - i * 0.07:.4f}, 'grad_norm': {1.2 + i:.2f}, 'learning_rate': 0.003}}"
                            for i in range(5)
                        ]
                        + ["{'loss': nan, 'grad_norm': nan, 'learning_rate': 0.003}"] * 3
                        + [
                            "ValueError: Loss is NaN, stopping training "
                            "(token=ghp_abcdefghijklmnopqrstuvwxyz0123456789)"
                        ]
                    ),
                    task_name="workerpool0-0",
                    severity="ERROR",
                    timestamp=_t(20),
                ),
                _failed(nan_id, 21),
            ],
            notes=["a secret in the log is redacted from the evidence"],
            failure_class="numerical_instability",
        ),
        Sample(
            "Container: a module missing from the image (with a hostile <!channel> in the log)",
            _job(entry_id, "<!channel> nightly-eval", labels={"team": "vision"}),
            [
                log_entry(
                    PROJECT,
                    entry_id,
                    "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error.\n"
                    'Traceback (most recent call last):\n  File "/app/eval.py", line 3, in <module>\n'
                    "    import timm  # <!channel> please look\n"
                    "ModuleNotFoundError: No module named 'timm'",
                    severity="ERROR",
                    timestamp=_t(5),
                ),
                _failed(entry_id, 6),
            ],
            notes=["the log's <!channel> reaches Slack escaped: nobody is pinged"],
            failure_class="container_startup",
        ),
        Sample(
            "A worker restart that recovers: the error is held, the job succeeds, nothing is posted",
            _job(recover_id, "detectron-finetune", state="JOB_STATE_RUNNING", error=None, endTime=None),
            [
                log_entry(
                    PROJECT,
                    recover_id,
                    "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error. "
                    "The replica will be restarted.",
                    severity="ERROR",
                    timestamp=_t(8),
                )
            ],
            final_job=_job(recover_id, "detectron-finetune", state="JOB_STATE_SUCCEEDED", error=None),
            expect_message=False,
        ),
        Sample(
            "Cloud Monitoring: GPU utilisation alert on a running job (profile before guessing)",
            _job(
                util_id,
                "video-classifier",
                state="JOB_STATE_RUNNING",
                error=None,
                endTime=None,
                labels={"team": "vision"},
            ),
            [
                {
                    "version": "1.2",
                    "incident": {
                        "incident_id": "0.demo-gpu-util",
                        "state": "open",
                        "policy_name": "Low GPU utilization on training jobs",
                        "condition_name": "GPU duty cycle below 20% for 15 min",
                        "summary": f"GPU utilization for custom job {util_id} is below the threshold of 20.000 "
                        "with a value of 4.000.",
                        "resource": {
                            "type": "aiplatform.googleapis.com/CustomJob",
                            "labels": {"project_id": PROJECT, "job_id": util_id},
                        },
                        "started_at": 1764406800,
                        "url": "https://console.cloud.google.com/monitoring/alerting/incidents/0.demo-gpu-util",
                    },
                }
            ],
            failure_class="input_pipeline",
        ),
        *_more_samples(),
    ]


def _more_samples() -> list[Sample]:
    """The classes the first samples leave out: host memory, the training curves, distributed setup,
    preemption, a plain bug, and a failure nothing known explains."""
    host_id, underfit_id, overfit_id = "7310008", "7310009", "7310010"
    rendezvous_id, spot_id, bug_id, unknown_id = "7310011", "7310012", "7310013", "7310014"
    cpu_only = {"machineType": "n1-standard-8"}
    underfit_epochs = [
        f"Epoch {e}/12 - 412s - loss: {1.6094 + (e % 3) * 0.0001:.4f} - accuracy: 0.2011 - val_loss: 1.6095 - "
        "val_accuracy: 0.1996"
        for e in range(1, 9)
    ]
    overfit_curve = [
        (0.812, 0.774, 0.61),
        (0.544, 0.561, 0.70),
        (0.391, 0.498, 0.74),
        (0.268, 0.487, 0.75),
        (0.171, 0.533, 0.74),
        (0.102, 0.612, 0.72),
        (0.061, 0.705, 0.71),
        (0.034, 0.811, 0.69),
    ]
    overfit_epochs = [
        f"epoch {e:2d} | train_loss {train:.3f} | val_loss {val:.3f} | val_f1 {f1:.3f}"
        for e, (train, val, f1) in enumerate(overfit_curve, start=1)
    ]
    rendezvous = [
        entry
        for r in (1, 2, 3)
        for entry in _lines(
            rendezvous_id,
            [
                "[W socket.cpp:663] [c10d] The client socket has timed out after 900s while trying to connect to "
                "(workerpool0-0, 29500).",
                "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError: rendezvous 'asr-ddp' timed out "
                "waiting for 4 nodes",
            ],
            task=f"workerpool0-{r}",
            start=10 + 2 * r,
        )
    ]
    return [
        Sample(
            "Host memory: a CPU job loads every parquet shard into RAM and is killed",
            _job(host_id, "churn-gbdt-nightly", labels={"team": "ads"}, jobSpec=_spec(host_id, machine=cpu_only)),
            [
                *_lines(
                    host_id,
                    [
                        "loader: reading gs://acme-warehouse/churn/2026-11-28/part-*.parquet (64 shards) into pandas",
                        "loader: 48/64 shards loaded, resident memory 27.9 GiB",
                    ],
                ),
                _service(
                    host_id, "The replica workerpool0-0 ran out of memory and exited with a non-zero status of 137.", 13
                ),
                _failed(host_id, 14),
            ],
            failure_class="host_oom",
        ),
        Sample(
            "Underfitting: the loss sits at ln(5), chance level for five classes, epoch after epoch",
            _job(underfit_id, "ticket-router-5way", labels={"team": "support-ml"}),
            [
                *_lines(underfit_id, underfit_epochs),
                *_lines(underfit_id, ["Epoch 8: early stopping (no improvement in val_loss for 6 epochs)"], start=30),
                _service(underfit_id, _EXITED.format(status=2), 31),
                _failed(underfit_id, 32),
            ],
            failure_class="underfitting",
        ),
        Sample(
            "Overfitting: training loss keeps falling while validation loss climbs from epoch 4",
            _job(overfit_id, "defect-detector-small", labels={"team": "vision"}),
            [
                *_lines(overfit_id, overfit_epochs),
                *_lines(
                    overfit_id,
                    ["quality gate: val_loss 0.811 is worse than the best 0.487 (epoch 4); refusing to export"],
                    start=30,
                ),
                _service(overfit_id, _EXITED.format(status=1), 31),
                _failed(overfit_id, 32),
            ],
            failure_class="overfitting",
        ),
        Sample(
            "Distributed setup: three workers never reach the chief's rendezvous port",
            _job(
                rendezvous_id,
                "asr-conformer-ddp",
                labels={"team": "speech"},
                jobSpec=_spec(rendezvous_id, replicas=4),
                error={"code": 3, "message": _EXITED.replace("workerpool0-0", "workerpool0-1").format(status=1)},
            ),
            [*rendezvous, _failed(rendezvous_id, 40)],
            failure_class="distributed_setup",
        ),
        Sample(
            "Preemption: the Spot VM is reclaimed mid-epoch and the job had no checkpoint to resume from",
            _job(
                spot_id,
                "recsys-two-tower",
                labels={"team": "ads"},
                jobSpec=_spec(spot_id, scheduling={"strategy": "SPOT"}),
            ),
            [
                *_lines(
                    spot_id,
                    [
                        "step 18400/50000 loss=0.2931 lr=2.0e-04",
                        "Received SIGTERM: the Spot VM is being reclaimed; no checkpoint directory is configured, "
                        "progress since step 0 is lost",
                    ],
                ),
                _service(
                    spot_id, "The replica workerpool0-0 was preempted and exited with a non-zero status of 143.", 12
                ),
                _failed(spot_id, 13),
            ],
            failure_class="preemption",
        ),
        Sample(
            "Application bug: the preprocessing reads a column the new dataset renamed",
            _job(bug_id, "intent-bert-finetune", labels={"team": "nlp"}),
            [
                *_lines(
                    bug_id,
                    [
                        "Traceback (most recent call last):\n"
                        '  File "/app/trainer/task.py", line 141, in <module>\n    main()\n'
                        '  File "/app/trainer/data.py", line 58, in encode\n'
                        '    labels = [LABELS[row["intent"]] for row in batch]\n'
                        "KeyError: 'intent'"
                    ],
                ),
                _service(bug_id, _EXITED.format(status=1), 12),
                _failed(bug_id, 13),
            ],
            failure_class="application_error",
        ),
        Sample(
            "Unknown: the job exits with a code nothing in the knowledge base explains",
            _job(
                unknown_id,
                "feature-backfill-q4",
                labels={"team": "ads"},
                error={"code": 3, "message": "The replica workerpool0-0 exited with a non-zero status of 3."},
            ),
            [
                *_lines(
                    unknown_id,
                    [
                        "backfill: partition 2026-10-03 done (1,204,331 rows)",
                        "backfill: partition 2026-10-04 handed to the exporter, waiting for its ack",
                    ],
                ),
                _service(unknown_id, _EXITED.format(status=3), 14),
                _failed(unknown_id, 15),
            ],
            failure_class="unknown",
        ),
    ]


DEMO_ROUTING = {
    "default_channel": "#ml-alerts",
    "regions": [REGION, "europe-west4"],
    "default_project": PROJECT,
    "routes": [
        {"match": {"labels": {"team": "vision"}}, "channel": "#vision-alerts", "rerun_allowed": ["U0DEMO001"]},
        {"match": {"labels": {"team": "nlp"}}, "channel": "#nlp-alerts", "rerun_allowed": ["U0DEMO001", "S0DEMOGRP"]},
    ],
    "class_channels": {"quota_exhausted": "#ml-platform"},
    "rerun_allowed": ["U0DEMO001"],
}
