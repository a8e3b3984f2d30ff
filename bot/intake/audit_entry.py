"""The text of a Cloud Audit Logs entry (`protoPayload` of type google.cloud.audit.AuditLog).

An audit entry has no message of its own: what it says is its `status` (the refusal) and, for a call IAM
refused (status code 7, PERMISSION_DENIED), its `authorizationInfo`: each permission checked, on which resource,
and whether it was granted (proto3 JSON leaves `granted: false` out, so a missing `granted` is a refusal).

Each refused check becomes one line in the form Google's APIs themselves use ("Audit log: Permission 'P' denied on
resource 'R'"), with the resource as a full name (`//storage.googleapis.com/projects/_/buckets/B/...`), so that the
permission evidence reads it like any other refusal: the permission, the resource and the grant on it. The status
message comes first unless it is only the code's name (PERMISSION_DENIED), which says nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

PERMISSION_DENIED = 7  # google.rpc.Code
MAX_CHECKS = 8  # refused checks turned into lines, per entry
# service.resource.verb (storage.objects.get, aiplatform.customJobs.create); resource names without spaces or quotes
_PERMISSION = re.compile(r"[a-z][a-z0-9]*(?:\.[a-zA-Z][a-zA-Z0-9]*){2,3}")
_RESOURCE = re.compile(r"[^\s'\"]{1,1024}")
_SERVICE = re.compile(r"[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+")


def audit_text(proto: Mapping[str, Any]) -> str:
    """The status message, then one line per permission IAM refused ("" when the entry says neither)."""
    status = proto.get("status")
    status = status if isinstance(status, Mapping) else {}
    message = status.get("message") if isinstance(status.get("message"), str) else ""
    checks = refused_checks(proto) if status.get("code") == PERMISSION_DENIED else []
    # the code's bare name says nothing the refused checks do not
    lines = [message] if message and not (checks and message.strip().upper() == "PERMISSION_DENIED") else []
    return "\n".join([*lines, *checks])


def refused_checks(proto: Mapping[str, Any]) -> list[str]:
    """"Audit log: Permission 'P' denied on resource '//SERVICE/R'" per refused check (the caller is the one the
    entry was looked up or pushed for)."""
    checks = proto.get("authorizationInfo")
    if not isinstance(checks, list):
        return []
    service = proto.get("serviceName") if isinstance(proto.get("serviceName"), str) else ""
    lines: list[str] = []
    for check in checks:
        if not isinstance(check, Mapping) or check.get("granted") is True:
            continue
        permission, resource = check.get("permission"), check.get("resource")
        if not isinstance(permission, str) or not _PERMISSION.fullmatch(permission):
            continue
        where = ""
        if isinstance(resource, str) and _RESOURCE.fullmatch(resource):
            if not resource.startswith("//") and _SERVICE.fullmatch(service):
                resource = f"//{service}/{resource}"
            where = f" on resource '{resource}'"
        lines.append(f"Audit log: Permission '{permission}' denied{where}")
        if len(lines) >= MAX_CHECKS:
            break
    return lines

