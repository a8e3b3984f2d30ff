"""The data tables under knowledge/tables/: validated strictly at load, each problem named with its file and row."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.diagnosis.knowledge import default_knowledge_dir, load_knowledge, load_table
from bot.diagnosis.knowledge_schema import CommandTemplate, Derivation
from bot.diagnosis.knowledge_tables import TABLE_SCHEMAS
from bot.errors import KnowledgeBaseError

IAM_REFERENCE = re.compile(r"^https://cloud\.google\.com/iam/docs/roles-permissions/([a-z]+)$")


@pytest.fixture(scope="module")
def kb():  # noqa: ANN201
    return load_knowledge()


def copy_kb(tmp_path: Path) -> Path:
    target = tmp_path / "knowledge"
    shutil.copytree(default_knowledge_dir(), target)
    return target


def edit_table(directory: Path, name: str, change) -> Path:
    path = directory / "tables" / f"{name}.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def problems_of(directory: Path) -> list[tuple[str, str, str]]:
    with pytest.raises(KnowledgeBaseError) as caught:
        load_knowledge(directory)
    return [(Path(path).name, field, problem) for path, field, problem in caught.value.problems]


# ---- the bundled tables -----------------------------------------------------------------------------------------


def test_every_table_loads(kb) -> None:
    assert set(kb.tables) == set(TABLE_SCHEMAS)


def test_at_least_sixty_permissions_each_with_its_narrowest_predefined_role_and_reference(kb) -> None:
    rows = kb.tables["iam_permission_roles"].rows
    assert len(rows) >= 60
    for row in rows:
        service = IAM_REFERENCE.match(row.source)
        assert service and row.role.startswith(f"roles/{service.group(1)}."), row
        assert row.role not in ("roles/owner", "roles/editor", "roles/viewer")
    by_permission = {row.permission: row for row in rows}
    expected = {  # the classic cases, and where each is granted
        "storage.objects.get": ("roles/storage.objectViewer", "bucket"),
        "storage.objects.create": ("roles/storage.objectCreator", "bucket"),
        "storage.buckets.get": ("roles/storage.legacyBucketReader", "bucket"),
        "bigquery.tables.get": ("roles/bigquery.metadataViewer", "table"),
        "bigquery.tables.getData": ("roles/bigquery.dataViewer", "table"),
        "bigquery.jobs.create": ("roles/bigquery.jobUser", "project"),
        "aiplatform.tensorboards.get": ("roles/aiplatform.viewer", "project"),
        "artifactregistry.repositories.downloadArtifacts": ("roles/artifactregistry.reader", "repository"),
        "secretmanager.versions.access": ("roles/secretmanager.secretAccessor", "secret"),
        "pubsub.topics.publish": ("roles/pubsub.publisher", "topic"),
        "cloudkms.cryptoKeyVersions.useToDecrypt": ("roles/cloudkms.cryptoKeyDecrypter", "key"),
        "iam.serviceAccounts.actAs": ("roles/iam.serviceAccountUser", "service_account"),
    }
    for permission, (role, grant_on) in expected.items():
        assert (by_permission[permission].role, by_permission[permission].grant_on) == (role, grant_on)


def test_quota_ids_cover_the_training_accelerators_and_say_how_each_id_is_known(kb) -> None:
    quotas = kb.tables["quota_ids"]
    row = quotas.find("metric", "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus")
    assert (row.quota_id, row.scope, row.accelerator) == (
        "CustomModelTrainingA100GPUsPerProjectPerRegion",
        "region",
        "NVIDIA_TESLA_A100",
    )
    assert quotas.find("metric", "compute.googleapis.com/gpus_all_regions").scope == "global"
    for row in quotas.rows:
        assert (row.quota_id is None) == (row.id_evidence is None), row
    accelerators = kb.tables["accelerator_regions"]
    for row in accelerators.rows:  # every accelerator's training quota is in the quota table
        assert row.quota_metric is None or quotas.find("metric", row.quota_metric), row.accelerator


def test_a_table_derivation_is_filled_from_its_table_with_the_map_as_fallback(kb) -> None:
    role = kb["permission_denied"].derive["role"]
    assert role.lookup("storage.objects.get") == "roles/storage.objectViewer"
    assert role.lookup("aiplatform.featurestores.get") == "roles/aiplatform.user"  # not in the table: the map
    assert role.lookup("compute.images.create") is None  # in neither
    quota = kb["quota_exhausted"].derive
    assert quota["quota_metric"].lookup("CustomModelTrainingT4GPUsPerProjectPerRegion") == (
        "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
    )


def test_the_job_commands_are_appended_to_every_class_and_to_variants_with_commands(kb) -> None:
    common = [row.template for row in kb.tables["job_commands"].rows]
    for failure_class in kb:
        templates = [c.template for c in failure_class.commands]
        assert templates[-len(common) :] == common, failure_class.id
        # appended once: no command twice (one command line may carry two titles chosen by exclusive conditions)
        pairs = [(c.title, c.template) for c in failure_class.commands]
        assert len(pairs) == len(set(pairs))
        for variant in failure_class.variants.values():
            if variant.commands is not None:
                assert [c.template for c in variant.commands][-len(common) :] == common


# ---- strict validation: every problem names the file and the row -----------------------------------------------


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        (lambda d: d["rows"][0].update(role="roles/editor"), "rows[0](storage.objects.get).role", "basic role"),
        (lambda d: d["rows"][0].update(role="storage.objectViewer"), "rows[0](storage.objects.get).role", "roles/"),
        (
            lambda d: d["rows"][0].update(source="https://cloud.google.com/storage/docs/access-control/iam-roles"),
            "rows[0](storage.objects.get)",
            "roles-permissions/storage",
        ),
        (lambda d: d["rows"][0].update(grant_on="folder"), "rows[0](storage.objects.get).grant_on", "bucket"),
        (lambda d: d["rows"][0].update(colour="red"), "rows[0](storage.objects.get).colour", "unknown key"),
        (
            lambda d: d["rows"][1].update(permission="storage.objects.get"),
            "rows[1](storage.objects.get).permission",
            "also in rows[0]",
        ),  # fmt: skip
        (lambda d: d["rows"][0].pop("role"), "rows[0](storage.objects.get).role", "required field is missing"),
        (lambda d: d.update(owner="me"), "owner", "unknown key"),
        (lambda d: d.update(rows=[]), "rows", "list of rows"),
    ],
)
def test_a_bad_permission_row_is_named_by_file_row_and_field(tmp_path: Path, change, field: str, problem: str) -> None:
    directory = copy_kb(tmp_path)
    path = edit_table(directory, "iam_permission_roles", change)
    with pytest.raises(KnowledgeBaseError) as caught:
        load_knowledge(directory)
    assert caught.value.path == str(path)
    assert caught.value.field == field
    assert problem in caught.value.problem


def test_bad_quota_and_region_rows_are_named(tmp_path: Path) -> None:
    directory = copy_kb(tmp_path)
    edit_table(directory, "quota_ids", lambda d: d["rows"][1].pop("id_evidence"))
    edit_table(directory, "accelerator_regions", lambda d: d["rows"][0]["regions"].append("Mars-1"))
    problems = problems_of(directory)
    assert (
        "quota_ids.yaml",
        "rows[1](aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus)",
        "id_evidence: say how the quota_id is known (observed, documented, pattern), and only then",
    ) in problems
    assert any(
        p[:2] == ("accelerator_regions.yaml", "rows[0](NVIDIA_TESLA_T4).regions") and "Mars-1" in p[2] for p in problems
    )


def test_a_derivation_naming_a_missing_table_or_column_is_named(tmp_path: Path) -> None:
    directory = copy_kb(tmp_path)
    path = directory / "permission_denied.yaml"
    data = yaml.safe_load(path.read_text())
    data["derive"]["role"]["table"] = "iam_roles"
    data["derive"]["grant_on"]["column"] = "where"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    problems = problems_of(directory)
    assert ("permission_denied.yaml", "derive.role.table", "no table 'iam_roles' in tables/") in problems
    assert (
        "permission_denied.yaml",
        "derive.grant_on.column",
        "table 'iam_permission_roles' has no column 'where'",
    ) in problems


def test_an_unknown_table_file_is_rejected(tmp_path: Path) -> None:
    directory = copy_kb(tmp_path)
    (directory / "tables" / "colours.yaml").write_text("description: x\nrows: [{a: 1}]\n")
    problems = problems_of(directory)
    assert problems[0][:2] == ("colours.yaml", "(file)") and "unknown table 'colours'" in problems[0][2]


def test_kb_check_lists_table_problems_with_the_rest(tmp_path: Path) -> None:
    directory = copy_kb(tmp_path)
    path = edit_table(directory, "iam_permission_roles", lambda d: d["rows"][2].update(role="roles/owner"))
    done = subprocess.run(
        [sys.executable, "-m", "bot", "kb", "check", "--knowledge", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert f"{path}: rows[2](storage.managedFolders.get).role:" in done.stderr


def test_load_table_reads_one_file() -> None:
    table = load_table(default_knowledge_dir() / "tables" / "accelerator_regions.yaml")
    assert table.find("aliases", "a2-highgpu").accelerator == "NVIDIA_TESLA_A100"
    assert table.column_map("accelerator", "regions")["NVIDIA_TESLA_A100"] == "us-central1, us-east1"


# ---- the schema additions ---------------------------------------------------------------------------------------


def test_a_derivation_needs_a_map_or_a_table_and_a_table_needs_a_column() -> None:
    with pytest.raises(ValueError, match="a map, a table, or both"):
        Derivation(source="permission")
    with pytest.raises(ValueError, match="names both its table and the column"):
        Derivation(source="permission", table="iam_permission_roles")
    with pytest.raises(ValueError, match="'key' only applies to a table"):
        Derivation(source="permission", map={"a": "b"}, key="permission")
    assert Derivation(source="permission", table="iam_permission_roles", column="role").map == {}


def test_command_conditions_and_title_placeholders_are_checked() -> None:
    template = CommandTemplate(
        title="Logs of {task_name}",
        template="gcloud x {job_id}",
        requires=["task_name"],
        when={"grant_on": "bucket"},
        unless={"platform": ["aws", "azure"]},
    )
    assert template.when == {"grant_on": ["bucket"]}
    with pytest.raises(ValueError, match=r"title: \{task_name\} must be in requires"):
        CommandTemplate(title="Logs of {task_name}", template="gcloud x")
    with pytest.raises(ValueError, match="lowercase identifiers"):
        CommandTemplate(title="t", template="gcloud x", absent=["Quota-Id"])
