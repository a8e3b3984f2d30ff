"""Fill knowledge-base command templates with the job's own values; unknown values stay explicit placeholders.

Two steps read the values commands need (bot.diagnosis.classifier calls them while it gathers a diagnosis's details):

- `evidence_details`: from the decisive log lines, what the signals' patterns do not capture - the denied
  permission, the principal and the resource in every common phrasing (Cloud Storage JSON and XML API, gsutil,
  gcloud storage, BigQuery, Artifact Registry and Container Registry, Secret Manager, Pub/Sub, Cloud KMS, service
  accounts, Vertex AI resource names), the quota metric or id, zone and region, the amount a quota error asks
  for, the accelerator a stockout lacks, and whether the failure is Google Cloud's at all (`platform`: a denial
  from AWS or Hugging Face, a Kubernetes or Slurm scheduler get no gcloud command);
- `complete_details`: once the class's derivations ran (the role and where to grant it, the quota id...), what
  follows from them and the job: the resource to bind the role on, the project the error or the service
  account names, the quota preference's value (accelerators x replicas of the job's spec), another region that
  offers the accelerator.

Every value still goes through `safe_value` before it enters a command: a log cannot inject shell.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any

from bot.diagnosis.knowledge import CommandTemplate, Table
from bot.models import Command, JobInfo

_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
# Values copied into a shell command come from logs: only plain identifier characters are allowed through.
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:/+=-]{0,200}$")
# A title is not shell, but a value shown in it is still plain: identifiers and ", " lists (us-east4, us-west1).
_SAFE_TITLE_VALUE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:/+=, -]{0,200}$")
_BASIC_ROLE = re.compile(r"roles/(?:owner|editor|viewer)\b")
_PLACEHOLDER_NAMES = {
    "project": "PROJECT_ID",
    "resource_project": "PROJECT_ID",
    "region": "REGION",
    "job_id": "JOB_ID",
    "service_account": "SERVICE_ACCOUNT_EMAIL",
}


def placeholder(name: str) -> str:
    return _PLACEHOLDER_NAMES.get(name, name.upper())


def safe_value(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().strip("'\"`")
    return value if _SAFE_VALUE.match(value) else None


def fill(template: str, details: Mapping[str, str]) -> str:
    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        return safe_value(details.get(name)) or placeholder(name)

    return _PLACEHOLDER.sub(substitute, template)


def _title_value(value: str | None) -> str | None:
    value = (value or "").strip()
    return value if _SAFE_TITLE_VALUE.match(value) else None


def _applies(template: CommandTemplate, details: Mapping[str, str]) -> bool:
    for name in template.requires:
        known = safe_value(details.get(name)) if name in template.placeholders else _title_value(details.get(name))
        if known is None:
            return False
    if any(details.get(name) for name in template.absent):
        return False
    if any(details.get(name) not in values for name, values in template.when.items()):
        return False
    return not any(details.get(name) in values for name, values in template.unless.items())


def fill_commands(templates: Iterable[CommandTemplate], details: Mapping[str, str]) -> list[Command]:
    """The templates that apply (required details known, `absent`/`when`/`unless` met), filled in; never one
    that grants a basic role (owner, editor, viewer)."""
    commands: list[Command] = []
    for template in templates:
        if not _applies(template, details):
            continue
        command = fill(template.template, details)
        if _BASIC_ROLE.search(command):
            continue
        title = _PLACEHOLDER.sub(
            lambda m: _title_value(details.get(m.group(1))) or placeholder(m.group(1)), template.title
        )
        commands.append(Command(title=title, command=command))
    return commands


# ---- reading the evidence -----------------------------------------------------------------------------------

_EMAIL = r"[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
# service.resource.verb; never a host name (iam.googleapis.com in an ErrorInfo's domain is not a permission)
_PERMISSION = r"(?![a-z0-9-]+\.googleapis\.)[a-z][a-zA-Z0-9]*\.[a-zA-Z]+\.[a-zA-Z]+"
_PROJECT_ID = r"(?:[a-z][a-z0-9-]*\.[a-z]{2,}:)?[a-z][a-z0-9-]{4,28}[a-z0-9]"  # domain-scoped: google.com:my-proj
_BUCKET = r"[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]"
_REGION = r"[a-z]+-[a-z]+\d+"
_ZONE = r"[a-z]+-[a-z]+\d+-[a-z]"
_Q = r"['\"`‘’]?"  # an optional quote around a value

_NOT_GOOGLE = (  # evidence that the failure is outside Google Cloud: no gcloud command can fix it
    ("huggingface", re.compile(r"huggingface\.co|huggingface_hub|GatedRepoError|gated repo|HfHubHTTPError", re.I)),
    (
        "aws",
        re.compile(
            r"botocore|boto3|\bs3://|arn:aws:|amazonaws\.com|sagemaker|when calling the \w+ operation"
            r"|InsufficientInstanceCapacity|ResourceLimitExceeded|CreateFleet|\bAWS support\b",
            re.I,
        ),
    ),
    (
        "azure",
        re.compile(r"AuthorizationPermissionMismatch|AuthorizationFailed|\.windows\.net|azureml|subscription has a"),
    ),
    (
        "kubernetes",
        re.compile(
            r"is forbidden: User \"|cannot \w+ resource \"|nodes are available|FailedScheduling|kueue"
            r"|Insufficient (?:nvidia|amd|aliyun)\.com/|didn.t trigger scale-up|in backoff after failed scale-up",
            re.I,
        ),
    ),
    ("slurm", re.compile(r"\bslurm|\bQOS\w*Limit|\bAssoc(?:Grp|Max)\w*Limit|accounting/QOS policy", re.I)),
)
_GOOGLE = re.compile(
    r"googleapis\.com|gserviceaccount\.com|\bgoogle\.(?:api_core|cloud|auth)\b|\bgs://|Google Cloud|\bgcloud\b"
    r"|\bGCE\b|_RESOURCE_POOL_EXHAUSTED"
    r"|QUOTA_EXCEEDED|Quota '[A-Za-z0-9_-]+' (?:exceeded|exhausted)|Compute Engine|\bCloud TPU|\bVertex AI|\bml_job\b"
    r"|projects/[a-z][a-z0-9-]+/(?:zones|regions|locations|global)/|console\.cloud\.google\.com",
    re.I,
)

_PERMISSION_NAMED = [
    re.compile(p)
    for p in (
        rf"[Pp]ermission {_Q}(?P<permission>{_PERMISSION}){_Q} (?:is )?denied",
        rf"does not have {_Q}(?P<permission>{_PERMISSION}){_Q} (?:access|permission)",
        rf"does not have (?:the )?(?:required )?(?:IAM )?permission {_Q}(?P<permission>{_PERMISSION})",
        rf"[Mm]issing (?:the )?(?:required )?(?:IAM )?permissions?:? [\['\"]*(?P<permission>{_PERMISSION})",
        rf"[Rr]equired {_Q}(?P<permission>{_PERMISSION}){_Q} permission",
        rf"(?:requires?|needs?) (?:the )?(?:IAM )?(?:permission )?{_Q}(?P<permission>{_PERMISSION}){_Q} permission",
        # an ErrorInfo's metadata printed as JSON or a Python dict (as protobuf text it spans lines: below)
        rf"[\"']permission[\"']\s*:\s*[\"'](?P<permission>{_PERMISSION})[\"']",
        # "Grant the caller the roles/X role, or a custom role with the X permission"
        rf"\brole with (?:the )?{_Q}(?P<permission>{_PERMISSION}){_Q} permission",
        rf"IAM_PERMISSION_DENIED[^\n]{{0,200}}?(?P<permission>{_PERMISSION})",
    )
]
# Protobuf text puts each field on a line of its own: these read the lines joined.
_PERMISSION_FIELD = re.compile(rf"\bkey: \"permission\"\s+value: \"(?P<permission>{_PERMISSION})\"")
_DENIAL = re.compile(r"denied|does not have|forbidden|not authori[sz]ed|unauthori[sz]ed|act as|PERMISSION_DENIED", re.I)
_ACT_AS = re.compile(r"permission to act as|\bact as (?:the )?service[_ ]account", re.I)
# A request that failed on a gs:// path without naming the permission: the verb says which one it needed.
_STORAGE_VERBS = (
    (
        re.compile(
            r"Failed to get matching files|when listing|Error listing|\b(?:gsutil|gcloud storage)(?: -m)? ls\b", re.I
        ),
        "storage.objects.list",
    ),
    (  # gsutil and gcloud storage print "Copying file://..." for an upload, "Copying gs://..." for a download
        re.compile(
            r"initiating an upload|when writing|when uploading|Failed to flush|Could not write|Copying file://", re.I
        ),
        "storage.objects.create",
    ),
    (
        re.compile(r"when reading|Error reading|Failed to read|when opening|when downloading|Copying gs://", re.I),
        "storage.objects.get",
    ),
)
# An image pull or push refused without naming the permission: the registry action says which one it needed.
_REGISTRY_PUSH = re.compile(r"\bpush(?:ing|ed)?\b|/blobs/uploads|uploadArtifacts", re.I)
_REGISTRY_DENIAL = re.compile(
    r"denied|forbidden|\b403\b|unauthori[sz]ed|not authori[sz]ed|failed to authorize|does not have", re.I
)
_REGISTRY_WORDS = re.compile(r"\bpull|\bpush|manifests?\b|/v2/|docker|\bregistry\b|\bimage\b", re.I)
_PRINCIPAL = [
    re.compile(p)
    for p in (
        rf"(?P<principal>{_EMAIL}) does not have",
        rf"principal {_Q}(?:serviceAccount:|user:)?(?P<principal>{_EMAIL})",
        rf"(?:[Uu]ser|[Cc]aller|[Aa]ccount)[: ]+{_Q}(?P<principal>{_EMAIL}){_Q} (?:does not|is not|lacks)",
    )
]
# gcloud names the account a refused command ran as: the submitter an "act as" grant is for
_AUTHENTICATED_AS = re.compile(rf"\bauthenticated as {_Q}(?P<account>{_EMAIL})")

# Resource names: projects/P/..., optionally behind //SERVICE.googleapis.com/.
_RESOURCE_NAME = re.compile(
    r"(?://(?P<service>[a-z0-9-]+)\.googleapis\.com/)?projects/(?P<project>[a-z0-9][a-z0-9.:-]*[a-z0-9]|_|-)"
    r"(?P<rest>(?:/[A-Za-z0-9][A-Za-z0-9._@%+=~-]*)*)"
)
_VERTEX_COLLECTIONS = frozenset(
    {
        "tensorboards", "customJobs", "hyperparameterTuningJobs", "trainingPipelines", "pipelineJobs", "models",
        "endpoints", "datasets", "metadataStores", "featurestores", "featureOnlineStores", "persistentResources",
        "experiments", "studies", "indexes", "indexEndpoints", "notebookRuntimes",
    }
)  # fmt: skip
_BIGQUERY_REF = re.compile(
    rf"\b(?:[Tt]able|[Dd]ataset|[Vv]iew) {_Q}(?P<bq_project>{_PROJECT_ID})[:.](?P<dataset>[A-Za-z_][A-Za-z0-9_]*)"
    r"(?:\.(?P<table>[A-Za-z0-9_$]+(?:-[A-Za-z0-9_$]+)*))?"
)
_NAMED_PROJECT = re.compile(
    rf"(?:\bin project|Access Denied: Project|\bfor project|\bto use project|\bon project) {_Q}"
    rf"(?P<project>{_PROJECT_ID})(?![\w-])"
)
_BUCKET_PATTERNS = [
    re.compile(p)
    for p in (
        rf"storage/v1/b/(?P<bucket>{_BUCKET})",
        rf"\bb/(?P<bucket>{_BUCKET})(?=/o\b|[/?:]|\s|$)",
        rf"\bgs://(?P<bucket>{_BUCKET})",
        rf"https?://(?P<bucket>{_BUCKET})\.storage\.googleapis\.com",
        rf"storage\.(?:googleapis|cloud\.google)\.com/(?!storage/|upload/|batch/|download/)(?P<bucket>{_BUCKET})/",
        rf"access b instance \[(?P<bucket>{_BUCKET})\]",
        rf"access to {_Q}(?!the\b)(?P<bucket>{_BUCKET})(?:/[^\s'\"`]*)?{_Q}\.?(?=\s|$|[\"'<])",
        # "... access to the Google Cloud Storage bucket BUCKET." (or object BUCKET/PATH): the name after the words
        rf"access to the Google Cloud Storage (?:bucket|object) {_Q}(?P<bucket>{_BUCKET})(?=[/'\"`.,;:)\s]|$)",
    )
]
_ARTIFACT_IMAGE = re.compile(
    rf"\b(?P<location>{_REGION}|us|europe|asia)-docker\.pkg\.dev/(?:v2/)?(?P<project>{_PROJECT_ID})/"
    r"(?P<repository>[a-z0-9][a-z0-9._-]*)"
)
_GCR_IMAGE = re.compile(rf"\b(?P<host>(?:us\.|eu\.|asia\.)?gcr\.io)/(?:v2/)?(?P<project>{_PROJECT_ID})/")
_CONTAINER_REGISTRY = re.compile(rf"Token exchange failed for project {_Q}(?P<project>{_PROJECT_ID}){_Q}")
_GCR_HOST = re.compile(r"\b(?P<prefix>us\.|eu\.|asia\.)gcr\.io/")
_GCR_LOCATIONS = {"gcr.io": "us", "us.gcr.io": "us", "eu.gcr.io": "europe", "asia.gcr.io": "asia"}
_TARGET_SERVICE_ACCOUNT = re.compile(
    r"(?:act as|on service account|for service account|serviceAccounts/|--service[_-]account[= ]|service_account="
    r"|[\"']serviceAccount[\"']:)(?: the)?(?: service[_ ]account:?)? ?"
    r"['\"]?(?P<target>[A-Za-z0-9][A-Za-z0-9._-]*@[A-Za-z0-9.-]+\.gserviceaccount\.com)"
)

_QUOTA_ID_SHAPE = re.compile(
    r"^(?:[A-Z][A-Za-z0-9]*Per(?:Project|Region|User)[A-Za-z0-9]*|[A-Z0-9-]+-per-project(?:-region)?)$"
)
_COMPUTE_METRIC = re.compile(r"^[A-Z][A-Z0-9_]*$")
_QUOTA_TEXT = [
    re.compile(p)
    for p in (
        r"quotas are exceeded:?\s*(?P<quota_id>[A-Za-z0-9-]+)",
        r"limit name = (?P<quota_id>[A-Za-z0-9-]+)",
        r"metric name = (?P<quota_metric>[a-z0-9.-]+\.googleapis\.com/[a-z0-9_]+)",
        r"Quota exceeded for (?:quota metric ['\"])?(?P<quota_metric>[a-z0-9.-]+\.googleapis\.com/[a-z0-9_]+)",
        r"\bresource:? \\?['\"](?P<compute_metric>[A-Z][A-Z0-9_]+)\\?['\"]",
        r"Insufficient ['\"](?P<compute_metric>[A-Z][A-Z0-9_]+)['\"] quota",
        rf"quota for region (?P<region>{_REGION}) to (?P<preferred_value>\d+)"
        r" (?P<compute_metric>[A-Z][A-Z0-9_]+) or more",
        r"gpu_family[=:]\s*['\"]?(?P<gpu_family>NVIDIA_[A-Z0-9_]+)",
        # a QuotaFailure / ErrorInfo detail, as protobuf text (quota_metric: "...") or JSON ("quotaMetric": "...")
        r"\bquota_?[Mm]etric['\"]?\s*[:=]\s*['\"]?(?P<quota_metric>[a-z0-9.-]+\.googleapis\.com/[a-z0-9_]+)",
    )
]
# An id stated in such a detail (quota_id, or quota_limit, which names the same thing): taken only in an id's shape
# (quotaLimit can also be a number).
_QUOTA_ID_FIELD = re.compile(r"\bquota_?(?:[Ii]d|[Ll]imit)['\"]?\s*[:=]\s*['\"]?(?P<quota_id>[A-Za-z][A-Za-z0-9-]+)")
_QUOTA_SHORT = re.compile(
    r"requires? '(?P<requires>\d+(?:\.\d+)?)' and is short '[\d.]+'[^\n]{0,40}?quota (?:is |of )?"
    r"'(?P<limit>\d+(?:\.\d+)?)' with '(?P<available>\d+(?:\.\d+)?)' available"
)
_ACCELERATOR_REQUEST = re.compile(r"request for (?P<count>\d+) [\w-]+ accelerators exceeds")
_REGION_TEXT = [
    re.compile(p)
    for p in (
        rf"(?:\bin|\bfor) region:? {_Q}(?P<region>{_REGION})\b(?!-)",
        rf"\bregions?/(?P<region>{_REGION})\b(?!-)",
        rf"\bzones?/(?P<zone>{_ZONE})\b",
        rf"\bzone {_Q}(?:projects/[^/\s'\"]+/zones/)?(?P<zone>{_ZONE}){_Q}",
        rf"\bin the (?P<zone>{_ZONE}) zone",
        rf"\b(?:in|for) zone:? {_Q}(?P<zone>{_ZONE})\b",
        rf"\blocations/(?P<zone>{_ZONE})\b",
        # a QuotaFailure's dimensions or an ErrorInfo's quota_location (protobuf text, JSON or a Python dict)
        rf"\bquota_?[Ll]ocation['\"]?\s*[:=]\s*['\"]?(?P<region>{_REGION})\b(?!-)",
        rf"['\"](?:region|location)['\"]\s*:\s*['\"](?P<region>{_REGION})['\"]",
    )
]
_REGION_FIELD = re.compile(rf"\bkey: \"(?:region|location)\"\s+value: \"(?P<region>{_REGION})\"")  # lines joined
_ERROR_PROJECT = [
    re.compile(p)
    for p in (
        rf"\bfor project {_Q}(?P<project>{_PROJECT_ID})(?![\w-])",
        rf"[?&]project=(?P<project>{_PROJECT_ID})(?![\w-])",
        rf"\bprojects/(?P<project>{_PROJECT_ID})/(?:zones|regions|locations|global)/",
    )
]
_COMPUTE_WORDS = re.compile(r"\bGCE\b|Compute Engine|compute\.googleapis\.com|\bCPUS\b")
_STOCKOUT_ACCELERATOR = re.compile(r"with \d+ (?P<name>nvidia-[a-z0-9-]+) accelerator")
_STOCKOUT_MACHINE = re.compile(r"\bAn? (?P<machine>[a-z][a-z0-9]*-[a-z]+-\d+g?) VM instance")


def _first(patterns: Iterable[re.Pattern[str]], texts: Sequence[str]) -> dict[str, str]:
    """The named groups of the first match of any pattern, trying the lines in order."""
    for text in texts:
        for pattern in patterns:
            found = pattern.search(text)
            if found:
                return {k: v for k, v in found.groupdict().items() if v}
    return {}


def _platform(texts: Sequence[str]) -> str | None:
    """google, or which other platform refused (aws, huggingface...); None when the lines do not say."""
    joined = "\n".join(texts)
    if _GOOGLE.search(joined):
        return "google"
    return next((name for name, pattern in _NOT_GOOGLE if pattern.search(joined)), None)


def _resource_from_name(match: re.Match[str]) -> dict[str, str] | None:
    """One resource name (projects/P/secrets/S, //storage.googleapis.com/projects/_/buckets/B...) as details."""
    project, service = match.group("project"), match.group("service")
    parts = [p for p in match.group("rest").split("/") if p]
    pairs = dict(zip(parts[::2], parts[1::2], strict=False))
    in_project = {} if project in ("_", "-") else {"named_project": project}
    if "buckets" in pairs:
        return {"kind": "bucket", "bucket": pairs["buckets"]}
    if "secrets" in pairs:
        return {"kind": "secret", "secret": pairs["secrets"], "secret_project": project}
    if "topics" in pairs:
        return {"kind": "topic", "topic": pairs["topics"], "topic_project": project}
    if "subscriptions" in pairs:
        return {"kind": "subscription", "subscription": pairs["subscriptions"], "subscription_project": project}
    if "cryptoKeys" in pairs and "keyRings" in pairs and "locations" in pairs:
        return {
            "kind": "key", "kms_key": pairs["cryptoKeys"], "kms_keyring": pairs["keyRings"],
            "kms_location": pairs["locations"], "kms_project": project,
        }  # fmt: skip
    if "repositories" in pairs and "locations" in pairs:
        return {
            "kind": "repository", "repository": pairs["repositories"], "repository_location": pairs["locations"],
            "repository_project": project,
        }  # fmt: skip
    if "serviceAccounts" in pairs and "@" in pairs["serviceAccounts"]:
        return {"kind": "service_account", "target_service_account": pairs["serviceAccounts"]}
    if "datasets" in pairs and "locations" not in pairs and (service in (None, "bigquery")):
        found = {"bq_project": project, "dataset": pairs["datasets"]}
        if "tables" in pairs:
            return {"kind": "table", "table": pairs["tables"], **found}
        return {"kind": "dataset", **found}
    if "locations" in pairs and _VERTEX_COLLECTIONS & set(pairs):
        return {"kind": "vertex", "vertex_location": pairs["locations"], **in_project}
    return {"kind": "project", **in_project} if in_project else None


def _resources(texts: Sequence[str], permission: str | None = None) -> list[dict[str, str]]:
    """Every resource the lines name, those of the denial first."""
    found: list[tuple[int, int, dict[str, str]]] = []
    for line_number, text in enumerate(texts):
        for match in _RESOURCE_NAME.finditer(text):
            resource = _resource_from_name(match)
            if resource:
                found.append((line_number, match.start(), resource))
        for match in _BIGQUERY_REF.finditer(text):
            groups = {k: v for k, v in match.groupdict().items() if v}
            found.append((line_number, match.start(), {"kind": "table" if "table" in groups else "dataset", **groups}))
        for match in _NAMED_PROJECT.finditer(text):
            found.append((line_number, match.start(), {"kind": "project", "named_project": match.group("project")}))
        for pattern in _BUCKET_PATTERNS:
            for match in pattern.finditer(text):
                found.append((line_number, match.start(), {"kind": "bucket", "bucket": match.group("bucket")}))
        for match in _ARTIFACT_IMAGE.finditer(text):
            repository = {
                "kind": "repository", "repository": match.group("repository"),
                "repository_location": match.group("location"), "repository_project": match.group("project"),
            }  # fmt: skip
            found.append((line_number, match.start(), repository))
        for match in _GCR_IMAGE.finditer(text):
            host = match.group("host")
            repository = {
                "kind": "repository", "repository": host, "repository_location": _GCR_LOCATIONS[host],
                "repository_project": match.group("project"),
            }  # fmt: skip
            found.append((line_number, match.start(), repository))
        for match in _TARGET_SERVICE_ACCOUNT.finditer(text):
            found.append(
                (
                    line_number,
                    match.start(),
                    {"kind": "service_account", "target_service_account": match.group("target")},
                )
            )
    # the lines that state the denial come first (a path logged nearby is not what was refused), the one naming
    # the permission before them
    rank = [0 if permission and permission in text else 1 if _DENIAL.search(text) else 2 for text in texts]
    return [resource for _, _, resource in sorted(found, key=lambda item: (rank[item[0]], item[0], item[1]))]


def _permission_details(texts: Sequence[str], details: MutableMapping[str, str]) -> None:
    platform = _platform(texts)
    if platform:
        details["platform"] = platform
    if platform not in (None, "google"):
        return
    named = _first(_PERMISSION_NAMED, texts) or _first([_PERMISSION_FIELD], ["\n".join(texts)])
    if named:  # the error's own word beats a signal's guess (tables.getData for a table)
        details["permission"] = named["permission"]
    elif any(_ACT_AS.search(text) for text in texts):
        details.setdefault("permission", "iam.serviceAccounts.actAs")
    elif "permission" not in details and any("gs://" in text for text in texts):
        verb = next((p for pattern, p in _STORAGE_VERBS if any(pattern.search(t) for t in texts)), None)
        if verb:
            details["permission"] = verb
    if "permission" not in details and any(_ARTIFACT_IMAGE.search(t) or _GCR_IMAGE.search(t) for t in texts):
        # the refusal is the registry's: on the image's own line, or a denial that speaks of pulling or pushing
        refusals = [t for t in texts if _REGISTRY_DENIAL.search(t)]
        if any(_ARTIFACT_IMAGE.search(t) or _GCR_IMAGE.search(t) or _REGISTRY_WORDS.search(t) for t in refusals):
            pushed = any(_REGISTRY_PUSH.search(t) for t in texts)
            details["permission"] = f"artifactregistry.repositories.{'upload' if pushed else 'download'}Artifacts"
    principal = _first(_PRINCIPAL, texts).get("principal")
    if principal:
        details.setdefault("principal", principal)
    account = _first([_AUTHENTICATED_AS], texts).get("account")
    if account:
        details.setdefault("submitter_email", account)
    # The resource values the parser finds replace what a signal's pattern captured: it reads the whole name
    # (a domain-scoped project, a dotted bucket, a table after its dataset).
    firsts: dict[str, dict[str, str]] = {}
    for resource in _resources(texts, details.get("permission")):
        firsts.setdefault(resource["kind"], resource)
    for resource in reversed(list(firsts.values())):  # the kind named first wins a value two kinds share
        for name, value in resource.items():
            if name != "kind":
                details[name] = value
    registry = _first([_CONTAINER_REGISTRY], texts)
    if registry and "bucket" not in firsts and details.get("permission", "").startswith("storage."):
        # Container Registry keeps a project's images in its artifacts bucket (us., eu., asia. by host)
        host = _first([_GCR_HOST], texts).get("prefix", "")
        details["bucket"] = f"{host}artifacts.{registry['project']}.appspot.com"


def _zone_region(found: Mapping[str, str]) -> str | None:
    if found.get("region"):
        return found["region"]
    return found["zone"].rsplit("-", 1)[0] if found.get("zone") else None


def _number(text: str) -> str:
    value = float(text)
    return str(int(value)) if value == int(value) else str(value)


def _quota_details(texts: Sequence[str], details: MutableMapping[str, str]) -> None:
    platform = _platform(texts)
    if platform:
        details["platform"] = platform
    if platform not in (None, "google"):
        return
    metric = details.get("quota_metric")
    if metric and _QUOTA_ID_SHAPE.match(metric):  # "Quota 'TPUV4sPreemptiblePod...ForTPUAPI' exhausted": an id
        details["quota_id"] = details.pop("quota_metric")
    elif metric and _COMPUTE_METRIC.match(metric):  # Compute Engine names its metric in capitals
        details["quota_metric"] = "compute.googleapis.com/" + metric.lower()
    for pattern in _QUOTA_TEXT:
        for text in texts:
            found = pattern.search(text)
            if not found:
                continue
            for name, value in found.groupdict().items():
                if not value:
                    continue
                if name == "compute_metric":
                    details.setdefault("quota_metric", "compute.googleapis.com/" + value.lower())
                else:
                    details.setdefault(name, value)
            break
    if "quota_id" not in details:
        stated = next((m.group("quota_id") for t in texts for m in _QUOTA_ID_FIELD.finditer(t)
                       if _QUOTA_ID_SHAPE.match(m.group("quota_id"))), None)  # fmt: skip
        if stated:
            details["quota_id"] = stated
    region = _zone_region(_first(_REGION_TEXT, texts) or _first([_REGION_FIELD], ["\n".join(texts)]))
    if region:
        details.setdefault("region", region)
    if any("globally" in text for text in texts):
        details.setdefault("quota_scope", "global")
    short = _first([_QUOTA_SHORT], texts)
    if short:  # what the project needs in all: its limit, less what is free, plus what this request asks
        need = float(short["limit"]) - float(short["available"]) + float(short["requires"])
        details.setdefault("preferred_value", _number(str(max(need, 0))))
    request = _first([_ACCELERATOR_REQUEST], texts)
    if request:
        details.setdefault("preferred_value", request["count"])
    project = _first(_ERROR_PROJECT, texts).get("project")
    if project:
        details.setdefault("error_project", project)
    if "quota_metric" not in details and "quota_id" not in details and _COMPUTE_WORDS.search("\n".join(texts)):
        details.setdefault("quota_service", "compute.googleapis.com")  # "GCE quota exceeded", no metric named
    accelerator = _first([_STOCKOUT_ACCELERATOR], texts).get("name")
    machine = _first([_STOCKOUT_MACHINE], texts).get("machine")
    if accelerator:
        details.setdefault("accelerator_name", accelerator)
    if machine:
        details.setdefault("machine_type", machine)


_EVIDENCE_READERS = {"permission_denied": _permission_details, "quota_exhausted": _quota_details}


def evidence_details(class_id: str, texts: Sequence[str], details: MutableMapping[str, str]) -> None:
    """Add to `details` (in place) what the decisive lines of a `class_id` diagnosis say beyond the signals'
    captures. `texts`: those lines and the few after each (an error's JSON body spans lines)."""
    reader = _EVIDENCE_READERS.get(class_id)
    if reader is not None:
        reader([text[:4000] for text in texts], details)


# ---- completing the details ---------------------------------------------------------------------------------

_USER_MANAGED_ACCOUNT = re.compile(
    rf"^(?!service-\d+@)[a-z][a-z0-9-]*@(?!gcp-sa-)(?P<project>{_PROJECT_ID})\.iam\.gserviceaccount\.com$"
)
_APP_ENGINE_ACCOUNT = re.compile(rf"^(?P<project>{_PROJECT_ID})@appspot\.gserviceaccount\.com$")
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
    "project": "cloudresourcemanager.googleapis.com/projects/{resource_project}",
}
_RESOURCE_PROJECT = {  # grant_on -> the detail that names the project holding that resource
    "repository": "repository_project",
    "secret": "secret_project",
    "topic": "topic_project",
    "subscription": "subscription_project",
    "key": "kms_project",
}


def _project_of_account(account: str | None) -> str | None:
    """The project a user-managed (or App Engine default) service account's address names; None for Google's
    service agents, whose address holds a project number."""
    if not account:
        return None
    found = _USER_MANAGED_ACCOUNT.match(account) or _APP_ENGINE_ACCOUNT.match(account)
    return found.group("project") if found else None


def _is_project_id(value: str | None) -> bool:
    return bool(value) and not _PROJECT_NUMBER.match(value or "") and bool(re.fullmatch(_PROJECT_ID, value or ""))


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
    if project:
        details["project"] = project


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
    if details.get("permission") == "iam.serviceAccounts.actAs":
        # the submitter acts as the job's account; a service account named as the principal acts itself
        if "target_service_account" not in details and details.get("job_service_account"):
            details["target_service_account"] = details["job_service_account"]
        principal = details.get("principal", "")
        details["grantee"] = "service_account" if principal.endswith(".gserviceaccount.com") else "user"
        if principal and details["grantee"] == "user":
            details.setdefault("submitter_email", principal)  # the user the error names is the one who submits
    else:
        details["grantee"] = "service_account"
    full_name = _FULL_NAMES.get(grant_on or "")
    if full_name and all(safe_value(details.get(name)) for name in _PLACEHOLDER.findall(full_name)):
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
    requested = _job_request(row, job)
    if requested and "preferred_value" not in details:
        details["preferred_value"] = str(requested)


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
    if region:
        others = [r for r in row.regions if r != region and r.split("-")[0] == region.split("-")[0]]
        if others:
            details["alternative_region"] = others[0]
            details["offering_regions"] = ", ".join(others)
    if row.quota_metric and quotas is not None:
        spot = bool(job and job.spot)
        metric = row.quota_metric.replace("training_", "training_preemptible_") if spot else row.quota_metric
        quota = quotas.find("metric", metric)
        if quota is not None and quota.quota_id:
            details["accelerator_quota_id"] = quota.quota_id


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
    if class_id == "permission_denied":
        _complete_grant(details)
    if class_id == "quota_exhausted":
        _complete_quota(details, job, tables)
        _complete_region(details, job, tables)
