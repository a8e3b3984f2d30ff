"""The knowledge base schema, rule by rule: what a class file may say, and how a mistake is reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from bot.diagnosis.knowledge import CLASS_IDS, default_knowledge_dir, load_class_file, load_knowledge
from bot.diagnosis.knowledge_schema import CommandTemplate, Derivation, FailureClass, Signal, compile_pattern
from bot.errors import KnowledgeBaseError


def minimal(**changes: object) -> dict:
    data: dict = {
        "id": "disk_full",
        "title": "The boot disk filled up",
        "symptom": "Writes failed with ENOSPC.",
        "first_checks": ["Check disk usage."],
        "remediation": ["Raise bootDiskSizeGb."],
        "avoid": ["Do not retry unchanged."],
        "signals": [{"name": "enospc", "pattern": "No space left on device", "weight": 0.9}],
    }
    data.update(changes)
    return data


def write(directory: Path, data: dict, name: str | None = None) -> Path:
    path = directory / f"{name or data['id']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def rejected(tmp_path: Path, data: dict) -> KnowledgeBaseError:
    path = write(tmp_path, data)
    with pytest.raises(KnowledgeBaseError) as caught:
        load_class_file(path)
    assert caught.value.path == str(path)
    return caught.value


# ------------------------------------------------------------------------------------------- signals


def test_a_signal_naming_a_variant_that_does_not_exist_is_rejected(tmp_path: Path) -> None:
    signals = [{"name": "stockout", "pattern": "does not have enough resources", "weight": 0.9, "variant": "stock"}]
    error = rejected(tmp_path, minimal(signals=signals, variants={"stockout": {"title": "Out of stock"}}))
    assert "no variant 'stock' defined" in error.problem
    assert "signals.stockout.variant" in error.problem
    fixed = minimal(signals=[{**signals[0], "variant": "stockout"}], variants={"stockout": {"title": "Out of stock"}})
    assert load_class_file(write(tmp_path, fixed)).signals[0].variant == "stockout"


def test_duplicate_signal_names_are_rejected(tmp_path: Path) -> None:
    signals = [
        {"name": "enospc", "pattern": "No space left", "weight": 0.9},
        {"name": "other", "pattern": "disk quota exceeded", "weight": 0.5},
        {"name": "enospc", "pattern": "ENOSPC", "weight": 0.8},
    ]
    error = rejected(tmp_path, minimal(signals=signals))
    assert error.field == "(top level)"
    assert "duplicate names ['enospc']" in error.problem
    signals[2]["name"] = "enospc_errno"
    assert [s.name for s in load_class_file(write(tmp_path, minimal(signals=signals))).signals] == [
        "enospc",
        "other",
        "enospc_errno",
    ]


@pytest.mark.parametrize("weight", [-0.01, -1, 1.01, 2])
def test_weights_outside_zero_to_one_are_rejected(tmp_path: Path, weight: float) -> None:
    error = rejected(tmp_path, minimal(signals=[{"name": "enospc", "pattern": "x", "weight": weight}]))
    assert error.field == "signals[0](enospc).weight"


@pytest.mark.parametrize("weight", [0, 0.0, 0.5, 1, 1.0])
def test_weights_from_zero_to_one_are_accepted(tmp_path: Path, weight: float) -> None:
    data = minimal(signals=[{"name": "enospc", "pattern": "x", "weight": weight}])
    assert load_class_file(write(tmp_path, data)).signals[0].weight == weight


def test_a_signal_needs_a_pattern_or_facts(tmp_path: Path) -> None:
    error = rejected(tmp_path, minimal(signals=[{"name": "nothing", "weight": 0.5}]))
    assert "needs a pattern, facts, or both" in error.problem
    facts_only = minimal(signals=[{"name": "spot", "facts": ["spot"], "weight": 0.5}])
    assert load_class_file(write(tmp_path, facts_only)).signals[0].pattern is None
    unless_alone = minimal(signals=[{"name": "spot", "facts": ["spot"], "unless": "x", "weight": 0.5}])
    assert "'unless' only applies to a pattern" in rejected(tmp_path, unless_alone).problem
    quoted_alone = minimal(signals=[{"name": "spot", "facts": ["spot"], "in_quoted_source": False, "weight": 0.5}])
    assert "'in_quoted_source' only applies to a pattern" in rejected(tmp_path, quoted_alone).problem
    at_end_alone = minimal(signals=[{"name": "spot", "facts": ["spot"], "at_end": True, "weight": 0.5}])
    assert "'at_end' only applies to a pattern" in rejected(tmp_path, at_end_alone).problem
    ends_alone = minimal(signals=[{"name": "spot", "facts": ["spot"], "ends_training": True, "weight": 0.5}])
    assert "'ends_training' only applies to a pattern" in rejected(tmp_path, ends_alone).problem


def test_signal_names_and_counts_are_checked() -> None:
    with pytest.raises(ValueError):
        Signal(name="Bad-Name", pattern="x", weight=0.5)
    with pytest.raises(ValueError):
        Signal(name="x", pattern="x", weight=0.5, min_count=0)
    assert Signal(name="x", pattern="x", weight=0.5).min_count == 1
    with pytest.raises(ValueError, match="unknown fact"):
        Signal(name="x", facts=["moon_phase"], weight=0.5)


def test_bad_regexes_are_rejected_with_the_reason() -> None:
    with pytest.raises(ValueError, match="invalid regex"):
        Signal(name="x", pattern="a(b", weight=0.5)
    with pytest.raises(ValueError, match="not RE2 syntax"):
        Signal(name="x", pattern="(?<=a)b", weight=0.5)
    with pytest.raises(ValueError, match="not RE2 syntax"):
        Signal(name="x", pattern=r"(a)\1", weight=0.5)
    with pytest.raises(ValueError, match="invalid regex"):
        Signal(name="x", pattern="ok", unless="[", weight=0.5)


def test_patterns_are_case_insensitive_unless_asked_and_multiline() -> None:
    signal = Signal(name="x", pattern="^cuda out of memory", weight=0.5)
    assert signal.compiled.search("first line\nCUDA Out Of Memory")
    exact = Signal(name="x", pattern="^CUDA", case_sensitive=True, unless="^cuda ok", weight=0.5)
    assert exact.compiled.search("x\nCUDA error")
    assert not exact.compiled.search("cuda error")
    assert exact.compiled_unless.search("cuda ok") and not exact.compiled_unless.search("CUDA OK")
    assert compile_pattern("abc").search("xABCx")
    assert not compile_pattern("abc", case_sensitive=True).search("ABC")


def test_named_groups_become_detail_names() -> None:
    signal = Signal(name="x", pattern=r"bucket (?P<bucket>\S+) in (?P<region>[a-z0-9-]+)", weight=0.5)
    assert signal.detail_names == ("bucket", "region")
    assert Signal(name="x", pattern="plain", weight=0.5).detail_names == ()
    assert Signal(name="x", facts=["spot"], weight=0.5).detail_names == ()
    assert Signal(name="x", facts=["spot"], weight=0.5).compiled is None


# ------------------------------------------------------------------------------------------- commands


@pytest.mark.parametrize("template", ["gcloud ai custom-jobs describe {job_id}", "bq show x", "gsutil ls gs://b"])
def test_commands_run_gcloud_bq_or_gsutil(template: str) -> None:
    assert CommandTemplate(title="t", template=template).template == template


@pytest.mark.parametrize("template", ["rm -rf /", "gcloudx", "sh -c 'gcloud x'", " gcloud x", "kubectl get pods"])
def test_other_commands_are_rejected(template: str) -> None:
    with pytest.raises(ValueError, match="starts with gcloud, bq or gsutil"):
        CommandTemplate(title="t", template=template)


def test_command_placeholders_are_listed_in_order() -> None:
    template = CommandTemplate(title="t", template="gcloud x {project} --region={region} {Upper} {job_id}")
    assert template.placeholders == ("project", "region", "job_id")
    with pytest.raises(ValueError):
        CommandTemplate(title="", template="gcloud x")


# ------------------------------------------------------------------------------------------- derive


def test_derivations_prefer_exact_keys_then_patterns_then_the_default() -> None:
    derivation = Derivation(
        source="permission",
        map={
            "storage.objects.*": "roles/storage.objectViewer",
            "storage.objects.create": "roles/storage.objectCreator",
        },
        default="roles/viewer",
    )
    assert derivation.lookup("storage.objects.create") == "roles/storage.objectCreator"
    assert derivation.lookup("storage.objects.get") == "roles/storage.objectViewer"
    assert derivation.lookup("bigquery.jobs.create") == "roles/viewer"
    assert derivation.lookup("STORAGE.OBJECTS.GET") == "roles/viewer"  # patterns are case-sensitive
    assert Derivation(source="permission", map={"a": "b"}).lookup("c") is None
    with pytest.raises(ValueError):
        Derivation(source="permission", map={})


# ------------------------------------------------------------------------------------------- classes


def test_a_class_other_than_unknown_needs_signals_and_traps(tmp_path: Path) -> None:
    assert "at least one signal" in rejected(tmp_path, minimal(signals=[])).problem
    assert "say what not to do" in rejected(tmp_path, minimal(avoid=[])).problem
    unknown = minimal(id="unknown", signals=[], avoid=[])
    assert load_class_file(write(tmp_path, unknown)).id == "unknown"


def test_titles_are_one_short_line(tmp_path: Path) -> None:
    assert rejected(tmp_path, minimal(title="x" * 121)).field == "title"
    assert load_class_file(write(tmp_path, minimal(title="x" * 120))).title == "x" * 120
    assert rejected(tmp_path, minimal(title="")).field == "title"


def test_errors_name_the_first_problem_and_count_the_rest(tmp_path: Path) -> None:
    error = rejected(tmp_path, minimal(colour="red", size="xl"))
    assert error.problem == "unknown key (and 1 more problem(s))"
    single = rejected(tmp_path, minimal(colour="red"))
    assert (single.field, single.problem) == ("colour", "unknown key")
    data = minimal()
    del data["symptom"]
    missing = rejected(tmp_path, data)
    assert (missing.field, missing.problem) == ("symptom", "required field is missing")


def test_field_paths_name_list_items_by_their_name_or_title(tmp_path: Path) -> None:
    commands = [{"title": "Describe", "template": "gcloud x"}, {"title": "Bad", "template": "rm x"}]
    assert rejected(tmp_path, minimal(commands=commands)).field == "commands[1](Bad).template"
    nameless = minimal(commands=[{"template": "gcloud x"}])
    assert rejected(tmp_path, nameless).field == "commands[0].title"
    steps = minimal(remediation=["fine", 42])
    assert rejected(tmp_path, steps).field == "remediation[1]"
    requires = minimal(commands=[{"title": "Grant", "template": "gcloud x", "requires": ["bucket", 5]}])
    assert rejected(tmp_path, requires).field == "commands[0](Grant).requires[1]"
    in_variant = minimal(variants={"spot": {"commands": [{"title": "Bad", "template": "rm -rf /"}]}})
    assert rejected(tmp_path, in_variant).field == "variants.spot.commands[0](Bad).template"
    number_key = minimal(variants={1: {"title": "x"}})  # a mapping key that is a number, not a list index
    assert rejected(tmp_path, number_key).field == "variants.1.[key]"


def test_files_that_are_not_a_mapping_or_not_readable_are_rejected(tmp_path: Path) -> None:
    listing = tmp_path / "listing.yaml"
    listing.write_text("- a\n- b\n")
    with pytest.raises(KnowledgeBaseError) as caught:
        load_class_file(listing)
    assert (caught.value.path, caught.value.field, caught.value.problem) == (
        str(listing),
        "(top level)",
        "must be a mapping",
    )
    with pytest.raises(KnowledgeBaseError) as caught:
        load_class_file(tmp_path / "absent.yaml")
    assert caught.value.path == str(tmp_path / "absent.yaml")
    assert caught.value.field == "(file)" and caught.value.problem == "cannot read: No such file or directory"


def test_the_id_must_be_the_file_name(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(), name="full_disk")
    with pytest.raises(KnowledgeBaseError) as caught:
        load_class_file(path)
    assert (caught.value.path, caught.value.field) == (str(path), "id")
    assert "'disk_full' must equal the file name 'full_disk'" in caught.value.problem


# ------------------------------------------------------------------------------------------- the base


def copy_kb(tmp_path: Path) -> Path:
    target = tmp_path / "knowledge"
    shutil.copytree(default_knowledge_dir(), target)
    return target


def test_the_bundled_directory_is_the_repositorys_knowledge_folder() -> None:
    directory = default_knowledge_dir()
    assert directory == Path(__file__).resolve().parent.parent / "knowledge"
    assert {path.stem for path in directory.glob("*.yaml")} >= set(CLASS_IDS)


def test_extra_classes_come_after_the_fixed_ones_in_name_order(tmp_path: Path) -> None:
    directory = copy_kb(tmp_path)
    write(directory, minimal(id="zz_last"))
    write(directory, minimal(id="aa_first"))
    kb = load_knowledge(directory)
    assert kb.order == (*CLASS_IDS, "aa_first", "zz_last")
    assert len(kb) == len(CLASS_IDS) + 2
    assert [c.id for c in kb] == list(kb.order)
    assert kb["aa_first"].title == "The boot disk filled up"
    assert isinstance(kb["unknown"], FailureClass)
    with pytest.raises(KeyError):
        kb["nope"]


def test_an_empty_directory_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(KnowledgeBaseError) as caught:
        load_knowledge(tmp_path)
    assert (caught.value.path, caught.value.field) == (str(tmp_path), "(directory)")
    assert caught.value.problem == "no *.yaml knowledge files found"


def test_every_missing_class_is_named(tmp_path: Path) -> None:
    directory = copy_kb(tmp_path)
    (directory / "preemption.yaml").unlink()
    (directory / "host_oom.yaml").unlink()
    with pytest.raises(KnowledgeBaseError) as caught:
        load_knowledge(directory)
    assert (caught.value.path, caught.value.field) == (str(directory), "(directory)")
    assert caught.value.problem == "missing failure classes: host_oom, preemption"


def test_the_calibration_comes_with_the_knowledge_directory(tmp_path: Path) -> None:
    from bot.diagnosis.calibration import Calibration, load_calibration
    from bot.diagnosis.knowledge import CALIBRATION_FILE, KnowledgeBase

    bundled = load_knowledge()
    assert bundled.calibration == load_calibration(default_knowledge_dir() / CALIBRATION_FILE)
    assert bundled.calibration != Calibration()  # the bundled knowledge is calibrated
    directory = copy_kb(tmp_path)
    shutil.rmtree(directory / Path(CALIBRATION_FILE).parent)
    assert load_knowledge(directory).calibration == Calibration()  # none: raw scores
    assert KnowledgeBase([]).calibration == Calibration()


# ------------------------------------------------------------------------------------------- the schema, exactly


def refusals(model: type, data: dict) -> list[tuple[str, str]]:
    """Every problem the schema finds in `data`: (dotted location, message without pydantic's prefix)."""
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return [
        (".".join(str(part) for part in error["loc"]), str(error["msg"]).removeprefix("Value error, "))
        for error in caught.value.errors()
    ]


def test_a_signal_has_these_defaults() -> None:
    signal = Signal(name="x", pattern="p", weight=0.5)
    assert (signal.case_sensitive, signal.unless, signal.min_count, signal.hint, signal.variant) == (
        False,
        None,
        1,
        False,
        None,
    )
    assert (signal.facts, signal.unless_facts, signal.sets) == ([], [], {})
    assert signal.compiled_unless is None
    assert Signal(name="x", pattern="p", weight=0.5, sets={"platform": "aws"}).sets == {"platform": "aws"}


def test_regex_problems_are_worded_exactly() -> None:
    assert refusals(Signal, {"name": "x", "pattern": "a(b", "weight": 0.5}) == [
        ("pattern", "invalid regex: missing ), unterminated subpattern at position 1")
    ]
    [(field, message)] = refusals(Signal, {"name": "x", "pattern": "ok", "unless": "(?<=a)b", "weight": 0.5})
    assert field == "unless"
    assert message.startswith("not RE2 syntax (no look-around or back-references): ")
    assert "invalid perl operator: (?<=" in message
    assert Signal(name="x", pattern="ok", unless="not (ok)", weight=0.5).unless == "not (ok)"


def test_unknown_facts_are_named_with_the_known_ones() -> None:
    from bot.diagnosis.facts import FACT_NAMES

    assert refusals(Signal, {"name": "x", "pattern": "p", "unless_facts": ["spot", "moon"], "weight": 0.5}) == [
        ("unless_facts", f"unknown fact(s) ['moon']; known: {sorted(FACT_NAMES)}")
    ]
    assert Signal(name="x", facts=["spot"], unless_facts=["multi_replica"], weight=0).unless_facts == ["multi_replica"]


def test_what_a_signal_matches_on_is_checked_exactly() -> None:
    assert refusals(Signal, {"name": "x", "weight": 0.5}) == [("", "a signal needs a pattern, facts, or both")]
    assert refusals(Signal, {"name": "x", "facts": ["spot"], "unless": "u", "weight": 0.5}) == [
        ("", "'unless' only applies to a pattern")
    ]
    both = Signal(name="x", pattern="p", facts=["spot"], unless="u", weight=0.5)
    assert (both.pattern, both.facts, both.unless) == ("p", ["spot"], "u")


@pytest.mark.parametrize(
    ("field", "value"), [("name", "9lives"), ("name", "a-b"), ("variant", "Stock"), ("variant", "")]
)
def test_signal_and_variant_names_are_lowercase_identifiers(field: str, value: str) -> None:
    data = {"name": "x", "pattern": "p", "weight": 0.5, field: value}
    assert [where for where, _ in refusals(Signal, data)] == [field]


def test_without_case_sensitive_the_unless_pattern_ignores_case_and_spans_lines_too() -> None:
    loose = Signal(name="x", pattern="a", unless="^ok$", weight=0.5)
    assert loose.compiled_unless.search("line\nOK") and loose.compiled.search("A")
    exact = Signal(name="x", pattern="a", unless="^ok$", case_sensitive=True, weight=0.5)
    assert exact.compiled_unless.search("line\nok") and not exact.compiled_unless.search("OK")


def test_command_problems_are_worded_exactly_and_reported_together() -> None:
    assert refusals(CommandTemplate, {"title": "t", "template": "kubectl x"}) == [
        ("template", "a command template starts with gcloud, bq or gsutil")
    ]
    data = {"title": "Logs of {task_name}", "template": "gcloud x", "requires": ["Task"], "unless": {"Platform": "a"}}
    assert refusals(CommandTemplate, data) == [
        (
            "",
            "detail names are lowercase identifiers, not ['Task', 'Platform']; "
            "title: {task_name} must be in requires (a title never shows a placeholder)",
        )
    ]
    assert refusals(CommandTemplate, {"title": "t", "template": ""})[0][0] == "template"
    assert refusals(CommandTemplate, {"title": "t", "template": "gcloud x", "when": "bucket"})[0][0] == "when"


def test_command_conditions_and_lists_default_to_empty() -> None:
    command = CommandTemplate(title="Grant {role}", template="bq x {role}", requires=["role"])
    assert (command.absent, command.when, command.unless) == ([], {}, {})
    kept = CommandTemplate(title="t", template="gsutil x", when={"a": ["b", "c"]}, unless={"p": "aws"})
    assert (kept.when, kept.unless) == ({"a": ["b", "c"]}, {"p": ["aws"]})


def test_a_variant_overrides_nothing_by_default() -> None:
    from bot.diagnosis.knowledge_schema import Variant

    assert Variant().model_dump() == {
        "title": None,
        "symptom": None,
        "first_checks": None,
        "remediation": None,
        "avoid": None,
        "commands": None,
    }


def test_derivation_problems_are_worded_exactly() -> None:
    assert refusals(Derivation, {"source": "p", "table": "t"}) == [
        ("", "a table derivation names both its table and the column it takes the value from")
    ]
    assert refusals(Derivation, {"source": "p", "map": {"a": "b"}, "column": "c"}) == [
        ("", "a table derivation names both its table and the column it takes the value from")
    ]
    assert refusals(Derivation, {"source": "p", "map": {"a": "b"}, "key": "k"}) == [
        ("", "'key' only applies to a table")
    ]
    assert refusals(Derivation, {"source": "p"}) == [("", "a derivation needs a map, a table, or both")]
    full = Derivation(source="p", table="t", key="k", column="c", map={"a": "b"}, default="d")
    assert (full.table, full.key, full.column, full.default) == ("t", "k", "c", "d")
    assert Derivation(source="p", map={"a": "b"}).default is None


def test_a_derivation_tries_its_patterns_in_order() -> None:
    derivation = Derivation(source="p", map={"storage.*": "first", "storage.objects.*": "second"})
    assert derivation.lookup("storage.objects.get") == "first"
    assert derivation.lookup("compute.x") is None


# ------------------------------------------------------------------------------------------- the rerun block


def policy(**changes: object) -> dict:
    data: dict = {"transient": False, "why": "It fails the same way."}
    data.update(changes)
    return data


def test_a_rerun_policy_defaults_to_nothing_to_fix_and_no_changes() -> None:
    from bot.diagnosis.knowledge_schema import RerunPolicy

    plain = RerunPolicy.model_validate(policy())
    assert (plain.fix_first, plain.changes, plain.variants) == ([], [], {})
    assert RerunPolicy.model_validate(policy(why="x" * 120)).why == "x" * 120
    assert refusals(RerunPolicy, policy(why="x" * 121))[0][0] == "why"
    assert refusals(RerunPolicy, policy(why=""))[0][0] == "why"


@pytest.mark.parametrize(
    ("fix_first", "message"),
    [
        (["   "], "'   ': a fix is one line of at most 120 characters"),
        ([""], "'': a fix is one line of at most 120 characters"),
        (["grant\nthe role"], "'grant\\nthe role': a fix is one line of at most 120 characters"),
        (["g" * 121], f"{'g' * 60!r}: a fix is one line of at most 120 characters"),
        (
            ["grant {role} x", "grant {Role}"],
            "'grant {Role}': placeholders are {name} in lowercase, with no other braces",
        ),
        (["grant } x"], "'grant } x': placeholders are {name} in lowercase, with no other braces"),
        (["grant {role"], "'grant {role': placeholders are {name} in lowercase, with no other braces"),
        (
            ["grant it", "grant {role}"],
            "the last template must have no {placeholders}, so that the fix is always named",
        ),
    ],
)
def test_fix_first_templates_are_checked_exactly(fix_first: list[str], message: str) -> None:
    from bot.diagnosis.knowledge_schema import RerunPolicy, RerunVariant

    assert refusals(RerunPolicy, policy(fix_first=fix_first)) == [("fix_first", message)]
    assert refusals(RerunVariant, {"fix_first": fix_first}) == [("fix_first", message)]


def test_fix_first_templates_of_up_to_120_characters_with_placeholders_are_fine() -> None:
    from bot.diagnosis.knowledge_schema import RerunPolicy

    templates = ["grant {role} to {service_account}" + "x" * 87, "g" * 120]
    assert len(templates[0]) == 120
    assert RerunPolicy.model_validate(policy(fix_first=templates)).fix_first == templates


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            ["other_region", "buy_gpus", "pray"],
            "unknown change(s) ['buy_gpus', 'pray']; known: ['halve_batch_size', 'larger_accelerator', "
            "'more_memory_machine', 'other_region', 'fewer_accelerators', 'resume_from_checkpoint']",
        ),
        (["other_region", "fewer_accelerators", "other_region"], "a change is listed twice"),
    ],
)
def test_rerun_changes_are_checked_exactly(changes: list[str], message: str) -> None:
    from bot.diagnosis.knowledge_schema import RerunPolicy, RerunVariant

    assert refusals(RerunPolicy, policy(changes=changes)) == [("changes", message)]
    assert refusals(RerunVariant, {"changes": changes}) == [("changes", message)]


def test_a_rerun_variant_checks_its_why_and_keeps_what_it_leaves_out_unset() -> None:
    from bot.diagnosis.knowledge_schema import RerunVariant

    assert RerunVariant().model_dump() == {"transient": None, "why": None, "fix_first": None, "changes": None}
    assert [field for field, _ in refusals(RerunVariant, {"why": "a\nb"})] == ["why"]
    assert [field for field, _ in refusals(RerunVariant, {"why": "y" * 121})] == ["why"]
    assert RerunVariant(why="y" * 120, changes=["other_region"]).changes == ["other_region"]


def test_a_transient_failure_has_nothing_to_fix_first_even_in_a_variant() -> None:
    from bot.diagnosis.knowledge_schema import RerunPolicy

    assert refusals(RerunPolicy, policy(transient=True, fix_first=["grant it"])) == [
        ("", "fix_first: a transient failure has nothing to fix first")
    ]
    variants = {"flake": {"transient": True}}
    assert refusals(RerunPolicy, policy(fix_first=["grant it"], variants=variants)) == [
        ("", "variants.flake.fix_first: a transient failure has nothing to fix first")
    ]
    fine = RerunPolicy.model_validate(
        policy(fix_first=["grant it"], variants={"flake": {"transient": True, "fix_first": []}})
    )
    assert fine.for_variant("flake").transient is True and fine.for_variant("flake").fix_first == []
    needs_fix = {"stuck": {"fix_first": ["restart it"]}}
    assert refusals(RerunPolicy, policy(transient=True, variants=needs_fix)) == [
        ("", "variants.stuck.fix_first: a transient failure has nothing to fix first")
    ]


def test_a_variants_policy_overrides_only_the_fields_it_sets() -> None:
    from bot.diagnosis.knowledge_schema import RerunPolicy

    full = RerunPolicy.model_validate(
        policy(
            fix_first=["grant it"],
            changes=["other_region", "fewer_accelerators"],
            variants={
                "stockout": {
                    "transient": True,
                    "why": "No machines right now.",
                    "fix_first": [],
                    "changes": ["other_region"],
                },
                "renamed": {"why": "Another reason."},
                "nulls": {"transient": None, "why": None, "changes": None},
            },
        )
    )
    base = {
        "transient": False,
        "why": "It fails the same way.",
        "fix_first": ["grant it"],
        "changes": ["other_region", "fewer_accelerators"],
        "variants": {},
    }
    for variant in (None, "", "absent", "nulls"):
        chosen = full.for_variant(variant)
        assert isinstance(chosen, RerunPolicy) and chosen.model_dump() == base, variant
    assert full.for_variant("stockout").model_dump() == {
        "transient": True,
        "why": "No machines right now.",
        "fix_first": [],
        "changes": ["other_region"],
        "variants": {},
    }
    assert full.for_variant("renamed").model_dump() == {**base, "why": "Another reason."}
    assert len(full.variants) == 3  # the class's own policy keeps its variants


# ------------------------------------------------------------------------------------------- a class's own rules


def test_rerun_variants_must_be_variants_with_titles_of_their_own(tmp_path: Path) -> None:
    rerun = {"transient": False, "why": "w", "variants": {"gone": {}, "untitled": {}, "same": {}, "own": {}}}
    variants = {"untitled": {"symptom": "s"}, "same": {"title": "The boot disk filled up"}, "own": {"title": "Other"}}
    error = rejected(tmp_path, minimal(rerun=rerun, variants=variants))
    assert error.problems == [
        (
            error.path,
            "(top level)",
            "rerun.variants.gone: no variant 'gone' defined; "
            "rerun.variants.untitled: variant 'untitled' needs a title of its own; "
            "rerun.variants.same: variant 'same' needs a title of its own",
        )
    ]
    fine = minimal(rerun={**rerun, "variants": {"own": {"transient": True}}}, variants=variants)
    assert load_class_file(write(tmp_path, fine)).rerun.for_variant("own").transient is True
    assert load_class_file(write(tmp_path, minimal())).rerun is None


def test_a_class_reports_every_rule_it_breaks_in_one_problem(tmp_path: Path) -> None:
    signals = [
        {"name": "a", "pattern": "x", "weight": 0.5, "variant": "nope"},
        {"name": "a", "pattern": "y", "weight": 0.5},
        {"name": "b", "pattern": "z", "weight": 0.5, "variant": "spot"},
    ]
    error = rejected(tmp_path, minimal(avoid=[], signals=signals, variants={"spot": {"title": "Spot"}}))
    assert error.problems == [
        (
            error.path,
            "(top level)",
            "avoid: say what not to do; signals: duplicate names ['a']; signals.a.variant: no variant 'nope' defined",
        )
    ]
    error = rejected(tmp_path, minimal(signals=[]))
    assert error.problems == [(error.path, "(top level)", "signals: a failure class needs at least one signal")]


def test_a_class_has_these_defaults_and_bounds(tmp_path: Path) -> None:
    loaded = load_class_file(write(tmp_path, minimal()))
    assert (loaded.secondary, loaded.generic, loaded.variants, loaded.derive, loaded.commands, loaded.rerun) == (
        False,
        False,
        {},
        {},
        [],
        None,
    )
    data = minimal()
    del data["avoid"], data["signals"]
    assert rejected(tmp_path, data).problems[0][1:] == (
        "(top level)",
        "signals: a failure class needs at least one signal; avoid: say what not to do",
    )
    assert rejected(tmp_path, minimal(first_checks=[])).field == "first_checks"
    assert rejected(tmp_path, minimal(symptom="")).field == "symptom"
    assert rejected(tmp_path, minimal(id="Disk-Full")).field == "id"


@pytest.mark.parametrize("field", ["source", "table", "key", "column"])
def test_derivation_names_are_lowercase_identifiers(field: str) -> None:
    data = {"source": "p", "table": "t", "key": "k", "column": "c", field: "Bad-Name"}
    assert [where for where, _ in refusals(Derivation, data)] == [field]


def test_empty_command_titles_and_templates_are_refused_by_length() -> None:
    assert refusals(CommandTemplate, {"title": "", "template": "gcloud x"}) == [
        ("title", "String should have at least 1 character")
    ]
    assert refusals(CommandTemplate, {"title": "t", "template": ""}) == [
        ("template", "String should have at least 1 character")
    ]
    assert refusals(CommandTemplate, {"title": "t"}) == [("template", "Field required")]
    assert refusals(CommandTemplate, {"template": "gcloud x"}) == [("title", "Field required")]


def test_loaded_knowledge_cannot_be_changed_in_place() -> None:
    signal = Signal(name="x", pattern="p", weight=0.5)
    with pytest.raises(ValidationError, match="frozen"):
        signal.weight = 1.0  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        Derivation(source="p", map={"a": "b"}).default = "c"  # type: ignore[misc]


def test_a_signal_needs_a_name_and_a_weight() -> None:
    assert refusals(Signal, {"pattern": "p"}) == [("name", "Field required"), ("weight", "Field required")]


def test_a_variant_named_by_the_empty_string_never_stands_for_the_class_itself(tmp_path: Path) -> None:
    rerun = {"transient": False, "why": "It fails the same way.", "variants": {"": {"transient": True}}}
    data = minimal(variants={"": {"title": "Nameless"}}, rerun=rerun)
    try:
        loaded = load_class_file(write(tmp_path, data))
    except KnowledgeBaseError:
        return  # refusing the empty variant name would fix it too
    assert loaded.rerun is not None and loaded.rerun.for_variant(None).transient is False
