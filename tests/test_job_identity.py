"""The one job identity: keys and resource names round-trip, every part is checked, kinds are told apart."""

from __future__ import annotations

import pytest

from bot.jobs.identity import (
    JobIdError,
    JobKind,
    JobRef,
    custom_job,
    incident,
    key_kind,
    location_name,
    parse_key,
    parse_resource_name,
    pipeline_job,
)


@pytest.mark.parametrize(
    ("ref", "key"),
    [
        (custom_job("acme-ml", "8501620632646057984"), "acme-ml/8501620632646057984"),
        (pipeline_job("acme-ml", "train-20261130101500"), "acme-ml/pipelineJobs/train-20261130101500"),
        (incident("acme-ml", "0.abc-_9"), "acme-ml/incident-0.abc-_9"),
        (JobRef("acme-ml", "0123456789abcdef-20261130", JobKind.REFUSAL), "acme-ml/refusals/0123456789abcdef-20261130"),
    ],
)
def test_keys_round_trip_and_name_their_kind(ref: JobRef, key: str) -> None:
    assert ref.key == key
    assert parse_key(key) == ref
    assert key_kind(key) is ref.kind


def test_resource_names_round_trip_with_the_region() -> None:
    ref = pipeline_job("acme-ml", "train-20261130101500", "europe-west4")
    assert ref.resource_name == "projects/acme-ml/locations/europe-west4/pipelineJobs/train-20261130101500"
    assert parse_resource_name(ref.resource_name) == ref
    with pytest.raises(JobIdError, match="no resource name without a region"):
        _ = custom_job("acme-ml", "1").resource_name
    with pytest.raises(JobIdError, match="no resource name"):
        _ = incident("acme-ml", "x").resource_name
    assert location_name("acme-ml", "us-central1") == "projects/acme-ml/locations/us-central1"


@pytest.mark.parametrize(
    ("build", "problem"),
    [
        (lambda: custom_job("acme-ml", "12ab"), "custom job ids are numbers"),
        (lambda: custom_job("Acme_ML", "1"), "'Acme_ML' is not a valid project"),
        (lambda: custom_job("ab", "1"), "'ab' is not a valid project"),
        (lambda: pipeline_job("acme-ml", "Bad_Run"), "pipeline job ids are lowercase"),
        (lambda: custom_job("acme-ml", "1", "moon"), "'moon' is not a valid region"),
        (lambda: parse_key("acme-ml"), "is not a job key"),
        (lambda: parse_key("acme-ml/trainingPipelines/1"), "unknown kind"),
        (lambda: parse_resource_name("projects/p/locations/l/trainingPipelines/1"), "not a CustomJob or PipelineJob"),
        (lambda: location_name("acme-ml", "moon"), "not a region"),
        (lambda: location_name("Acme ML", "us-central1"), "not a project id or number"),
    ],
)
def test_every_part_is_checked_with_a_clear_reason(build: object, problem: str) -> None:
    with pytest.raises(JobIdError, match=problem):
        build()  # type: ignore[operator]


def test_a_key_of_unknown_shape_renders_as_a_custom_job() -> None:
    assert key_kind("my-proj/us-central1/8501620632646057984") is JobKind.CUSTOM_JOB
