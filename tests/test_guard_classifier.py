"""The classifier's decision, pinned on small knowledge bases built here (weights, floors and min_count chosen so
that every score is known): noisy-OR scores, ranking (specific beats generic, KB order breaks ties), cascades,
the decision floor, the runner-up penalty, calibration, the unknown cap and the text model's alternatives."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.diagnosis import classifier as classifier_module
from bot.diagnosis.calibration import IDENTITY, UNCALIBRATED_UNKNOWN, Calibration, Curve
from bot.diagnosis.classifier import Classifier, classify
from bot.diagnosis.knowledge import KnowledgeBase, default_knowledge_dir, load_class_file
from bot.diagnosis.knowledge_schema import FailureClass
from bot.diagnosis.words.text_model import TextModel
from bot.intake.log_input import text_to_lines
from bot.models import Alternative, Diagnosis, JobInfo, LogLine

T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
UNKNOWN_CLASS = load_class_file(default_knowledge_dir() / "unknown.yaml")
LINEAR = Curve(((0.0, 0.1), (1.0, 0.9)))  # calibrated = 0.1 + 0.8 x raw: tells calibrated from raw values


def sig(name: str, pattern: str | None, weight: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "weight": weight, **({"pattern": pattern} if pattern is not None else {}), **extra}


def fclass(class_id: str, *signals: dict[str, Any], **extra: Any) -> FailureClass:
    return FailureClass.model_validate(
        {
            "id": class_id,
            "title": f"{class_id} title",
            "symptom": f"{class_id} symptom",
            "first_checks": [f"check {class_id}"],
            "remediation": [f"fix {class_id}"],
            "avoid": [f"avoid {class_id}"],
            "signals": list(signals),
            **extra,
        }
    )


def make(
    *classes: FailureClass,
    diagnosis: Curve = IDENTITY,
    unknown: Curve = UNCALIBRATED_UNKNOWN,
    model: TextModel | None = None,
    unknown_class: FailureClass = UNKNOWN_CLASS,
    generic: Curve | None = None,
) -> Classifier:
    return Classifier(KnowledgeBase([*classes, unknown_class], Calibration(diagnosis, unknown, generic), {}, model))


def one(class_id: str, weight: float, **extra: Any) -> FailureClass:
    """A class with one signal: the words `<class_id> fails` (its score is `weight`)."""
    return fclass(class_id, sig(f"{class_id}_fails", f"{class_id} fails", weight), **extra)


def line(text: str, replica: str | None = None, seconds: float | None = None, **extra: Any) -> LogLine:
    stamp = None if seconds is None else T0 + timedelta(seconds=seconds)
    return LogLine(text=text, replica=replica, timestamp=stamp, **extra)


def alt(failure_class: str, confidence: float, evidence: str = "", source: str = "rules") -> Alternative:
    return Alternative(failure_class=failure_class, confidence=confidence, evidence=evidence, source=source)


def run(c: Classifier, text: str, job: JobInfo | None = None) -> Diagnosis:
    return c.classify(text_to_lines(text), job)


# ---- scores, confidence, alternatives -------------------------------------------------------------------------


def test_signals_combine_as_noisy_or_and_the_confidence_is_calibrated() -> None:
    c = make(fclass("alpha", sig("a1", "alpha one", 0.6), sig("a2", "alpha two", 0.5)), diagnosis=LINEAR)
    both = run(c, "step 1\nalpha one\nalpha two")
    # 1 - 0.4 x 0.5 = 0.8 -> 0.1 + 0.8 x 0.8 = 0.74; unsure (< 0.8): unknown at (1 - 0.74) / 2
    assert (both.failure_class, both.confidence) == ("alpha", 0.74)
    assert both.alternatives == [alt("unknown", 0.13)]
    assert both.evidence == ["alpha one", "alpha two"]
    assert (both.title, both.symptom, both.remediation) == ("alpha title", "alpha symptom", ["fix alpha"])
    assert (both.avoid, both.first_checks) == (["avoid alpha"], ["check alpha"])
    assert both.first_failing_replica is None and both.cascade == [] and both.finding is None
    single = run(c, "alpha two")
    assert (single.failure_class, single.confidence) == ("alpha", 0.5)  # 0.1 + 0.8 x 0.5


def test_the_runner_up_lowers_the_confidence_and_the_two_best_others_are_the_alternatives() -> None:
    c = make(one("alpha", 0.9), one("beta", 0.6), one("gamma", 0.4), one("delta", 0.5), diagnosis=LINEAR)
    diagnosis = run(c, "gamma fails\ndelta fails\nbeta fails  token=hunter2\nalpha fails")
    # raw 0.9 - 0.25 x 0.6 = 0.75 -> 0.7; each alternative: min(its calibrated score, 0.7) x 0.9 (beta 0.58 x 0.9 =
    # 0.522, delta 0.5 x 0.9 = 0.45), then the two share the 0.3 the answer leaves, in proportion (x 0.3 / 0.972)
    assert diagnosis.confidence == 0.7
    assert diagnosis.alternatives == [
        alt("beta", 0.161, "beta fails  token=[REDACTED]"),
        alt("delta", 0.139, "delta fails"),
    ]


def test_an_alternative_never_shows_more_confidence_than_the_answer() -> None:
    c = make(one("alpha", 0.9), one("beta", 0.85), diagnosis=LINEAR)
    diagnosis = run(c, "beta fails\nalpha fails")
    # raw 0.9 - 0.2125 = 0.6875 -> 0.65; beta's own 0.78 is capped at 0.65, x 0.9 = 0.585; unknown (1 - 0.65) / 2 =
    # 0.175; together they share the 0.35 left (x 0.35 / 0.76)
    assert diagnosis.confidence == 0.65
    assert diagnosis.alternatives == [alt("beta", 0.269, "beta fails"), alt("unknown", 0.081)]


def test_unknown_is_an_alternative_below_0_8_only_and_ranks_by_its_confidence() -> None:
    c = make(one("alpha", 0.8), one("beta", 0.2))
    sure = run(c, "alpha fails")
    assert (sure.confidence, sure.alternatives) == (0.8, [])
    weak = make(one("alpha", 0.4), one("beta", 0.2))
    diagnosis = run(weak, "beta fails\nalpha fails")
    # raw 0.4 - 0.05 = 0.35: unknown (1 - 0.35) / 2 = 0.325 beats beta's 0.2 x 0.9
    assert diagnosis.failure_class == "alpha" and diagnosis.confidence == 0.35
    assert diagnosis.alternatives == [alt("unknown", 0.325), alt("beta", 0.18, "beta fails")]


def test_confidence_is_at_most_0_99_and_rounded_to_three_places() -> None:
    certain = run(make(one("alpha", 1.0)), "alpha fails")
    assert (certain.confidence, certain.alternatives) == (0.99, [])
    diagnosis = run(make(one("alpha", 0.9), one("beta", 0.333)), "alpha fails\nbeta fails")
    assert diagnosis.confidence == 0.817  # 0.9 - 0.25 x 0.333 = 0.81675


def test_the_decision_floor_is_0_35_of_score() -> None:
    at_floor = run(make(one("alpha", 0.35)), "alpha fails")
    assert (at_floor.failure_class, at_floor.confidence) == ("alpha", 0.35)
    below = run(make(one("alpha", 0.34), one("beta", 0.2), one("gamma", 0.3)), "alpha fails\nbeta fails\ngamma fails")
    assert below.failure_class == "unknown"
    assert below.title == UNKNOWN_CLASS.title and below.remediation == UNKNOWN_CLASS.remediation
    # unknown's own curve (uncalibrated: 0.05 + 0.25 x (1 - best)) at 1 - 0.34; the two strongest as alternatives
    assert below.confidence == 0.215
    # (0.272 and 0.24 as calibrated, both shown at 0.95 of the answer's 0.215: never above it)
    assert below.alternatives == [alt("alpha", 0.204, "alpha fails"), alt("gamma", 0.204, "gamma fails")]
    assert below.evidence == ["alpha fails"]
    assert below.first_failing_replica is None and below.cascade == []


def test_unknown_alternatives_go_through_the_calibration_and_the_cap_is_0_45() -> None:
    c = make(one("alpha", 0.3), diagnosis=LINEAR, unknown=Curve(((0.0, 0.0), (1.0, 1.0))))
    weak = run(c, "alpha fails")
    assert weak.failure_class == "unknown"
    assert weak.confidence == 0.45  # 1 - 0.3 = 0.7 on the identity unknown curve: capped
    assert weak.alternatives == [alt("alpha", 0.272, "alpha fails")]  # (0.1 + 0.24) x 0.8
    lower = make(one("alpha", 0.3), unknown=Curve(((0.0, 0.0), (1.0, 0.5))))
    assert run(lower, "alpha fails").confidence == 0.35  # 0.7 x 0.5, under the cap
    nothing = run(c, "all good")
    assert (nothing.failure_class, nothing.confidence, nothing.evidence, nothing.alternatives) == (
        "unknown",
        0.45,
        [],
        [],
    )


def test_a_rival_that_calibrates_above_an_unknown_answer_is_shown_just_below_it_highest_first() -> None:
    # alpha's raw 0.25 maps to 0.6 on this steep curve: 0.6 x 0.8 = 0.48 as an alternative, far above the answer
    # (unknown's own curve at 1 - 0.3: 0.225); the catch-all gamma ranks first by raw score (0.3) but its own curve
    # shows it at 0.09 x 0.8
    steep = Curve(((0.0, 0.0), (0.25, 0.6), (1.0, 0.99)))
    low = Curve(((0.0, 0.0), (1.0, 0.3)))
    c = make(one("alpha", 0.25), one("gamma", 0.3, generic=True), diagnosis=steep, generic=low)
    diagnosis = run(c, "gamma fails\nalpha fails")
    assert (diagnosis.failure_class, diagnosis.confidence) == ("unknown", 0.225)
    # alpha at most 0.95 of the answer's 0.225, and the list reads highest first
    assert diagnosis.alternatives == [alt("alpha", 0.214, "alpha fails"), alt("gamma", 0.072, "gamma fails")]


def test_a_signal_that_only_captures_details_never_ranks_its_class() -> None:
    c = make(one("alpha", 0.0), one("beta", 0.2))
    diagnosis = run(c, "alpha fails\nbeta fails")
    assert diagnosis.failure_class == "unknown"
    assert [a.failure_class for a in diagnosis.alternatives] == ["beta"]


def test_the_unknown_class_is_never_an_answer_even_with_signals_of_its_own() -> None:
    noisy_unknown = UNKNOWN_CLASS.model_copy(update={"signals": one("x", 0.9).signals})
    c = make(one("alpha", 0.5), unknown_class=noisy_unknown)
    diagnosis = run(c, "x fails\nalpha fails")
    assert (diagnosis.failure_class, diagnosis.confidence) == ("alpha", 0.5)
    assert diagnosis.alternatives == [alt("unknown", 0.25)]
    assert run(c, "x fails").alternatives == []


def test_equal_scores_go_to_the_evidence_logged_last_then_to_knowledge_base_order() -> None:
    text = "beta fails\nalpha fails"
    first = run(make(one("alpha", 0.6), one("beta", 0.6)), text)
    second = run(make(one("beta", 0.6), one("alpha", 0.6)), text)
    assert first.failure_class == "alpha" and second.failure_class == "alpha"  # what the job ended with
    # min(0.6, 0.45) x 0.9 = 0.405, beside unknown's 0.275: the two share the 0.55 left (x 0.55 / 0.68)
    assert first.alternatives[0] == alt("beta", 0.328, "beta fails")
    same_line = "alpha fails, beta fails"
    assert run(make(one("alpha", 0.6), one("beta", 0.6)), same_line).failure_class == "alpha"
    assert run(make(one("beta", 0.6), one("alpha", 0.6)), same_line).failure_class == "beta"


# ---- specific, generic, hints -----------------------------------------------------------------------------------


def test_a_specific_cause_outranks_a_stronger_catch_all_that_then_is_no_rival() -> None:
    c = make(one("catch", 0.95, generic=True), one("spec", 0.5))
    diagnosis = run(c, "catch fails\nspec fails")
    assert (diagnosis.failure_class, diagnosis.confidence) == ("spec", 0.5)
    # catch 0.5 x 0.9 = 0.45 and unknown 0.25 share the 0.5 left (x 0.5 / 0.7)
    assert diagnosis.alternatives == [alt("catch", 0.321, "catch fails"), alt("unknown", 0.179)]


def test_a_specific_cause_needs_decisive_evidence_at_the_floor_to_outrank_a_catch_all() -> None:
    text = "catch fails\nspec fails\nspec words"
    at_floor = fclass("spec", sig("s", "spec fails", 0.35), sig("h", "spec words", 0.6, hint=True))
    assert run(make(one("catch", 0.95, generic=True), at_floor), text).failure_class == "spec"
    weak = fclass("spec", sig("s", "spec fails", 0.34), sig("h", "spec words", 0.6, hint=True))
    diagnosis = run(make(one("catch", 0.95, generic=True), weak), text)
    # the catch-all wins and the specific class (1 - 0.66 x 0.4 = 0.736) is its rival: 0.95 - 0.25 x 0.736
    assert (diagnosis.failure_class, diagnosis.confidence) == ("catch", 0.766)
    # spec 0.736 x 0.9 = 0.662 and unknown 0.117 share the 0.234 left (x 0.234 / 0.779)
    assert diagnosis.alternatives == [alt("spec", 0.199, "spec fails"), alt("unknown", 0.035)]


def test_against_a_bare_catch_all_a_specific_class_s_hints_count_and_the_catch_all_stays_a_rival() -> None:
    # the catch-all has hints only (a traceback, a generic exception): the specific class's words say what failed
    bare = fclass("catch", sig("c", "catch fails", 0.8, hint=True), generic=True)
    words = fclass("spec", sig("h", "spec words", 0.4, hint=True))
    diagnosis = run(make(bare, words), "catch fails\nspec words")
    # outranked by words alone, the catch-all is still a rival: 0.4 - 0.25 x 0.8
    assert (diagnosis.failure_class, diagnosis.confidence) == ("spec", 0.2)
    # unknown's (1 - 0.2) / 2 = 0.4 is shown at 0.95 of the answer's 0.2: never above the answer
    assert diagnosis.alternatives == [alt("unknown", 0.19), alt("catch", 0.18, "catch fails")]
    # below the floor the hints still do not outrank it
    weak = fclass("spec", sig("h", "spec words", 0.34, hint=True))
    assert run(make(bare, weak), "catch fails\nspec words").failure_class == "catch"
    # a catch-all with decisive evidence at the floor keeps outranking words
    proven = fclass("catch", sig("c", "catch fails", 0.8, hint=True), sig("d", "bug", 0.35), generic=True)
    assert run(make(proven, words), "catch fails\nbug\nspec words").failure_class == "catch"


def test_words_alone_in_a_log_of_progress_without_an_error_are_no_answer() -> None:
    words = fclass("spec", sig("h", "spec words", 0.6, hint=True), sig("w", "weak proof", 0.3))
    healthy = "step 10 loss 0.5\nspec words\nweak proof\nstep 20 loss 0.4"
    diagnosis = run(make(words), healthy)
    assert diagnosis.failure_class == "unknown"
    assert diagnosis.alternatives[0].failure_class == "spec"
    # an error line anywhere, or no progress at all, and the words are the answer again
    assert run(make(words), healthy + "\nRuntimeError: boom").failure_class == "spec"
    assert run(make(words), "spec words\nweak proof").failure_class == "spec"
    # evidence beyond the words reaching the floor (here 0.35) is an answer in a healthy log
    proof = fclass("spec", sig("h", "spec words", 0.6, hint=True), sig("w", "weak proof", 0.35))
    assert run(make(proof), healthy).failure_class == "spec"


def test_a_generic_winner_counts_other_catch_alls_as_rivals() -> None:
    c = make(one("catch", 0.9, generic=True), one("other", 0.6, generic=True))
    diagnosis = run(c, "catch fails\nother fails")
    assert (diagnosis.failure_class, diagnosis.confidence) == ("catch", 0.75)


def test_a_curve_class_steps_back_behind_a_catch_all_whose_decisive_evidence_came_after_all_of_its_lines() -> None:
    curve, catch = one("curvy", 0.9, judged_on_curves=True), one("catch", 0.7, generic=True)
    # the code crashed after everything the curve showed: the run failed on the crash, the curve's class is a rival
    after = run(make(catch, curve), "curvy fails\nstep 2\ncatch fails")
    assert after.failure_class == "catch"
    assert "curvy" in [a.failure_class for a in after.alternatives]
    # a crash before the curve's last line: the curve's class is a specific cause as ever
    assert run(make(catch, curve), "catch fails\ncurvy fails").failure_class == "curvy"
    # a catch-all with no decisive evidence (a bare traceback, a ^C) after the curve changes nothing
    bare = fclass("catch", sig("c", "catch fails", 0.8, hint=True), generic=True)
    assert run(make(bare, curve), "curvy fails\ncatch fails").failure_class == "curvy"
    # only curve classes step back: any other specific cause still outranks a later catch-all
    assert run(make(catch, one("spec", 0.9)), "spec fails\ncatch fails").failure_class == "spec"


def test_a_catch_all_answer_and_alternative_go_through_the_generic_curve_when_there_is_one() -> None:
    halved = Curve(((0.0, 0.0), (1.0, 0.5)))  # a bare traceback is right half as often as the raw score says
    c = make(one("catch", 0.9, generic=True), one("alpha", 0.4), diagnosis=LINEAR, generic=halved)
    catch = run(c, "catch fails")
    assert (catch.failure_class, catch.confidence) == ("catch", 0.45)  # 0.9 x 0.5, not 0.1 + 0.8 x 0.9
    specific = run(c, "alpha fails\ncatch fails")  # the specific cause outranks it: alpha on the diagnosis curve
    # raw 0.4 (the catch-all it outranked with decisive evidence is no rival) -> 0.42 on the diagnosis curve
    assert (specific.failure_class, specific.confidence) == ("alpha", 0.42)
    specific = run(
        make(one("catch", 0.9, generic=True), one("alpha", 0.6), diagnosis=LINEAR, generic=halved),
        "alpha fails\ncatch fails",
    )
    # the catch-all as an alternative, on its own curve: min(0.45, 0.58) x 0.9 = 0.405 (on the diagnosis curve:
    # 0.522), beside unknown's 0.21: the two share the 0.42 left (x 0.42 / 0.615)
    assert alt("catch", 0.277, "catch fails") in specific.alternatives
    weak = run(
        make(one("catch", 0.3, generic=True), generic=halved, unknown=Curve(((0.0, 0.0), (1.0, 1.0)))), "catch fails"
    )
    assert weak.failure_class == "unknown" and weak.alternatives == [alt("catch", 0.12, "catch fails")]  # 0.15 x 0.8
    floored = run(make(one("catch", 0.5, generic=True), diagnosis=LINEAR, generic=halved), "catch fails")
    assert floored.confidence == 0.35  # 0.25 on its curve: never below the decision floor
    without = run(make(one("catch", 0.9, generic=True), diagnosis=LINEAR), "catch fails")
    assert without.confidence == 0.82  # no generic curve: the diagnosis curve, 0.1 + 0.8 x 0.9


# ---- cascades ---------------------------------------------------------------------------------------------------


def cascade_log(primary: str, primary_replica: str, primary_at: float) -> list[LogLine]:
    return [
        line("step 10 loss 0.3", "workerpool0-0", 0),
        line(primary, primary_replica, primary_at),
        line("sec fails on rank 1", "workerpool1-0", 10),
        line("sec fails on rank 2", "workerpool1-1", 11),
        line("sec fails on rank 2 again", "workerpool1-1", 12),
    ]


def cascade_kb(primary_weight: float, *more: FailureClass) -> Classifier:
    return make(one("sec", 0.9, secondary=True), one("prim", primary_weight), *more)


def test_a_primary_failure_on_another_replica_before_the_secondary_one_is_the_diagnosis() -> None:
    diagnosis = cascade_kb(0.6).classify(cascade_log("prim fails", "workerpool0-0", 5))
    assert (diagnosis.failure_class, diagnosis.confidence) == ("prim", 0.6)  # a cascade is no rival
    assert diagnosis.first_failing_replica == "workerpool0-0"
    assert diagnosis.evidence == ["[workerpool0-0] prim fails"]
    assert diagnosis.cascade == ["workerpool1-0 (sec): sec fails on rank 1", "workerpool1-1 (sec): sec fails on rank 2"]
    # sec 0.6 x 0.9 = 0.54 and unknown 0.2 share the 0.4 left (x 0.4 / 0.74)
    assert diagnosis.alternatives == [alt("sec", 0.292, "sec fails on rank 1"), alt("unknown", 0.108)]
    assert diagnosis.details["task_name"] == "workerpool0-0"


def test_a_primary_failure_at_the_primary_floor_explains_the_secondary_one() -> None:
    at_floor = cascade_kb(0.5).classify(cascade_log("prim fails", "workerpool0-0", 5))
    assert at_floor.failure_class == "prim"
    # Below the floor it explains the symptom only from a replica that shows none of it (rule changed in the
    # ranking pass 2: the replica the others waited for is the one that failed; it was "sec" here before).
    below = cascade_kb(0.49).classify(cascade_log("prim fails", "workerpool0-0", 5))
    assert below.failure_class == "prim"
    echoed = cascade_log("prim fails", "workerpool0-0", 5) + [line("sec fails on rank 0", "workerpool0-0", 13)]
    assert cascade_kb(0.49).classify(echoed).failure_class == "sec"
    at_decision_floor = cascade_kb(0.35).classify(cascade_log("prim fails", "workerpool0-0", 5))
    assert at_decision_floor.failure_class == "prim"
    assert cascade_kb(0.34).classify(cascade_log("prim fails", "workerpool0-0", 5)).failure_class == "sec"


def test_a_later_primary_failure_explains_nothing_unless_it_is_strong() -> None:
    later = cascade_kb(0.74).classify(cascade_log("prim fails", "workerpool0-0", 20))
    # the secondary class stays; the primary class is its rival and its lines elsewhere are the cascade
    assert (later.failure_class, later.confidence) == ("sec", 0.715)  # 0.9 - 0.25 x 0.74
    assert later.first_failing_replica == "workerpool1-0"
    assert later.cascade == ["workerpool0-0 (prim): prim fails"]
    assert later.evidence == [
        "[workerpool1-0] sec fails on rank 1",
        "[workerpool1-1] sec fails on rank 2",
        "[workerpool1-1] sec fails on rank 2 again",
    ]
    strong = cascade_kb(0.75).classify(cascade_log("prim fails", "workerpool0-0", 20))
    assert strong.failure_class == "prim" and strong.first_failing_replica == "workerpool0-0"


def test_a_primary_failure_on_the_secondary_symptoms_own_replica_explains_nothing() -> None:
    same = cascade_kb(0.6).classify(cascade_log("prim fails", "workerpool1-0", 5))
    assert same.failure_class == "sec" and same.first_failing_replica == "workerpool1-0"
    assert same.cascade == []  # the primary class's only line is on the first failing replica


def test_the_earliest_primary_failure_explains_the_cascade_and_a_shared_line_goes_to_the_stronger_class() -> None:
    log = [
        line("late fails", "workerpool0-2", 2),
        line("prim fails", "workerpool0-0", 1),
        *cascade_log("both fails", "workerpool0-1", 3)[2:],
    ]
    c = cascade_kb(0.6, one("late", 0.7))
    assert c.classify(log).failure_class == "prim"
    shared = make(
        one("sec", 0.9, secondary=True),
        fclass("weaker", sig("w", "both fails", 0.6)),
        fclass("stronger", sig("s", "both fails", 0.7)),
        fclass("prim", sig("p", "prim fails", 0.55)),
    )
    log = [line("both fails", "workerpool0-0", 1), line("prim fails", "workerpool0-3", 2), *log[2:]]
    assert shared.classify(log).failure_class == "stronger"


def test_a_specific_primary_failure_explains_the_cascade_before_an_earlier_catch_all() -> None:
    # the traceback header before an OOM line is the same failure: the specific class explains the timeouts
    c = make(one("sec", 0.9, secondary=True), one("catch", 0.8, generic=True), one("prim", 0.6))
    log = [
        line("catch fails", "workerpool0-0", 1),
        line("prim fails", "workerpool0-0", 2),
        *cascade_log("x", "w", 3)[2:],
    ]
    assert c.classify(log).failure_class == "prim"
    # with no specific candidate the catch-all still explains the cascade
    alone = make(one("sec", 0.9, secondary=True), one("catch", 0.8, generic=True))
    assert alone.classify(log).failure_class == "catch"


def test_a_secondary_class_never_explains_another_secondary_class() -> None:
    c = make(one("sec", 0.9, secondary=True), one("echo", 0.8, secondary=True))
    log = [
        line("echo fails", "workerpool0-0", 1),
        line("sec fails", "workerpool1-0", 5),
        line("sec fails", "workerpool1-1", 6),
    ]
    diagnosis = c.classify(log)
    assert (diagnosis.failure_class, diagnosis.confidence) == ("sec", 0.7)  # the other secondary class is a rival
    assert diagnosis.first_failing_replica == "workerpool1-0"
    assert diagnosis.cascade == ["workerpool0-0 (echo): echo fails"]


def test_a_primary_class_with_no_lines_explains_no_cascade() -> None:
    spot = fclass("prim", sig("on_spot", None, 0.8, facts=["spot"]))
    c = make(one("sec", 0.9, secondary=True), spot)
    job = JobInfo(job_id="9", project="acme-ml", spot=True)
    diagnosis = c.classify(cascade_log("step 11", "workerpool0-0", 5), job)
    assert (diagnosis.failure_class, diagnosis.confidence) == ("sec", 0.7)
    # prim 0.7 x 0.9 = 0.63 and unknown 0.15 share the 0.3 left (x 0.3 / 0.78)
    assert diagnosis.alternatives == [alt("prim", 0.242), alt("unknown", 0.058)]


def test_a_strong_primary_explains_a_secondary_class_seen_only_in_the_facts() -> None:
    secondary_fact = fclass("sec", sig("on_spot", None, 0.9, facts=["spot"]), secondary=True)
    c = make(secondary_fact, one("prim", 0.75), one("weak", 0.6))
    job = JobInfo(job_id="9", project="acme-ml", spot=True)
    assert c.classify([line("prim fails", "workerpool0-0", 5)], job).failure_class == "prim"
    assert c.classify([line("weak fails", "workerpool0-0", 5)], job).failure_class == "sec"


def test_the_cascade_gathers_every_other_class_seen_on_the_other_replicas() -> None:
    c = make(one("sec", 0.9, secondary=True), one("echo", 0.6, secondary=True), one("prim", 0.8))
    log = [
        line("prim fails", "workerpool0-0", 1),
        line("sec fails", "workerpool1-0", 5),
        line("echo fails", "workerpool1-1", 6),
        line("echo fails", "workerpool0-0", 7),
    ]
    diagnosis = c.classify(log)
    assert diagnosis.failure_class == "prim"
    assert diagnosis.cascade == ["workerpool1-0 (sec): sec fails", "workerpool1-1 (echo): echo fails"]


def test_no_cascade_between_two_primary_classes_and_at_most_ten_cascade_lines() -> None:
    two = make(one("alpha", 0.9), one("beta", 0.6))
    log = [line("alpha fails", "workerpool0-0", 1), line("beta fails", "workerpool0-1", 2)]
    assert two.classify(log).cascade == []
    c = make(one("sec", 0.9, secondary=True), one("prim", 0.8))
    log = [line("prim fails", "workerpool0-0", 1)]
    log += [line(f"sec fails {n}", f"workerpool1-{n}", 10 + n) for n in range(12)]
    diagnosis = c.classify(log)
    assert diagnosis.failure_class == "prim"
    assert diagnosis.cascade == [f"workerpool1-{n} (sec): sec fails {n}" for n in range(10)]


# ---- locating signals -------------------------------------------------------------------------------------------


def test_min_count_counts_lines_not_matches_and_unless_lines_do_not_count() -> None:
    c = make(fclass("alpha", sig("a", "boom", 0.9, min_count=2, unless="harmless")))
    assert run(c, "boom boom boom").failure_class == "unknown"
    assert run(c, "boom\nharmless boom\nall good").failure_class == "unknown"
    diagnosis = run(c, "boom once\nharmless boom\nboom twice")
    assert diagnosis.failure_class == "alpha"
    assert diagnosis.evidence == ["boom once", "boom twice"]


def test_case_sensitive_signals_match_only_their_case() -> None:
    c = make(fclass("alpha", sig("a", "NCCL error", 0.9, case_sensitive=True)), one("beta", 0.5))
    assert run(c, "nccl error").failure_class == "unknown"
    assert run(c, "NCCL error").failure_class == "alpha"
    assert run(c, "BETA FAILS").failure_class == "beta"  # the others ignore case


def test_named_groups_become_details_first_value_first_and_sets_win() -> None:
    capture = sig("a", r"bucket=(?P<bucket>\w*) zone=(?P<zone>\S+)", 0.9)
    c = make(fclass("alpha", capture, sig("b", "region (?P<region>[a-z0-9-]+)", 0.5, sets={"region": "fixed"})))
    diagnosis = run(c, "bucket= zone=us-a\nbucket=first zone=us-b\nbucket=second zone=us-c\nregion eu-west4")
    assert {k: diagnosis.details[k] for k in ("bucket", "zone", "region")} == {
        "bucket": "first",
        "zone": "us-a",
        "region": "fixed",
    }


def test_a_signal_is_located_across_chunks_up_to_500_lines() -> None:
    # 700 matching lines with timestamps running backwards after the 500th: the first failing replica is the
    # earliest of the lines located, and only 500 are located
    log = [line(f"alpha fails at step {n}", f"workerpool0-{n}", 1000 - n if n >= 500 else 1000 + n) for n in range(700)]
    diagnosis = make(one("alpha", 0.9)).classify(log)
    assert diagnosis.first_failing_replica == "workerpool0-0"  # the earliest of the 500 lines located
    assert diagnosis.evidence == [f"[workerpool0-{n}] alpha fails at step {n}" for n in range(3)]
    shifted = make(one("alpha", 0.9)).classify(log[1:])
    assert shifted.first_failing_replica == "workerpool0-500"  # now the 500th line: located, and the earliest


def test_a_long_log_finds_signals_in_later_chunks_in_signal_order() -> None:
    filler = [f"step {n} loss {n / 1000:.3f} lr 0.0003 throughput 812 samples/s" for n in range(300)]
    c = make(fclass("alpha", sig("first", "(?P<what>late) fails", 0.7), sig("second", "(?P<what>early) one", 0.7)))
    diagnosis = run(c, "\n".join(["early one", *filler, "late fails", *filler]))
    assert diagnosis.failure_class == "alpha" and diagnosis.confidence == 0.91
    assert diagnosis.evidence == ["early one", "late fails"]
    assert diagnosis.details["what"] == "late"  # equal weights: the signal listed first captures first


def test_a_pattern_spanning_lines_is_found_wherever_the_chunks_of_the_log_end() -> None:
    # a two-line pattern whose first line ends each chunk in turn: the set sees it whole (chunks reach into the
    # next), and the overlap never locates a line twice
    c = make(fclass("alpha", sig("two", r"alpha begins[^\n]*\n[^\n]*alpha ends", 0.9, min_count=2)))
    for shift in range(0, 40):
        filler = [f"step {n} loss {n / 1000:.3f} lr 0.0003" for n in range(shift)]
        body = [f"step {n} loss {n / 1000:.3f} lr 0.0003 throughput 812 samples/s" for n in range(60)]
        log = [*filler, *body[:25], "alpha begins (1)", "then alpha ends", *body[25:], "alpha begins (2)", "alpha ends"]
        diagnosis = run(c, "\n".join(log))
        assert diagnosis.failure_class == "alpha", shift
        assert diagnosis.evidence == ["alpha begins (1)", "alpha begins (2)"], shift


def test_fact_signals_need_their_facts_and_none_of_their_unless_facts() -> None:
    c = make(
        fclass("alpha", sig("on_spot", None, 0.6, facts=["spot"], unless_facts=["multi_replica"], sets={"k": "v"}))
    )
    spot = JobInfo(job_id="1", project="acme-ml", spot=True)
    diagnosis = run(c, "step 3 loss 0.2", spot)
    assert (diagnosis.failure_class, diagnosis.confidence, diagnosis.evidence) == ("alpha", 0.6, [])
    assert diagnosis.details["k"] == "v" and diagnosis.finding is None
    two = [line("step 3 loss 0.2", "workerpool0-0"), line("step 3 loss 0.2", "workerpool0-1")]
    assert c.classify(two, spot).failure_class == "unknown"
    assert run(c, "step 3 loss 0.2", spot.model_copy(update={"spot": False})).failure_class == "unknown"
    patterned = make(fclass("alpha", sig("p", "alpha fails", 0.6, unless_facts=["spot"])))
    assert run(patterned, "alpha fails", spot).failure_class == "unknown"
    assert run(patterned, "alpha fails").failure_class == "alpha"


def test_a_curve_finding_is_the_finding_and_its_lines_the_evidence_unless_the_signal_is_a_hint() -> None:
    text = "epoch,train_loss,val_loss\n1,1.20,1.10\n2,0.80,0.90\n3,0.50,0.85\n4,0.30,0.95\n5,0.15,1.20\n6,0.08,1.45"
    curve = make(fclass("alpha", sig("rising", None, 0.8, facts=["val_loss_rising"])))
    diagnosis = run(curve, text)
    assert diagnosis.failure_class == "alpha"
    assert diagnosis.finding is not None and diagnosis.finding.startswith("val_loss best 0.85 at epoch 3")
    assert diagnosis.details["curve"] == diagnosis.finding
    assert "3,0.50,0.85" in diagnosis.evidence and "6,0.08,1.45" in diagnosis.evidence
    hint = make(fclass("alpha", sig("rising", None, 0.8, facts=["val_loss_rising"], hint=True)))
    hinted = run(hint, text)
    assert hinted.failure_class == "alpha" and hinted.finding is None and "curve" not in hinted.details
    assert "3,0.50,0.85" in hinted.evidence


def test_an_at_end_signal_counts_only_on_the_log_s_last_line() -> None:
    c = make(fclass("alpha", sig("ended", r"stalled at \w+", 0.8, at_end=True)))
    ended = run(c, "step 1 loss 0.9\nstalled at barrier\n")
    assert ended.failure_class == "alpha" and ended.evidence == ["stalled at barrier"]
    # the same words followed by more of the run: the job did not end there
    assert run(c, "stalled at barrier\nstep 2 loss 0.8\n").failure_class == "unknown"
    # the platform's own lifecycle lines after it are not what the job printed
    lifecycle = [line("stalled at barrier", "workerpool0-0", 1.0), line("Job failed.", "service", 2.0)]
    assert c.classify(lifecycle).failure_class == "alpha"
    # an earlier match does not count for the last one's line: only the last line is evidence
    twice = run(c, "stalled at start\nstep 1 loss 0.9\nstalled at barrier\n")
    assert twice.evidence == ["stalled at barrier"]


def test_an_ends_training_signal_does_not_count_once_training_printed_values_on_three_later_lines() -> None:
    c = make(fclass("alpha", sig("stopped", r"ran out of batches", 0.9, ends_training=True)))
    words = "epoch 1 loss 0.90\nran out of batches; stopping\n"
    assert run(c, words + "epoch 2 loss 0.80\nepoch 3 loss 0.70\n").failure_class == "alpha"  # two lines after it
    outlived = run(c, words + "epoch 2 loss 0.80\nepoch 3 loss 0.70\nepoch 4 loss 0.60\n")
    assert outlived.failure_class == "unknown" and "ran out of batches; stopping" not in outlived.evidence
    # the same signal without the flag counts wherever it stands
    plain = make(fclass("alpha", sig("stopped", r"ran out of batches", 0.9)))
    assert run(plain, words + "epoch 2 loss 0.80\nepoch 3 loss 0.70\nepoch 4 loss 0.60\n").failure_class == "alpha"


# ---- what the classifier reads ----------------------------------------------------------------------------------


def test_the_jobs_error_message_is_read_as_service_lines_at_the_jobs_end_time() -> None:
    c = make(one("alpha", 0.9))
    job = JobInfo(
        job_id="12",
        project="acme-ml",
        error_message="alpha fails in workerpool0-0\n\n   \nThe replica workerpool0-0 exited.",
        end_time=T0 + timedelta(seconds=5),
    )
    diagnosis = c.classify([line("alpha fails", "workerpool0-3", 10)], job)
    assert diagnosis.evidence == ["[workerpool0-3] alpha fails", "alpha fails in workerpool0-0"]
    assert diagnosis.first_failing_replica == "workerpool0-0"  # the service line came first (t=5)
    only_job = c.classify([], job)
    assert only_job.evidence == ["alpha fails in workerpool0-0"]


def test_blank_lines_are_dropped_and_multi_line_entries_split() -> None:
    c = make(fclass("alpha", sig("a", "^alpha fails$", 0.9)))
    lines = [
        LogLine(text="   ", job_id="ghost-job", project_id="ghost-project"),
        line("alpha fails\nsecond part", "workerpool0-1", 3),
        line("step 3\ralpha fails", "workerpool0-2", 4),
        line("plain", "workerpool0-3", 5),
    ]
    diagnosis = c.classify(lines)
    assert diagnosis.evidence == ["[workerpool0-1] alpha fails", "[workerpool0-2] alpha fails"]
    assert diagnosis.first_failing_replica == "workerpool0-1"
    assert "job_id" not in diagnosis.details and "project" not in diagnosis.details


def test_classify_uses_the_given_knowledge_base_or_the_bundled_one() -> None:
    kb = make(one("alpha", 0.9)).kb
    lines = text_to_lines("alpha fails\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB")
    assert classify(lines, kb=kb).failure_class == "alpha"
    job = JobInfo(job_id="8", project="acme-ml", error_message="alpha fails")
    assert classify([], job, kb=kb).evidence == ["alpha fails"]  # the job's error message is read too
    assert classify([], job, kb=kb).details == {"job_id": "8", "project": "acme-ml"}
    assert classify(lines).failure_class == "accelerator_oom"
    assert classifier_module._default is not None and classify(lines).failure_class == "accelerator_oom"


# ---- the text model's alternatives ------------------------------------------------------------------------------


def text_model() -> TextModel:
    """Classes alpha, beta, gamma, delta (not in the knowledge bases here) and unknown; one word each."""
    classes = ("alpha", "beta", "gamma", "delta", "unknown")
    words = {"alphaword": 0, "betaword": 1, "gammaword": 2, "deltaword": 3, "unknownword": 4}
    terms = {word: (1.0, tuple(3.0 if i == column else 0.0 for i in range(5))) for word, column in words.items()}
    return TextModel(classes, (0.0, 0.0, 0.0, 0.0, 0.0), terms, re.compile(r"[a-z_]+"))


def test_the_text_model_fills_the_alternatives_with_a_line_of_their_own() -> None:
    model = text_model()
    c = make(one("alpha", 0.9), one("beta", 0.2), one("gamma", 0.2), model=model)
    text = (
        "unknownword unknownword deltaword deltaword\n"
        "gammaword gammaword gammaword betaword  password=s3cret\nalpha fails"
    )
    probabilities = model.probabilities(text)
    # unknown and delta (no class of the knowledge base) outrank beta and are skipped; so is the answer
    assert probabilities["gamma"] > probabilities["unknown"] == probabilities["delta"] > probabilities["beta"] > 0.05
    diagnosis = run(c, text)
    assert diagnosis.failure_class == "alpha" and diagnosis.confidence == 0.9
    supporting = "gammaword gammaword gammaword betaword  password=[REDACTED]"
    gamma, beta = (round(0.5 * probabilities[name], 3) for name in ("gamma", "beta"))
    share = min(1.0, 0.1 / (gamma + beta))  # the two share the 0.1 the answer leaves, in proportion
    assert gamma + beta > 0.1  # (so the share is taken)
    assert diagnosis.alternatives == [
        alt("gamma", round(gamma * share, 3), supporting, "text model"),
        alt("beta", round(beta * share, 3), supporting, "text model"),
    ]


def test_the_rules_alternatives_come_first_and_the_model_adds_up_to_two() -> None:
    model = text_model()
    c = make(one("alpha", 0.99), one("beta", 0.6), one("gamma", 0.2), model=model)
    text = "gammaword betaword\nbeta fails\nalpha fails"
    diagnosis = run(c, text)
    gamma = round(0.5 * model.probabilities(text)["gamma"], 3)
    # the answer: 0.99 - 0.25 x 0.6 = 0.84; beta 0.6 x 0.9 and gamma share the 0.16 it leaves
    assert diagnosis.confidence == 0.84
    share = 0.16 / (0.54 + gamma)
    assert diagnosis.alternatives == [  # beta, as likely to the model, is listed once
        alt("beta", round(0.54 * share, 3), "beta fails"),
        alt("gamma", round(gamma * share, 3), "gammaword betaword", "text model"),
    ]
    full = run(make(one("alpha", 0.99), one("beta", 0.6), one("gamma", 0.5), model=model), text + "\ngamma fails")
    assert [a.source for a in full.alternatives] == ["rules", "rules"]


def test_the_model_names_no_class_below_5_percent_and_none_without_a_line() -> None:
    model = text_model()
    text = "gammaword betaword\nalpha fails"

    def shifted(beta_intercept: float) -> TextModel:
        """gamma likeliest, but no line speaks for it (its word counts against it)."""
        return TextModel(
            model.classes,
            (0.0, beta_intercept, 3.0, 0.0, 0.0),
            {**model.terms, "gammaword": (1.0, (0.0, 0.0, -1.0, 0.0, 0.0))},
            model.token_pattern,
        )

    rare = shifted(-4.0).probabilities(text)
    assert rare["gamma"] > 0.5 and 0.0 < rare["beta"] < 0.05
    silent = make(one("alpha", 0.9), one("beta", 0.2), one("gamma", 0.2), model=shifted(-4.0))
    assert run(silent, text).alternatives == []
    likely = shifted(0.0).probabilities(text)
    assert likely["gamma"] > likely["beta"] > 0.05
    diagnosis = run(make(one("alpha", 0.9), one("beta", 0.2), one("gamma", 0.2), model=shifted(0.0)), text)
    beta = round(0.5 * likely["beta"], 3)
    shown = round(beta * min(1.0, 0.1 / beta), 3)  # no more than the 0.1 the answer (0.9) leaves
    assert diagnosis.alternatives == [alt("beta", shown, "gammaword betaword", "text model")]
    plain = make(one("alpha", 0.9), one("beta", 0.2), one("gamma", 0.2), model=model)
    assert run(plain, "alpha fails").alternatives == []  # no word of the model's: 20% each, no supporting line


def test_the_model_reads_the_last_400_lines_and_fills_an_unknown_answers_alternatives() -> None:
    c = make(one("alpha", 0.9), one("beta", 0.2), one("gamma", 0.2), model=text_model())
    lines = [f"step {n} loss 0.5" for n in range(450)]
    lines[30] = "betaword"  # outside the last 400 lines
    lines[100] = "gammaword"
    diagnosis = run(c, "\n".join(lines))
    assert diagnosis.failure_class == "unknown"
    assert [(a.failure_class, a.evidence, a.source) for a in diagnosis.alternatives] == [
        ("gamma", "gammaword", "text model")
    ]
    assert c.classify([]).alternatives == []


@pytest.mark.parametrize("weight", [0.9, 0.3])
def test_the_model_never_lists_the_answer_or_unknown(weight: float) -> None:
    c = make(one("alpha", weight), one("beta", 0.2), model=text_model())
    diagnosis = run(c, "alphaword unknownword\nalpha fails")
    assert all(a.source == "rules" for a in diagnosis.alternatives)


def test_hint_words_on_a_healthy_info_line_are_chatter() -> None:
    words = fclass("spec", sig("h", "spec words", 0.5, hint=True))
    # an INFO/DEBUG line (Python logging, glog, NCCL) without an error word: no evidence
    for chatter in (
        "INFO:root:loading spec words",
        "I0423 06:47:26.398192 1 a.py:1] spec words",
        "x NCCL INFO spec words",
        "  Normal   Started    2m    kubelet    spec words",  # a Kubernetes event of type Normal
    ):
        assert run(make(words), chatter).failure_class == "unknown", chatter
    assert run(make(words), "  Warning  Failed     2m    kubelet    spec words").failure_class == "spec"
    # the same words with an error word, or on a line without a level marker, count
    assert run(make(words), "INFO:root:spec words failed").failure_class == "spec"
    assert run(make(words), "spec words").failure_class == "spec"
    # decisive signals are not affected
    assert run(make(one("spec", 0.6)), "INFO:root:spec fails").failure_class == "spec"


def test_hint_words_all_before_the_curve_training_then_logged_are_chatter() -> None:
    words = fclass("spec", sig("h", "spec words", 0.5, hint=True), sig("w", "other hint", 0.4, hint=True))
    curve = [f"epoch {n} loss: {2.0 - n / 10:.2f}" for n in range(1, 7)]
    # the words, then six epochs of a falling loss and no clean end: the run went on past them
    assert run(make(words), "\n".join(["spec words failed", "other hint", *curve])).failure_class == "unknown"
    # one of them after the curve began, or no curve at all: they count
    late = ["spec words failed", *curve[:3], "other hint", *curve[3:]]
    assert run(make(words), "\n".join(late)).failure_class == "spec"
    assert run(make(words), "spec words failed\nother hint").failure_class == "spec"
    # decisive evidence before the curve is not affected
    assert run(make(one("spec", 0.6)), "\n".join(["spec fails", *curve])).failure_class == "spec"


def test_the_first_failing_replica_s_own_ranking_names_the_primary_cause() -> None:
    # on workerpool0-0 a frame names "early" before the line that proves "prim"; prim outranks early there
    c = cascade_kb(0.9, one("early", 0.8))
    log = [
        line("early fails in a frame", "workerpool0-0", 4),
        line("prim fails", "workerpool0-0", 5),
        *cascade_log("x", "workerpool0-0", 5)[2:],
    ]
    assert c.classify(log).failure_class == "prim"


def test_the_secondary_class_s_words_on_the_primary_s_replica_are_no_symptom_there() -> None:
    sec = fclass("sec", sig("s", "sec fails", 0.9), sig("w", "sec words", 0.4, hint=True), secondary=True)
    c = make(sec, one("prim", 0.6))
    log = [line("prim fails with sec words", "workerpool0-0", 5), *cascade_log("x", "workerpool0-0", 5)[2:]]
    diagnosis = c.classify(log)
    assert (diagnosis.failure_class, diagnosis.first_failing_replica) == ("prim", "workerpool0-0")


def test_the_fitted_calibration_always_rises_in_the_share_it_states() -> None:
    """A large bin nearly all right before a small bin all right: pooled on the plain share they stay apart
    (140/141 < 25/25), but the stated (Laplace) shares would fall (0.986 then 0.963). The fit pools them."""
    from bot.diagnosis.calibration import fit_isotonic

    pairs = [(0.5 + i / 1000, i != 140) for i in range(141)] + [(0.9 + i / 1000, True) for i in range(25)]
    points = fit_isotonic(pairs, min_bin=10)
    stated = [share for _, share in points]
    assert stated == sorted(stated) and len(set(stated)) == len(stated), points
    assert Curve(tuple((x, y) for x, y in points))  # a curve the loader accepts
    loose = [(0.1 + i / 100, i % 2 == 0) for i in range(40)] + [(0.8 + i / 100, True) for i in range(40)]
    low, high = fit_isotonic(loose, min_bin=10)[0][1], fit_isotonic(loose, min_bin=10)[-1][1]
    assert low < 0.6 < high  # it still separates a half-right bin from an all-right one


def test_the_calibration_fit_never_splits_answers_given_the_same_score() -> None:
    """Many answers share one raw score (a signal's weight). Sorted with their outcome they would fill bins wrong
    ones first, then right ones: one score would state every share from 0 to 1 and its neighbours' points would
    lean on that split. All answers at one score are one group, so the curve states their share right there."""
    from bot.diagnosis.calibration import fit_isotonic

    pairs = [(0.6, i % 4 == 0) for i in range(40)] + [(0.9, i % 4 != 0) for i in range(200)]
    pairs += [(0.95, True) for _ in range(30)]
    points = fit_isotonic(pairs, min_bin=15)
    assert [x for x, _ in points] == sorted({x for x, _ in points}), points  # one point per score at most
    curve = Curve(tuple((x, y) for x, y in points))
    assert abs(curve(0.9) - 151 / 202) < 0.01, points  # 150 of 200 right, with the Laplace one right, one wrong
    assert curve(0.6) < 0.3 and curve(0.95) > 0.9, points  # its neighbours keep their own shares


def test_words_in_a_tracebacks_quoted_source_count_only_for_signals_that_allow_it() -> None:
    from bot.diagnosis.class_scores import Hit
    from bot.diagnosis.knowledge_schema import Signal
    from bot.diagnosis.signal_lines import locate
    from bot.intake.log_document import LogDocument
    from bot.intake.log_input import text_to_lines

    text = (
        "Traceback (most recent call last):\n"
        '  File "/work/export.py", line 41, in publish\n'
        '    target = open_store(spec["container"])\n'
        "RuntimeError: container store is read-only\n"
    )
    doc = LogDocument(text_to_lines(text))
    whole = [(0, len(doc.data))]

    def lines(in_quoted_source: bool) -> list[int]:
        signal = Signal(
            name="words", pattern=r"\bcontainer\b", hint=True, weight=0.3, in_quoted_source=in_quoted_source
        )
        hit = locate(doc, signal, whole, {})
        return hit.lines if isinstance(hit, Hit) else []

    assert lines(True) == [2, 3]  # the quoted source line and the exception line
    assert lines(False) == [3]  # the program's code is not what the run printed
    # IPython's traceback numbers the source lines it quotes (the failing one behind an arrow)
    ipython = (
        "/work/export.py in publish(spec)\n"
        '     40     store = None\n'
        '---> 41     target = open_store(spec["container"])\n'
        "RuntimeError: container store is read-only\n"
        "12   container  0.51\n"  # a table row that opens on its number (no indent, no arrow): printed output
    )
    doc = LogDocument(text_to_lines(ipython))
    whole = [(0, len(doc.data))]
    assert lines(True) == [2, 3, 4]
    assert lines(False) == [3, 4]


# ---- curve classes: `unknown` beside their answers, leads on a curve no finding judged --------------------------

HEALTHY_CURVE = "\n".join(f"epoch {e} loss: {1 - e / 10:.2f} val_loss: {1.1 - e / 20:.2f}" for e in range(1, 6))


def test_a_curve_class_answer_lists_unknown_however_sure_it_is() -> None:
    c = make(one("alpha", 0.9), one("curvy", 0.9, judged_on_curves=True))
    assert run(c, "alpha fails").alternatives == []  # sure: no `unknown` beside a matched cause
    curve = run(c, "curvy fails")
    assert (curve.failure_class, curve.confidence) == ("curvy", 0.9)
    assert curve.alternatives == [alt("unknown", 0.05)]  # (1 - 0.9) / 2: a healthy curve stays a reading of it


def test_an_unknown_answer_on_an_unjudged_curve_lists_the_curve_classes_at_their_calibrated_shares() -> None:
    curve_classes = [one("curvy", 0.9, judged_on_curves=True), one("bumpy", 0.9, judged_on_curves=True)]
    leads = Calibration(curve_leads={"curvy": 0.07, "bumpy": 0.04, "gone": 0.5})  # a class not in the KB: no lead
    c = Classifier(KnowledgeBase([one("alpha", 0.3), *curve_classes, UNKNOWN_CLASS], leads, {}, None))
    said = "val_loss logged 5 times: 1.05 at epoch 1, 0.85 at epoch 5"
    healthy = run(c, HEALTHY_CURVE)
    assert healthy.failure_class == "unknown"
    assert healthy.alternatives == [alt("curvy", 0.07, said, "curve"), alt("bumpy", 0.04, said, "curve")]
    # two alternatives at most (with the answer, a top 3), best first: the rule's 0.3 x 0.8 = 0.24, shown at 0.95
    # of the answer's 0.225, then the likelier lead
    assert run(c, HEALTHY_CURVE + "\nalpha fails").alternatives == [
        alt("alpha", 0.214, "alpha fails"),
        alt("curvy", 0.07, said, "curve"),
    ]
    assert run(c, "alpha fails").alternatives == [alt("alpha", 0.214, "alpha fails")]  # no curve: no lead
    # a curve class the rules already list is not listed twice
    weak_curvy = Classifier(
        KnowledgeBase([one("curvy", 0.2, judged_on_curves=True), curve_classes[1], UNKNOWN_CLASS], leads, {}, None)
    )
    assert run(weak_curvy, HEALTHY_CURVE + "\ncurvy fails").alternatives == [
        alt("curvy", 0.16, "curvy fails"),
        alt("bumpy", 0.04, said, "curve"),
    ]


def test_curve_leads_only_fill_the_room_the_rules_and_the_text_model_left() -> None:
    model = text_model()
    leads = Calibration(curve_leads={"curvy": 0.3})  # more than beta's half-probability: room, not rank, decides
    kb = KnowledgeBase([one("beta", 0.2), one("gamma", 0.2), one("curvy", 0.9, judged_on_curves=True), UNKNOWN_CLASS])
    kb.calibration, kb.text_model = leads, model
    c = Classifier(kb)
    words = "gammaword gammaword betaword"
    diagnosis = run(c, HEALTHY_CURVE + "\n" + words)
    assert diagnosis.failure_class == "unknown"
    assert [(a.failure_class, a.source) for a in diagnosis.alternatives] == [
        ("gamma", "text model"),
        ("beta", "text model"),
    ]
    assert diagnosis.alternatives[1].confidence < 0.3  # beta, below the lead's share, still keeps its place
    one_word = run(c, HEALTHY_CURVE + "\ngammaword gammaword")
    listed = [(a.failure_class, a.source, a.confidence) for a in one_word.alternatives]
    # best first; the lead's 0.3 shown at 0.95 of the answer's 0.3
    assert sorted(listed) == [("curvy", "curve", 0.285), ("gamma", "text model", listed[0][2])]


def test_an_unknown_answer_keeps_its_leads_own_figures() -> None:
    # `unknown` is calibrated on its best lead's figure (0.8 x the raw score; benchmarks/fit_calibration.py reads it
    # back): its leads are not shared out of what it leaves, as a class answer's alternatives are
    c = make(one("alpha", 0.349), one("beta", 0.345), unknown=Curve(((0.0, 0.9), (1.0, 0.9))))
    diagnosis = run(c, "beta fails\nalpha fails")
    assert (diagnosis.failure_class, diagnosis.confidence) == ("unknown", 0.45)  # at its cap
    # 0.8 x each raw score (both under the floor): together 0.555, above the 0.55 the answer leaves
    assert diagnosis.alternatives == [alt("alpha", 0.279, "alpha fails"), alt("beta", 0.276, "beta fails")]
