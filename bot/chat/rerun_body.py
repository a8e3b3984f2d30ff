"""The CustomJob a rerun creates (`create_body`): the failed job's spec with the chosen settings, labelled with
the job it reruns and who asked for it.
"""

from __future__ import annotations

import re

from bot.chat.rerun_plan import RerunPlan
from bot.chat.rerun_settings import RerunSettings
from bot.chat.rerun_spec import find_batch_size, pool_args, pool_specs, set_batch_size
from bot.gcp.job_resource import rerun_body

LABEL_RERUN_OF = "rerun-of"


LABEL_RERUN_BY = "rerun-by"


_LABEL_INVALID = re.compile(r"[^a-z0-9_-]")


def label_value(text: str) -> str:
    """`text` as a GCP label value: lowercase, only [a-z0-9_-], at most 63 characters."""
    return _LABEL_INVALID.sub("_", text.lower())[:63]


def create_body(raw: dict, settings: RerunSettings, *, plan: RerunPlan, user: str) -> dict:
    """The CustomJob to create: the failed job's spec (output-only fields dropped), the chosen settings,
    and the labels rerun-of=<failed job id> and rerun-by=<Slack user id, lowercased>."""
    settings = plan.resolve(settings)
    body = rerun_body(raw, labels={LABEL_RERUN_OF: label_value(plan.job_id), LABEL_RERUN_BY: label_value(user)})
    specs = pool_specs(body)
    for index in plan.edited_pools:
        machine = specs[index].setdefault("machineSpec", {})
        if settings.machine_type:
            machine["machineType"] = settings.machine_type
        if settings.accelerator_type:
            machine["acceleratorType"] = settings.accelerator_type
            machine["acceleratorCount"] = settings.accelerator_count
        else:
            machine.pop("acceleratorType", None)
            machine.pop("acceleratorCount", None)
    specs[plan.replica_pool]["replicaCount"] = str(settings.replica_count)
    batch = plan.batch
    if batch is not None and settings.batch_size is not None and settings.batch_size != batch.value:
        for spec in specs:  # every pool whose args set the same batch size: replicas of one data-parallel job
            args = pool_args(spec)
            if find_batch_size(args) == batch:
                args[:] = set_batch_size(args, batch.flag, settings.batch_size)
    if settings.spot is not None and settings.spot != plan.failed.spot:
        scheduling = body.setdefault("jobSpec", {}).setdefault("scheduling", {})
        scheduling["strategy"] = "SPOT" if settings.spot else "STANDARD"
    return body
