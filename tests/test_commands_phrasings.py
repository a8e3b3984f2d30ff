"""Issue 11: each phrasing family of a Google Cloud denial gets one grant on the resource itself, and each quota
error gets a Cloud Quotas preference with its id filled. The lines are synthetic, written in the real formats
(gsutil / gcloud storage output, docker and containerd pulls, google.rpc.ErrorInfo and QuotaFailure details)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import load_knowledge
from bot.intake.log_input import text_to_lines
from bot.models import Diagnosis, JobInfo, WorkerPool
from tests.gcloud_parser import check_commands, gcloud_available, with_sample_values

SA = "trainer@acme-ml.iam.gserviceaccount.com"
JOB = JobInfo(
    job_id="8501620632646057984",
    project="acme-ml",
    region="us-central1",
    display_name="resnet-50",
    state="JOB_STATE_FAILED",
    service_account=SA,
)
H100_JOB = JOB.model_copy(  # 2 replicas of 8 H100s
    update={
        "worker_pools": [
            WorkerPool(
                machine_type="a3-highgpu-8g", accelerator_type="NVIDIA_H100_80GB", accelerator_count=8, replica_count=2
            )
        ]
    }
)
A100_JOB = JOB.model_copy(  # 3 replicas of 8 A100s
    update={
        "worker_pools": [
            WorkerPool(
                machine_type="a2-highgpu-8g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=8, replica_count=3
            )
        ]
    }
)
MEMBER = f"--member=serviceAccount:{SA}"
BUCKET_READ = (
    f"gcloud storage buckets add-iam-policy-binding gs://acme-train-data {MEMBER} --role=roles/storage.objectViewer"
)
REPOSITORY = (
    "gcloud artifacts repositories add-iam-policy-binding projects/acme-ml/locations/europe-west4/repositories/trainers"
)
AGENT = "service-123456789012@gcp-sa-aiplatform-cc.iam.gserviceaccount.com"  # Vertex AI's Custom Code Service Agent
PULL_JOB = JOB.model_copy(  # the CustomJob resource names the project number; its pool, the image it ran
    update={
        "name": "projects/123456789012/locations/europe-west4/customJobs/8501620632646057984",
        "worker_pools": [WorkerPool(image_uri="europe-west4-docker.pkg.dev/acme-ml/trainers/resnet:1.2")],
    }
)
PACKAGE_JOB = JOB.model_copy(  # a Python training application: its package sits in a staging bucket
    update={"worker_pools": [WorkerPool(package_uris=("gs://acme-staging/trainer/trainer-0.1.tar.gz",))]}
)
OUTPUT_JOB = JOB.model_copy(update={"base_output_directory": "gs://acme-ml-outputs/run-12"})  # where it writes
BUCKET_WRITE = (
    f"gcloud storage buckets add-iam-policy-binding gs://acme-ml-outputs {MEMBER} --role=roles/storage.objectCreator"
)
PACKAGE_AGENT = "service-123456789012@gcp-sa-aiplatform.iam.gserviceaccount.com"
PREFERENCE = "gcloud beta quotas preferences create"
JUSTIFICATION = "--justification='Vertex AI custom training'"

# (log, job, the one grant it must get)
GRANTS: dict[str, tuple[str, JobInfo | None, str]] = {
    # TensorFlow's Cloud Storage file system: the body names the permission and "the Google Cloud Storage object",
    # the bucket comes on the context line after it ("when initiating an upload to gs://B/...")
    "tensorflow_gcs_context_line": (
        "tensorflow.python.framework.errors_impl.PermissionDeniedError: Error executing an HTTP request: HTTP response "
        "code 403 with body '{\n  \"error\": {\n    \"code\": 403,\n    \"message\": \"trainer@acme-ml.iam."
        "gserviceaccount.com does not have storage.objects.create access to the Google Cloud Storage object.\",\n"
        '    \"errors\": [\n      {\n        \"domain\": \"global\",\n        \"reason\": \"forbidden\"\n'
        "      }\n    ]\n  }\n}\n'\n\t when initiating an upload to gs://acme-ckpts/run-7/model.ckpt-2000.index.tempstate1",
        JOB,
        f"gcloud storage buckets add-iam-policy-binding gs://acme-ckpts {MEMBER} --role=roles/storage.objectCreator",
    ),
    # Cloud Storage: the bucket named after the words "the Google Cloud Storage bucket|object", or in quotes
    "gcs_bucket_after_the_words": (
        f"AccessDeniedException: 403 {SA} does not have storage.objects.list access to the Google Cloud Storage "
        "bucket acme-train-data.",
        JOB,
        BUCKET_READ,
    ),
    "gcs_object_after_the_words": (
        f"403 {SA} does not have storage.objects.get access to the Google Cloud Storage object "
        "acme-train-data/shards/0001.tfrecord.",
        JOB,
        BUCKET_READ,
    ),
    # a refusal listing several permissions needs one role holding them all (Vertex AI Pipelines prints its message
    # inside a protobuf string, the bucket's quotes escaped): Storage Object User holds objects.get and .create
    "gcs_permissions_listed_need_one_role_for_all": (
        'message: "Failed to create pipeline job. Error: Service account `' + SA + '` does not have '
        "`[storage.objects.get, storage.objects.create]` IAM permission(s) to the bucket \\\"acme-pipeline-root\\\". "
        'Please either copy the files to the Google Cloud Storage bucket owned by your project, or grant the '
        'required IAM permission(s) to the service account.."',
        JOB,
        f"gcloud storage buckets add-iam-policy-binding gs://acme-pipeline-root {MEMBER} "
        "--role=roles/storage.objectUser",
    ),
    # listed permissions one role already holds (Data Viewer holds tables.get) keep that role
    "bq_permissions_listed_one_role_holds": (
        f"403 Access Denied: Table acme-ml:features.users: User {SA} does not have "
        "['bigquery.tables.get', 'bigquery.tables.getData'] permissions on it.",
        JOB,
        f"bq add-iam-policy-binding -t {MEMBER} --role=roles/bigquery.dataViewer acme-ml:features.users",
    ),
    # creating a bucket is checked on the project: the grant is there, on the project the error names (by its
    # number) or, when it names none, the project of the service account
    "gcs_bucket_create_on_project_number": (
        f"AccessDeniedException: 403 {SA} does not have storage.buckets.create access to project 123456789012.",
        None,
        f"gcloud projects add-iam-policy-binding 123456789012 {MEMBER} --role=roles/storage.admin --condition=None",
    ),
    "gcs_bucket_create_on_the_project": (
        f"Creating gs://acme-scratch/...\nAccessDeniedException: 403 {SA} does not have storage.buckets.create access "
        "to the Google Cloud project.",
        None,
        f"gcloud projects add-iam-policy-binding acme-ml {MEMBER} --role=roles/storage.admin --condition=None",
    ),
    # a Cloud Storage JSON API call refused with no permission named: its path says which operation was checked
    "gcs_json_api_upload_refused": (
        "ERROR: failed to transfer 'md5: 0f3a' - Forbidden: https://storage.googleapis.com/upload/storage/v1/b/"
        "acme-ckpt/o",
        JOB,
        f"gcloud storage buckets add-iam-policy-binding gs://acme-ckpt {MEMBER} --role=roles/storage.objectCreator",
    ),
    "gcs_json_api_object_read_refused": (
        "google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/download/storage/v1/b/"
        "acme-train-data/o/shards%2F0001.tfrecord?alt=media: Access denied.",
        JOB,
        BUCKET_READ,
    ),
    "gcs_json_api_listing_refused": (
        "HttpError 403 when requesting GET https://www.googleapis.com/storage/v1/b/acme-train-data/o?prefix=shards "
        "returned Forbidden",
        JOB,
        BUCKET_READ,
    ),
    "gcs_quoted_bucket": (
        f"403 {SA} does not have storage.objects.list access to 'acme-train-data'.",
        JOB,
        BUCKET_READ,
    ),
    # gsutil / gcloud storage refusing without naming the permission: the command's verb names it
    "gsutil_download": (
        "Copying gs://acme-train-data/train.csv...\nAccessDeniedException: 403 Forbidden",
        JOB,
        BUCKET_READ,
    ),
    "gsutil_upload": (
        "Copying file://model.pt [Content-Type=application/octet-stream]... to gs://acme-ckpt/run-7/model.pt\n"
        "AccessDeniedException: 403 Forbidden",
        JOB,
        f"gcloud storage buckets add-iam-policy-binding gs://acme-ckpt {MEMBER} --role=roles/storage.objectCreator",
    ),
    "gcloud_storage_ls": (
        "$ gcloud storage ls gs://acme-train-data/shards\nERROR: (gcloud.storage.ls) HTTPError 403: Forbidden",
        JOB,
        BUCKET_READ,
    ),
    # Artifact Registry / Container Registry refusing a pull or a push without naming the permission
    "artifact_registry_pull_v2_path": (
        'Error response from daemon: Head "https://europe-west4-docker.pkg.dev/v2/acme-ml/trainers/resnet/manifests/'
        '1.2": denied: Permission denied for "1.2" from request "/v2/acme-ml/trainers/resnet/manifests/1.2".',
        JOB,
        f"{REPOSITORY} {MEMBER} --role=roles/artifactregistry.reader",
    ),
    "artifact_registry_push": (
        "The push refers to repository [europe-west4-docker.pkg.dev/acme-ml/trainers/resnet]\n"
        'denied: Permission denied for "1.2" from request "/v2/acme-ml/trainers/resnet/blobs/uploads/".',
        JOB,
        f"{REPOSITORY} {MEMBER} --role=roles/artifactregistry.writer",
    ),
    "container_registry_pull_403": (
        'Error response from daemon: Head "https://gcr.io/v2/acme-ml/trainer/manifests/latest": denied: 403 Forbidden',
        JOB,
        "gcloud artifacts repositories add-iam-policy-binding projects/acme-ml/locations/us/repositories/gcr.io "
        f"{MEMBER} --role=roles/artifactregistry.reader",
    ),
    # google.rpc.ErrorInfo metadata naming the permission (a Python dict on one line)
    "errorinfo_metadata_dict": (
        "google.api_core.exceptions.PermissionDenied: 403 Permission denied. {'@type': "
        "'type.googleapis.com/google.rpc.ErrorInfo', 'reason': 'IAM_PERMISSION_DENIED', 'domain': "
        "'secretmanager.googleapis.com', 'metadata': {'permission': 'secretmanager.versions.access', 'resource': "
        "'projects/acme-ml/secrets/hf-token/versions/latest'}}",
        JOB,
        f"gcloud secrets add-iam-policy-binding projects/acme-ml/secrets/hf-token {MEMBER} "
        "--role=roles/secretmanager.secretAccessor",
    ),
    # "Grant the caller the roles/X role, or a custom role with the P permission", the project "to use"
    "role_with_the_permission": (
        "google.api_core.exceptions.PermissionDenied: 403 Caller does not have required permission to use project "
        "data-lake-1. Grant the caller the roles/serviceusage.serviceUsageConsumer role, or a custom role with the "
        "serviceusage.services.use permission, by visiting https://console.developers.google.com/iam-admin/iam/admin?"
        "project=data-lake-1 and then retry.",
        JOB,
        f"gcloud projects add-iam-policy-binding data-lake-1 {MEMBER} "
        "--role=roles/serviceusage.serviceUsageConsumer --condition=None",
    ),
    # act as: the account from --service-account=, the submitter gcloud says it ran as (or the user the error names)
    "act_as_submitter_and_flag": (
        "ERROR: (gcloud.ai.custom-jobs.create) PERMISSION_DENIED: Permission 'iam.serviceAccounts.actAs' denied on "
        "resource (or it may not exist). This command is authenticated as alice@example.com which is the active "
        "account specified by the [core/account] property.\n"
        "  called with --service-account=runner@acme-ml.iam.gserviceaccount.com",
        None,
        "gcloud iam service-accounts add-iam-policy-binding projects/-/serviceAccounts/runner@acme-ml.iam."
        "gserviceaccount.com --member=user:alice@example.com --role=roles/iam.serviceAccountUser",
    ),
    "act_as_user_named": (
        "google.api_core.exceptions.PermissionDenied: 403 Permission 'iam.serviceAccounts.actAs' denied on service "
        "account runner@acme-ml.iam.gserviceaccount.com (or it may not exist). Principal 'user:bob@example.com' "
        "does not have it.",
        None,
        "gcloud iam service-accounts add-iam-policy-binding projects/-/serviceAccounts/runner@acme-ml.iam."
        "gserviceaccount.com --member=user:bob@example.com --role=roles/iam.serviceAccountUser",
    ),
    # the poster replaced the project by a placeholder: the repository is still named, the job gives the project
    "placeholder_project_in_the_resource": (
        'Error response from daemon: Head "https://europe-west4-docker.pkg.dev/v2/<PROJECT_ID>/trainers/resnet/'
        'manifests/1.2": denied: Permission "artifactregistry.repositories.downloadArtifacts" denied on resource '
        '"projects/<PROJECT_ID>/locations/europe-west4/repositories/trainers" (or it may not exist)',
        JOB,
        f"{REPOSITORY} {MEMBER} --role=roles/artifactregistry.reader",
    ),
    # a service agent refused access to a repository: no permission named, reading the repository is what it needs
    "agent_refused_access_to_a_repository": (
        f"Failed to create pipeline job. Error: Vertex AI Service Agent {AGENT} does not have permission to access "
        "Artifact Registry repository projects/acme-ml/locations/europe-west4/repositories/trainers",
        JOB,
        f"{REPOSITORY} --member=serviceAccount:{AGENT} --role=roles/artifactregistry.reader",
    ),
    # a pull refused without naming the image: with the CustomJob known, its image's repository, granted to the
    # agent that pulls it (not the job's own service account)
    "registry_refusal_naming_no_image": (
        "Error response from daemon: unauthorized: You don't have the needed permissions to perform this operation, "
        "and you may have invalid credentials.",
        PULL_JOB,
        f"{REPOSITORY} --member=serviceAccount:{AGENT} --role=roles/artifactregistry.reader",
    ),
    # the permission is named, the repository is not: the job's image says which one was refused
    "registry_permission_naming_no_repository": (
        "403 Permission 'artifactregistry.repositories.downloadArtifacts' denied on resource (or it may not exist).",
        PULL_JOB,
        f"{REPOSITORY} --member=serviceAccount:{AGENT} --role=roles/artifactregistry.reader",
    ),
    # the platform could not read the job's Python package: the agent the error names reads that bucket's objects
    "package_paths_unreadable_by_the_agent": (
        "ERROR: (gcloud.ai.custom-jobs.create) FAILED_PRECONDITION: Field: package_uris Error: The provided GCS paths "
        f"cannot be read by service account {PACKAGE_AGENT}.",
        PACKAGE_JOB,
        f"gcloud storage buckets add-iam-policy-binding gs://acme-staging --member=serviceAccount:{PACKAGE_AGENT} "
        "--role=roles/storage.objectViewer",
    ),
    # the platform's own check that the job's output path is writable, refused for the identity it names: writing
    # there creates objects
    "output_path_unwritable_by_the_account": (
        "ERROR: (gcloud.ai-platform.jobs.submit.training) FAILED_PRECONDITION: Field: job_dir Error: The provided "
        f"GCS path gs://acme-train-data/runs/7 cannot be written by service account {SA}.",
        JOB,
        f"gcloud storage buckets add-iam-policy-binding gs://acme-train-data {MEMBER} "
        "--role=roles/storage.objectCreator",
    ),
    # a BigQuery Storage read session refused on the project it bills to, in TensorFlow I/O's words: creating the
    # session is what was checked
    "read_session_refused_on_the_billed_project": (
        "tensorflow.python.framework.errors_impl.PermissionDeniedError: Error reading from Cloud BigQuery: Permission "
        "denied on resource project acme-warehouse. [Op:IO>BigQueryReadSession]",
        JOB,
        f"gcloud projects add-iam-policy-binding acme-warehouse {MEMBER} --role=roles/bigquery.readSessionUser "
        "--condition=None",
    ),
    # BigQuery's extract job refused writing the export into Cloud Storage: the destination bucket lacks the grant
    "bigquery_export_write_refused": (
        "    extract_job = client.extract_table(table_ref, \"gs://acme-exports/covertype/train-*.csv\")\n"
        "    extract_job.result()\n"
        "google.api_core.exceptions.Forbidden: 403 Access Denied: BigQuery BigQuery: Permission denied while writing "
        "data.",
        JOB,
        f"gcloud storage buckets add-iam-policy-binding gs://acme-exports {MEMBER} --role=roles/storage.objectCreator",
    ),
    # a Cloud Run service's IAM policy change refused: Cloud Run Admin, on that one service
    "cloud_run_service_policy_refused": (
        "ERROR: (gcloud.run.services.add-iam-policy-binding) PERMISSION_DENIED: Permission 'run.services.setIamPolicy' "
        "denied on resource 'projects/acme-ml/locations/us-central1/services/model-server' (or resource may not "
        "exist).",
        JOB,
        f"gcloud run services add-iam-policy-binding model-server --project=acme-ml --region=us-central1 {MEMBER} "
        "--role=roles/run.admin",
    ),
    # gcsfuse refused while mounting the bucket: mounting lists it
    "gcsfuse_mount_refused": (
        "daemonize.Run: mountWithArgs: mountWithStorageHandle: fs.NewServer: create file system: SetUpBucket: "
        "OpenBucket: Bad credentials for bucket acme-train-data: permission denied",
        JOB,
        BUCKET_READ,
    ),
    # a Compute Engine lookup a launcher makes, checked on the project
    "compute_lookup_on_the_project": (
        '"message": "Required \'compute.regions.get\' permission for \'projects/data-lake-1/regions/us-central1\'"',
        JOB,
        f"gcloud projects add-iam-policy-binding data-lake-1 {MEMBER} --role=roles/compute.viewer --condition=None",
    ),
    # the permission named as what to ask the owner for
    "grant_you_the_permission": (
        "AccessDeniedException: 403 Additional permissions are required to view the metadata of this object. Ask the "
        "object owner to grant you 'storage.objects.get' permission for gs://acme-train-data/train/part-0.tfrecord",
        JOB,
        BUCKET_READ,
    ),
    # GKE refusing to create a Kubernetes RBAC object: an IAM permission checked on the project
    "gke_rbac_role_creation": (
        'Error from server (Forbidden): error when creating "rbac.yaml": clusterroles.rbac.authorization.k8s.io is '
        'forbidden: User "trainer@acme-ml.iam.gserviceaccount.com" cannot create '
        'clusterroles.rbac.authorization.k8s.io '
        'at the cluster scope: Required "container.clusterRoles.create" permission.',
        JOB,
        f"gcloud projects add-iam-policy-binding acme-ml {MEMBER} --role=roles/container.admin --condition=None",
    ),
    # impersonation refused on an account the error does not name: the grant is on that account, left to fill
    "token_creator_on_an_unnamed_account": (
        "ERROR: (gcloud.builds.submit) There was a problem refreshing your current auth tokens: ('Unable to acquire "
        "impersonated credentials', 'Permission \\'iam.serviceAccounts.getAccessToken\\' denied on resource (or it "
        "may not exist).')",
        JOB,
        f"gcloud iam service-accounts add-iam-policy-binding projects/-/serviceAccounts/TARGET_SERVICE_ACCOUNT {MEMBER}"
        " --role=roles/iam.serviceAccountTokenCreator",
    ),
    # gcloud's own refusal, its ErrorInfo printed as YAML: the permission and the project it was checked on
    "error_info_yaml_on_a_project": (
        "ERROR: (gcloud.services.enable) PERMISSION_DENIED: Permission denied to enable service "
        "[artifactregistry.googleapis.com]\n- '@type': type.googleapis.com/google.rpc.ErrorInfo\n"
        "  domain: serviceusage.googleapis.com\n  metadata:\n    permission: serviceusage.services.enable\n"
        "    resource: ml-platform-4711\n    service: serviceusage.googleapis.com\n  reason: AUTH_PERMISSION_DENIED",
        JOB,
        f"gcloud projects add-iam-policy-binding ml-platform-4711 {MEMBER} "
        "--role=roles/serviceusage.serviceUsageAdmin --condition=None",
    ),
    # the permission's collection in the singular: IAM's name is plural (bigquery.datasets.create)
    "bigquery_singular_collection": (
        "google.api_core.exceptions.Forbidden: 403 POST https://bigquery.googleapis.com/bigquery/v2/projects/"
        "acme-ml/datasets?prettyPrint=false: Access Denied: Project acme-ml: User does not have "
        "bigquery.dataset.create permission in project acme-ml.",
        JOB,
        f"gcloud projects add-iam-policy-binding acme-ml {MEMBER} --role=roles/bigquery.user --condition=None",
    ),
    # the TPU API's refusal, on the project the node name gives
    "tpu_node_lookup": (
        'googleapiclient.errors.HttpError: <HttpError 403 when requesting https://tpu.googleapis.com/v2/projects/'
        "acme-ml/locations/us-central2-b/nodes/pod-1?alt=json returned \"Permission 'tpu.nodes.get' denied on "
        "'projects/acme-ml/locations/us-central2-b/nodes/pod-1'\">",
        JOB,
        f"gcloud projects add-iam-policy-binding acme-ml {MEMBER} --role=roles/tpu.viewer --condition=None",
    ),
    # Compute Engine refusing a launcher's VM: a role whose name carries a version suffix
    "compute_instance_create": (
        '"message": "Required \'compute.instances.create\' permission for '
        "'projects/acme-ml/zones/us-central1-c/instances/trainer-0'\"",
        JOB,
        f"gcloud projects add-iam-policy-binding acme-ml {MEMBER} --role=roles/compute.instanceAdmin.v1"
        " --condition=None",
    ),
    # the permission in brackets and backticks, "IAM permission" after it (a service's FAILED_PRECONDITION)
    "bracketed_permission": (
        f"google.api_core.exceptions.FailedPrecondition: 400 Service account `{SA}` does not have "
        "`[storage.objects.get]` IAM permission to the input bucket gs://acme-train-data.",
        JOB,
        BUCKET_READ,
    ),
    # gcloud names the refused command, not the permission: the command's permission, on the project it names
    "gcloud_command_refused_for_a_service_account": (
        "ERROR: (gcloud.ai-platform.jobs.submit.training) User [trainer@acme-ml.iam.gserviceaccount.com] does not "
        "have permission to access project [acme-ml] (or it may not exist): Permission denied on resource project "
        "acme-ml.",
        None,
        f"gcloud projects add-iam-policy-binding acme-ml {MEMBER} --role=roles/ml.developer --condition=None",
    ),
    "gcloud_command_refused_for_a_person": (
        "ERROR: (gcloud.compute.tpus.tpu-vm.create) User [alice@acme.com] does not have permission to access project "
        "[acme-ml] (or it may not exist): Permission denied on resource project acme-ml.",
        JOB,
        "gcloud projects add-iam-policy-binding acme-ml --member=user:alice@acme.com --role=roles/tpu.admin "
        "--condition=None",
    ),
    # gsutil ran on the credentials of the person it names: the grant on the bucket is theirs
    "gsutil_refused_for_a_person": (
        "AccessDeniedException: 403 alice@acme.com does not have storage.objects.list access to acme-train-data.",
        JOB,
        "gcloud storage buckets add-iam-policy-binding gs://acme-train-data --member=user:alice@acme.com "
        "--role=roles/storage.objectViewer",
    ),
    # a GKE cluster created by a training launcher: Cluster Admin, not Kubernetes Engine Admin
    "gke_cluster_create": (
        "googleapiclient.errors.HttpError: <HttpError 403 when requesting https://container.googleapis.com/v1/projects/"
        'acme-ml/zones/us-central1-a/clusters?alt=json returned "Required "container.clusters.create" permission(s) '
        'for "projects/acme-ml".">',
        JOB,
        f"gcloud projects add-iam-policy-binding acme-ml {MEMBER} --role=roles/container.clusterAdmin --condition=None",
    ),
    # a retraining schedule refused: Google's API error names a bare project id as the resource
    "scheduler_job_on_a_bare_project_id": (
        'google.api_core.exceptions.PermissionDenied: 403 The principal (user or service account) lacks IAM permission '
        '"cloudscheduler.jobs.create" for the resource "ml-platform-4711" (or the resource may not exist).',
        JOB,
        f"gcloud projects add-iam-policy-binding ml-platform-4711 {MEMBER} --role=roles/cloudscheduler.admin"
        " --condition=None",
    ),
    # building the training image: gcloud names the command only; a role named after its collection
    "gcloud_builds_submit_refused": (
        "Uploading tarball of [.] to [gs://acme-ml_cloudbuild/source/1700000000.1-abc.tgz]\n"
        "ERROR: (gcloud.builds.submit) PERMISSION_DENIED: The caller does not have permission",
        JOB,
        f"gcloud projects add-iam-policy-binding acme-ml {MEMBER} --role=roles/cloudbuild.builds.editor"
        " --condition=None",
    ),
    # Vertex AI's Cloud Storage FUSE mount (/gcs/BUCKET/...): a file operation refused there is the bucket refusing
    # the job's identity; what the code did (a writer, a directory to create, else a read) names the permission
    "fuse_path_write_from_python": (
        '  File "/opt/conda/lib/python3.10/site-packages/torch/serialization.py", line 618, in save\n'
        "    with _open_zipfile_writer(f) as opened_zipfile:\n"
        "PermissionError: [Errno 13] Permission denied: '/gcs/acme-ml-outputs/run-12/model.pt'",
        JOB,
        BUCKET_WRITE,
    ),
    "fuse_path_read_from_python": (
        '  File "/app/data.py", line 40, in __getitem__\n    with open(self.files[idx], "rb") as f:\n'
        "PermissionError: [Errno 13] Permission denied: '/gcs/acme-train-data/shards/part-00017.parquet'",
        JOB,
        BUCKET_READ,
    ),
    "fuse_path_from_the_shell": (
        "+ cp -r /tmp/checkpoints /gcs/acme-ml-outputs/ckpt\n"
        "cp: cannot create directory '/gcs/acme-ml-outputs/ckpt': Permission denied",
        JOB,
        BUCKET_WRITE,
    ),
    # gcsfuse's own log names the object, not the bucket: a refused write goes where the job writes, its output
    # gcsfuse answers a refused listing with EIO: the bucket it said it mounted, listed
    "gcsfuse_mount_then_io_error_listing": (
        "$ gcsfuse --implicit-dirs acme-train-data /mnt/data\n"
        'I0412 10:02:11.004 Mounting file system "acme-train-data"...\n'
        "I0412 10:02:11.021 File system has been successfully mounted.\n"
        "ls: reading directory '/mnt/data': Input/output error",
        JOB,
        BUCKET_READ,
    ),
    # ... and a read failing far below the mount's own lines: the bucket is still the one mounted
    "gcsfuse_mount_far_above_a_read_error": (
        'I0412 10:02:11.004 Mounting file system "acme-train-data"...\n'
        + "".join(f"step {i}: loading shard {i}\n" for i in range(12))
        + "OSError: [Errno 5] Input/output error: '/mnt/data/shards/shard-0012.parquet'",
        JOB,
        BUCKET_READ,
    ),
    "gcsfuse_refused_write_in_the_jobs_output": (
        'E1203 09:14:02.118201 gcs: Req 0x1c: -> CreateObject("logs/events.out.tfevents") (31.2ms): error in '
        "closing writer : googleapi: Error 403: Access denied., forbidden",
        OUTPUT_JOB,
        BUCKET_WRITE,
    ),
    # gRPC's bare "The caller does not have permission" names no permission: the client method in the traceback
    # above it does (knowledge/tables/client_call_permissions.yaml); the project a denial names is where to grant
    "client_call_vertex_job_on_the_project_named": (
        "Traceback (most recent call last):\n"
        '  File "/app/launch.py", line 40, in <module>\n    job.run(service_account=SA)\n'
        '  File "/usr/local/lib/python3.10/site-packages/google/cloud/aiplatform/jobs.py", line 1863, in submit\n'
        "    self._gca_resource = self.api_client.create_custom_job(\n"
        '  File "/usr/local/lib/python3.10/site-packages/google/cloud/aiplatform_v1/services/job_service/client.py", '
        "line 876, in create_custom_job\n    response = rpc(\n"
        '  File "/usr/local/lib/python3.10/site-packages/google/api_core/grpc_helpers.py", line 78, in '
        "error_remapped_callable\n"
        "google.api_core.exceptions.PermissionDenied: 403 Permission denied on resource project acme-prod-ml.",
        JOB,
        f"gcloud projects add-iam-policy-binding acme-prod-ml {MEMBER} --role=roles/aiplatform.user --condition=None",
    ),
    "client_call_storage_download_bare_caller_refusal": (
        "Traceback (most recent call last):\n"
        '  File "/app/data.py", line 12, in fetch\n    blob.download_to_filename(local)\n'
        '  File "/usr/local/lib/python3.10/site-packages/google/cloud/storage/blob.py", line 1303, in '
        "download_to_filename\n"
        "google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/download/storage/v1/b/"
        "acme-train-data/o/labels.csv?alt=media: The caller does not have permission",
        JOB,
        BUCKET_READ,
    ),
    # the Cloud Storage JSON API request an error quotes names the permission it needed: a listing, an upload
    "storage_json_request_listing_with_no_permission_named": (
        "google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/storage/v1/b/acme-train-data/o"
        "?projection=noAcl&prefix=train%2F&prettyPrint=false: Access denied.",
        JOB,
        BUCKET_READ,
    ),
    "storage_json_request_upload_with_no_permission_named": (
        "google.api_core.exceptions.Forbidden: 403 PUT https://storage.googleapis.com/upload/storage/v1/b/"
        "acme-ml-outputs/o?uploadType=resumable&upload_id=ADPycdu: Access denied.",
        JOB,
        BUCKET_WRITE,
    ),
    # a resource name that ends a sentence: its full stop is not part of the repository id
    "repository_name_at_the_end_of_a_sentence": (
        "google.api_core.exceptions.FailedPrecondition: 400 Failed to create pipeline job. Error: Vertex AI Service "
        "Agent service-123456789012@gcp-sa-aiplatform.iam.gserviceaccount.com does not have permission to access "
        "Artifact Registry repository projects/acme-ml/locations/europe-west4/repositories/trainers.",
        JOB,
        f"{REPOSITORY} --member=serviceAccount:{PACKAGE_AGENT} --role=roles/artifactregistry.reader",
    ),
    # IAM's own wording when a person may not use the job's service account: the grant is to that person, on it
    "service_account_user_named_by_iam": (
        "google.api_core.exceptions.PermissionDenied: 403 The user does not have access to service account "
        "'trainer@acme-ml.iam.gserviceaccount.com'. User: 'alice@acme.com'. Ask a project owner to grant you the "
        "iam.serviceAccountUser role on the service account",
        JOB,
        "gcloud iam service-accounts add-iam-policy-binding projects/-/serviceAccounts/"
        "trainer@acme-ml.iam.gserviceaccount.com --member=user:alice@acme.com --role=roles/iam.serviceAccountUser",
    ),
    # the Vertex AI REST request an error quotes names the permission: a POST to a collection creates in it
    "vertex_rest_request_with_no_permission_named": (
        "google.api_core.exceptions.Forbidden: 403 POST https://us-central1-aiplatform.googleapis.com/v1/projects/"
        "acme-prod-ml/locations/us-central1/customJobs?%24alt=json%3Benum-encoding%3Dint: The caller does not have "
        "permission",
        JOB,
        f"gcloud projects add-iam-policy-binding acme-prod-ml {MEMBER} --role=roles/aiplatform.user --condition=None",
    ),
    # a Cloud TPU API request refused without a permission named: a URL naming one node, quoted without its method
    # (TPUClusterResolver's look-up through googleapiclient), is a tpu.nodes.get - the read-only role, on its project
    "tpu_node_lookup_with_no_permission_named": (
        "googleapiclient.errors.HttpError: <HttpError 403 when requesting https://tpu.googleapis.com/v1alpha1/projects/"
        "acme-tpu/locations/us-central1-b/nodes/trainer-v3?alt=json returned \"The caller does not have permission\">",
        JOB,
        f"gcloud projects add-iam-policy-binding acme-tpu {MEMBER} --role=roles/tpu.viewer --condition=None",
    ),
    # a dataset named with a project part that is no valid project id (sanitised): the dataset is still named, the
    # project is left to fill (a value from a log enters a command only in its identifier's format)
    "bigquery_dataset_with_an_invalid_project_part": (
        "google.api_core.exceptions.Forbidden: 403 Access Denied: Dataset proj:features: The user "
        "trainer@acme-ml.iam.gserviceaccount.com does not have bigquery.datasets.get permission for dataset "
        "proj:features.",
        JOB,
        f"bq add-iam-policy-binding -d {MEMBER} --role=roles/bigquery.metadataViewer BQ_PROJECT:features",
    ),
    "client_call_bigquery_query_from_windows": (
        "Traceback (most recent call last):\n"
        '  File "C:\\work\\train.py", line 8, in <module>\n    rows = client.query(SQL).result()\n'
        '  File "C:\\Python311\\Lib\\site-packages\\google\\cloud\\bigquery\\client.py", line 3403, in query\n'
        "google.api_core.exceptions.Forbidden: 403 The caller does not have permission",
        JOB,
        f"gcloud projects add-iam-policy-binding acme-ml {MEMBER} --role=roles/bigquery.jobUser --condition=None",
    ),
}

# (log, job, the title that names the cause, a command it must carry or None): refusals no IAM role fixes
NOT_A_ROLE: dict[str, tuple[str, str, str | None]] = {
    "oauth_scopes": (
        "google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/storage/v1/b/acme-train-data"
        "/o?prefix=shards: Request had insufficient authentication scopes.",
        "The credentials' OAuth scopes do not cover this API (no IAM role is missing)",
        None,
    ),
    "oauth_scopes_grpc_reason": (
        'google.api_core.exceptions.PermissionDenied: 403 Request had insufficient authentication scopes. '
        '[reason: "ACCESS_TOKEN_SCOPE_INSUFFICIENT"\ndomain: "googleapis.com"',
        "The credentials' OAuth scopes do not cover this API (no IAM role is missing)",
        None,
    ),
    # a BigQuery table over Google Drive files: the token lacks the Drive scope, no role is missing
    "bigquery_drive_table_without_the_drive_scope": (
        "google.api_core.exceptions.Forbidden: 403 Access Denied: BigQuery BigQuery: Permission denied while "
        "getting Drive credentials.",
        "The credentials' OAuth scopes do not cover this API (no IAM role is missing)",
        None,
    ),
    "no_default_credentials": (
        "google.auth.exceptions.DefaultCredentialsError: File /secrets/key.json was not found.",
        "The job found no usable Google credentials",
        None,
    ),
    "go_client_without_credentials": (
        "2025/04/28 13:43:43.084844 Failed to open connection: GetTokenSource: DefaultTokenSource: google: could not "
        "find default credentials. See https://cloud.google.com/docs/authentication/external/set-up-adc",
        "The job found no usable Google credentials",
        None,
    ),
    # a 401 / gRPC UNAUTHENTICATED: the request carried no valid credentials at all, so no role was checked
    "invalid_credentials_401": (
        "google.api_core.exceptions.Unauthenticated: 401 Request had invalid authentication credentials. Expected "
        "OAuth 2 access token, login cookie or other valid authentication credential.",
        "The job found no usable Google credentials",
        None,
    ),
    # TensorFlow's Cloud Storage file system (tf.io.gfile) passing on Google's 401, its body cut off: no credentials
    "tf_gcs_filesystem_401": (
        "tensorflow.python.framework.errors_impl.PermissionDeniedError: Error executing an HTTP request: HTTP response "
        "code 401 with body '{",
        "The job found no usable Google credentials",
        None,
    ),
    "volume_driver_unauthenticated": (
        'Warning  FailedMount  12s (x8 over 2m)  kubelet  MountVolume.SetUp failed for volume "training-data" : '
        "rpc error: code = Unauthenticated desc = failed to get GCS token source: the Kubernetes service account is "
        "not bound to a Google service account",
        "The job found no usable Google credentials",
        None,
    ),
    "anonymous_caller": (
        "google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/storage/v1/b/acme-train-data/o"
        "/shards%2F0001: Anonymous caller does not have storage.objects.get access to the Google Cloud Storage "
        "object.",
        "The job found no usable Google credentials",
        None,
    ),
    # Artifact Registry refusing a docker push that carried no credentials (no credential helper for the host)
    "registry_push_unauthenticated": (
        'denied: Unauthenticated request. Unauthenticated requests do not have permission '
        '"artifactregistry.repositories.uploadArtifacts" on resource "projects/acme-ml/locations/us/repositories/'
        'gcr.io" (or it may not exist)',
        "The job found no usable Google credentials",
        None,
    ),
    # gsutil's wording: the permission it checked follows on the same line, and the caller is still anonymous
    "anonymous_caller_with_the_permission_named": (
        "AccessDeniedException: 401 Anonymous caller does not have storage.objects.list access to the Google Cloud "
        "Storage bucket. Permission 'storage.objects.list' denied on resource (or it may not exist).",
        "The job found no usable Google credentials",
        None,
    ),
    # a client's HTTP debug dump: the request to a Google API, then the response's status line, a 401
    "http_debug_dump_401": (
        "http: ========== REQUEST:\nPOST https://bigquery.googleapis.com/bigquery/v2/projects/acme-ml/jobs HTTP/1.1\n"
        "Host: bigquery.googleapis.com\n\nhttp: ========== RESPONSE:\nHTTP/1.1 401 Unauthorized\n"
        "Www-Authenticate: Bearer realm=\"https://accounts.google.com/\"",
        "The job found no usable Google credentials",
        None,
    ),
    # refusals by services outside Google Cloud: their own advice, no Google role, no gcloud grant
    "hugging_face_gated_repository": (
        "huggingface_hub.errors.GatedRepoError: 403 Client Error. Cannot access gated repo for url "
        "https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json.",
        "The Hugging Face Hub refused the model or dataset (no Google Cloud role is missing)",
        None,
    ),
    "aws_s3_access_denied": (
        "botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling the GetObject operation: "
        "Access Denied",
        "AWS refused the call (no Google Cloud role is missing)",
        None,
    ),
    "kubernetes_rbac": (
        'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:train:launcher" cannot '
        'create resource "pods" in API group "" in the namespace "train"',
        "The Kubernetes API refused the pod's account (cluster RBAC, not a Google Cloud role)",
        None,
    ),
    # the same refusal inside a JSON body (its quotes escaped), and the older API servers' wording without "resource"
    "kubernetes_rbac_in_a_json_body": (
        '{"kind": "Status", "status": "Failure", "message": "mpijobs.kubeflow.org is forbidden: User '
        '\\"system:serviceaccount:research:default-editor\\" cannot create resource \\"mpijobs\\" in API group '
        '\\"kubeflow.org\\" in the namespace \\"research\\"", "reason": "Forbidden", "code": 403}',
        "The Kubernetes API refused the pod's account (cluster RBAC, not a Google Cloud role)",
        None,
    ),
    "kubernetes_rbac_older_wording": (
        'ERROR: Exception when creating the job: jaxjobs.kubeflow.org is forbidden: User '
        '"system:serviceaccount:team-a:runner" cannot create jaxjobs.kubeflow.org in the namespace "team-a"',
        "The Kubernetes API refused the pod's account (cluster RBAC, not a Google Cloud role)",
        None,
    ),
    "kaggle_competition_rules": (
        'HTTP response body: {"code":403,"message":"You must accept this competition\'s rules before you\'ll be able '
        'to download files."}',
        "The dataset's host refused the download until its rules are accepted (no Google Cloud role is missing)",
        None,
    ),
    "tracking_service_key": (
        "wandb: ERROR Error while calling W&B API: permission denied (<Response [403]>)",
        "An external service refused the job's API key (no Google Cloud role is missing)",
        None,
    ),
    # policies above IAM: a VPC Service Controls perimeter (its denial looked up by its id), an org policy constraint
    "vpc_service_controls_perimeter": (
        "google.api_core.exceptions.PermissionDenied: 403 Request is prohibited by organization's policy. "
        "vpcServiceControlsUniqueIdentifier: 7yT3d9Kx2qPm",
        "A VPC Service Controls perimeter blocked the request (no IAM role is missing)",
        "gcloud logging read 'protoPayload.metadata.@type=\"type.googleapis.com/google.cloud.audit."
        "VpcServiceControlAuditMetadata\" AND \"7yT3d9Kx2qPm\"' --project=acme-ml --freshness=7d --limit=5 "
        "--format=json",
    ),
    "organization_policy_constraint": (
        "google.api_core.exceptions.FailedPrecondition: 400 Constraint constraints/gcp.resourceLocations violated "
        "for project acme-ml: location europe-west4 is not allowed.",
        "An organization policy constraint refused the request (no IAM role is missing)",
        "gcloud resource-manager org-policies describe constraints/gcp.resourceLocations --project=acme-ml --effective",
    ),
    "organization_policy_constraint_named_after_the_verb": (
        "google.api_core.exceptions.FailedPrecondition: 400 The request violates constraint "
        "constraints/compute.vmExternalIpAccess for project acme-ml.",
        "An organization policy constraint refused the request (no IAM role is missing)",
        "gcloud resource-manager org-policies describe constraints/compute.vmExternalIpAccess --project=acme-ml "
        "--effective",
    ),
    "display_name_for_a_project": (
        "google.api_core.exceptions.PermissionDenied: 403 Permission denied on resource project Churn Model Prod.",
        "The request names a project by something that is not its project id",
        "gcloud projects list --format='table(projectId,name,projectNumber)'",
    ),
    "billing_disabled": (
        "google.api_core.exceptions.PermissionDenied: 403 This API method requires billing to be enabled. Please "
        "enable billing on project #123456789012 by visiting https://console.developers.google.com/billing/enable?"
        'project=123456789012 then retry. [reason: "BILLING_DISABLED"',
        "The project's billing account refuses the request (no IAM role is missing)",
        "gcloud billing projects describe acme-ml",
    ),
    "billing_account_closed": (
        "google.api_core.exceptions.Forbidden: 403 POST https://storage.googleapis.com/upload/storage/v1/b/"
        "acme-ml-outputs/o?uploadType=multipart: The billing account for the owning project is disabled in state "
        "absent",
        "The project's billing account refuses the request (no IAM role is missing)",
        "gcloud billing projects describe acme-ml",
    ),
    "api_not_enabled": (
        "google.api_core.exceptions.PermissionDenied: 403 BigQuery Storage API has not been used in project "
        "123456789012 before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/"
        "api/bigquerystorage.googleapis.com/overview?project=123456789012 then retry. [reason: "
        '"SERVICE_DISABLED"',
        "An API the job calls is not enabled in the project",
        "gcloud services enable bigquerystorage.googleapis.com --project=acme-ml",
    ),
}

# (log, job, the one preference it must get)
PREFERENCES: dict[str, tuple[str, JobInfo | None, str]] = {
    # a rate quota per region and base model: both dimensions, the model from the error
    "generative_model_rate_per_base_model": (
        "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for aiplatform.googleapis.com/"
        "generate_content_requests_per_minute_per_project_per_base_model with base model: gemini-1.5-flash. "
        "Please submit a quota increase request.",
        JOB,
        f"{PREFERENCE} --service=aiplatform.googleapis.com "
        "--quota-id=GenerateContentRequestsPerMinutePerProjectPerRegionPerBaseModel --preferred-value=PREFERRED_VALUE "
        "--dimensions=region=us-central1,base_model=gemini-1.5-flash --project=acme-ml "
        "--justification='Vertex AI model requests'",
    ),
    # ErrorInfo metadata as JSON: the metric and quota_location; the job's 3 x 8 A100s is the value
    "errorinfo_json": (
        '{"error": {"code": 429, "message": "Quota exceeded for quota metric \'Custom model training Nvidia A100 '
        "GPUs' and limit 'per region' of service 'aiplatform.googleapis.com' for consumer 'project_number:"
        '123456789012\'.", "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.'
        'ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED", "metadata": {"quota_metric": "aiplatform.googleapis.com/'
        'custom_model_training_nvidia_a100_gpus", "quota_location": "us-east4", "service": '
        '"aiplatform.googleapis.com"}}]}}',
        A100_JOB,
        f"{PREFERENCE} --service=aiplatform.googleapis.com --quota-id=CustomModelTrainingA100GPUsPerProjectPerRegion "
        f"--preferred-value=24 --dimensions=region=us-east4 --project=acme-ml {JUSTIFICATION}",
    ),
    # QuotaFailure as protobuf text: quota_id, and the region in quota_dimensions on lines of their own
    "quota_failure_proto_text": (
        "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded. [violations {\n"
        '  quota_metric: "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"\n'
        '  quota_id: "CustomModelTrainingT4GPUsPerProjectPerRegion"\n'
        "  quota_dimensions {\n"
        '    key: "region"\n'
        '    value: "us-east1"\n'
        "  }\n"
        "  quota_value: 4\n"
        "}\n"
        "]",
        JOB,
        f"{PREFERENCE} --service=aiplatform.googleapis.com --quota-id=CustomModelTrainingT4GPUsPerProjectPerRegion "
        f"--preferred-value=PREFERRED_VALUE --dimensions=region=us-east1 --project=acme-ml {JUSTIFICATION}",
    ),
    # ErrorInfo as protobuf text: its metadata map puts each key and value on lines of their own (the metric, the
    # limit, which is the id, and the location, which is not the job's region)
    "errorinfo_proto_text_metadata": (
        "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for quota metric 'Custom model training "
        "Nvidia B200 GPUs' and limit 'per region'. [reason: \"RATE_LIMIT_EXCEEDED\"\n"
        'domain: "googleapis.com"\n'
        'metadata {\n  key: "quota_metric"\n'
        '  value: "aiplatform.googleapis.com/custom_model_training_nvidia_b200_gpus"\n}\n'
        'metadata {\n  key: "quota_location"\n  value: "europe-west4"\n}\n'
        'metadata {\n  key: "quota_limit"\n  value: "CustomModelTrainingB200GPUsPerProjectPerRegion"\n}\n'
        'metadata {\n  key: "quota_limit_value"\n  value: "0"\n}\n'
        "]",
        JOB,
        f"{PREFERENCE} --service=aiplatform.googleapis.com --quota-id=CustomModelTrainingB200GPUsPerProjectPerRegion "
        f"--preferred-value=PREFERRED_VALUE --dimensions=region=europe-west4 --project=acme-ml {JUSTIFICATION}",
    ),
    # quota_limit names the id; a numeric quotaLimit beside it is the limit's value, never an id
    "quota_limit_is_the_id": (
        "429 RESOURCE_EXHAUSTED. {'reason': 'RATE_LIMIT_EXCEEDED', 'metadata': {'quota_metric': "
        "'aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus', 'quotaLimit': '8', 'quota_limit': "
        "'CustomModelTrainingL4GPUsPerProjectPerRegion', 'quota_location': 'us-west1'}}",
        JOB,
        f"{PREFERENCE} --service=aiplatform.googleapis.com --quota-id=CustomModelTrainingL4GPUsPerProjectPerRegion "
        f"--preferred-value=PREFERRED_VALUE --dimensions=region=us-west1 --project=acme-ml {JUSTIFICATION}",
    ),
    # a Compute Engine metric the table lacks: its id follows Compute Engine's naming, regional or global
    "compute_metric_not_in_the_table": (
        "Error QUOTA_EXCEEDED: Instance 'trainer-0' creation failed: Quota 'NVIDIA_B200_GPUS' exceeded. Limit: 0.0 "
        "in region us-central1.",
        JOB,
        f"{PREFERENCE} --service=compute.googleapis.com --quota-id=NVIDIA-B200-GPUS-per-project-region "
        f"--preferred-value=PREFERRED_VALUE --dimensions=region=us-central1 --project=acme-ml {JUSTIFICATION}",
    ),
    "compute_global_metric_not_in_the_table": (
        "ERROR: (gcloud.compute.networks.create) Could not fetch resource:\n"
        " - Quota 'NETWORKS' exceeded. Limit: 5.0 globally.",
        JOB,
        f"{PREFERENCE} --service=compute.googleapis.com --quota-id=NETWORKS-per-project "
        f"--preferred-value=PREFERRED_VALUE --project=acme-ml {JUSTIFICATION}",
    ),
    # a Compute Engine GPU row of the table: the job's 2 x 8 H100s is the value
    "compute_h100_row": (
        "Error QUOTA_EXCEEDED: Instance 'trainer-0' creation failed: Quota 'NVIDIA_H100_GPUS' exceeded. Limit: 8.0 "
        "in region us-central1.",
        H100_JOB,
        f"{PREFERENCE} --service=compute.googleapis.com --quota-id=NVIDIA-H100-GPUS-per-project-region "
        f"--preferred-value=16 --dimensions=region=us-central1 --project=acme-ml {JUSTIFICATION}",
    ),
    # an id named Global... holds for all regions: no region dimension
    "global_id": (
        "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded. [violations {\n"
        '  quota_metric: "aiplatform.googleapis.com/global_online_prediction_requests_per_base_model"\n'
        '  quota_id: "GlobalOnlinePredictionRequestsPerMinutePerProjectPerBaseModel"\n'
        "}\n"
        "]",
        JOB,
        f"{PREFERENCE} --service=aiplatform.googleapis.com "
        "--quota-id=GlobalOnlinePredictionRequestsPerMinutePerProjectPerBaseModel --preferred-value=PREFERRED_VALUE "
        f"--project=acme-ml {JUSTIFICATION}",
    ),
    # the error names no quota, the CustomJob asked for 2 x 8 H100s: the Vertex AI quota those count against
    "no_quota_named_on_a_vertex_job": (
        "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for this project. Please request a quota "
        "increase.",
        H100_JOB,
        f"{PREFERENCE} --service=aiplatform.googleapis.com --quota-id=CustomModelTrainingH100GPUsPerProjectPerRegion "
        f"--preferred-value=16 --dimensions=region=us-central1 --project=acme-ml {JUSTIFICATION}",
    ),
    # the quota listed as YAML by `gcloud compute project-info describe`: the metric on a line of its own, the
    # project from the command; the job's 2 x 8 H100s is what the all-regions GPU quota must hold
    "project_info_yaml_listing": (
        "$ gcloud compute project-info describe --project data-lake-1 --flatten=quotas | grep -C1 GPUS_ALL_REGIONS\n"
        "  limit: 0.0\n  metric: GPUS_ALL_REGIONS\n  usage: 0.0",
        H100_JOB.model_copy(update={"project": None, "service_account": None}),
        f"{PREFERENCE} --service=compute.googleapis.com --quota-id=GPUS-ALL-REGIONS-per-project --preferred-value=16 "
        f"--project=data-lake-1 {JUSTIFICATION}",
    ),
}


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier(load_knowledge())


def _diagnose(classifier: Classifier, text: str, job: JobInfo | None) -> Diagnosis:
    return classifier.classify(text_to_lines(text), job)


@pytest.mark.parametrize("name", sorted(GRANTS))
def test_each_denial_phrasing_gets_exactly_its_grant_on_the_resource(classifier: Classifier, name: str) -> None:
    text, job, expected = GRANTS[name]
    diagnosis = _diagnose(classifier, text, job)
    assert diagnosis.failure_class == "permission_denied", diagnosis.public_dict()
    assert [c.command for c in diagnosis.commands if "add-iam-policy-binding" in c.command] == [expected]


@pytest.mark.parametrize("name", sorted(PREFERENCES))
def test_each_quota_error_form_gets_exactly_its_preference(classifier: Classifier, name: str) -> None:
    text, job, expected = PREFERENCES[name]
    diagnosis = _diagnose(classifier, text, job)
    assert diagnosis.failure_class == "quota_exhausted", diagnosis.public_dict()
    assert [c.command for c in diagnosis.commands if c.command.startswith(PREFERENCE)] == [expected]


@pytest.mark.parametrize("name", sorted(NOT_A_ROLE))
def test_a_refusal_no_role_fixes_says_its_cause_and_grants_nothing(classifier: Classifier, name: str) -> None:
    text, title, command = NOT_A_ROLE[name]
    diagnosis = _diagnose(classifier, text, JOB)
    assert diagnosis.failure_class == "permission_denied", diagnosis.public_dict()
    assert diagnosis.title == title
    commands = [c.command for c in diagnosis.commands]
    assert not [c for c in commands if "add-iam-policy-binding" in c], commands
    if command is not None:
        assert command in commands


def test_a_valid_project_id_after_denied_on_resource_project_stays_a_missing_role(classifier: Classifier) -> None:
    text = "google.api_core.exceptions.PermissionDenied: 403 Permission denied on resource project acme-ml."
    diagnosis = _diagnose(classifier, text, JOB)
    assert diagnosis.title == "The job's identity lacks an IAM permission"


def test_a_tpu_request_that_may_list_or_create_is_not_guessed_into_a_grant(classifier: Classifier) -> None:
    # the collection's URL quoted without its method: a listing (viewer) or a creation (admin), the path cannot say
    collection = "https://tpu.googleapis.com/v1/projects/acme-tpu/locations/us-central1-b/nodes"
    quoted = f'HttpError 403 when requesting {collection}?alt=json returned "The caller does not have permission"'
    assert not [c for c in _diagnose(classifier, quoted, JOB).commands if "add-iam-policy-binding" in c.command]
    # with its method the same path says which: a POST creates a node (the admin role)
    created = f"google.api_core.exceptions.Forbidden: 403 POST {collection}?nodeId=t1: The caller does not have access"
    commands = _diagnose(classifier, created, JOB).commands
    grants = [c.command for c in commands if "add-iam-policy-binding" in c.command]
    admin = f"gcloud projects add-iam-policy-binding acme-tpu {MEMBER} --role=roles/tpu.admin --condition=None"
    assert grants == [admin]


def test_a_permission_spread_over_protobuf_text_lines_is_read(classifier: Classifier) -> None:
    text = (
        "google.api_core.exceptions.PermissionDenied: 403 User not authorized to perform this action. [reason: "
        '"IAM_PERMISSION_DENIED"\ndomain: "iam.googleapis.com"\nmetadata {\n  key: "permission"\n'
        '  value: "pubsub.topics.publish"\n}\n]'
    )
    diagnosis = _diagnose(classifier, text, JOB)
    assert diagnosis.details["permission"] == "pubsub.topics.publish"  # never the host name before it
    assert diagnosis.details["role"] == "roles/pubsub.publisher"
    assert diagnosis.details["grant_on"] == "topic"


def test_an_image_logged_earlier_does_not_turn_another_denial_into_a_registry_grant(classifier: Classifier) -> None:
    text = (
        "Using image europe-west4-docker.pkg.dev/acme-ml/trainers/resnet:1.2\nstep 1 loss 0.9\nstep 2 loss 0.8\n"
        "step 3 loss 0.7\nstep 4 loss 0.6\ngoogle.api_core.exceptions.Forbidden: 403 POST https://bigquery.googleapis"
        ".com/bigquery/v2/projects/data-lake-1/jobs: Access Denied: Project data-lake-1: User does not have "
        "bigquery.jobs.create permission in project data-lake-1."
    )
    diagnosis = _diagnose(classifier, text, JOB)
    assert [c.command for c in diagnosis.commands if "add-iam-policy-binding" in c.command] == [
        f"gcloud projects add-iam-policy-binding data-lake-1 {MEMBER} --role=roles/bigquery.jobUser --condition=None"
    ]


@pytest.mark.parametrize(
    ("text", "job", "failure_class", "member"),
    [
        (  # kubelet's words: the image on the line, the registry's 403 - a pull failure, the refusal read from it
            'Failed to pull image "europe-west4-docker.pkg.dev/acme-ml/trainers/resnet:1.2": failed to resolve '
            'reference: unexpected status from HEAD request to https://europe-west4-docker.pkg.dev/v2/acme-ml/'
            "trainers/resnet/manifests/1.2: 403 Forbidden",
            JOB,
            "container_startup",
            MEMBER,
        ),
        (  # the service says the pull failed, the registry that it refused the identity, the CustomJob which image
            "Unable to pull image, please check the image URI and its permissions.\nError response from daemon: "
            "unauthorized: You don't have the needed permissions to perform this operation.",
            PULL_JOB,
            "permission_denied",
            f"--member=serviceAccount:{AGENT}",
        ),
    ],
)
def test_an_image_pull_the_registry_refused_gets_the_grant_on_its_repository(
    classifier: Classifier, text: str, job: JobInfo, failure_class: str, member: str
) -> None:
    diagnosis = _diagnose(classifier, text, job)
    assert diagnosis.failure_class == failure_class, diagnosis.public_dict()
    assert [c.command for c in diagnosis.commands if "add-iam-policy-binding" in c.command] == [
        f"{REPOSITORY} {member} --role=roles/artifactregistry.reader"
    ]


def test_an_image_pull_that_failed_for_another_reason_gets_no_grant(classifier: Classifier) -> None:
    text = (
        'Failed to pull image "europe-west4-docker.pkg.dev/acme-ml/trainers/resnet:1.3": rpc error: code = NotFound '
        "desc = failed to pull and unpack image: manifest unknown"
    )
    diagnosis = _diagnose(classifier, text, PULL_JOB)
    assert diagnosis.failure_class == "container_startup"
    assert not [c for c in diagnosis.commands if "add-iam-policy-binding" in c.command]
    assert "permission" not in diagnosis.details


def test_a_start_up_failure_that_no_registry_refused_gets_no_grant(classifier: Classifier) -> None:
    text = (
        "Copying gs://acme-ml-staging/trainer-0.1.tar.gz...\nModuleNotFoundError: No module named 'trainer'"
    )
    diagnosis = _diagnose(classifier, text, PULL_JOB)
    assert diagnosis.failure_class == "container_startup", diagnosis.public_dict()
    assert not [c for c in diagnosis.commands if "add-iam-policy-binding" in c.command]
    assert "permission" not in diagnosis.details  # nothing was refused: no denial read into the details


def test_a_quota_error_naming_no_quota_gets_no_preference_without_the_jobs_accelerators(classifier: Classifier) -> None:
    text = "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for this project."
    assert not [c for c in _diagnose(classifier, text, JOB).commands if c.command.startswith(PREFERENCE)]
    gke = "Node scale up in zones us-central1-c associated with this pod failed: GCE quota exceeded."
    assert not [c for c in _diagnose(classifier, gke, H100_JOB).commands if c.command.startswith(PREFERENCE)]


def test_a_compute_quota_error_naming_no_quota_shows_each_quota_of_the_region_beside_its_limit(
    classifier: Classifier,
) -> None:
    gke = "Node scale up in zones asia-east1-a associated with this pod failed: GCE quota exceeded."
    commands = [c.command for c in _diagnose(classifier, gke, JOB).commands]
    assert (
        "gcloud compute regions describe asia-east1 --project=acme-ml --flatten=quotas "
        "--format='table(quotas.metric,quotas.usage,quotas.limit)'"
    ) in commands
    # an error that names its quota needs no such listing
    named = "Quota 'NVIDIA_T4_GPUS' exceeded. Limit: 0.0 in region asia-east1."
    assert not [c for c in _diagnose(classifier, named, JOB).commands if "regions describe" in c.command]


def test_a_quota_error_from_the_legacy_training_api_lists_that_services_quotas(classifier: Classifier) -> None:
    # gcloud ai-platform (Cloud ML Engine, ml.googleapis.com) names no metric: its quotas are not Vertex AI's
    text = (
        "ERROR: (gcloud.ai-platform.jobs.submit.training) HttpError accessing "
        "<https://ml.googleapis.com/v1/projects/acme-ml/jobs?alt=json>: response: <{'status': 429}>, content <{\n"
        '  "error": {\n    "code": 429,\n'
        '    "message": "Quota failure for project acme-ml. The request for 4 V100 accelerators exceeds the allowed '
        'maximum of 0 K80, 0 P100, 0 V100 accelerators.",\n    "status": "RESOURCE_EXHAUSTED"'
    )
    diagnosis = _diagnose(classifier, text, None)
    assert diagnosis.failure_class == "quota_exhausted", diagnosis.public_dict()
    commands = [c.command for c in diagnosis.commands]
    assert (
        "gcloud beta quotas info list --service=ml.googleapis.com --project=acme-ml "
        "--format='table(quotaId,metric,quotaDisplayName)'"
    ) in commands
    assert not [c for c in commands if "aiplatform.googleapis.com" in c]
    # a Vertex AI job's own quota error keeps Vertex AI's service
    vertex = "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for this project."
    listed = [c.command for c in _diagnose(classifier, vertex, JOB).commands if "quotas info list" in c.command]
    assert listed and all("--service=aiplatform.googleapis.com" in c for c in listed)


@pytest.mark.parametrize(
    ("event", "title"),
    [
        # a pod that no node has room for: cluster capacity (the node pool and its autoscaler first)
        (
            "Warning  FailedScheduling  2m   default-scheduler  0/6 nodes are available: 2 Insufficient cpu, "
            "6 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 No preemption victims found.",
            "No node in the cluster has room for the pod",
        ),
        # the cluster autoscaler finding no machines in the zone: a stockout
        (
            "Warning  FailedScaleUp  2m  cluster-autoscaler  Node scale up in zones us-central1-c associated with "
            "this pod failed: GCE out of resources. Pod is at risk of not being scheduled.",
            "Capacity stockout",
        ),
    ],
)
def test_capacity_a_cluster_reports_is_named_as_such_with_no_quota_request(
    classifier: Classifier, event: str, title: str
) -> None:
    diagnosis = _diagnose(classifier, event, H100_JOB)
    assert diagnosis.failure_class == "quota_exhausted"
    assert diagnosis.title.startswith(title)
    assert not [c for c in diagnosis.commands if "quotas preferences create" in c.command]


def test_a_quota_named_by_display_name_is_never_read_as_the_jobs_accelerator_quota(classifier: Classifier) -> None:
    # the error names its quota (a request rate), which the table has no id for: no preference for the job's A100s
    rate = (
        "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for quota metric 'Job or LRO submission "
        "requests' and limit 'Job or LRO submission requests per minute per region' of service "
        "'aiplatform.googleapis.com' for consumer 'project_number:123456789012'."
    )
    diagnosis = _diagnose(classifier, rate, A100_JOB)
    assert diagnosis.failure_class == "quota_exhausted"
    assert diagnosis.details["quota_named"] == "Job or LRO submission requests"
    assert not [c for c in diagnosis.commands if "CustomModelTrainingA100GPUs" in c.command]


def test_a_quota_of_another_region_leaves_the_jobs_own_commands_in_the_jobs_region(classifier: Classifier) -> None:
    # the job ran in us-central1 and its code called a model in us-west4: the quota is us-west4's, the job is not
    text = (
        "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for quota metric 'Generate Content API "
        "requests per minute' and limit 'per region'. [reason: \"RATE_LIMIT_EXCEEDED\"\n"
        'metadata {\n  key: "quota_metric"\n  value: "generativelanguage.googleapis.com/generate_content_requests"\n}\n'
        'metadata {\n  key: "quota_location"\n  value: "us-west4"\n}\n'
        'metadata {\n  key: "quota_limit"\n  value: "GenerateContentRequestsPerMinutePerProjectPerRegion"\n}\n]'
    )
    diagnosis = _diagnose(classifier, text, A100_JOB)
    commands = [c.command for c in diagnosis.commands]
    assert (
        f"{PREFERENCE} --service=generativelanguage.googleapis.com "
        "--quota-id=GenerateContentRequestsPerMinutePerProjectPerRegion --preferred-value=PREFERRED_VALUE "
        f"--dimensions=region=us-west4 --project=acme-ml {JUSTIFICATION}"
    ) in commands
    assert "gcloud ai custom-jobs describe 8501620632646057984 --region=us-central1 --project=acme-ml" in commands
    assert not [c for c in commands if "--region=us-west4" in c], commands
    # a model's request rate is no quota the job's A100s count against: no other region for the job's machines
    assert not [c for c in commands if c.startswith("gcloud ai custom-jobs create")], commands


def test_words_after_access_to_are_not_a_bucket_unless_a_storage_permission_says_so(classifier: Classifier) -> None:
    diagnosis = _diagnose(classifier, "Error: Forbidden access to resources.\nRaw response: 403 Forbidden", JOB)
    assert "bucket" not in diagnosis.details
    assert not [c for c in diagnosis.commands if "gs://" in c.command]


def test_every_compute_engine_row_follows_the_naming_the_fallback_uses() -> None:
    for row in load_knowledge().tables["quota_ids"].rows:
        if row.service != "compute.googleapis.com" or row.metric is None or row.quota_id is None:
            continue
        name = row.metric.split("/", 1)[1].upper().replace("_", "-")
        if name == "GPUS-PER-GPU-FAMILY":
            assert row.quota_id == f"{name}-per-project-region"
        else:
            assert row.quota_id == f"{name}-per-project" + ("" if row.scope == "global" else "-region"), row


@pytest.mark.skipif(not gcloud_available(), reason="the gcloud CLI is not installed")
def test_every_new_command_passes_the_real_gcloud_parser(classifier: Classifier, tmp_path: Path) -> None:
    commands = [expected for _, _, expected in (*GRANTS.values(), *PREFERENCES.values())]
    commands += [command for _, _, command in NOT_A_ROLE.values() if command]
    # gcloud's own parser checks gcloud commands; a `bq` grant is another tool's (its form: tests/test_commands.py)
    prepared = sorted({with_sample_values(c) for c in commands if c.startswith("gcloud ")})
    failures = [r for r in check_commands(prepared, tmp_path / "gcloud") if not r.parsed]
    assert not failures, "\n\n".join(f"{r.command}\n -> rc={r.returncode} {r.stderr[:300]}" for r in failures)


@pytest.mark.parametrize(
    "image",
    [
        "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-1:latest",
        "gcr.io/cloud-aiplatform/training/tf-gpu.2-11:latest",
        "gcr.io/deeplearning-platform-release/pytorch-gpu.1-13",
    ],
)
def test_a_refusal_naming_no_repository_is_never_read_as_googles_prebuilt_image(
    classifier: Classifier, image: str
) -> None:
    """Google's prebuilt training images are public: when the job ran one, a registry refusal naming no image was
    about some other image, and no grant on Google's own repository can fix it."""
    job = PULL_JOB.model_copy(update={"worker_pools": [WorkerPool(image_uri=image)]})
    for text in (
        "403 Permission 'artifactregistry.repositories.downloadArtifacts' denied on resource (or it may not exist).",
        "Error response from daemon: unauthorized: You don't have the needed permissions to perform this operation, "
        "and you may have invalid credentials.",
    ):
        diagnosis = _diagnose(classifier, text, job)
        grants = [c.command for c in diagnosis.commands if "add-iam-policy-binding" in c.command]
        assert not [g for g in grants if "vertex-ai" in g or "cloud-aiplatform" in g or "deeplearning" in g], grants
        assert diagnosis.details.get("repository") is None, diagnosis.details


def test_a_pull_granted_to_the_pulling_agent_is_checked_and_fixed_first_for_that_agent(classifier: Classifier) -> None:
    """When the grant goes to the agent that pulls the job's image, the other commands and the rerun's fix-first
    step name that agent too: asking IAM about the job's own account, or telling the user to grant it, would send
    them to the wrong identity."""
    from bot.chat.rerun_offer import rerun_offer

    text = "403 Permission 'artifactregistry.repositories.downloadArtifacts' denied on resource (or it may not exist)."
    diagnosis = _diagnose(classifier, text, PULL_JOB)
    commands = [c.command for c in diagnosis.commands]
    troubleshoot = [c for c in commands if "troubleshoot-policy" in c]
    assert troubleshoot and all(f"--principal-email={AGENT}" in c for c in troubleshoot), commands
    listing = [c for c in commands if "get-iam-policy" in c]
    assert listing and all(AGENT in c for c in listing), commands
    assert not [c for c in commands if SA in c], commands  # the job's own account was not the one refused
    offer = rerun_offer(classifier.kb, diagnosis, PULL_JOB)
    assert offer.mode == "fix_first" and offer.fix_first is not None and AGENT in offer.fix_first, offer
    assert SA not in offer.fix_first


def test_the_roles_listed_are_those_in_the_refused_resources_project_not_the_jobs(classifier: Classifier) -> None:
    """A job of acme-ml refused a secret of acme-ml-prod: the project-level roles that could cover the secret are
    acme-ml-prod's, so that is the project whose bindings are listed (the job's own project lists nothing useful)."""
    text = (
        "google.api_core.exceptions.PermissionDenied: 403 Permission 'secretmanager.versions.access' denied for "
        "resource 'projects/acme-ml-prod/secrets/hf-token/versions/latest' (or it may not exist)."
    )
    diagnosis = _diagnose(classifier, text, JOB)
    listing = [c.command for c in diagnosis.commands if "get-iam-policy" in c.command]
    assert listing and all(c.startswith("gcloud projects get-iam-policy acme-ml-prod ") for c in listing), listing
    assert all(f"serviceAccount:{SA}" in c for c in listing), listing
    # a bucket belongs to no project the error names: the job's project is listed
    bucket = "AccessDeniedException: 403 trainer@acme-ml.iam.gserviceaccount.com does not have storage.objects.list "
    bucket += "access to the Google Cloud Storage bucket acme-train-data."
    listing = [c.command for c in _diagnose(classifier, bucket, JOB).commands if "get-iam-policy" in c.command]
    assert listing and all(c.startswith("gcloud projects get-iam-policy acme-ml ") for c in listing), listing


def test_a_refused_read_naming_no_bucket_is_not_bound_on_the_jobs_output_bucket(classifier: Classifier) -> None:
    """Only a write goes where the job writes: a listing refused with no bucket named leaves the bucket to fill."""
    text = (
        'W0412 11:02:41.771 gcs: Req 0x3: -> ListObjects("") (12.1ms): googleapi: Error 403: Access denied., '
        "forbidden"
    )
    grants = [c.command for c in _diagnose(classifier, text, OUTPUT_JOB).commands if "add-iam" in c.command]
    assert grants == [
        f"gcloud storage buckets add-iam-policy-binding gs://BUCKET {MEMBER} --role=roles/storage.objectViewer"
    ]


def test_a_grant_on_the_jobs_output_bucket_says_where_the_bucket_came_from(classifier: Classifier) -> None:
    text = GRANTS["gcsfuse_refused_write_in_the_jobs_output"][0]
    grants = [c for c in _diagnose(classifier, text, OUTPUT_JOB).commands if "add-iam" in c.command]
    assert [c.command for c in grants] == [BUCKET_WRITE]
    assert "output bucket" in grants[0].title and "names no bucket" in grants[0].title
    named = [c for c in _diagnose(classifier, GRANTS["fuse_path_from_the_shell"][0], OUTPUT_JOB).commands]
    assert [c.title for c in named if "add-iam" in c.command] == [
        "Grant the role on that one bucket to the identity refused (not on the project)"
    ]


def test_a_client_method_gives_no_permission_to_a_failure_that_is_no_refusal(classifier: Classifier) -> None:
    missing = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/site-packages/google/cloud/storage/blob.py", line 1303, in '
        "download_to_filename\n"
        "google.api_core.exceptions.NotFound: 404 GET https://storage.googleapis.com/download/storage/v1/b/"
        "acme-train-data/o/shards%2F0003.parquet?alt=media: No such object: acme-train-data/shards/0003.parquet"
    )
    diagnosis = _diagnose(classifier, missing, JOB)
    assert diagnosis.failure_class == "input_pipeline"
    assert "permission" not in diagnosis.details


def test_every_client_call_permission_has_a_role_to_grant() -> None:
    kb = load_knowledge()
    roles = kb.tables["iam_permission_roles"]
    missing = [
        row.permission
        for row in kb.tables["client_call_permissions"].rows
        if roles.find("permission", row.permission) is None and not row.permission.startswith("aiplatform.")
    ]
    assert not missing


def test_a_client_frame_of_another_library_or_a_refusal_naming_its_permission_keeps_its_own(
    classifier: Classifier,
) -> None:
    # the permission the error names wins over the method's; a frame of a library the table does not know adds none
    named = (
        '  File "/usr/local/lib/python3.10/site-packages/google/cloud/storage/blob.py", line 1303, in '
        "download_to_filename\n"
        "google.api_core.exceptions.Forbidden: 403 trainer@acme-ml.iam.gserviceaccount.com does not have "
        "storage.objects.list access to the Google Cloud Storage bucket acme-train-data."
    )
    grants = [c.command for c in _diagnose(classifier, named, JOB).commands if "add-iam-policy-binding" in c.command]
    assert grants == [
        f"gcloud storage buckets add-iam-policy-binding gs://acme-train-data {MEMBER} --role=roles/storage.objectViewer"
    ]
    unknown_library = (
        '  File "/usr/local/lib/python3.10/site-packages/google/cloud/translate_v3/services/x/client.py", line 9, '
        "in translate_text\ngoogle.api_core.exceptions.PermissionDenied: 403 The caller does not have permission"
    )
    diagnosis = _diagnose(classifier, unknown_library, JOB)
    assert diagnosis.failure_class == "permission_denied"
    assert not [c for c in diagnosis.commands if "add-iam-policy-binding" in c.command]


def test_every_gcloud_command_permission_has_a_role_to_grant() -> None:
    """A command's permission must be one the role table knows (or a Vertex AI one, which maps to aiplatform.user):
    else the refusal gets a permission and still no grant."""
    kb = load_knowledge()
    roles = kb.tables["iam_permission_roles"]
    missing = [
        row.permission
        for row in kb.tables["gcloud_command_permissions"].rows
        if roles.find("permission", row.permission) is None and not row.permission.startswith("aiplatform.")
    ]
    assert not missing


@pytest.mark.parametrize(
    ("text", "member"),
    [
        (
            "Error: 9 FAILED_PRECONDITION: Service account account `[xxxx]@gcp-sa-automl.iam.gserviceaccount.com` "
            "does not have `[storage.buckets.get]` IAM permission to the input bucket gs://acme-train-data.",
            "service-123456789012@gcp-sa-automl.iam.gserviceaccount.com",
        ),
        (
            "AccessDeniedException: 403 xxxxxxxx-compute@developer.gserviceaccount.com does not have "
            "storage.objects.list access to the Google Cloud Storage bucket acme-train-data.",
            "123456789012-compute@developer.gserviceaccount.com",
        ),
    ],
    ids=["service-agent", "compute-default"],
)
def test_a_google_managed_account_posted_with_its_number_masked_is_the_one_granted(
    classifier: Classifier, text: str, member: str
) -> None:
    """The masked address never enters a command, nor does the job's own account: the managed account of the job's
    project, whose number the CustomJob's name gives; with no number known, a placeholder."""
    grants = [c.command for c in _diagnose(classifier, text, PULL_JOB).commands if "add-iam" in c.command]
    assert len(grants) == 1 and f"--member=serviceAccount:{member} " in grants[0], grants
    alone = [c.command for c in _diagnose(classifier, text, None).commands if "add-iam" in c.command]
    assert alone and all("xxxx" not in g and SA not in g and "SERVICE_ACCOUNT_EMAIL" in g for g in alone), alone


def _args_job(*args: str) -> JobInfo:
    return OUTPUT_JOB.model_copy(update={"worker_pools": [WorkerPool(image_uri="gcr.io/acme-ml/t:1", args=args)]})


def test_a_refusal_naming_no_bucket_is_bound_on_the_one_bucket_the_jobs_arguments_name(classifier: Classifier) -> None:
    """gsutil's "... access to the Google Cloud Storage bucket." names none; a job started with
    `--data=gs://acme-train-data/...` read from that one bucket: the grant goes there, and says where it came from."""
    text = (
        "AccessDeniedException: 403 trainer@acme-ml.iam.gserviceaccount.com does not have storage.objects.list "
        "access to the Google Cloud Storage bucket. Permission 'storage.objects.list' denied on resource (or it may "
        "not exist)."
    )
    one = _args_job("python", "-m", "trainer.task", "--data=gs://acme-train-data/imagenet/train-*", "--epochs=3")
    grants = [c for c in _diagnose(classifier, text, one).commands if "add-iam" in c.command]
    assert [c.command for c in grants] == [BUCKET_READ]
    assert "arguments name" in grants[0].title
    # two buckets in the arguments: which one was refused is unknown, the bucket is left to fill
    two = _args_job("--data=gs://acme-train-data/x", "--eval=gs://acme-eval-data/y")
    assert [c.command for c in _diagnose(classifier, text, two).commands if "add-iam" in c.command] == [
        f"gcloud storage buckets add-iam-policy-binding gs://BUCKET {MEMBER} --role=roles/storage.objectViewer"
    ]
    # a refusal that names its bucket keeps it; a refused write still goes to the output bucket
    named = text.replace("Storage bucket.", "Storage bucket acme-other.")
    assert "gs://acme-other " in next(
        c.command for c in _diagnose(classifier, named, one).commands if "add-iam" in c.command
    )
    write = GRANTS["gcsfuse_refused_write_in_the_jobs_output"][0]
    assert [c.command for c in _diagnose(classifier, write, one).commands if "add-iam" in c.command] == [BUCKET_WRITE]


def test_a_pod_with_no_room_whose_scale_up_a_cloud_quota_stopped_is_the_quota(classifier: Classifier) -> None:
    # kubectl describe's events: first the scheduler (no node has room), then the autoscaler naming the cause
    events = (
        "Warning  FailedScheduling  2m  default-scheduler  0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\n"
        "Normal   NotTriggerScaleUp  1m (x5 over 2m)  cluster-autoscaler  pod didn't trigger scale-up: 1 in backoff "
        "after failed scale-up\n"
        "Warning  FailedScaleUp  1m  cluster-autoscaler  Node scale up in zones us-central1-a associated with this "
        "pod failed: GCE quota exceeded. Pod is at risk of not being scheduled."
    )
    diagnosis = _diagnose(classifier, events, JOB)
    assert diagnosis.failure_class == "quota_exhausted"
    assert not diagnosis.title.startswith("No node in the cluster has room")
    assert (
        "gcloud compute regions describe us-central1 --project=acme-ml --flatten=quotas "
        "--format='table(quotas.metric,quotas.usage,quotas.limit)'"
    ) in [c.command for c in diagnosis.commands]
    # without the autoscaler's word, the same scheduler event stays cluster capacity
    alone = _diagnose(classifier, events.splitlines()[0], JOB)
    assert alone.title.startswith("No node in the cluster has room")


@pytest.mark.parametrize(
    "text",
    [
        # gdown refused by Google Drive: that one shared file was downloaded too often
        "gdown.exceptions.FileURLRetrievalError: Failed to retrieve file url:\n\n\tToo many users have viewed or "
        "downloaded this file recently. Please\n\ttry accessing the file again later.",
        # the Drive API's wording, with the quota words a project's own limit also has (reason quotaExceeded)
        "googleapiclient.errors.HttpError: <HttpError 403 when requesting https://www.googleapis.com/drive/v2/files/"
        '1AbC?alt=media returned "The download quota for this file has been exceeded". Details: "[{\'domain\': '
        "'usageLimits', 'reason': 'quotaExceeded', 'message': 'The download quota for this file has been "
        "exceeded'}]\">",
    ],
)
def test_a_shared_files_download_limit_gets_no_quota_request_and_a_rerun_after_the_copy(
    classifier: Classifier, text: str
) -> None:
    """A file shared on Drive has its own download limit: no preference for the job's accelerator quota (the
    job spec's fallback) helps, and the rerun asks for the data to be copied (or the day to pass) first."""
    from bot.chat.rerun_offer import rerun_offer

    diagnosis = _diagnose(classifier, text, H100_JOB)
    assert diagnosis.failure_class == "quota_exhausted"
    assert diagnosis.title.startswith("A shared file's download limit")
    assert not [c for c in diagnosis.commands if "quotas preferences create" in c.command], diagnosis.commands
    offer = rerun_offer(classifier.kb, diagnosis, H100_JOB)
    assert offer.mode == "fix_first" and offer.fix_first is not None and "copy the data" in offer.fix_first, offer
