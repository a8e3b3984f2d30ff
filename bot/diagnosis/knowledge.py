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
    starts_first: false              # true: a start-up failure; a secondary symptom after it is its consequence
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
        at_end: false                # true: counts only on the log's last line (what the job ended on)
        ends_training: false         # true: says training stopped there; not counted when training printed values
                                     # on three or more later lines
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
Vertex AI training offers an accelerator), job_commands (commands every class gets after its own),
gcloud_command_permissions (a refused gcloud command -> the permission it needed, when the error names none),
client_call_permissions (a Google Cloud Python client method in the traceback -> the permission it needed, likewise).
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

import re
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from bot.diagnosis.calibration import Calibration, load_calibration
from bot.diagnosis.commands.fill import unfilled_pattern
from bot.diagnosis.knowledge_schema import UNKNOWN, CommandTemplate, Derivation, FailureClass
from bot.diagnosis.knowledge_tables import TABLE_SCHEMAS, TABLES_DIR, Table
from bot.diagnosis.shape.model import SHAPE_MODEL_FILE, ShapeModel, load_shape_model
from bot.diagnosis.words.text_model import MODEL_FILE, TextModel, load_text_model
from bot.errors import KnowledgeBaseError

_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: 8x faster start-up


class _YAML_LOADER(_BASE_LOADER):  # noqa: N801 - named as the loader it replaces
    """The safe loader, refusing a key given twice in one mapping: YAML's last-one-wins would drop the first (a
    signal's `unless_facts` written twice keeps only the second list, silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


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
CALIBRATION_FILE = "calibration/confidence.yaml"  # inside the knowledge directory; see bot.diagnosis.calibration


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
        text_model: TextModel | None = None,
        shape_model: ShapeModel | None = None,
    ) -> None:
        self.classes: dict[str, FailureClass] = {c.id: c for c in classes}
        self.order: tuple[str, ...] = tuple(c.id for c in classes)
        self.calibration: Calibration = calibration or Calibration()
        self.tables: dict[str, Table] = tables or {}
        self.text_model: TextModel | None = text_model
        self.shape_model: ShapeModel | None = shape_model

    @cached_property
    def unfilled(self) -> re.Pattern[str]:
        """Finds a placeholder left in a filled command (bot.diagnosis.commands.fill.unfilled_pattern)."""
        return unfilled_pattern(self.classes.values())

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


def load_knowledge(directory: Path | None = None, *, shape_model: bool = True) -> KnowledgeBase:
    """Load and validate every knowledge file; the fixed class ids must all be present. `shape_model=False` leaves
    the shape model unread (its fitter reads the rules' answers without it, whatever file is there).

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
    text_model = None
    try:
        text_model = load_text_model(directory / MODEL_FILE)
    except KnowledgeBaseError as exc:
        problems += exc.problems
    shapes = None
    try:
        shapes = load_shape_model(directory / SHAPE_MODEL_FILE) if shape_model else None
    except KnowledgeBaseError as exc:
        problems += exc.problems
    curve_classes = {c.id for c in classes if c.judged_on_curves}
    if shapes is not None and (strange := sorted(set(shapes.classes) - curve_classes - {UNKNOWN})):
        problems.append(
            (str(directory / SHAPE_MODEL_FILE), "classes", f"not a class judged on curves: {', '.join(strange)}")
        )
    if calibration is not None and (strange := sorted(set(calibration.curve_leads) - curve_classes)):
        problems.append(
            (str(directory / CALIBRATION_FILE), "curve_leads", f"not a class judged on curves: {', '.join(strange)}")
        )
    if text_model is not None and (strange := sorted(set(text_model.classes) - ids)):
        problems.append((str(directory / MODEL_FILE), "classes", f"not in the knowledge base: {', '.join(strange)}"))
    if problems:
        raise KnowledgeBaseError(*problems[0], problems=problems)
    ordered = [c for class_id in CLASS_IDS for c in classes if c.id == class_id]
    ordered += sorted((c for c in classes if c.id not in CLASS_IDS), key=lambda c: c.id)
    return KnowledgeBase(ordered, calibration, tables, text_model, shapes)
