"""The data tables' row schemas (knowledge/tables/<name>.yaml: {description, rows}) and a validated table's
lookups. bot.diagnosis.knowledge loads and validates the files.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from bot.diagnosis.knowledge_schema import CommandTemplate, StrictModel

TABLES_DIR = "tables"  # inside the knowledge directory
_BASIC_ROLES = frozenset({"roles/owner", "roles/editor", "roles/viewer"})
_IAM_REFERENCE = "https://cloud.google.com/iam/docs/roles-permissions/"
_REGION = r"^[a-z]+-[a-z]+\d+$"
GRANT_LEVELS = (
    "bucket", "table", "dataset", "repository", "secret", "topic", "subscription", "key", "service_account",
    "run_service", "project",
)  # fmt: skip


class PermissionRole(StrictModel):
    """iam_permission_roles: the narrowest predefined role holding a permission, and where to grant it."""

    permission: str = Field(pattern=r"^[a-z][a-zA-Z0-9]*\.[a-zA-Z]+\.[a-zA-Z]+$")
    role: str
    grant_on: Literal[GRANT_LEVELS]  # type: ignore[valid-type]
    source: str

    @field_validator("role")
    @classmethod
    def _predefined(cls, value: str) -> str:
        return _predefined_role(value)

    @model_validator(mode="after")
    def _cited(self) -> PermissionRole:
        _cite_service(self.role, self.source)
        return self


def _predefined_role(value: str) -> str:
    if value in _BASIC_ROLES:
        raise ValueError(f"{value} is a basic role: name the narrowest predefined role instead")
    # a few predefined roles carry a version suffix (roles/compute.instanceAdmin.v1), a few name the collection
    # they act on (roles/cloudbuild.builds.editor)
    if not re.match(r"^roles/[a-z][a-zA-Z0-9]*(?:\.[a-z]+s)?\.[a-zA-Z][a-zA-Z0-9]*(?:\.v\d+)?$", value):
        raise ValueError(f"{value!r} is not a predefined role (roles/<service>[.<collection>].<name>[.vN])")
    return value


def _cite_service(role: str, source: str) -> None:
    expected = _IAM_REFERENCE + role.removeprefix("roles/").split(".")[0]
    if source != expected:
        raise ValueError(f"source: cite {expected} (the IAM reference of the role's service), not {source!r}")


class RoleCover(StrictModel):
    """iam_role_covers: a predefined role that holds every permission of the narrower roles it lists."""

    role: str
    covers: list[str] = Field(min_length=1)
    source: str

    @field_validator("role")
    @classmethod
    def _predefined(cls, value: str) -> str:
        return _predefined_role(value)

    @field_validator("covers")
    @classmethod
    def _narrower(cls, value: list[str]) -> list[str]:
        return [_predefined_role(role) for role in value]

    @model_validator(mode="after")
    def _one_service(self) -> RoleCover:
        _cite_service(self.role, self.source)
        service = self.role.removeprefix("roles/").split(".")[0]
        for role in self.covers:
            if role == self.role or role.removeprefix("roles/").split(".")[0] != service:
                raise ValueError(f"covers: {role} is not a narrower role of {self.role}'s own service")
        return self


class QuotaRow(StrictModel):
    """quota_ids: a quota metric, its Cloud Quotas id and dimensions, and what a job spec counts against it."""

    service: str = Field(pattern=r"^[a-z][a-z0-9-]*\.googleapis\.com$")
    metric: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9.-]*\.googleapis\.com/[a-z0-9_]+$")
    quota_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9-]*$")
    scope: Literal["region", "global", "region_gpu_family", "region_base_model"]
    accelerator: str | None = Field(default=None, pattern=r"^(NVIDIA|TPU)_[A-Z0-9_]+$")
    counts: Literal["accelerators", "all_accelerators", "vcpus", "other"] = "other"
    id_evidence: Literal["observed", "documented", "pattern"] | None = None
    source: str = Field(pattern=r"^https://")

    @model_validator(mode="after")
    def _coherent(self) -> QuotaRow:
        problems = []
        if self.metric is None and self.quota_id is None:
            problems.append("a row names a metric, a quota_id, or both")
        if self.metric is not None and not self.metric.startswith(self.service + "/"):
            problems.append(f"metric: {self.metric!r} is not a metric of {self.service}")
        if (self.quota_id is None) != (self.id_evidence is None):
            problems.append("id_evidence: say how the quota_id is known (observed, documented, pattern), and only then")
        if self.counts == "accelerators" and self.accelerator is None:
            problems.append("counts: accelerators needs the accelerator the quota counts")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class AcceleratorRegions(StrictModel):
    """accelerator_regions: where Vertex AI custom training offers an accelerator, its other names, its quota."""

    accelerator: str = Field(pattern=r"^(NVIDIA|TPU)_[A-Z0-9_]+$")
    aliases: list[str] = Field(default_factory=list)
    regions: list[str] = Field(min_length=1)
    quota_metric: str | None = Field(default=None, pattern=r"^aiplatform\.googleapis\.com/[a-z0-9_]+$")
    source: str = Field(pattern=r"^https://")

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, value: list[str]) -> list[str]:
        bad = [alias for alias in value if not re.match(r"^[a-z][a-z0-9-]*[a-z0-9]$", alias)]
        if bad:
            raise ValueError(f"aliases are Compute Engine names (nvidia-tesla-t4, a2-highgpu), not {bad}")
        return value

    @field_validator("regions")
    @classmethod
    def _regions(cls, value: list[str]) -> list[str]:
        bad = [region for region in value if not re.match(_REGION, region)]
        if bad:
            raise ValueError(f"not region names: {bad}")
        if len(set(value)) != len(value):
            raise ValueError("a region is listed twice")
        return value


class GcloudCommandPermission(StrictModel):
    """gcloud_command_permissions: the permission a gcloud command needs, for a refusal that names the command
    (`ERROR: (gcloud.ai.custom-jobs.create) ...`) but not the permission."""

    command: str = Field(pattern=r"^[a-z0-9-]+(?:\.[a-z0-9-]+)+$")  # after "gcloud.", as gcloud prints it
    permission: str = Field(pattern=r"^[a-z][a-zA-Z0-9]*\.[a-zA-Z]+\.[a-zA-Z]+$")
    source: str = Field(pattern=r"^https://")


class ClientCallPermission(StrictModel):
    """client_call_permissions: the permission a Google Cloud Python client method needs, for a refusal that names
    no permission; the method is read from the traceback above the error."""

    call: str = Field(pattern=r"^[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+$")  # module path under google/cloud + function
    permission: str = Field(pattern=r"^[a-z][a-zA-Z0-9]*\.[a-zA-Z]+\.[a-zA-Z]+$")
    source: str = Field(pattern=r"^https://")


#: Each table file's row schema and its columns whose values must be unique (the first is the default `key`).
TABLE_SCHEMAS: dict[str, tuple[type[BaseModel], tuple[str, ...]]] = {
    "iam_permission_roles": (PermissionRole, ("permission",)),
    "iam_role_covers": (RoleCover, ("role",)),
    "quota_ids": (QuotaRow, ("metric", "quota_id")),
    "accelerator_regions": (AcceleratorRegions, ("accelerator", "aliases")),
    "job_commands": (CommandTemplate, ("title",)),  # commands every class gets, after its own
    "gcloud_command_permissions": (GcloudCommandPermission, ("command",)),
    "client_call_permissions": (ClientCallPermission, ("call",)),
}


class Table:
    """One validated table: its rows, and lookups by a column."""

    def __init__(self, name: str, description: str, rows: list[Any]) -> None:
        self.name = name
        self.description = description
        self.rows = rows
        self.unique = TABLE_SCHEMAS[name][1]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(TABLE_SCHEMAS[self.name][0].model_fields)

    def column_map(self, key: str, column: str) -> dict[str, str]:
        """{key value: column value} (a list key gives one entry per item; a list value is joined by ", ")."""
        mapping: dict[str, str] = {}
        for row in self.rows:
            value = getattr(row, column)
            if value is None or value == []:
                continue
            text = ", ".join(value) if isinstance(value, list) else str(value)
            keys = getattr(row, key)
            for item in keys if isinstance(keys, list) else [keys]:
                if item is not None:
                    mapping.setdefault(str(item), text)
        return mapping

    def find(self, column: str, value: str | None) -> Any | None:
        """The first row whose `column` is (or, for a list column, contains) `value`."""
        if value is None:
            return None
        for row in self.rows:
            cell = getattr(row, column)
            if cell == value or (isinstance(cell, list) and value in cell):
                return row
        return None
