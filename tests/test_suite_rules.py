"""The suite's own rules: a skipped test fails the run, and a missing emulator or gcloud is named in the failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_pytest(args: list[str], *, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def test_a_skipped_test_fails_the_run_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n\n"
        "def test_needs_a_tool():\n    pytest.skip('the frobnicator is not installed')\n\n"
        "@pytest.mark.skipif(True, reason='no widget service')\n"
        "def test_marked():\n    pass\n\n"
        "@pytest.mark.xfail(reason='known bug', strict=False)\n"
        "def test_expected_failure():\n    assert False\n\n"
        "def test_fine():\n    pass\n"
    )
    done = run_pytest(["-p", "tests.strict_outcomes", "-q", str(tmp_path / "test_skips.py")], cwd=tmp_path)

    assert done.returncode == 1, done.stdout
    summary = done.stdout.strip().splitlines()[-1]
    assert summary.startswith("1 failed, 1 passed, 1 xfailed, 1 error"), done.stdout  # a skip at set-up: an error
    assert "the frobnicator is not installed" in done.stdout and "no widget service" in done.stdout


def test_a_module_that_skips_itself_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_module_skip.py").write_text(
        "import pytest\n\npytest.importorskip('a_module_nobody_has')\n\ndef test_x():\n    pass\n"
    )
    done = run_pytest(["-p", "tests.strict_outcomes", "-q", str(tmp_path / "test_module_skip.py")], cwd=tmp_path)
    assert done.returncode != 0, done.stdout
    assert "a_module_nobody_has" in done.stdout


def test_without_gcloud_the_emulator_tests_fail_naming_what_is_missing() -> None:
    no_gcloud = os.pathsep.join(str(Path(p)) for p in (Path(sys.executable).parent, "/nonexistent"))
    done = run_pytest(["-q", "tests/test_store_doubt.py::test_count_entries"], env={"PATH": no_gcloud})  # both stores
    assert done.returncode == 1, done.stdout
    assert "1 passed, 1 error" in done.stdout, done.stdout  # sqlite ran; the Firestore one errored at set-up
    assert "the Firestore emulator cannot start: gcloud" in done.stdout


def test_a_sample_with_no_mutants_generated_yet_refuses_instead_of_testing_everything(tmp_path) -> None:
    from tests.mutation import sample_names

    (tmp_path / "mutants" / "bot").mkdir(parents=True)
    with pytest.raises(SystemExit, match="no mutants of bot/x.py yet"):
        sample_names(["bot/x.py"], 10, root=tmp_path)
    meta = tmp_path / "mutants" / "bot" / "x.py.meta"
    meta.write_text('{"exit_code_by_key": {"bot.x.x_f__mutmut_1": 0, "bot.x.x_f__mutmut_2": 1}}', encoding="utf-8")
    drawn = sample_names(["bot/x.py"], 10, root=tmp_path)
    assert sorted(drawn) == ["bot.x.x_f__mutmut_1", "bot.x.x_f__mutmut_2"]
    assert sample_names(["bot/x.py"], 1, root=tmp_path) == sample_names(["bot/x.py"], 1, root=tmp_path)
