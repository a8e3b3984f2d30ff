"""classify(lines, job) -> Diagnosis, against the knowledge base.

How a decision is made:
1. Every signal of every class is matched against the job's log (one RE2 pass finds which patterns occur at
   all; only those are located line by line) and against the job's facts (bot.diagnosis.facts).
2. A class's score is the noisy-OR of its matched signals' weights: independent evidence adds up, but no
   pile of weak hints reaches the certainty of one decisive line.
3. Cascades: a "secondary" class (collective timeouts, rendezvous failures) loses to a primary failure found
   in the same job; the primary failure's first replica is the diagnosis, the rest is reported as cascade.
4. Confidence is the winner's score, reduced by how strong the runner-up is. Below a floor the answer is
   `unknown` with low confidence: never a confident guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import re2

from bot.diagnosis.commands import complete_details, evidence_details, fill_commands
from bot.diagnosis.facts import derive_facts
from bot.diagnosis.knowledge import UNKNOWN, FailureClass, KnowledgeBase, Signal, Variant
from bot.intake.log_document import LogDocument
from bot.models import Alternative, Diagnosis, JobInfo, LogLine
from bot.render.redact import redact

DECISION_FLOOR = 0.35  # below this, nothing supports a diagnosis
PRIMARY_FLOOR = 0.5  # a primary class weaker than this never explains a secondary (cascade) class
STRONG_PRIMARY = 0.75  # a primary class this strong explains a secondary one wherever it was seen
UNSURE = 0.8  # below this confidence, `unknown` is listed among the alternatives
UNKNOWN_CAP = 0.45  # "nothing known is wrong" is never said with confidence: the decisive line may be missing
MAX_EVIDENCE = 10
MAX_DETAIL_LINES = 20  # decisive lines (with their neighbours) read for resource names, zones, quota ids
CHUNK_BYTES = 4_096
MAX_LINES_PER_SIGNAL = 500  # enough for evidence, counts and cascades; a 100k-line log stays linear and fast
MAX_EVIDENCE_CHARS = 400
_NOT_REPLICAS = frozenset({"service", "monitoring"})  # Vertex's own entries; Cloud Monitoring incidents
_PROJECT_NUMBER = re2.compile(r"logs/viewer\?project=(\d+)")
_REPLICA_IN_TEXT = re.compile(r"\b(workerpool\d+-\d+|(?:master|worker|ps|chief|evaluator)[- ]replica[- ]\d+)\b")


@dataclass
class _Hit:
    signal: Signal
    lines: list[int]
    details: dict[str, str] = field(default_factory=dict)


@dataclass
class _ClassResult:
    failure_class: FailureClass
    hits: list[_Hit] = field(default_factory=list)

    @property
    def score(self) -> float:
        miss = 1.0
        for hit in self.hits:
            miss *= 1.0 - hit.signal.weight
        return 1.0 - miss

    @property
    def decisive_score(self) -> float:
        """The score without hint signals (words that point at the class without proving it)."""
        miss = 1.0
        for hit in self.hits:
            if not hit.signal.hint:
                miss *= 1.0 - hit.signal.weight
        return 1.0 - miss

    @property
    def lines(self) -> list[int]:
        return sorted({i for hit in self.hits for i in hit.lines})


class Classifier:
    """Holds the compiled knowledge base; `classify` is pure and thread-safe."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._pattern_signals: list[tuple[FailureClass, Signal]] = []
        self._fact_signals: list[tuple[FailureClass, Signal]] = []
        options = re2.Options()
        options.never_capture = True
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
        all_lines = [line for line in _single_lines(lines) if line.text.strip()]
        if job is not None and job.error_message:
            all_lines += [
                LogLine(text=text, replica="service", severity="ERROR", timestamp=job.end_time)
                for text in job.error_message.splitlines()
                if text.strip()
            ]
        doc = LogDocument(all_lines)
        facts, findings = derive_facts(doc, job)
        results = {c.id: _ClassResult(c) for c in self.kb}

        # Which signals occur in which chunk: one RE2 set pass over the log, then each signal is located only
        # inside the chunks where it occurs (a pattern scan of the whole log per signal costs far more).
        where: dict[int, list[tuple[int, int]]] = {}
        for span in doc.chunks(CHUNK_BYTES) if doc.data else ():
            for index in self._set.Match(doc.data[span[0] : span[1]]) or ():
                where.setdefault(index, []).append(span)
        for index in sorted(where):
            failure_class, signal = self._pattern_signals[index]
            if not _facts_allow(signal, facts):
                continue
            hit = self._locate(doc, signal, where[index])
            if hit is not None:
                results[failure_class.id].hits.append(hit)
        for failure_class, signal in self._fact_signals:
            if _facts_allow(signal, facts):
                shown = [findings[fact] for fact in signal.facts if fact in findings]
                details = dict(signal.sets)
                if shown and not signal.hint:  # a curve finding: its lines are evidence, its sentence the turn
                    details.setdefault("curve", shown[0].summary)
                lines = sorted({index for finding in shown for index in finding.lines})
                results[failure_class.id].hits.append(_Hit(signal, lines, details))

        return self._decide(doc, job, results)

    @staticmethod
    def _locate(doc: LogDocument, signal: Signal, spans: list[tuple[int, int]]) -> _Hit | None:
        found: list[int] = []
        details: dict[str, str] = dict(signal.sets)
        last = -1
        for begin, end in spans:
            for match in signal.compiled.finditer(doc.data, begin, end):
                index = doc.line_at(match.start())
                if index == last:
                    continue
                if signal.compiled_unless is not None and signal.compiled_unless.search(doc.lines[index].text):
                    continue
                last = index
                found.append(index)
                if signal.detail_names:
                    for name, value in match.groupdict().items():
                        if value and name not in details:
                            details[name] = value.decode("utf-8", "replace")
                if len(found) >= MAX_LINES_PER_SIGNAL:
                    break
            if len(found) >= MAX_LINES_PER_SIGNAL:
                break
        if len(found) < signal.min_count:
            return None
        return _Hit(signal, found, details)

    def _decide(self, doc: LogDocument, job: JobInfo | None, results: dict[str, _ClassResult]) -> Diagnosis:
        by_score = sorted(
            (r for r in results.values() if r.hits and r.failure_class.id != UNKNOWN and r.score > 0),
            key=lambda r: (-r.score, self.kb.order.index(r.failure_class.id)),
        )
        # A specific cause with enough evidence outranks a catch-all (a bare traceback) however strong that is.
        specific = [r for r in by_score if not r.failure_class.generic and r.decisive_score >= DECISION_FLOOR]
        ranked = specific + [r for r in by_score if r not in specific]
        cascade: list[str] = []
        if ranked and ranked[0].failure_class.secondary:
            primary = self._primary_cause(doc, ranked[0], ranked[1:])
            if primary is not None:
                ranked.remove(primary)
                ranked.insert(0, primary)
        if not ranked or ranked[0].score < DECISION_FLOOR:
            return self._unknown(doc, job, ranked)

        winner = ranked[0]
        # A secondary class explained as the winner's cascade is not a competing explanation.
        # Nor is a catch-all that a specific cause outranked (the traceback that came with an OOM, say).
        rivals = [
            r
            for r in ranked[1:]
            if not (r.failure_class.secondary and not winner.failure_class.secondary)
            and not (r.failure_class.generic and not winner.failure_class.generic)
        ]
        runner_up = rivals[0].score if rivals else 0.0
        raw = max(0.05, min(0.99, winner.score - 0.25 * runner_up))
        confidence = self.kb.calibration.diagnosis(raw)
        first_replica = self._first_replica(doc, winner)
        for other in ranked[1:]:
            if other.failure_class.secondary or winner.failure_class.secondary:
                cascade += self._cascade_lines(doc, other, exclude=first_replica)
        variant = self._variant(winner)
        details = self._details(winner, doc, job)
        calibrate = self.kb.calibration.diagnosis
        alternatives = [
            Alternative(
                failure_class=r.failure_class.id, confidence=round(min(calibrate(r.score), confidence) * 0.9, 3)
            )
            for r in ranked[1:3]
        ]
        if confidence < UNSURE:  # weak evidence: "nothing known is wrong" stays a plausible answer
            alternatives.append(Alternative(failure_class=UNKNOWN, confidence=round((1.0 - confidence) * 0.5, 3)))
        alternatives = sorted(alternatives, key=lambda a: -a.confidence)[:2]
        return self._diagnosis(
            winner.failure_class,
            variant,
            confidence=confidence,
            evidence=self._evidence(doc, winner),
            alternatives=alternatives,
            first_replica=first_replica,
            cascade=cascade[:MAX_EVIDENCE],
            details=details,
            job=job,
        )

    def _primary_cause(
        self, doc: LogDocument, secondary: _ClassResult, others: list[_ClassResult]
    ) -> _ClassResult | None:
        """A primary failure that explains a secondary one (e.g. an OOM on one replica, timeouts on the rest).

        It must be strong on its own, or be seen on another replica no later than the secondary symptom:
        a generic exception raised *by* a collective timeout on the same replica explains nothing.
        """
        secondary_first = doc.earliest(secondary.lines) if secondary.lines else None
        candidates = []
        for result in others:
            if result.failure_class.secondary or result.score < PRIMARY_FLOOR or not result.lines:
                continue
            first = doc.earliest(result.lines)
            strong = result.score >= STRONG_PRIMARY
            elsewhere_before = (
                secondary_first is not None
                and self._replica_of(doc.lines[first]) != self._replica_of(doc.lines[secondary_first])
                and doc.came_before(first, secondary_first)
            )
            if strong or elsewhere_before:
                candidates.append((first, result))
        if not candidates:
            return None
        earliest = doc.earliest([first for first, _ in candidates])
        return max((r for first, r in candidates if first == earliest), key=lambda r: r.score)

    def _unknown(self, doc: LogDocument, job: JobInfo | None, ranked: list[_ClassResult]) -> Diagnosis:
        best = ranked[0].score if ranked else 0.0
        calibrate = self.kb.calibration.diagnosis
        alternatives = [
            Alternative(failure_class=r.failure_class.id, confidence=round(calibrate(r.score) * 0.8, 3))
            for r in sorted(ranked, key=lambda r: -r.score)[:2]
        ]
        evidence = self._evidence(doc, ranked[0]) if ranked else []
        return self._diagnosis(
            self.kb[UNKNOWN],
            None,
            confidence=round(min(UNKNOWN_CAP, self.kb.calibration.unknown(1.0 - best)), 3),
            evidence=evidence,
            alternatives=alternatives,
            first_replica=None,
            cascade=[],
            details=self._details(None, doc, job),
            job=job,
        )

    def _diagnosis(
        self,
        failure_class: FailureClass,
        variant: Variant | None,
        *,
        confidence: float,
        evidence: list[str],
        alternatives: list[Alternative],
        first_replica: str | None,
        cascade: list[str],
        details: dict[str, str],
        job: JobInfo | None,
    ) -> Diagnosis:
        def pick(name: str) -> Any:
            override = getattr(variant, name) if variant is not None else None
            return override if override is not None else getattr(failure_class, name)

        templates = pick("commands")
        return Diagnosis(
            failure_class=failure_class.id,
            confidence=round(confidence, 3),
            title=pick("title"),
            symptom=pick("symptom"),
            evidence=evidence,
            remediation=list(pick("remediation")),
            avoid=list(pick("avoid")),
            first_checks=list(pick("first_checks")),
            commands=fill_commands(templates, details),
            alternatives=alternatives,
            first_failing_replica=first_replica,
            cascade=cascade,
            details=details,
            finding=details.get("curve"),
        )

    @staticmethod
    def _variant(result: _ClassResult) -> Variant | None:
        tagged = [hit for hit in result.hits if hit.signal.variant]
        if not tagged:
            return None
        strongest = max(tagged, key=lambda hit: hit.signal.weight)
        return result.failure_class.variants[strongest.signal.variant or ""]

    @staticmethod
    def _evidence(doc: LogDocument, result: _ClassResult) -> list[str]:
        chosen: list[int] = []
        seen: set[tuple[str | None, str]] = set()  # a line repeated verbatim proves nothing more
        for hit in sorted(result.hits, key=lambda h: -h.signal.weight):
            taken = 0
            for index in hit.lines:
                key = (doc.lines[index].replica, doc.lines[index].text.strip())
                if index in chosen or key in seen:
                    continue
                chosen.append(index)
                seen.add(key)
                taken += 1
                if taken == 3:
                    break
            if len(chosen) >= MAX_EVIDENCE:
                break
        evidence = []
        for index in sorted(chosen[:MAX_EVIDENCE]):
            line = doc.lines[index]
            text = redact(line.text.strip())
            if len(text) > MAX_EVIDENCE_CHARS:
                text = text[: MAX_EVIDENCE_CHARS - 1] + "…"
            prefix = f"[{line.replica}] " if line.replica and line.replica not in _NOT_REPLICAS else ""
            evidence.append(prefix + text)
        return evidence

    @staticmethod
    def _replica_of(line: LogLine) -> str | None:
        if line.replica and line.replica not in _NOT_REPLICAS:
            return line.replica
        found = _REPLICA_IN_TEXT.search(line.text)
        return found.group(1).replace(" ", "-") if found else None

    def _first_replica(self, doc: LogDocument, result: _ClassResult) -> str | None:
        candidates = [i for i in result.lines if self._replica_of(doc.lines[i])]
        if not candidates:
            return None
        return self._replica_of(doc.lines[doc.earliest(candidates)])

    def _cascade_lines(self, doc: LogDocument, result: _ClassResult, *, exclude: str | None) -> list[str]:
        seen: dict[str, str] = {}
        for index in result.lines:
            replica = self._replica_of(doc.lines[index]) or "?"
            if replica == exclude or replica in seen:
                continue
            seen[replica] = redact(doc.lines[index].text.strip())[:160]
        return [f"{replica} ({result.failure_class.id}): {text}" for replica, text in seen.items()]

    def _details(self, result: _ClassResult | None, doc: LogDocument, job: JobInfo | None) -> dict[str, str]:
        details: dict[str, str] = {}
        if result is not None:
            for hit in sorted(result.hits, key=lambda h: -h.signal.weight):
                for name, value in hit.details.items():
                    details.setdefault(name, value.strip())
            # What the decisive lines (and the few around each: an error's message and JSON body span lines) say
            # beyond the signals' captures: the resource refused, a zone, a quota id... (commands.py reads them).
            decisive = result.lines[:MAX_DETAIL_LINES]  # enough to name the resource; a noisy log has thousands
            window = sorted({j for i in decisive for j in range(max(i - 2, 0), min(i + 4, len(doc.lines)))})
            evidence_details(result.failure_class.id, [doc.lines[j].text for j in window], details)
        project_number = _PROJECT_NUMBER.search(doc.data)
        if project_number:
            details.setdefault("project_number", project_number.group(1).decode())
        logged = next((line for line in doc.lines if line.job_id or line.project_id), None)
        # A resource name says projects/NUMBER/...: a number is only ever project_number, and `project` is the
        # id that the job (or its log) gives, or is left out.
        projects = [job.project if job else None, logged.project_id if logged else None]
        name_number = re.match(r"projects/(\d+)/", job.name) if job is not None and job.name else None
        numbers = [p for p in projects if p and p.isdigit()] + ([name_number.group(1)] if name_number else [])
        job_values = {
            "job_id": (job.job_id if job else None) or (logged.job_id if logged else None),
            "project": next((p for p in projects if p and not p.isdigit()), None),
            "region": job.region if job else None,
            "display_name": job.display_name if job else None,
            "job_service_account": job.service_account if job else None,
            "project_number": numbers[0] if numbers else None,
        }
        for name, value in job_values.items():
            if value:
                details.setdefault(name, value)
        service_account = _job_service_account(details)
        if service_account:
            details["service_account"] = service_account
        if result is not None:
            first_replica = self._first_replica(doc, result)
            if first_replica:
                details.setdefault("task_name", first_replica)  # its logs come first in the commands
            for name, derivation in result.failure_class.derive.items():
                source = details.get(derivation.source)
                value = derivation.lookup(source) if source else derivation.default
                if value and name not in details:
                    details[name] = value
            complete_details(result.failure_class.id, details, job, self.kb.tables)
        return details


def _facts_allow(signal: Signal, facts: frozenset[str]) -> bool:
    return all(fact in facts for fact in signal.facts) and not any(fact in facts for fact in signal.unless_facts)


def _job_service_account(details: dict[str, str]) -> str | None:
    """The identity the job ran as: what the error names, what the job sets, or Vertex's default agent (when
    the project number is known); None when unknown (a command then shows an explicit placeholder)."""
    principal = details.get("principal", "")
    if principal.endswith(".gserviceaccount.com"):
        return principal
    if details.get("job_service_account"):
        return details["job_service_account"]
    if details.get("project_number"):
        return f"service-{details['project_number']}@gcp-sa-aiplatform-cc.iam.gserviceaccount.com"
    return None


def _single_lines(lines: Sequence[LogLine]) -> list[LogLine]:
    """LogLines whose text holds several lines are split, so that offsets map to one line each."""
    if not any("\n" in line.text or "\r" in line.text for line in lines):
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
