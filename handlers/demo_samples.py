"""Sample failed jobs for `trainmedic demo`: what a log sink would export for them, and their CustomJobs.

One sample per failure class in knowledge/ (`Sample.failure_class`), plus a worker restart that recovers and is
never posted, a failed Vertex AI Pipelines run and a job creation Vertex AI refused (handlers/demo_samples_more.py).
The log lines are written for the demo, in the shapes Vertex AI and the usual frameworks print.
"""

from __future__ import annotations

from handlers.demo_sample_kit import (
    PROJECT,
    REGION,
    Sample,
    at,
    failed_marker,
    job,
)
from handlers.demo_samples_more import lifecycle_samples, more_samples
from standins.google_apis import custom_job_json, log_entry


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
            timestamp=at(40 + r),
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
        timestamp=at(30),
        insert_id=f"{cascade_id}-oom",
    )
    cascade_deliveries = [oom, *workers, failed_marker(cascade_id, 50)]
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
            job(cascade_id, "llm-finetune-7b", jobSpec=multi_spec, labels={"team": "nlp"}),
            cascade_deliveries + cascade_deliveries,  # every entry delivered twice (at-least-once delivery)
            notes=["every entry delivered twice"],
            failure_class="accelerator_oom",
        ),
        Sample(
            "IAM: the job's service account cannot read the training bucket",
            job(
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
                    timestamp=at(10),
                ),
                failed_marker(iam_id, 12),
            ],
            failure_class="permission_denied",
        ),
        Sample(
            "Quota: 16 A100s requested where the region allows 8 (routed to the platform channel)",
            job(quota_id, "bert-pretrain-16x", labels={"team": "nlp"}),
            [
                log_entry(
                    PROJECT,
                    quota_id,
                    'Training failed with: code: 8 message: "The following quota metrics exceed quota limits: '
                    'aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"',
                    severity="ERROR",
                    timestamp=at(3),
                ),
                failed_marker(quota_id, 4),
            ],
            failure_class="quota_exhausted",
        ),
        Sample(
            "Divergence: the loss turns NaN after a learning-rate bump",
            job(nan_id, "ctr-model-v9", labels={"team": "ads"}),
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
                    timestamp=at(20),
                ),
                failed_marker(nan_id, 21),
            ],
            notes=["a secret in the log is redacted from the evidence"],
            failure_class="numerical_instability",
        ),
        Sample(
            "Container: a module missing from the image (with a hostile <!channel> in the log)",
            job(entry_id, "<!channel> nightly-eval", labels={"team": "vision"}),
            [
                log_entry(
                    PROJECT,
                    entry_id,
                    "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error.\n"
                    'Traceback (most recent call last):\n  File "/app/eval.py", line 3, in <module>\n'
                    "    import timm  # <!channel> please look\n"
                    "ModuleNotFoundError: No module named 'timm'",
                    severity="ERROR",
                    timestamp=at(5),
                ),
                failed_marker(entry_id, 6),
            ],
            notes=["the log's <!channel> reaches Slack escaped: nobody is pinged"],
            failure_class="container_startup",
        ),
        Sample(
            "A worker restart that recovers: the error is held, the job succeeds, nothing is posted",
            job(recover_id, "detectron-finetune", state="JOB_STATE_RUNNING", error=None, endTime=None),
            [
                log_entry(
                    PROJECT,
                    recover_id,
                    "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error. "
                    "The replica will be restarted.",
                    severity="ERROR",
                    timestamp=at(8),
                )
            ],
            final_job=job(recover_id, "detectron-finetune", state="JOB_STATE_SUCCEEDED", error=None),
            expect_message=False,
        ),
        Sample(
            "Cloud Monitoring: GPU utilisation alert on a running job (profile before guessing)",
            job(
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
        *more_samples(),
        *lifecycle_samples(),
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
