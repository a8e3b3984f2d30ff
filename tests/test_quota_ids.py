"""A quota error whose metric no table has an id for: the project's Cloud Quotas listing names the id, and the
quota-preference command is filled with it and with what the job asks.

Real parts: the google-cloud-quotas client over its REST transport against the Google stand-in (quotaInfos.list,
paged like the API); the bundled classifier; the alert path as `trainmedic serve` builds it, posting to the Slack
stand-in; /diagnose's JobDiagnoser with the real Vertex AI and Logging clients.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.chat.diagnose import JobDiagnoser
from bot.diagnosis.classifier import Classifier
from bot.diagnosis.evidence.quota_lookup import project_quota, quota_to_look_up
from bot.diagnosis.knowledge import load_knowledge
from bot.gcp.cloud_logs import CloudLoggingClient
from bot.gcp.cloud_quotas import CloudQuotasClient, QuotaWanted
from bot.gcp.vertex_jobs import VertexJobsClient
from bot.intake.log_input import text_to_lines
from bot.jobs.reference import parse_job_reference
from bot.models import JobInfo, ProjectQuota, WorkerPool
from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry
from standins.slack_api import FakeSlackApi
from tests.live_service import LiveService, standin_environ

PROJECT, REGION = "acme-ml", "us-central1"
SERVICE = "aiplatform.googleapis.com"
TPU_METRIC = f"{SERVICE}/custom_model_training_tpu_v3"
TPU_ID = "CustomModelTrainingTPUV3CoresPerProjectPerRegion"  # whatever the project lists: the test's own id
TPU_QUOTA = (
    "google.api_core.exceptions.ResourceExhausted: 429 The following quota metrics exceed quota limits: "
    f"{TPU_METRIC} in region {REGION}"
)
# two replicas of a v3-8: 16 TPU cores asked of the quota
TPU_POOL = {
    "machineSpec": {"machineType": "cloud-tpu", "acceleratorType": "TPU_V3", "acceleratorCount": 8},
    "replicaCount": "2",
    "containerSpec": {"imageUri": "us-docker.pkg.dev/p/train/trainer:1"},
}
TPU_JOB = JobInfo(
    job_id="5201",
    project=PROJECT,
    region=REGION,
    worker_pools=[
        WorkerPool(machine_type="cloud-tpu", accelerator_type="TPU_V3", accelerator_count=8, replica_count=2)
    ],
)
PREFERENCE = (
    f"gcloud beta quotas preferences create --service={SERVICE} --quota-id={TPU_ID} --preferred-value=16 "
    f"--dimensions=region={REGION} --project={PROJECT}"
)
# Compute Engine names the id (by its naming rule) but no limit: only what the request was short of what is free
COMPUTE = "compute.googleapis.com"
T4_METRIC, T4_ID = f"{COMPUTE}/nvidia_t4_gpus", "NVIDIA-T4-GPUS-per-project-region"
T4_SHORT = (
    "ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n"
    " - Insufficient 'NVIDIA_T4_GPUS' quota. Requested 4.0, available 1.0. Your resource request exceeds your "
    f"available quota in region {REGION}."
)


# An error that names its quota by display names only (the metric's and its limit's) and its service
CRUD_NAME = "Resource management (CRUD) requests"
CRUD_LIMIT = "Resource management (CRUD) requests per minute per region"
CRUD_METRIC = f"{SERVICE}/resource_management_requests"
CRUD_ID = "ResourceManagementRequestsPerMinutePerProjectPerRegion"
CRUD_DAY_ID = "ResourceManagementRequestsPerDayPerProject"  # the same metric's other quota: the test's own ids
CRUD_QUOTA = (
    "google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for quota metric "
    f"'{CRUD_NAME}' and limit '{CRUD_LIMIT}' of service '{SERVICE}' for consumer 'project_number:123456789012'."
)


def seed_named_quotas(google: FakeGoogleApis) -> None:
    google.seed_quota_info(PROJECT, SERVICE, CRUD_METRIC, CRUD_DAY_ID, [], display_names=(CRUD_NAME, "per day"))
    google.seed_quota_info(PROJECT, SERVICE, CRUD_METRIC, CRUD_ID, ["region"], display_names=(CRUD_NAME, CRUD_LIMIT))


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier(load_knowledge())


def commands(classifier: Classifier, text: str, job: JobInfo | None) -> list[str]:
    return [c.command for c in classifier.classify(text_to_lines(text), job).commands]


def seed_service_quotas(google: FakeGoogleApis, others: int = 150) -> None:
    """A service's listing as the API pages it: many other quotas, then the one of the metric, regional and global."""
    for n in range(others):
        google.seed_quota_info(PROJECT, SERVICE, f"{SERVICE}/other_{n}", f"Other{n}PerProjectPerRegion", ["region"])
    google.seed_quota_info(PROJECT, SERVICE, TPU_METRIC, TPU_ID, ["region"])
    google.seed_quota_info(PROJECT, SERVICE, TPU_METRIC, "CustomModelTrainingTPUV3CoresPerProject", [])


# ------------------------------------------------------------------------------------ what is looked up, pure


def test_a_tpu_quota_error_without_a_known_id_asks_for_its_metric(classifier) -> None:
    diagnosis = classifier.classify(text_to_lines(TPU_QUOTA), TPU_JOB)
    assert diagnosis.failure_class == "quota_exhausted"
    assert quota_to_look_up(diagnosis, classifier.kb) == QuotaWanted(SERVICE, TPU_METRIC)
    assert not any("preferences create" in c for c in commands(classifier, TPU_QUOTA, TPU_JOB))  # nothing to fill


@pytest.mark.parametrize(
    "text",
    [
        # the table has this metric's id: no call
        f"429 The following quota metrics exceed quota limits: {SERVICE}/custom_model_training_nvidia_a100_gpus",
        # a stockout is no quota
        "Resources are insufficient in region: us-central1. Try a different region or use a different accelerator.",
        # not Google's quota
        "botocore.exceptions.ClientError: An error occurred (ResourceLimitExceeded) when calling the "
        "CreateTrainingJob operation: The account-level service limit 'ml.p3.2xlarge for training job usage' is 0",
    ],
    ids=["id in the table", "stockout", "aws"],
)
def test_a_known_id_a_stockout_or_another_cloud_asks_nothing(classifier, text: str) -> None:
    assert quota_to_look_up(classifier.classify(text_to_lines(text), TPU_JOB), classifier.kb) is None


def test_the_regional_id_serves_an_error_naming_a_region_and_the_global_one_otherwise() -> None:
    regional = ProjectQuota(metric=TPU_METRIC, quota_id="Regional", dimensions=("region",))
    overall = ProjectQuota(metric=TPU_METRIC, quota_id="Overall", dimensions=())
    job = TPU_JOB.model_copy(update={"project_quotas": (overall, regional)})
    assert project_quota(job, TPU_METRIC, REGION) == regional
    assert project_quota(job, TPU_METRIC, None) == overall
    assert project_quota(job, f"{SERVICE}/another", REGION) is None
    assert project_quota(None, TPU_METRIC, REGION) is None


def test_the_projects_id_fills_the_preference_with_the_jobs_tpu_cores(classifier) -> None:
    job = TPU_JOB.model_copy(
        update={"project_quotas": (ProjectQuota(metric=TPU_METRIC, quota_id=TPU_ID, dimensions=("region",)),)}
    )
    found = commands(classifier, TPU_QUOTA, job)
    assert any(c.startswith(PREFERENCE) for c in found), found
    assert quota_to_look_up(classifier.classify(text_to_lines(TPU_QUOTA), job), classifier.kb) is None


def test_a_quota_named_only_by_display_names_is_looked_up_by_them_and_its_id_fills_the_preference(classifier) -> None:
    diagnosis = classifier.classify(text_to_lines(CRUD_QUOTA), TPU_JOB)
    assert quota_to_look_up(diagnosis, classifier.kb) == QuotaWanted(SERVICE, "", CRUD_NAME, CRUD_LIMIT)
    assert not any("preferences create" in c for c in commands(classifier, CRUD_QUOTA, TPU_JOB))
    per_day = ProjectQuota(
        metric=CRUD_METRIC, quota_id=CRUD_DAY_ID, metric_display_name=CRUD_NAME, display_name="per day per project"
    )
    per_minute = ProjectQuota(
        metric=CRUD_METRIC,
        quota_id=CRUD_ID,
        dimensions=("region",),
        metric_display_name=CRUD_NAME,
        display_name=CRUD_LIMIT,
    )
    job = TPU_JOB.model_copy(update={"project_quotas": (per_day, per_minute)})
    assert project_quota(job, None, REGION, (CRUD_NAME, CRUD_LIMIT)) == per_minute  # the limit's name is the quota's
    assert project_quota(job, None, REGION, (CRUD_NAME, "another limit")) == per_minute  # else the metric's, regional
    assert project_quota(job, None, None, (CRUD_NAME, "another limit")) == per_day
    assert project_quota(job, None, REGION, (CRUD_NAME, "per day per project")) == per_day  # named, though global
    found = commands(classifier, CRUD_QUOTA, job)
    preference = (
        f"gcloud beta quotas preferences create --service={SERVICE} --quota-id={CRUD_ID} "
        f"--preferred-value=PREFERRED_VALUE --dimensions=region={REGION} --project={PROJECT}"
    )
    assert [c for c in found if c.startswith("gcloud beta quotas preferences create")] == [
        f"{preference} --justification='Vertex AI custom training'"
    ]
    assert not any(c.startswith("gcloud beta quotas preferences create") and "TPU" in c for c in found)


def test_an_error_short_by_an_amount_asks_for_the_limit_in_force_and_adds_it(classifier) -> None:
    diagnosis = classifier.classify(text_to_lines(T4_SHORT), TPU_JOB)
    assert diagnosis.details["quota_id"] == T4_ID and diagnosis.details["quota_shortfall"] == "3"
    # the id is known, the limit is not
    assert quota_to_look_up(diagnosis, classifier.kb) == QuotaWanted(COMPUTE, T4_METRIC)
    wanted = f"--quota-id={T4_ID} --preferred-value=PREFERRED_VALUE"
    assert any(wanted in c for c in commands(classifier, T4_SHORT, TPU_JOB))  # nothing to fill it with yet
    # the project lists a limit of 6 in this region (0 elsewhere): 6 + the 3 the request was short by
    listed = ProjectQuota(metric=T4_METRIC, quota_id=T4_ID, dimensions=("region",), limits=(("", 0), (REGION, 6)))
    job = TPU_JOB.model_copy(update={"project_quotas": (listed,)})
    filled = classifier.classify(text_to_lines(T4_SHORT), job)
    assert any(f"--quota-id={T4_ID} --preferred-value=9 --dimensions=region={REGION}" in c.command
               for c in filled.commands), [c.command for c in filled.commands]  # fmt: skip
    assert any("plus the 3 this request was short by" in c.title for c in filled.commands)
    assert quota_to_look_up(filled, classifier.kb) is None
    # the job's own count (2 x 4 T4s) is no answer to "short by 3": with no limit listed the value stays to fill
    t4_job = TPU_JOB.model_copy(
        update={"worker_pools": [WorkerPool(accelerator_type="NVIDIA_TESLA_T4", accelerator_count=4, replica_count=2)]}
    )
    assert any(wanted in c for c in commands(classifier, T4_SHORT, t4_job))
    # a region the listing gives no value of its own takes the default
    elsewhere = TPU_JOB.model_copy(update={"project_quotas": (listed.model_copy(update={"limits": (("", 2),)}),)})
    assert any("--preferred-value=5 " in c for c in commands(classifier, T4_SHORT, elsewhere))


def test_a_request_within_what_is_free_is_no_shortfall(classifier) -> None:
    text = T4_SHORT.replace("Requested 4.0, available 1.0", "Requested 1.0, available 1.0")
    diagnosis = classifier.classify(text_to_lines(text), TPU_JOB)
    assert "quota_shortfall" not in diagnosis.details
    assert quota_to_look_up(diagnosis, classifier.kb) is None  # the id is in hand; no limit to add to


# ------------------------------------------------------------------------------------ the client, on the wire


def test_the_client_pages_through_the_services_quotas_for_that_metric(fake_google: FakeGoogleApis) -> None:
    seed_service_quotas(fake_google)
    found = CloudQuotasClient(endpoint=fake_google.base_url).quota_infos(
        project=PROJECT, wanted=QuotaWanted(SERVICE, TPU_METRIC)
    )
    assert {(q.quota_id, q.dimensions) for q in found} == {
        (TPU_ID, ("region",)),
        ("CustomModelTrainingTPUV3CoresPerProject", ()),
    }
    paths = {r.path for r in fake_google.requests}
    assert paths == {f"/v1/projects/{PROJECT}/locations/global/services/{SERVICE}/quotaInfos"}
    assert len(fake_google.requests) == 2  # the stand-in's pages hold 100: the metric is on the second


def test_the_client_reads_each_regions_limit_and_the_default(fake_google: FakeGoogleApis) -> None:
    fake_google.seed_quota_info(PROJECT, COMPUTE, T4_METRIC, T4_ID, ["region"], limits={"": 0, REGION: 6})
    fake_google.seed_quota_info(
        PROJECT, COMPUTE, f"{COMPUTE}/other", "OTHER-per-project-region", ["region"], limits={"": 9}
    )
    (found,) = CloudQuotasClient(endpoint=fake_google.base_url).quota_infos(
        project=PROJECT, wanted=QuotaWanted(COMPUTE, T4_METRIC)
    )
    assert found.quota_id == T4_ID and set(found.limits) == {("", 0), (REGION, 6)}
    assert found.limit_in(REGION) == 6 and found.limit_in("europe-west4") == 0 and found.limit_in(None) == 0


@pytest.mark.parametrize(
    ("project", "wanted"),
    [
        ("bad project!", QuotaWanted(SERVICE, TPU_METRIC)),
        (PROJECT, QuotaWanted("compute.googleapis.com", TPU_METRIC)),
        (PROJECT, QuotaWanted(SERVICE, "x")),
        (PROJECT, QuotaWanted(SERVICE)),  # neither a metric nor a name
        (PROJECT, QuotaWanted(SERVICE, "", "", "Requests' OR 1=1\nper minute")),  # a name in no plain form
        (PROJECT, QuotaWanted("aiplatform.example.com", "", "Requests")),  # no Google service
    ],
    ids=["project", "service", "metric", "nothing", "name", "not google"],
)
def test_a_value_in_no_identifier_form_never_reaches_the_api(
    fake_google: FakeGoogleApis, project: str, wanted: QuotaWanted
) -> None:
    with pytest.raises(ValueError):
        CloudQuotasClient(endpoint=fake_google.base_url).quota_infos(project=project, wanted=wanted)
    assert fake_google.requests == []


def test_the_client_finds_a_quota_by_the_display_names_an_error_quotes(fake_google: FakeGoogleApis) -> None:
    seed_service_quotas(fake_google)
    seed_named_quotas(fake_google)
    client = CloudQuotasClient(endpoint=fake_google.base_url)
    by_quota = client.quota_infos(project=PROJECT, wanted=QuotaWanted(SERVICE, "", "", CRUD_LIMIT))
    assert [q.quota_id for q in by_quota] == [CRUD_ID]
    assert by_quota[0].metric == CRUD_METRIC and by_quota[0].display_name == CRUD_LIMIT
    # the metric's name alone: both of its quotas (per minute and per day)
    by_metric = client.quota_infos(project=PROJECT, wanted=QuotaWanted(SERVICE, "", CRUD_NAME))
    assert {q.quota_id for q in by_metric} == {CRUD_ID, CRUD_DAY_ID}


# ------------------------------------------------------------------------------------ the alert and /diagnose


@pytest.fixture
def live(tmp_path: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis) -> Iterator[LiveService]:
    environ = standin_environ(
        tmp_path, fake_slack, fake_google, routing={"default_channel": "#ml-alerts", "regions": [REGION]}
    )
    service = LiveService(environ)
    yield service
    service.services.store.close()


def post(live: LiveService, fake_google: FakeGoogleApis, job_id: str, text: str = TPU_QUOTA) -> dict:
    job = custom_job_json(PROJECT, REGION, job_id)
    job["jobSpec"]["workerPoolSpecs"] = [TPU_POOL]
    fake_google.seed_job(job)
    outcome = live.services.alerts.handle_log_entry(
        log_entry(PROJECT, job_id, text, task_name="workerpool0-0", severity="ERROR")
    )
    assert outcome.status == "posted" and outcome.failure_class == "quota_exhausted"
    return live.services.store.get_alert(f"{PROJECT}/{job_id}").diagnosis


def quota_reads(fake_google: FakeGoogleApis) -> list:
    return [r for r in fake_google.requests if r.path.endswith("/quotaInfos")]


def test_the_alert_asks_cloud_quotas_once_and_posts_the_filled_preference(live, fake_google, fake_slack) -> None:
    seed_service_quotas(fake_google)
    stored = post(live, fake_google, "5201")
    assert any(c["command"].startswith(PREFERENCE) for c in stored["diagnosis"]["commands"])
    assert len(quota_reads(fake_google)) == 2  # one listing, two pages
    alert = fake_slack.posted()[0]
    card = json.dumps(fake_slack.replies(alert["channel"], alert["ts"]))  # the full card: every command
    assert PREFERENCE.split(" --project")[0] in card


def test_the_alert_fills_a_short_requests_preference_from_the_projects_limit(live, fake_google) -> None:
    fake_google.seed_quota_info(PROJECT, COMPUTE, T4_METRIC, T4_ID, ["region"], limits={"": 0, REGION: 6})
    stored = post(live, fake_google, "5204", T4_SHORT)
    preferences = [c["command"] for c in stored["diagnosis"]["commands"] if "preferences create" in c["command"]]
    assert preferences and f"--quota-id={T4_ID} --preferred-value=9 " in preferences[0]
    assert [r.path for r in quota_reads(fake_google)] == [
        f"/v1/projects/{PROJECT}/locations/global/services/{COMPUTE}/quotaInfos"
    ]


def test_the_alert_finds_a_quota_the_error_names_by_display_names_only(live, fake_google) -> None:
    seed_service_quotas(fake_google, others=3)
    seed_named_quotas(fake_google)
    stored = post(live, fake_google, "5205", CRUD_QUOTA)
    preferences = [c["command"] for c in stored["diagnosis"]["commands"] if "preferences create" in c["command"]]
    assert preferences and f"--service={SERVICE} --quota-id={CRUD_ID} " in preferences[0]
    assert len(quota_reads(fake_google)) == 1


def test_a_listing_the_bot_may_not_read_is_named_and_the_alert_still_posts(live, fake_google) -> None:
    fake_google.inject(status=403, api="quotas")
    stored = post(live, fake_google, "5202")
    unavailable = " ".join(stored["context"]["unavailable"])
    assert "the quota's id and limit: " in unavailable
    assert "cloudquotas.quotas.get (roles/cloudquotas.viewer)" in unavailable
    listed = [c["command"] for c in stored["diagnosis"]["commands"] if "quotas info list" in c["command"]]
    assert listed and TPU_METRIC in listed[0]  # the user's own look finds the id


def test_diagnose_on_demand_also_asks_cloud_quotas(fake_google: FakeGoogleApis, classifier) -> None:
    seed_service_quotas(fake_google, others=3)
    job = custom_job_json(PROJECT, REGION, "5203")
    job["jobSpec"]["workerPoolSpecs"] = [TPU_POOL]
    fake_google.seed_job(job)
    fake_google.seed_log_entries([log_entry(PROJECT, "5203", TPU_QUOTA, severity="ERROR")])
    diagnoser = JobDiagnoser(
        jobs=VertexJobsClient(endpoint=fake_google.base_url),
        logs=CloudLoggingClient(endpoint=fake_google.base_url, timeout=5.0),
        quotas=CloudQuotasClient(endpoint=fake_google.base_url),
        classifier=classifier,
        regions=[REGION],
        default_project=PROJECT,
    )
    result = diagnoser.diagnose(parse_job_reference("5203"))
    assert any(c.command.startswith(PREFERENCE) for c in result.diagnosis.commands)
    assert result.unavailable == []
