"""More of the demo's samples: the classes the first ones leave out, a failed Vertex AI Pipelines run and a job
creation Vertex AI refused."""

from __future__ import annotations

from handlers.demo_sample_kit import (
    EXITED,
    PROJECT,
    REGION,
    Sample,
    at,
    failed_marker,
    job,
    lines,
    service,
    spec,
)
from standins.google_apis import pipeline_event, pipeline_job_json, refused_call_entry, refused_create


def more_samples() -> list[Sample]:
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
        for entry in lines(
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
            job(host_id, "churn-gbdt-nightly", labels={"team": "ads"}, jobSpec=spec(host_id, machine=cpu_only)),
            [
                *lines(
                    host_id,
                    [
                        "loader: reading gs://acme-warehouse/churn/2026-11-28/part-*.parquet (64 shards) into pandas",
                        "loader: 48/64 shards loaded, resident memory 27.9 GiB",
                    ],
                ),
                service(
                    host_id, "The replica workerpool0-0 ran out of memory and exited with a non-zero status of 137.", 13
                ),
                failed_marker(host_id, 14),
            ],
            failure_class="host_oom",
        ),
        Sample(
            "Underfitting: the loss sits at ln(5), chance level for five classes, epoch after epoch",
            job(underfit_id, "ticket-router-5way", labels={"team": "support-ml"}),
            [
                *lines(underfit_id, underfit_epochs),
                *lines(underfit_id, ["Epoch 8: early stopping (no improvement in val_loss for 6 epochs)"], start=30),
                service(underfit_id, EXITED.format(status=2), 31),
                failed_marker(underfit_id, 32),
            ],
            failure_class="underfitting",
        ),
        Sample(
            "Overfitting: training loss keeps falling while validation loss climbs from epoch 4",
            job(overfit_id, "defect-detector-small", labels={"team": "vision"}),
            [
                *lines(overfit_id, overfit_epochs),
                *lines(
                    overfit_id,
                    ["quality gate: val_loss 0.811 is worse than the best 0.487 (epoch 4); refusing to export"],
                    start=30,
                ),
                service(overfit_id, EXITED.format(status=1), 31),
                failed_marker(overfit_id, 32),
            ],
            failure_class="overfitting",
        ),
        Sample(
            "Distributed setup: three workers never reach the chief's rendezvous port",
            job(
                rendezvous_id,
                "asr-conformer-ddp",
                labels={"team": "speech"},
                jobSpec=spec(rendezvous_id, replicas=4),
                error={"code": 3, "message": EXITED.replace("workerpool0-0", "workerpool0-1").format(status=1)},
            ),
            [*rendezvous, failed_marker(rendezvous_id, 40)],
            failure_class="distributed_setup",
        ),
        Sample(
            "Preemption: the Spot VM is reclaimed mid-epoch and the job had no checkpoint to resume from",
            job(
                spot_id,
                "recsys-two-tower",
                labels={"team": "ads"},
                jobSpec=spec(spot_id, scheduling={"strategy": "SPOT"}),
            ),
            [
                *lines(
                    spot_id,
                    [
                        "step 18400/50000 loss=0.2931 lr=2.0e-04",
                        "Received SIGTERM: the Spot VM is being reclaimed; no checkpoint directory is configured, "
                        "progress since step 0 is lost",
                    ],
                ),
                service(
                    spot_id, "The replica workerpool0-0 was preempted and exited with a non-zero status of 143.", 12
                ),
                failed_marker(spot_id, 13),
            ],
            failure_class="preemption",
        ),
        Sample(
            "Application bug: the preprocessing reads a column the new dataset renamed",
            job(bug_id, "intent-bert-finetune", labels={"team": "nlp"}),
            [
                *lines(
                    bug_id,
                    [
                        "Traceback (most recent call last):\n"
                        '  File "/app/trainer/task.py", line 141, in <module>\n    main()\n'
                        '  File "/app/trainer/data.py", line 58, in encode\n'
                        '    labels = [LABELS[row["intent"]] for row in batch]\n'
                        "KeyError: 'intent'"
                    ],
                ),
                service(bug_id, EXITED.format(status=1), 12),
                failed_marker(bug_id, 13),
            ],
            failure_class="application_error",
        ),
        Sample(
            "Unknown: the job exits with a code nothing in the knowledge base explains",
            job(
                unknown_id,
                "feature-backfill-q4",
                labels={"team": "ads"},
                error={"code": 3, "message": "The replica workerpool0-0 exited with a non-zero status of 3."},
            ),
            [
                *lines(
                    unknown_id,
                    [
                        "backfill: partition 2026-10-03 done (1,204,331 rows)",
                        "backfill: partition 2026-10-04 handed to the exporter, waiting for its ack",
                    ],
                ),
                service(unknown_id, EXITED.format(status=3), 14),
                failed_marker(unknown_id, 15),
            ],
            failure_class="unknown",
        ),
    ]


PIPELINE_LABELS = {"team": "nlp", "vertex-ai-pipelines-run-billing-id": "811"}
REFUSED_BY = "dana@acme.example"


def lifecycle_samples() -> list[Sample]:
    """A Vertex AI Pipelines run whose training task fails, and a job creation Vertex AI refuses."""
    run_id, task_id = "churn-pipeline-20261129090000", "7310015"
    task_job = job(task_id, "churn-pipeline-train-model", labels=PIPELINE_LABELS)
    task_logs = lines(
        task_id,
        [
            'Traceback (most recent call last):\n  File "/trainer/task.py", line 88, in <module>',
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a total capacity of "
            "39.39 GiB of which 2.10 GiB is free.",
        ],
    )
    a100 = {
        "displayName": "llm-sft",
        "labels": {"team": "nlp"},
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {
                        "machineType": "a2-highgpu-8g",
                        "acceleratorType": "NVIDIA_TESLA_A100",
                        "acceleratorCount": 8,
                    },
                    "replicaCount": "2",
                    "containerSpec": {"imageUri": "us-docker.pkg.dev/acme-ml/train/sft:3"},
                }
            ],
            "serviceAccount": f"trainer@{PROJECT}.iam.gserviceaccount.com",
        },
    }
    denied_id = "7310016"
    account = f"trainer@{PROJECT}.iam.gserviceaccount.com"
    refused_read = refused_call_entry(
        PROJECT,
        account,
        service="storage.googleapis.com",
        method="storage.objects.get",
        checks=[("storage.objects.get", "projects/_/buckets/acme-ml-features/objects/v7/part-00003.parquet")],
        timestamp=at(20),
        insert_id="demo-audit-refused-read",
    )
    quota = (
        "The following quota metrics exceed quota limits: "
        "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"
    )
    return [
        Sample(
            "a Vertex AI Pipelines run whose train-model task runs out of GPU memory (its task job is the pipeline's)",
            pipeline_job_json(PROJECT, REGION, run_id, failed_tasks={"train-model": task_id}, labels=PIPELINE_LABELS),
            [
                *task_logs,
                service(task_id, EXITED.format(status=1), 40),
                failed_marker(task_id, 41),
                pipeline_event(PROJECT, REGION, run_id, "PIPELINE_STATE_FAILED"),
            ],
            more_jobs=[task_job],
            notes=["one message, the pipeline's, naming the failed task; the task job's own failure posts nothing"],
            failure_class="accelerator_oom",
        ),
        Sample(
            "a job creation refused for quota, retried by a CI loop (no job exists: the audit log says so)",
            None,
            [
                refused_create(PROJECT, REGION, quota, caller=REFUSED_BY, request_job=a100, insert_id=f"ci-{n}")
                for n in range(3)
            ],
            notes=[f"one direct message to {REFUSED_BY} (found by email) with the filled quota request"],
            failure_class="quota_exhausted",
        ),
        Sample(
            "a 403 that names neither permission nor bucket: the audit log says which, and the grant is filled",
            job(denied_id, "features-v7-train", labels={"team": "ads"}),
            [
                *lines(denied_id, ["Error 403: The caller does not have permission, forbidden"]),
                service(denied_id, EXITED.format(status=1), 22),
                failed_marker(denied_id, 23),
            ],
            logged=[refused_read],
            notes=["the grant names the bucket and the role from the refused check the audit log recorded"],
            failure_class="permission_denied",
        ),
    ]
