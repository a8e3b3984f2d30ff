"""Read a permission denial from its decisive log lines: the denied permission, the principal and the resource,
in every common phrasing (Cloud Storage JSON and XML API, gsutil, gcloud storage, BigQuery, Artifact Registry and
Container Registry, Secret Manager, Pub/Sub, Cloud KMS, service accounts, Vertex AI resource names), and whether
the denial is Google Cloud's at all (`platform`: AWS, Hugging Face, Kubernetes... get no gcloud command)."""

from __future__ import annotations

import re
from collections.abc import MutableMapping, Sequence
from itertools import compress

from bot.diagnosis.evidence.patterns import BUCKET, PERMISSION, PROJECT_ID, QUOTE, first_match, platform_of
from bot.diagnosis.evidence.refused_operation import (
    export_write_permission,
    fuse_permission,
    read_session_permission,
    storage_request_permission,
    storage_verb,
    tpu_request_permission,
    vertex_request_permission,
)
from bot.diagnosis.evidence.resources import ARTIFACT_IMAGE, GCR_IMAGE, named_resources

_EMAIL = r"[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"
_PERMISSION_NAMED = [
    re.compile(p)
    for p in (
        rf"[Pp]ermission {QUOTE}(?P<permission>{PERMISSION}){QUOTE} (?:is )?denied",
        rf"does not have {QUOTE}\[?(?P<permission>{PERMISSION})\]?{QUOTE} (?:IAM )?(?:access|permission)",
        rf"(?:does not have|lacks) (?:the )?(?:required )?(?:IAM )?permission {QUOTE}(?P<permission>{PERMISSION})",
        rf"[Mm]issing (?:the )?(?:required )?(?:IAM )?permissions?:? [\['\"]*(?P<permission>{PERMISSION})",
        rf"[Rr]equired {QUOTE}(?P<permission>{PERMISSION}){QUOTE} permission",
        rf"(?:requires?|needs?) (?:the )?(?:IAM )?(?:permission )?{QUOTE}"
        rf"(?P<permission>{PERMISSION}){QUOTE} permission",
        # an ErrorInfo's metadata printed as JSON or a Python dict (as protobuf text it spans lines: below)
        rf"[\"']permission[\"']\s*:\s*[\"'](?P<permission>{PERMISSION})[\"']",
        # "Grant the caller the roles/X role, or a custom role with the X permission"
        rf"\brole with (?:the )?{QUOTE}(?P<permission>{PERMISSION}){QUOTE} permission",
        # "Ask the object owner to grant you 'storage.objects.get' permission"
        rf"\bgrant (?:you|the caller|it|them) (?:the )?{QUOTE}(?P<permission>{PERMISSION}){QUOTE} permission",
        rf"IAM_PERMISSION_DENIED[^\n]{{0,200}}?(?P<permission>{PERMISSION})",
        # gcloud prints an ErrorInfo's metadata as YAML, one field a line, and a PreconditionFailure's subject as a
        # query string ("?error_code=110002&permission=serviceusage.services.enable&resource=my-project")
        rf"(?m)^\s*permission: (?P<permission>{PERMISSION})\s*$",
        rf"[?&]permission=(?P<permission>{PERMISSION})(?:&|$)",
    )
]
# Protobuf text puts each field on a line of its own, and a wrapped message puts "denied" on the line after the
# permission: these read the lines joined.
_PERMISSION_FIELD = re.compile(rf"\bkey: \"permission\"\s+value: \"(?P<permission>{PERMISSION})\"")
_PERMISSION_WRAPPED = re.compile(rf"[Pp]ermission {QUOTE}(?P<permission>{PERMISSION}){QUOTE}[ \t]*\n[ \t]*denied\b")
# A refusal that lists every permission it found missing (Vertex AI Pipelines: "does not have `[storage.objects.get,
# storage.objects.create]` IAM permission(s) to the bucket"): a grant must hold them all
_PERMISSION_LIST = re.compile(rf"\[\s*{QUOTE}{PERMISSION}{QUOTE}(?:\s*,\s*{QUOTE}{PERMISSION}{QUOTE})+\s*\]")
_ONE_PERMISSION = re.compile(PERMISSION)
_DENIAL = re.compile(r"denied|does not have|forbidden|not authori[sz]ed|unauthori[sz]ed|act as|PERMISSION_DENIED", re.I)
_ACT_AS = re.compile(
    r"permission to act as|\bact as (?:the )?service[_ ]account|does not have access to service account", re.I
)
# A write refused with no bucket named (Cloud Storage FUSE logs an object's name, not its bucket): where the job
# writes is its output directory.
_WRITES = frozenset({"storage.objects.create", "storage.objects.update", "storage.objects.delete"})
# A denial that names the resource but not the permission ("does not have permission to access Artifact Registry
# repository R", "permission denied ... for bucket B" while mounting it): what reading that kind of resource needs.
_ACCESS_DENIAL = re.compile(r"(?:permission|access|authori[sz]ed|allowed) to (?:access|read|pull|open|use)\b", re.I)
_MOUNT = re.compile(r"\bmount|OpenBucket|SetUpBucket|\bgcsfuse\b", re.I)
_MOUNT_DENIAL = re.compile(r"permission denied|access denied|forbidden|\b403\b", re.I)
_READPERMISSION = {
    "repository": "artifactregistry.repositories.downloadArtifacts",
    "bucket": "storage.objects.get",
    "secret": "secretmanager.versions.access",
    "table": "bigquery.tables.getData",
    "dataset": "bigquery.tables.getData",
    "subscription": "pubsub.subscriptions.consume",
}
# An image pull or push refused without naming the permission: the registry action says which one it needed.
_REGISTRY_PUSH = re.compile(r"\bpush(?:ing|ed)?\b|/blobs/uploads|uploadArtifacts", re.I)
_REGISTRY_DENIAL = re.compile(
    r"denied|forbidden|\b403\b|unauthori[sz]ed|not authori[sz]ed|failed to authorize|does not have", re.I
)
# a registry's refusal, not a missing image: "pull access denied ... may require 'docker login'" alone is ambiguous
_PULL_REFUSAL = re.compile(
    r"[Pp]ermission (?:denied|\\?[\"']\S+\\?[\"'] denied)|unauthori[sz]ed|\b40[13]\b|[Ff]orbidden"
    r"|does not have (?:the needed )?permission|have permission to access"
)
_REGISTRY_WORDS = re.compile(
    r"\bpull|\bpush|manifests?\b|/v2/|docker|\bregistry\b|\bimage\b|response from daemon", re.I
)
# The platform could not read the job's own Python package ("Field: package_uris Error: The provided GCS paths cannot
# be read by service account ..."): reading objects is what it needed, in the bucket the job's spec names.
_PACKAGE_PATHS = re.compile(r"\bpackage_uris\b|\b(?:GCS|Cloud Storage) paths cannot be read", re.I)
# Google's prebuilt training containers (Vertex AI, AI Platform, Deep Learning Containers): public images
_PREBUILT_IMAGE = re.compile(
    r"^(?:[a-z0-9-]+-docker\.pkg\.dev|(?:[a-z]+\.)?gcr\.io)/(?:vertex-ai|cloud-aiplatform|deeplearning-platform-release)/"
)
_GS_BUCKET = re.compile(rf"^gs://(?P<bucket>{BUCKET})(?:/|$)")
_PRINCIPAL = [
    re.compile(p)
    for p in (
        rf"(?P<principal>{_EMAIL}),? does not have",  # "Vertex AI Service Agent service-N@..., does not have"
        rf"principal {QUOTE}(?:serviceAccount:|user:)?(?P<principal>{_EMAIL})",
        rf"(?:[Uu]ser|[Cc]aller|[Aa]ccount)[: ]+\[?{QUOTE}(?P<principal>{_EMAIL}){QUOTE}\]? (?:does not|is not|lacks)",
    )
]
# Google-managed accounts whose address is fixed by the project number: a service agent
# (service-NUMBER@gcp-sa-SERVICE.iam.gserviceaccount.com, AI Platform's ...@cloud-ml.google.com...) and the Compute
# Engine default account (NUMBER-compute@developer.gserviceaccount.com). Posted with the number masked
# ("[xxxx]@gcp-sa-automl...", "xxxxxx-compute@developer..."), the account is still known once the project number is.
_MASKED_MANAGED_ACCOUNT = re.compile(
    r"(?<![\w.-])(?P<local>[^\s@`'\"(),;]{1,40})@(?P<domain>gcp-sa-[a-z0-9-]+\.iam\.gserviceaccount\.com"
    r"|cloud-ml\.google\.com\.iam\.gserviceaccount\.com|developer\.gserviceaccount\.com)"
)
_REAL_MANAGED_LOCAL = re.compile(r"service-\d{6,}|\d{6,}-compute")
# gcloud names the command a refusal came from ("ERROR: (gcloud.ml-engine.jobs.submit.training) User [...]"): what
# it needed when the error names no permission (knowledge/tables/gcloud_command_permissions.yaml)
_GCLOUD_COMMAND = re.compile(r"\(gcloud\.(?P<command>[a-z0-9-]+(?:\.[a-z0-9-]+)+)\)")
# gsutil's refusal names the account its command ran as: "AccessDeniedException: 403 ME does not have ... access"
_GSUTIL_DENIAL = re.compile(r"\s*AccessDeniedException: 40[13] \S+@\S+ does not have ")
# gcloud says the account "does not have permission to access project [P]": the project the command acts on
_ACCESS_PROJECT = re.compile(rf"permission to access project \[(?P<project>{PROJECT_ID})\]")
# gcloud names the account a refused command ran as: the submitter an "act as" grant is for
_AUTHENTICATED_AS = re.compile(rf"\bauthenticated as {QUOTE}(?P<account>{_EMAIL})")
# IAM names the person refused the use of a service account: "... access to service account 'SA'. User: 'ME'."
_SERVICE_ACCOUNT_USER = re.compile(rf"access to service account [^\n]*?\bUser: {QUOTE}(?P<account>{_EMAIL}){QUOTE}")

_CONTAINER_REGISTRY = re.compile(rf"Token exchange failed for project {QUOTE}(?P<project>{PROJECT_ID}){QUOTE}")
_GCR_HOST = re.compile(r"\b(?P<prefix>us\.|eu\.|asia\.)gcr\.io/")

def permission_details(texts: Sequence[str], details: MutableMapping[str, str]) -> None:
    platform = platform_of(texts)
    if platform:
        details["platform"] = platform
    if platform not in (None, "google"):
        return
    named = first_match(_PERMISSION_NAMED, texts) or first_match(
        [_PERMISSION_FIELD, _PERMISSION_WRAPPED], ["\n".join(texts)]
    )
    listed = _listed_permissions(texts)
    if listed and (not named or named["permission"] in listed):
        details["permission"] = listed[0]
        details["permissions"] = " ".join(listed)
    elif named:  # the error's own word beats a signal's guess (tables.getData for a table)
        details["permission"] = named["permission"]
    elif any(_ACT_AS.search(text) for text in texts):
        details.setdefault("permission", "iam.serviceAccounts.actAs")
    elif "permission" not in details and (requested := storage_request_permission(texts)) is not None:
        details["permission"] = requested
    elif "permission" not in details and (requested := vertex_request_permission(texts)) is not None:
        details["permission"] = requested
    elif "permission" not in details and (requested := tpu_request_permission(texts)) is not None:
        details["permission"] = requested
    elif "permission" not in details and (requested := read_session_permission(texts)) is not None:
        details["permission"] = requested
    elif "permission" not in details and (requested := export_write_permission(texts)) is not None:
        details["permission"] = requested
    elif "permission" not in details and any("gs://" in text for text in texts):
        verb = storage_verb(texts)
        if verb:
            details["permission"] = verb
    if "permission" not in details:
        storage_permission = fuse_permission(texts)
        if storage_permission:
            details["permission"] = storage_permission
    package_denied = any(_PACKAGE_PATHS.search(text) for text in texts)
    if package_denied:
        details.setdefault("permission", "storage.objects.get")
    image = details.get("image_uri")
    if image and _PREBUILT_IMAGE.search(image):
        image = None  # Google's prebuilt training images are readable by every project: never the refused one
    if image and not any(ARTIFACT_IMAGE.search(t) or GCR_IMAGE.search(t) for t in texts):
        registry_refusal = any(_REGISTRY_DENIAL.search(t) and _REGISTRY_WORDS.search(t) for t in texts)
        # a registry permission denied on a repository the error does not name: the one holding the job's image
        unnamed_repository = details.get("permission", "").startswith("artifactregistry.repositories.") and not any(
            "repositories/" in t for t in texts
        )
        if registry_refusal or unnamed_repository:
            texts = [*texts, image]  # a pull refused without naming the image: the job's own image was refused
    if "permission" not in details and any(ARTIFACT_IMAGE.search(t) or GCR_IMAGE.search(t) for t in texts):
        # the refusal is the registry's: on the image's own line, or a denial that speaks of pulling or pushing
        refusals = [t for t in texts if _REGISTRY_DENIAL.search(t)]
        if any(ARTIFACT_IMAGE.search(t) or GCR_IMAGE.search(t) or _REGISTRY_WORDS.search(t) for t in refusals):
            pushed = any(_REGISTRY_PUSH.search(t) for t in texts)
            details["permission"] = f"artifactregistry.repositories.{'upload' if pushed else 'download'}Artifacts"
    principal = first_match(_PRINCIPAL, texts).get("principal")
    denied = [_DENIAL.search(text) is not None for text in texts]  # read once: three readings below use it
    denials = list(compress(texts, denied))
    masked = first_match([_MASKED_MANAGED_ACCOUNT], denials)
    if masked and not _REAL_MANAGED_LOCAL.fullmatch(masked["local"]):
        # never the masked address itself, never the job's own account: the managed account of the job's project
        compute = masked["domain"].startswith("developer.")
        details["managed_account"] = (
            f"{{number}}-compute@{masked['domain']}" if compute else (f"service-{{number}}@{masked['domain']}")
        )
        if principal and principal.endswith(masked["domain"]):
            principal = None
    if principal:
        details.setdefault("principal", principal)
    command = first_match([_GCLOUD_COMMAND], denials).get("command")
    if command:
        details.setdefault("gcloud_command", command)
    elif any(_GSUTIL_DENIAL.match(text) for text in denials):
        details.setdefault("cli_refusal", "gsutil")  # the command-line tool ran on its user's own credentials
    accessed = first_match([_ACCESS_PROJECT], texts).get("project")
    if accessed:
        details.setdefault("named_project", accessed)
    account = first_match([_AUTHENTICATED_AS, _SERVICE_ACCOUNT_USER], texts).get("account")
    if account:
        details.setdefault("submitter_email", account)
    # The resource values the parser finds replace what a signal's pattern captured: it reads the whole name
    # (a domain-scoped project, a dotted bucket, a table after its dataset).
    firsts: dict[str, dict[str, str]] = {}
    for resource in named_resources(texts, denied, details.get("permission")):
        firsts.setdefault(resource["kind"], resource)
    for resource in reversed(list(firsts.values())):  # the kind named first wins a value two kinds share
        for name, value in resource.items():
            if name != "kind":
                details[name] = value
    kind = next(iter(firsts), None)  # the resource the denial names first
    if "permission" not in details and kind == "bucket":
        if any(_MOUNT.search(text) and _MOUNT_DENIAL.search(text) for text in texts):
            details["permission"] = "storage.objects.list"  # mounting a bucket lists it first
    if "permission" not in details and kind and any(_ACCESS_DENIAL.search(text) for text in texts):
        permission = _READPERMISSION.get(kind)
        if kind == "repository" and any(_REGISTRY_PUSH.search(text) for text in texts):
            permission = "artifactregistry.repositories.uploadArtifacts"
        if permission:
            details["permission"] = permission
    output = _GS_BUCKET.match(details.get("output_uri", ""))
    if output and "bucket" not in firsts and details.get("permission") in _WRITES:
        details["bucket"] = output.group("bucket")
        details["bucket_from_output"] = "yes"  # the command says where the bucket came from
    package = _GS_BUCKET.match(details.get("package_uri", ""))
    if package_denied and package and "bucket" not in firsts:
        details["bucket"] = package.group("bucket")
    registry = first_match([_CONTAINER_REGISTRY], texts)
    if registry and "bucket" not in firsts and details.get("permission", "").startswith("storage."):
        # Container Registry keeps a project's images in its artifacts bucket (us., eu., asia. by host)
        host = first_match([_GCR_HOST], texts).get("prefix", "")
        details["bucket"] = f"{host}artifacts.{registry['project']}.appspot.com"
    if "bucket" not in details and details.get("arg_bucket") and details.get("permission", "").startswith("storage."):
        # a refusal that names no bucket, from a job whose arguments name exactly one bucket: that bucket, said so
        details["bucket"] = details["arg_bucket"]
        details["bucket_from_args"] = "yes"


def _listed_permissions(texts: Sequence[str]) -> list[str]:
    """The permissions a refusal lists in brackets, in their order, each once; [] when it lists fewer than two."""
    for text in texts:
        if _DENIAL.search(text) and (found := _PERMISSION_LIST.search(text)):
            return list(dict.fromkeys(_ONE_PERMISSION.findall(found.group())))
    return []


def registry_refusal_details(texts: Sequence[str], details: MutableMapping[str, str]) -> None:
    """An image that could not be pulled because the registry refused it (403, unauthorized, a permission denied):
    the permission and repository a grant needs, as `permission_details` reads them. Any other pull failure (a
    wrong tag, a registry down) is left alone: nothing to grant."""
    if any(_REGISTRY_WORDS.search(text) and _PULL_REFUSAL.search(text) for text in texts):
        permission_details(texts, details)
