"""A Diagnosis assembled from the winning class's result: its evidence lines (redacted, one per repeated line), the
first failing replica and the cascade on the others (and a catch-all's evidence apart from a secondary symptom's
own lines, which the classifier weighs as a cause), the details commands are filled from (the signals' captures,
what the decisive lines say, the job's values, the class's derivations), and the class's (or variant's) texts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from operator import attrgetter
from typing import Any, Literal

import re2

from bot.diagnosis.class_scores import ClassResult, Hit
from bot.diagnosis.commands.details import complete_details, evidence_details, known_permission, role_for_listed
from bot.diagnosis.commands.fill import fill_commands
from bot.diagnosis.evidence.patterns import BUCKET
from bot.diagnosis.evidence.refused_operation import client_calls
from bot.diagnosis.knowledge_schema import UNKNOWN, FailureClass, Variant
from bot.diagnosis.knowledge_tables import Table
from bot.intake.log_document import LogDocument
from bot.models import Alternative, Diagnosis, JobInfo, LogLine
from bot.render.redact import redact

MAX_EVIDENCE = 10
_JOB_ID, _PROJECT_ID = attrgetter("job_id"), attrgetter("project_id")
MAX_DETAIL_LINES = 20  # decisive lines (with their neighbours) read for resource names, zones, quota ids
MAX_EVIDENCE_CHARS = 400
_NOT_REPLICAS = frozenset({"service", "monitoring"})  # Vertex's own entries; Cloud Monitoring incidents
_PROJECT_NUMBER = re2.compile(r"logs/viewer\?project=(\d+)")
_ARG_BUCKET = re.compile(rf"\bgs://({BUCKET})(?=/|$|[\s,;'\"])")  # a bucket a job argument names (--data=gs://B/..)
_REPLICA_IN_TEXT = re.compile(r"\b(workerpool\d+-\d+|(?:master|worker|ps|chief|evaluator)[- ]replica[- ]\d+)\b")


ALTERNATIVE_CEILING = 0.95  # an alternative is shown below its answer: at most this share of the answer's confidence


def below_answer(alternatives: list[Alternative], confidence: float, *, answered: bool = True) -> list[Alternative]:
    """The alternatives, none shown above the answer. A rival the rules matched weakly (calibrated on its own
    curve) or a class the text model's words lean to can state more than an `unknown` or a bare traceback the log
    was answered with; listed above it, "Also possible: X 46%" under "unknown 45%" reads as a contradiction. On
    train, where that happened (191 of 7,724 answers), the answer was right 157 times and the alternative 28: the
    answer keeps its place and the alternative is shown just below it. The list reads highest first (the rules'
    rivals come ranked by raw score, which their calibrated figures need not follow).

    When a class was `answered`, its confidence is the chance it is right: the alternatives share what is left
    (1 - confidence), each in proportion to its own figure, so "94%" is never followed by "also possible 85%" (on
    train, distributed set-up listed as an alternative to another class was the cause 4 times in 122). `unknown`
    answers keep their leads' own figures: its calibration is fitted on them (benchmarks/fit_calibration.py)."""
    ceiling = round(confidence * ALTERNATIVE_CEILING, 3)
    shown = [a if a.confidence <= ceiling else a.model_copy(update={"confidence": ceiling}) for a in alternatives]
    rest, total = max(0.0, 1.0 - confidence), sum(a.confidence for a in shown)
    if answered and total > rest:
        shown = [a.model_copy(update={"confidence": round(a.confidence * rest / total, 3)}) for a in shown]
    return sorted(shown, key=lambda a: -a.confidence)


def build_diagnosis(
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
    basis: Literal["rules", "words", "shape"] = "rules",
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
        alternatives=below_answer(alternatives, confidence, answered=failure_class.id != UNKNOWN),
        first_failing_replica=first_replica,
        cascade=cascade,
        details=details,
        finding=details.get("curve"),
        basis=basis,
    )


def variant_of(result: ClassResult) -> Variant | None:
    """The variant of the strongest hit that names one. A variant signal of weight 0 only explains (it always
    chooses); a weighted one competes: a stronger hit of the class itself keeps the class's own text (a pod with no
    room, then the autoscaler saying a cloud quota stopped it, is the quota)."""
    tagged = [hit for hit in result.hits if hit.signal.variant]
    if not tagged:
        return None
    strongest = max(tagged, key=lambda hit: hit.signal.weight)
    untagged = max((hit.signal.weight for hit in result.hits if not hit.signal.variant), default=0.0)
    if strongest.signal.weight > 0 and untagged > strongest.signal.weight:
        return None
    return result.failure_class.variants[strongest.signal.variant or ""]


def evidence_lines(doc: LogDocument, result: ClassResult) -> list[str]:
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


def replica_of(line: LogLine) -> str | None:
    if line.replica and line.replica not in _NOT_REPLICAS:
        return line.replica
    found = _REPLICA_IN_TEXT.search(line.text)
    return found.group(1).replace(" ", "-") if found else None


def first_replica_of(doc: LogDocument, result: ClassResult) -> str | None:
    candidates = [i for i in result.lines if replica_of(doc.lines[i])]
    if not candidates:
        return None
    return replica_of(doc.lines[doc.earliest(candidates)])


def cascade_lines(doc: LogDocument, result: ClassResult, *, exclude: str | None) -> list[str]:
    seen: dict[str, str] = {}
    for index in result.lines:
        replica = replica_of(doc.lines[index]) or "?"
        if replica == exclude or replica in seen:
            continue
        seen[replica] = redact(doc.lines[index].text.strip())[:160]
    return [f"{replica} ({result.failure_class.id}): {text}" for replica, text in seen.items()]


# An exception's header line ("ValueError: You set `devices=4` ...") and a line that carries on its message (no
# timestamp, severity, frame or exception of its own): one message printed over two lines. glog and PyTorch's C++
# logger start a record with its severity letter ("E1129 10:00:00", "[E1129 ...", "[E ProcessGroupNCCL.cpp:607]").
_EXCEPTION_HEADER = re.compile(r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit)\b:")
_NEW_RECORD = re.compile(
    r"^\s*(?:\d{4}-\d\d-\d\d|\[?\d\d:\d\d:\d\d|\[?[IWEF]\d{4} |\[[IWEF] |Traceback|File \"|During handling"
    r"|(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit)\b|\[(?:rank|default)\d*\])"
)


def without_symptom(result: ClassResult, symptom: set[int], doc: LogDocument) -> ClassResult:
    """A catch-all's evidence without the lines that are the secondary symptom itself: an exception whose own
    message is the set-up failure (`ValueError: TF_CONFIG could not be parsed`) is that failure, not its cause -
    also when that message wraps, its header on the line before the symptom's words."""
    lines_of = doc.lines
    own = set(symptom)
    for i in symptom:
        if (
            i > 0
            and _EXCEPTION_HEADER.search(lines_of[i - 1].text)
            and not _NEW_RECORD.search(lines_of[i].text)
            and replica_of(lines_of[i - 1]) == replica_of(lines_of[i])
        ):
            own.add(i - 1)
    kept = []
    for hit in result.hits:
        lines = [i for i in hit.lines if i not in own]
        if lines or not hit.lines:  # a fact's hit has no lines of its own to give up
            kept.append(Hit(hit.signal, lines, hit.details))
    return ClassResult(result.failure_class, kept)


def _distinct_lines(doc: LogDocument, lines: Sequence[int], limit: int) -> list[int]:
    """The first `limit` of `lines` whose texts differ: enough to name the resource (a noisy log has thousands of
    decisive lines), and a line repeated word for word (by every replica, on every retry) says nothing its first
    copy did not."""
    seen: set[str] = set()
    kept: list[int] = []
    for index in lines:
        text = doc.texts[index]
        if text not in seen:
            seen.add(text)
            kept.append(index)
            if len(kept) == limit:
                break
    return kept


def gather_details(
    result: ClassResult | None, doc: LogDocument, job: JobInfo | None, tables: Mapping[str, Table]
) -> dict[str, str]:
    details: dict[str, str] = {}
    if result is not None:
        for hit in sorted(result.hits, key=lambda h: -h.signal.weight):
            for name, value in hit.details.items():
                details.setdefault(name, value.strip())
        # What the decisive lines (and the few around each: an error's message and JSON body span lines) say
        # beyond the signals' captures: the resource refused, a zone, a quota id... (command_details.py reads them).
        decisive = _distinct_lines(doc, result.lines, MAX_DETAIL_LINES)
        window = {j for i in decisive for j in range(max(i - 2, 0), min(i + 4, len(doc.lines)))}
        mounted = doc.data.find(b'Mounting file system "')
        if mounted >= 0:
            window.add(doc.line_at(mounted))  # the bucket gcsfuse mounted, however far above the failure
        window = sorted(window)
        image = next((pool.image_uri for pool in job.worker_pools if pool.image_uri), None) if job else None
        if image:
            details["image_uri"] = image  # the image the job ran: a registry refusal that names none refused it
        package = next((uri for pool in job.worker_pools for uri in pool.package_uris), None) if job else None
        if package:
            details["package_uri"] = package  # its Python package: "the provided GCS paths" a denial names none of
        if job is not None and job.base_output_directory:
            details["output_uri"] = job.base_output_directory  # where it writes: a refused write names no bucket
        args = [arg for pool in job.worker_pools for arg in pool.args] if job else []
        named = {m.group(1) for arg in args for m in _ARG_BUCKET.finditer(arg)}
        if len(named) == 1:
            details["arg_bucket"] = named.pop()  # the one bucket its arguments name: a refused read names none
        evidence_details(result.failure_class.id, [doc.lines[j].text for j in window], details)
    project_number = _PROJECT_NUMBER.search(doc.data)
    if project_number:
        details.setdefault("project_number", project_number.group(1).decode())
    # the job and project the log's own entries name (the first that names each; found in C, not line by line)
    logged_job_id = next(filter(None, map(_JOB_ID, doc.lines)), None)
    logged_project = next(filter(None, map(_PROJECT_ID, doc.lines)), None)
    # A resource name says projects/NUMBER/...: a number is only ever project_number, and `project` is the
    # id that the job (or its log) gives, or is left out.
    projects = [job.project if job else None, logged_project]
    name_number = re.match(r"projects/(\d+)/", job.name) if job is not None and job.name else None
    numbers = [p for p in projects if p and p.isdigit()] + ([name_number.group(1)] if name_number else [])
    job_values = {
        "job_id": (job.job_id if job else None) or logged_job_id,
        "project": next((p for p in projects if p and not p.isdigit()), None),
        "region": job.region if job else None,
        "display_name": job.display_name if job else None,
        "job_service_account": job.service_account if job else None,
        "project_number": numbers[0] if numbers else None,
    }
    for name, value in job_values.items():
        if value:
            details.setdefault(name, value)
    # the job's own commands (describe, stream its logs) take the region it ran in: a quota error may name another
    # (the job called a model in us-west4), and `region` is then that error's, for the quota's own commands
    job_region = (job.region if job else None) or details.get("region")
    if job_region:
        details["job_region"] = job_region
    service_account = _job_service_account(details)
    if service_account:
        details["service_account"] = service_account
    if result is not None:
        first_replica = first_replica_of(doc, result)
        if first_replica:
            details.setdefault("task_name", first_replica)  # its logs come first in the commands
        # a refusal's client method names its permission; another failure's (a 404, a timeout) names none
        unnamed = result.failure_class.id == "permission_denied" and result.lines and "permission" not in details
        calls = client_calls(_traceback_above(doc, result.lines[0])) if unnamed else []
        known_permission(details, tables, calls)
        role_for_listed(details, tables)
        for name, derivation in result.failure_class.derive.items():
            source = details.get(derivation.source)
            value = derivation.lookup(source) if source else derivation.default
            if value and name not in details:
                details[name] = value
        complete_details(result.failure_class.id, details, job, tables)
    return details


def _traceback_above(doc: LogDocument, index: int, reach: int = 120) -> list[str]:
    """The lines of the traceback that ends at line `index`: from the nearest "Traceback (most recent call last)"
    above it (within `reach` lines), else the `reach` lines above it."""
    begin = max(index - reach, 0)
    for i in range(index, begin - 1, -1):
        if "Traceback (most recent call last)" in doc.lines[i].text:
            begin = i
            break
    return [line.text for line in doc.lines[begin:index]]


def _job_service_account(details: dict[str, str]) -> str | None:
    """The identity the job ran as: what the error names, what the job sets, or Vertex's default agent (when
    the project number is known); None when unknown (a command then shows an explicit placeholder)."""
    principal = details.get("principal", "")
    managed = details.get("managed_account")  # the error names a Google-managed account, its number masked
    if managed and (not principal or principal.endswith(managed.partition("@")[2])):
        number = details.get("project_number", "")
        details.pop("principal", None)  # the masked address is no account to grant to
        return managed.format(number=number) if number.isdigit() else None
    if principal.endswith(".gserviceaccount.com"):
        return principal
    if details.get("job_service_account"):
        return details["job_service_account"]
    if details.get("project_number"):
        return f"service-{details['project_number']}@gcp-sa-aiplatform-cc.iam.gserviceaccount.com"
    return None
