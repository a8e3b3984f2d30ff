"""How a Diagnosis is assembled from the winning class (bot.diagnosis.diagnosis_assembly), pinned through the
classifier on small knowledge bases built here: the variant's texts and commands, the evidence lines (strongest
signals first, three per signal, ten in all, redacted, one per repeated line, cut at 400 characters), the first
failing replica, the cascade lines, and the details commands are filled from (captures, decisive lines, the
job, derivations, the job's service account)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.diagnosis.calibration import Calibration
from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import KnowledgeBase, default_knowledge_dir, load_class_file
from bot.diagnosis.knowledge_schema import FailureClass
from bot.intake.log_input import text_to_lines
from bot.models import Command, Diagnosis, JobInfo, LogLine
from tests.test_guard_classifier import fclass, sig

T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
UNKNOWN_CLASS = load_class_file(default_knowledge_dir() / "unknown.yaml")
AGENT = "service-{}@gcp-sa-aiplatform-cc.iam.gserviceaccount.com"


def make(*classes: FailureClass) -> Classifier:
    return Classifier(KnowledgeBase([*classes, UNKNOWN_CLASS], Calibration(), {}, None))


def line(text: str, replica: str | None = None, seconds: float | None = None, **extra: Any) -> LogLine:
    stamp = None if seconds is None else T0 + timedelta(seconds=seconds)
    return LogLine(text=text, replica=replica, timestamp=stamp, **extra)


def run(c: Classifier, text: str, job: JobInfo | None = None) -> Diagnosis:
    return c.classify(text_to_lines(text), job)


ALPHA = fclass("alpha", sig("fails", "alpha fails", 0.9))


# ---- texts, variants, commands ----------------------------------------------------------------------------------

DESCRIBE = {"title": "Describe {job_id}", "template": "gcloud ai custom-jobs describe {job_id}", "requires": ["job_id"]}
LOGS = {"title": "Logs", "template": "gcloud logging read {job_id} --project={project}"}


def variant_class() -> FailureClass:
    return fclass(
        "alpha",
        sig("plain", "alpha plain", 0.4),
        sig("strong", "alpha strong", 0.9),
        sig("to_a", "alpha a", 0.5, variant="a"),
        sig("why_a", "alpha why", 0.0, variant="a"),
        sig("to_b", "alpha b", 0.7, variant="b"),
        sig("turn", "alpha turns", 0.2, sets={"curve": "val_loss best at epoch 3"}),
        variants={
            "a": {"title": "alpha a title", "remediation": ["fix a"], "commands": [LOGS]},
            "b": {"title": "alpha b title", "avoid": ["avoid b"], "first_checks": ["check b"]},
        },
        commands=[DESCRIBE],
    )


def test_the_strongest_variant_signal_picks_the_texts_and_the_class_fills_the_rest() -> None:
    c = make(variant_class())
    job = JobInfo(job_id="77", project="acme-ml")
    both = run(c, "alpha a\nalpha b\nalpha plain", job)
    assert (both.title, both.symptom, both.remediation) == ("alpha b title", "alpha symptom", ["fix alpha"])
    assert (both.avoid, both.first_checks) == (["avoid b"], ["check b"])
    assert both.commands == [Command(title="Describe 77", command="gcloud ai custom-jobs describe 77")]
    only_a = run(c, "alpha a\nalpha plain", job)
    assert (only_a.title, only_a.remediation, only_a.avoid) == ("alpha a title", ["fix a"], ["avoid alpha"])
    assert only_a.commands == [Command(title="Logs", command="gcloud logging read 77 --project=acme-ml")]
    plain = run(c, "alpha plain", job)
    assert (plain.title, plain.remediation, plain.first_checks) == ("alpha title", ["fix alpha"], ["check alpha"])
    assert plain.commands == [Command(title="Describe 77", command="gcloud ai custom-jobs describe 77")]
    assert plain.finding is None
    # a weighted variant yields to a stronger signal of the class itself; a weight-0 one only explains: it chooses
    strong = run(c, "alpha b\nalpha strong", job)
    assert (strong.title, strong.avoid) == ("alpha title", ["avoid alpha"])
    explained = run(c, "alpha why\nalpha strong", job)
    assert (explained.title, explained.remediation) == ("alpha a title", ["fix a"])
    turned = run(c, "alpha plain\nalpha turns", job)
    assert turned.finding == "val_loss best at epoch 3" and turned.details["curve"] == turned.finding


# ---- evidence ---------------------------------------------------------------------------------------------------


def test_evidence_takes_three_lines_per_signal_strongest_first_ten_in_all_in_log_order() -> None:
    weights = {5: 0.5, 6: 0.6, 7: 0.7, 8: 0.8, 9: 0.9}
    c = make(fclass("alpha", *(sig(f"s{n}", f"s{n} line", w) for n, w in weights.items())))
    text = "\n".join(f"s{n} line {k}" for k in range(4) for n in weights)
    assert run(c, text).evidence == [
        "s6 line 0",
        "s7 line 0",
        "s8 line 0",
        "s9 line 0",
        "s7 line 1",
        "s8 line 1",
        "s9 line 1",
        "s7 line 2",
        "s8 line 2",
        "s9 line 2",
    ]


def test_a_line_another_signal_took_does_not_count_against_the_weaker_signals_three() -> None:
    c = make(fclass("alpha", sig("fatal", "fatal", 0.9), sig("boom", "boom", 0.5)))
    assert run(c, "fatal boom\nboom 1\nboom 2\nboom 3\nboom 4").evidence == [
        "fatal boom",
        "boom 1",
        "boom 2",
        "boom 3",
    ]


def test_a_line_repeated_on_the_same_replica_is_evidence_once_and_is_shown_stripped() -> None:
    log = [
        line("  boom  ", "workerpool0-0", 1),
        line("boom", "workerpool0-0", 2),
        line("boom  ", "workerpool0-0", 3),
        line("  boom", "workerpool0-0", 4),
        line("boom", "workerpool0-1", 5),
        line("boom", "workerpool0-1", 6),
        line("boom", "workerpool0-2", 7),
    ]
    evidence = make(fclass("alpha", sig("boom", "boom", 0.9))).classify(log).evidence
    assert evidence == ["[workerpool0-0] boom", "[workerpool0-1] boom", "[workerpool0-2] boom"]


def test_evidence_is_redacted_cut_at_400_characters_and_names_real_replicas_only() -> None:
    exact = "alpha fails " + "x" * 388
    long = "alpha fails token=abcdef " + "y" * 400
    log = [
        line(exact, "workerpool0-0"),
        line(long, "service"),
        line("alpha fails in monitoring", "monitoring"),
        line("alpha fails with no replica"),
    ]
    evidence = (
        make(fclass("alpha", sig("fails", "alpha fails", 0.9, min_count=1), sig("x", "with no", 0.8)))
        .classify(log)
        .evidence
    )
    assert len(exact) == 400
    cut = "alpha fails token=[REDACTED] " + "y" * 370 + "…"
    assert len(cut) == 400
    assert evidence == [f"[workerpool0-0] {exact}", cut, "alpha fails in monitoring", "alpha fails with no replica"]


# ---- replicas and the cascade -----------------------------------------------------------------------------------


def test_the_first_failing_replica_is_the_earliest_line_that_names_one() -> None:
    c = make(ALPHA)
    assert c.classify([line("alpha fails"), line("alpha fails", "workerpool0-2")]).first_failing_replica == (
        "workerpool0-2"
    )
    for text, replica in [
        ("alpha fails: worker replica 2 exited", "worker-replica-2"),
        ("alpha fails: chief-replica-0 exited", "chief-replica-0"),
        ("alpha fails: evaluator replica 1", "evaluator-replica-1"),
        ("alpha fails in workerpool1-3 and workerpool0-0", "workerpool1-3"),
        ("alpha fails: reworkerpool1-3x", None),
    ]:
        assert run(c, text).first_failing_replica == replica, text
    service = c.classify([line("alpha fails on workerpool0-1", "service"), line("alpha fails", "monitoring")])
    assert service.first_failing_replica == "workerpool0-1"
    assert service.details["task_name"] == "workerpool0-1"


def test_cascade_lines_name_each_other_replica_once_redacted_and_cut_at_160() -> None:
    c = make(
        fclass("sec", sig("timeout", "collective timeout", 0.9), secondary=True), fclass("prim", sig("p", "oom", 0.8))
    )
    long = "collective timeout password=hunter2 " + "z" * 200
    log = [
        line("oom on this one", "workerpool0-0", 1),
        line("collective timeout on the first replica too", "workerpool0-0", 2),
        line(long, "workerpool1-0", 3),
        line("collective timeout again", "workerpool1-0", 4),
        line("collective timeout from a replica nobody named", None, 5),
        line("collective timeout seen by the service on ps-replica-0", "service", 6),
    ]
    diagnosis = c.classify(log)
    assert diagnosis.failure_class == "prim" and diagnosis.first_failing_replica == "workerpool0-0"
    assert diagnosis.cascade == [
        "workerpool1-0 (sec): " + ("collective timeout password=[REDACTED] " + "z" * 200)[:160],
        "? (sec): collective timeout from a replica nobody named",
        "ps-replica-0 (sec): collective timeout seen by the service on ps-replica-0",
    ]


# ---- details ----------------------------------------------------------------------------------------------------


def test_captures_are_stripped_and_the_strongest_signal_captures_first() -> None:
    c = make(
        fclass(
            "alpha",
            sig("weak", r"weak zone=(?P<zone>[^,]+),", 0.5),
            sig("strong", r"strong zone=(?P<zone>[^,]+), bucket=(?P<bucket>[^,]+),", 0.9),
            sig("region", r"in (?P<region>[a-z]+-[a-z]+\d)", 0.3),
        )
    )
    job = JobInfo(job_id="5", project="acme-ml", region="us-central1")
    diagnosis = run(c, "weak zone=us-east1-b,\nstrong zone= europe-west4-a , bucket=  my-bucket  ,\nin asia-east1", job)
    assert diagnosis.details == {
        "zone": "europe-west4-a",
        "bucket": "my-bucket",
        "region": "asia-east1",  # a capture beats the job's value
        "job_id": "5",
        "project": "acme-ml",
        "job_region": "us-central1",  # ... and the job's own commands keep the region it ran in
    }


def test_details_from_the_job_and_its_resource_name() -> None:
    job = JobInfo(
        name="projects/987654/locations/us-central1/customJobs/55",
        job_id="55",
        project="acme-ml",
        region="us-central1",
        display_name="train-resnet",
        service_account="trainer@acme-ml.iam.gserviceaccount.com",
    )
    assert run(make(ALPHA), "alpha fails", job).details == {
        "job_id": "55",
        "project": "acme-ml",
        "region": "us-central1",
        "display_name": "train-resnet",
        "job_service_account": "trainer@acme-ml.iam.gserviceaccount.com",
        "project_number": "987654",
        "job_region": "us-central1",
        "service_account": "trainer@acme-ml.iam.gserviceaccount.com",
    }


def test_a_numeric_project_is_the_project_number_and_the_first_number_found_wins() -> None:
    job = JobInfo(name="projects/222/locations/us-central1/customJobs/55", job_id="55", project="111")
    assert run(make(ALPHA), "alpha fails", job).details == {
        "job_id": "55",
        "project_number": "111",
        "service_account": AGENT.format("111"),
    }
    logged = [line("alpha fails", job_id="4242", project_id="acme-logged")]
    details = make(ALPHA).classify(logged, job).details
    assert (details["project"], details["project_number"], details["job_id"]) == ("acme-logged", "111", "55")
    named = make(ALPHA).classify([line("alpha fails")], job.model_copy(update={"project": None})).details
    assert named == {"job_id": "55", "project_number": "222", "service_account": AGENT.format("222")}
    numeric_log = [line("step 1", project_id="333"), line("alpha fails", project_id="acme-late")]
    # the first line that names a project is the one read: here a project number
    assert make(ALPHA).classify(numeric_log).details == {
        "project_number": "333",
        "service_account": AGENT.format("333"),
    }


def test_the_log_gives_the_job_id_project_and_project_number_when_the_job_does_not() -> None:
    log = [
        line("step 1"),
        line("alpha fails", "workerpool0-0", job_id="4242", project_id="acme-ml"),
        line("see https://console.cloud.google.com/logs/viewer?project=55501&resource=ml_job"),
    ]
    assert make(ALPHA).classify(log).details == {
        "project_number": "55501",
        "job_id": "4242",
        "project": "acme-ml",
        "service_account": AGENT.format("55501"),
        "task_name": "workerpool0-0",
    }
    job = JobInfo(job_id="9", project="777")
    assert make(ALPHA).classify(log, job).details["project_number"] == "55501"  # the log's link beats the job's


def test_the_service_account_is_the_principal_the_job_account_or_the_default_agent() -> None:
    c = make(fclass("alpha", sig("denied", r"(?P<principal>\S+@\S+) does not have", 0.9)))
    job = JobInfo(job_id="1", project="111", service_account="trainer@acme-ml.iam.gserviceaccount.com")
    robot = run(c, "robot@other-proj.iam.gserviceaccount.com does not have access", job).details
    assert robot["service_account"] == "robot@other-proj.iam.gserviceaccount.com"
    person = run(c, "ana@example.com does not have access", job).details
    assert person["service_account"] == "trainer@acme-ml.iam.gserviceaccount.com"
    agent = run(c, "ana@example.com does not have access", job.model_copy(update={"service_account": None})).details
    assert agent["service_account"] == AGENT.format("111")
    nobody = run(c, "ana@example.com does not have access", JobInfo(job_id="1")).details
    assert nobody == {"principal": "ana@example.com", "job_id": "1"}


def test_a_captured_service_account_stays_when_nothing_else_names_one() -> None:
    c = make(fclass("alpha", sig("sa", r"as (?P<service_account>\S+)$", 0.9)))
    assert run(c, "alpha runs as runner@acme-ml.iam.gserviceaccount.com").details == {
        "service_account": "runner@acme-ml.iam.gserviceaccount.com",
        "project": "acme-ml",  # completed from the account's address, and said so
        "project_read_from": "a service account's address",
    }


def test_task_name_is_the_first_failing_vertex_task_or_a_capture() -> None:
    c = make(ALPHA)
    assert c.classify([line("alpha fails", "workerpool1-2")]).details == {"task_name": "workerpool1-2"}
    assert run(c, "alpha fails on worker replica 3").details == {}  # not a Vertex AI task name
    captured = make(fclass("alpha", sig("t", r"alpha fails in (?P<task_name>\S+)", 0.9)))
    assert captured.classify([line("alpha fails in workerpool0-5", "workerpool1-2")]).details == {
        "task_name": "workerpool0-5"
    }
    unknown = make(ALPHA).classify([line("step 1", "workerpool1-2")], JobInfo(job_id="3", region="us-east1"))
    assert unknown.failure_class == "unknown"
    assert unknown.details == {"job_id": "3", "region": "us-east1", "job_region": "us-east1"}


def test_derivations_map_a_detail_fall_back_to_their_default_and_never_replace_a_capture() -> None:
    derive = {
        "role": {
            "source": "permission",
            "map": {"storage.objects.*": "roles/storage.objectViewer"},
            "default": "roles/custom",
        },
        "flavour": {"source": "missing", "map": {"x": "y"}},
        "echo": {"source": "role", "map": {"roles/storage.objectViewer": "viewer-of-objects"}},
    }
    c = make(
        fclass(
            "alpha",
            sig("perm", r"lacks (?P<permission>[a-z.]+)", 0.9),
            sig("role", r"needs role (?P<role>\S+)", 0.5),
            derive=derive,
        )
    )
    assert run(c, "alpha lacks storage.objects.get").details == {
        "permission": "storage.objects.get",
        "role": "roles/storage.objectViewer",
        "echo": "viewer-of-objects",
    }
    assert run(c, "alpha lacks bigquery.tables.get").details == {
        "permission": "bigquery.tables.get",
        "role": "roles/custom",
    }
    assert run(c, "alpha lacks x.y.z\nneeds role roles/mine").details == {"permission": "x.y.z", "role": "roles/mine"}
    no_source = make(fclass("alpha", sig("other", "alpha fails", 0.9), derive=derive))
    assert run(no_source, "alpha fails").details == {"role": "roles/custom"}


# ---- what the decisive lines (and their neighbours) say ---------------------------------------------------------

DENIED = fclass("permission_denied", sig("denied", "PERMISSION_DENIED", 0.9))


def bucket(lines: list[str]) -> str | None:
    return run(make(DENIED), "\n".join(lines)).details.get("bucket")


def test_the_two_lines_before_and_three_after_a_decisive_line_are_read() -> None:
    assert bucket(["gs://far-bucket/a", "one", "two", "PERMISSION_DENIED: refused"]) is None
    assert bucket(["one", "gs://near-bucket/a", "two", "PERMISSION_DENIED: refused"]) == "near-bucket"
    assert bucket(["PERMISSION_DENIED: refused", "one", "two", "gs://after-bucket/a", "x"]) == "after-bucket"
    assert bucket(["PERMISSION_DENIED: refused", "one", "two", "three", "gs://late-bucket/a"]) is None
    assert bucket(["PERMISSION_DENIED: refused on gs://own-bucket/a", "one"]) == "own-bucket"
    assert bucket(["one", "two", "three", "PERMISSION_DENIED: refused on gs://last-bucket/a"]) == "last-bucket"


def test_only_the_first_twenty_decisive_lines_are_read() -> None:
    lines = [f"step {n}" for n in range(215)]
    for n in range(0, 210, 10):  # 21 decisive lines
        lines[n] = f"PERMISSION_DENIED: refused ({n})"
    within, beyond = list(lines), list(lines)
    within[193] = "gs://within-bucket/a"  # three after the 20th
    beyond[203] = "gs://beyond-bucket/a"  # three after the 21st
    assert bucket(within) == "within-bucket"
    assert bucket(beyond) is None


def test_a_decisive_line_repeated_word_for_word_counts_once_toward_the_twenty() -> None:
    # every replica logs the same refusal: the distinct line after its copies is still read
    lines = ["PERMISSION_DENIED: refused" if n % 2 == 0 else f"step {n}" for n in range(60)]
    lines += ["PERMISSION_DENIED: refused by the bucket", "gs://named-after-the-copies/a"]
    assert bucket(lines) == "named-after-the-copies"
    # twenty distinct decisive lines before it: the limit still holds
    distinct = [f"PERMISSION_DENIED: refused ({n})" for n in range(20)] + ["one", "two", "three", *lines[-2:]]
    assert bucket(distinct) is None
