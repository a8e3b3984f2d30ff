from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta

import pytest

from bot.errors import ApiError, ApiPermissionDenied, ApiUnavailable
from bot.gcp.cloud_logs import CloudLoggingClient, LogsClient, job_log_filter
from standins.google_apis import log_entry

PROJECT, JOB_ID = "my-proj", "8501620632646057984"


@pytest.fixture
def logs(fake_google) -> CloudLoggingClient:
    return CloudLoggingClient(endpoint=fake_google.base_url, timeout=5.0)


def at(second: int) -> str:
    moment = datetime(2026, 2, 23, 20, 0, tzinfo=UTC) + timedelta(seconds=second)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.123456789Z")


def seed_job_log(fake_google, count: int = 5) -> list[dict]:
    entries = [
        log_entry(PROJECT, JOB_ID, f"line {i}", timestamp=at(i), task_name="workerpool0-0") for i in range(count)
    ]
    fake_google.seed_log_entries(entries)
    return entries


def test_job_entries_lists_the_jobs_entries_oldest_first_as_rest_dicts(fake_google, logs):
    entries = seed_job_log(fake_google, 3)
    failure = log_entry(
        PROJECT,
        JOB_ID,
        "",
        timestamp=at(9),
        severity="ERROR",
        json_payload={"message": "Replicas low on memory: workerpool0.", "attrs": {"tag": "service"}},
    )
    fake_google.seed_log_entries([failure])
    fake_google.seed_log_entries([log_entry(PROJECT, "999", "another job", timestamp=at(5))])
    fake_google.seed_log_entries([log_entry("other-proj", JOB_ID, "another project", timestamp=at(6))])
    client: LogsClient = logs

    got = client.job_entries(project=PROJECT, job_id=JOB_ID)

    assert got == [*entries, failure]  # unchanged: nanosecond timestamps, receiveTimestamp, jsonPayload
    (request,) = fake_google.requests
    assert (request.method, request.path) == ("POST", "/v2/entries:list")
    assert request.json == {
        "resourceNames": [f"projects/{PROJECT}"],
        "filter": f'resource.type="ml_job" AND resource.labels.job_id="{JOB_ID}"',
        "orderBy": "timestamp desc",
        "pageSize": 1000,
    }
    assert request.header("authorization") is None  # anonymous credentials for an http:// endpoint


def test_max_entries_keeps_the_newest_entries(fake_google, logs):
    entries = seed_job_log(fake_google, 10)

    got = logs.job_entries(project=PROJECT, job_id=JOB_ID, max_entries=4)

    assert [entry["textPayload"] for entry in got] == ["line 6", "line 7", "line 8", "line 9"]
    assert got == entries[6:]


def test_pages_are_followed_until_max_entries(fake_google, logs):
    seed_job_log(fake_google, 2500)

    got = logs.job_entries(project=PROJECT, job_id=JOB_ID, max_entries=2100)

    assert len(got) == 2100
    assert got[-1]["textPayload"] == "line 2499" and got[0]["textPayload"] == "line 400"
    bodies = [request.json for request in fake_google.requests]
    assert [(body["pageSize"], body.get("pageToken")) for body in bodies] == [
        (1000, None),
        (1000, "1000"),
        (100, "2000"),
    ]


def test_task_name_narrows_the_filter(fake_google, logs):
    seed_job_log(fake_google, 2)
    service = log_entry(PROJECT, JOB_ID, "Job failed.", timestamp=at(30), task_name="service")
    fake_google.seed_log_entries([service])

    got = logs.job_entries(project=PROJECT, job_id=JOB_ID, task_name="service")

    assert got == [service]
    assert fake_google.requests[0].json["filter"] == (
        f'resource.type="ml_job" AND resource.labels.job_id="{JOB_ID}" AND resource.labels.task_name="service"'
    )


def test_no_entries_is_an_empty_list(fake_google, logs):
    assert logs.job_entries(project=PROJECT, job_id=JOB_ID) == []


def test_permission_denied_names_the_permission(fake_google, logs):
    fake_google.inject(status=403, api="logging")

    with pytest.raises(ApiPermissionDenied) as caught:
        logs.job_entries(project=PROJECT, job_id=JOB_ID)

    assert caught.value.permission == "logging.logEntries.list"


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_statuses_are_api_unavailable(fake_google, logs, status):
    fake_google.inject(status=status, api="logging", times=1)
    with pytest.raises(ApiUnavailable):
        logs.job_entries(project=PROJECT, job_id=JOB_ID)
    assert logs.job_entries(project=PROJECT, job_id=JOB_ID) == []


def test_a_404_is_not_reported_as_a_missing_job(fake_google, logs):
    fake_google.inject(status=404, api="logging", message="Project my-proj not found.")
    with pytest.raises(ApiError, match="not found") as caught:
        logs.job_entries(project=PROJECT, job_id=JOB_ID)
    assert type(caught.value) is ApiError


def test_a_slow_api_times_out_as_api_unavailable(fake_google):
    fake_google.inject(delay=3.0, api="logging")
    logs = CloudLoggingClient(endpoint=fake_google.base_url, timeout=0.3)
    with pytest.raises(ApiUnavailable, match="Timeout"):
        logs.job_entries(project=PROJECT, job_id=JOB_ID)


def test_an_unreachable_endpoint_is_api_unavailable():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    logs = CloudLoggingClient(endpoint=f"http://127.0.0.1:{port}", timeout=2.0)
    with pytest.raises(ApiUnavailable, match="ConnectionError"):
        logs.job_entries(project=PROJECT, job_id=JOB_ID)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"job_id": '1" OR resource.type="gce_instance'},
        {"job_id": JOB_ID, "task_name": 'service" OR "1"="1'},
        {"job_id": JOB_ID, "max_entries": 0},
        {"job_id": JOB_ID, "project": "a/b"},
    ],
)
def test_bad_arguments_raise_value_error_before_any_request(fake_google, logs, kwargs):
    with pytest.raises(ValueError):
        logs.job_entries(**{"project": PROJECT, **kwargs})
    assert fake_google.requests == []


def test_job_log_filter():
    assert job_log_filter("123") == 'resource.type="ml_job" AND resource.labels.job_id="123"'
    assert job_log_filter("123", "workerpool1-3").endswith('AND resource.labels.task_name="workerpool1-3"')
