"""What the evidence readers take from a denial's or a quota failure's log lines: exact details, every phrasing."""

from __future__ import annotations

import pytest

from bot.diagnosis.evidence.patterns import first_match, platform_of
from bot.diagnosis.evidence.permission import permission_details
from bot.diagnosis.evidence.quota import quota_details


def read_permission(lines: list[str], before: dict[str, str] | None = None) -> dict[str, str]:
    details = dict(before or {})
    permission_details(lines, details)
    return details


def read_quota(lines: list[str], before: dict[str, str] | None = None) -> dict[str, str]:
    details = dict(before or {})
    quota_details(lines, details)
    return details


# ---- whose refusal it is ----------------------------------------------------------------------------------------


def test_the_platform_is_google_when_any_line_says_so_else_the_first_other_platform_named() -> None:
    assert platform_of(["loss 0.3", "HttpError 403 from storage.googleapis.com"]) == "google"
    assert platform_of(["botocore.exceptions.ClientError: AccessDenied"]) == "aws"
    assert platform_of(["GatedRepoError: 403", "botocore"]) == "huggingface"  # the first platform in the list wins
    assert platform_of(["all fine"]) is None
    assert platform_of([]) is None


def test_the_lines_are_read_as_separate_lines_for_the_platform() -> None:
    # `\bGCE\b` at the start of the second line: the lines are joined by a bare newline
    assert platform_of(["node scale up failed:", "GCE quota exceeded"]) == "google"


def test_first_match_takes_the_first_line_that_matches_any_pattern_and_drops_empty_groups() -> None:
    import re

    patterns = [re.compile(r"a=(?P<a>\d+)(?:,b=(?P<b>\d+))?"), re.compile(r"c=(?P<c>\d+)")]
    assert first_match(patterns, ["nothing", "c=3 a=1", "a=2,b=5"]) == {"a": "1"}
    assert first_match(patterns, ["c=3"]) == {"c": "3"}
    assert first_match(patterns, ["none"]) == {}


# ---- permission denials ---------------------------------------------------------------------------------------

PERMISSION_CASES: dict[str, tuple[list[str], dict[str, str], dict[str, str]]] = {
    # name: (lines, details before, details after)
    "another_platform_gets_only_its_name": (
        ["User: arn:aws:iam::1:user/x is not authorized. Permission 'storage.objects.get' denied on acme-data"],
        {},
        {"platform": "aws"},
    ),
    "no_platform_named": (
        ["403 someone@example.com does not have storage.objects.list access to my-bucket."],
        {},
        {"permission": "storage.objects.list", "principal": "someone@example.com", "bucket": "my-bucket"},
    ),
    "permission_in_protobuf_text_across_lines": (
        [
            "PermissionDenied: 403 caller lacks permission",
            "details {",
            '  key: "permission"',
            '  value: "bigquery.tables.getData"',
            "}",
        ],
        {},
        {"permission": "bigquery.tables.getData"},
    ),
    "the_errors_own_permission_beats_a_signals_guess": (
        ["Permission 'bigquery.tables.getData' denied"],
        {"permission": "bigquery.tables.get"},
        {"permission": "bigquery.tables.getData"},
    ),
    "act_as": (
        ["You do not have permission to act as service_account: runner@acme-ml.iam.gserviceaccount.com"],
        {},
        {
            "platform": "google",
            "permission": "iam.serviceAccounts.actAs",
            "target_service_account": "runner@acme-ml.iam.gserviceaccount.com",
        },
    ),
    "act_as_keeps_a_permission_already_known": (
        ["You do not have permission to act as runner@acme-ml.iam.gserviceaccount.com"],
        {"permission": "iam.serviceAccounts.get"},
        {
            "permission": "iam.serviceAccounts.get",
            "platform": "google",
            "target_service_account": "runner@acme-ml.iam.gserviceaccount.com",
        },
    ),
    "gs_listing": (
        ["403 error when listing gs://acme-data/shards"],
        {},
        {"platform": "google", "permission": "storage.objects.list", "bucket": "acme-data"},
    ),
    "gs_upload": (
        ["403 Failed to flush gs://acme-ckpt/run/x.pt"],
        {},
        {"platform": "google", "permission": "storage.objects.create", "bucket": "acme-ckpt"},
    ),
    "gs_download_verb_on_another_line": (
        ["PermissionDeniedError: 403", "Error reading gs://acme-data/a"],
        {},
        {"platform": "google", "permission": "storage.objects.get", "bucket": "acme-data"},
    ),
    "gs_path_without_a_verb": (["403 on gs://acme-data/a"], {}, {"platform": "google", "bucket": "acme-data"}),
    "gs_verb_keeps_a_permission_already_known": (
        ["403 error when listing gs://acme-data/shards"],
        {"permission": "storage.objects.get"},
        {"permission": "storage.objects.get", "platform": "google", "bucket": "acme-data"},
    ),
    "a_verb_without_a_gs_path_names_no_permission": (
        ["403 error when listing the files of acme-data"],
        {},
        {},
    ),
    "artifact_registry_pull": (
        ['Failed to pull image "europe-west4-docker.pkg.dev/acme-ml/trainers/resnet:1.2": failed to authorize: 403'],
        {},
        {
            "permission": "artifactregistry.repositories.downloadArtifacts",
            "repository": "trainers",
            "repository_location": "europe-west4",
            "repository_project": "acme-ml",
        },
    ),
    "artifact_registry_push": (
        ["unauthorized: failed to push us-docker.pkg.dev/acme-ml/images/trainer:latest"],
        {},
        {
            "permission": "artifactregistry.repositories.uploadArtifacts",
            "repository": "images",
            "repository_location": "us",
            "repository_project": "acme-ml",
        },
    ),
    "artifact_image_on_the_refusal_line_without_registry_words": (
        ["europe-west4-docker.pkg.dev/acme-ml/trainers/resnet:1.2: 403 Forbidden"],
        {},
        {
            "permission": "artifactregistry.repositories.downloadArtifacts",
            "repository": "trainers",
            "repository_location": "europe-west4",
            "repository_project": "acme-ml",
        },
    ),
    "gcr_image_on_the_refusal_line_without_registry_words": (
        ["gcr.io/acme-ml/trainer:latest: 403 Forbidden"],
        {},
        {
            "permission": "artifactregistry.repositories.downloadArtifacts",
            "repository": "gcr.io",
            "repository_location": "us",
            "repository_project": "acme-ml",
        },
    ),
    "image_named_apart_from_a_refusal_that_speaks_of_pulling": (
        ["Image: asia.gcr.io/acme-ml/trainer:latest", "Error: 403 Forbidden when pulling the manifest"],
        {},
        {
            "permission": "artifactregistry.repositories.downloadArtifacts",
            "repository": "asia.gcr.io",
            "repository_location": "asia",
            "repository_project": "acme-ml",
        },
    ),
    "an_image_near_a_refusal_that_is_not_the_registrys": (
        ["Using us-docker.pkg.dev/acme-ml/images/trainer:1", "403 Forbidden for https://example.com/data"],
        {},
        {"repository": "images", "repository_location": "us", "repository_project": "acme-ml"},
    ),
    "an_image_with_the_permission_already_known": (
        ["Failed to pull image us-docker.pkg.dev/acme-ml/images/trainer:1: 403 Forbidden"],
        {"permission": "storage.objects.get"},
        {
            "permission": "storage.objects.get",
            "repository": "images",
            "repository_location": "us",
            "repository_project": "acme-ml",
        },
    ),
    "principal_and_the_account_gcloud_ran_as": (
        [
            "ERROR: (gcloud.ai.custom-jobs.create) bob@example.com does not have permission; authenticated as "
            "'alice@example.com'"
        ],
        {},
        {
            "platform": "google", "principal": "bob@example.com", "submitter_email": "alice@example.com",
            "gcloud_command": "ai.custom-jobs.create",
        },  # fmt: skip
    ),
    "gcloud_names_the_command_and_the_project_it_could_not_access": (
        [
            "ERROR: (gcloud.ml-engine.jobs.submit.training) User [sa-1@acme-ml.iam.gserviceaccount.com] does not "
            "have permission to access project [acme-ml] (or it may not exist)"
        ],
        {},
        {
            "platform": "google", "principal": "sa-1@acme-ml.iam.gserviceaccount.com",
            "gcloud_command": "ml-engine.jobs.submit.training", "named_project": "acme-ml",
        },  # fmt: skip
    ),
    "known_principal_and_submitter_are_kept": (
        ["bob@example.com does not have access; authenticated as 'alice@example.com'"],
        {"principal": "carol@example.com", "submitter_email": "dave@example.com"},
        {"principal": "carol@example.com", "submitter_email": "dave@example.com"},
    ),
    "principal_after_the_word_principal": (
        ["principal 'serviceAccount:trainer@acme-ml.iam.gserviceaccount.com' lacks it"],
        {},
        {"platform": "google", "principal": "trainer@acme-ml.iam.gserviceaccount.com"},
    ),
    "principal_after_caller": (
        ["Caller: 'bob@example.com' does not have access"],
        {},
        {"principal": "bob@example.com"},
    ),
    # ---- resource names
    "secret_version": (
        [
            "Permission 'secretmanager.versions.access' denied for resource "
            "'projects/acme-ml/secrets/hf-token/versions/latest'"
        ],
        {},
        {"permission": "secretmanager.versions.access", "secret": "hf-token", "secret_project": "acme-ml"},
    ),
    "a_name_with_an_odd_number_of_parts": (
        ["Permission 'secretmanager.versions.list' denied on 'projects/acme-ml/secrets/hf-token/versions'"],
        {},
        {"permission": "secretmanager.versions.list", "secret": "hf-token", "secret_project": "acme-ml"},
    ),
    "topic": (
        ["Permission 'pubsub.topics.publish' denied on resource 'projects/acme-ml/topics/train-metrics'"],
        {},
        {"permission": "pubsub.topics.publish", "topic": "train-metrics", "topic_project": "acme-ml"},
    ),
    "subscription": (
        ["Permission 'pubsub.subscriptions.consume' denied on resource 'projects/acme-ml/subscriptions/train-events'"],
        {},
        {
            "permission": "pubsub.subscriptions.consume",
            "subscription": "train-events",
            "subscription_project": "acme-ml",
        },
    ),
    "kms_key": (
        [
            "Permission 'cloudkms.cryptoKeyVersions.useToDecrypt' denied on resource "
            "'projects/acme-ml/locations/europe-west4/keyRings/train/cryptoKeys/data'"
        ],
        {},
        {
            "platform": "google",
            "permission": "cloudkms.cryptoKeyVersions.useToDecrypt",
            "kms_key": "data",
            "kms_keyring": "train",
            "kms_location": "europe-west4",
            "kms_project": "acme-ml",
        },
    ),
    "a_key_ring_without_a_key_names_only_the_project": (
        [
            "Permission 'cloudkms.keyRings.get' denied on resource "
            "'projects/acme-ml/locations/europe-west4/keyRings/train'"
        ],
        {},
        {"platform": "google", "permission": "cloudkms.keyRings.get", "named_project": "acme-ml"},
    ),
    "repository_name": (
        [
            'Permission "artifactregistry.repositories.downloadArtifacts" denied on resource '
            '"projects/acme-ml/locations/europe-west4/repositories/trainers"'
        ],
        {},
        {
            "platform": "google",
            "permission": "artifactregistry.repositories.downloadArtifacts",
            "repository": "trainers",
            "repository_location": "europe-west4",
            "repository_project": "acme-ml",
        },
    ),
    "service_account_name": (
        [
            "Permission 'iam.serviceAccounts.getAccessToken' denied on resource "
            "projects/-/serviceAccounts/runner@acme-ml.iam.gserviceaccount.com"
        ],
        {},
        {
            "platform": "google",
            "permission": "iam.serviceAccounts.getAccessToken",
            "target_service_account": "runner@acme-ml.iam.gserviceaccount.com",
        },
    ),
    "a_service_account_by_unique_id_is_no_target": (
        ["Permission 'iam.serviceAccounts.get' denied on resource projects/-/serviceAccounts/112233445566"],
        {},
        {"permission": "iam.serviceAccounts.get"},
    ),
    "bigquery_table_name": (
        ["Permission 'bigquery.tables.getData' denied on projects/data-lake-1/datasets/events/tables/clicks"],
        {},
        {"permission": "bigquery.tables.getData", "table": "clicks", "bq_project": "data-lake-1", "dataset": "events"},
    ),
    "bigquery_dataset_full_name": (
        ["Permission 'bigquery.tables.list' denied on //bigquery.googleapis.com/projects/data-lake-1/datasets/events"],
        {},
        {"platform": "google", "permission": "bigquery.tables.list", "bq_project": "data-lake-1", "dataset": "events"},
    ),
    "another_services_datasets_are_not_bigquerys": (
        ["Permission 'example.things.get' denied on //example.googleapis.com/projects/acme-ml/datasets/x"],
        {},
        {"platform": "google", "permission": "example.things.get", "named_project": "acme-ml"},
    ),
    "vertex_resource": (
        [
            "Permission 'aiplatform.tensorboards.get' denied on resource "
            "'projects/acme-ml/locations/europe-west4/tensorboards/5077'"
        ],
        {},
        {
            "platform": "google",
            "permission": "aiplatform.tensorboards.get",
            "vertex_location": "europe-west4",
            "named_project": "acme-ml",
        },
    ),
    "a_location_alone_is_the_project": (
        ["Permission 'aiplatform.locations.get' denied on resource 'projects/acme-ml/locations/us-central1'"],
        {},
        {"platform": "google", "permission": "aiplatform.locations.get", "named_project": "acme-ml"},
    ),
    "bucket_name": (
        ["Permission 'storage.objects.get' denied on projects/_/buckets/acme-data/objects/x"],
        {},
        {"permission": "storage.objects.get", "bucket": "acme-data"},
    ),
    "an_unnamed_project_is_no_project": (
        ["Access to projects/_ denied for project acme-ml"],
        {},
        {"named_project": "acme-ml"},
    ),
    "neither_wildcard_project_is_a_project": (["Access to projects/- and projects/_ denied"], {}, {}),
    "bigquery_table_reference": (
        ["Access Denied: Table data-lake-1:events.clicks: User does not have permission"],
        {},
        {"bq_project": "data-lake-1", "dataset": "events", "table": "clicks"},
    ),
    "bigquery_dataset_reference": (
        ["Access Denied: Dataset data-lake-1:events: denied"],
        {},
        {"bq_project": "data-lake-1", "dataset": "events"},
    ),
    "a_table_reference_after_a_dataset_name_adds_the_table": (
        [
            "Permission 'bigquery.tables.list' denied on projects/data-lake-1/datasets/events",
            "Access Denied: Table data-lake-1:events.clicks",
        ],
        {},
        {"permission": "bigquery.tables.list", "bq_project": "data-lake-1", "dataset": "events", "table": "clicks"},
    ),
    "a_table_name_after_a_dataset_reference_adds_the_table": (
        [
            "Access Denied: Dataset data-lake-1:events",
            "Permission 'bigquery.tables.getData' denied on projects/data-lake-1/datasets/events/tables/clicks",
        ],
        {},
        {
            "permission": "bigquery.tables.getData",
            "bq_project": "data-lake-1",
            "dataset": "events",
            "table": "clicks",
        },
    ),
    "domain_scoped_project": (
        [
            "Access Denied: Project google.com:cluster-data: User does not have bigquery.jobs.create permission in "
            "project google.com:cluster-data."
        ],
        {},
        {"permission": "bigquery.jobs.create", "named_project": "google.com:cluster-data"},
    ),
    # ---- which resource: the line naming the permission, then denial lines, then the rest; in order within each
    "the_line_naming_the_permission_beats_an_earlier_denial": (
        [
            "PERMISSION_DENIED on projects/_/buckets/first-bucket",
            "Permission 'storage.objects.get' denied on gs://second-bucket/x",
        ],
        {},
        {"platform": "google", "permission": "storage.objects.get", "bucket": "second-bucket"},
    ),
    "a_denial_line_beats_an_earlier_path": (
        ["reading gs://noise-bucket/x", "403 denied on gs://real-bucket/y"],
        {},
        {"platform": "google", "bucket": "real-bucket"},
    ),
    "the_earlier_line_wins_whatever_the_position_in_it": (
        ["step 1 of the run, all is well: gs://line-one/a", "x gs://line-two/b"],
        {},
        {"platform": "google", "bucket": "line-one"},
    ),
    "the_earlier_name_on_a_line_wins": (
        ["step 1 gs://aaa-one/a gs://bbb-two/b"],
        {},
        {"platform": "google", "bucket": "aaa-one"},
    ),
    # ---- Container Registry keeps images in a bucket
    "container_registry_bucket_by_host": (
        [
            "Error response from daemon: pull access denied for eu.gcr.io/acme-ml/trainer, denied: Token exchange "
            "failed for project 'acme-ml'. Caller does not have permission 'storage.buckets.get'."
        ],
        {},
        {
            "permission": "storage.buckets.get",
            "named_project": "acme-ml",
            "repository": "eu.gcr.io",
            "repository_location": "europe",
            "repository_project": "acme-ml",
            "bucket": "eu.artifacts.acme-ml.appspot.com",
        },
    ),
    "container_registry_bucket_of_gcr_io": (
        [
            "pull access denied for gcr.io/acme-ml/trainer, denied: Token exchange failed for project 'acme-ml'. "
            "Caller does not have permission 'storage.buckets.get'."
        ],
        {},
        {
            "permission": "storage.buckets.get",
            "named_project": "acme-ml",
            "repository": "gcr.io",
            "repository_location": "us",
            "repository_project": "acme-ml",
            "bucket": "artifacts.acme-ml.appspot.com",
        },
    ),
    "a_bucket_named_by_its_resource_name_is_kept": (
        [
            "Token exchange failed for project 'acme-ml'. Caller does not have permission 'storage.buckets.get' on "
            "projects/_/buckets/own-bucket"
        ],
        {},
        {"permission": "storage.buckets.get", "bucket": "own-bucket", "named_project": "acme-ml"},
    ),
    "a_bucket_named_by_its_path_is_kept": (
        [
            "Token exchange failed for project 'acme-ml'. Caller does not have permission 'storage.buckets.get' on "
            "gs://own-bucket"
        ],
        {},
        {"platform": "google", "permission": "storage.buckets.get", "bucket": "own-bucket", "named_project": "acme-ml"},
    ),
    "a_principal_that_lacks_a_permission_on_a_bare_project_id": (
        [
            'PermissionDenied: 403 The principal (user or service account) lacks IAM permission '
            '"cloudscheduler.jobs.create" for the resource "acme-ml-prod" (or the resource may not exist).'
        ],
        {},
        {"permission": "cloudscheduler.jobs.create", "named_project": "acme-ml-prod"},
    ),
    "a_resource_name_after_lacks_is_no_project_id": (
        ['The principal lacks IAM permission "storage.objects.get" for the resource "projects/_/buckets/acme-data".'],
        {},
        {"permission": "storage.objects.get", "bucket": "acme-data"},
    ),
    "a_service_agent_named_before_a_comma": (
        [
            'message: "Vertex AI Service Agent service-123456789@gcp-sa-aiplatform.iam.gserviceaccount.com, does not '
            'have required IAM permission(s) to the provided resource: Missing IAM permission: '
            'bigtable.tables.mutateRows."'
        ],
        {},
        {
            "platform": "google",
            "permission": "bigtable.tables.mutateRows",
            "principal": "service-123456789@gcp-sa-aiplatform.iam.gserviceaccount.com",
        },
    ),
    "no_registry_bucket_for_a_permission_outside_storage": (
        [
            "Token exchange failed for project 'acme-ml'. Caller does not have permission "
            "'artifactregistry.repositories.downloadArtifacts'."
        ],
        {},
        {"permission": "artifactregistry.repositories.downloadArtifacts", "named_project": "acme-ml"},
    ),
}


@pytest.mark.parametrize("name", sorted(PERMISSION_CASES))
def test_a_denial_is_read_into_exact_details(name: str) -> None:
    lines, before, expected = PERMISSION_CASES[name]
    assert read_permission(lines, before) == expected


def test_a_resource_value_replaces_what_a_signal_captured() -> None:
    assert read_permission(["403 denied on gs://acme-data.eu/x"], {"bucket": "acme-data"}) == {
        "bucket": "acme-data.eu",
        "platform": "google",
    }


# ---- quota and capacity -----------------------------------------------------------------------------------------

QUOTA_CASES: dict[str, tuple[list[str], dict[str, str], dict[str, str]]] = {
    "another_platform_gets_only_its_name": (
        ["botocore ResourceLimitExceeded: Insufficient 'NVIDIA_T4_GPUS' quota in region us-east1"],
        {"quota_metric": "NVIDIA_T4_GPUS"},
        {"quota_metric": "NVIDIA_T4_GPUS", "platform": "aws"},
    ),
    "a_signals_metric_in_an_ids_shape_is_the_id": (
        ["Quota 'TPUV4sPreemptiblePodPerProjectPerRegionForTPUAPI' exhausted. Limit 20800 in region us-central2"],
        {"quota_metric": "TPUV4sPreemptiblePodPerProjectPerRegionForTPUAPI"},
        {"platform": "google", "quota_id": "TPUV4sPreemptiblePodPerProjectPerRegionForTPUAPI", "region": "us-central2"},
    ),
    "a_compute_engine_metric_in_capitals": (
        ["Quota 'NVIDIA_T4_GPUS' exceeded. Limit: 1.0 in region us-central1."],
        {"quota_metric": "NVIDIA_T4_GPUS"},
        {"quota_metric": "compute.googleapis.com/nvidia_t4_gpus", "platform": "google", "region": "us-central1"},
    ),
    "another_metric_is_left_as_it_is": (
        ["Quota 'nvidia-t4' exceeded."],
        {"quota_metric": "custom.metric"},
        {"quota_metric": "custom.metric", "platform": "google"},
    ),
    "the_quota_ids_exceeded": (
        ["ERROR: The following quotas are exceeded: CustomModelTrainingT4GPUsPerProjectPerRegion"],
        {},
        {"quota_id": "CustomModelTrainingT4GPUsPerProjectPerRegion"},
    ),
    "limit_and_metric_names_on_a_later_line": (
        ["loading", "limit name = CPUS-per-project-region, metric name = compute.googleapis.com/cpus"],
        {},
        {"platform": "google", "quota_id": "CPUS-per-project-region", "quota_metric": "compute.googleapis.com/cpus"},
    ),
    "quota_exceeded_for_a_metric": (
        ["Quota exceeded for quota metric 'aiplatform.googleapis.com/custom_model_training_cpus' and limit 'x'"],
        {},
        {"platform": "google", "quota_metric": "aiplatform.googleapis.com/custom_model_training_cpus"},
    ),
    "a_metric_of_compute_engine_needs_no_service_guess": (
        ["Quota exceeded for quota metric 'compute.googleapis.com/cpus'"],
        {},
        {"platform": "google", "quota_metric": "compute.googleapis.com/cpus"},
    ),
    "an_id_of_compute_engine_needs_no_service_guess": (
        ["GCE: The following quotas are exceeded: CPUS-per-project-region"],
        {},
        {"platform": "google", "quota_id": "CPUS-per-project-region"},
    ),
    "short_of_a_regional_quota": (
        [
            "Error 403: Insufficient regional quota to satisfy request: resource \"CPUS\": request requires '72.0' and "
            "is short '48.0'. project has a quota of '24.0' with '24.0' available. View at "
            "https://console.cloud.google.com/iam-admin/quotas?usage=USED&project=acme-ml."
        ],
        {},
        {
            "platform": "google",
            "quota_metric": "compute.googleapis.com/cpus",
            "preferred_value": "72",
            "error_project": "acme-ml",
        },
    ),
    "insufficient_quota_of_a_compute_metric": (
        ["Insufficient 'NVIDIA_A100_GPUS' quota. Requested 8"],
        {},
        {"quota_metric": "compute.googleapis.com/nvidia_a100_gpus"},
    ),
    "a_request_for_region_and_amount": (
        ["Please request quota for region us-east1 to 16 NVIDIA_T4_GPUS or more"],
        {},
        {"region": "us-east1", "preferred_value": "16", "quota_metric": "compute.googleapis.com/nvidia_t4_gpus"},
    ),
    "gpu_family": (
        ["Quota 'GPUS_PER_GPU_FAMILY' exceeded. Limit: 0.0 in region us-central1. gpu_family: NVIDIA_H100"],
        {"quota_metric": "GPUS_PER_GPU_FAMILY"},
        {
            "quota_metric": "compute.googleapis.com/gpus_per_gpu_family",
            "platform": "google",
            "gpu_family": "NVIDIA_H100",
            "region": "us-central1",
        },
    ),
    "quota_failure_as_protobuf_text": (
        [
            'violations { quota_metric: "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus" '
            'quota_id: "CustomModelTrainingA100GPUsPerProjectPerRegion" }'
        ],
        {},
        {
            "platform": "google",
            "quota_metric": "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus",
            "quota_id": "CustomModelTrainingA100GPUsPerProjectPerRegion",
        },
    ),
    "an_id_stated_in_json_beside_a_numeric_limit": (
        ['{"quotaLimit": "1000", "quotaId": "CustomModelTrainingA100GPUsPerProjectPerRegion"}'],
        {},
        {"quota_id": "CustomModelTrainingA100GPUsPerProjectPerRegion"},
    ),
    "a_numeric_limit_is_no_id": (['{"quotaLimit": "1000"}'], {}, {}),
    "a_stated_id_does_not_replace_a_known_one": (
        ['{"quotaId": "CustomModelTrainingA100GPUsPerProjectPerRegion"}'],
        {"quota_id": "CPUS-per-project-region"},
        {"quota_id": "CPUS-per-project-region"},
    ),
    "zone_gives_the_region": (
        ["The zone 'us-central1-a' does not have enough resources available to fulfill the request."],
        {},
        {"region": "us-central1"},
    ),
    "region_named": (
        ["Resources are insufficient in region: us-central1. Try a different region"],
        {},
        {"region": "us-central1"},
    ),
    "a_known_region_is_kept": (
        ["Resources are insufficient in region: us-central1."],
        {"region": "europe-west4"},
        {"region": "europe-west4"},
    ),
    "region_dimension_in_protobuf_text_across_lines": (
        ["dimensions {", '  key: "region"', '  value: "europe-west4"', "}"],
        {},
        {"region": "europe-west4"},
    ),
    "a_global_limit": (
        ["Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 0.0 globally."],
        {},
        {"platform": "google", "quota_scope": "global"},
    ),
    "a_known_scope_is_kept": (
        ["Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 0.0 globally."],
        {"quota_scope": "region"},
        {"quota_scope": "region", "platform": "google"},
    ),
    "a_fractional_need": (
        ["requires '2.5' and is short '1.5'. project has a quota of '4.0' with '3.0' available"],
        {},
        {"preferred_value": "3.5"},
    ),
    "a_need_wrapped_across_lines": (  # a terminal or an issue tracker wrapped the sentence before "of"
        ["request requires '16.0' and is short '4.0'. project has a quota", " of '12.0' with '12.0' available."],
        {},
        {"preferred_value": "16"},
    ),
    "a_need_below_zero_is_zero": (
        ["requires '1' and is short '1'. project has a quota of '10' with '20' available"],
        {},
        {"preferred_value": "0"},
    ),
    "a_known_value_is_kept": (
        ["requires '1' and is short '1'. project has a quota of '10' with '2' available"],
        {"preferred_value": "12"},
        {"preferred_value": "12"},
    ),
    "an_accelerator_request": (
        ["The request for 16 nvidia-tesla-a100 accelerators exceeds the allowed maximum of 8"],
        {},
        {"preferred_value": "16"},
    ),
    "an_accelerator_request_keeps_a_known_value": (
        ["The request for 16 nvidia-tesla-a100 accelerators exceeds the allowed maximum of 8"],
        {"preferred_value": "4"},
        {"preferred_value": "4"},
    ),
    "the_project_an_error_names": (
        ["Quota exceeded for project acme-ml: resource exhausted"],
        {},
        {"error_project": "acme-ml"},
    ),
    "a_known_error_project_is_kept": (
        ["Quota exceeded for project acme-ml: resource exhausted"],
        {"error_project": "other-proj"},
        {"error_project": "other-proj"},
    ),
    "compute_engine_without_a_metric": (
        ["Node scale up in zones us-central1-c associated with this pod failed: quota exceeded.", "GCE quota exceeded"],
        {},
        # the autoscaler's zone gives the region whose quotas to read
        {"platform": "google", "quota_service": "compute.googleapis.com", "region": "us-central1"},
    ),
    "a_stockout_names_the_accelerator_and_machine": (
        [
            "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
            "A n1-highmem-2 VM instance with 2 nvidia-tesla-t4 accelerator(s) is currently unavailable in the "
            "us-west1-b zone.",
        ],
        {},
        {
            "platform": "google",
            "region": "us-west1",
            "accelerator_name": "nvidia-tesla-t4",
            "machine_type": "n1-highmem-2",
        },
    ),
    "a_stockout_keeps_known_names": (
        ["A n1-highmem-2 VM instance with 2 nvidia-tesla-t4 accelerator(s) is unavailable in the us-west1-b zone."],
        {"accelerator_name": "nvidia-l4", "machine_type": "g2-standard-4"},
        {"accelerator_name": "nvidia-l4", "machine_type": "g2-standard-4", "region": "us-west1"},
    ),
    "a_machine_without_an_accelerator": (
        ["An a2-highgpu-1g VM instance is currently unavailable in the us-central1-a zone."],
        {},
        {"region": "us-central1", "machine_type": "a2-highgpu-1g"},
    ),
}


@pytest.mark.parametrize("name", sorted(QUOTA_CASES))
def test_a_quota_failure_is_read_into_exact_details(name: str) -> None:
    lines, before, expected = QUOTA_CASES[name]
    assert read_quota(lines, before) == expected


def test_each_quota_phrasing_is_taken_from_the_first_line_that_has_it() -> None:
    lines = [
        "The following quotas are exceeded: CustomModelTrainingT4GPUsPerProjectPerRegion",
        "The following quotas are exceeded: CustomModelTrainingL4GPUsPerProjectPerRegion",
        "gpu_family: NVIDIA_L4",
    ]
    assert read_quota(lines) == {
        "quota_id": "CustomModelTrainingT4GPUsPerProjectPerRegion",
        "gpu_family": "NVIDIA_L4",
    }


def test_a_quota_the_signal_named_is_not_replaced_by_the_text() -> None:
    lines = ["Quota exceeded for quota metric 'aiplatform.googleapis.com/custom_model_training_cpus'"]
    assert read_quota(lines, {"quota_metric": "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"}) == {
        "quota_metric": "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus",
        "platform": "google",
    }
    compute = ["Insufficient 'NVIDIA_A100_GPUS' quota."]
    assert read_quota(compute, {"quota_metric": "aiplatform.googleapis.com/custom_model_training_cpus"}) == {
        "quota_metric": "aiplatform.googleapis.com/custom_model_training_cpus"
    }


# ---- a Cloud Storage JSON API call refused, no permission named: the call's path and method say which ------------

API = "https://storage.googleapis.com"


@pytest.mark.parametrize(
    ("line", "permission"),
    [
        (f"Forbidden: {API}/upload/storage/v1/b/acme-data/o", "storage.objects.create"),
        (f"403 GET {API}/download/storage/v1/b/acme-data/o/a%2Fb.csv?alt=media: Forbidden", "storage.objects.get"),
        (f"403 GET {API}/storage/v1/b/acme-data/o/a%2Fb.csv: Forbidden", "storage.objects.get"),
        (f"403 DELETE {API}/storage/v1/b/acme-data/o/a%2Fb.csv: Forbidden", "storage.objects.delete"),
        (f"403 PATCH {API}/storage/v1/b/acme-data/o/a%2Fb.csv: Forbidden", "storage.objects.update"),
        (f"403 GET {API}/storage/v1/b/acme-data/o?prefix=a: Forbidden", "storage.objects.list"),
        (f"403 POST {API}/storage/v1/b/acme-data/o: Forbidden", "storage.objects.create"),
        (f"403 GET {API}/storage/v1/b/acme-data?projection=noAcl: Forbidden", "storage.buckets.get"),
    ],
)
def test_a_refused_json_api_call_names_its_permission_and_bucket(line: str, permission: str) -> None:
    details = read_permission([line])
    assert (details.get("permission"), details.get("bucket")) == (permission, "acme-data")



def test_a_json_api_url_that_says_no_operation_leaves_the_decision_to_a_request_that_does() -> None:
    # a bare URL (no method, not an upload or a download) before the refused request: the request decides
    lines = [
        f"Bucket at {API}/storage/v1/b/acme-data/o?prefix=a",
        f"403 DELETE {API}/storage/v1/b/acme-data/o/x: denied",
    ]
    assert read_permission(lines).get("permission") == "storage.objects.delete"
    assert "permission" not in read_permission([f"Forbidden: {API}/storage/v1/b/acme-data/o?prefix=a"])
