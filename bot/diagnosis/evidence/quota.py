"""Read a quota or capacity failure from its decisive log lines: the quota metric or id, zone and region, the amount
the error asks for, the accelerator or machine a stockout lacks, and whether the failure is Google Cloud's."""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping, Sequence

from bot.diagnosis.evidence.patterns import PROJECT_ID, QUOTE, REGION, first_match, platform_of
from bot.gcp.cloud_quotas import SERVICE_NAME

_ZONE = r"[a-z]+-[a-z]+\d+-[a-z]"

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
        rf"quota for region (?P<region>{REGION}) to (?P<preferred_value>\d+)"
        r" (?P<compute_metric>[A-Z][A-Z0-9_]+) or more",
        r"gpu_family[=:]\s*['\"]?(?P<gpu_family>NVIDIA_[A-Z0-9_]+)",
        # a rate quota per base model: "Quota exceeded for aiplatform.googleapis.com/... with base model: gemini-pro"
        r"\bbase[ _]model[\"']?\s*[:=]\s*[\"']?(?P<base_model>[a-z][a-z0-9._@-]*[a-z0-9])",
        # `gcloud compute project-info|regions describe` lists each quota as YAML: limit, metric, usage
        r"^\s*(?:- )?metric: (?P<compute_metric>[A-Z][A-Z0-9_]+)\s*$",
        # a QuotaFailure / ErrorInfo detail, as protobuf text (quota_metric: "...") or JSON ("quotaMetric": "...")
        r"\bquota_?[Mm]etric['\"]?\s*[:=]\s*['\"]?(?P<quota_metric>[a-z0-9.-]+\.googleapis\.com/[a-z0-9_]+)",
        # a quota named by its display name ("quota metric 'Job or LRO submission requests'"): the error does name
        # its quota, so it is no job's accelerator quota, even when the table has no id for that name
        r"quota metric ['\"](?P<quota_named>[A-Za-z][^'\"\n/]{0,60} [^'\"\n/]{1,60})['\"]",  # words, not a metric path
        # ... and its limit's display name, the quota's own (the project's QuotaInfos list both names), then the
        # service: "and limit 'Resource management (CRUD) requests per minute per region' of service 'S'"
        r"quota metric ['\"][^'\"\n]+['\"] and limit "
        r"['\"](?P<quota_limit_named>[A-Za-z][^'\"\n/]{0,60} [^'\"\n/]{1,100})['\"]",
        rf"\bof service ['\"](?P<quota_service>{SERVICE_NAME})['\"]",
    )
]
# An id stated in such a detail (quota_id, or quota_limit, which names the same thing): taken only in an id's shape
# (quotaLimit can also be a number).
_QUOTA_ID_FIELD = re.compile(r"\bquota_?(?:[Ii]d|[Ll]imit)['\"]?\s*[:=]\s*['\"]?(?P<quota_id>[A-Za-z][A-Za-z0-9-]+)")
_QUOTA_SHORT = re.compile(
    r"requires? '(?P<requires>\d+(?:\.\d+)?)' and is short '[\d.]+'[^\n]{0,40}?quota\s+(?:is\s+|of\s+)?"
    r"'(?P<limit>\d+(?:\.\d+)?)' with '(?P<available>\d+(?:\.\d+)?)' available"
)
# Compute Engine's "Insufficient 'NVIDIA_T4_GPUS' quota. Requested 5.0, available 1.0.": it names no limit, only how
# much this request is short of what is free; the preference then needs the limit in force (the project's QuotaInfo).
_QUOTA_REQUESTED = re.compile(
    r"quota\. Requested (?P<requested>\d+(?:\.\d+)?), available (?P<available>\d+(?:\.\d+)?)\b"
)
_ACCELERATOR_REQUEST = re.compile(r"request for (?P<count>\d+) [\w-]+ accelerators exceeds")
_REGION_TEXT = [
    re.compile(p)
    for p in (
        rf"(?:\bin|\bfor) region:? {QUOTE}(?P<region>{REGION})\b(?!-)",
        rf"\bregions?/(?P<region>{REGION})\b(?!-)",
        rf"\bzones?/(?P<zone>{_ZONE})\b",
        rf"\bzone {QUOTE}(?:projects/[^/\s'\"]+/zones/)?(?P<zone>{_ZONE}){QUOTE}",
        rf"\bin the (?P<zone>{_ZONE}) zone",
        rf"\b(?:in|for) zones?:? {QUOTE}(?P<zone>{_ZONE})\b",  # GKE's autoscaler: "scale up in zones us-east1-b"
        rf"\blocations/(?P<zone>{_ZONE})\b",
        # a QuotaFailure's dimensions or an ErrorInfo's quota_location (protobuf text, JSON or a Python dict)
        rf"\bquota_?[Ll]ocation['\"]?\s*[:=]\s*['\"]?(?P<region>{REGION})\b(?!-)",
        rf"['\"](?:region|location)['\"]\s*:\s*['\"](?P<region>{REGION})['\"]",
    )
]
# protobuf text puts a map entry's key and value on lines of their own: a QuotaFailure's quota_dimensions, an
# ErrorInfo's metadata (key: "quota_location" / value: "us-west4"); read from the lines joined, each value taken only
# in the form its key's value has
_MAP_ENTRY = re.compile(r"\bkey: \"(?P<key>\w+)\"\s+value: \"(?P<value>[^\"\n]*)\"")
_REGION_KEYS = ("region", "location", "quota_location")  # each read as "region"
_ENTRY_FORMS = {
    "quota_metric": re.compile(r"[a-z0-9.-]+\.googleapis\.com/[a-z0-9_]+"),
    "quota_limit": _QUOTA_ID_SHAPE,  # the limit's name: the quota id
    **dict.fromkeys(_REGION_KEYS, re.compile(REGION)),
}
_ERROR_PROJECT = [
    re.compile(p)
    for p in (
        rf"\bfor project {QUOTE}(?P<project>{PROJECT_ID})(?![\w-])",
        rf"[?&]project=(?P<project>{PROJECT_ID})(?![\w-])",
        rf"\bgcloud [^\n]*--project[= ]{QUOTE}(?P<project>{PROJECT_ID})(?![\w-])",  # the command that was refused
        rf"\bprojects/(?P<project>{PROJECT_ID})/(?:zones|regions|locations|global)/",
    )
]
_COMPUTE_WORDS = re.compile(r"\bGCE\b|Compute Engine|compute\.googleapis\.com|\bCPUS\b")
# the legacy AI Platform Training API (Cloud ML Engine) refused: its quotas are that service's, not Vertex AI's
_LEGACY_TRAINING_API = re.compile(r"https?://ml\.googleapis\.com/|Cloud ML Engine quota|ml-engine/quotas")
_STOCKOUT_ACCELERATOR = re.compile(r"with \d+ (?P<name>nvidia-[a-z0-9-]+) accelerator")
_STOCKOUT_MACHINE = re.compile(r"\bAn? (?P<machine>[a-z][a-z0-9]*-[a-z]+-\d+g?) VM instance")


def _map_entries(text: str) -> dict[str, str]:
    """Protobuf text's map entries (key: "K" / value: "V") whose value has its key's form, the first of each key; a
    region under any of its keys (region, location, quota_location) as "region"."""
    entries: dict[str, str] = {}
    for found in _MAP_ENTRY.finditer(text):
        key, value = found["key"], found["value"]
        form = _ENTRY_FORMS.get(key)
        if form is not None and form.fullmatch(value):
            entries.setdefault("region" if key in _REGION_KEYS else key, value)
    return entries


def _zone_region(found: Mapping[str, str]) -> str | None:
    if found.get("region"):
        return found["region"]
    return found["zone"].rsplit("-", 1)[0] if found.get("zone") else None


def _number(text: str) -> str:
    value = float(text)
    return str(int(value)) if value == int(value) else str(value)


def quota_details(texts: Sequence[str], details: MutableMapping[str, str]) -> None:
    platform = platform_of(texts)
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
    entries = _map_entries("\n".join(texts))
    if "quota_metric" not in details and "quota_metric" in entries:
        details["quota_metric"] = entries["quota_metric"]
    if "quota_id" not in details:
        stated = next((m.group("quota_id") for t in texts for m in _QUOTA_ID_FIELD.finditer(t)
                       if _QUOTA_ID_SHAPE.match(m.group("quota_id"))), None)  # fmt: skip
        if stated or "quota_limit" in entries:
            details["quota_id"] = stated or entries["quota_limit"]
    region = _zone_region(first_match(_REGION_TEXT, texts)) or entries.get("region")
    if region:
        details.setdefault("region", region)
    if any("globally" in text for text in texts):
        details.setdefault("quota_scope", "global")
    # a terminal or an issue tracker may have wrapped the sentence ("project has a quota\n of '12.0'"): then the
    # evidence lines are read as one text
    short = first_match([_QUOTA_SHORT], texts) or first_match([_QUOTA_SHORT], [" ".join(texts)])
    if short:  # what the project needs in all: its limit, less what is free, plus what this request asks
        need = float(short["limit"]) - float(short["available"]) + float(short["requires"])
        details.setdefault("preferred_value", _number(str(max(need, 0))))
    asked = first_match([_QUOTA_REQUESTED], texts)
    if asked and float(asked["requested"]) > float(asked["available"]):
        details.setdefault("quota_shortfall", _number(str(float(asked["requested"]) - float(asked["available"]))))
    request = first_match([_ACCELERATOR_REQUEST], texts)
    if request:
        details.setdefault("preferred_value", request["count"])
    project = first_match(_ERROR_PROJECT, texts).get("project")
    if project:
        details.setdefault("error_project", project)
    if "quota_metric" not in details and "quota_id" not in details and _COMPUTE_WORDS.search("\n".join(texts)):
        details.setdefault("quota_service", "compute.googleapis.com")  # "GCE quota exceeded", no metric named
    if "quota_metric" not in details and "quota_id" not in details and _LEGACY_TRAINING_API.search("\n".join(texts)):
        details.setdefault("quota_service", "ml.googleapis.com")
    accelerator = first_match([_STOCKOUT_ACCELERATOR], texts).get("name")
    machine = first_match([_STOCKOUT_MACHINE], texts).get("machine")
    if accelerator:
        details.setdefault("accelerator_name", accelerator)
    if machine:
        details.setdefault("machine_type", machine)
