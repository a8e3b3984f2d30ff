"""The permission a refused operation needed, read from the operation when the refusal names no permission: a
storage verb in gsutil / gcloud storage / TensorFlow wording on a gs:// path, a Cloud Storage FUSE operation or a
file operation on a /gcs/ path, a Cloud Storage, Vertex AI or Cloud TPU API request, or the Google Cloud client
method in the traceback (knowledge/tables/client_call_permissions.yaml). bot.diagnosis.evidence.permission asks these
after the error's own words."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.diagnosis.evidence.patterns import BUCKET

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
            r"initiating an upload|when writing|when uploading|Failed to flush|Could not write|Copying file://"
            # the platform's check of a job's output path ("The provided GCS path gs://B/d cannot be written by")
            r"|cannot be written by",
            re.I,
        ),
        "storage.objects.create",
    ),
    (
        re.compile(r"when reading|Error reading|Failed to read|when opening|when downloading|Copying gs://", re.I),
        "storage.objects.get",
    ),
)
# Cloud Storage FUSE refusing an object operation ("CreateObject(\"a.txt\") ...: googleapi: Error 403"): the
# operation says which permission it needed.
_FUSE_OPERATIONS = (
    (re.compile(r"\b(?:CreateObject|ComposeObjects|CopyObject)\b"), "storage.objects.create"),
    (re.compile(r"\bUpdateObject\b"), "storage.objects.update"),
    (re.compile(r"\b(?:DeleteObject|MoveObject)\b"), "storage.objects.delete"),
    (re.compile(r"\bListObjects\b"), "storage.objects.list"),
    (re.compile(r"\b(?:StatObject|NewReader)\b"), "storage.objects.get"),
)
_FUSE_REFUSAL = re.compile(r"\b403\b|[Ff]orbidden|[Aa]ccess ?[Dd]enied|does not have storage\.")
# Vertex AI mounts every bucket the job may use under /gcs/BUCKET (Cloud Storage FUSE): a file operation refused
# there is the bucket refusing the job's identity. What the code did says which permission it needed.
FUSE_PATH = re.compile(r"(?<![\w./-])/gcs/(?P<bucket>[a-z0-9][a-z0-9._-]{1,220}[a-z0-9])(?=[/'\"`:\s]|$)")
_FILE_REFUSAL = re.compile(r"Permission denied|Operation not permitted|\[Errno (?:1|13)\]|\bEACCES\b|\bEPERM\b")
_FILE_WRITE = re.compile(
    r"\b(?:save|savez|write|writer|dump|makedirs|mkdir|touch|upload|export|copy(?:file|tree)?|rename|replace)\b"
    r"|_writer\b|cannot create|open\([^)\n]*['\"][wax]b?\+?['\"]|mode=['\"][wax]",
    re.I,
)
_GCSFUSE_MOUNTED = re.compile(r"Mounting file system |File system has been successfully mounted|\bgcsfuse\b")
_IO_ERROR = re.compile(r"Input/output error|\[Errno 5\]|\bEIO\b")
_DIRECTORY_READ = re.compile(r"reading directory|cannot open directory|\bls\b|listdir|scandir|\bglob\b", re.I)
_FILE_LIST = re.compile(r"\b(?:listdir|scandir|glob|iglob|walk|ls)\b|cannot open directory", re.I)


# A BigQuery Storage Read API session refused without the permission named (TensorFlow I/O's BigQuery op raising
# "Permission denied on resource project P. [Op:IO>BigQueryReadSession]", the gRPC method or the Java client's call
# in a stack trace): creating a read session is checked on the project the read is billed to.
_READ_SESSION = re.compile(
    r"\bIO>BigQueryReadSession\b|BigQueryRead/CreateReadSession\b|BigQueryReadClient\.createReadSession\b"
)


def read_session_permission(texts: Sequence[str]) -> str | None:
    return "bigquery.readsessions.create" if any(_READ_SESSION.search(text) for text in texts) else None


# BigQuery writing a table's export into Cloud Storage ("403 Access Denied: BigQuery BigQuery: Permission denied while
# writing data", an extract job's error): the destination bucket refused to let the caller create the files.
_EXPORT_WRITE = re.compile(r"\bBigQuery: Permission denied while writing data\b")


def export_write_permission(texts: Sequence[str]) -> str | None:
    return "storage.objects.create" if any(_EXPORT_WRITE.search(text) for text in texts) else None


def storage_verb(texts: Sequence[str]) -> str | None:
    """The storage permission the first verb phrase in the lines speaks of (a listing, an upload, a read)."""
    return next((permission for pattern, permission in _STORAGE_VERBS if any(pattern.search(t) for t in texts)), None)


def fuse_permission(texts: Sequence[str]) -> str | None:
    """The storage permission a refused Cloud Storage FUSE operation needed: gcsfuse's own operation name on a
    403, a file operation on a /gcs/ path refused as EACCES (a write, a directory listing, else a read), or an
    I/O error in a bucket gcsfuse says it mounted (gcsfuse answers a refused listing or read with EIO)."""
    for text in texts:
        if _FUSE_REFUSAL.search(text):
            for pattern, permission in _FUSE_OPERATIONS:
                if pattern.search(text):
                    return permission
    if any(_GCSFUSE_MOUNTED.search(text) for text in texts):
        failed = [text for text in texts if _IO_ERROR.search(text)]
        if failed:
            return "storage.objects.list" if any(_DIRECTORY_READ.search(t) for t in failed) else "storage.objects.get"
    if not any(FUSE_PATH.search(text) and _FILE_REFUSAL.search(text) for text in texts):
        return None
    if any(_FILE_WRITE.search(text) for text in texts):
        return "storage.objects.create"
    if any(_FILE_LIST.search(text) for text in texts):
        return "storage.objects.list"
    return "storage.objects.get"


# A Cloud Storage JSON API request quoted by a refusal that names no permission ("403 GET https://storage.googleapis
# .com/storage/v1/b/B/o?prefix=...: Access denied."): its method and path say which permission IAM checked
# (https://cloud.google.com/storage/docs/access-control/iam-json). Quoted without its method, only an upload or a
# media download URL says which ("Forbidden: https://storage.googleapis.com/upload/storage/v1/b/B/o").
_STORAGE_REQUEST = re.compile(
    r"(?:\b(?P<method>GET|POST|PUT|PATCH|DELETE) )?https://(?:storage|www)\.googleapis\.com/(?P<via>upload/|download/)?"
    rf"storage/v1/b/{BUCKET}(?P<objects>/o(?P<object>/[^\s?:'\"]+)?)?"
)


def _first_request(pattern: re.Pattern[str], texts: Sequence[str]) -> re.Match[str] | None:
    return next((request for text in texts if (request := pattern.search(text)) is not None), None)


def storage_request_permission(texts: Sequence[str]) -> str | None:
    """The permission the first Cloud Storage JSON API request quoted in the lines that says one needed, by its
    method and path."""
    requests = (request for text in texts for request in _STORAGE_REQUEST.finditer(text))
    return next(filter(None, map(_storage_request_needs, requests)), None)


def _storage_request_needs(request: re.Match[str]) -> str | None:
    method, via, objects, one = request.group("method", "via", "objects", "object")
    if method is None and via is None:
        return None  # a listing, a read or a change: the path alone does not say
    if via == "upload/" or (objects and method in ("POST", "PUT")):  # an upload, a compose, a copy or rewrite
        return "storage.objects.create"
    if via == "download/" or (one and method == "GET"):
        return "storage.objects.get"
    if objects and method == "GET":
        return "storage.objects.list"
    if one and method in ("DELETE", "PATCH"):
        return "storage.objects.delete" if method == "DELETE" else "storage.objects.update"
    return "storage.buckets.get" if not objects and method == "GET" else None


# A Vertex AI REST request quoted by a refusal that names no permission ("403 POST https://us-central1-aiplatform
# .googleapis.com/v1/projects/P/locations/L/customJobs?...: The caller does not have permission"): Vertex AI checks
# aiplatform.<collection>.<verb>, the verb by the method and whether the path names one resource or the collection
# (https://cloud.google.com/vertex-ai/docs/general/access-control). Only a collection right under the location: a
# nested one has a permission name of its own (tensorboards/T/experiments -> aiplatform.tensorboardExperiments).
_VERTEX_REQUEST = re.compile(
    r"\b(?P<method>GET|POST|PATCH|DELETE) https://(?:[a-z0-9-]+-)?aiplatform\.googleapis\.com/v1(?:beta1)?"
    r"/projects/[^/\s]+/locations/[^/\s]+/(?P<collection>[a-z][A-Za-z]+)"
    r"(?P<one>/[^/\s?:]+)?(?::(?P<action>[a-z][A-Za-z]+))?(?=[?:\s]|$)"
)
# A Google REST request's IAM verb, by its method and whether its path names one resource or the collection. A URL
# quoted without its method (None) is taken as a look-up only when it names one resource: a collection's URL could be
# a listing or a creation, which the path alone does not say.
_REST_VERBS = {("POST", False): "create", ("GET", True): "get", ("GET", False): "list", ("DELETE", True): "delete",
               ("PATCH", True): "update", (None, True): "get"}  # fmt: skip


def vertex_request_permission(texts: Sequence[str]) -> str | None:
    """The Vertex AI permission the REST request quoted in the lines needed, by its method and path."""
    request = _first_request(_VERTEX_REQUEST, texts)
    if request is None:
        return None
    method, collection, one, action = request.group("method", "collection", "one", "action")
    verb = action if action and one else _REST_VERBS.get((method, bool(one)))
    return f"aiplatform.{collection}.{verb}" if verb else None


# A Cloud TPU API request refused without a permission named ("HttpError 403 when requesting https://tpu.googleapis
# .com/v1/projects/P/locations/Z/nodes/N?alt=json returned ..."): the API checks tpu.nodes.<verb>
# (https://cloud.google.com/tpu/docs/tpu-iam-roles). Quoted without its method, a URL naming one node is a look-up of
# it (TPUClusterResolver's): tpu.nodes.get, the read-only grant (_REST_VERBS). (wget prints the URL two lines above
# its "403 Forbidden", outside the lines the details are read from: that form is not read.)
_TPU_REQUEST = re.compile(
    r"(?:\b(?P<method>GET|POST|DELETE) )?https://tpu\.googleapis\.com/v\d(?:alpha\d|beta\d)?"
    r"/projects/[^/\s]+/locations/[^/\s]+/nodes(?P<one>/[^/\s?:'\"]+)?(?=[?:\s'\"]|$)"
)


def tpu_request_permission(texts: Sequence[str]) -> str | None:
    """The Cloud TPU permission the API request quoted in the lines needed, by its method (if quoted) and path."""
    request = _first_request(_TPU_REQUEST, texts)
    if request is None:
        return None
    verb = _REST_VERBS.get((request.group("method"), request.group("one") is not None))
    return f"tpu.nodes.{verb}" if verb else None


# A traceback frame inside a Google Cloud Python client library: the method that made a refused call
# (knowledge/tables/client_call_permissions.yaml), read when the refusal names no permission
_CLIENT_FRAME = re.compile(
    r"File \"(?:[^\"\n]*[/\\])?google[/\\]cloud[/\\](?P<module>[a-z][a-z0-9_/\\]*)\.py\", line \d+, "
    r"in (?P<function>\w+)"
)
_API_VERSION = re.compile(r"^(?P<library>[a-z][a-z0-9_]*?)_v\d+(?:p\d+)?(?:alpha|beta)?\d*(?=\.|$)")


def client_calls(texts: Sequence[str]) -> list[str]:
    """The Google Cloud client methods in these traceback lines, outermost first, as client_call_permissions keys
    (`.../google/cloud/secretmanager_v1/services/x/client.py ... in access_secret_version` ->
    `secretmanager.services.x.client.access_secret_version`: the API version dropped)."""
    calls: list[str] = []
    for text in texts:
        frame = _CLIENT_FRAME.search(text)
        if frame:
            module = _API_VERSION.sub(r"\g<library>", re.sub(r"[/\\]", ".", frame.group("module")))
            calls.append(f"{module}.{frame.group('function')}")
    return calls
