"""A refusal that names no permission: the audit logs' refused checks become evidence, and the grant follows.

Real parts: the audit entry's text (bot/intake/audit_entry.py) read by the bundled classifier; the Cloud Logging
client against the Google stand-in (entries:list with the real filter language's comparisons); the alert path as
`trainmedic serve` builds it, posting to the Slack stand-in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.chat.diagnose import JobDiagnoser
from bot.diagnosis.classifier import Classifier
from bot.diagnosis.evidence.audit_lookup import audit_window, principal_to_ask_about
from bot.diagnosis.knowledge import load_knowledge
from bot.gcp.cloud_logs import CloudLoggingClient, refused_calls_filter
from bot.gcp.vertex_jobs import VertexJobsClient
from bot.intake.log_input import entries_to_lines, entry_text, text_to_lines
from bot.intake.stored_entry import stored_entry
from bot.jobs.reference import parse_job_reference
from bot.models import JobInfo
from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry, refused_call_entry
from standins.slack_api import FakeSlackApi
from tests.live_service import LiveService, standin_environ

PROJECT, REGION = "acme-ml", "us-central1"
ACCOUNT = f"trainer@{PROJECT}.iam.gserviceaccount.com"
NAMES_NOTHING = "Error 403: The caller does not have permission, forbidden"
BUCKET_READ = refused_call_entry(
    PROJECT,
    ACCOUNT,
    service="storage.googleapis.com",
    method="storage.objects.get",
    checks=[("storage.objects.get", "projects/_/buckets/acme-data/objects/train/shard-00001.tfrecord")],
    timestamp="2026-02-23T23:53:58.25Z",
)
GRANT = (
    f"gcloud storage buckets add-iam-policy-binding gs://acme-data --member=serviceAccount:{ACCOUNT} "
    "--role=roles/storage.objectViewer"
)


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier(load_knowledge())


def grants(classifier: Classifier, lines: list, job: JobInfo | None = None) -> list[str]:
    diagnosis = classifier.classify(lines, job)
    return [c.command for c in diagnosis.commands if "add-iam-policy-binding" in c.command]


# ------------------------------------------------------------------------------------ the audit entry's text


def test_a_refused_check_reads_as_a_refusal_of_that_permission_on_that_resource() -> None:
    text = entry_text(BUCKET_READ)
    assert text.splitlines() == [  # the bare status name says nothing more: left out
        "Audit log: Permission 'storage.objects.get' denied on resource '//storage.googleapis.com/projects/_/buckets"
        "/acme-data/objects/train/shard-00001.tfrecord'",
    ]
    assert stored_entry(BUCKET_READ)["protoPayload"]["status"]["message"] == text  # kept as read


def test_granted_checks_and_other_statuses_add_no_refusal() -> None:
    granted = json.loads(json.dumps(BUCKET_READ))
    granted["protoPayload"]["authorizationInfo"].append(
        {"permission": "storage.buckets.get", "resource": "projects/_/buckets/acme-data", "granted": True}
    )
    assert "storage.buckets.get" not in entry_text(granted)
    quota = json.loads(json.dumps(BUCKET_READ))
    quota["protoPayload"]["status"] = {"code": 8, "message": "Quota exceeded"}
    assert entry_text(quota) == "Quota exceeded"


def test_a_permission_or_resource_in_no_valid_form_is_left_out() -> None:
    odd = refused_call_entry(
        PROJECT,
        ACCOUNT,
        service="storage.googleapis.com",
        method="storage.objects.get",
        checks=[("not a permission", "projects/_/buckets/b"), ("storage.objects.get", "has 'quotes' in it")],
    )
    odd["protoPayload"]["status"]["message"] = "Caller does not have storage.objects.get access"
    assert entry_text(odd).splitlines() == [
        "Caller does not have storage.objects.get access",  # a message that says more than the code is kept
        "Audit log: Permission 'storage.objects.get' denied",
    ]


def test_the_refused_check_turns_a_refusal_naming_nothing_into_a_grant_on_the_bucket(classifier) -> None:
    job_log = [log_entry(PROJECT, "42", NAMES_NOTHING, timestamp="2026-02-23T23:54:00Z", severity="ERROR")]
    job = JobInfo(project=PROJECT, service_account=ACCOUNT)
    assert grants(classifier, entries_to_lines(job_log), job) == []
    assert grants(classifier, entries_to_lines([BUCKET_READ, *job_log]), job) == [GRANT]


# ------------------------------------------------------------------------------------ when to ask, and the window


GSUTIL_NO_BUCKET = (
    f"AccessDeniedException: 403 {ACCOUNT} does not have storage.objects.get access to the Google Cloud Storage object."
)


def test_a_grant_whose_bucket_the_log_leaves_out_is_looked_up_and_filled(classifier) -> None:
    job = JobInfo(project=PROJECT, service_account=ACCOUNT)
    alone = classifier.classify(text_to_lines(GSUTIL_NO_BUCKET), job)
    assert principal_to_ask_about(alone, classifier.kb) == ACCOUNT
    assert grants(classifier, text_to_lines(GSUTIL_NO_BUCKET), job) == [GRANT.replace("acme-data", "BUCKET")]
    with_audit = [*entries_to_lines([BUCKET_READ]), *text_to_lines(GSUTIL_NO_BUCKET)]
    assert grants(classifier, with_audit, job) == [GRANT]
    filled = classifier.classify(with_audit, job)
    assert principal_to_ask_about(filled, classifier.kb) is None  # nothing more to ask


def test_a_grant_whose_names_are_all_filled_is_not_looked_up_even_in_capitals(classifier) -> None:
    job = JobInfo(project=PROJECT, service_account=ACCOUNT)
    refusal = (
        "google.api_core.exceptions.PermissionDenied: 403 Permission 'secretmanager.versions.access' denied for "
        "resource 'projects/acme-ml/secrets/HF_TOKEN/versions/latest' (or it may not exist)."
    )
    diagnosis = classifier.classify(text_to_lines(refusal), job)
    assert any("projects/acme-ml/secrets/HF_TOKEN " in c.command for c in diagnosis.commands)  # named in capitals
    assert principal_to_ask_about(diagnosis, classifier.kb) is None  # a value, not a placeholder left to fill


def test_only_a_google_refusal_naming_no_permission_is_looked_up(classifier) -> None:
    job = JobInfo(project=PROJECT, service_account=ACCOUNT)
    assert principal_to_ask_about(classifier.classify(text_to_lines(NAMES_NOTHING), job), classifier.kb) == ACCOUNT
    named = "403 Permission 'storage.objects.get' denied on resource '//storage.googleapis.com/projects/_/buckets/b'"
    assert principal_to_ask_about(classifier.classify(text_to_lines(named), job), classifier.kb) is None
    hub = "huggingface_hub.errors.GatedRepoError: 403 Client Error. Cannot access gated repo for url https://huggingface.co/x"
    assert principal_to_ask_about(classifier.classify(text_to_lines(hub), job), classifier.kb) is None
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB"
    assert principal_to_ask_about(classifier.classify(text_to_lines(oom), job), classifier.kb) is None
    # a cause that no role fixes, named in the log: no grant to fill, nothing to look up
    perimeter = "403 Request is prohibited by organization's policy. vpcServiceControlsUniqueIdentifier: 4fa9c02be1"
    diagnosis = classifier.classify(text_to_lines(perimeter), job)
    assert diagnosis.title != classifier.kb["permission_denied"].title
    assert principal_to_ask_about(diagnosis, classifier.kb) is None


def test_the_window_runs_from_just_before_the_start_to_after_the_end_and_at_most_a_week() -> None:
    start = datetime(2026, 2, 23, 23, 45, tzinfo=UTC)
    now = start + timedelta(days=30)
    ended = JobInfo(start_time=start, end_time=start + timedelta(minutes=9))
    assert audit_window(ended, now) == (start - timedelta(minutes=1), start + timedelta(minutes=14))
    running = JobInfo(create_time=start)
    assert audit_window(running, now) == (now - timedelta(days=7), now)
    assert audit_window(JobInfo(), now) is None


# ------------------------------------------------------------------------------------ the Cloud Logging call


def test_the_client_asks_for_that_principals_refused_calls_in_the_window(fake_google: FakeGoogleApis) -> None:
    other_account = refused_call_entry(
        PROJECT, "someone@acme-ml.iam.gserviceaccount.com", service="storage.googleapis.com",
        method="storage.objects.get", checks=[("storage.objects.get", "projects/_/buckets/x")],
        timestamp="2026-02-23T23:50:00Z",
    )  # fmt: skip
    too_early = {**BUCKET_READ, "insertId": "early", "timestamp": "2026-02-23T23:30:00Z"}
    allowed = json.loads(json.dumps(BUCKET_READ))
    allowed["insertId"], allowed["protoPayload"]["status"] = "allowed", {}
    fake_google.seed_log_entries([BUCKET_READ, other_account, too_early, allowed])
    logs = CloudLoggingClient(endpoint=fake_google.base_url, timeout=5.0)
    since, until = datetime(2026, 2, 23, 23, 44, tzinfo=UTC), datetime(2026, 2, 23, 23, 59, tzinfo=UTC)

    got = logs.refused_calls(project=PROJECT, principal=ACCOUNT, since=since, until=until)

    assert got == [BUCKET_READ]
    (request,) = fake_google.requests
    assert request.json["filter"] == (
        'logName:"cloudaudit.googleapis.com" AND protoPayload.status.code=7 AND '
        f'protoPayload.authenticationInfo.principalEmail="{ACCOUNT}" AND '
        'timestamp>="2026-02-23T23:44:00Z" AND timestamp<="2026-02-23T23:59:00Z"'
    )
    assert request.json["resourceNames"] == [f"projects/{PROJECT}"]


@pytest.mark.parametrize("principal", ['a@b.com" OR logName:"x', "no-at-sign", 'x@y.com\\"', ""])
def test_a_principal_that_is_not_an_email_never_enters_the_filter(principal: str) -> None:
    moment = datetime(2026, 2, 23, tzinfo=UTC)
    with pytest.raises(ValueError, match="email"):
        refused_calls_filter(principal, moment, moment)


# ------------------------------------------------------------------------------------ the alert


@pytest.fixture
def live(tmp_path: Path, fake_slack: FakeSlackApi, fake_google: FakeGoogleApis) -> Iterator[LiveService]:
    environ = standin_environ(
        tmp_path, fake_slack, fake_google, routing={"default_channel": "#ml-alerts", "regions": [REGION]}
    )
    service = LiveService(environ)
    yield service
    service.services.store.close()


def post(live: LiveService, fake_google: FakeGoogleApis, job_id: str, text: str = NAMES_NOTHING) -> str:
    fake_google.seed_job(custom_job_json(PROJECT, REGION, job_id))
    outcome = live.services.alerts.handle_log_entry(
        log_entry(PROJECT, job_id, text, task_name="workerpool0-0", severity="ERROR",
                  timestamp="2026-02-23T23:54:00Z")
    )  # fmt: skip (the job's state is failed: its first error entry posts)
    assert outcome.status == "posted" and outcome.failure_class == "permission_denied"
    return json.dumps(live.services.store.get_alert(f"{PROJECT}/{job_id}").diagnosis)


@pytest.mark.parametrize("text", [NAMES_NOTHING, GSUTIL_NO_BUCKET], ids=["names nothing", "names no bucket"])
def test_the_alert_grants_what_the_audit_log_says_was_refused(live, fake_google: FakeGoogleApis, text: str) -> None:
    fake_google.seed_log_entries([BUCKET_READ])
    stored = post(live, fake_google, "5101", text)
    assert json.dumps(GRANT)[1:-1] in stored
    assert "storage.objects.get" in stored and "acme-data" in stored
    audit_reads = [r for r in fake_google.requests if "cloudaudit" in json.dumps(r.json or {})]
    assert len(audit_reads) == 1


def test_without_a_refused_call_in_the_audit_log_the_alert_says_how_to_look(live, fake_google) -> None:
    stored = post(live, fake_google, "5102")
    assert "add-iam-policy-binding" not in stored
    assert "protoPayload.status.code=7" in stored  # the user's own look, where the bot could not see


def test_a_refusal_that_names_its_permission_never_reads_the_audit_log(live, fake_google) -> None:
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "5103"))
    text = "403 Permission 'storage.objects.get' denied on resource '//storage.googleapis.com/projects/_/buckets/b'"
    outcome = live.services.alerts.handle_log_entry(log_entry(PROJECT, "5103", text, severity="ERROR"))
    assert outcome.status == "posted" and outcome.failure_class == "permission_denied"
    assert not [r for r in fake_google.requests if "cloudaudit" in json.dumps(r.json or {})]


def test_diagnose_on_demand_also_reads_the_refused_calls(fake_google: FakeGoogleApis, classifier) -> None:
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "5104"))
    fake_google.seed_log_entries(
        [log_entry(PROJECT, "5104", NAMES_NOTHING, severity="ERROR", timestamp="2026-02-23T23:54:00Z"), BUCKET_READ]
    )
    diagnoser = JobDiagnoser(
        jobs=VertexJobsClient(endpoint=fake_google.base_url),
        logs=CloudLoggingClient(endpoint=fake_google.base_url, timeout=5.0),
        classifier=classifier,
        regions=[REGION],
        default_project=PROJECT,
    )
    result = diagnoser.diagnose(parse_job_reference("5104"))
    assert [c.command for c in result.diagnosis.commands if "add-iam-policy-binding" in c.command] == [GRANT]
    assert any("storage.objects.get" in line and "acme-data" in line for line in result.diagnosis.evidence)


def test_an_audit_log_the_bot_may_not_read_is_named_and_the_alert_still_posts(live, fake_google) -> None:
    fake_google.inject(status=403, api="logging", permission="logging.privateLogEntries.list")
    stored = json.loads(post(live, fake_google, "5105"))
    unavailable = " ".join(stored["context"]["unavailable"])
    assert "the audit logs: " in unavailable
    assert "logging.privateLogEntries.list (roles/logging.privateLogViewer)" in unavailable
    assert "protoPayload.status.code=7" in json.dumps(stored["diagnosis"]["commands"])  # the user's own look
