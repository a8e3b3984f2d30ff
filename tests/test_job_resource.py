from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest

from bot.gcp.job_resource import (
    OUTPUT_ONLY_FIELDS,
    job_info_from_proto,
    job_info_from_rest,
    parse_job_name,
    rerun_body,
)
from standins.google_apis import custom_job_json

NAME = "projects/my-proj/locations/us-central1/customJobs/8501620632646057984"


def distributed_job() -> dict:
    """A REST CustomJob as a client asking for enum-encoding=int receives it (numbers for enums)."""
    return {
        "name": NAME,
        "displayName": "resnet-ddp",
        "state": 5,
        "error": {"code": 8, "message": "Replicas low on memory: workerpool0."},
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "a2-highgpu-8g", "acceleratorType": 8, "acceleratorCount": 8},
                    "replicaCount": "1",
                    "containerSpec": {
                        "imageUri": "gcr.io/p/ddp:2",
                        "command": ["torchrun"],
                        "args": ["train.py", "--data=gs://my-proj-data/imagenet"],
                    },
                },
                {
                    "machineSpec": {"machineType": "a2-highgpu-8g", "acceleratorType": 8, "acceleratorCount": 8},
                    "replicaCount": "3",
                    "containerSpec": {"imageUri": "gcr.io/p/ddp:2"},
                },
                {},
                {
                    "machineSpec": {"machineType": "n1-standard-8"},
                    "replicaCount": "1",
                    "pythonPackageSpec": {
                        "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-1:latest",
                        "packageUris": ["gs://b/trainer.tar.gz"],
                        "pythonModule": "trainer.eval",
                        "args": ["--split=val"],
                    },
                },
            ],
            "scheduling": {"strategy": 4, "restartJobOnWorkerRestart": True},
            "serviceAccount": "trainer@my-proj.iam.gserviceaccount.com",
            "baseOutputDirectory": {"outputUriPrefix": "gs://my-proj-out/ddp"},
        },
        "labels": {"team": "vision", "owner": "alice"},
        "createTime": "2026-02-23T23:40:00Z",
        "startTime": "2026-02-23T23:45:00.123456789Z",
        "endTime": "2026-02-23T23:54:06.5+00:00",
        "webAccessUris": {"workerpool0-0": "https://example"},
        "satisfiesPzs": False,
    }


def test_parses_a_distributed_spot_job_with_numeric_enums():
    info = job_info_from_rest(distributed_job())

    assert (info.project, info.region, info.job_id) == ("my-proj", "us-central1", "8501620632646057984")
    assert info.name == NAME
    assert info.display_name == "resnet-ddp"
    assert info.state == "JOB_STATE_FAILED"
    assert (info.error_code, info.error_message) == (8, "Replicas low on memory: workerpool0.")
    assert info.spot is True
    assert info.service_account == "trainer@my-proj.iam.gserviceaccount.com"
    assert info.base_output_directory == "gs://my-proj-out/ddp"
    assert info.labels == {"team": "vision", "owner": "alice"}
    assert info.start_time == datetime(2026, 2, 23, 23, 45, 0, 123456, tzinfo=UTC)
    assert info.end_time == datetime(2026, 2, 23, 23, 54, 6, 500000, tzinfo=UTC)

    pools = info.worker_pools
    assert len(pools) == 4  # the empty placeholder keeps pool indexes aligned with "workerpoolN" names
    assert pools[0].machine_type == "a2-highgpu-8g"
    assert (pools[0].accelerator_type, pools[0].accelerator_count) == ("NVIDIA_TESLA_A100", 8)
    assert pools[0].image_uri == "gcr.io/p/ddp:2"
    assert pools[1].replica_count == 3
    assert pools[2].replica_count == 0 and pools[2].machine_type is None
    assert pools[3].image_uri == "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-1:latest"
    assert pools[3].package_uris == ("gs://b/trainer.tar.gz",) and pools[0].package_uris == ()
    assert pools[0].args == ("torchrun", "train.py", "--data=gs://my-proj-data/imagenet")  # command, then args
    assert pools[3].args == ("--split=val",) and pools[1].args == ()
    assert pools[3].accelerator_type is None and pools[3].accelerator_count == 0
    assert info.replica_total == 5
    assert info.primary_pool == pools[0]


def test_parses_enum_names_as_the_default_rest_encoding_sends_them():
    info = job_info_from_rest(
        custom_job_json("acme-ml", "europe-west4", "42", jobSpec={"scheduling": {"strategy": "SPOT"}})
    )
    assert info.state == "JOB_STATE_FAILED"
    assert info.spot is True
    assert info.region == "europe-west4"

    standard = job_info_from_rest({"jobSpec": {"scheduling": {"strategy": "STANDARD"}}})
    assert standard.spot is False


def test_missing_fields_give_an_empty_job_info_and_the_region_hint_applies_without_a_name():
    info = job_info_from_rest({}, region_hint="us-east1")
    assert info.region == "us-east1"
    assert (info.name, info.project, info.job_id, info.state) == (None, None, None, None)
    assert info.worker_pools == [] and info.labels == {} and info.spot is False

    named = job_info_from_rest({"name": NAME}, region_hint="us-east1")
    assert named.region == "us-central1"  # the name wins over the hint


def test_a_pool_without_replica_count_has_one_replica_when_configured():
    info = job_info_from_rest({"jobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}}]}})
    assert info.worker_pools[0].replica_count == 1


def test_unknown_enum_numbers_from_a_newer_api_are_kept_as_numbers():
    info = job_info_from_rest({"state": 42, "jobSpec": {"workerPoolSpecs": [{"machineSpec": {"acceleratorType": 99}}]}})
    assert info.state == "42"
    assert info.worker_pools[0].accelerator_type == "99"


def test_int64_and_int32_fields_accept_both_json_encodings():
    info = job_info_from_rest(
        {
            "error": {"code": "3"},
            "jobSpec": {"workerPoolSpecs": [{"replicaCount": 2, "machineSpec": {"acceleratorCount": "4"}}]},
        }
    )
    assert info.error_code == 3
    assert (info.worker_pools[0].replica_count, info.worker_pools[0].accelerator_count) == (2, 4)


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda job: job.update(displayName=7), "displayName"),
        (lambda job: job.update(state=True), "state"),
        (lambda job: job.update(error="boom"), "error"),
        (lambda job: job["error"].update(code="three"), "error.code"),
        (lambda job: job.update(jobSpec=[]), "jobSpec"),
        (lambda job: job["jobSpec"].update(workerPoolSpecs={}), "jobSpec.workerPoolSpecs"),
        (lambda job: job["jobSpec"]["workerPoolSpecs"].append("x"), "jobSpec.workerPoolSpecs[4]"),
        (
            lambda job: job["jobSpec"]["workerPoolSpecs"][1].update(replicaCount="3.5"),
            "jobSpec.workerPoolSpecs[1].replicaCount",
        ),
        (
            lambda job: job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"].update(acceleratorCount=1.5),
            "jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount",
        ),
        (
            lambda job: job["jobSpec"]["workerPoolSpecs"][1].update(replicaCount="-1"),
            "jobSpec.workerPoolSpecs[1].replicaCount",
        ),
        (lambda job: job["jobSpec"].update(scheduling={"strategy": [4]}), "jobSpec.scheduling.strategy"),
        (
            lambda job: job["jobSpec"]["workerPoolSpecs"][3]["pythonPackageSpec"].update(packageUris="gs://b/t.tgz"),
            "jobSpec.workerPoolSpecs[3].pythonPackageSpec.packageUris",
        ),
        (lambda job: job.update(labels={"team": 1}), "labels"),
        (lambda job: job.update(createTime="yesterday"), "createTime"),
        (lambda job: job.update(name="projects/p/customJobs/1"), "name"),
    ],
)
def test_wrong_types_raise_value_error_naming_the_field(mutate, where):
    job = distributed_job()
    mutate(job)
    with pytest.raises(ValueError) as caught:
        job_info_from_rest(job)
    assert str(caught.value).startswith(where)


def test_not_a_mapping_raises_value_error():
    with pytest.raises(ValueError, match="expected an object"):
        job_info_from_rest(["not", "a", "job"])  # type: ignore[arg-type]


def test_parse_job_name():
    assert parse_job_name(NAME) == ("my-proj", "us-central1", "8501620632646057984")
    with pytest.raises(ValueError, match="not a CustomJob resource name"):
        parse_job_name("projects/p/locations/l/trainingPipelines/1")


def test_job_info_from_proto_reads_a_proto_plus_custom_job():
    from google.cloud.aiplatform_v1.types import CustomJob, JobState
    from google.protobuf import json_format

    message = CustomJob.wrap(json_format.ParseDict(distributed_job(), CustomJob.pb(CustomJob())))
    assert message.state == JobState.JOB_STATE_FAILED

    info = job_info_from_proto(message)

    assert info == job_info_from_rest(distributed_job())
    assert job_info_from_proto(CustomJob.pb(message)) == info  # a raw protobuf message works too


def test_rerun_body_drops_output_only_fields_and_merges_labels():
    original = distributed_job()
    before = copy.deepcopy(original)

    body = rerun_body(original, labels={"trainmedic-rerun-of": "8501620632646057984", "owner": "bob"})

    assert original == before  # the input is not modified
    assert set(body) == {"displayName", "jobSpec", "labels"}
    assert not set(body) & OUTPUT_ONLY_FIELDS
    assert body["labels"] == {"team": "vision", "owner": "bob", "trainmedic-rerun-of": "8501620632646057984"}
    assert body["jobSpec"] == original["jobSpec"]
    body["jobSpec"]["workerPoolSpecs"].clear()
    assert original["jobSpec"]["workerPoolSpecs"]  # a deep copy


def test_rerun_body_checks_label_types():
    with pytest.raises(ValueError, match="labels"):
        rerun_body(distributed_job(), labels={"rerun": 1})  # type: ignore[dict-item]
    assert rerun_body({"displayName": "x"}, labels={})["labels"] == {}
