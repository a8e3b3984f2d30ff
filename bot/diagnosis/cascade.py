"""Which primary failure explains a secondary symptom (collective timeouts, a rendezvous that failed): the classifier
reports the primary on its first failing replica and the symptom on the others as its cascade."""

from __future__ import annotations

from bot.diagnosis.class_scores import DECISION_FLOOR, ClassResult
from bot.diagnosis.diagnosis_assembly import replica_of, without_symptom
from bot.intake.log_document import LogDocument

PRIMARY_FLOOR = 0.5  # a primary class weaker than this never explains a secondary (cascade) class
STRONG_PRIMARY = 0.75  # a primary class this strong explains a secondary one wherever it was seen


def primary_cause(doc: LogDocument, secondary: ClassResult, others: list[ClassResult]) -> ClassResult | None:
    """A primary failure that explains a secondary one (e.g. an OOM on one replica, timeouts on the rest).

    It must be strong on its own, or be seen on another replica no later than the secondary symptom:
    a generic exception raised *by* a collective timeout on the same replica explains nothing. The symptom is
    the secondary class's decisive lines: its words (`torch.distributed` in a frame of the failing replica's
    traceback) are no symptom. A cause weaker than PRIMARY_FLOOR explains it too when its replica shows none
    of the symptom: the replica the others timed out waiting for is the one that failed first.
    """
    symptom = {i for hit in secondary.hits if not hit.signal.hint for i in hit.lines}
    secondary_first = doc.earliest(sorted(symptom)) if symptom else None
    symptom_replicas = {replica_of(doc.lines[i]) for i in symptom}
    # ... and only where it would outrank the catch-all on its own: words against a proven bug are no cause.
    generic_proof = any(
        without_symptom(r, symptom, doc).decisive_score >= DECISION_FLOOR for r in others if r.failure_class.generic
    )
    candidates = []
    for result in others:
        if result.failure_class.generic:
            result = without_symptom(result, symptom, doc)
        if result.failure_class.secondary or result.score < DECISION_FLOOR or not result.lines:
            continue
        first = doc.earliest(result.lines)
        strong = result.score >= STRONG_PRIMARY
        elsewhere_before = (
            secondary_first is not None
            and replica_of(doc.lines[first]) != replica_of(doc.lines[secondary_first])
            and doc.came_before(first, secondary_first)
        )
        weak_but_alone = (
            (result.failure_class.generic or result.decisive_score >= DECISION_FLOOR or not generic_proof)
            and elsewhere_before
            and replica_of(doc.lines[first]) not in symptom_replicas
        )
        if result.score < PRIMARY_FLOOR and not weak_but_alone:
            continue
        # a start-up failure logged before the symptom, on the same replica too (an import that failed, then the
        # coordination service finding that task gone): no collective or rendezvous raises an ImportError
        started_first = (
            result.failure_class.starts_first
            and secondary_first is not None
            and doc.came_before(first, secondary_first)
        )
        if strong or elsewhere_before or started_first:
            candidates.append((first, result))
    # A specific cause outranks a catch-all here too: the traceback header that came before an OOM line
    # (or a permission error) is the same failure, not an earlier one.
    specific = [(first, r) for first, r in candidates if not r.failure_class.generic]
    candidates = specific or candidates
    if not candidates:
        return None
    # The replica that failed first; on it, the ranking a log of that replica alone would get (a traceback's
    # frames name the data loader before its last line says the worker was killed: one failure, not two).
    earliest = doc.earliest([first for first, _ in candidates])
    replica = replica_of(doc.lines[earliest])
    best = next(r for first, r in candidates if replica_of(doc.lines[first]) == replica)
    return next(r for r in others if r.failure_class is best.failure_class)
