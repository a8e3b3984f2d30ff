"""What the readers of evidence share: the regex parts of the values they read (project ids, regions, quotes)
and whether the refusal came from Google Cloud at all."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

PROJECT_ID = r"(?:[a-z][a-z0-9-]*\.[a-z]{2,}:)?[a-z][a-z0-9-]{4,28}[a-z0-9]"  # domain-scoped: google.com:my-proj
REGION = r"[a-z]+-[a-z]+\d+"
BUCKET = r"[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]"  # a Cloud Storage bucket name
QUOTE = r"['\"`‘’]?"  # an optional quote around a value
# service.resource.verb; never a host name (iam.googleapis.com in an ErrorInfo's domain is not a permission)
PERMISSION = r"(?![a-z0-9-]+\.googleapis\.)[a-z][a-zA-Z0-9]*\.[a-zA-Z]+\.[a-zA-Z]+"
# A name the poster replaced by a placeholder (<PROJECT_ID>, {PROJECT}, PROJECT_ID, BUCKET_NAME): the resource is
# still named; that part of it is unknown.
PLACEHOLDER_NAME = r"<[A-Za-z_ -]{1,40}>|\{[A-Za-z_]{1,40}\}|[A-Z][A-Z_]{2,40}\b"

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


def first_match(patterns: Iterable[re.Pattern[str]], texts: Sequence[str]) -> dict[str, str]:
    """The named groups of the first match of any pattern, trying the lines in order."""
    for text in texts:
        for pattern in patterns:
            found = pattern.search(text)
            if found:
                return {k: v for k, v in found.groupdict().items() if v}
    return {}


def platform_of(texts: Sequence[str]) -> str | None:
    """google, or which other platform refused (aws, huggingface...); None when the lines do not say."""
    joined = "\n".join(texts)
    if _GOOGLE.search(joined):
        return "google"
    return next((name for name, pattern in _NOT_GOOGLE if pattern.search(joined)), None)
