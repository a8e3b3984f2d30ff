from __future__ import annotations

import pytest

from bot.jobs.reference import JobReference, JobReferenceError, parse_job_reference

JOB = "8501620632646057984"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (JOB, JobReference(JOB)),
        (f"  {JOB}\n", JobReference(JOB)),
        (f"acme-ml/{JOB}", JobReference(JOB, project="acme-ml")),
        (f"projects/acme-ml/locations/us-central1/customJobs/{JOB}", JobReference(JOB, "acme-ml", "us-central1")),
        (
            f"projects/123456789012/locations/europe-west4/customJobs/{JOB}",
            JobReference(JOB, "123456789012", "europe-west4"),
        ),
        (
            f"https://console.cloud.google.com/vertex-ai/locations/us-central1/training/{JOB}?project=acme-ml",
            JobReference(JOB, "acme-ml", "us-central1"),
        ),
        (
            f"https://console.cloud.google.com/vertex-ai/locations/us-east1/training/{JOB}/cpu?hl=en&project=acme-ml",
            JobReference(JOB, "acme-ml", "us-east1"),
        ),
        (
            f"https://console.cloud.google.com/vertex-ai/locations/us-east1/training/{JOB}/logs",
            JobReference(JOB, None, "us-east1"),
        ),
        # Slack wraps pasted links and escapes & in slash-command text
        (
            f"<https://console.cloud.google.com/vertex-ai/locations/asia-east1/training/{JOB}?hl=en&amp;project=p-1x>",
            JobReference(JOB, "p-1x", "asia-east1"),
        ),
        (
            f"<https://console.cloud.google.com/vertex-ai/locations/asia-east1/training/{JOB}?project=acme-ml|the job>",
            JobReference(JOB, "acme-ml", "asia-east1"),
        ),
        # the logs link that Vertex puts in a failed job's error message
        (
            f"https://console.cloud.google.com/logs/viewer?project=acme-ml&resource=ml_job%2Fjob_id%2F{JOB}"
            "&advancedFilter=resource.type%3D%22ml_job%22",
            JobReference(JOB, "acme-ml"),
        ),
        (
            "https://console.cloud.google.com/logs/query;query=resource.type%3D%22ml_job%22%20AND%20"
            f"resource.labels.job_id%3D%22{JOB}%22?project=acme-ml",
            JobReference(JOB, "acme-ml"),
        ),
        (
            f"projects/example.com:ml-lab/locations/us-central1/customJobs/{JOB}",
            JobReference(JOB, "example.com:ml-lab", "us-central1"),
        ),
    ],
)
def test_accepted_forms(text: str, expected: JobReference) -> None:
    assert parse_job_reference(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no job given"),
        ("bert-large-finetune", "'bert-large-finetune' is not a custom job id"),
        ("12ab", "'12ab' is not a custom job id"),
        (f"projects/acme-ml/locations/us-central1/trainingPipelines/{JOB}", "is not a CustomJob resource name"),
        (f"projects/Acme_ML/locations/us-central1/customJobs/{JOB}", "'Acme_ML' is not a valid project"),
        (f"projects/acme-ml/locations/moon/customJobs/{JOB}", "'moon' is not a valid region"),
        (f"https://example.com/vertex-ai/locations/us-central1/training/{JOB}", "is not a Cloud Console link"),
        ("https://console.cloud.google.com/vertex-ai/training/custom-jobs?project=acme-ml", "does not link to one"),
        (f"https://console.cloud.google.com/vertex-ai/locations/us-central1/training/{JOB}?project=UPPER", "'UPPER'"),
        ("1" * 31, "is not a custom job id"),
        (f"acme-ml/{JOB}/extra", "is not a custom job id"),
    ],
)
def test_rejected_with_a_clear_reason(text: str, message: str) -> None:
    with pytest.raises(JobReferenceError) as caught:
        parse_job_reference(text)
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_error_messages_quote_long_input_briefly() -> None:
    with pytest.raises(JobReferenceError) as caught:
        parse_job_reference("x" * 5000)
    assert len(str(caught.value)) < 300


def test_resolve_prefers_flags_then_the_reference_then_the_config() -> None:
    bare, named = JobReference(JOB), JobReference(JOB, project="ref-proj", region="europe-west4")
    regions = ["us-central1", "europe-west4", "us-central1"]

    assert bare.resolve(default_project="cfg-proj", regions=regions) == ("cfg-proj", ["us-central1", "europe-west4"])
    assert named.resolve(default_project="cfg-proj", regions=regions) == ("ref-proj", ["europe-west4"])
    assert named.resolve(project="flag-proj", region="asia-east1", regions=regions) == ("flag-proj", ["asia-east1"])


def test_resolve_without_a_project_or_regions_says_what_to_give() -> None:
    with pytest.raises(JobReferenceError, match="which project"):
        JobReference(JOB).resolve(regions=["us-central1"])
    with pytest.raises(JobReferenceError, match="which region"):
        JobReference(JOB).resolve(default_project="p-1x", regions=[])
    with pytest.raises(JobReferenceError, match="not a valid region"):
        JobReference(JOB).resolve(default_project="p-1x", region="us central1")
