"""classify(lines, job) -> Diagnosis, against the knowledge base.

How a decision is made:
1. Every signal of every class is matched against the job's log (one RE2 pass finds which patterns occur at
   all; only those are located line by line) and against the job's facts (bot.diagnosis.facts).
2. A class's score is the noisy-OR of its matched signals' weights: independent evidence adds up, but no
   pile of weak hints reaches the certainty of one decisive line.
3. Cascades: a "secondary" class (collective timeouts, rendezvous failures) loses to a primary failure found
   in the same job (bot.diagnosis.cascade); the primary failure's first replica is the diagnosis, the rest is
   reported as cascade.
4. Confidence is the winner's score, reduced by how strong the runner-up is. Below a floor the answer is
   `unknown` with low confidence: never a confident guess - unless the text model's words clearly name a class
   (bot.diagnosis.words.word_evidence), or else a printed curve no rule judged has the clear shape of underfitting or
   overfitting (bot.diagnosis.shape): that answer says so (`basis="words"`, `basis="shape"`) and stays below a rule's
   confidence. Where the rules read a curve whose whole shape the shape model reads as a healthy run's, the rules'
   answer stands at the lower confidence such answers earned on curves the model had not seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import attrgetter
from typing import Literal

import re2

from bot.diagnosis.cascade import primary_cause
from bot.diagnosis.class_scores import DECISION_FLOOR, ClassResult, Hit, facts_allow
from bot.diagnosis.curves.finding import Finding
from bot.diagnosis.diagnosis_assembly import (
    MAX_EVIDENCE,
    build_diagnosis,
    cascade_lines,
    evidence_lines,
    first_replica_of,
    gather_details,
    variant_of,
)
from bot.diagnosis.facts import CURVE_READ, LAST_RUN, LIMIT_STOP, LOG_END, TRAINED_ON, JobFacts, derive_facts
from bot.diagnosis.knowledge import KnowledgeBase
from bot.diagnosis.knowledge_schema import UNKNOWN, FailureClass, Signal
from bot.diagnosis.shape.answer import doubted_confidence, shape_answer
from bot.diagnosis.signal_lines import locate
from bot.diagnosis.words.word_evidence import ALTERNATIVES, WordAnswer, WordReader
from bot.intake.log_document import LogDocument
from bot.models import Alternative, Diagnosis, JobInfo, LogLine
from bot.render.redact import redact

UNSURE = 0.8  # below this confidence, `unknown` is listed among the alternatives
DOUBT_NOTE = "; yet the curve's whole shape is like a healthy run's, so this reading is less sure"
UNKNOWN_CAP = 0.45  # "nothing known is wrong" is never said with confidence: the decisive line may be missing
_TEXT = attrgetter("text")
CHUNK_BYTES = 1_024  # the log is searched for the knowledge base's patterns in pieces of this size
CHUNK_OVERLAP_LINES = 4  # lines each piece reaches into the next: the longest multi-line pattern spans fewer


# the evidence of an answer from words: the lines whose words speak for the class (never a matched pattern)
WORDS = Signal.model_construct(name="text_model_words", weight=0.0, hint=True)
# the evidence of an answer from a curve's shape: the points its sentence names
SHAPE = Signal.model_construct(name="shape_model_curve", weight=0.0, hint=True)
DFA_MEMORY_BUDGET = 64 << 20  # bytes RE2 may use for the signal set's compiled program and DFA cache


class Classifier:
    """Holds the compiled knowledge base; `classify` is pure and thread-safe."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._pattern_signals: list[tuple[FailureClass, Signal]] = []
        self._fact_signals: list[tuple[FailureClass, Signal]] = []
        options = re2.Options()
        options.never_capture = True
        # The set's DFA holds every signal at once; with RE2's default 8 MiB budget a knowledge base of ~200
        # patterns (bounded repeats such as [^\n]{0,160} multiply states) runs out and RE2 falls back to a
        # matcher ten times slower on noisy logs (benchmarks/bench_classifier.py: 520 ms -> 50 ms at 5,000 lines).
        options.max_mem = DFA_MEMORY_BUDGET
        self._set = re2.Set.SearchSet(options)
        for failure_class in kb:
            for signal in failure_class.signals:
                if signal.pattern is None:
                    self._fact_signals.append((failure_class, signal))
                    continue
                flags = "(?m)" if signal.case_sensitive else "(?mi)"
                index = self._set.Add(flags + signal.pattern)
                assert index == len(self._pattern_signals)
                self._pattern_signals.append((failure_class, signal))
        self._set.Compile()

    def classify(self, lines: Sequence[LogLine], job: JobInfo | None = None) -> Diagnosis:
        doc = document(lines, job)
        job_facts = derive_facts(doc, job)
        facts, findings = job_facts.names, job_facts.findings
        results = {c.id: ClassResult(c) for c in self.kb}

        # Which signals occur in which chunk: one RE2 set pass over the log, then each signal is located only
        # inside the chunks where it occurs (a pattern scan of the whole log per signal costs far more). Each chunk
        # reaches a few lines into the next, so that a pattern spanning lines is seen whole; a signal's adjacent or
        # overlapping chunks are merged into one range and scanned once.
        where: dict[int, list[tuple[int, int]]] = {}
        for span in doc.chunks(CHUNK_BYTES, CHUNK_OVERLAP_LINES) if doc.data else ():
            for index in self._set.Match(doc.data[span[0] : span[1]]) or ():
                spans = where.setdefault(index, [])
                if spans and span[0] <= spans[-1][1]:
                    spans[-1] = (spans[-1][0], span[1])
                else:
                    spans.append(span)
        run_start = findings[LAST_RUN].lines[0] if LAST_RUN in findings else 0  # an earlier run's lines end before it
        log_end = findings[LOG_END].lines[0] if LOG_END in findings else -1
        trained_on = findings[TRAINED_ON].lines[0] if TRAINED_ON in findings else -1
        outlived: set[int] = set()  # lines that said training stopped, which the run outlived: no class's words
        chatter: dict[str, bool] = {}  # a line's text -> whether it is chatter, for every hint signal that matched it
        for index in sorted(where):
            failure_class, signal = self._pattern_signals[index]
            if not facts_allow(signal, facts):
                continue
            hit = locate(doc, signal, where[index], chatter)
            if hit is not None and signal.at_end:  # what the log ended on: that line alone
                hit = Hit(signal, [log_end], hit.details) if log_end in hit.lines else None
            if hit is not None and signal.ends_training and max(hit.lines) < trained_on:
                outlived.update(hit.lines)  # it says training stopped there, but training printed values after it
                hit = None
            if hit is not None and not (failure_class.last_run_only and max(hit.lines, default=run_start) < run_start):
                results[failure_class.id].hits.append(hit)
        for failure_class, signal in self._fact_signals:
            if facts_allow(signal, facts):
                shown = [findings[fact] for fact in signal.facts if fact in findings]
                details = dict(signal.sets)
                if shown and not signal.hint:  # a curve finding: its lines are evidence, its sentence the turn
                    details.setdefault("curve", shown[0].summary)
                lines = sorted({index for finding in shown for index in finding.lines})
                results[failure_class.id].hits.append(Hit(signal, lines, details))

        words = WordReader(self.kb.text_model, doc, muted=outlived)
        return self._decide(doc, job, results, job_facts, words)

    def _decide(
        self,
        doc: LogDocument,
        job: JobInfo | None,
        results: dict[str, ClassResult],
        job_facts: JobFacts,
        words: WordReader,
    ) -> Diagnosis:
        facts, curve = job_facts.names, job_facts.findings.get(CURVE_READ)
        # Equal scores: the class whose decisive evidence came last (what the job ended with: a workload admitted
        # after a quota wait, then preempted), then the knowledge base's order.
        by_score = sorted(
            (r for r in results.values() if r.hits and r.failure_class.id != UNKNOWN and r.score > 0),
            key=lambda r: (-r.score, -_last_decisive_line(r), self.kb.order.index(r.failure_class.id)),
        )
        # A specific cause with enough evidence outranks a catch-all however strong that is. Against a bare
        # traceback (a catch-all with no decisive evidence: `RuntimeError: step failed`, a launcher's non-zero
        # exit), a specific class's hints count too: they say what failed, the traceback only that something did.
        bare = all(r.decisive_score < DECISION_FLOOR for r in by_score if r.failure_class.generic)
        # ...but a reading of the training curve is no cause of an exception that came after all of it: a run that
        # overfitted, then crashed in its own code (a callback's AttributeError, a TypeError in the report written
        # after the last epoch), failed on the crash. The curve's class comes after it, a rival.
        crashes = [r for r in by_score if r.failure_class.generic and r.decisive_score >= DECISION_FLOOR]
        crashed_at = max(map(_last_decisive_line, crashes), default=-1)
        before_crash = [
            r for r in by_score if r.failure_class.judged_on_curves and max(r.lines, default=-1) < crashed_at
        ]
        specific = [
            r
            for r in by_score
            if not r.failure_class.generic
            and (r.decisive_score >= DECISION_FLOOR or (bare and r.score >= DECISION_FLOOR))
            and r not in before_crash
        ]
        ranked = specific + [r for r in by_score if r not in specific and r not in before_crash] + before_crash
        cascade: list[str] = []
        if ranked and ranked[0].failure_class.secondary:
            primary = primary_cause(doc, ranked[0], ranked[1:])
            if primary is not None:
                ranked.remove(primary)
                ranked.insert(0, primary)
        if not ranked or ranked[0].score < DECISION_FLOOR or _words_of_a_healthy_run(ranked[0], facts, curve):
            return self._unknown(doc, job, ranked, results[UNKNOWN], job_facts, words)

        winner = ranked[0]
        # A secondary class explained as the winner's cascade is not a competing explanation.
        # Nor is a catch-all that a specific cause outranked with decisive evidence (the traceback that came with
        # an OOM, say); one outranked by hints alone stays a rival: words against a bare traceback are no proof.
        proven = not winner.failure_class.generic and winner.decisive_score >= DECISION_FLOOR
        rivals = [
            r
            for r in ranked[1:]
            if not (r.failure_class.secondary and not winner.failure_class.secondary)
            and not (r.failure_class.generic and proven)
        ]
        runner_up = rivals[0].score if rivals else 0.0
        raw = max(0.05, min(0.99, winner.score - 0.25 * runner_up))
        calibration = self.kb.calibration
        confidence = calibration.diagnosis(raw)
        if winner.failure_class.generic:
            # a catch-all's own curve lowers its confidence, never below the decision floor (at first sight bare
            # tracebacks at low raw scores were right under 30% of the time: "unknown" listed above the answer would
            # read as a contradiction)
            confidence = max(min(DECISION_FLOOR, confidence), calibration.answer(generic=True)(raw))
        doubted = False
        if winner.failure_class.judged_on_curves and curve is not None and self.kb.shape_model is not None:
            # a curve whose whole shape reads as a healthy run's: the rule's reading of it is less sure than it says
            lowered = doubted_confidence(self.kb.shape_model, job_facts.curves, job_facts.findings, confidence)
            doubted, confidence = lowered < confidence, lowered
        first_replica = first_replica_of(doc, winner)
        for other in ranked[1:]:
            if other.failure_class.secondary or winner.failure_class.secondary:
                cascade += cascade_lines(doc, other, exclude=first_replica)
        variant = variant_of(winner)
        details = gather_details(winner, doc, job, self.kb.tables)
        if doubted and "curve" in details:
            details["curve"] += DOUBT_NOTE
        # A class whose every line is one the proven winner's decisive evidence already explains has no evidence
        # of its own ("out of memory" in a CUDA OOM's line is no host OOM): it is no alternative.
        decisive = {i for hit in winner.hits if not hit.signal.hint for i in hit.lines} if proven else set()
        alternatives = [
            Alternative(
                failure_class=r.failure_class.id,
                confidence=round(min(calibration.answer(r.failure_class.generic)(r.score), confidence) * 0.9, 3),
                evidence=_first_line(doc, r),
            )
            for r in [r for r in ranked[1:] if not (r.lines and set(r.lines) <= decisive)][:2]
        ]
        # weak evidence, or a reading of a curve: "nothing known is wrong" stays a plausible answer
        if confidence < UNSURE or winner.failure_class.judged_on_curves:
            alternatives.append(Alternative(failure_class=UNKNOWN, confidence=round((1.0 - confidence) * 0.5, 3)))
        alternatives = sorted(alternatives, key=lambda a: -a.confidence)[:ALTERNATIVES]
        return build_diagnosis(
            winner.failure_class,
            variant,
            confidence=confidence,
            evidence=evidence_lines(doc, winner),
            alternatives=words.filled(self.kb, winner.failure_class.id, alternatives),
            first_replica=first_replica,
            cascade=cascade[:MAX_EVIDENCE],
            details=details,
            job=job,
        )

    def _unknown(
        self,
        doc: LogDocument,
        job: JobInfo | None,
        ranked: list[ClassResult],
        unknown_result: ClassResult,
        job_facts: JobFacts,
        words: WordReader,
    ) -> Diagnosis:
        """No class with evidence enough: the text model's class when its words are clear (bot.diagnosis.
        word_evidence), else the shape model's when a curve no rule judged has a clear shape (bot.diagnosis.shape),
        else `unknown`, with the rules' weak candidates as alternatives."""
        facts, curve = job_facts.names, job_facts.findings.get(CURVE_READ)
        # a job its scheduler stopped at its time limit (or its owner killed): the words of that stop (killed,
        # SIGTERM, the memory its summary reports) name no failure
        answer = None if _healthy_run(facts) or LIMIT_STOP in facts else words.answer(self.kb)
        basis: Literal["words", "shape"] = "words"
        shape = None
        if answer is None and curve is not None and self.kb.shape_model is not None:
            shape = shape_answer(self.kb.shape_model, job_facts.curves, job_facts.findings)
            if shape is not None:
                answer = WordAnswer(self.kb[shape.failure_class], shape.confidence, shape.lines)
                basis = "shape"
        calibration = self.kb.calibration
        alternatives = [
            Alternative(
                failure_class=r.failure_class.id,
                confidence=round(calibration.answer(r.failure_class.generic)(r.score) * 0.8, 3),
                evidence=_first_line(doc, r),
            )
            for r in sorted(ranked, key=lambda r: -r.score)
            if answer is None or r.failure_class is not answer.failure_class
        ][:ALTERNATIVES]
        if answer is not None:
            result = ClassResult(answer.failure_class, [Hit(WORDS if shape is None else SHAPE, sorted(answer.lines))])
            details = gather_details(result, doc, job, self.kb.tables)
            if shape is not None:
                details["curve"] = shape.sentence
            nothing = Alternative(failure_class=UNKNOWN, confidence=round((1.0 - answer.confidence) * 0.5, 3))
            alternatives = sorted([*alternatives, nothing], key=lambda a: -a.confidence)[:ALTERNATIVES]
            return build_diagnosis(
                answer.failure_class,
                None,
                confidence=round(answer.confidence, 3),
                evidence=evidence_lines(doc, result),
                alternatives=words.filled(self.kb, answer.failure_class.id, alternatives),
                first_replica=first_replica_of(doc, result),
                cascade=[],
                details=details,
                job=job,
                basis=basis,
            )
        alternatives = words.filled(self.kb, UNKNOWN, alternatives)
        if curve is not None:  # a curve no finding judged: the curve classes it could still show fill what room is left
            listed = {a.failure_class for a in alternatives}
            leads = [
                Alternative(failure_class=class_id, confidence=round(share, 3), evidence=curve.summary, source="curve")
                for class_id, share in sorted(calibration.curve_leads.items(), key=lambda item: -item[1])
                if class_id not in listed and class_id in self.kb.classes
            ]
            alternatives = sorted(alternatives + leads[: ALTERNATIVES - len(alternatives)], key=lambda a: -a.confidence)
        best = ranked[0].score if ranked else 0.0
        evidence = evidence_lines(doc, ranked[0]) if ranked else []
        # nothing failed that a class holds, and `unknown`'s own fact signals explain what happened instead (the
        # scheduler stopped the job at its limit: knowledge/unknown.yaml): that variant, its lines first
        explained = variant_of(unknown_result)
        if explained is not None:
            said = evidence_lines(doc, unknown_result)
            evidence = said + [line for line in evidence if line not in said][:2]
        return build_diagnosis(
            unknown_result.failure_class,
            explained,
            confidence=round(min(UNKNOWN_CAP, calibration.unknown(1.0 - best)), 3),
            evidence=evidence,
            alternatives=alternatives,
            first_replica=None,
            cascade=[],
            details=gather_details(None, doc, job, self.kb.tables),
            job=job,
        )


def document(lines: Sequence[LogLine], job: JobInfo | None = None) -> LogDocument:
    """The log as the classifier reads it: one line per LogLine line, blank lines left out, the job's error message
    (Vertex's own account) last."""
    single = _single_lines(lines)
    all_lines = list(compress(single, map(str.strip, map(_TEXT, single))))  # blank lines left out (in C)
    if job is not None and job.error_message:
        all_lines += [
            LogLine(text=text, replica="service", severity="ERROR", timestamp=job.end_time)
            for text in job.error_message.splitlines()
            if text.strip()
        ]
    return LogDocument(all_lines)


def _healthy_run(facts: frozenset[str]) -> bool:
    """A log of training going on with no error, kill or traceback anywhere (a running job's chatter), or one whose
    last lines report a clean end with no error after it (a run that finished): words name no failure there."""
    return {"steps_logged", "no_error_lines"} <= facts or "finished_cleanly" in facts


def _words_of_a_healthy_run(result: ClassResult, facts: frozenset[str], curve: Finding | None = None) -> bool:
    """Words alone (hint patterns) in a healthy run's log (_healthy_run), or all of them before the first point of
    the curve training then logged (`curve`: the run went on past them): the words (`NCCL INFO`, `reading
    tfrecords`, `GPU memory`, an allocator's retry) are its chatter, not a failure's. A curve finding is no such
    word, even as a hint."""
    words = [h for h in result.hits if h.signal.hint and h.signal.pattern]
    trained_past = curve is not None and bool(words) and all(max(h.lines) < curve.lines[0] for h in words if h.lines)
    if not (_healthy_run(facts) or trained_past):
        return False
    beyond_words = ClassResult(
        result.failure_class, [h for h in result.hits if not (h.signal.hint and h.signal.pattern)]
    )
    return beyond_words.score < DECISION_FLOOR


def _last_decisive_line(result: ClassResult) -> int:
    """The last line a decisive (non-hint) signal of the class matched; -1 when only hints matched."""
    return max((i for hit in result.hits if not hit.signal.hint for i in hit.lines), default=-1)


def _first_line(doc: LogDocument, result: ClassResult) -> str:
    """The class's earliest line, redacted (it is shown as the alternative's reason)."""
    return redact(doc.lines[doc.earliest(result.lines)].text.strip())[:300] if result.lines else ""


def _single_lines(lines: Sequence[LogLine]) -> list[LogLine]:
    """LogLines whose text holds several lines are split, so that offsets map to one line each."""
    joined = "\x00".join(map(_TEXT, lines))
    if "\n" not in joined and "\r" not in joined:
        return list(lines)
    out: list[LogLine] = []
    for line in lines:
        if "\n" in line.text or "\r" in line.text:
            out.extend(line.model_copy(update={"text": part}) for part in line.text.splitlines())
        else:
            out.append(line)
    return out


_default: Classifier | None = None


def classify(lines: Sequence[LogLine], job: JobInfo | None = None, kb: KnowledgeBase | None = None) -> Diagnosis:
    """Classify with the given knowledge base, or the bundled one (loaded and compiled once)."""
    global _default
    if kb is not None:
        return Classifier(kb).classify(lines, job)
    if _default is None:
        from bot.diagnosis.knowledge import load_knowledge

        _default = Classifier(load_knowledge())
    return _default.classify(lines, job)
