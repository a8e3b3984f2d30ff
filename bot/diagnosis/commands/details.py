"""The details command templates need, in two steps (bot.diagnosis.classifier calls them while it gathers a
diagnosis's details):

- `evidence_details`: from the decisive log lines, what the signals' patterns do not capture (the readers are
  bot.diagnosis.evidence.permission and bot.diagnosis.evidence.quota);
- `complete_details`: once the class's derivations ran (the role and where to grant it, the quota id...), what
  follows from them and the job: the resource to bind the role on, the project the error or the service
  account names, the quota preference's value (accelerators x replicas of the job's spec, or the limit in force
  plus what the request was short by), another region that offers the accelerator.

Every value still goes through `safe_value` (bot.diagnosis.commands.fill) before it enters a command.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from bot.diagnosis.commands.fill import PLACEHOLDER, fill, safe_value
from bot.diagnosis.evidence.patterns import PROJECT_ID
from bot.diagnosis.evidence.permission import permission_details, registry_refusal_details
from bot.diagnosis.evidence.quota import quota_details
from bot.diagnosis.evidence.quota_lookup import project_quota
from bot.diagnosis.knowledge_tables import Table
from bot.models import JobInfo

_EVIDENCE_READERS = {
    "permission_denied": permission_details,
    "quota_exhausted": quota_details,
    "container_startup": registry_refusal_details,  # an image pull the registry refused: a grant fixes it
}


def evidence_details(class_id: str, texts: Sequence[str], details: MutableMapping[str, str]) -> None:
    """Add to `details` (in place) what the decisive lines of a `class_id` diagnosis say beyond the signals'
    captures. `texts`: those lines and the few after each (an error's JSON body spans lines)."""
    reader = _EVIDENCE_READERS.get(class_id)
    if reader is not None:
        reader([text[:4000] for text in texts], details)


def known_permission(
    details: MutableMapping[str, str], tables: Mapping[str, Table], calls: Sequence[str] = ()
) -> None:
    """The permission a refused gcloud command needed when the error names none (its command group, looked up in
    gcloud_command_permissions), or the Google Cloud client method that made the call (`calls`: the traceback's
    client frames, outermost first, looked up in client_call_permissions); and an error that names a permission's
    collection in the singular
    (`bigquery.dataset.create`) means IAM's plural one (`bigquery.datasets.create`): read it so when only the plural
    is a permission the table knows."""
    commands = tables.get("gcloud_command_permissions")
    if "permission" not in details and commands is not None:
        row = commands.find("command", details.get("gcloud_command"))
        if row is not None:
            details["permission"] = row.permission  # the refused gcloud command's, the error naming none
    methods = tables.get("client_call_permissions")
    if "permission" not in details and methods is not None:
        known = next((row for call in calls if (row := methods.find("call", call)) is not None), None)
        if known is not None:
            details["permission"] = known.permission  # the client method's, the error naming none
    permission = details.get("permission")
    table = tables.get("iam_permission_roles")
    if not permission or table is None or table.find("permission", permission) is not None:
        return
    service, _, rest = permission.partition(".")
    collection, _, verb = rest.partition(".")
    plural = f"{service}.{collection}s.{verb}"
    if not collection.endswith("s") and table.find("permission", plural) is not None:
        details["permission"] = plural


def role_for_listed(details: MutableMapping[str, str], tables: Mapping[str, Table]) -> None:
    """A refusal that lists several permissions (`permissions`) needs one role holding them all: when
    iam_permission_roles maps them to different roles granted at the same level, the first role of iam_role_covers
    that is or covers every one of them (Storage Object User for objects.get with objects.create). Anything else
    leaves the role to the first permission's row."""
    listed = details.get("permissions", "").split()
    permissions, covers = tables.get("iam_permission_roles"), tables.get("iam_role_covers")
    if len(listed) < 2 or permissions is None or covers is None:
        return
    rows = [permissions.find("permission", permission) for permission in listed]
    if any(row is None for row in rows) or len({row.grant_on for row in rows}) > 1:
        return
    needed = {row.role for row in rows}
    if len(needed) > 1:
        holder = next((row.role for row in covers.rows if needed <= {row.role, *row.covers}), None)
        if holder:
            details["role"] = holder


# ---- completing the details ---------------------------------------------------------------------------------

_USER_MANAGED_ACCOUNT = re.compile(
    rf"^(?!service-\d+@)[a-z][a-z0-9-]*@(?!gcp-sa-)(?P<project>{PROJECT_ID})\.iam\.gserviceaccount\.com$"
)
_APP_ENGINE_ACCOUNT = re.compile(rf"^(?P<project>{PROJECT_ID})@appspot\.gserviceaccount\.com$")
_AGENT_NUMBER = re.compile(r"^(?:service-)?(?P<number>\d{6,})(?:-compute)?@")
_PROJECT_NUMBER = re.compile(r"^\d+$")
_FULL_NAMES = {  # grant_on -> the full resource name IAM troubleshooting takes (after its leading //)
    "bucket": "storage.googleapis.com/projects/_/buckets/{bucket}",
    "table": "bigquery.googleapis.com/projects/{bq_project}/datasets/{dataset}/tables/{table}",
    "dataset": "bigquery.googleapis.com/projects/{bq_project}/datasets/{dataset}",
    "repository": "artifactregistry.googleapis.com/projects/{resource_project}/locations/{repository_location}"
    "/repositories/{repository}",
    "secret": "secretmanager.googleapis.com/projects/{resource_project}/secrets/{secret}",
    "topic": "pubsub.googleapis.com/projects/{resource_project}/topics/{topic}",
    "subscription": "pubsub.googleapis.com/projects/{resource_project}/subscriptions/{subscription}",
    "key": "cloudkms.googleapis.com/projects/{resource_project}/locations/{kms_location}/keyRings/{kms_keyring}"
    "/cryptoKeys/{kms_key}",
    "service_account": "iam.googleapis.com/projects/-/serviceAccounts/{target_service_account}",
    "run_service": "run.googleapis.com/projects/{resource_project}/locations/{run_location}/services/{run_service}",
    "project": "cloudresourcemanager.googleapis.com/projects/{resource_project}",
}
_RESOURCE_PROJECT = {  # grant_on -> the detail that names the project holding that resource
    "repository": "repository_project",
    "secret": "secret_project",
    "topic": "topic_project",
    "subscription": "subscription_project",
    "key": "kms_project",
    "run_service": "run_project",
}


def _project_of_account(account: str | None) -> str | None:
    """The project a user-managed (or App Engine default) service account's address names; None for Google's
    service agents, whose address holds a project number."""
    if not account:
        return None
    found = _USER_MANAGED_ACCOUNT.match(account) or _APP_ENGINE_ACCOUNT.match(account)
    return found.group("project") if found else None


def _is_project_id(value: str | None) -> bool:
    return bool(value) and not _PROJECT_NUMBER.match(value or "") and bool(re.fullmatch(PROJECT_ID, value or ""))


def _complete_project(details: MutableMapping[str, str]) -> None:
    """Never leave PROJECT_ID when the error or a service account's address names the project."""
    for account in (details.get("service_account"), details.get("principal")):
        number = _AGENT_NUMBER.match(account or "")
        if number:
            details.setdefault("project_number", number.group("number"))
    if "project" in details:
        return
    # the job's service account's project, the one the error says the job ran or was checked in, else the project
    # of the resource it names (a secret's, a table's): the roles held there are the ones to check
    candidates = [
        _project_of_account(details.get("service_account")),
        _project_of_account(details.get("principal")),
        details.get("error_project"),
        details.get("named_project"),
        *(details.get(name) for name in (*_RESOURCE_PROJECT.values(), "bq_project")),
    ]
    project = next((p for p in candidates if _is_project_id(p)), None)
    if project is None and _PROJECT_NUMBER.match(details.get("named_project", "")):
        project = details["named_project"]  # the error names the project by its number only: gcloud takes that too
    if project:
        details["project"] = project
        if project in candidates[:2]:
            # read from an account's address: the job runs there unless its account belongs to another project
            details["project_read_from"] = "a service account's address"


def _complete_grant(details: MutableMapping[str, str]) -> None:
    """Where the role is bound (the resource itself; the project only when the resource is the project), who
    receives it, and the full name IAM's troubleshooter takes."""
    if details.get("platform") not in (None, "google"):
        return
    grant_on = details.get("grant_on")
    if grant_on == "table" and "table" not in details and "dataset" in details:
        grant_on = details["grant_on"] = "dataset"  # the error names the dataset only: bind there
    if grant_on == "project":
        project = next(
            (details[name] for name in ("named_project", "bq_project", "resource_project") if details.get(name)),
            details.get("project"),
        )
        if project:
            details["resource_project"] = project
    elif grant_on in _RESOURCE_PROJECT and details.get(_RESOURCE_PROJECT[grant_on]):
        details["resource_project"] = details[_RESOURCE_PROJECT[grant_on]]
    elif grant_on in _RESOURCE_PROJECT and details.get("project"):
        details.setdefault("resource_project", details["project"])
    principal = details.get("principal", "")
    a_person = "@" in principal and not principal.endswith(".gserviceaccount.com")
    if details.get("permission") == "iam.serviceAccounts.actAs":
        # the submitter acts as the job's account; a service account named as the principal acts itself
        if "target_service_account" not in details and details.get("job_service_account"):
            details["target_service_account"] = details["job_service_account"]
        details["grantee"] = "service_account" if principal.endswith(".gserviceaccount.com") else "user"
        if principal and details["grantee"] == "user":
            details.setdefault("submitter_email", principal)  # the user the error names is the one who submits
    elif (details.get("gcloud_command") or details.get("cli_refusal")) and a_person:
        # a gcloud or gsutil command refused for the person who ran it: the grant is theirs, not the job's identity's
        # (a client library in the job that names a person ran on personal credentials: the job's account is fixed)
        details["grantee"] = "user"
        details["grantee_is_user"] = "yes"  # the troubleshooting commands name that person, not the job's account
        details.setdefault("submitter_email", principal)
    else:
        details["grantee"] = "service_account"
    # who receives the grant, as IAM's --member flag names them: the person refused, else the job's account
    person = principal if a_person else details.get("submitter_email")
    if details.get("grantee_is_user") and person:
        details["refused_person"] = person  # the rerun's fix-first step names them too
        details["member"] = f"user:{person}"
    elif details.get("service_account"):
        details["member"] = f"serviceAccount:{details['service_account']}"
    if (
        grant_on == "repository"
        and details.get("permission") == "artifactregistry.repositories.downloadArtifacts"
        and not details.get("principal")
        and details.get("job_id")
        and _PROJECT_NUMBER.match(details.get("project_number", ""))
    ):
        # A Vertex AI job's image is pulled by Vertex's Custom Code Service Agent, not by the service account the
        # job runs as (seen: pull refusals name this agent; a job's own service account cannot be made the puller).
        details["pull_agent"] = f"service-{details['project_number']}@gcp-sa-aiplatform-cc.iam.gserviceaccount.com"
    full_name = _FULL_NAMES.get(grant_on or "")
    if full_name and all(safe_value(details.get(name)) for name in PLACEHOLDER.findall(full_name)):
        details["full_resource_name"] = fill(full_name, details)  # every part known: no placeholder in it


def _vcpus(machine_type: str | None) -> int:
    """vCPUs of an N1 or E2 machine type: the ones the CPU quotas count (A2, C2, N2... have quotas of their own)."""
    standard = re.fullmatch(r"(?:n1|e2)-(?:standard|highmem|highcpu)-(\d+)", machine_type or "")
    return int(standard.group(1)) if standard else 0


def _job_request(row: Any, job: JobInfo | None) -> int:
    """What the job's spec asks of the quota `row` counts: accelerators x replicas, or vCPUs x replicas."""
    if job is None or row is None:
        return 0
    total = 0
    for pool in job.worker_pools:
        if row.counts == "accelerators" and pool.accelerator_type == row.accelerator:
            total += pool.accelerator_count * pool.replica_count
        elif row.counts == "all_accelerators" and (pool.accelerator_type or "").startswith("NVIDIA_"):
            total += pool.accelerator_count * pool.replica_count
        elif row.counts == "vcpus":
            total += _vcpus(pool.machine_type) * pool.replica_count
    return total


def _complete_quota(details: MutableMapping[str, str], job: JobInfo | None, tables: Mapping[str, Table]) -> None:
    if details.get("platform") not in (None, "google"):
        return
    quotas = tables.get("quota_ids")
    row = (
        quotas.find("metric", details.get("quota_metric")) or quotas.find("quota_id", details.get("quota_id"))
        if quotas
        else None
    )
    metric = details.get("quota_metric")
    if row is None and "quota_id" not in details and metric and metric.startswith("compute.googleapis.com/"):
        # Compute Engine names every quota id after its metric: NVIDIA_H100_GPUS -> NVIDIA-H100-GPUS-per-project-region
        # (per project only for a global quota: GPUS_ALL_REGIONS, or a limit the error says holds "globally")
        name = metric.split("/", 1)[1].upper().replace("_", "-")
        overall = details.get("quota_scope") == "global" or "ALL-REGIONS" in name
        details["quota_id"] = f"{name}-per-project" if overall else f"{name}-per-project-region"
    named = (details.get("quota_named", ""), details.get("quota_limit_named", ""))
    looked_up = project_quota(job, metric, details.get("region"), named) if "quota_id" not in details else None
    if looked_up is not None:  # the table has no id for it; the project's own Cloud Quotas listing does
        details["quota_id"] = looked_up.quota_id
        details.setdefault("quota_scope", "region" if "region" in looked_up.dimensions else "global")
        if not metric and looked_up.metric:  # found by the display names the error gave instead of its metric
            details["quota_metric"] = metric = looked_up.metric
    quota_id = details.get("quota_id", "")
    if "quota_service" not in details:
        if metric:
            details["quota_service"] = metric.split("/", 1)[0]
        elif quota_id.endswith("ForTPUAPI"):
            details["quota_service"] = "tpu.googleapis.com"
        elif re.search(r"-per-project", quota_id):
            details["quota_service"] = "compute.googleapis.com"
        else:
            details["quota_service"] = "aiplatform.googleapis.com"
    if "quota_scope" not in details:
        global_id = re.search(r"-per-project$|ALL-REGIONS|^Global[A-Z]", quota_id)  # Global...: all regions
        details["quota_scope"] = row.scope if row is not None else ("global" if global_id else "region")
    shortfall = details.get("quota_shortfall")
    listed = project_quota(job, metric, details.get("region")) if shortfall and metric else None
    limit = listed.limit_in(details.get("region")) if listed is not None else None
    if shortfall and limit is not None and "preferred_value" not in details:
        # the error gave only how far short of what is free the request fell: the limit in force plus that much
        details["preferred_value"] = str(limit + math.ceil(float(shortfall)))
    requested = _job_request(row, job)
    # (an error that says how short the request fell is answered from the limit alone: its command's title says so)
    if requested and "preferred_value" not in details and not shortfall:
        details["preferred_value"] = str(requested)


_MACHINE_QUOTA_SERVICES = ("aiplatform.googleapis.com", "compute.googleapis.com", "tpu.googleapis.com")


def _complete_region(details: MutableMapping[str, str], job: JobInfo | None, tables: Mapping[str, Table]) -> None:
    """The accelerator the job asked for, and another region in the job's geography that offers it."""
    accelerators = tables.get("accelerator_regions")
    if accelerators is None or details.get("platform") not in (None, "google"):
        return
    pool = next((p for p in job.worker_pools if p.accelerator_type), None) if job is not None else None
    names = [pool.accelerator_type if pool else None, details.get("accelerator_name")]
    machine = details.get("machine_type") or (job.primary_pool.machine_type if job and job.primary_pool else None)
    if machine:
        names.append(machine.rsplit("-", 1)[0])
    quotas = tables.get("quota_ids")
    quota_row = quotas.find("metric", details.get("quota_metric")) if quotas else None
    names.append(quota_row.accelerator if quota_row is not None else None)
    row = next(
        (
            r
            for name in names
            if name
            for r in [accelerators.find("accelerator", name) or accelerators.find("aliases", name)]
            if r
        ),
        None,
    )
    if row is None:
        return
    details.setdefault("accelerator", row.accelerator)
    region = details.get("region")
    # another region for the job only where the job's own machines count against the quota (not a model's request
    # rate the job's code ran into), and never the region the job already ran in
    service = details.get("quota_service")
    machines = service is None or service in _MACHINE_QUOTA_SERVICES
    if region and machines and details.get("quota_scope") != "region_base_model":
        taken = {region, details.get("job_region")}
        others = [r for r in row.regions if r not in taken and r.split("-")[0] == region.split("-")[0]]
        if others:
            details["alternative_region"] = others[0]
            details["offering_regions"] = ", ".join(others)
        elif row.aliases and row.aliases[0].startswith("nvidia-"):
            # no other region of this geography in the table (it lists the US only): Compute Engine's own list of
            # the zones with this GPU is the next best place to look
            details["compute_accelerator"] = row.aliases[0]
    if row.quota_metric and quotas is not None:
        spot = bool(job and job.spot)
        metric = row.quota_metric.replace("training_", "training_preemptible_") if spot else row.quota_metric
        quota = quotas.find("metric", metric)
        if quota is not None and quota.quota_id:
            details["accelerator_quota_id"] = quota.quota_id
            requested = _job_request(quota, job)
            if requested:
                details["accelerator_request"] = str(requested)  # what the job asks of that quota


def complete_details(
    class_id: str, details: MutableMapping[str, str], job: JobInfo | None, tables: Mapping[str, Table]
) -> None:
    """Complete `details` (in place) after the class's derivations: see the module's docstring."""
    task = details.get("task_name")
    if task is not None and not re.fullmatch(r"workerpool\d+-\d+", task):
        del details["task_name"]  # only a Vertex AI task name goes into a Logging filter
    _complete_project(details)
    if job is not None and job.submitted_by:  # who asked for the job (a refused create's caller)
        details.setdefault("submitter_email", job.submitted_by)
    if class_id == "permission_denied" or (class_id == "container_startup" and details.get("grant_on")):
        _complete_grant(details)
    if class_id == "quota_exhausted":
        _complete_quota(details, job, tables)
        _complete_region(details, job, tables)
