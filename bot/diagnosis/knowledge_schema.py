"""The schema of a knowledge class file (knowledge/<id>.yaml): its signals, derivations, command templates,
variants and rerun block, as strict pydantic models. The file format is described at the top of
bot.diagnosis.knowledge, which loads and validates the files.
"""

from __future__ import annotations

import fnmatch
import re
from functools import cached_property, lru_cache
from typing import Any

import re2
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bot.diagnosis.facts import FACT_NAMES

UNKNOWN = "unknown"
_NAME = r"^[a-z][a-z0-9_]*$"
_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str, *, case_sensitive: bool = False) -> Any:
    """Compile a knowledge-base regex with RE2 (linear time; no look-around or back-references), once per pattern."""
    flags = "(?m)" if case_sensitive else "(?mi)"
    return re2.compile(flags + pattern)


_PARSE_ONLY = re2.Options()
_PARSE_ONLY.log_errors = False  # a refusal is worded below, not logged by RE2 itself


def _check_regex(value: str) -> str:
    """RE2 is what runs the pattern; Python's parser only words the refusal when RE2 refuses it (start-up time: it
    is the slow one of the two). Adding the pattern to an RE2 set parses it without compiling it (a quarter of the
    time): a pattern is compiled on its first use (`Signal.compiled`), and every pattern at once when the classifier
    builds its set."""
    try:
        re2.Set.SearchSet(_PARSE_ONLY).Add("(?mi)" + value)
        return value
    except re2.error:
        pass
    try:
        re2.compile("(?mi)" + value, options=_PARSE_ONLY)  # RE2's own words for the refusal, not logged
    except re2.error as exc:
        try:
            re.compile(value)
        except re.error as python_exc:
            raise ValueError(f"invalid regex: {python_exc}") from None
        said = exc.args[0] if exc.args else exc
        said = said.decode("utf-8", "replace") if isinstance(said, bytes) else said
        raise ValueError(f"not RE2 syntax (no look-around or back-references): {said}") from None
    return value


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Signal(StrictModel):
    name: str = Field(pattern=_NAME)
    pattern: str | None = None
    case_sensitive: bool = False
    unless: str | None = None
    facts: list[str] = Field(default_factory=list)
    unless_facts: list[str] = Field(default_factory=list)
    weight: float = Field(ge=0.0, le=1.0)  # 0: the signal only captures details for commands
    min_count: int = Field(default=1, ge=1)
    hint: bool = False  # words that point at the class without proving it: never outranks a catch-all class
    # false: a match on the source code a traceback quotes under a frame does not count (words of the program's code,
    # `return container(name_or_buffer)` in torch.save, not of what the run printed)
    in_quoted_source: bool = True
    # true: counts only on the log's last line (the platform's lifecycle lines aside) - what the job ended on: a bare
    # "Killed", a rank still joining the process group, a NaN gradient norm
    at_end: bool = False
    # true: the words say training stopped there ("interrupting training"); a match followed by training values on
    # three or more later lines does not count - the run carried on past it
    ends_training: bool = False
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
        if self.pattern is None and not self.in_quoted_source:
            raise ValueError("'in_quoted_source' only applies to a pattern")
        if self.pattern is None and self.at_end:
            raise ValueError("'at_end' only applies to a pattern")
        if self.pattern is None and self.ends_training:
            raise ValueError("'ends_training' only applies to a pattern")
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


class CommandTemplate(StrictModel):
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


class Variant(StrictModel):
    title: str | None = None
    symptom: str | None = None
    first_checks: list[str] | None = None
    remediation: list[str] | None = None
    avoid: list[str] | None = None
    commands: list[CommandTemplate] | None = None


class Derivation(StrictModel):
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


#: The changes a rerun can make to the failed job's spec (bot.chat.rerun_plan, in the order a class lists them).
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


class RerunVariant(StrictModel):
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


class RerunPolicy(StrictModel):
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
        override = self.variants.get(variant) if variant is not None else None
        fields = {"transient": self.transient, "why": self.why, "fix_first": self.fix_first, "changes": self.changes}
        if override is not None:
            fields.update({k: v for k, v in override.model_dump(exclude_unset=True).items() if v is not None})
        return RerunPolicy.model_construct(**fields, variants={})


class FailureClass(StrictModel):
    id: str = Field(pattern=_NAME)
    title: str = Field(min_length=1, max_length=120)
    symptom: str = Field(min_length=1)
    first_checks: list[str] = Field(min_length=1)
    remediation: list[str] = Field(min_length=1)
    avoid: list[str] = Field(default_factory=list)
    secondary: bool = False
    generic: bool = False
    # a failure at start-up (an import, an entrypoint): a secondary class's symptom logged after it, on its replica
    # too, is its consequence (the coordination service finding the task that never started gone)
    starts_first: bool = False
    # the text model may name this class when no rule found evidence enough (bot.diagnosis.classifier): false for
    # a class whose words are on logs of every kind (a curve class: loss, epoch, accuracy)
    answer_from_words: bool = True
    # judged on the log's last run alone: a signal on a line before another run started over does not count (a curve
    # class: an earlier attempt's early stopping or train/validation gap says nothing of the run that failed)
    last_run_only: bool = False
    # a class the training curve alone decides (overfitting, underfitting): its answer always lists `unknown` (a
    # curve read as healthy is the alternative to any reading of it), and a log with a curve no finding judged
    # lists it as a lead at its calibrated share (knowledge/calibration: curve_leads)
    judged_on_curves: bool = False
    signals: list[Signal] = Field(default_factory=list)
    variants: dict[str, Variant] = Field(default_factory=dict)
    derive: dict[str, Derivation] = Field(default_factory=dict)
    commands: list[CommandTemplate] = Field(default_factory=list)
    rerun: RerunPolicy | None = None  # absent: the alert offers no Rerun

    @model_validator(mode="after")
    def _rerun_variants(self) -> FailureClass:
        """A rerun override names a variant of this class, and that variant has a title of its own: the
        Diagnosis names its variant only by its title (bot.chat.rerun_offer.policy_for)."""
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
