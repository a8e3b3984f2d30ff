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
        facts: [steps_logged]        # optional: facts that must also hold (see bot.facts.FACT_NAMES)
        unless_facts: [steps_logged] # optional: the signal does not count when any of these facts hold
        weight: 0.95                 # 0 <= weight <= 1 (0: only captures details)
        hint: false                  # true: suggestive words, not proof; hints alone never outrank a generic class
        min_count: 1                 # lines needed before the signal counts
        variant: stockout            # optional: selects variants.<name> below
        sets: {permission: iam.serviceAccounts.actAs}   # optional: details this signal establishes
    variants: {stockout: {title, symptom, first_checks, remediation, avoid, commands}}   # optional overrides
    derive: {role: {source: permission, map: {'storage.objects.*': roles/storage.objectViewer}, default: ...}}
    commands:                        # gcloud templates; {name} placeholders are filled from the job and details
      - title: ...
        template: gcloud ... --project={project}
        requires: [bucket]           # only shown when these details are known
"""

from __future__ import annotations

import fnmatch
import re
from functools import cached_property
from pathlib import Path
from typing import Any

import re2
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bot.calibration import Calibration, load_calibration
from bot.errors import KnowledgeBaseError
from bot.facts import FACT_NAMES

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
CALIBRATION_FILE = "calibration/confidence.yaml"  # inside the knowledge directory; see bot.calibration
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
    title: str = Field(min_length=1)
    template: str = Field(min_length=1)
    requires: list[str] = Field(default_factory=list)

    @field_validator("template")
    @classmethod
    def _tool(cls, value: str) -> str:
        if not value.startswith(("gcloud ", "bq ", "gsutil ")):
            raise ValueError("a command template starts with gcloud, bq or gsutil")
        return value

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
    map: dict[str, str] = Field(min_length=1)  # keys are exact values or fnmatch patterns ("storage.objects.*")
    default: str | None = None

    def lookup(self, value: str) -> str | None:
        if value in self.map:
            return self.map[value]
        for key, result in self.map.items():
            if fnmatch.fnmatchcase(value, key):
                return result
        return self.default


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


class KnowledgeBase:
    """All failure classes, by id, in a fixed order."""

    def __init__(self, classes: list[FailureClass], calibration: Calibration | None = None) -> None:
        self.classes: dict[str, FailureClass] = {c.id: c for c in classes}
        self.order: tuple[str, ...] = tuple(c.id for c in classes)
        self.calibration: Calibration = calibration or Calibration()

    def __getitem__(self, class_id: str) -> FailureClass:
        return self.classes[class_id]

    def __iter__(self):  # noqa: ANN204
        return iter(self.classes.values())

    def __len__(self) -> int:
        return len(self.classes)


def default_knowledge_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "knowledge"


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
    problems: list[tuple[str, str, str]] = []
    for path in files:
        try:
            classes.append(load_class_file(path))
        except KnowledgeBaseError as exc:
            problems += exc.problems
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
    return KnowledgeBase(ordered, calibration)
