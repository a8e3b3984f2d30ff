"""The alert sources (bot/sources/), rule by rule: what each recognises in a pushed message, the job it names, when
that job's alert is posted, held, recovered or owned, what is irrelevant or malformed, and what it diagnoses. The
gates are given real Lookups (a job as Vertex AI described it); the pipeline's subject is looked up through the
Google stand-in with the real clients.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.alerting.deadline import Deadline
from bot.alerting.incidents import LABEL_ID, LABEL_STATE, incident_labels
from bot.errors import InvalidPushMessage
from bot.gcp.pipeline_jobs import VertexPipelinesClient
from bot.gcp.pipeline_resource import FailedTask, PipelineInfo
from bot.gcp.vertex_jobs import VertexJobsClient
from bot.jobs.identity import JobKind, JobRef, custom_job, incident, pipeline_job
from bot.jobs.lookup import Found, JobLookup, Lookup
from bot.models import JobInfo
from bot.sources import Gate, Irrelevant, Sighting, Subject, default_sources
from bot.sources.audit_log import LABEL_METHOD, LABEL_PRINCIPAL, AuditLogSource, refused_job
from bot.sources.custom_job import PIPELINE_LABEL, CustomJobSource, is_failure_marker
from bot.sources.monitoring import MonitoringSource, incident_job, is_incident
from bot.sources.pipeline import RESOURCE_TYPE, PipelineSource
from standins.google_apis import FakeGoogleApis, custom_job_json, log_entry, pipeline_job_json

PROJECT, REGION = "acme-ml", "europe-west4"
RUN = "train-pipeline-20261130101500"
CALLER = "dana@acme.example"


def looked_up(
    state: str | None, *, labels: dict[str, str] | None = None, unavailable: list[str] | None = None
) -> Lookup:
    """A CustomJob as Vertex AI described it (in `state`), or nothing found when state is None."""
    ref = custom_job(PROJECT, "6001", REGION)
    info = JobInfo(project=PROJECT, region=REGION, job_id="6001", state=state, labels=labels or {})
    found = Found(ref=ref, raw={}, info=info) if state is not None or labels else None
    return Lookup(found, list(unavailable or []))


def test_the_default_sources_are_asked_in_order() -> None:
    assert [s.name for s in default_sources()] == ["monitoring", "audit_log", "pipeline", "custom_job"]


def test_irrelevant_carries_its_reason() -> None:
    exc = Irrelevant("not ours")
    assert exc.reason == "not ours" and str(exc) == "not ours"


# ------------------------------------------------------------------------------------ CustomJob entries


def ml_job_entry(text: str = "RuntimeError: boom", **kw: Any) -> dict:
    return log_entry(PROJECT, "6001", text, task_name=kw.pop("task_name", "workerpool0-0"), **kw)


@pytest.mark.parametrize("data", ["text", None, [], {"resource": "ml_job"}, {"resource": {"type": "gce_instance"}}])
def test_custom_job_source_passes_on_what_is_not_an_ml_job_entry(data: Any) -> None:
    assert CustomJobSource().recognise(data, message_id="m") is None


def test_custom_job_source_names_the_job_and_keeps_the_entry() -> None:
    entry = ml_job_entry()
    sighting = CustomJobSource().recognise(entry, message_id="m")
    assert sighting == Sighting(ref=custom_job(PROJECT, "6001"), entry=entry, marks_failure=False)
    assert sighting.entry is entry and sighting.updates_only is None and sighting.job is None
    marker = CustomJobSource().recognise(ml_job_entry("Job failed.", task_name="service"), message_id=None)
    assert marker is not None and marker.marks_failure is True


def test_a_malformed_ml_job_entry_is_refused_with_its_labels_cut_short() -> None:
    entry = {"resource": {"type": "ml_job", "labels": {"project_id": PROJECT, "job_id": "x" * 2000}}}
    with pytest.raises(InvalidPushMessage) as raised:
        CustomJobSource().recognise(entry, message_id=None)
    assert str(raised.value).startswith("ml_job entry without a valid job_id/project_id label: {")
    assert len(str(raised.value)) == 500


@pytest.mark.parametrize(
    ("text", "task", "marks"),
    [
        ("Job failed.", "service", True),
        ("  Job failed.\n", "service", True),
        ("Job failed.", None, True),
        ("Job failed.", "workerpool0-0", False),
        ("Job failed. Retrying", "service", False),
        ("job failed.", "service", False),
    ],
)
def test_the_failure_marker_is_vertexs_own_whole_line(text: str, task: str | None, marks: bool) -> None:
    entry = ml_job_entry(text, task_name=task)
    if task is None:
        del entry["resource"]["labels"]["task_name"]
    assert CustomJobSource().marks_failure(entry) is marks
    assert is_failure_marker(entry) is marks


@pytest.mark.parametrize("data", [None, "Job failed.", ["Job failed."]])
def test_only_an_entry_can_be_a_failure_marker(data: Any) -> None:
    assert is_failure_marker(data) is False


@pytest.mark.parametrize("state", ["JOB_STATE_SUCCEEDED", "JOB_STATE_CANCELLED", "JOB_STATE_CANCELLING"])
def test_a_custom_job_that_ended_well_has_recovered_even_with_a_marker(state: str) -> None:
    gate = CustomJobSource().gate(custom_job(PROJECT, "6001"), looked_up(state), True)
    assert gate == Gate("recovered", f"job is {state}: not a failure")


def test_a_pipeline_task_is_owned_by_its_pipeline_even_when_failed() -> None:
    lookup = looked_up("JOB_STATE_FAILED", labels={PIPELINE_LABEL: "4242"})
    gate = CustomJobSource().gate(custom_job(PROJECT, "6001"), lookup, True)
    assert gate == Gate("owned", "a Vertex AI Pipelines task: the pipeline's alert reports this failure")
    succeeded = looked_up("JOB_STATE_SUCCEEDED", labels={PIPELINE_LABEL: "4242"})
    assert CustomJobSource().gate(custom_job(PROJECT, "6001"), succeeded, True).decision == "recovered"


@pytest.mark.parametrize(
    ("state", "marker", "expected"),
    [
        ("JOB_STATE_FAILED", False, Gate("post")),
        ("JOB_STATE_RUNNING", True, Gate("post")),
        (None, True, Gate("post")),
        ("JOB_STATE_RUNNING", False, Gate("held", "held: job is JOB_STATE_RUNNING")),
        (None, False, Gate("held", "held: no 'Job failed.' entry yet and the job state is unknown")),
    ],
)
def test_a_custom_job_is_posted_once_failed_else_held(state: str | None, marker: bool, expected: Gate) -> None:
    assert CustomJobSource().gate(custom_job(PROJECT, "6001"), looked_up(state), marker) == expected


def test_a_custom_job_is_diagnosed_from_itself_and_its_own_logs() -> None:
    lookup = looked_up("JOB_STATE_FAILED", unavailable=["Cloud Logging unavailable"])
    sighting = Sighting(ref=custom_job(PROJECT, "6001"), entry={})
    subject = CustomJobSource().subject(sighting, lookup, None, deadline=None)  # type: ignore[arg-type]
    assert subject == Subject(job=lookup.job, logs_of=sighting.ref, unavailable=["Cloud Logging unavailable"])
    subject.unavailable.append("more")
    assert lookup.unavailable == ["Cloud Logging unavailable"]  # the subject's list is its own


# ------------------------------------------------------------------------------------ pipeline events


def pipeline_event(state: str = "PIPELINE_STATE_FAILED", **labels: Any) -> dict:
    resource_labels = {"pipeline_job_id": RUN, "location": REGION, "resource_container": f"projects/{PROJECT}"}
    resource_labels.update(labels)
    return {
        "insertId": "pl-1",
        "logName": f"projects/{PROJECT}/logs/aiplatform.googleapis.com%2Fpipeline_job_events",
        "resource": {"type": RESOURCE_TYPE, "labels": {k: v for k, v in resource_labels.items() if v is not None}},
        "jsonPayload": {"state": state},
    }


@pytest.mark.parametrize("data", ["text", None, {"resource": {"type": "ml_job"}}, {"resource": RESOURCE_TYPE}])
def test_pipeline_source_passes_on_what_is_not_a_pipeline_event(data: Any) -> None:
    assert PipelineSource().recognise(data, message_id=None) is None


@pytest.mark.parametrize("container", [f"projects/{PROJECT}", PROJECT, None, ""])
def test_a_pipeline_events_project_is_its_container_else_its_log_name(container: str | None) -> None:
    event = pipeline_event(resource_container=container)
    sighting = PipelineSource().recognise(event, message_id=None)
    assert sighting == Sighting(ref=pipeline_job(PROJECT, RUN, REGION), entry=event, marks_failure=True)


def test_a_pipeline_event_without_location_has_no_region() -> None:
    sighting = PipelineSource().recognise(pipeline_event(location=""), message_id=None)
    assert sighting is not None and sighting.ref.region is None and sighting.ref.kind is JobKind.PIPELINE_JOB


def test_a_pipeline_event_with_labels_that_are_no_object_reads_its_project_from_the_log_name() -> None:
    event = pipeline_event()
    event["resource"]["labels"] = "not labels"
    with pytest.raises(InvalidPushMessage, match="^PipelineJob entry without a valid project/location/pipeline_job_id"):
        PipelineSource().recognise(event, message_id=None)  # and without labels there is no pipeline id


@pytest.mark.parametrize(
    "change",
    [
        {"pipeline_job_id": None},
        {"pipeline_job_id": "Not A Valid Id!"},
        {"resource_container": None, "log_name": "somewhere/else"},
        {"resource_container": None, "log_name": None},
        {"location": "Nowhere 1"},
    ],
)
def test_a_pipeline_event_without_a_valid_job_is_malformed(change: dict) -> None:
    change = dict(change)
    log_name = change.pop("log_name", "keep")
    event = pipeline_event(**change)
    if log_name != "keep":
        event["logName"] = log_name
    with pytest.raises(InvalidPushMessage, match="^PipelineJob entry without a valid") as raised:
        PipelineSource().recognise(event, message_id=None)
    assert len(str(raised.value)) <= 500


@pytest.mark.parametrize(
    ("payload", "marks"),
    [
        ({"state": "PIPELINE_STATE_FAILED"}, True),
        ({"state": "PIPELINE_STATE_RUNNING"}, False),
        ({}, False),
        ("PIPELINE_STATE_FAILED", False),
        (None, False),
    ],
)
def test_a_pipeline_event_marks_failure_only_by_its_failed_state(payload: Any, marks: bool) -> None:
    assert PipelineSource().marks_failure({"jsonPayload": payload}) is marks


def pipeline_lookup(state: str | None) -> Lookup:
    if state is None:
        return Lookup(None, [])
    info = JobInfo(project=PROJECT, state=state)
    pipeline = PipelineInfo(name=f"projects/{PROJECT}/locations/{REGION}/pipelineJobs/{RUN}", state=state)
    return Lookup(Found(ref=pipeline_job(PROJECT, RUN, REGION), raw={}, info=info, pipeline=pipeline))


@pytest.mark.parametrize(
    ("state", "marker", "expected"),
    [
        ("PIPELINE_STATE_SUCCEEDED", True, Gate("recovered", "pipeline is PIPELINE_STATE_SUCCEEDED: not a failure")),
        ("PIPELINE_STATE_CANCELLED", False, Gate("recovered", "pipeline is PIPELINE_STATE_CANCELLED: not a failure")),
        ("PIPELINE_STATE_FAILED", False, Gate("post")),
        ("PIPELINE_STATE_RUNNING", True, Gate("post")),
        (None, True, Gate("post")),
        ("PIPELINE_STATE_RUNNING", False, Gate("held", "held: pipeline is PIPELINE_STATE_RUNNING")),
        (None, False, Gate("held", "held: pipeline is in an unknown state")),
    ],
)
def test_a_pipeline_is_posted_once_failed_else_held_or_recovered(
    state: str | None, marker: bool, expected: Gate
) -> None:
    assert PipelineSource().gate(pipeline_job(PROJECT, RUN), pipeline_lookup(state), marker) == expected


@pytest.fixture
def jobs(fake_google: FakeGoogleApis) -> Iterator[JobLookup]:
    yield JobLookup(
        jobs=VertexJobsClient(endpoint=fake_google.base_url),
        logs=None,
        pipelines=VertexPipelinesClient(endpoint=fake_google.base_url),
        regions=["us-central1", REGION],
    )


def pipeline_sighting() -> Sighting:
    return Sighting(ref=pipeline_job(PROJECT, RUN, REGION), entry=pipeline_event())


def test_a_pipeline_is_diagnosed_from_its_failed_tasks_job(fake_google: FakeGoogleApis, jobs: JobLookup) -> None:
    fake_google.seed_job(pipeline_job_json(PROJECT, REGION, RUN, failed_tasks={"train-model": "5005"}))
    fake_google.seed_job(custom_job_json(PROJECT, REGION, "5005", displayName="the-task"))
    lookup = jobs.job(pipeline_job(PROJECT, RUN, REGION), fresh=True)
    subject = PipelineSource().subject(pipeline_sighting(), lookup, jobs, deadline=Deadline(25))
    assert subject.logs_of == custom_job(PROJECT, "5005", REGION)
    assert subject.job is not None and subject.job.display_name == "the-task"
    assert subject.pipeline is not None and subject.pipeline.name.endswith(f"/pipelineJobs/{RUN}")
    assert subject.unavailable == [] and subject.notify_email is None


def test_a_failed_task_whose_job_cannot_be_read_is_named(fake_google: FakeGoogleApis, jobs: JobLookup) -> None:
    fake_google.seed_job(pipeline_job_json(PROJECT, REGION, RUN, failed_tasks={"train-model": "5005"}))
    lookup = jobs.job(pipeline_job(PROJECT, RUN, REGION), fresh=True)
    fake_google.inject(status=403, api="vertex")
    subject = PipelineSource().subject(pipeline_sighting(), lookup, jobs, deadline=Deadline(25))
    assert subject.logs_of == custom_job(PROJECT, "5005", REGION) and subject.job is None
    assert subject.unavailable and all(u.startswith("the failed task's ") for u in subject.unavailable)
    assert "aiplatform.customJobs.get" in subject.unavailable[0]


def test_a_pipeline_that_names_no_failed_task_says_so() -> None:
    lookup = pipeline_lookup("PIPELINE_STATE_FAILED")
    lookup.unavailable.append("Cloud Logging unavailable")
    subject = PipelineSource().subject(pipeline_sighting(), lookup, None, deadline=None)  # type: ignore[arg-type]
    assert subject.job is None and subject.logs_of is None and subject.pipeline is lookup.found.pipeline
    assert subject.unavailable == ["Cloud Logging unavailable", "the failed task: the pipeline names no failed task"]
    assert lookup.unavailable == ["Cloud Logging unavailable"]


def test_a_failed_task_that_ran_as_no_custom_job_is_not_looked_up() -> None:
    lookup = pipeline_lookup("PIPELINE_STATE_FAILED")
    pipeline = lookup.found.pipeline.model_copy(update={"failed_tasks": [FailedTask(name="split", custom_job=None)]})
    lookup = Lookup(Found(ref=lookup.found.ref, raw={}, info=lookup.found.info, pipeline=pipeline), [])
    subject = PipelineSource().subject(pipeline_sighting(), lookup, None, deadline=None)  # type: ignore[arg-type]
    assert subject == Subject(job=None, logs_of=None, pipeline=pipeline, unavailable=[])


def test_a_pipeline_not_found_is_diagnosed_from_its_event_alone() -> None:
    lookup = Lookup(None, ["Vertex AI unavailable"])
    subject = PipelineSource().subject(pipeline_sighting(), lookup, None, deadline=None)  # type: ignore[arg-type]
    assert subject == Subject(job=None, logs_of=None, unavailable=["Vertex AI unavailable"])
    subject.unavailable.append("more")
    assert lookup.unavailable == ["Vertex AI unavailable"]


# ------------------------------------------------------------------------------------ Monitoring incidents


def notification(**fields: Any) -> dict:
    body: dict[str, Any] = {
        "incident_id": "0.abc",
        "state": "open",
        "scoping_project_id": PROJECT,
        "resource": {"labels": {"project_id": PROJECT, "job_id": "6001"}},
        "policy_name": "Low GPU utilization",
        "summary": "GPU utilization is low.",
        "started_at": 1764417600,
        "ended_at": 1764421200,
    }
    body.update(fields)
    return {"version": "1.2", "incident": body}


@pytest.mark.parametrize("data", ["text", None, {"version": "1.2"}, {"resource": {"type": "ml_job"}}])
def test_monitoring_passes_on_what_is_no_notification(data: Any) -> None:
    assert MonitoringSource().recognise(data, message_id=None) is None
    assert is_incident(data) is False


def test_a_notification_whose_incident_is_no_object_is_malformed() -> None:
    assert is_incident({"incident": "x"}) is False and is_incident(notification()) is True
    with pytest.raises(InvalidPushMessage, match="without an 'incident' object"):
        MonitoringSource().recognise({"incident": ["x"]}, message_id=None)


@pytest.mark.parametrize(
    ("state", "said"),
    [("acknowledged", "'acknowledged'"), (None, "'none'"), ("", "'missing'"), ("x" * 99, repr("x" * 40))],
)
def test_incidents_neither_open_nor_closed_are_irrelevant(state: Any, said: str) -> None:
    fields = {"state": state} if state is not None else {}
    body = notification(**fields)
    if state is None:
        del body["incident"]["state"]
        said = "'missing'"
    with pytest.raises(Irrelevant) as raised:
        MonitoringSource().recognise(body, message_id=None)
    assert raised.value.reason == f"incident state is {said}, only open incidents are diagnosed"


def test_an_open_incident_becomes_a_warning_entry_of_its_job() -> None:
    sighting = MonitoringSource().recognise(notification(condition_name="duty cycle"), message_id="m-1")
    assert sighting is not None and sighting.ref == custom_job(PROJECT, "6001")
    assert sighting.updates_only is None and sighting.marks_failure is False
    entry = sighting.entry
    assert entry["insertId"] == "incident-0.abc" and entry["severity"] == "WARNING"
    assert entry["resource"] == {
        "type": "ml_job",
        "labels": {"project_id": PROJECT, "job_id": "6001", "task_name": "monitoring"},
    }
    assert entry["textPayload"] == "Low GPU utilization | duty cycle | GPU utilization is low."
    assert entry["timestamp"] == datetime.fromtimestamp(1764417600).astimezone().isoformat()
    body = notification(condition_name="duty cycle")["incident"]
    assert entry["labels"] == incident_labels(body, incident_id="0.abc", state="open")
    assert entry["labels"][LABEL_ID] == "0.abc" and entry["labels"][LABEL_STATE] == "open"


def test_a_closed_incident_only_updates_its_jobs_alert() -> None:
    sighting = MonitoringSource().recognise(notification(state="CLOSED"), message_id=None)
    assert sighting is not None and sighting.ref == custom_job(PROJECT, "6001")
    assert sighting.updates_only == (
        "incident state is 'closed', only open incidents are diagnosed; no alert of incident 0.abc to update"
    )
    entry = sighting.entry
    assert entry["insertId"] == "incident-0.abc-closed" and entry["severity"] == "INFO"
    assert entry["timestamp"] == datetime.fromtimestamp(1764421200).astimezone().isoformat()  # ended_at
    assert entry["labels"][LABEL_ID] == "0.abc" and entry["labels"][LABEL_STATE] == "closed"


def test_a_closed_incident_of_no_valid_project_is_irrelevant() -> None:
    for project in (None, "Not A Project"):
        body = notification(state="closed", scoping_project_id=project, resource={})
        with pytest.raises(Irrelevant) as raised:
            MonitoringSource().recognise(body, message_id=None)
        assert raised.value.reason == (
            "incident state is 'closed', only open incidents are diagnosed; the closed incident names no project"
            " with an alert"
        )


def test_an_open_incident_of_no_job_is_keyed_by_the_incident() -> None:
    sighting = MonitoringSource().recognise(notification(resource={}), message_id=None)
    assert sighting is not None and sighting.ref == incident(PROJECT, "0.abc")
    assert sighting.entry["resource"]["labels"]["job_id"] == ""


def test_an_incident_without_an_id_is_keyed_by_the_message_else_by_its_content() -> None:
    source = MonitoringSource()
    by_message = source.recognise(notification(resource={}, incident_id=None), message_id="msg-7")
    assert by_message is not None and by_message.ref.id == "msg-7"
    first = source.recognise(notification(resource={}, incident_id=None), message_id=None)
    again = source.recognise(notification(resource={}, incident_id=None), message_id=None)
    other = source.recognise(notification(resource={}, incident_id=None, summary="else"), message_id=None)
    assert first is not None and again is not None and other is not None
    assert re.fullmatch(r"[0-9a-f]{32}", first.ref.id) and first.ref == again.ref and other.ref != first.ref


def test_an_incident_naming_no_or_an_invalid_project_is_malformed() -> None:
    with pytest.raises(InvalidPushMessage, match=r"^incident names no project \(resource.labels.project_id"):
        MonitoringSource().recognise(notification(resource={}, scoping_project_id=None), message_id=None)
    with pytest.raises(InvalidPushMessage, match="^incident names an invalid project id: 'Bad Project'$"):
        MonitoringSource().recognise(notification(resource={}, scoping_project_id="Bad Project"), message_id=None)


def test_incident_job_prefers_the_resource_labels_and_drops_ids_that_are_no_job() -> None:
    assert incident_job(
        {"resource": {"labels": {"project_id": "p-1", "job_id": "7"}}, "scoping_project_id": "p-2"}
    ) == (
        "p-1",
        "7",
    )
    assert incident_job({"scoping_project_id": "p-2", "summary": "customJobs/88 is slow"}) == ("p-2", "88")
    assert incident_job({"metric": {"labels": {"job": "abc"}}}) == (None, None)
    assert incident_job({"resource": "x", "metric": [], "metadata": None}) == (None, None)


def test_monitoring_posts_whatever_the_jobs_state_and_reads_a_jobs_logs_only() -> None:
    source = MonitoringSource()
    assert source.marks_failure({"textPayload": "Job failed."}) is False
    assert source.gate(custom_job(PROJECT, "6001"), looked_up("JOB_STATE_RUNNING"), False) == Gate("post")
    lookup = looked_up("JOB_STATE_RUNNING", unavailable=["x"])
    on_job = source.subject(Sighting(ref=custom_job(PROJECT, "6001"), entry={}), lookup, None, deadline=None)  # type: ignore[arg-type]
    assert on_job == Subject(job=lookup.job, logs_of=custom_job(PROJECT, "6001"), unavailable=["x"])
    alone = source.subject(Sighting(ref=incident(PROJECT, "0.abc"), entry={}), Lookup(None, []), None, deadline=None)  # type: ignore[arg-type]
    assert alone == Subject(job=None, logs_of=None)


# ------------------------------------------------------------------------------------ refused creations


def refused(
    message: str | None = "Quota exceeded",
    *,
    code: Any = 8,
    method: str = "google.cloud.aiplatform.v1.JobService.CreateCustomJob",
    caller: Any = CALLER,
    project: str = PROJECT,
    **extra: Any,
) -> dict:
    status: dict[str, Any] = {"code": code}
    if message is not None:
        status["message"] = message
    proto: dict[str, Any] = {
        "serviceName": "aiplatform.googleapis.com",
        "methodName": method,
        "status": status,
        "resourceName": f"projects/{PROJECT}/locations/us-central1",
        "authenticationInfo": {"principalEmail": caller},
    }
    proto.update(extra.pop("proto", {}))
    entry = {
        "insertId": "audit-1",
        "logName": f"projects/{PROJECT}/logs/cloudaudit.googleapis.com%2Factivity",
        "resource": {"type": "audited_resource", "labels": {"project_id": project}},
        "protoPayload": proto,
        "timestamp": "2026-11-30T10:15:00.123Z",
    }
    entry.update(extra)
    return entry


def recognise(data: Any, message_id: str | None = None) -> Sighting:
    sighting = AuditLogSource().recognise(data, message_id=message_id)
    assert sighting is not None
    return sighting


@pytest.mark.parametrize(
    "data",
    ["text", None, {"protoPayload": "x"}, {"protoPayload": {"serviceName": "compute.googleapis.com"}}],
)
def test_audit_source_passes_on_other_services(data: Any) -> None:
    assert AuditLogSource().recognise(data, message_id=None) is None


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        (
            refused(method="google.cloud.aiplatform.v1.JobService.GetCustomJob"),
            "audit entry for 'google.cloud.aiplatform.v1.JobService.GetCustomJob', not a job creation",
        ),
        (refused(method="x" * 300), f"audit entry for {'x' * 120!r}, not a job creation"),
        (refused(code=0), "a job creation that succeeded"),
        (refused(code=None), "a job creation that succeeded"),
        (refused(proto={"status": "refused"}), "a job creation that succeeded"),
    ],
)
def test_audit_entries_that_are_no_refused_creation_are_irrelevant(entry: dict, reason: str) -> None:
    with pytest.raises(Irrelevant) as raised:
        AuditLogSource().recognise(entry, message_id=None)
    assert raised.value.reason == reason


@pytest.mark.parametrize(
    "method",
    [
        "google.cloud.aiplatform.v1beta1.JobService.CreateHyperparameterTuningJob",
        "google.cloud.aiplatform.ui.PipelineService.CreatePipelineJob",
        "google.cloud.aiplatform.v1.PipelineService.CreateTrainingPipeline",
    ],
)
def test_every_training_create_call_counts(method: str) -> None:
    assert recognise(refused(method=method)).entry["labels"][LABEL_METHOD] == method.rsplit(".", 1)[1]


@pytest.mark.parametrize("project", ["", "Bad Project"])
def test_a_refusal_without_a_valid_project_is_malformed(project: str) -> None:
    with pytest.raises(InvalidPushMessage, match="^audit entry without a valid resource.labels.project_id"):
        AuditLogSource().recognise(refused(project=project), message_id=None)
    no_resource = refused()
    no_resource["resource"] = "audited_resource"
    with pytest.raises(InvalidPushMessage):
        AuditLogSource().recognise(no_resource, message_id=None)


def test_a_refusal_is_a_failure_entry_of_a_refusal_keyed_by_caller_call_message_and_day() -> None:
    sighting = recognise(refused())
    ref = sighting.ref
    assert (ref.project, ref.kind, ref.region) == (PROJECT, JobKind.REFUSAL, "us-central1")
    assert re.fullmatch(r"[0-9a-f]{16}-20261130", ref.id)
    assert sighting.marks_failure is True and sighting.updates_only is None
    assert sighting.entry == {
        "insertId": "audit-1",
        "logName": f"projects/{PROJECT}/logs/cloudaudit.googleapis.com%2Factivity",
        "resource": {"type": "audited_resource", "labels": {"project_id": PROJECT, "task_name": "service"}},
        "labels": {LABEL_METHOD: "CreateCustomJob", LABEL_PRINCIPAL: CALLER},
        "severity": "ERROR",
        "textPayload": "Quota exceeded",
        "timestamp": "2026-11-30T10:15:00.123Z",
    }
    assert AuditLogSource().marks_failure(sighting.entry) is True
    assert recognise(refused(insertId="audit-2")).ref == ref  # a retry the same day: the same alert
    assert recognise(refused("Another refusal")).ref != ref
    assert recognise(refused(caller="eve@acme.example")).ref != ref
    assert recognise(refused(method="google.cloud.aiplatform.v1.JobService.CreatePipelineJob")).ref != ref
    next_day = recognise(refused(timestamp="2026-12-01T00:00:01Z")).ref
    assert next_day.id == ref.id.replace("20261130", "20261201")


def test_a_refusals_day_falls_back_to_the_receive_time_then_today() -> None:
    received = recognise(refused(timestamp=None, receiveTimestamp="2026-11-29T23:59:59Z"))
    assert received.ref.id.endswith("-20261129")
    today = datetime.now(UTC).strftime("%Y%m%d")
    assert recognise(refused(timestamp="not a time")).ref.id.endswith(f"-{today}")


def test_a_refusal_without_a_status_message_says_which_call_and_code() -> None:
    assert recognise(refused(None, code=7)).entry["textPayload"] == "CreateCustomJob refused with code 7"


def test_a_refusal_entry_is_named_by_its_id_else_the_message_else_its_digest() -> None:
    assert recognise(refused(insertId=None), message_id="msg-1").entry["insertId"] == "msg-1"
    by_digest = recognise(refused(insertId=None)).entry["insertId"]
    assert re.fullmatch(r"[0-9a-f]{16}", by_digest)


@pytest.mark.parametrize("caller", [None, 42, "no-at-sign", "a@" + "b" * 260])
def test_a_refusal_without_a_usable_caller_names_nobody(caller: Any) -> None:
    sighting = recognise(refused(caller=caller))
    assert LABEL_PRINCIPAL not in sighting.entry["labels"]
    assert sighting.job is not None and sighting.job.submitted_by is None
    subject = AuditLogSource().subject(sighting, Lookup(None, []), None, deadline=None)  # type: ignore[arg-type]
    assert subject.notify_email is None


@pytest.mark.parametrize(
    "resource_name", ["projects/acme-ml/locations/Not A Region/x", "projects/acme-ml", "elsewhere", None]
)
def test_a_refusal_without_a_valid_region_has_none(resource_name: Any) -> None:
    assert recognise(refused(proto={"resourceName": resource_name})).ref.region is None


def test_a_refusal_tells_its_caller_and_is_diagnosed_from_what_the_request_said() -> None:
    request = {
        "name": "ignored",
        "displayName": "nightly-train",
        "labels": {"team": "vision"},
        "jobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": "a2-highgpu-4g"}, "replicaCount": "2"}]},
    }
    sighting = recognise(refused(proto={"request": {"pipelineJob": "x", "customJob": request}}))
    job = sighting.job
    assert job is not None
    assert (job.project, job.region, job.submitted_by) == (PROJECT, "us-central1", CALLER)
    assert job.display_name == "nightly-train" and job.labels == {"team": "vision"} and job.name is None
    assert job.worker_pools and job.worker_pools[0].replica_count == 2
    source = AuditLogSource()
    assert source.gate(sighting.ref, Lookup(None, []), False) == Gate("post")
    subject = source.subject(sighting, Lookup(None, ["x"]), None, deadline=None)  # type: ignore[arg-type]
    assert subject == Subject(job=job, logs_of=None, notify_email=CALLER)


def test_a_refusal_whose_request_cannot_be_read_is_still_a_refused_job() -> None:
    ref = JobRef(project=PROJECT, id="0123456789abcdef-20261130", kind=JobKind.REFUSAL, region="us-central1")
    unreadable = refused_job(ref, {"jobSpec": "not a spec", "labels": []}, CALLER)
    assert unreadable == JobInfo(
        project=PROJECT, region="us-central1", submitted_by=CALLER, display_name="job creation refused"
    )
    assert refused_job(ref, None, None).display_name == "job creation refused"
    assert recognise(refused(proto={"request": "text"})).job.display_name == "job creation refused"


@pytest.mark.parametrize("labels", [None, "x", {}, {"other": "y"}])
def test_only_a_refusal_entry_marks_a_refusal(labels: Any) -> None:
    assert AuditLogSource().marks_failure({"labels": labels}) is False
