from __future__ import annotations

import socket
import time

import pytest

from bot.errors import ApiError, ApiPermissionDenied, ApiUnavailable, JobNotFound
from bot.gcp.api_errors import permission_from
from bot.gcp.job_resource import rerun_body
from bot.gcp.vertex_jobs import JobsClient, VertexJobsClient
from standins.google_apis import custom_job_json

PROJECT, REGION, JOB_ID = "my-proj", "us-central1", "8501620632646057984"
JOB_PATH = f"/v1/projects/{PROJECT}/locations/{REGION}/customJobs/{JOB_ID}"


@pytest.fixture
def vertex(fake_google) -> VertexJobsClient:
    return VertexJobsClient(endpoint=fake_google.base_url, timeout=5.0)


def spot_job() -> dict:
    job = custom_job_json(PROJECT, REGION, JOB_ID, state="JOB_STATE_FAILED")
    job["jobSpec"]["scheduling"] = {"strategy": "SPOT"}
    return job


def test_get_job_reads_the_custom_job_over_rest(fake_google, vertex):
    fake_google.seed_job(spot_job())
    client: JobsClient = vertex

    info = client.get_job(project=PROJECT, region=REGION, job_id=JOB_ID)

    (request,) = fake_google.requests
    assert (request.method, request.path) == ("GET", JOB_PATH)
    assert request.query == {"$alt": ["json;enum-encoding=int"]}  # so the fake answers enums as numbers
    assert request.header("authorization") is None  # anonymous credentials for an http:// endpoint
    assert info.name == f"projects/{PROJECT}/locations/{REGION}/customJobs/{JOB_ID}"
    assert (info.project, info.region, info.job_id) == (PROJECT, REGION, JOB_ID)
    assert info.state == "JOB_STATE_FAILED"
    assert info.error_code == 3
    assert info.spot is True
    assert info.worker_pools[0].accelerator_type == "NVIDIA_TESLA_A100"
    assert info.worker_pools[0].replica_count == 1
    assert info.labels == {"team": "vision"}


def test_get_job_raw_returns_the_rest_camel_case_form(fake_google, vertex):
    fake_google.seed_job(spot_job())

    raw = vertex.get_job_raw(project=PROJECT, region=REGION, job_id=JOB_ID)

    assert raw["state"] == "JOB_STATE_FAILED"  # enum names again, though the wire carried numbers
    assert raw["jobSpec"]["scheduling"] == {"strategy": "SPOT"}
    pool = raw["jobSpec"]["workerPoolSpecs"][0]
    assert pool["replicaCount"] == "1"  # int64 as a string, as REST sends it
    assert pool["machineSpec"]["acceleratorType"] == "NVIDIA_TESLA_A100"
    assert pool["diskSpec"] == {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100}
    assert raw["startTime"] == "2026-02-23T23:45:00.123456789Z"


def test_rerun_creates_a_copy_of_the_job_in_the_same_region(fake_google, vertex):
    fake_google.seed_job(spot_job())
    raw = vertex.get_job_raw(project=PROJECT, region=REGION, job_id=JOB_ID)

    created = vertex.create_job(project=PROJECT, region=REGION, body=rerun_body(raw, labels={"rerun-of": JOB_ID}))

    post = fake_google.requests[-1]
    assert (post.method, post.path) == ("POST", f"/v1/projects/{PROJECT}/locations/{REGION}/customJobs")
    sent = post.json
    assert set(sent) == {"displayName", "jobSpec", "labels"}  # no output-only fields went out
    assert sent["labels"] == {"team": "vision", "rerun-of": JOB_ID}
    assert sent["jobSpec"]["scheduling"] == {"strategy": 4}  # the client encodes enums as numbers
    assert sent["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUri"] == "us-docker.pkg.dev/p/train/trainer:1"
    assert created["name"].startswith(f"projects/{PROJECT}/locations/{REGION}/customJobs/")
    assert created["name"] != raw["name"]
    assert created["state"] == "JOB_STATE_PENDING"
    assert fake_google.job(created["name"]) is not None


def test_create_job_rejects_a_body_the_api_cannot_encode(fake_google, vertex):
    with pytest.raises(ValueError, match="not a valid CustomJob"):
        vertex.create_job(project=PROJECT, region=REGION, body={"displayName": "x", "jobSpek": {}})
    assert fake_google.requests == []


def test_unknown_job_is_job_not_found(fake_google, vertex):
    with pytest.raises(JobNotFound, match="does not exist"):
        vertex.get_job(project=PROJECT, region=REGION, job_id="123")


def test_permission_denied_names_the_missing_permission(fake_google, vertex):
    fake_google.seed_job(spot_job())
    fake_google.inject(status=403, job_id=JOB_ID)

    with pytest.raises(ApiPermissionDenied) as caught:
        vertex.get_job(project=PROJECT, region=REGION, job_id=JOB_ID)

    assert caught.value.permission == "aiplatform.customJobs.get"
    assert "403" in str(caught.value)


def test_permission_is_parsed_from_the_message_when_there_is_no_error_info(fake_google, vertex):
    fake_google.seed_job(spot_job())
    fake_google.inject(
        status=403,
        api="vertex",
        error_info=False,
        message="Permission 'iam.serviceAccounts.actAs' denied on service account "
        "trainer@my-proj.iam.gserviceaccount.com (or it may not exist).",
    )
    raw = fake_google.job(spot_job()["name"])

    with pytest.raises(ApiPermissionDenied) as caught:
        vertex.create_job(project=PROJECT, region=REGION, body=rerun_body(raw, labels={}))

    assert caught.value.permission == "iam.serviceAccounts.actAs"


@pytest.mark.parametrize("status", [429, 500, 503, 504])
def test_transient_statuses_are_api_unavailable(fake_google, vertex, status):
    fake_google.seed_job(spot_job())
    fake_google.inject(status=status, times=1)

    with pytest.raises(ApiUnavailable, match=str(status)):
        vertex.get_job(project=PROJECT, region=REGION, job_id=JOB_ID)
    assert vertex.get_job(project=PROJECT, region=REGION, job_id=JOB_ID).state == "JOB_STATE_FAILED"


def test_a_bad_request_is_a_plain_api_error(fake_google, vertex):
    fake_google.inject(status=400, api="vertex", message="jobSpec.workerPoolSpecs[0].replicaCount must be 1.")
    with pytest.raises(ApiError, match="replicaCount must be 1") as caught:
        vertex.create_job(project=PROJECT, region=REGION, body={"displayName": "x", "jobSpec": {}})
    assert type(caught.value) is ApiError


def test_faults_can_target_one_job(fake_google, vertex):
    fake_google.seed_job(spot_job())
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "77"))
    fake_google.inject(status=403, job_id="77")

    assert vertex.get_job(project=PROJECT, region=REGION, job_id=JOB_ID).job_id == JOB_ID
    with pytest.raises(ApiPermissionDenied):
        vertex.get_job(project=PROJECT, region=REGION, job_id="77")


def test_a_slow_api_times_out_as_api_unavailable(fake_google):
    fake_google.seed_job(spot_job())
    fake_google.inject(delay=3.0, job_id=JOB_ID)
    vertex = VertexJobsClient(endpoint=fake_google.base_url, timeout=0.3)

    started = time.monotonic()
    with pytest.raises(ApiUnavailable, match="Timeout"):
        vertex.get_job(project=PROJECT, region=REGION, job_id=JOB_ID)
    assert time.monotonic() - started < 2.0


def test_an_unreachable_endpoint_is_api_unavailable():
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    vertex = VertexJobsClient(endpoint=f"http://127.0.0.1:{port}", timeout=2.0)

    with pytest.raises(ApiUnavailable, match="ConnectionError"):
        vertex.get_job(project=PROJECT, region=REGION, job_id=JOB_ID)


def test_one_endpoint_serves_every_region(fake_google, vertex):
    fake_google.seed_job(custom_job_json(PROJECT, "europe-west4", "1"))
    fake_google.seed_job(custom_job_json(PROJECT, "asia-northeast1", "2"))

    assert vertex.get_job(project=PROJECT, region="europe-west4", job_id="1").region == "europe-west4"
    assert vertex.get_job(project=PROJECT, region="asia-northeast1", job_id="2").region == "asia-northeast1"
    assert [r.path for r in fake_google.requests] == [
        f"/v1/projects/{PROJECT}/locations/europe-west4/customJobs/1",
        f"/v1/projects/{PROJECT}/locations/asia-northeast1/customJobs/2",
    ]


def test_without_an_endpoint_each_region_gets_its_regional_host():
    from google.auth.credentials import AnonymousCredentials

    vertex = VertexJobsClient(credentials=AnonymousCredentials())

    # building a client makes no request; nothing here touches the network
    assert vertex._client("europe-west4").api_endpoint == "europe-west4-aiplatform.googleapis.com"
    assert vertex._client("us-central1").api_endpoint == "us-central1-aiplatform.googleapis.com"
    assert vertex._client("us-central1") is vertex._client("us-central1")


@pytest.mark.parametrize(
    ("project", "region", "job_id"),
    [("my-proj", "us-central1", "abc"), ("my-proj", "us-central1", "1/2"), ("a/b", REGION, "1"), (PROJECT, "x.y", "1")],
)
def test_malformed_references_raise_value_error_before_any_request(fake_google, vertex, project, region, job_id):
    with pytest.raises(ValueError):
        vertex.get_job(project=project, region=region, job_id=job_id)
    assert fake_google.requests == []


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "Permission 'aiplatform.customJobs.get' denied on resource "
            "'//aiplatform.googleapis.com/projects/p/locations/l/customJobs/1' (or it may not exist).",
            "aiplatform.customJobs.get",
        ),
        (
            'Permission "aiplatform.customJobs.create" denied on resource "projects/p/locations/us-central1"',
            "aiplatform.customJobs.create",
        ),
        (
            "trainer@p.iam.gserviceaccount.com does not have storage.objects.get access to the Google Cloud "
            "Storage object.",
            "storage.objects.get",
        ),
        ("GET https://us-central1-aiplatform.googleapis.com/v1/projects/p: The caller does not have permission", None),
        ("", None),
    ],
)
def test_permission_from_messages(message, expected):
    assert permission_from(message) == expected


def test_permission_from_prefers_error_info_metadata():
    assert permission_from("The caller does not have permission", {"permission": "logging.logEntries.list"}) == (
        "logging.logEntries.list"
    )
