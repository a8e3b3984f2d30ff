"""`./dev mutate [MODULE...]`: mutation testing with mutmut, and the pytest plugin its test runs load.

As a program (`python -m tests.mutation [MODULE...]`, what `./dev mutate` runs):
  1. reads the module -> test files map from pyproject.toml ([tool.trainmedic.mutate.tests]) and checks that it
     agrees with [tool.mutmut];
  2. refreshes mutmut's copies of the files it does not mutate (mutmut copies them once, and this tree is edited
     while people work) and drops its cached test map when a test or source file changed since it was made;
  3. starts one Pub/Sub and one Firestore emulator for the whole run (the test fixtures would otherwise start a
     pair for every mutant);
  4. runs `mutmut run` on the chosen modules' mutants (all mapped modules when none is named);
  5. prints the kill rate per module: killed / total, %, survivors; then the surviving mutants' names
     (`.venv/bin/mutmut show NAME` prints one's diff).

As a pytest plugin (`-p tests.mutation`, set in [tool.mutmut] pytest_add_cli_args; inert in ordinary runs):
  - while mutmut collects which tests call which function, a module's functions are only associated with the
    test files mapped to it, so its mutants are judged by those files alone;
  - the emulator fixtures of tests/conftest.py are pointed at the run's shared emulators, each test process with
    a Firestore project of its own (mutants run two at a time, and a test empties its project first).
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = "mutants"
SHARED_ENV = {"firestore": "TRAINMEDIC_MUTATE_FIRESTORE_HOST", "pubsub": "TRAINMEDIC_MUTATE_PUBSUB_HOST"}
KILLED = {"killed", "timeout", "caught by type check"}
EXCLUDE_ENV = "TRAINMEDIC_MUTATE_EXCLUDE_TESTS"
ONLY_ENV = "TRAINMEDIC_MUTATE_ONLY_TESTS"  # the chosen modules' test files: others are not even collected
BROKEN = "trainmedic-failing-without-mutants.txt"  # in mutants/: tests left out of this run


# ------------------------------------------------------------------------------------------------ config


@functools.cache
def load_config(root: Path = ROOT) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """([tool.mutmut], module file -> its test files)."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    tool = data.get("tool", {})
    return tool.get("mutmut", {}), tool.get("trainmedic", {}).get("mutate", {}).get("tests", {})


def module_name(path: str) -> str:
    """The dotted name mutmut gives a module's mutants: a package's __init__.py is the package itself."""
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def check_config(mutmut: dict[str, Any], tests_by_module: dict[str, list[str]], root: Path = ROOT) -> list[str]:
    problems = []
    if sorted(mutmut.get("only_mutate", [])) != sorted(tests_by_module):
        problems.append("[tool.mutmut] only_mutate and [tool.trainmedic.mutate.tests] must name the same modules")
    union = sorted({test for tests in tests_by_module.values() for test in tests})
    if sorted(mutmut.get("pytest_add_cli_args_test_selection", [])) != union:
        problems.append(
            "[tool.mutmut] pytest_add_cli_args_test_selection must list every file of [tool.trainmedic.mutate.tests]"
            f" once: {union}"
        )
    problems += [f"{test}: no such test file" for test in union if not (root / test).is_file()]
    problems += [f"{module}: no such module" for module in tests_by_module if not (root / module).is_file()]
    return problems


def resolve_modules(names: list[str], tests_by_module: dict[str, list[str]]) -> list[str]:
    """Module files for names given as bot.render.redact, its path, redact or a glob such as 'bot.store*'."""
    if not names:
        return list(tests_by_module)
    chosen: list[str] = []
    for name in names:
        found = [
            module
            for module in tests_by_module
            if name in (module, module_name(module), Path(module).stem)
            or fnmatch.fnmatch(Path(module).stem, name)
            or fnmatch.fnmatch(module_name(module), name)
        ]
        if not found:
            known = ", ".join(module_name(m) for m in tests_by_module)
            raise SystemExit(f"mutate: no mapped module matches {name!r} (known: {known})")
        chosen += [module for module in found if module not in chosen]
    return chosen


# ------------------------------------------------------------------------------------------------ the run


def refresh_copies(mutmut: dict[str, Any], root: Path = ROOT) -> None:
    """Re-copy unmutated sources that changed since mutmut copied them (mutmut never refreshes them), and drop
    the plain copy of a module mapped since (so that mutmut mutates it)."""
    mutated = set(mutmut.get("only_mutate", []))
    for source_dir in mutmut.get("source_paths", []):
        for source in sorted((root / source_dir).rglob("*.py")):
            relative = source.relative_to(root).as_posix()
            target = root / MUTANTS / relative
            if "__pycache__" in relative:
                continue
            if relative in mutated:
                if target.exists() and not target.with_name(target.name + ".meta").exists():
                    target.unlink()  # a plain copy from before the module was mapped: mutmut would never mutate it
                continue
            if not target.exists() or target.read_bytes() != source.read_bytes():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)


def drop_stale_test_map(mutmut: dict[str, Any], root: Path = ROOT, excluded: str = "") -> bool:
    """Forget which tests call which function when a test or source file changed since that was recorded, or
    when other tests are left out this time."""
    stats = root / MUTANTS / "mutmut-stats.json"
    marker = root / MUTANTS / "trainmedic-excluded-tests.txt"
    same_exclusion = (marker.read_text(encoding="utf-8") if marker.exists() else "") == excluded
    marker.write_text(excluded, encoding="utf-8")
    if not stats.exists():
        return False
    made = stats.stat().st_mtime
    watched = [root / "tests", *(root / p for p in mutmut.get("source_paths", []))]
    changed = not same_exclusion or any(
        path.stat().st_mtime > made for folder in watched for path in folder.rglob("*.py")
    )
    if changed:
        stats.unlink()
    return changed


@contextmanager
def shared_emulators() -> Iterator[dict[str, str]]:
    """One Pub/Sub and one Firestore emulator for the run; none (and the emulator tests skip) without gcloud."""
    from tests.emulators import sdk_root, start_firestore, start_pubsub

    if sdk_root() is None:
        print("mutate: gcloud is not installed: the emulator tests are skipped", file=sys.stderr)
        yield {}
        return
    with ExitStack() as stack:
        hosts = {}
        for kind, start in (("firestore", start_firestore), ("pubsub", start_pubsub)):
            emulator = stack.enter_context(start("mutate"))
            hosts[SHARED_ENV[kind]] = emulator.host
        yield hosts


def read_results(modules: list[str], root: Path = ROOT) -> dict[str, dict[str, list[str]]]:
    """module -> status -> mutant names, from mutmut's .meta files."""
    from mutmut.stats import status_by_exit_code

    results: dict[str, dict[str, list[str]]] = {}
    for module in modules:
        meta = root / MUTANTS / f"{module}.meta"
        by_status: dict[str, list[str]] = {}
        if meta.exists():
            codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
            for name, code in sorted(codes.items()):
                by_status.setdefault(status_by_exit_code[code], []).append(name)
        results[module] = by_status
    return results


def load_equivalences(root: Path = ROOT) -> list[dict[str, Any]]:
    """[[tool.trainmedic.mutate.equivalent]]: kinds of surviving mutant judged equivalent, each with its reason."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    return data.get("tool", {}).get("trainmedic", {}).get("mutate", {}).get("equivalent", [])


def changed_lines(name: str, module: str) -> tuple[list[str], list[str]]:
    """The mutant's removed and added source lines."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    diff = get_diff_for_mutant(name, path=module).splitlines()
    removed = [line[1:] for line in diff if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in diff if line.startswith("+") and not line.startswith("+++")]
    return removed, added


def equivalence(name: str, module: str, rules: list[dict[str, Any]]) -> str | None:
    """Why a surviving mutant is equivalent, if a rule for its module says so: `changed` must match every removed
    line, `to` (if given) every added line, or `case_only` the mutant must only change the case of strings."""
    import re

    applicable = [rule for rule in rules if fnmatch.fnmatch(module, rule.get("module", ""))]
    if not applicable:
        return None
    removed, added = changed_lines(name, module)
    for rule in applicable:
        if rule.get("case_only") and removed and len(removed) == len(added):
            if all(old != new and old.lower() == new.lower() for old, new in zip(removed, added, strict=True)):
                return rule["why"]
        pattern, to = rule.get("changed"), rule.get("to", "")
        if (
            pattern
            and removed
            and all(re.search(pattern, line) for line in removed)
            and all(re.search(to, line) for line in added)
        ):
            return rule["why"]
    return None


def report(
    results: dict[str, dict[str, list[str]]], elapsed: float, rules: list[dict[str, Any]] | None = None
) -> tuple[str, list[float]]:
    """The table: per module, killed / checked mutants (all of them unless --sample), the rate, the survivors,
    and the rate once the survivors judged equivalent ([tool.trainmedic.mutate.equivalent]) are set apart."""
    lines = [
        f"{'module':<26} {'killed/checked':>14} {'rate':>7} {'survivors':>10} {'equivalent':>11} "
        f"{'rate w/o eq.':>12}  notes"
    ]
    rates = []
    unexplained: list[str] = []
    explained: dict[str, list[str]] = {}
    for module, by_status in results.items():
        total = sum(len(names) for names in by_status.values())
        checked = total - len(by_status.get("not checked", []))
        killed = sum(len(by_status.get(status, [])) for status in KILLED)
        surviving = by_status.get("survived", []) + by_status.get("no tests", [])
        equivalent = 0
        for name in surviving:
            why = equivalence(name, module, rules or [])
            if why is None:
                unexplained.append(name)
            else:
                equivalent += 1
                explained.setdefault(why, []).append(name)
        rate = 100.0 * killed / checked if checked else 0.0
        rate_ne = 100.0 * killed / (checked - equivalent) if checked > equivalent else 0.0
        rates.append(rate_ne)
        notes = []
        if checked < total:
            notes.append(f"{checked} of {total} mutants checked")
        if by_status.get("no tests"):
            notes.append(f"{len(by_status['no tests'])} survivors have no test")
        timeouts = len(by_status.get("timeout", []))
        if timeouts:
            notes.append(f"{timeouts} killed by timeout")
        notes += [
            f"{len(names)} {status}"
            for status, names in sorted(by_status.items())
            if status not in KILLED | {"survived", "no tests", "not checked"}
        ]
        row = (
            f"{module_name(module):<26} {f'{killed}/{checked}':>14} {rate:>6.1f}% {len(surviving):>10} "
            f"{equivalent:>11} {rate_ne:>11.1f}%  {', '.join(notes)}"
        )
        lines.append(row.rstrip())
    lines.append(f"(killed includes timeouts; {elapsed / 60:.1f} min)")
    for why, names in explained.items():
        lines.append("")
        lines.append(f"Judged equivalent ({len(names)}): {why}")
        lines += [f"  {name}" for name in names]
    if unexplained:
        lines.append("")
        lines.append("Surviving mutants (`.venv/bin/mutmut show NAME` prints the change):")
        lines += [f"  {name}" for name in unexplained]
    return "\n".join(lines), rates


def sample_names(modules: list[str], size: int, root: Path = ROOT) -> list[str]:
    """`size` mutants of each module, drawn at random but the same every time (for a quick estimate)."""
    import random

    names = []
    for module in modules:
        meta = root / MUTANTS / f"{module}.meta"
        if not meta.exists():  # nothing to draw from: a run with no names would test every mutant of every module
            raise SystemExit(
                f"mutate: no mutants of {module} yet to sample from: run `./dev mutate {module}` once (mutmut "
                "generates them first; stop it once it tests), then sample"
            )
        keys = sorted(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])
        names += random.Random(f"{module}:{size}").sample(keys, min(size, len(keys)))
    return names


def forget_results(modules: list[str], root: Path = ROOT) -> None:
    """Mark the modules' mutants unchecked, so that a sampled run reports on its sample alone."""
    for module in modules:
        meta = root / MUTANTS / f"{module}.meta"
        if meta.exists():
            data = json.loads(meta.read_text(encoding="utf-8"))
            data["exit_code_by_key"] = dict.fromkeys(data["exit_code_by_key"])
            meta.write_text(json.dumps(data, indent=4), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./dev mutate", description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="bot.render.redact, its path, redact or a glob ('bot.store*')")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutants tested at once")
    parser.add_argument(
        "--fail-under", type=float, default=None, help="exit 1 if a module's rate (without equivalents) is lower"
    )
    parser.add_argument("--report-only", action="store_true", help="print the last results without running")
    parser.add_argument("--sample", type=int, default=None, help="test only N random mutants per module (estimate)")
    parser.add_argument(
        "--survivors", action="store_true", help="test again only the mutants that survived the last run (new tests)"
    )
    parser.add_argument(
        "--exclude-tests", default="", metavar="GLOB", help="leave these test files out, e.g. 'tests/test_guard_*'"
    )
    args = parser.parse_args(argv)

    mutmut, tests_by_module = load_config()
    problems = check_config(mutmut, tests_by_module)
    if problems:
        print("mutate: pyproject.toml:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    modules = resolve_modules(args.modules, tests_by_module)
    started = time.monotonic()
    signal.signal(signal.SIGTERM, _exit_on_signal)  # stop mutmut and the emulators on the way out
    if not args.report_only:
        (ROOT / MUTANTS).mkdir(exist_ok=True)
        refresh_copies(mutmut)
        if drop_stale_test_map(mutmut, excluded=args.exclude_tests):
            print("mutate: tests or sources changed: mutmut maps tests to functions again", file=sys.stderr)
        (ROOT / MUTANTS / BROKEN).unlink(missing_ok=True)
        mutmut_bin = Path(sys.executable).with_name("mutmut")
        # mutmut names a mutant MODULE.x_function__mutmut_N or MODULE.xǁClassǁmethod__mutmut_N: ".x" keeps a
        # package's own mutants (bot.store.x...) apart from its modules' (bot.store.sqlite.x...)
        patterns = [f"{module_name(module)}.x*" for module in modules]
        with shared_emulators() as hosts:
            files = sorted({test for module in modules for test in tests_by_module[module]})
            env = {**os.environ, **hosts, EXCLUDE_ENV: args.exclude_tests, ONLY_ENV: ",".join(files)}
            if args.sample is not None:  # drawn from the mutants of the last run (a changed function may differ)
                forget_results(modules)
                patterns = sample_names(modules, args.sample)
            elif args.survivors:
                last, rules = read_results(modules), load_equivalences()
                patterns = [
                    name
                    for module, by in last.items()
                    for status in ("survived", "no tests")
                    for name in by.get(status, [])
                    if equivalence(name, module, rules) is None  # judged equivalent: no test can kill it
                ]
                if not patterns:
                    print("mutate: no survivors to test again", file=sys.stderr)
                    return 0
            command = [str(mutmut_bin), "run", "--max-children", str(args.jobs), *patterns]
            done = run_in_own_group(command, env)
            if done.returncode != 0:  # a test failed without a mutant (flaky under load?): once more
                print("mutate: mutmut stopped; trying once more", file=sys.stderr)
                done = run_in_own_group(command, env)
        if done.returncode != 0:
            print(f"mutate: mutmut run failed (exit {done.returncode})", file=sys.stderr)
            return done.returncode
    text, rates = report(read_results(modules), time.monotonic() - started, load_equivalences())
    print()
    print(text)
    broken = ROOT / MUTANTS / BROKEN
    if not args.report_only and broken.exists():
        names = sorted(set(broken.read_text(encoding="utf-8").split()))
        print(f"\nLeft out of this run: {len(names)} test(s) that failed without any mutant (fix them):")
        print("\n".join(f"  {name}" for name in names))
    if args.fail_under is not None and any(rate < args.fail_under for rate in rates):
        return 1
    return 0


def run_in_own_group(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """Run mutmut in a process group of its own and end the whole group if we are stopped (its fork server
    and workers would otherwise outlive it)."""
    process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    try:
        return subprocess.CompletedProcess(command, process.wait())
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        raise


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


# ------------------------------------------------------------------------------------------- pytest plugin


def _mutmut_phase() -> str:
    return os.environ.get("MUTANT_UNDER_TEST", "")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """While mutmut records which functions each test calls, keep only the modules mapped to the test's file."""
    if _mutmut_phase() != "stats":
        return
    from mutmut.state import state

    _, tests_by_module = load_config(Path.cwd())
    test_file = item.nodeid.split("::", 1)[0].removeprefix("mutants/")
    called = state()._stats
    for name in list(called):
        module = next(
            (m for m in tests_by_module if name.startswith(module_name(m) + ".x")),
            None,
        )
        if module is not None and test_file not in tests_by_module[module]:
            called.discard(name)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--exclude-tests: leave those test files out. For a mutant, run the fastest tests first: the first failure
    ends the run (-x), so kills come cheap."""
    excluded = os.environ.get(EXCLUDE_ENV)
    only = set(filter(None, os.environ.get(ONLY_ENV, "").split(",")))
    broken = set(Path(BROKEN).read_text(encoding="utf-8").split()) if Path(BROKEN).exists() else set()
    if excluded or only or broken:
        dropped = [
            item
            for item in items
            if (excluded and fnmatch.fnmatch(item.nodeid.split("::", 1)[0], excluded))
            or (only and item.nodeid.split("::", 1)[0] not in only)
            or item.nodeid in broken
        ]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if item not in dropped]
    if "__mutmut_" not in _mutmut_phase():
        return
    durations = _test_durations()
    items.sort(key=lambda item: durations.get(item.nodeid, float("inf")))


@functools.cache
def _test_durations() -> dict[str, float]:
    try:
        return json.loads(Path("mutmut-stats.json").read_text(encoding="utf-8"))["duration_by_test"]
    except (OSError, ValueError, KeyError):
        return {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test that fails without any mutant would stop mutmut (and mutmut's forked runs swallow pytest's output):
    say which and why on the real stderr, and in the stats run leave it out of the rest of this run instead."""
    outcome = yield
    report = outcome.get_result()
    phase = _mutmut_phase()
    if report.failed and "__mutmut_" not in phase and phase != "fail":
        text = (
            f"mutate: {report.nodeid} failed ({report.when}, {phase or 'clean'} run):\n{report.longreprtext[-3000:]}\n"
        )
        os.write(2, text.encode("utf-8", "replace"))
        if phase == "stats":
            with open(BROKEN, "a", encoding="utf-8") as broken:
                broken.write(report.nodeid + "\n")
            report.outcome = "passed"  # so that -x does not end the stats run; later runs deselect it


class _SharedEmulator:
    """Stands in for tests.emulators.Emulator: an emulator this run shares, which a test session never stops."""

    def __init__(self, kind: str, host: str) -> None:
        from tests.emulators import Emulator

        self._emulator = Emulator(kind, host, f"mutate-{os.getpid()}", None, Path(os.devnull))  # type: ignore[arg-type]

    def __enter__(self) -> Any:
        return self._emulator

    def __exit__(self, *exc_info: object) -> None:
        pass


def pytest_sessionstart(session: pytest.Session) -> None:
    hosts = {kind: os.environ.get(variable) for kind, variable in SHARED_ENV.items()}
    if not any(hosts.values()):
        return
    import tests.conftest as conftest

    for kind, host in hosts.items():
        if host:
            setattr(conftest, f"start_{kind}", lambda project, k=kind, h=host: _SharedEmulator(k, h))


if __name__ == "__main__":
    sys.exit(main())
