from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import unquote

from bot.render.links import job_console_url, logs_query, logs_query_url


def test_job_console_url():
    assert (
        job_console_url("my-proj", "us-central1", "8501620632646057984")
        == "https://console.cloud.google.com/vertex-ai/locations/us-central1/training/8501620632646057984"
        "?project=my-proj"
    )


def test_job_console_url_without_region_links_the_custom_jobs_list():
    assert (
        job_console_url("my-proj", None, "123")
        == "https://console.cloud.google.com/vertex-ai/training/custom-jobs?project=my-proj"
    )


def test_job_console_url_without_project_omits_the_parameter():
    assert job_console_url(None, "europe-west4", "1").endswith("/locations/europe-west4/training/1")


def test_job_console_url_encodes_hostile_values():
    url = job_console_url("p&x=1", "us/../evil", "1?a=<b>|c d")
    for bad in "<>| &":
        assert bad not in url.split("?project=")[0]
    assert "?project=p%26x%3D1" in url
    assert "/locations/us%2F..%2Fevil/" in url


def test_logs_query_filters_on_the_job_and_replica():
    assert logs_query("123") == 'resource.type="ml_job" AND resource.labels.job_id="123"'
    assert logs_query("123", "workerpool0-0").endswith(' AND resource.labels.task_name="workerpool0-0"')


def test_logs_query_escapes_string_literals():
    assert logs_query('1" OR "x\\') == 'resource.type="ml_job" AND resource.labels.job_id="1\\" OR \\"x\\\\"'


def test_logs_query_url_format_and_encoding():
    url = logs_query_url("my-proj", "8501620632646057984")
    prefix = "https://console.cloud.google.com/logs/query;query="
    assert url.startswith(prefix)
    encoded, project = url[len(prefix) :].split("?project=")
    assert project == "my-proj"
    assert unquote(encoded) == 'resource.type="ml_job" AND resource.labels.job_id="8501620632646057984"'
    for bad in ' "=;?&<>|':
        assert bad not in encoded


def test_logs_query_url_with_replica_and_time_range():
    start = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    end = datetime(2024, 5, 1, 14, 30, tzinfo=timezone(timedelta(hours=2)))  # 12:30 UTC
    url = logs_query_url("p", "1", "workerpool1-3", start=start, end=end)
    query, rest = url.split(";timeRange=")
    assert unquote(query).endswith('resource.labels.task_name="workerpool1-3"')
    assert rest == "2024-05-01T10%3A00%3A00Z%2F2024-05-01T12%3A30%3A00Z?project=p"


def test_logs_query_url_takes_naive_times_as_utc():
    url = logs_query_url(None, "1", start=datetime(2024, 1, 1), end=datetime(2024, 1, 2))
    assert url.endswith(";timeRange=2024-01-01T00%3A00%3A00Z%2F2024-01-02T00%3A00%3A00Z")
