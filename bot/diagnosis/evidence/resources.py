"""The Google Cloud resources a refusal's lines name: resource names (projects/P/..., behind
//SERVICE.googleapis.com/ too), BigQuery tables and datasets, projects, buckets in every phrasing (JSON and XML API
URLs, gs:// paths, gsutil and gcloud storage wording, Cloud Storage FUSE mounts), Artifact Registry and Container
Registry images, service accounts. bot.diagnosis.evidence.permission says which one was refused."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.diagnosis.evidence.patterns import BUCKET, PERMISSION, PLACEHOLDER_NAME, PROJECT_ID, QUOTE, REGION
from bot.diagnosis.evidence.refused_operation import FUSE_PATH

# A bucket the poster replaced by a placeholder ("for bucket BUCKET_NAME"): a bucket, name unknown.
_PLACEHOLDER_BUCKET = re.compile(rf"\b(?:for|on|in|to) (?:the )?bucket (?:{PLACEHOLDER_NAME})(?=[:.,;)\s]|$)")

# Resource names: projects/P/..., optionally behind //SERVICE.googleapis.com/.
_RESOURCE_NAME = re.compile(
    r"(?://(?P<service>[a-z0-9-]+)\.googleapis\.com/)?projects/"
    rf"(?P<project>[a-z0-9][a-z0-9.:-]*[a-z0-9]|_|-|{PLACEHOLDER_NAME})"
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
    rf"\b(?:[Tt]able|[Dd]ataset|[Vv]iew) {QUOTE}(?P<bq_project>{PROJECT_ID})[:.](?P<dataset>[A-Za-z_][A-Za-z0-9_]*)"
    r"(?:\.(?P<table>[A-Za-z0-9_$]+(?:-[A-Za-z0-9_$]+)*))?"
)
# The same reference whose project part is no valid project id (a sanitised "proj1:dataset1"): the dataset and table
# are still named; the project is left to fill. Only the legacy "project:dataset" form, where the colon says which
# part is the project.
_BIGQUERY_REF_LOOSE_PROJECT = re.compile(
    rf"\b(?:[Tt]able|[Dd]ataset|[Vv]iew) {QUOTE}[a-z][a-z0-9-]{{0,40}}:(?P<dataset>[A-Za-z_][A-Za-z0-9_]*)"
    r"(?:\.(?P<table>[A-Za-z0-9_$]+(?:-[A-Za-z0-9_$]+)*))?"
)
_NAMED_PROJECT = re.compile(
    rf"(?:(?:\bin project|Access Denied: Project|\bfor project|\bto use project|\bon (?:resource )?project"
    rf"|lacks IAM permission {QUOTE}{PERMISSION}{QUOTE} for the resource) {QUOTE}"  # Google APIs name a bare id
    # an ErrorInfo's `resource` (YAML line or query string) when the permission is checked on a project
    rf"|[?&]resource=|^\s*resource: )(?P<project>{PROJECT_ID})(?![\w/-])"
    # Cloud Storage refusing a project-level action (creating a bucket) names the project, often by its number:
    # "does not have storage.buckets.create access to project 663413318684." (gcloud takes a number there too)
    rf"|\bstorage\.[a-z]+\.[a-zA-Z]+ access to project {QUOTE}(?P<number>\d{{6,}}|{PROJECT_ID})(?![\w/-])",
    re.MULTILINE,
)
_BUCKET_PATTERNS = [
    re.compile(p)
    for p in (
        rf"storage/v1/b/(?P<bucket>{BUCKET})",
        rf"\bb/(?P<bucket>{BUCKET})(?=/o\b|[/?:]|\s|$)",
        rf"\bgs://(?P<bucket>{BUCKET})",
        rf"https?://(?P<bucket>{BUCKET})\.storage\.googleapis\.com",
        rf"storage\.(?:googleapis|cloud\.google)\.com/(?!storage/|upload/|batch/|download/)(?P<bucket>{BUCKET})/",
        rf"access b instance \[(?P<bucket>{BUCKET})\]",
        rf"\bstorage\.[a-z]+\.[a-zA-Z]+ access to {QUOTE}(?!the\b|project\b)(?P<bucket>{BUCKET})(?:/[^\s'\"`]*)?{QUOTE}"
        r"\.?(?=\s|$|[\"'<])",
        # (a message printed inside a protobuf or JSON string escapes its quotes: to the bucket \"B\")
        rf"\b(?:for|on|in|to) (?:the )?bucket \\?{QUOTE}(?P<bucket>{BUCKET})\\?{QUOTE}(?=[:.,;)\s]|$)",
        # "... access to the Google Cloud Storage bucket BUCKET." (or object BUCKET/PATH): the name after the words
        rf"access to the Google Cloud Storage (?:bucket|object) {QUOTE}(?P<bucket>{BUCKET})(?=[/'\"`.,;:)\s]|$)",
        FUSE_PATH.pattern,
        # Cloud Storage FUSE names the bucket it mounts: 'Mounting file system "B"...', 'gcsfuse [flags] B /mnt'
        rf"Mounting file system {QUOTE}(?P<bucket>{BUCKET}){QUOTE}",
        rf"\bgcsfuse(?:\s+--?[a-z][\w-]*(?:[= ](?!/)[^\s-]\S*)?)*\s+(?P<bucket>{BUCKET})\s+[~./\w-]+\s*$",
    )
]
# every bucket pattern needs one of these words: a line with none of them is not scanned thirteen times
_BUCKET_WORDS = ("b/", "gs://", "storage", "Storage", "bucket", "b instance", "/gcs/", "file system", "gcsfuse")
ARTIFACT_IMAGE = re.compile(
    rf"\b(?P<location>{REGION}|us|europe|asia)-docker\.pkg\.dev/(?:v2/)?(?P<project>{PROJECT_ID})/"
    r"(?P<repository>[a-z0-9][a-z0-9._-]*)"
)
GCR_IMAGE = re.compile(rf"\b(?P<host>(?:us\.|eu\.|asia\.)?gcr\.io)/(?:v2/)?(?P<project>{PROJECT_ID})/")
_GCR_LOCATIONS = {"gcr.io": "us", "us.gcr.io": "us", "eu.gcr.io": "europe", "asia.gcr.io": "asia"}
_TARGET_SERVICE_ACCOUNT = re.compile(
    r"(?:act as|on service account|for service account|serviceAccounts/|--service[_-]account[= ]|service_account="
    r"|[\"']serviceAccount[\"']:)(?: the)?(?: service[_ ]account:?)? ?"
    r"['\"`\[]?(?P<target>[A-Za-z0-9][A-Za-z0-9._-]*@[A-Za-z0-9.-]+\.gserviceaccount\.com)"
)


def _resource_from_name(match: re.Match[str]) -> dict[str, str] | None:
    """One resource name (projects/P/secrets/S, //storage.googleapis.com/projects/_/buckets/B...) as details."""
    project, service = match.group("project"), match.group("service")
    parts = [p for p in match.group("rest").rstrip(".").split("/") if p]  # a sentence's full stop ends no id
    pairs = dict(zip(parts[::2], parts[1::2], strict=False))
    if project in ("_", "-") or re.fullmatch(PLACEHOLDER_NAME, project):
        project = ""
    in_project = {"named_project": project} if project else {}
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
    if "services" in pairs and "locations" in pairs and service in (None, "run"):
        return {
            "kind": "run_service", "run_service": pairs["services"], "run_location": pairs["locations"],
            "run_project": project,
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


def _named_resource(match: re.Match[str]) -> dict[str, str] | None:
    """`_resource_from_name` without the values a placeholder left empty (the project of `<PROJECT_ID>/...`)."""
    resource = _resource_from_name(match)
    return {name: value for name, value in resource.items() if value} if resource else None


def named_resources(
    texts: Sequence[str], denied: Sequence[bool], permission: str | None = None
) -> list[dict[str, str]]:
    """Every resource the lines name, those of the denial first (`denied`: whether each line states a denial)."""
    found: list[tuple[int, int, dict[str, str]]] = []
    for line_number, text in enumerate(texts):
        # each pattern only where the words it needs are (a noisy log's evidence window is thousands of characters)
        for match in _RESOURCE_NAME.finditer(text) if "projects/" in text else ():
            resource = _named_resource(match)
            if resource:
                found.append((line_number, match.start(), resource))
        named = "able" in text or "ataset" in text or "iew" in text
        references = list(_BIGQUERY_REF.finditer(text)) if named else []
        if named and not references and ":" in text:  # no valid project part: the dataset is still named
            references = list(_BIGQUERY_REF_LOOSE_PROJECT.finditer(text))
        for match in references:
            groups = {k: v for k, v in match.groupdict().items() if v}
            found.append((line_number, match.start(), {"kind": "table" if "table" in groups else "dataset", **groups}))
        for match in _NAMED_PROJECT.finditer(text) if "roject" in text or "resource" in text else ():
            project = match.group("project") or match.group("number")
            found.append((line_number, match.start(), {"kind": "project", "named_project": project}))
        for pattern in _BUCKET_PATTERNS if any(word in text for word in _BUCKET_WORDS) else ():
            for match in pattern.finditer(text):
                found.append((line_number, match.start(), {"kind": "bucket", "bucket": match.group("bucket")}))
        for match in ARTIFACT_IMAGE.finditer(text) if "docker.pkg.dev" in text else ():
            repository = {
                "kind": "repository", "repository": match.group("repository"),
                "repository_location": match.group("location"), "repository_project": match.group("project"),
            }  # fmt: skip
            found.append((line_number, match.start(), repository))
        for match in GCR_IMAGE.finditer(text) if "gcr.io" in text else ():
            host = match.group("host")
            repository = {
                "kind": "repository", "repository": host, "repository_location": _GCR_LOCATIONS[host],
                "repository_project": match.group("project"),
            }  # fmt: skip
            found.append((line_number, match.start(), repository))
        for match in _PLACEHOLDER_BUCKET.finditer(text) if "bucket" in text else ():
            found.append((line_number, match.start(), {"kind": "bucket"}))
        for match in _TARGET_SERVICE_ACCOUNT.finditer(text) if "gserviceaccount.com" in text else ():
            found.append(
                (
                    line_number,
                    match.start(),
                    {"kind": "service_account", "target_service_account": match.group("target")},
                )
            )
    # the lines that state the denial come first (a path logged nearby is not what was refused), the one naming
    # the permission before them
    rank = [
        0 if permission and permission in text else 1 if denial else 2
        for text, denial in zip(texts, denied, strict=True)
    ]
    return [resource for _, _, resource in sorted(found, key=lambda item: (rank[item[0]], item[0], item[1]))]
