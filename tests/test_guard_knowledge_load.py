"""Loading the knowledge base (bot.diagnosis.knowledge): tables, class files, derivations filled from the tables,
the common job commands, the calibration and the text model, and every problem named by file and field.

Most tests build a small knowledge directory by hand (one minimal file per class, four short tables) so that each
expected problem and value can be written out exactly.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import yaml

from bot.diagnosis.calibration import Calibration, load_calibration
from bot.diagnosis.knowledge import (
    CALIBRATION_FILE,
    CLASS_IDS,
    KnowledgeBase,
    default_knowledge_dir,
    load_class_file,
    load_knowledge,
    load_table,
)
from bot.diagnosis.knowledge_schema import FailureClass
from bot.diagnosis.knowledge_tables import AcceleratorRegions, PermissionRole, QuotaRow, Table
from bot.diagnosis.words.text_model import MODEL_FILE
from bot.errors import KnowledgeBaseError

IAM = "https://cloud.google.com/iam/docs/roles-permissions/"
QUOTAS = "https://cloud.google.com/vertex-ai/docs/quotas"
LOCATIONS = "https://cloud.google.com/vertex-ai/docs/general/locations"

TABLES: dict[str, dict] = {
    "iam_permission_roles": {
        "description": "Permission to role.",
        "rows": [
            {
                "permission": "storage.objects.get",
                "role": "roles/storage.objectViewer",
                "grant_on": "bucket",
                "source": IAM + "storage",
            },
            {
                "permission": "storage.objects.create",
                "role": "roles/storage.objectCreator",
                "grant_on": "bucket",
                "source": IAM + "storage",
            },
            {
                "permission": "bigquery.jobs.create",
                "role": "roles/bigquery.jobUser",
                "grant_on": "project",
                "source": IAM + "bigquery",
            },
        ],
    },
    "quota_ids": {
        "description": "Quota metric to id.",
        "rows": [
            {
                "service": "aiplatform.googleapis.com",
                "metric": "aiplatform.googleapis.com/t4_gpus",
                "quota_id": "T4PerRegion",
                "scope": "region",
                "accelerator": "NVIDIA_TESLA_T4",
                "counts": "accelerators",
                "id_evidence": "observed",
                "source": QUOTAS,
            },
            {
                "service": "compute.googleapis.com",
                "metric": "compute.googleapis.com/cpus",
                "scope": "region",
                "source": QUOTAS,
            },
            {
                "service": "aiplatform.googleapis.com",
                "quota_id": "TpuPerRegion",
                "scope": "global",
                "id_evidence": "pattern",
                "source": QUOTAS,
            },
        ],
    },
    "accelerator_regions": {
        "description": "Where each accelerator is offered.",
        "rows": [
            {
                "accelerator": "NVIDIA_TESLA_T4",
                "aliases": ["nvidia-tesla-t4"],
                "regions": ["us-central1", "us-east1"],
                "source": LOCATIONS,
            },
            {
                "accelerator": "NVIDIA_L4",
                "aliases": ["nvidia-l4", "g2-standard"],
                "regions": ["us-west1"],
                "source": LOCATIONS,
            },
        ],
    },
    "job_commands": {
        "description": "Commands for any job.",
        "rows": [
            {
                "title": "Describe the job",
                "template": "gcloud ai custom-jobs describe {job_id}",
                "requires": ["job_id"],
            },
            {"title": "Stream its logs", "template": "gcloud ai custom-jobs stream-logs {job_id}"},
        ],
    },
}
DESCRIBE = "gcloud ai custom-jobs describe {job_id}"
STREAM = "gcloud ai custom-jobs stream-logs {job_id}"


def minimal(class_id: str, **changes: object) -> dict:
    data: dict = {
        "id": class_id,
        "title": f"Title of {class_id}",
        "symptom": "Something failed.",
        "first_checks": ["Look."],
        "remediation": ["Fix it."],
        "avoid": ["Do not guess."],
        "signals": [{"name": "marker", "pattern": f"MARKER_{class_id.upper()}", "weight": 0.9}],
    }
    data.update(changes)
    return data


def dump(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def small_kb(tmp_path: Path, **classes: dict) -> Path:
    """A knowledge directory: a minimal file for each class (or the one given), the four short tables."""
    directory = tmp_path / "kb"
    for class_id in CLASS_IDS:
        dump(directory / f"{class_id}.yaml", classes.get(class_id) or minimal(class_id))
    for class_id, data in classes.items():
        if class_id not in CLASS_IDS:
            dump(directory / f"{class_id}.yaml", data)
    for name, table in TABLES.items():
        dump(directory / "tables" / f"{name}.yaml", table)
    return directory


def table_file(tmp_path: Path, name: str, data: object) -> Path:
    return dump(tmp_path / "tables" / f"{name}.yaml", data)


def problems(directory: Path) -> list[tuple[str, str, str]]:
    """Every problem of a failed load, with paths relative to the directory."""
    with pytest.raises(KnowledgeBaseError) as caught:
        load_knowledge(directory)
    found = [(Path(path).relative_to(directory).as_posix(), field, text) for path, field, text in caught.value.problems]
    first = found[0]
    assert (Path(caught.value.path).relative_to(directory).as_posix(), caught.value.field, caught.value.problem) == (
        first
    )
    return found


def table_problems(path: Path) -> list[tuple[str, str]]:
    with pytest.raises(KnowledgeBaseError) as caught:
        load_table(path)
    assert all(p == str(path) for p, _, _ in caught.value.problems)
    assert caught.value.path == str(path)
    listed = [(field, text) for _, field, text in caught.value.problems]
    more = f" (and {len(listed) - 1} more problem(s))" if len(listed) > 1 else ""
    assert (caught.value.field, caught.value.problem) == (listed[0][0], listed[0][1] + more)
    return listed


# ---- one table file --------------------------------------------------------------------------------------------


def test_a_table_loads_with_its_name_description_and_rows(tmp_path: Path) -> None:
    table = load_table(table_file(tmp_path, "accelerator_regions", TABLES["accelerator_regions"]))
    assert isinstance(table, Table)
    assert (table.name, table.description) == ("accelerator_regions", "Where each accelerator is offered.")
    assert table.rows == [AcceleratorRegions.model_validate(row) for row in TABLES["accelerator_regions"]["rows"]]
    assert table.unique == ("accelerator", "aliases")


def test_an_unknown_table_name_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "tables" / "colours.yaml"  # does not even exist
    with pytest.raises(KnowledgeBaseError) as caught:
        load_table(path)
    assert (caught.value.path, caught.value.field, caught.value.problem) == (
        str(path),
        "(file)",
        "unknown table 'colours'; known: ['accelerator_regions', 'client_call_permissions', "
        "'gcloud_command_permissions', 'iam_permission_roles', 'iam_role_covers', 'job_commands', 'quota_ids']",
    )
    assert caught.value.problems == [(caught.value.path, caught.value.field, caught.value.problem)]


def test_an_unreadable_table_file_is_named(tmp_path: Path) -> None:
    absent = tmp_path / "tables" / "quota_ids.yaml"
    assert table_problems(absent) == [("(file)", "cannot read: No such file or directory")]
    absent.mkdir(parents=True)
    assert table_problems(absent) == [("(file)", "cannot read: Is a directory")]


def test_a_table_that_is_not_yaml_or_not_a_mapping_is_named(tmp_path: Path) -> None:
    path = tmp_path / "tables" / "quota_ids.yaml"
    path.parent.mkdir()
    path.write_text("description: [unclosed\n", encoding="utf-8")
    [(field, text)] = table_problems(path)
    assert field == "(file)" and text.startswith("not valid YAML: ") and "line 1" in text
    for body in ("- a\n- b\n", "just text\n", "", "42\n"):
        path.write_text(body, encoding="utf-8")
        assert table_problems(path) == [("(top level)", "must be a mapping with description and rows")]


def test_unknown_keys_a_missing_description_and_missing_rows_are_all_named(tmp_path: Path) -> None:
    path = table_file(tmp_path, "job_commands", {"zeta": 1, "alpha": 2, 7: "x", "rows": {"a": 1}})
    assert table_problems(path) == [
        ("7", "unknown key"),
        ("alpha", "unknown key"),
        ("zeta", "unknown key"),
        ("description", "say in one line what the table holds"),
        ("rows", "a table needs a list of rows"),
    ]


@pytest.mark.parametrize("description", [None, "", "   ", 5, ["a list"]])
def test_the_description_is_a_non_blank_line(tmp_path: Path, description: object) -> None:
    data = {**TABLES["job_commands"], "description": description}
    if description is None:
        del data["description"]
    assert table_problems(table_file(tmp_path, "job_commands", data)) == [
        ("description", "say in one line what the table holds")
    ]


@pytest.mark.parametrize("rows", ["absent", None, [], {"title": "x"}, "rows"])
def test_a_table_needs_a_non_empty_list_of_rows(tmp_path: Path, rows: object) -> None:
    data = {"description": "Commands."} if rows == "absent" else {"description": "Commands.", "rows": rows}
    assert table_problems(table_file(tmp_path, "job_commands", data)) == [("rows", "a table needs a list of rows")]


def test_row_problems_name_the_row_by_its_key_column(tmp_path: Path) -> None:
    rows = [
        dict(TABLES["iam_permission_roles"]["rows"][0], role="roles/owner"),
        "not a row",
        {"permission": 42, "role": "roles/storage.objectViewer", "grant_on": "bucket", "source": IAM + "storage"},
        dict(TABLES["iam_permission_roles"]["rows"][2], colour="red", grant_on="folder"),
    ]
    path = table_file(tmp_path, "iam_permission_roles", {"description": "d", "rows": rows})
    listed = table_problems(path)
    assert [field for field, _ in listed] == [
        "rows[0](storage.objects.get).role",
        "rows[1]",  # not a mapping: no key to name it by
        "rows[2].permission",  # a key that is not text does not name the row
        "rows[3](bigquery.jobs.create).grant_on",
        "rows[3](bigquery.jobs.create).colour",
    ]
    assert listed[0][1] == "roles/owner is a basic role: name the narrowest predefined role instead"
    assert listed[4][1] == "unknown key"


def test_a_nested_list_index_is_not_taken_for_a_row(tmp_path: Path) -> None:
    rows = [dict(TABLES["accelerator_regions"]["rows"][0]), dict(TABLES["accelerator_regions"]["rows"][1])]
    rows[1]["aliases"] = ["nvidia-l4", 5]
    path = table_file(tmp_path, "accelerator_regions", {"description": "d", "rows": rows})
    assert table_problems(path) == [("rows[1](NVIDIA_L4).aliases.1", "Input should be a valid string")]


def test_a_row_without_its_key_is_named_by_index_alone(tmp_path: Path) -> None:
    rows = [dict(row) for row in TABLES["quota_ids"]["rows"]]
    rows[2]["scope"] = "zone"  # this row has a quota_id but no metric: no label
    path = table_file(tmp_path, "quota_ids", {"description": "d", "rows": rows})
    [(field, text)] = table_problems(path)
    assert field == "rows[2].scope" and text.startswith("Input should be 'region', 'global', 'region_gpu_family' or")


def test_values_of_a_unique_column_must_differ_naming_the_first_row(tmp_path: Path) -> None:
    rows = [dict(row) for row in TABLES["iam_permission_roles"]["rows"]]
    rows[1]["permission"] = rows[2]["permission"] = "storage.objects.get"
    path = table_file(tmp_path, "iam_permission_roles", {"description": "d", "rows": rows})
    assert table_problems(path) == [
        ("rows[1](storage.objects.get).permission", "'storage.objects.get' is also in rows[0]"),
        ("rows[2](storage.objects.get).permission", "'storage.objects.get' is also in rows[0]"),
    ]


def test_every_unique_column_is_checked_list_items_too_and_absent_values_never_clash(tmp_path: Path) -> None:
    quotas = [dict(row) for row in TABLES["quota_ids"]["rows"]]
    quotas.append(dict(quotas[1]))  # a second row with the same metric and, like it, no quota_id
    quotas.append(dict(quotas[2], scope="region"))  # a second row with the same quota_id and, like it, no metric
    path = table_file(tmp_path, "quota_ids", {"description": "d", "rows": quotas})
    assert table_problems(path) == [
        ("rows[3](compute.googleapis.com/cpus).metric", "'compute.googleapis.com/cpus' is also in rows[1]"),
        ("rows[4].quota_id", "'TpuPerRegion' is also in rows[2]"),
    ]
    regions = [dict(row) for row in TABLES["accelerator_regions"]["rows"]]
    regions[1]["aliases"] = ["nvidia-l4", "nvidia-tesla-t4"]
    regions.append(dict(regions[0], accelerator="NVIDIA_TESLA_T4", aliases=["g2-standard", "g2-standard"]))
    path = table_file(tmp_path, "accelerator_regions", {"description": "d", "rows": regions})
    assert table_problems(path) == [
        ("rows[2](NVIDIA_TESLA_T4).accelerator", "'NVIDIA_TESLA_T4' is also in rows[0]"),
        ("rows[1](NVIDIA_L4).aliases", "'nvidia-tesla-t4' is also in rows[0]"),
        ("rows[2](NVIDIA_TESLA_T4).aliases", "'g2-standard' is also in rows[2]"),  # twice in its own row
    ]


def test_uniqueness_is_checked_only_once_the_rows_are_valid(tmp_path: Path) -> None:
    rows = [dict(row) for row in TABLES["iam_permission_roles"]["rows"]]
    rows[1]["permission"] = "storage.objects.get"
    path = table_file(tmp_path, "iam_permission_roles", {"description": "", "rows": rows})
    assert table_problems(path) == [("description", "say in one line what the table holds")]


# ---- the tables inside a knowledge directory -------------------------------------------------------------------


def test_a_small_knowledge_base_loads_with_its_tables(tmp_path: Path) -> None:
    kb = load_knowledge(small_kb(tmp_path))
    assert kb.order == CLASS_IDS
    assert sorted(kb.tables) == ["accelerator_regions", "iam_permission_roles", "job_commands", "quota_ids"]
    assert [row.permission for row in kb.tables["iam_permission_roles"].rows] == [
        "storage.objects.get",
        "storage.objects.create",
        "bigquery.jobs.create",
    ]
    assert kb.tables["quota_ids"].name == "quota_ids"
    assert isinstance(kb.tables["iam_permission_roles"].rows[0], PermissionRole)
    assert isinstance(kb.tables["quota_ids"].rows[0], QuotaRow)
    assert kb.calibration == Calibration() and kb.text_model is None


def test_only_yaml_files_in_the_tables_folder_are_tables(tmp_path: Path) -> None:
    directory = small_kb(tmp_path)
    (directory / "tables" / "job_commands.yaml").rename(directory / "tables" / "job_commands.yml")
    kb = load_knowledge(directory)
    assert sorted(kb.tables) == ["accelerator_regions", "iam_permission_roles", "quota_ids"]
    assert [c.template for c in kb["host_oom"].commands] == []  # no job commands table: nothing appended


def test_problems_of_every_table_come_first_in_file_order(tmp_path: Path) -> None:
    directory = small_kb(tmp_path)
    dump(directory / "tables" / "quota_ids.yaml", {"description": "d"})
    dump(directory / "tables" / "colours.yaml", {"description": "d", "rows": [1]})
    dump(directory / "tables" / "job_commands.yaml", {"description": "d", "rows": [{"title": "x"}], "extra": 1})
    dump(directory / "host_oom.yaml", minimal("host_oom", colour="red"))
    assert problems(directory) == [
        (
            "tables/colours.yaml",
            "(file)",
            "unknown table 'colours'; known: "
            "['accelerator_regions', 'client_call_permissions', 'gcloud_command_permissions', "
            "'iam_permission_roles', 'iam_role_covers', 'job_commands', 'quota_ids']",
        ),
        ("tables/job_commands.yaml", "extra", "unknown key"),
        ("tables/job_commands.yaml", "rows[0](x).template", "required field is missing"),
        ("tables/quota_ids.yaml", "rows", "a table needs a list of rows"),
        ("host_oom.yaml", "colour", "unknown key"),
    ]


# ---- derivations filled from a table ---------------------------------------------------------------------------


def permission_class(derive: dict, **changes: object) -> dict:
    return minimal("permission_denied", derive=derive, **changes)


def test_a_table_derivation_maps_the_key_column_to_the_value_column_with_the_map_on_top(tmp_path: Path) -> None:
    derive = {
        "role": {
            "source": "permission",
            "table": "iam_permission_roles",
            "column": "role",
            "map": {"storage.objects.get": "roles/custom.reader", "aiplatform.*": "roles/aiplatform.user"},
        },
        "grant_on": {
            "source": "permission",
            "table": "iam_permission_roles",
            "column": "grant_on",
            "default": "project",
        },
        "permission_of_role": {
            "source": "role",
            "table": "iam_permission_roles",
            "key": "role",
            "column": "permission",
        },
        "fixed": {"source": "permission", "map": {"a": "b"}},
        "aliases": {"source": "accelerator", "table": "accelerator_regions", "column": "aliases"},
        "accelerator": {"source": "alias", "table": "accelerator_regions", "key": "aliases", "column": "accelerator"},
    }
    kb = load_knowledge(small_kb(tmp_path, permission_denied=permission_class(derive)))
    derived = kb["permission_denied"].derive
    assert list(derived) == list(derive)
    assert derived["role"].map == {
        "storage.objects.get": "roles/custom.reader",  # the class's own map wins over the table
        "storage.objects.create": "roles/storage.objectCreator",
        "bigquery.jobs.create": "roles/bigquery.jobUser",
        "aiplatform.*": "roles/aiplatform.user",
    }
    assert list(derived["role"].map) == [
        "storage.objects.get",
        "storage.objects.create",
        "bigquery.jobs.create",
        "aiplatform.*",
    ]
    assert (derived["role"].table, derived["role"].column, derived["role"].source) == (
        "iam_permission_roles",
        "role",
        "permission",
    )
    assert derived["grant_on"].map == {
        "storage.objects.get": "bucket",
        "storage.objects.create": "bucket",
        "bigquery.jobs.create": "project",
    }
    assert derived["grant_on"].lookup("compute.instances.create") == "project"
    assert derived["permission_of_role"].map == {
        "roles/storage.objectViewer": "storage.objects.get",
        "roles/storage.objectCreator": "storage.objects.create",
        "roles/bigquery.jobUser": "bigquery.jobs.create",
    }
    assert derived["fixed"].map == {"a": "b"} and derived["fixed"].table is None
    assert derived["aliases"].map == {"NVIDIA_TESLA_T4": "nvidia-tesla-t4", "NVIDIA_L4": "nvidia-l4, g2-standard"}
    assert derived["accelerator"].map == {
        "nvidia-tesla-t4": "NVIDIA_TESLA_T4",
        "nvidia-l4": "NVIDIA_L4",
        "g2-standard": "NVIDIA_L4",
    }


def test_the_default_key_is_the_tables_first_unique_column(tmp_path: Path) -> None:
    derive = {
        "quota_id": {"source": "quota_metric", "table": "quota_ids", "column": "quota_id"},
        "quota_metric": {"source": "quota_id", "table": "quota_ids", "key": "quota_id", "column": "metric"},
    }
    kb = load_knowledge(small_kb(tmp_path, quota_exhausted=minimal("quota_exhausted", derive=derive)))
    derived = kb["quota_exhausted"].derive
    assert derived["quota_id"].map == {"aiplatform.googleapis.com/t4_gpus": "T4PerRegion"}
    assert derived["quota_metric"].map == {"T4PerRegion": "aiplatform.googleapis.com/t4_gpus"}


def test_every_wrong_table_key_or_column_is_named(tmp_path: Path) -> None:
    derive = {
        "a": {"source": "permission", "table": "iam_roles", "column": "role"},
        "b": {"source": "permission", "table": "iam_permission_roles", "key": "perm", "column": "where"},
        "c": {"source": "permission", "table": "iam_permission_roles", "column": "where"},
        "d": {"source": "permission", "table": "iam_permission_roles", "key": "rol", "column": "role"},
        "e": {"source": "permission", "table": "roles", "column": "role"},
        "f": {"source": "permission", "table": "iam_permission_roles", "column": "role"},
    }
    directory = small_kb(tmp_path, permission_denied=permission_class(derive))
    assert problems(directory) == [
        ("permission_denied.yaml", "derive.a.table", "no table 'iam_roles' in tables/"),
        ("permission_denied.yaml", "derive.b.key", "table 'iam_permission_roles' has no column 'perm'"),
        ("permission_denied.yaml", "derive.b.column", "table 'iam_permission_roles' has no column 'where'"),
        ("permission_denied.yaml", "derive.c.column", "table 'iam_permission_roles' has no column 'where'"),
        ("permission_denied.yaml", "derive.d.key", "table 'iam_permission_roles' has no column 'rol'"),
        ("permission_denied.yaml", "derive.e.table", "no table 'roles' in tables/"),
    ]


def test_a_table_that_failed_to_load_is_no_table_for_derivations(tmp_path: Path) -> None:
    derive = {"role": {"source": "permission", "table": "iam_permission_roles", "column": "role"}}
    directory = small_kb(tmp_path, permission_denied=permission_class(derive))
    dump(directory / "tables" / "iam_permission_roles.yaml", {"description": "d", "rows": []})
    assert problems(directory) == [
        ("tables/iam_permission_roles.yaml", "rows", "a table needs a list of rows"),
        ("permission_denied.yaml", "derive.role.table", "no table 'iam_permission_roles' in tables/"),
    ]


# ---- the common job commands -----------------------------------------------------------------------------------


def test_the_job_commands_follow_each_class_and_variant_commands_once(tmp_path: Path) -> None:
    own = {"title": "Check the bucket", "template": "gsutil ls gs://{bucket}", "requires": ["bucket"]}
    same = {"title": "Describe it (own title)", "template": DESCRIBE}
    variants = {
        "with_commands": {"title": "Variant A", "commands": [same, own]},
        "empty_commands": {"title": "Variant B", "commands": []},
        "no_commands": {"title": "Variant C"},
    }
    data = minimal("host_oom", commands=[own, same], variants=variants)
    kb = load_knowledge(small_kb(tmp_path, host_oom=data))
    host = kb["host_oom"]
    assert [(c.title, c.template) for c in host.commands] == [
        ("Check the bucket", "gsutil ls gs://{bucket}"),
        ("Describe it (own title)", DESCRIBE),  # the class's own wording of a common command stays, once
        ("Stream its logs", STREAM),
    ]
    assert [c.template for c in host.variants["with_commands"].commands] == [
        DESCRIBE,
        "gsutil ls gs://{bucket}",
        STREAM,
    ]
    assert [c.title for c in host.variants["empty_commands"].commands] == ["Describe the job", "Stream its logs"]
    assert host.variants["no_commands"].commands is None  # falls back on the class's commands
    assert host.variants["no_commands"].title == "Variant C"
    assert [c.template for c in kb["preemption"].commands] == [DESCRIBE, STREAM]
    assert kb["preemption"].commands[0].requires == ["job_id"]


# ---- class files and the whole directory -----------------------------------------------------------------------


def test_a_class_file_that_is_not_yaml_is_named(tmp_path: Path) -> None:
    path = tmp_path / "host_oom.yaml"
    path.write_text("id: host_oom\ntitle: [unclosed\n", encoding="utf-8")
    with pytest.raises(KnowledgeBaseError) as caught:
        load_class_file(path)
    assert (caught.value.path, caught.value.field) == (str(path), "(file)")
    assert caught.value.problem.startswith("not valid YAML: ") and "line 2" in caught.value.problem
    path.unlink()
    path.mkdir()
    with pytest.raises(KnowledgeBaseError) as caught:
        load_class_file(path)
    assert (caught.value.field, caught.value.problem) == ("(file)", "cannot read: Is a directory")


def test_a_class_files_problems_are_all_listed_and_counted(tmp_path: Path) -> None:
    path = dump(tmp_path / "host_oom.yaml", minimal("ram_oom", colour="red", title=""))
    with pytest.raises(KnowledgeBaseError) as caught:
        load_class_file(path)
    assert caught.value.problems == [
        (str(path), "title", "String should have at least 1 character"),
        (str(path), "colour", "unknown key"),
        (str(path), "id", "'ram_oom' must equal the file name 'host_oom'"),
    ]
    assert (caught.value.field, caught.value.problem) == (
        "title",
        "String should have at least 1 character (and 2 more problem(s))",
    )
    assert str(caught.value) == "\n".join(f"{p}: {f}: {t}" for p, f, t in caught.value.problems)
    path = dump(tmp_path / "host_oom.yaml", minimal("ram_oom", avoid=[], signals=[]))
    with pytest.raises(KnowledgeBaseError) as caught:
        load_class_file(path)
    assert caught.value.problems == [
        (str(path), "(top level)", "signals: a failure class needs at least one signal; avoid: say what not to do"),
        (str(path), "id", "'ram_oom' must equal the file name 'host_oom'"),
    ]
    assert caught.value.problem.endswith("say what not to do (and 1 more problem(s))")


def test_an_id_that_is_not_text_is_reported_by_the_schema_only(tmp_path: Path) -> None:
    path = dump(tmp_path / "host_oom.yaml", minimal("host_oom", id=7))
    with pytest.raises(KnowledgeBaseError) as caught:
        load_class_file(path)
    assert caught.value.problems == [(str(path), "id", "Input should be a valid string")]


def test_a_valid_class_file_loads_as_written(tmp_path: Path) -> None:
    path = dump(tmp_path / "host_oom.yaml", minimal("host_oom"))
    loaded = load_class_file(path)
    assert isinstance(loaded, FailureClass)
    assert loaded == FailureClass.model_validate(minimal("host_oom"))


def test_labels_come_from_a_name_or_else_a_title(tmp_path: Path) -> None:
    signals = [
        {"name": "first", "pattern": "a", "weight": 0.5},
        {"name": "second", "pattern": "b", "weight": 2},
    ]
    path = dump(tmp_path / "host_oom.yaml", minimal("host_oom", signals=signals))
    with pytest.raises(KnowledgeBaseError) as caught:
        load_class_file(path)
    assert caught.value.field == "signals[1](second).weight"
    commands = [{"title": "", "template": "gcloud x"}]  # an empty title names nothing
    path = dump(tmp_path / "host_oom.yaml", minimal("host_oom", commands=commands))
    with pytest.raises(KnowledgeBaseError) as caught:
        load_class_file(path)
    assert caught.value.field == "commands[0].title"


def test_a_class_file_that_fails_still_stands_for_its_class(tmp_path: Path) -> None:
    directory = small_kb(tmp_path, host_oom=minimal("host_oom", title=""), preemption=minimal("ram_oom"))
    (directory / "overfitting.yaml").unlink()
    found = problems(directory)
    assert [(path, field) for path, field, _ in found] == [
        ("host_oom.yaml", "title"),
        ("preemption.yaml", "id"),
        (".", "(directory)"),
    ]
    assert found[2][2] == "missing failure classes: overfitting"


def test_the_knowledge_base_orders_the_fixed_classes_first_then_the_others_by_id(tmp_path: Path) -> None:
    directory = small_kb(tmp_path, zeta=minimal("zeta"), alpha=minimal("alpha"))
    kb = load_knowledge(directory)
    assert kb.order == (*CLASS_IDS, "alpha", "zeta")
    assert list(kb.classes) == list(kb.order)
    assert [c.id for c in kb] == list(kb.order) and len(kb) == 15
    assert kb["alpha"].title == "Title of alpha"


def test_an_empty_knowledge_base_object_has_defaults() -> None:
    kb = KnowledgeBase([])
    assert (kb.order, kb.classes, kb.tables, kb.text_model, len(kb)) == ((), {}, {}, None, 0)
    assert kb.calibration == Calibration()


def test_a_directory_without_class_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tables").mkdir()
    dump(tmp_path / "tables" / "job_commands.yaml", TABLES["job_commands"])
    with pytest.raises(KnowledgeBaseError) as caught:
        load_knowledge(tmp_path)
    assert caught.value.problems == [(str(tmp_path), "(directory)", "no *.yaml knowledge files found")]


# ---- the calibration and the text model ------------------------------------------------------------------------


def tiny_model(classes: list[str]) -> dict:
    """A text model over two classes with one term; its check worked out by hand (one term: tf-idf weight 1)."""
    logits = [0.0 + 3.0, 0.5 - 1.0]
    total = sum(math.exp(x) for x in logits)
    return {
        "token_pattern": r"[a-z]+",
        "classes": classes,
        "intercept": [0.0, 0.5],
        "terms": {"truncated": [2.0, 3.0, -1.0]},
        "checks": [{"text": "truncated", "probabilities": [math.exp(x) / total for x in logits]}],
    }


def write_model(directory: Path, model: dict) -> Path:
    path = directory / MODEL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(model), encoding="utf-8")
    return path


def test_the_calibration_and_the_text_model_come_from_the_directory(tmp_path: Path) -> None:
    curve_classes = {c: {**minimal(c), "judged_on_curves": True} for c in ("overfitting", "underfitting")}
    directory = small_kb(tmp_path, **curve_classes)  # the fitted calibration's curve leads name both
    calibration = directory / CALIBRATION_FILE
    calibration.parent.mkdir()
    shutil.copy(default_knowledge_dir() / CALIBRATION_FILE, calibration)
    write_model(directory, tiny_model(["host_oom", "preemption"]))
    kb = load_knowledge(directory)
    assert kb.calibration == load_calibration(calibration) and kb.calibration != Calibration()
    assert kb.text_model is not None and kb.text_model.classes == ("host_oom", "preemption")


def test_a_model_may_name_an_extra_class_even_one_whose_file_is_broken(tmp_path: Path) -> None:
    directory = small_kb(tmp_path, disk_full=minimal("disk_full"))
    write_model(directory, tiny_model(["disk_full", "host_oom"]))
    assert load_knowledge(directory).text_model.classes == ("disk_full", "host_oom")
    dump(directory / "disk_full.yaml", minimal("disk_full", title=""))
    assert problems(directory) == [("disk_full.yaml", "title", "String should have at least 1 character")]


def test_calibration_and_model_problems_follow_the_class_problems(tmp_path: Path) -> None:
    directory = small_kb(tmp_path, host_oom=minimal("host_oom", colour="red"))
    dump(directory / CALIBRATION_FILE, {"diagnosis": [[0.5, 0.4]], "unknown": [], "fitted_on": "x"})
    write_model(directory, tiny_model(["zz_class", "aa_class"]))
    assert problems(directory) == [
        ("host_oom.yaml", "colour", "unknown key"),
        (CALIBRATION_FILE, "unknown", "must be a non-empty list of [raw, calibrated] pairs"),
        (MODEL_FILE, "classes", "not in the knowledge base: aa_class, zz_class"),
    ]
    write_model(directory, {"classes": ["host_oom"]})
    assert problems(directory)[1:] == [
        (CALIBRATION_FILE, "unknown", "must be a non-empty list of [raw, calibrated] pairs"),
        (MODEL_FILE, "classes", "must list at least two class ids"),
    ]


def test_a_lone_model_problem_is_the_first_problem(tmp_path: Path) -> None:
    directory = small_kb(tmp_path)
    write_model(directory, tiny_model(["host_oom", "gpu_melt"]))
    with pytest.raises(KnowledgeBaseError) as caught:
        load_knowledge(directory)
    assert (caught.value.path, caught.value.field, caught.value.problem) == (
        str(directory / MODEL_FILE),
        "classes",
        "not in the knowledge base: gpu_melt",
    )
    assert len(caught.value.problems) == 1


def test_the_generic_curve_is_optional_and_validated_like_the_others(tmp_path: Path) -> None:
    from bot.diagnosis.calibration import Curve

    directory = small_kb(tmp_path)
    curves = {"diagnosis": [[0.5, 0.6]], "unknown": [[0.5, 0.2]], "fitted_on": "x"}
    dump(directory / CALIBRATION_FILE, curves)
    assert load_knowledge(directory).calibration.generic is None  # none: a catch-all uses the diagnosis curve
    dump(directory / CALIBRATION_FILE, {**curves, "generic": [[0.5, 0.1], [0.9, 0.7]]})
    calibration = load_knowledge(directory).calibration
    assert calibration.generic == Curve(((0.5, 0.1), (0.9, 0.7)))
    assert calibration.answer(True) is calibration.generic and calibration.answer(False) is calibration.diagnosis
    dump(directory / CALIBRATION_FILE, {**curves, "generic": [[0.5, 0.7], [0.9, 0.1]]})
    assert problems(directory) == [(CALIBRATION_FILE, "generic", "points must rise in both raw and calibrated values")]
    dump(directory / CALIBRATION_FILE, {**curves, "generic": []})
    assert problems(directory) == [(CALIBRATION_FILE, "generic", "must be a non-empty list of [raw, calibrated] pairs")]
    dump(directory / CALIBRATION_FILE, {**curves, "specific": [[0.5, 0.5]]})
    assert problems(directory) == [
        (
            CALIBRATION_FILE,
            "(top level)",
            "expected the keys diagnosis, unknown, fitted_on and optionally generic and curve_leads",
        )
    ]


def test_curve_leads_must_be_shares_of_classes_judged_on_curves(tmp_path: Path) -> None:
    directory = small_kb(tmp_path)
    tables = {"diagnosis": [[0.5, 0.4]], "unknown": [[0.5, 0.4]], "fitted_on": "x"}
    dump(directory / CALIBRATION_FILE, {**tables, "curve_leads": {"host_oom": 0.07}})
    assert problems(directory) == [(CALIBRATION_FILE, "curve_leads", "not a class judged on curves: host_oom")]
    dump(directory / CALIBRATION_FILE, {**tables, "curve_leads": {"host_oom": 1.5}})
    assert problems(directory) == [(CALIBRATION_FILE, "curve_leads", "must map class ids to shares within [0, 1]")]
    dump(directory / "host_oom.yaml", {**minimal("host_oom"), "judged_on_curves": True})
    dump(directory / CALIBRATION_FILE, {**tables, "curve_leads": {"host_oom": 0.07}})
    assert load_knowledge(directory).calibration.curve_leads == {"host_oom": 0.07}
