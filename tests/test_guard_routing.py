"""Routing: which channel owns a failed job and who may rerun it (README "Routing file")."""

from __future__ import annotations

import pytest

from bot.alerting.routing import Destination, destination_for
from bot.config import RoutingConfig
from bot.models import JobInfo

JOB = JobInfo(
    project="acme-ml",
    region="europe-west4",
    job_id="1",
    display_name="resnet-50-nightly",
    labels={"team": "vision", "env": "prod"},
)


def routing(*routes: dict, **top: object) -> RoutingConfig:
    return RoutingConfig.model_validate({"default_channel": "#ml-alerts", "routes": list(routes), **top})


def channel(config: RoutingConfig, job: JobInfo = JOB, failure_class: str = "accelerator_oom") -> str:
    return destination_for(job, failure_class, config).channel


def test_no_route_means_the_default_channel() -> None:
    assert destination_for(JOB, "accelerator_oom", routing()) == Destination("#ml-alerts", (), "default_channel")
    unmatched = routing({"match": {"project": "other"}, "channel": "#other"})
    assert destination_for(JOB, "accelerator_oom", unmatched) == Destination("#ml-alerts", (), "default_channel")


@pytest.mark.parametrize(
    ("match", "routed"),
    [
        ({"project": "acme-ml"}, True),
        ({"project": "acme-ml-2"}, False),
        ({"region": "europe-west4"}, True),
        ({"region": "us-central1"}, False),
        ({"failure_class": "accelerator_oom"}, True),
        ({"failure_class": "host_oom"}, False),
        ({"display_name": "^resnet-50"}, True),
        ({"display_name": "nightly"}, True),  # searched anywhere in the name
        ({"display_name": "^nightly"}, False),
        ({"labels": {"team": "vision"}}, True),
        ({"labels": {"team": "nlp"}}, False),
        ({"labels": {"team": "vision", "env": "prod"}}, True),
        ({"labels": {"team": "vision", "env": "dev"}}, False),  # every label must match, not any
        ({"labels": {"team": "nlp", "env": "prod"}}, False),
        ({"labels": {"owner": "vision"}}, False),
        ({"project": "acme-ml", "region": "europe-west4", "labels": {"team": "vision"}}, True),
        ({"project": "acme-ml", "region": "us-central1", "labels": {"team": "vision"}}, False),  # all-of
        ({"project": "other", "region": "europe-west4", "labels": {"team": "vision"}}, False),
        ({"project": "acme-ml", "region": "europe-west4", "labels": {"team": "nlp"}}, False),
        ({"project": "acme-ml", "failure_class": "host_oom"}, False),
        ({"region": "europe-west4", "display_name": "^bert"}, False),
        ({}, True),  # an empty match matches every job
    ],
)
def test_each_given_condition_must_hold(match: dict, routed: bool) -> None:
    config = routing({"match": match, "channel": "#vision-alerts"})
    assert channel(config) == ("#vision-alerts" if routed else "#ml-alerts")


def test_a_job_without_a_display_name_matches_no_display_name_pattern() -> None:
    config = routing({"match": {"display_name": "X"}, "channel": "#x"})
    assert channel(config, JOB.model_copy(update={"display_name": None})) == "#ml-alerts"
    anything = routing({"match": {"display_name": ".*"}, "channel": "#x"})
    assert channel(anything, JOB.model_copy(update={"display_name": None})) == "#x"


def test_the_first_matching_route_wins_and_is_named() -> None:
    config = routing(
        {"match": {"labels": {"team": "nlp"}}, "channel": "#nlp"},
        {"match": {"project": "acme-ml"}, "channel": "#acme"},
        {"match": {"labels": {"team": "vision"}}, "channel": "#vision"},
    )
    assert destination_for(JOB, "accelerator_oom", config) == Destination("#acme", (), "routes[1]")


def test_class_channels_come_before_routes() -> None:
    config = routing(
        {"match": {"labels": {"team": "vision"}}, "channel": "#vision", "rerun_allowed": ["U2"]},
        class_channels={"quota_exhausted": "#ml-platform"},
    )
    platform = destination_for(JOB, "quota_exhausted", config)
    assert platform == Destination("#ml-platform", ("U2",), "class_channels.quota_exhausted")
    assert destination_for(JOB, "accelerator_oom", config).channel == "#vision"


def test_a_routes_rerun_allowed_replaces_the_default_list() -> None:
    config = routing(
        {"match": {"labels": {"team": "vision"}}, "channel": "#vision", "rerun_allowed": ["U2", "S3"]},
        {"match": {"labels": {"team": "nlp"}}, "channel": "#nlp"},
        rerun_allowed=["U1"],
    )
    assert destination_for(JOB, "accelerator_oom", config).rerun_allowed == ("U2", "S3")
    nlp = JOB.model_copy(update={"labels": {"team": "nlp"}})
    assert destination_for(nlp, "accelerator_oom", config).rerun_allowed == ("U1",)  # the route sets none
    nobody = JOB.model_copy(update={"labels": {}})
    assert destination_for(nobody, "accelerator_oom", config) == Destination("#ml-alerts", ("U1",), "default_channel")
    assert routing().rerun_allowed == []
    assert destination_for(JOB, "x", routing({"match": {}, "channel": "#c", "rerun_allowed": []})).rerun_allowed == ()
