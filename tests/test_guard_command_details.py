"""The details a diagnosis's commands are filled with: completed from the evidence, the job and the tables, exactly."""

from __future__ import annotations

from typing import Any

import pytest

from bot.diagnosis.commands.details import complete_details, evidence_details
from bot.diagnosis.knowledge import load_knowledge
from bot.models import JobInfo, WorkerPool

TABLES = load_knowledge().tables
SA = "trainer@acme-ml.iam.gserviceaccount.com"
AGENT = "service-608533675308@gcp-sa-aiplatform-cc.iam.gserviceaccount.com"
# A job in us-central1 with every kind of pool: 8 + 2x8 A100s, 3 CPU-only n1-highmem-16, 2x1 L4 on g2.
MIXED_JOB = JobInfo(
    region="us-central1",
    worker_pools=[
        WorkerPool(machine_type="a2-highgpu-8g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=8),
        WorkerPool(
            machine_type="a2-highgpu-8g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=8, replica_count=2
        ),
        WorkerPool(machine_type="n1-highmem-16", replica_count=3),
        WorkerPool(machine_type="g2-standard-8", accelerator_type="NVIDIA_L4", accelerator_count=1, replica_count=2),
    ],
)


def completed(
    class_id: str, details: dict[str, str], job: JobInfo | None = None, tables: Any = TABLES
) -> dict[str, str]:
    result = dict(details)
    complete_details(class_id, result, job, tables)
    return result


# ---- reading the evidence ---------------------------------------------------------------------------------------


def test_each_class_reads_its_own_evidence_and_other_classes_none() -> None:
    denial = ["403 trainer@acme-ml.iam.gserviceaccount.com does not have storage.objects.get access to acme-data."]
    details: dict[str, str] = {}
    evidence_details("permission_denied", denial, details)
    assert details == {
        "platform": "google",
        "permission": "storage.objects.get",
        "principal": SA,
        "bucket": "acme-data",
    }
    quota = ["The following quotas are exceeded: CustomModelTrainingT4GPUsPerProjectPerRegion"]
    details = {}
    evidence_details("quota_exhausted", quota, details)
    assert details == {"quota_id": "CustomModelTrainingT4GPUsPerProjectPerRegion"}
    details = {"kept": "yes"}
    evidence_details("accelerator_oom", denial + quota, details)
    assert details == {"kept": "yes"}


def test_only_the_first_4000_characters_of_a_line_are_read() -> None:
    line = "x" * 3980 + " 403 on gs://abcdefghij"  # the bucket name ends past character 4000
    assert len(line) > 4000
    details: dict[str, str] = {}
    evidence_details("permission_denied", [line], details)
    assert details == {"platform": "google", "bucket": "abcdefg"}


# ---- the project --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("details", "project"),
    [
        ({"service_account": SA}, "acme-ml"),
        ({"service_account": AGENT, "principal": "runner@other-proj.iam.gserviceaccount.com"}, "other-proj"),
        ({"principal": "acme-web@appspot.gserviceaccount.com"}, "acme-web"),
        ({"service_account": SA, "principal": "runner@other-proj.iam.gserviceaccount.com"}, "acme-ml"),
        ({"principal": "runner@other-proj.iam.gserviceaccount.com", "error_project": "err-proj"}, "other-proj"),
        ({"error_project": "err-proj", "named_project": "named-proj"}, "err-proj"),
        ({"named_project": "named-proj", "secret_project": "vault-proj"}, "named-proj"),
        ({"repository_project": "images-proj"}, "images-proj"),
        ({"secret_project": "vault-proj"}, "vault-proj"),
        ({"topic_project": "events-proj"}, "events-proj"),
        ({"subscription_project": "events-proj"}, "events-proj"),
        ({"kms_project": "keys-proj"}, "keys-proj"),
        ({"bq_project": "data-lake-1"}, "data-lake-1"),
        ({"repository_project": "images-proj", "bq_project": "data-lake-1"}, "images-proj"),
        # a project number or a value that is no project id is passed over
        ({"error_project": "123456789012", "named_project": "named-proj"}, "named-proj"),
        ({"error_project": "Not_A_Project", "named_project": "named-proj"}, "named-proj"),
        (
            {"principal": "service-111111111@gcp-sa-tpu.iam.gserviceaccount.com", "bq_project": "data-lake-1"},
            "data-lake-1",
        ),
    ],
)
def test_the_project_comes_from_the_accounts_then_the_error_then_the_resource(
    details: dict[str, str], project: str
) -> None:
    assert completed("input_pipeline", details).get("project") == project


def test_a_known_project_is_kept_and_nothing_else_is_guessed() -> None:
    details = {"project": "acme-ml", "service_account": "runner@other-proj.iam.gserviceaccount.com"}
    assert completed("input_pipeline", details) == details
    assert completed("input_pipeline", {"error_project": "123456789012"}) == {"error_project": "123456789012"}
    assert completed("input_pipeline", {}) == {}


def test_a_service_agents_number_is_the_project_number_never_the_project() -> None:
    assert completed("input_pipeline", {"service_account": AGENT}) == {
        "service_account": AGENT,
        "project_number": "608533675308",
    }
    compute = "123456789012-compute@developer.gserviceaccount.com"
    assert completed("input_pipeline", {"principal": compute}) == {
        "principal": compute,
        "project_number": "123456789012",
    }
    # the job's own account is read first; a number already known is kept
    both = {"service_account": AGENT, "principal": compute}
    assert completed("input_pipeline", both)["project_number"] == "608533675308"
    known = {"service_account": AGENT, "project_number": "42"}
    assert completed("input_pipeline", known) == known
    with_project = {"project": "acme-ml", "principal": compute}
    assert completed("input_pipeline", with_project) == {**with_project, "project_number": "123456789012"}


# ---- the job's task and submitter -----------------------------------------------------------------------------


def test_only_a_vertex_task_name_is_kept() -> None:
    assert completed("input_pipeline", {"task_name": "workerpool1-2"}) == {"task_name": "workerpool1-2"}
    assert completed("input_pipeline", {"task_name": "trainer-0"}) == {}
    assert completed("input_pipeline", {"task_name": "WORKERPOOL1-2"}) == {}


def test_the_jobs_submitter_is_who_asked_for_it_unless_known() -> None:
    job = JobInfo(submitted_by="alice@example.com")
    assert completed("input_pipeline", {}, job) == {"submitter_email": "alice@example.com"}
    assert completed("input_pipeline", {"submitter_email": "bob@example.com"}, job) == {
        "submitter_email": "bob@example.com"
    }
    assert completed("input_pipeline", {}, JobInfo()) == {}


# ---- where a role is granted ------------------------------------------------------------------------------------

READ_FROM_ACCOUNT = "a service account's address"  # the project id completed from an account's address

GRANTS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "bucket": (
        {"permission": "storage.objects.get", "grant_on": "bucket", "bucket": "acme-data", "service_account": SA},
        {
            "project": "acme-ml",
            "project_read_from": READ_FROM_ACCOUNT,
            "grantee": "service_account",
            "member": f"serviceAccount:{SA}",
            "full_resource_name": "storage.googleapis.com/projects/_/buckets/acme-data",
        },
    ),
    # gsutil refused the person who ran it: the grant is theirs (their own credentials made the call)
    "a_person_gsutil_ran_as_receives_the_grant": (
        {
            "permission": "storage.objects.list", "grant_on": "bucket", "bucket": "acme-data",
            "principal": "alice@example.com", "cli_refusal": "gsutil", "service_account": SA,
        },  # fmt: skip
        {
            "project": "acme-ml",
            "project_read_from": READ_FROM_ACCOUNT,
            "grantee": "user",
            "grantee_is_user": "yes",
            "submitter_email": "alice@example.com",
            "refused_person": "alice@example.com",
            "member": "user:alice@example.com",
            "full_resource_name": "storage.googleapis.com/projects/_/buckets/acme-data",
        },
    ),
    # ... the person gsutil names, not whoever submitted the job
    "the_person_refused_not_the_jobs_submitter_receives_the_grant": (
        {
            "permission": "storage.objects.list", "grant_on": "bucket", "bucket": "acme-data",
            "principal": "alice@example.com", "cli_refusal": "gsutil", "submitter_email": "bob@example.com",
        },  # fmt: skip
        {
            "grantee": "user",
            "grantee_is_user": "yes",
            "refused_person": "alice@example.com",
            "member": "user:alice@example.com",
            "full_resource_name": "storage.googleapis.com/projects/_/buckets/acme-data",
        },
    ),
    # a client library in the job named a person: it ran on personal credentials; the job's own account is fixed
    "a_person_a_client_library_names_leaves_the_grant_to_the_jobs_account": (
        {
            "permission": "storage.objects.list", "grant_on": "bucket", "bucket": "acme-data",
            "principal": "alice@example.com", "service_account": SA,
        },  # fmt: skip
        {
            "project": "acme-ml",
            "project_read_from": READ_FROM_ACCOUNT,
            "grantee": "service_account",
            "member": f"serviceAccount:{SA}",
            "full_resource_name": "storage.googleapis.com/projects/_/buckets/acme-data",
        },
    ),
    "a_bucket_with_an_unsafe_name_has_no_full_name": (
        {"permission": "storage.objects.get", "grant_on": "bucket", "bucket": "$(id)"},
        {"grantee": "service_account"},
    ),
    "a_table_the_error_does_not_name_is_granted_on_its_dataset": (
        {
            "permission": "bigquery.tables.getData",
            "grant_on": "table",
            "dataset": "events",
            "bq_project": "data-lake-1",
        },
        {
            "grant_on": "dataset",
            "project": "data-lake-1",
            "grantee": "service_account",
            "full_resource_name": "bigquery.googleapis.com/projects/data-lake-1/datasets/events",
        },
    ),
    "a_named_table": (
        {
            "permission": "bigquery.tables.getData",
            "grant_on": "table",
            "dataset": "events",
            "table": "clicks",
            "bq_project": "data-lake-1",
        },
        {
            "project": "data-lake-1",
            "grantee": "service_account",
            "full_resource_name": "bigquery.googleapis.com/projects/data-lake-1/datasets/events/tables/clicks",
        },
    ),
    "a_table_without_its_dataset_stays_a_table": (
        {"permission": "bigquery.tables.getData", "grant_on": "table", "bq_project": "data-lake-1"},
        {"project": "data-lake-1", "grantee": "service_account"},
    ),
    "a_dataset_grant_is_not_moved": (
        {"permission": "bigquery.tables.list", "grant_on": "dataset", "dataset": "events", "bq_project": "data-lake-1"},
        {
            "project": "data-lake-1",
            "grantee": "service_account",
            "full_resource_name": "bigquery.googleapis.com/projects/data-lake-1/datasets/events",
        },
    ),
    "the_project_the_error_names": (
        {
            "permission": "bigquery.jobs.create",
            "grant_on": "project",
            "named_project": "named-proj",
            "bq_project": "data-lake-1",
            "resource_project": "res-proj",
            "project": "acme-ml",
        },
        {
            "resource_project": "named-proj",
            "grantee": "service_account",
            "full_resource_name": "cloudresourcemanager.googleapis.com/projects/named-proj",
        },
    ),
    "the_bigquery_project": (
        {
            "permission": "bigquery.jobs.create",
            "grant_on": "project",
            "bq_project": "data-lake-1",
            "resource_project": "res-proj",
            "project": "acme-ml",
        },
        {
            "resource_project": "data-lake-1",
            "grantee": "service_account",
            "full_resource_name": "cloudresourcemanager.googleapis.com/projects/data-lake-1",
        },
    ),
    "a_resource_project_already_known": (
        {"permission": "bigquery.jobs.create", "grant_on": "project", "resource_project": "res-proj", "project": "p-1"},
        {
            "grantee": "service_account",
            "full_resource_name": "cloudresourcemanager.googleapis.com/projects/res-proj",
        },
    ),
    "the_jobs_project": (
        {"permission": "bigquery.jobs.create", "grant_on": "project", "project": "acme-ml"},
        {
            "resource_project": "acme-ml",
            "grantee": "service_account",
            "full_resource_name": "cloudresourcemanager.googleapis.com/projects/acme-ml",
        },
    ),
    "no_project_known": (
        {"permission": "bigquery.jobs.create", "grant_on": "project"},
        {"grantee": "service_account"},
    ),
    "a_secret_in_its_own_project": (
        {
            "permission": "secretmanager.versions.access",
            "grant_on": "secret",
            "secret": "hf",
            "secret_project": "vault-proj",
            "project": "acme-ml",
        },
        {
            "resource_project": "vault-proj",
            "grantee": "service_account",
            "full_resource_name": "secretmanager.googleapis.com/projects/vault-proj/secrets/hf",
        },
    ),
    "a_secret_in_the_jobs_project": (
        {"permission": "secretmanager.versions.access", "grant_on": "secret", "secret": "hf", "project": "acme-ml"},
        {
            "resource_project": "acme-ml",
            "grantee": "service_account",
            "full_resource_name": "secretmanager.googleapis.com/projects/acme-ml/secrets/hf",
        },
    ),
    "a_secrets_known_resource_project_is_kept": (
        {
            "permission": "secretmanager.versions.access",
            "grant_on": "secret",
            "secret": "hf",
            "project": "acme-ml",
            "resource_project": "vault-proj",
        },
        {
            "grantee": "service_account",
            "full_resource_name": "secretmanager.googleapis.com/projects/vault-proj/secrets/hf",
        },
    ),
    "a_bucket_has_no_resource_project": (
        {"permission": "storage.objects.get", "grant_on": "bucket", "bucket": "acme-data", "project": "acme-ml"},
        {"grantee": "service_account", "full_resource_name": "storage.googleapis.com/projects/_/buckets/acme-data"},
    ),
    "repository": (
        {
            "permission": "artifactregistry.repositories.downloadArtifacts",
            "grant_on": "repository",
            "repository": "trainers",
            "repository_location": "europe-west4",
            "repository_project": "images-proj",
            "project": "acme-ml",
        },
        {
            "resource_project": "images-proj",
            "grantee": "service_account",
            "full_resource_name": "artifactregistry.googleapis.com/projects/images-proj/locations/europe-west4"
            "/repositories/trainers",
        },
    ),
    "topic": (
        {"permission": "pubsub.topics.publish", "grant_on": "topic", "topic": "t1", "topic_project": "events-proj"},
        {
            "project": "events-proj",
            "resource_project": "events-proj",
            "grantee": "service_account",
            "full_resource_name": "pubsub.googleapis.com/projects/events-proj/topics/t1",
        },
    ),
    "subscription": (
        {
            "permission": "pubsub.subscriptions.consume",
            "grant_on": "subscription",
            "subscription": "s1",
            "subscription_project": "events-proj",
            "project": "acme-ml",
        },
        {
            "resource_project": "events-proj",
            "grantee": "service_account",
            "full_resource_name": "pubsub.googleapis.com/projects/events-proj/subscriptions/s1",
        },
    ),
    "kms_key": (
        {
            "permission": "cloudkms.cryptoKeyVersions.useToDecrypt",
            "grant_on": "key",
            "kms_key": "data",
            "kms_keyring": "train",
            "kms_location": "europe-west4",
            "kms_project": "keys-proj",
            "project": "acme-ml",
        },
        {
            "resource_project": "keys-proj",
            "grantee": "service_account",
            "full_resource_name": "cloudkms.googleapis.com/projects/keys-proj/locations/europe-west4/keyRings/train"
            "/cryptoKeys/data",
        },
    ),
    "act_as_by_a_user": (
        {
            "permission": "iam.serviceAccounts.actAs",
            "grant_on": "service_account",
            "principal": "alice@example.com",
            "job_service_account": SA,
        },
        {
            "target_service_account": SA,
            "grantee": "user",
            "submitter_email": "alice@example.com",
            "full_resource_name": f"iam.googleapis.com/projects/-/serviceAccounts/{SA}",
        },
    ),
    "act_as_by_a_user_keeps_the_target_and_submitter_known": (
        {
            "permission": "iam.serviceAccounts.actAs",
            "grant_on": "service_account",
            "principal": "alice@example.com",
            "job_service_account": SA,
            "target_service_account": "runner@other-proj.iam.gserviceaccount.com",
            "submitter_email": "bob@example.com",
        },
        {
            "grantee": "user",
            "full_resource_name": "iam.googleapis.com/projects/-/serviceAccounts/"
            "runner@other-proj.iam.gserviceaccount.com",
        },
    ),
    "act_as_by_a_service_account": (
        {
            "permission": "iam.serviceAccounts.actAs",
            "grant_on": "service_account",
            "principal": "runner@other-proj.iam.gserviceaccount.com",
        },
        {"project": "other-proj", "project_read_from": READ_FROM_ACCOUNT, "grantee": "service_account"},
    ),
    "act_as_by_nobody_named": (
        {"permission": "iam.serviceAccounts.actAs", "grant_on": "service_account"},
        {"grantee": "user"},
    ),
    "no_grant_level": ({"permission": "logging.logEntries.create"}, {"grantee": "service_account"}),
    "google_named_as_the_platform": (
        {"platform": "google", "permission": "storage.objects.get", "grant_on": "bucket", "bucket": "acme-data"},
        {"grantee": "service_account", "full_resource_name": "storage.googleapis.com/projects/_/buckets/acme-data"},
    ),
    "another_platform_gets_nothing": (
        {"platform": "aws", "permission": "storage.objects.get", "grant_on": "bucket", "bucket": "acme-data"},
        {},
    ),
}


@pytest.mark.parametrize("name", sorted(GRANTS))
def test_a_grant_is_completed_exactly(name: str) -> None:
    details, added = GRANTS[name]
    assert completed("permission_denied", details) == {**details, **added}


def test_only_a_permission_denial_is_completed_as_a_grant() -> None:
    details = {"permission": "storage.objects.get", "grant_on": "bucket", "bucket": "acme-data"}
    assert completed("quota_exhausted", details) == {
        **details,
        "quota_service": "aiplatform.googleapis.com",
        "quota_scope": "region",
    }
    assert completed("input_pipeline", details) == details


# ---- quotas -------------------------------------------------------------------------------------------------------

QUOTAS: dict[str, tuple[dict[str, str], JobInfo | None, dict[str, str]]] = {
    "vertex_accelerator_metric_counts_the_jobs_accelerators_of_that_type": (
        {"quota_metric": "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus", "region": "us-central1"},
        MIXED_JOB,
        {
            "quota_service": "aiplatform.googleapis.com",
            "quota_scope": "region",
            "preferred_value": "24",
            "accelerator": "NVIDIA_TESLA_A100",
            "alternative_region": "us-east1",
            "offering_regions": "us-east1",
            "accelerator_quota_id": "CustomModelTrainingA100GPUsPerProjectPerRegion",
        },
    ),
    "every_gpu_counts_against_gpus_all_regions": (
        {"quota_metric": "compute.googleapis.com/gpus_all_regions"},
        MIXED_JOB,
        {
            "quota_service": "compute.googleapis.com",
            "quota_scope": "global",
            "preferred_value": "26",
            "accelerator": "NVIDIA_TESLA_A100",
            "accelerator_quota_id": "CustomModelTrainingA100GPUsPerProjectPerRegion",
        },
    ),
    "cpus_count_the_n1_and_e2_vcpus": (
        {"quota_metric": "compute.googleapis.com/cpus", "region": "europe-west4"},
        MIXED_JOB,
        {
            "quota_service": "compute.googleapis.com",
            "quota_scope": "region",
            "preferred_value": "48",
            "accelerator": "NVIDIA_TESLA_A100",
            "compute_accelerator": "nvidia-tesla-a100",
            "accelerator_quota_id": "CustomModelTrainingA100GPUsPerProjectPerRegion",
        },
    ),
    "e2_vcpus_count_too": (
        {"quota_id": "CustomModelTrainingCPUsPerProjectPerRegion"},
        JobInfo(worker_pools=[WorkerPool(machine_type="e2-standard-4", replica_count=2)]),
        {"quota_service": "aiplatform.googleapis.com", "quota_scope": "region", "preferred_value": "8"},
    ),
    "a_value_the_error_gave_is_kept": (
        {"quota_metric": "aiplatform.googleapis.com/custom_model_training_cpus", "preferred_value": "72"},
        MIXED_JOB,
        {
            "quota_service": "aiplatform.googleapis.com",
            "quota_scope": "region",
            "accelerator": "NVIDIA_TESLA_A100",
            "accelerator_quota_id": "CustomModelTrainingA100GPUsPerProjectPerRegion",
        },
    ),
    "a_job_without_that_accelerator_asks_nothing": (
        {"quota_metric": "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus", "region": "us-central1"},
        JobInfo(worker_pools=[WorkerPool(machine_type="n1-standard-8", replica_count=4)]),
        {
            "quota_service": "aiplatform.googleapis.com",
            "quota_scope": "region",
            "accelerator": "NVIDIA_TESLA_T4",
            "alternative_region": "us-east1",
            "offering_regions": "us-east1, us-east4, us-west1, us-west2, us-west4",
            "accelerator_quota_id": "CustomModelTrainingT4GPUsPerProjectPerRegion",
        },
    ),
    "a_quota_counting_nothing_of_the_job": (
        {"quota_metric": "compute.googleapis.com/disks_total_gb"},
        MIXED_JOB,
        {
            "quota_service": "compute.googleapis.com",
            "quota_scope": "region",
            "accelerator": "NVIDIA_TESLA_A100",
            "accelerator_quota_id": "CustomModelTrainingA100GPUsPerProjectPerRegion",
        },
    ),
    "a_row_found_by_its_id_and_its_scope": (
        {"quota_id": "GPUS-PER-GPU-FAMILY-per-project-region"},
        None,
        {"quota_service": "compute.googleapis.com", "quota_scope": "region_gpu_family"},
    ),
    "a_row_found_by_id_counts_the_job": (
        {"quota_id": "CustomModelTrainingL4GPUsPerProjectPerRegion"},
        MIXED_JOB,
        {
            "quota_service": "aiplatform.googleapis.com",
            "quota_scope": "region",
            "preferred_value": "2",
            "accelerator": "NVIDIA_TESLA_A100",
            "accelerator_quota_id": "CustomModelTrainingA100GPUsPerProjectPerRegion",
        },
    ),
    "no_job_asks_nothing": (
        {"quota_metric": "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus"},
        None,
        {
            "quota_service": "aiplatform.googleapis.com",
            "quota_scope": "region",
            "accelerator": "NVIDIA_TESLA_A100",
            "accelerator_quota_id": "CustomModelTrainingA100GPUsPerProjectPerRegion",
        },
    ),
    "an_unlisted_compute_metric_gets_its_regional_id": (
        {"quota_metric": "compute.googleapis.com/nvidia_b200_gpus", "region": "us-central1"},
        None,
        {
            "quota_id": "NVIDIA-B200-GPUS-per-project-region",
            "quota_service": "compute.googleapis.com",
            "quota_scope": "region",
        },
    ),
    "an_unlisted_all_regions_metric_gets_its_global_id": (
        {"quota_metric": "compute.googleapis.com/tpus_all_regions"},
        None,
        {
            "quota_id": "TPUS-ALL-REGIONS-per-project",
            "quota_service": "compute.googleapis.com",
            "quota_scope": "global",
        },
    ),
    "a_limit_that_holds_globally_gets_the_global_id": (
        {"quota_metric": "compute.googleapis.com/nvidia_b200_gpus", "quota_scope": "global"},
        None,
        {"quota_id": "NVIDIA-B200-GPUS-per-project", "quota_service": "compute.googleapis.com"},
    ),
    "an_unlisted_compute_metric_keeps_a_known_id": (
        {"quota_metric": "compute.googleapis.com/nvidia_b200_gpus", "quota_id": "B200-per-project-region"},
        None,
        {"quota_service": "compute.googleapis.com", "quota_scope": "region"},
    ),
    "a_listed_compute_metric_gets_no_id_of_its_own_making": (
        {"quota_metric": "compute.googleapis.com/cpus"},
        None,
        {"quota_service": "compute.googleapis.com", "quota_scope": "region"},
    ),
    "the_service_is_the_host_before_the_first_slash": (
        {"quota_metric": "tpu.googleapis.com/v4/pods"},
        None,
        {"quota_service": "tpu.googleapis.com", "quota_scope": "region"},
    ),
    "an_unlisted_compute_metric_is_named_after_all_that_follows_its_service": (
        {"quota_metric": "compute.googleapis.com/gpus/b200"},
        None,
        {
            "quota_id": "GPUS/B200-per-project-region",
            "quota_service": "compute.googleapis.com",
            "quota_scope": "region",
        },
    ),
    "an_unlisted_metric_of_another_service": (
        {"quota_metric": "tpu.googleapis.com/v4_pods"},
        None,
        {"quota_service": "tpu.googleapis.com", "quota_scope": "region"},
    ),
    "a_tpu_api_id": (
        {"quota_id": "TPUV9PerProjectPerRegionForTPUAPI"},
        None,
        {"quota_service": "tpu.googleapis.com", "quota_scope": "region"},
    ),
    "a_compute_engine_global_id": (
        {"quota_id": "FOO-per-project"},
        None,
        {"quota_service": "compute.googleapis.com", "quota_scope": "global"},
    ),
    "a_compute_engine_regional_id": (
        {"quota_id": "FOO-per-project-region"},
        None,
        {"quota_service": "compute.googleapis.com", "quota_scope": "region"},
    ),
    "an_all_regions_id": (
        {"quota_id": "BAR-ALL-REGIONS-limit"},
        None,
        {"quota_service": "aiplatform.googleapis.com", "quota_scope": "global"},
    ),
    "a_vertex_global_id": (
        {"quota_id": "GlobalThingPerProject"},
        None,
        {"quota_service": "aiplatform.googleapis.com", "quota_scope": "global"},
    ),
    "a_vertex_id_that_only_mentions_global": (
        {"quota_id": "ThingGlobalPerProject"},
        None,
        {"quota_service": "aiplatform.googleapis.com", "quota_scope": "region"},
    ),
    "known_service_and_scope_are_kept": (
        {"quota_metric": "compute.googleapis.com/cpus", "quota_service": "x.googleapis.com", "quota_scope": "global"},
        None,
        {},
    ),
    "nothing_known": ({}, None, {"quota_service": "aiplatform.googleapis.com", "quota_scope": "region"}),
    "google_named_as_the_platform": (
        {"platform": "google", "quota_id": "FOO-per-project"},
        None,
        {"quota_service": "compute.googleapis.com", "quota_scope": "global"},
    ),
    "another_platform_gets_nothing": (
        {"platform": "aws", "quota_metric": "compute.googleapis.com/nvidia_b200_gpus", "accelerator_name": "nvidia-l4"},
        MIXED_JOB,
        {},
    ),
}


@pytest.mark.parametrize("name", sorted(QUOTAS))
def test_a_quota_is_completed_exactly(name: str) -> None:
    details, job, added = QUOTAS[name]
    result = completed("quota_exhausted", details, job)
    result.pop("accelerator_request", None)  # what the job asks of its accelerator's quota: tested below
    assert result == {**details, **added}


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        (MIXED_JOB, "24"),  # 8 + 2 x 8 A100s, the first accelerator pool's type (the L4 pool counts elsewhere)
        (MIXED_JOB.model_copy(update={"spot": True}), "24"),  # the preemptible quota counts the same GPUs
        (JobInfo(worker_pools=[WorkerPool(accelerator_type="NVIDIA_L4", accelerator_count=2, replica_count=3)]), "6"),
        (JobInfo(worker_pools=[WorkerPool(accelerator_type="TPU_V3", accelerator_count=8)]), None),  # no quota id
        (None, None),
    ],
)
def test_what_the_job_asks_of_its_accelerators_quota(job: JobInfo | None, expected: str | None) -> None:
    assert completed("quota_exhausted", {"region": "us-central1"}, job).get("accelerator_request") == expected


def test_without_the_quota_table_nothing_is_looked_up() -> None:
    tables = {"accelerator_regions": TABLES["accelerator_regions"]}
    details = {"quota_metric": "compute.googleapis.com/cpus", "region": "us-west1", "accelerator_name": "nvidia-l4"}
    assert completed("quota_exhausted", details, MIXED_JOB, tables) == {
        **details,
        "quota_id": "CPUS-per-project-region",
        "quota_service": "compute.googleapis.com",
        "quota_scope": "region",
        "accelerator": "NVIDIA_TESLA_A100",
        "alternative_region": "us-central1",
        "offering_regions": "us-central1, us-east1",
    }
    assert completed("quota_exhausted", {"quota_id": "FOO-per-project"}, None, {}) == {
        "quota_id": "FOO-per-project",
        "quota_service": "compute.googleapis.com",
        "quota_scope": "global",
    }


# ---- another region offering the accelerator ----------------------------------------------------------------------

REGIONS: dict[str, tuple[dict[str, str], JobInfo | None, dict[str, str]]] = {
    "spot_job_gets_the_preemptible_quota": (
        {"region": "us-east4"},
        MIXED_JOB.model_copy(update={"spot": True}),
        {
            "accelerator": "NVIDIA_TESLA_A100",
            "alternative_region": "us-central1",
            "offering_regions": "us-central1, us-east1",
            "accelerator_quota_id": "CustomModelTrainingPreemptibleA100GPUsPerProjectPerRegion",
            "accelerator_request": "24",
        },
    ),
    "the_jobs_accelerator_before_the_errors": (
        {"region": "us-east4", "accelerator_name": "nvidia-l4"},
        MIXED_JOB,
        {
            "accelerator": "NVIDIA_TESLA_A100",
            "alternative_region": "us-central1",
            "offering_regions": "us-central1, us-east1",
            "accelerator_quota_id": "CustomModelTrainingA100GPUsPerProjectPerRegion",
            "accelerator_request": "24",
        },
    ),
    "the_errors_machine_before_the_jobs": (
        {"machine_type": "g2-standard-8", "region": "us-west1"},
        JobInfo(worker_pools=[WorkerPool(machine_type="a2-highgpu-8g")]),
        {
            "accelerator": "NVIDIA_L4",
            "alternative_region": "us-central1",
            "offering_regions": "us-central1, us-east1, us-east4",
            "accelerator_quota_id": "CustomModelTrainingL4GPUsPerProjectPerRegion",
        },
    ),
    "the_jobs_machine": (
        {"region": "us-east1"},
        JobInfo(worker_pools=[WorkerPool(machine_type="a2-ultragpu-1g")]),
        {
            "accelerator": "NVIDIA_A100_80GB",
            "alternative_region": "us-central1",
            "offering_regions": "us-central1, us-east4",
            "accelerator_quota_id": "CustomModelTrainingA10080GBGPUsPerProjectPerRegion",
        },
    ),
    "a_job_without_pools": ({"region": "us-west1"}, JobInfo(), {}),
    "the_errors_accelerator_name": (
        {"accelerator_name": "nvidia-tesla-t4", "region": "us-west2"},
        None,
        {
            "accelerator": "NVIDIA_TESLA_T4",
            "alternative_region": "us-central1",
            "offering_regions": "us-central1, us-east1, us-east4, us-west1, us-west4",
            "accelerator_quota_id": "CustomModelTrainingT4GPUsPerProjectPerRegion",
        },
    ),
    "the_accelerator_of_the_quota_metric": (
        {"quota_metric": "aiplatform.googleapis.com/custom_model_training_nvidia_p4_gpus", "region": "us-west2"},
        None,
        {
            "accelerator": "NVIDIA_TESLA_P4",
            "alternative_region": "us-central1",
            "offering_regions": "us-central1, us-east4",
            "accelerator_quota_id": "CustomModelTrainingP4GPUsPerProjectPerRegion",
        },
    ),
    "a_known_accelerator_is_kept": (
        {"accelerator": "NVIDIA_L4", "accelerator_name": "nvidia-tesla-p100", "region": "us-west1"},
        None,
        {
            "alternative_region": "us-central1",
            "offering_regions": "us-central1, us-east1",
            "accelerator_quota_id": "CustomModelTrainingP100GPUsPerProjectPerRegion",
        },
    ),
    "an_accelerator_without_a_quota_id": (
        {"region": "us-central1"},
        JobInfo(worker_pools=[WorkerPool(accelerator_type="TPU_V3", accelerator_count=8)]),
        {"accelerator": "TPU_V3", "alternative_region": "us-east1", "offering_regions": "us-east1"},
    ),
    "a_spot_accelerator_whose_preemptible_quota_is_unlisted": (
        {"region": "us-central1"},
        JobInfo(spot=True, worker_pools=[WorkerPool(accelerator_type="TPU_V3", accelerator_count=8)]),
        {"accelerator": "TPU_V3", "alternative_region": "us-east1", "offering_regions": "us-east1"},
    ),
    "no_region_other_than_its_own": (
        {"region": "us-central1"},
        JobInfo(worker_pools=[WorkerPool(accelerator_type="TPU_V2", accelerator_count=8)]),
        {"accelerator": "TPU_V2"},
    ),
    "no_region_in_another_geography": (  # no other region named: Compute Engine's name to list its zones
        {"region": "europe-west4"},
        MIXED_JOB,
        {
            "accelerator": "NVIDIA_TESLA_A100",
            "compute_accelerator": "nvidia-tesla-a100",
            "accelerator_quota_id": "CustomModelTrainingA100GPUsPerProjectPerRegion",
            "accelerator_request": "24",
        },
    ),
    "no_region_known": (
        {},
        MIXED_JOB,
        {
            "accelerator": "NVIDIA_TESLA_A100",
            "accelerator_quota_id": "CustomModelTrainingA100GPUsPerProjectPerRegion",
            "accelerator_request": "24",
        },
    ),
    "an_accelerator_the_table_lacks": (
        {"region": "us-central1", "accelerator_name": "nvidia-b200"},
        JobInfo(worker_pools=[WorkerPool(machine_type="n1-standard-8")]),
        {},
    ),
}


@pytest.mark.parametrize("name", sorted(REGIONS))
def test_another_region_is_offered_exactly(name: str) -> None:
    details, job, added = REGIONS[name]
    expected = {**details, "quota_service": "aiplatform.googleapis.com", "quota_scope": "region", **added}
    result = completed("quota_exhausted", details, job)
    result.pop("preferred_value", None)  # what the job counts is tested above
    assert result == expected


def test_without_the_accelerator_table_no_region_is_offered() -> None:
    tables = {"quota_ids": TABLES["quota_ids"]}
    assert completed("quota_exhausted", {"region": "us-east4"}, MIXED_JOB, tables) == {
        "region": "us-east4",
        "quota_service": "aiplatform.googleapis.com",
        "quota_scope": "region",
    }
