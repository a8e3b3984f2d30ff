"""The knowledge base: one YAML file per failure class under knowledge/, validated strictly at load.

Schema (every key is checked; an unknown key, a missing field or a bad regex names the file and the field):

    id: accelerator_oom              # must equal the file name (without .yaml)
    title: ...                       # one line, shown as the diagnosis headline
    symptom: ...                     # what the failure looks like
    first_checks: [...]              # what to look at first
    remediation: [...]               # fixes, in order of preference
    avoid: [...]                     # the tempting wrong moves (the traps)
    secondary: false                 # true: often a consequence of another replica's failure (cascade)
    generic: false                   # true: a catch-all (a bare traceback) that any specific cause outranks
    signals:                         # evidence for this class; scores combine as a noisy-OR of weights
      - name: cuda_oom
        pattern: 'CUDA out of memory'    # RE2 syntax, case-insensitive unless case_sensitive: true;
                                         # named groups (?P<bucket>...) become details for commands
        unless: '...'                # optional: a line that also matches this does not count
        facts: [steps_logged]        # optional: facts that must also hold (see bot.diagnosis.facts.FACT_NAMES)
        unless_facts: [steps_logged] # optional: the signal does not count when any of these facts hold
        weight: 0.95                 # 0 <= weight <= 1 (0: only captures details)
        hint: false                  # true: suggestive words, not proof; hints alone never outrank a generic class
        min_count: 1                 # lines needed before the signal counts
        variant: stockout            # optional: selects variants.<name> below
        sets: {permission: iam.serviceAccounts.actAs}   # optional: details this signal establishes
    variants: {stockout: {title, symptom, first_checks, remediation, avoid, commands}}   # optional overrides
    derive:                          # details computed from other details, in order (a later one may use an earlier)
      role: {source: permission, map: {'storage.objects.*': roles/storage.objectViewer}, default: ...}
      grant_on: {source: permission, table: iam_permission_roles, column: grant_on}   # a table's row whose
                                     # `key` column (default: the table's first unique column) is the source value
    commands:                        # gcloud templates; {name} placeholders are filled from the job and details
      - title: ...                   # may name details ({task_name}) that are in `requires`
        template: gcloud ... --project={project}
        requires: [bucket]           # only shown when these details are known
        absent: [quota_id]           # only shown while these details are unknown
        when: {grant_on: bucket}     # only shown when a detail is one of these values
        unless: {platform: [aws]}    # never shown when a detail is one of these values

Tables (knowledge/tables/<name>.yaml, {description, rows}; the row schema of each is in TABLE_SCHEMAS, rows are
validated like class files and named by their key column: `rows[3](storage.objects.get).role: ...`):
iam_permission_roles (permission -> narrowest predefined role, where to grant it, the IAM reference it cites),
quota_ids (quota metric -> Cloud Quotas id, dimensions, what a job spec counts), accelerator_regions (where
Vertex AI training offers an accelerator), job_commands (commands every class gets after its own).
    rerun:                           # optional (absent: the alert offers no Rerun); see RerunPolicy
      transient: false               # true only when an unchanged rerun can help (preemption, stockout, flakes)
      why: ...                       # one line: why an unchanged rerun helps or fails the same way
      fix_first: ['grant {role} to {service_account}', 'grant the missing role']   # optional: what to do
                                     # before rerunning (first template whose {placeholders} are known; the
                                     # last has none); the Rerun button asks for it
      changes: [halve_batch_size, larger_accelerator]   # rerun changes, in the remediation order
      variants: {stockout: {transient: true, why: ..., fix_first: [], changes: [other_region]}}
"""

from __future__ import annotations

import fnmatch
import re
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import re2
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bot.diagnosis.calibration import Calibration, load_calibration
from bot.diagnosis.facts import FACT_NAMES
from bot.errors import KnowledgeBaseError

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: 8x faster start-up
CLASS_IDS: tuple[str, ...] = (
    "container_startup",
    "permission_denied",
    "quota_exhausted",
    "accelerator_oom",
    "host_oom",
    "numerical_instability",
    "input_pipeline",
    "underfitting",
    "overfitting",
    "distributed_setup",
    "preemption",
    "application_error",
    "unknown",
)
UNKNOWN = "unknown"
CALIBRATION_FILE = "calibration/confidence.yaml"  # inside the knowledge directory; see bot.diagnosis.calibration
_NAME = r"^[a-z][a-z0-9_]*$"
_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")


def compile_pattern(pattern: str, *, case_sensitive: bool = False) -> Any:
    """Compile a knowledge-base regex with RE2 (linear time; no look-around or back-references)."""
    flags = "(?m)" if case_sensitive else "(?mi)"
    return re2.compile(flags + pattern)


def _check_regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"invalid regex: {exc}") from None
    try:
        compile_pattern(value)
    except re2.error as exc:
        raise ValueError(f"not RE2 syntax (no look-around or back-references): {exc}") from None
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Signal(_Strict):
    name: str = Field(pattern=_NAME)
    pattern: str | None = None
    case_sensitive: bool = False
    unless: str | None = None
    facts: list[str] = Field(default_factory=list)
    unless_facts: list[str] = Field(default_factory=list)
    weight: float = Field(ge=0.0, le=1.0)  # 0: the signal only captures details for commands
    min_count: int = Field(default=1, ge=1)
    hint: bool = False  # words that point at the class without proving it: never outranks a catch-all class
    variant: str | None = Field(default=None, pattern=_NAME)
    sets: dict[str, str] = Field(default_factory=dict)  # constant details this signal establishes

    @field_validator("pattern", "unless")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        return None if value is None else _check_regex(value)

    @field_validator("facts", "unless_facts")
    @classmethod
    def _facts(cls, value: list[str]) -> list[str]:
        unknown = [fact for fact in value if fact not in FACT_NAMES]
        if unknown:
            raise ValueError(f"unknown fact(s) {unknown}; known: {sorted(FACT_NAMES)}")
        return value

    @model_validator(mode="after")
    def _something_to_match(self) -> Signal:
        if self.pattern is None and not self.facts:
            raise ValueError("a signal needs a pattern, facts, or both")
        if self.pattern is None and self.unless is not None:
            raise ValueError("'unless' only applies to a pattern")
        return self

    @cached_property
    def compiled(self) -> Any:
        return None if self.pattern is None else compile_pattern(self.pattern, case_sensitive=self.case_sensitive)

    @cached_property
    def compiled_unless(self) -> Any:
        return None if self.unless is None else compile_pattern(self.unless, case_sensitive=self.case_sensitive)

    @cached_property
    def detail_names(self) -> tuple[str, ...]:
        return tuple(self.compiled.groupindex) if self.compiled is not None else ()


class CommandTemplate(_Strict):
    title: str = Field(min_length=1)  # may name details too ({task_name}); each must be in `requires`
    template: str = Field(min_length=1)
    requires: list[str] = Field(default_factory=list)
    absent: list[str] = Field(default_factory=list)  # shown only while none of these details is known
    when: dict[str, list[str]] = Field(default_factory=dict)  # shown only when each detail is one of its values
    unless: dict[str, list[str]] = Field(default_factory=dict)  # never shown when a detail is one of its values

    @field_validator("template")
    @classmethod
    def _tool(cls, value: str) -> str:
        if not value.startswith(("gcloud ", "bq ", "gsutil ")):
            raise ValueError("a command template starts with gcloud, bq or gsutil")
        return value

    @field_validator("when", "unless", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {name: [v] if isinstance(v, str) else v for name, v in value.items()}
        return value

    @model_validator(mode="after")
    def _names(self) -> CommandTemplate:
        problems = []
        named = [*self.requires, *self.absent, *self.when, *self.unless]
        bad = [name for name in named if not isinstance(name, str) or not re.match(_NAME, name)]
        if bad:
            problems.append(f"detail names are lowercase identifiers, not {bad}")
        untitled = [name for name in _PLACEHOLDER.findall(self.title) if name not in self.requires]
        if untitled:
            problems.append(f"title: {{{untitled[0]}}} must be in requires (a title never shows a placeholder)")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @cached_property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(_PLACEHOLDER.findall(self.template))


class Variant(_Strict):
    title: str | None = None
    symptom: str | None = None
    first_checks: list[str] | None = None
    remediation: list[str] | None = None
    avoid: list[str] | None = None
    commands: list[CommandTemplate] | None = None


class Derivation(_Strict):
    source: str = Field(pattern=_NAME)
    map: dict[str, str] = Field(default_factory=dict)  # keys: exact values or fnmatch patterns ("storage.objects.*")
    default: str | None = None
    table: str | None = Field(default=None, pattern=_NAME)  # a table of knowledge/tables/: looked up before `map`
    key: str | None = Field(default=None, pattern=_NAME)  # the table column the source value is found in
    column: str | None = Field(default=None, pattern=_NAME)  # the table column that gives the value

    @model_validator(mode="after")
    def _map_or_table(self) -> Derivation:
        if not self.map and self.table is None:
            raise ValueError("a derivation needs a map, a table, or both")
        if (self.table is None) != (self.column is None):
            raise ValueError("a table derivation names both its table and the column it takes the value from")
        if self.key is not None and self.table is None:
            raise ValueError("'key' only applies to a table")
        return self

    def lookup(self, value: str) -> str | None:
        if value in self.map:
            return self.map[value]
        for key, result in self.map.items():
            if fnmatch.fnmatchcase(value, key):
                return result
        return self.default


#: The changes a rerun can make to the failed job's spec (bot.chat.rerun plans them, in the order a class lists them).
RERUN_CHANGES: tuple[str, ...] = (
    "halve_batch_size",  # half the per-device batch size, when the container args set one
    "larger_accelerator",  # an accelerator with more memory per device, on the machine type it comes with
    "more_memory_machine",  # a machine type with more memory
    "other_region",  # another configured region that offers the accelerator
    "fewer_accelerators",  # half the accelerators per replica
    "resume_from_checkpoint",  # keep the output directory: the job resumes from its latest checkpoint
)
_ONE_LINE = r"^[^\n]+$"


def _check_fix_first(templates: list[str]) -> list[str]:
    for template in templates:
        rest = _PLACEHOLDER.sub("", template)
        if not template.strip() or "\n" in template or len(template) > 120:
            raise ValueError(f"{template[:60]!r}: a fix is one line of at most 120 characters")
        if "{" in rest or "}" in rest:
            raise ValueError(f"{template!r}: placeholders are {{name}} in lowercase, with no other braces")
    if templates and _PLACEHOLDER.search(templates[-1]):
        raise ValueError("the last template must have no {placeholders}, so that the fix is always named")
    return templates


def _check_changes(changes: list[str]) -> list[str]:
    unknown = [change for change in changes if change not in RERUN_CHANGES]
    if unknown:
        raise ValueError(f"unknown change(s) {unknown}; known: {list(RERUN_CHANGES)}")
    if len(set(changes)) != len(changes):
        raise ValueError("a change is listed twice")
    return changes


class RerunVariant(_Strict):
    """Overrides of a class's rerun policy for one of its variants (a field left out keeps the class's)."""

    transient: bool | None = None
    why: str | None = Field(default=None, pattern=_ONE_LINE, max_length=120)
    fix_first: list[str] | None = None
    changes: list[str] | None = None

    @field_validator("fix_first")
    @classmethod
    def _fix_first(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else _check_fix_first(value)

    @field_validator("changes")
    @classmethod
    def _changes(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else _check_changes(value)


class RerunPolicy(_Strict):
    """What a Rerun of a job that failed this way can do (knowledge file key `rerun`).

    - transient: whether an unchanged rerun can help by itself (the cause was outside the job);
    - why: one line saying why, shown on the button's confirmation and in the modal;
    - fix_first: what must be done outside the job spec before a rerun can work (an IAM grant, a quota
      increase); the first template whose {placeholders} are all known is shown, the last has none;
    - changes: the spec changes a rerun can make, in the class's remediation order: the first that applies
      to the failed job is proposed, the others are named as next options.
    """

    transient: bool
    why: str = Field(pattern=_ONE_LINE, max_length=120)  # fits the button's confirmation
    fix_first: list[str] = Field(default_factory=list)
    changes: list[str] = Field(default_factory=list)
    variants: dict[str, RerunVariant] = Field(default_factory=dict)

    @field_validator("fix_first")
    @classmethod
    def _fix_first(cls, value: list[str]) -> list[str]:
        return _check_fix_first(value)

    @field_validator("changes")
    @classmethod
    def _changes(cls, value: list[str]) -> list[str]:
        return _check_changes(value)

    @model_validator(mode="after")
    def _coherent(self) -> RerunPolicy:
        for name, policy in [("", self), *((f"variants.{k}.", self.for_variant(k)) for k in self.variants)]:
            if policy.transient and policy.fix_first:
                raise ValueError(f"{name}fix_first: a transient failure has nothing to fix first")
        return self

    def for_variant(self, variant: str | None) -> RerunPolicy:
        """The policy for `variant` (None: the class itself), without variants."""
        override = self.variants.get(variant or "")
        fields = {"transient": self.transient, "why": self.why, "fix_first": self.fix_first, "changes": self.changes}
        if override is not None:
            fields.update({k: v for k, v in override.model_dump(exclude_unset=True).items() if v is not None})
        return RerunPolicy.model_construct(**fields, variants={})


class FailureClass(_Strict):
    id: str = Field(pattern=_NAME)
    title: str = Field(min_length=1, max_length=120)
    symptom: str = Field(min_length=1)
    first_checks: list[str] = Field(min_length=1)
    remediation: list[str] = Field(min_length=1)
    avoid: list[str] = Field(default_factory=list)
    secondary: bool = False
    generic: bool = False
    signals: list[Signal] = Field(default_factory=list)
    variants: dict[str, Variant] = Field(default_factory=dict)
    derive: dict[str, Derivation] = Field(default_factory=dict)
    commands: list[CommandTemplate] = Field(default_factory=list)
    rerun: RerunPolicy | None = None  # absent: the alert offers no Rerun

    @model_validator(mode="after")
    def _rerun_variants(self) -> FailureClass:
        """A rerun override names a variant of this class, and that variant has a title of its own: the
        Diagnosis names its variant only by its title (bot.chat.rerun.policy_for)."""
        problems = []
        for name in self.rerun.variants if self.rerun is not None else {}:
            variant = self.variants.get(name)
            if variant is None:
                problems.append(f"rerun.variants.{name}: no variant {name!r} defined")
            elif not variant.title or variant.title == self.title:
                problems.append(f"rerun.variants.{name}: variant {name!r} needs a title of its own")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @model_validator(mode="after")
    def _consistent(self) -> FailureClass:
        problems = []  # every rule is checked: a file's author sees all that is wrong at once
        if self.id != UNKNOWN and not self.signals:
            problems.append("signals: a failure class needs at least one signal")
        if self.id != UNKNOWN and not self.avoid:
            problems.append("avoid: say what not to do")
        names = [signal.name for signal in self.signals]
        duplicated = {name for name in names if names.count(name) > 1}
        if duplicated:
            problems.append(f"signals: duplicate names {sorted(duplicated)}")
        for signal in self.signals:
            if signal.variant is not None and signal.variant not in self.variants:
                problems.append(f"signals.{signal.name}.variant: no variant {signal.variant!r} defined")
        if problems:
            raise ValueError("; ".join(problems))
        return self


# ---- data tables (knowledge/tables/<name>.yaml: {description, rows}) ----------------------------------------

TABLES_DIR = "tables"  # inside the knowledge directory
_BASIC_ROLES = frozenset({"roles/owner", "roles/editor", "roles/viewer"})
_IAM_REFERENCE = "https://cloud.google.com/iam/docs/roles-permissions/"
_REGION = r"^[a-z]+-[a-z]+\d+$"
GRANT_LEVELS = (
    "bucket", "table", "dataset", "repository", "secret", "topic", "subscription", "key", "service_account", "project"
)  # fmt: skip


class PermissionRole(_Strict):
    """iam_permission_roles: the narrowest predefined role holding a permission, and where to grant it."""

    permission: str = Field(pattern=r"^[a-z][a-zA-Z0-9]*\.[a-zA-Z]+\.[a-zA-Z]+$")
    role: str
    grant_on: Literal[GRANT_LEVELS]  # type: ignore[valid-type]
    source: str

    @field_validator("role")
    @classmethod
    def _predefined(cls, value: str) -> str:
        if value in _BASIC_ROLES:
            raise ValueError(f"{value} is a basic role: name the narrowest predefined role instead")
        if not re.match(r"^roles/[a-z][a-zA-Z0-9]*\.[a-zA-Z][a-zA-Z0-9]*$", value):
            raise ValueError(f"{value!r} is not a predefined role (roles/<service>.<name>)")
        return value

    @model_validator(mode="after")
    def _cited(self) -> PermissionRole:
        expected = _IAM_REFERENCE + self.role.removeprefix("roles/").split(".")[0]
        if self.source != expected:
            raise ValueError(f"source: cite {expected} (the IAM reference of the role's service), not {self.source!r}")
        return self


class QuotaRow(_Strict):
    """quota_ids: a quota metric, its Cloud Quotas id and dimensions, and what a job spec counts against it."""

    service: str = Field(pattern=r"^[a-z][a-z0-9-]*\.googleapis\.com$")
    metric: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9.-]*\.googleapis\.com/[a-z0-9_]+$")
    quota_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9-]*$")
    scope: Literal["region", "global", "region_gpu_family"]
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


class AcceleratorRegions(_Strict):
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


#: Each table file's row schema and its columns whose values must be unique (the first is the default `key`).
TABLE_SCHEMAS: dict[str, tuple[type[BaseModel], tuple[str, ...]]] = {
    "iam_permission_roles": (PermissionRole, ("permission",)),
    "quota_ids": (QuotaRow, ("metric", "quota_id")),
    "accelerator_regions": (AcceleratorRegions, ("accelerator", "aliases")),
    "job_commands": (CommandTemplate, ("title",)),  # commands every class gets, after its own
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


def _table_location(loc: tuple[Any, ...], raw: Any, label_column: str) -> str:
    """A table error's field path, naming a row by its key column: rows[3](storage.objects.get).role."""
    parts: list[str] = []
    for i, part in enumerate(loc):
        if isinstance(part, int) and i > 0 and loc[i - 1] == "rows" and isinstance(raw.get("rows"), list):
            row = raw["rows"][part] if 0 <= part < len(raw["rows"]) else None
            label = row.get(label_column) if isinstance(row, dict) else None
            parts[-1] = f"rows[{part}]" + (f"({label})" if isinstance(label, str) else "")
            continue
        parts.append(str(part))
    return ".".join(parts) or "(top level)"


def load_table(path: Path) -> Table:
    """Load and validate one table file (knowledge/tables/<name>.yaml).

    Raises:
        KnowledgeBaseError: naming the first problem; `problems` holds every problem of the file.
    """
    name = path.stem
    if name not in TABLE_SCHEMAS:
        raise KnowledgeBaseError(str(path), "(file)", f"unknown table {name!r}; known: {sorted(TABLE_SCHEMAS)}")
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    except OSError as exc:
        raise KnowledgeBaseError(str(path), "(file)", f"cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise KnowledgeBaseError(str(path), "(file)", f"not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise KnowledgeBaseError(str(path), "(top level)", "must be a mapping with description and rows")
    row_model, unique = TABLE_SCHEMAS[name]
    label = unique[0]
    problems: list[tuple[str, str]] = []
    for extra in sorted(set(raw) - {"description", "rows"}, key=str):
        problems.append((str(extra), "unknown key"))
    if not isinstance(raw.get("description"), str) or not raw["description"].strip():
        problems.append(("description", "say in one line what the table holds"))
    rows: list[Any] = []
    raw_rows = raw.get("rows")
    if not isinstance(raw_rows, list) or not raw_rows:
        problems.append(("rows", "a table needs a list of rows"))
        raw_rows = []
    for index, raw_row in enumerate(raw_rows):
        try:
            rows.append(row_model.model_validate(raw_row))
        except ValidationError as exc:
            for error in exc.errors():
                problems.append((_table_location(("rows", index, *error["loc"]), raw, label), _problem(error)))
    if not problems:
        for column in unique:
            seen: dict[str, int] = {}
            for index, row in enumerate(rows):
                values = getattr(row, column)
                for value in values if isinstance(values, list) else [values]:
                    if value is None:
                        continue
                    if value in seen:
                        where = _table_location(("rows", index, column), raw, label)
                        problems.append((where, f"{value!r} is also in rows[{seen[value]}]"))
                    seen.setdefault(value, index)
    if problems:
        field, problem = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise KnowledgeBaseError(
            str(path), field, problem + more, problems=[(str(path), f, text) for f, text in problems]
        )
    return Table(name, raw["description"], rows)


def _load_tables(directory: Path) -> tuple[dict[str, Table], list[tuple[str, str, str]]]:
    tables: dict[str, Table] = {}
    problems: list[tuple[str, str, str]] = []
    for path in sorted((directory / TABLES_DIR).glob("*.yaml")):
        try:
            table = load_table(path)
        except KnowledgeBaseError as exc:
            problems += exc.problems
            continue
        tables[table.name] = table
    return tables, problems


def _with_tables(
    failure_class: FailureClass, tables: dict[str, Table], path: str
) -> tuple[FailureClass, list[tuple[str, str, str]]]:
    """The class with its table derivations filled from the tables and the common job commands appended."""
    problems: list[tuple[str, str, str]] = []
    derive: dict[str, Derivation] = {}
    for name, derivation in failure_class.derive.items():
        if derivation.table is None:
            derive[name] = derivation
            continue
        table = tables.get(derivation.table)
        if table is None:
            problems.append((path, f"derive.{name}.table", f"no table {derivation.table!r} in {TABLES_DIR}/"))
            continue
        key = derivation.key or table.unique[0]
        wrong = [(field, c) for field, c in (("key", key), ("column", derivation.column)) if c not in table.columns]
        for field, column in wrong:
            problems.append((path, f"derive.{name}.{field}", f"table {table.name!r} has no column {column!r}"))
        if wrong:
            continue
        mapping = {**table.column_map(key, derivation.column or ""), **derivation.map}
        derive[name] = derivation.model_copy(update={"map": mapping})
    common = tables["job_commands"].rows if "job_commands" in tables else []

    def with_common(commands: list[CommandTemplate]) -> list[CommandTemplate]:
        templates = {command.template for command in commands}
        return [*commands, *(command for command in common if command.template not in templates)]

    variants = {
        name: variant
        if variant.commands is None
        else variant.model_copy(update={"commands": with_common(variant.commands)})
        for name, variant in failure_class.variants.items()
    }
    updated = failure_class.model_copy(
        update={"derive": derive, "commands": with_common(failure_class.commands), "variants": variants}
    )
    return updated, problems


class KnowledgeBase:
    """All failure classes, by id, in a fixed order, and the data tables they use."""

    def __init__(
        self,
        classes: list[FailureClass],
        calibration: Calibration | None = None,
        tables: dict[str, Table] | None = None,
    ) -> None:
        self.classes: dict[str, FailureClass] = {c.id: c for c in classes}
        self.order: tuple[str, ...] = tuple(c.id for c in classes)
        self.calibration: Calibration = calibration or Calibration()
        self.tables: dict[str, Table] = tables or {}

    def __getitem__(self, class_id: str) -> FailureClass:
        return self.classes[class_id]

    def __iter__(self):  # noqa: ANN204
        return iter(self.classes.values())

    def __len__(self) -> int:
        return len(self.classes)


def default_knowledge_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "knowledge"


def _location(loc: tuple[Any, ...], data: Any) -> str:
    """Turn a pydantic error location into a readable field path, naming signals by their name."""
    parts: list[str] = []
    node = data
    for part in loc:
        if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            item = node[part]
            label = item.get("name") or item.get("title") if isinstance(item, dict) else None
            parts[-1:] = [f"{parts[-1]}[{part}]" + (f"({label})" if label else "")] if parts else [f"[{part}]"]
            node = item
            continue
        parts.append(str(part))
        node = node.get(part) if isinstance(node, dict) else None
    return ".".join(parts) or "(top level)"


def _problem(error: Any) -> str:
    """One pydantic error as a sentence."""
    if error["type"] == "extra_forbidden":
        return "unknown key"
    if error["type"] == "missing":
        return "required field is missing"
    message = str(error["msg"])
    return message.removeprefix("Value error, ")


def load_class_file(path: Path) -> FailureClass:
    """Load and validate one class file.

    Raises:
        KnowledgeBaseError: naming the first problem (with how many more there are), and every problem of
            the file in `problems`.
    """
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    except OSError as exc:
        raise KnowledgeBaseError(str(path), "(file)", f"cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise KnowledgeBaseError(str(path), "(file)", f"not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise KnowledgeBaseError(str(path), "(top level)", "must be a mapping")
    problems: list[tuple[str, str]] = []
    failure_class: FailureClass | None = None
    try:
        failure_class = FailureClass.model_validate(raw)
    except ValidationError as exc:
        problems += [(_location(error["loc"], raw), _problem(error)) for error in exc.errors()]
    class_id = raw.get("id")
    if isinstance(class_id, str) and class_id != path.stem:
        problems.append(("id", f"{class_id!r} must equal the file name {path.stem!r}"))
    if problems:
        field, problem = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise KnowledgeBaseError(
            str(path), field, problem + more, problems=[(str(path), f, text) for f, text in problems]
        )
    assert failure_class is not None
    return failure_class


def load_knowledge(directory: Path | None = None) -> KnowledgeBase:
    """Load and validate every knowledge file; the fixed class ids must all be present.

    Raises:
        KnowledgeBaseError: naming the first problem; `problems` holds every problem of every file.
    """
    directory = directory or default_knowledge_dir()
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise KnowledgeBaseError(str(directory), "(directory)", "no *.yaml knowledge files found")
    classes: list[FailureClass] = []
    tables, problems = _load_tables(directory)
    for path in files:
        try:
            failure_class, table_problems = _with_tables(load_class_file(path), tables, str(path))
        except KnowledgeBaseError as exc:
            problems += exc.problems
            continue
        classes.append(failure_class)
        problems += table_problems
    # a file that failed to load still stands for its class: only absent files are reported missing
    ids = {c.id for c in classes} | {path.stem for path in files}
    missing = [class_id for class_id in CLASS_IDS if class_id not in ids]
    if missing:
        problems.append((str(directory), "(directory)", f"missing failure classes: {', '.join(missing)}"))
    calibration = None
    try:
        calibration = load_calibration(directory / CALIBRATION_FILE)
    except KnowledgeBaseError as exc:
        problems += exc.problems
    if problems:
        raise KnowledgeBaseError(*problems[0], problems=problems)
    ordered = [c for class_id in CLASS_IDS for c in classes if c.id == class_id]
    ordered += sorted((c for c in classes if c.id not in CLASS_IDS), key=lambda c: c.id)
    return KnowledgeBase(ordered, calibration, tables)
