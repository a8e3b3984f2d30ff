"""The data tables' row schemas and a validated table's lookups (bot.diagnosis.knowledge_tables), rule by rule."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.diagnosis.knowledge_schema import CommandTemplate
from bot.diagnosis.knowledge_tables import (
    GRANT_LEVELS,
    TABLE_SCHEMAS,
    TABLES_DIR,
    AcceleratorRegions,
    ClientCallPermission,
    GcloudCommandPermission,
    PermissionRole,
    QuotaRow,
    RoleCover,
    Table,
)

IAM = "https://cloud.google.com/iam/docs/roles-permissions/"
DOCS = "https://cloud.google.com/vertex-ai/docs/quotas"


def messages(model: type, **fields: object) -> list[tuple[tuple, str]]:
    """Every problem pydantic reports for a row: (location, message without its 'Value error, ' prefix)."""
    with pytest.raises(ValidationError) as caught:
        model.model_validate(fields)
    return [(tuple(e["loc"]), str(e["msg"]).removeprefix("Value error, ")) for e in caught.value.errors()]


def permission(**changes: object) -> dict:
    row = {
        "permission": "storage.objects.get",
        "role": "roles/storage.objectViewer",
        "grant_on": "bucket",
        "source": IAM + "storage",
    }
    row.update(changes)
    return row


def quota(**changes: object) -> dict:
    row: dict = {
        "service": "aiplatform.googleapis.com",
        "metric": "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus",
        "quota_id": "CustomModelTrainingT4GPUsPerProjectPerRegion",
        "scope": "region",
        "accelerator": "NVIDIA_TESLA_T4",
        "counts": "accelerators",
        "id_evidence": "observed",
        "source": DOCS,
    }
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


# ---- the schemas and where they live ----------------------------------------------------------------------------


def test_the_table_files_their_row_schemas_and_unique_columns() -> None:
    assert TABLES_DIR == "tables"
    assert TABLE_SCHEMAS == {
        "iam_permission_roles": (PermissionRole, ("permission",)),
        "iam_role_covers": (RoleCover, ("role",)),
        "quota_ids": (QuotaRow, ("metric", "quota_id")),
        "accelerator_regions": (AcceleratorRegions, ("accelerator", "aliases")),
        "job_commands": (CommandTemplate, ("title",)),
        "gcloud_command_permissions": (GcloudCommandPermission, ("command",)),
        "client_call_permissions": (ClientCallPermission, ("call",)),
    }
    assert GRANT_LEVELS == (
        "bucket",
        "table",
        "dataset",
        "repository",
        "secret",
        "topic",
        "subscription",
        "key",
        "service_account",
        "run_service",
        "project",
    )


# ---- iam_permission_roles ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("grant_on", GRANT_LEVELS)
def test_a_permission_is_granted_on_any_known_level(grant_on: str) -> None:
    assert PermissionRole.model_validate(permission(grant_on=grant_on)).grant_on == grant_on


def test_a_good_permission_row_keeps_its_values() -> None:
    row = PermissionRole.model_validate(
        permission(permission="iam.serviceAccounts.actAs", role="roles/iam.x2Y", source=IAM + "iam")
    )
    assert (row.permission, row.role, row.grant_on, row.source) == (
        "iam.serviceAccounts.actAs",
        "roles/iam.x2Y",
        "bucket",
        IAM + "iam",
    )


@pytest.mark.parametrize("role", ["roles/owner", "roles/editor", "roles/viewer"])
def test_a_basic_role_is_refused_by_name(role: str) -> None:
    assert messages(PermissionRole, **permission(role=role)) == [
        (("role",), f"{role} is a basic role: name the narrowest predefined role instead")
    ]


@pytest.mark.parametrize(
    "role",
    [
        "storage.objectViewer",
        "roles/Storage.objectViewer",
        "roles/storage",
        "roles/storage.",
        "roles/storage.objectViewer x",
        "xroles/storage.objectViewer",
        "roles/storage.0bjectViewer",
        "roles/storage.object-viewer",
        "roles/storage.objectViewer.2",
        "roles/storage.objectViewer.vx",
    ],
)
def test_a_role_that_is_not_roles_service_name_is_refused(role: str) -> None:
    assert messages(PermissionRole, **permission(role=role)) == [
        (("role",), f"{role!r} is not a predefined role (roles/<service>[.<collection>].<name>[.vN])")
    ]


def test_a_role_that_names_its_collection_is_a_predefined_role() -> None:
    row = PermissionRole(**permission(role="roles/cloudbuild.builds.editor", source=IAM + "cloudbuild"))
    assert row.role == "roles/cloudbuild.builds.editor"


def test_a_role_with_its_version_suffix_is_a_predefined_role() -> None:
    assert PermissionRole(**permission(role="roles/storage.objectViewer.v1")).role == "roles/storage.objectViewer.v1"


def test_the_source_must_be_the_iam_reference_of_the_roles_service() -> None:
    wrong = IAM + "iam"
    assert messages(PermissionRole, **permission(source=wrong)) == [
        ((), f"source: cite {IAM}storage (the IAM reference of the role's service), not {wrong!r}")
    ]
    assert messages(PermissionRole, **permission(source=IAM + "storage.objectViewer")) == [
        ((), f"source: cite {IAM}storage (the IAM reference of the role's service), not '{IAM}storage.objectViewer'")
    ]


@pytest.mark.parametrize(
    "name", ["Storage.objects.get", "storage.objects", "storage.objects.get.x", "storage.objects.get ", "9s.o.g"]
)
def test_a_permission_is_service_resource_verb(name: str) -> None:
    [(loc, _)] = messages(PermissionRole, **permission(permission=name))
    assert loc == ("permission",)


def test_a_grant_level_outside_the_list_is_refused() -> None:
    [(loc, message)] = messages(PermissionRole, **permission(grant_on="folder"))
    assert loc == ("grant_on",) and "'bucket'" in message and "'project'" in message


# ---- quota_ids -------------------------------------------------------------------------------------------------


def test_a_good_quota_row_keeps_its_values_and_counts_other_by_default() -> None:
    row = QuotaRow.model_validate(quota(accelerator=None, counts=None))
    assert row.counts == "other" and row.accelerator is None
    assert row.quota_id == "CustomModelTrainingT4GPUsPerProjectPerRegion" and row.id_evidence == "observed"
    metric_only = QuotaRow.model_validate(quota(quota_id=None, id_evidence=None))
    assert metric_only.quota_id is None and metric_only.id_evidence is None
    id_only = QuotaRow.model_validate(quota(metric=None))
    assert id_only.metric is None


def test_a_quota_row_reports_every_incoherence_at_once() -> None:
    row = quota(metric=None, quota_id=None, accelerator=None)  # id_evidence stays: it says how an absent id is known
    assert messages(QuotaRow, **row) == [
        (
            (),
            "a row names a metric, a quota_id, or both; "
            "id_evidence: say how the quota_id is known (observed, documented, pattern), and only then; "
            "counts: accelerators needs the accelerator the quota counts",
        )
    ]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"metric": None, "quota_id": None, "id_evidence": None}, "a row names a metric, a quota_id, or both"),
        (
            {"metric": "compute.googleapis.com/nvidia_t4_gpus"},
            "metric: 'compute.googleapis.com/nvidia_t4_gpus' is not a metric of aiplatform.googleapis.com",
        ),
        (
            {"metric": "aiplatform.googleapis.comx/gpus"},
            None,  # not even a metric name: the field pattern refuses it
        ),
        (
            {"id_evidence": None},
            "id_evidence: say how the quota_id is known (observed, documented, pattern), and only then",
        ),
        (
            {"quota_id": None},
            "id_evidence: say how the quota_id is known (observed, documented, pattern), and only then",
        ),
        ({"accelerator": None}, "counts: accelerators needs the accelerator the quota counts"),
    ],
)
def test_each_quota_rule_alone(changes: dict, message: str | None) -> None:
    problems = messages(QuotaRow, **quota(**changes))
    if message is None:
        assert [loc for loc, _ in problems] == [("metric",)]
    else:
        assert problems == [((), message)]


def test_a_metric_of_the_service_must_follow_its_slash() -> None:
    assert messages(QuotaRow, **quota(service="aiplatform.googleapis.co", metric=None)) == [
        (("service",), "String should match pattern '^[a-z][a-z0-9-]*\\.googleapis\\.com$'")
    ]
    prefix_only = quota(service="ai.googleapis.com", metric="aiplatform.googleapis.com/x")
    assert messages(QuotaRow, **prefix_only) == [
        ((), "metric: 'aiplatform.googleapis.com/x' is not a metric of ai.googleapis.com")
    ]


@pytest.mark.parametrize("counts", ["all_accelerators", "vcpus", "other"])
def test_only_per_accelerator_counts_need_the_accelerator(counts: str) -> None:
    assert QuotaRow.model_validate(quota(accelerator=None, counts=counts)).counts == counts


# ---- accelerator_regions --------------------------------------------------------------------------------------


def accelerator(**changes: object) -> dict:
    row: dict = {
        "accelerator": "NVIDIA_TESLA_T4",
        "aliases": ["nvidia-tesla-t4"],
        "regions": ["us-central1", "us-east4"],
        "source": "https://cloud.google.com/vertex-ai/docs/general/locations",
    }
    row.update(changes)
    return row


def test_a_good_accelerator_row_keeps_its_values() -> None:
    row = AcceleratorRegions.model_validate(accelerator(aliases=["a2-highgpu", "n1"]))
    assert (row.aliases, row.regions, row.quota_metric) == (["a2-highgpu", "n1"], ["us-central1", "us-east4"], None)
    assert AcceleratorRegions.model_validate({k: v for k, v in accelerator().items() if k != "aliases"}).aliases == []


@pytest.mark.parametrize("alias", ["Nvidia-t4", "nvidia-", "-t4", "1nvidia", "t", "nvidia_t4", "nvidia t4"])
def test_aliases_are_compute_engine_names(alias: str) -> None:
    assert messages(AcceleratorRegions, **accelerator(aliases=["nvidia-tesla-t4", alias])) == [
        (("aliases",), f"aliases are Compute Engine names (nvidia-tesla-t4, a2-highgpu), not [{alias!r}]")
    ]


@pytest.mark.parametrize("region", ["us-central", "US-central1", "uscentral1", "us-central1 ", "us-central1a", "x1"])
def test_regions_are_region_names(region: str) -> None:
    assert messages(AcceleratorRegions, **accelerator(regions=["us-east1", region])) == [
        (("regions",), f"not region names: [{region!r}]")
    ]


def test_a_region_listed_twice_or_no_region_is_refused() -> None:
    assert messages(AcceleratorRegions, **accelerator(regions=["us-east1", "us-west1", "us-east1"])) == [
        (("regions",), "a region is listed twice")
    ]
    [(loc, _)] = messages(AcceleratorRegions, **accelerator(regions=[]))
    assert loc == ("regions",)


# ---- a table's lookups -----------------------------------------------------------------------------------------


def regions_table() -> Table:
    rows = [
        AcceleratorRegions.model_validate(accelerator(quota_metric="aiplatform.googleapis.com/t4")),
        AcceleratorRegions.model_validate(
            accelerator(accelerator="NVIDIA_L4", aliases=["nvidia-l4", "g2-standard"], regions=["us-west1"])
        ),
        AcceleratorRegions.model_validate(
            accelerator(
                accelerator="NVIDIA_TESLA_A100",
                aliases=[],
                regions=["us-east1"],
                quota_metric="aiplatform.googleapis.com/a100",
            )
        ),
        AcceleratorRegions.model_validate(
            accelerator(accelerator="NVIDIA_L4", aliases=["nvidia-l4-vws"], regions=["europe-west4"])
        ),  # a second row with the same key: the first wins
    ]
    return Table("accelerator_regions", "Regions", rows)


def test_a_table_knows_its_name_description_rows_unique_and_columns() -> None:
    table = regions_table()
    assert (table.name, table.description, len(table.rows)) == ("accelerator_regions", "Regions", 4)
    assert table.unique == ("accelerator", "aliases")
    assert table.columns == ("accelerator", "aliases", "regions", "quota_metric", "source")
    assert Table("quota_ids", "q", []).columns == (
        "service",
        "metric",
        "quota_id",
        "scope",
        "accelerator",
        "counts",
        "id_evidence",
        "source",
    )
    assert Table("quota_ids", "q", []).unique == ("metric", "quota_id")


def test_column_map_joins_list_values_expands_list_keys_and_keeps_the_first_row() -> None:
    table = regions_table()
    assert table.column_map("accelerator", "regions") == {
        "NVIDIA_TESLA_T4": "us-central1, us-east4",
        "NVIDIA_L4": "us-west1",
        "NVIDIA_TESLA_A100": "us-east1",
    }
    assert table.column_map("aliases", "accelerator") == {
        "nvidia-tesla-t4": "NVIDIA_TESLA_T4",
        "nvidia-l4": "NVIDIA_L4",
        "g2-standard": "NVIDIA_L4",
        "nvidia-l4-vws": "NVIDIA_L4",
    }
    # rows whose value is None (no quota metric) or an empty list (no aliases) give no entry
    assert table.column_map("accelerator", "quota_metric") == {
        "NVIDIA_TESLA_T4": "aiplatform.googleapis.com/t4",
        "NVIDIA_TESLA_A100": "aiplatform.googleapis.com/a100",
    }
    assert table.column_map("accelerator", "aliases") == {
        "NVIDIA_TESLA_T4": "nvidia-tesla-t4",
        "NVIDIA_L4": "nvidia-l4, g2-standard",
    }
    # a None key gives no entry either
    assert table.column_map("quota_metric", "accelerator") == {
        "aiplatform.googleapis.com/t4": "NVIDIA_TESLA_T4",
        "aiplatform.googleapis.com/a100": "NVIDIA_TESLA_A100",
    }


def test_column_map_turns_values_into_text() -> None:
    row = QuotaRow.model_validate(quota())
    table = Table("quota_ids", "q", [row])
    assert table.column_map("quota_id", "scope") == {"CustomModelTrainingT4GPUsPerProjectPerRegion": "region"}


def test_find_returns_the_first_row_whose_cell_is_or_contains_the_value() -> None:
    table = regions_table()
    assert table.find("accelerator", "NVIDIA_L4") is table.rows[1]
    assert table.find("aliases", "g2-standard") is table.rows[1]
    assert table.find("aliases", "nvidia-l4-vws") is table.rows[3]
    assert table.find("regions", "europe-west4") is table.rows[3]
    assert table.find("quota_metric", "aiplatform.googleapis.com/a100") is table.rows[2]
    assert table.find("accelerator", "NVIDIA_H100") is None
    assert table.find("aliases", "nvidia") is None  # a list is searched for the whole item, not a substring
    assert table.find("accelerator", "NVIDIA") is None
    assert table.find("quota_metric", None) is None  # None never matches, not even a None cell


# ---- every field pattern is enforced ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("quota_id", "-T4PerRegion"),
        ("quota_id", "T4 per region"),
        ("accelerator", "TESLA_T4"),
        ("accelerator", "NVIDIA_tesla_t4"),
        ("source", "http://cloud.google.com/vertex-ai/docs/quotas"),
        ("scope", "zone"),
        ("counts", "gpus"),
        ("id_evidence", "guessed"),
    ],
)
def test_each_quota_field_has_its_shape(field: str, value: str) -> None:
    assert [loc for loc, _ in messages(QuotaRow, **quota(**{field: value}))] == [(field,)]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("accelerator", "TESLA_T4"),
        ("accelerator", "nvidia_tesla_t4"),
        ("quota_metric", "compute.googleapis.com/gpus"),
        ("quota_metric", "aiplatform.googleapis.com/T4"),
        ("source", "ftp://example.com"),
    ],
)
def test_each_accelerator_field_has_its_shape(field: str, value: str) -> None:
    assert [loc for loc, _ in messages(AcceleratorRegions, **accelerator(**{field: value}))] == [(field,)]
    good = AcceleratorRegions.model_validate(accelerator(quota_metric="aiplatform.googleapis.com/t4_gpus"))
    assert good.quota_metric == "aiplatform.googleapis.com/t4_gpus"


@pytest.mark.parametrize("missing", ["permission", "role", "grant_on", "source"])
def test_every_permission_field_is_required(missing: str) -> None:
    row = permission()
    del row[missing]
    assert (missing,) in [loc for loc, _ in messages(PermissionRole, **row)]


@pytest.mark.parametrize("missing", ["service", "scope", "source"])
def test_the_required_quota_fields(missing: str) -> None:
    assert messages(QuotaRow, **quota(**{missing: None})) == [((missing,), "Field required")]


@pytest.mark.parametrize("missing", ["accelerator", "regions", "source"])
def test_the_required_accelerator_fields(missing: str) -> None:
    row = accelerator()
    del row[missing]
    assert messages(AcceleratorRegions, **row) == [((missing,), "Field required")]


def test_a_client_call_row_names_a_dotted_call_a_permission_and_an_https_source() -> None:
    row = {"call": "storage.blob.download_to_filename", "permission": "storage.objects.get", "source": IAM}
    assert ClientCallPermission(**row).permission == "storage.objects.get"
    for bad in ({"call": "download_to_filename"}, {"call": "Storage.Blob.download"}, {"call": "storage/blob.download"}):
        assert [loc for loc, _ in messages(ClientCallPermission, **{**row, **bad})] == [("call",)]
    bad_permission = messages(ClientCallPermission, **{**row, "permission": "storage.get"})
    assert [loc for loc, _ in bad_permission] == [("permission",)]
    assert [loc for loc, _ in messages(ClientCallPermission, **{**row, "source": "http://x"})] == [("source",)]


# ---- iam_role_covers ---------------------------------------------------------------------------------------------


def cover(**changes: object) -> dict:
    row = {
        "role": "roles/storage.objectUser",
        "covers": ["roles/storage.objectViewer", "roles/storage.objectCreator"],
        "source": IAM + "storage",
    }
    row.update(changes)
    return row


def test_a_good_cover_row_keeps_its_values() -> None:
    row = RoleCover.model_validate(cover())
    assert row.role == "roles/storage.objectUser"
    assert row.covers == ["roles/storage.objectViewer", "roles/storage.objectCreator"]


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (
            {"role": "roles/editor"},
            ("role",),
            "roles/editor is a basic role: name the narrowest predefined role instead",
        ),
        (
            {"covers": ["roles/storage.objectViewer", "roles/viewer"]},
            ("covers",),
            "roles/viewer is a basic role: name the narrowest predefined role instead",
        ),
        ({"covers": []}, ("covers",), "List should have at least 1 item after validation, not 0"),
        (
            {"covers": ["roles/bigquery.dataViewer"]},
            (),
            "covers: roles/bigquery.dataViewer is not a narrower role of roles/storage.objectUser's own service",
        ),
        (
            {"covers": ["roles/storage.objectUser"]},
            (),
            "covers: roles/storage.objectUser is not a narrower role of roles/storage.objectUser's own service",
        ),
        (
            {"source": IAM + "bigquery"},
            (),
            f"source: cite {IAM}storage (the IAM reference of the role's service), not '{IAM}bigquery'",
        ),
    ],
)
def test_each_cover_rule_alone(changes: dict, field: tuple, message: str) -> None:
    assert messages(RoleCover, **cover(**changes)) == [(field, message)]
