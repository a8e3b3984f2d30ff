"""A pytest plugin (loaded by tests/conftest.py): a skipped test is a failed test in this suite.

The Pub/Sub and Firestore emulators, gcloud's parser and the Java runtime they need are part of the test set-up,
not optional extras: a run where any of them is missing must fail (and say what is missing), not pass with
tests quietly skipped. xfail is untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

HOW_TO_FIX = (
    "this suite counts a skip as a failure: install what the test needs (the Google Cloud SDK with its "
    "Pub/Sub and Firestore emulators and a Java runtime, see README.md) or fix the test"
)


def _reason(longrepr: Any) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"SKIPPED, so FAILED: {_reason(report.longrepr)}\n({HOW_TO_FIX})"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped:
        report.outcome = "failed"
        report.longrepr = f"SKIPPED, so FAILED (whole module): {_reason(report.longrepr)}\n({HOW_TO_FIX})"
