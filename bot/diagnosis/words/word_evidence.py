"""What the text model's words say where the rules are silent: alternatives to fill, and an answer when the rules
found no class with evidence enough.

The text model (bot/diagnosis/words/text_model.py) reads the end of the log. Its likeliest classes fill the ranked
alternatives, each with the line whose words speak most for it. When the rules answer `unknown`, its likeliest
class becomes the answer if it is likely enough (the model file's `answer.min_probability`), the class lets words
decide (`answer_from_words`: not the curve classes) and the line speaking most for it tells of a failure (an error
word, and not Vertex's own exit report); the confidence is the model file's `answer.curve`, fitted on held-out
first-sight answers and kept below what a rule's proof reaches.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property

import re2

from bot.diagnosis.facts import IGNORED_NOTICE, ignored_tracebacks, reported_by_sitecustomize
from bot.diagnosis.knowledge import KnowledgeBase
from bot.diagnosis.knowledge_schema import UNKNOWN, FailureClass
from bot.diagnosis.words.text_model import MAX_LINES, TextModel, model_text
from bot.intake.log_document import LogDocument
from bot.models import Alternative
from bot.render.redact import redact

ALTERNATIVES = 2  # with the answer, the three best classes
MODEL_SHARE = 0.5  # a text-model alternative shows half its probability: words, not a matched signal
MODEL_MIN = 0.05  # below this probability the text model names no alternative
EVIDENCE_LINES = 3  # lines shown for an answer from words
# a bare exit report ("The replica workerpool0-0 exited with a non-zero status of 1") is on every failed job: its
# words speak for no class, so it is never the line that speaks for one
_BARE_EXIT = re2.compile(r"exited with a non-zero status of 1\b|exited with (?:exit )?(?:code|status) 1\b")
# a run stopped by a person (Ctrl-C: Python's KeyboardInterrupt - IPython prints it "KeyboardInterrupt: " and heads its
# traceback with it -, torchrun's agent passing on SIGINT; a closed terminal: SIGHUP): who stopped it, not why - a hang
# the person gave up on speaks on its own lines, if at all
_INTERRUPTED = re2.compile(
    r"^\s*KeyboardInterrupt(?::\s*|\s+Traceback \(most recent call last\))?$|Received [12] death signal"
    r"|closing signal SIG(?:INT|HUP)\b"
)
# a word that tells of a failure; a line without one is a running job's progress or chatter
ERROR_WORD = re2.compile(
    r"(?i)traceback|error|exception|fatal|killed|abort|segmentation fault|core dumped|non-zero|terminat|fail|warn|"
    r"exit(?:ed)? (?:code|status)|timed? ?out|timeout|denied|refused|unable|cannot|can't|could not|not found|exceed|"
    r"insufficient|invalid|corrupt|truncated|slow|bottleneck|stall|hang|hung|stuck|idle|starv|overflow|skipp|\bnan\b|"
    r"\binf\b|diverg|spike|preempt|evict|reclaim|drain|maintenance|sigterm|shut ?down|\blost\b|quota|rate.?limit|"
    r"capacity|unavailable|unauthori|forbidden|permission|credential|\boom\b|out of memory|not enough"
)
# Lines healthy runs print, whatever failure-like words they use. Frameworks probing at start what a host offers log
# every miss: NCCL's INFO lines ("NET/Plugin: Failed to find ncclNetPlugin_v7 symbol", "NET/IB : No device found"; a
# failure of NCCL's own is reported at WARN), and JAX's backend probe ("xla_bridge.py:660] Unable to initialize backend
# 'rocm': NOT_FOUND", one line for each platform the host lacks). PyTorch's process group warns on every distributed
# run that sets no device before its first barrier ("using GPU 0 to perform barrier as devices used by this process are
# currently unknown. This can potentially cause a hang") and that exits without destroy_process_group().
_ROUTINE_TRACE = re2.compile(
    r"\bNCCL INFO\b|xla_bridge\.py:\d+\] Unable to initialize backend '"
    r"|to perform barrier as devices used by this process are currently unknown"
    r"|destroy_process_group\(\) was not called before program exit"
)


def tells_of_failure(text: str) -> bool:
    """Whether a line's own words tell of a failure: an error word, on a line that is no routine trace of a healthy
    run (a start-up probe's, a distributed run's start and exit warnings)."""
    return ERROR_WORD.search(text) is not None and _ROUTINE_TRACE.search(text) is None


# A traceback's frame (Python's `File "x.py", line 3, in f`, IPython's `---> 12 call()` and `lib/x.py in f(a, b)`):
# the line names code, the exception line its traceback ends with tells the failure
_FRAME = re2.compile(r'(?:^|\s)File "[^"]+", line \d+|^\s*-*>\s*\d+\s|^\S+\.pyc? in \S+\(')
_RAISED_LINE = re2.compile(r"^(?:\d[\d:.,-]*\s+)?\W*(?:[\w.]+\.)?\w*(?:Error|Exception)\b")  # a clock time first
_FRAME_REACH = 60  # lines from a frame to the exception line that ends its traceback


def _frame_of_a_failure(texts: list[str], index: int) -> bool:
    """Whether line `index` is a traceback frame whose traceback ends in an exception line telling of a failure."""
    if _FRAME.search(texts[index]) is None:
        return False
    raised = next((text for text in texts[index + 1 : index + _FRAME_REACH] if _RAISED_LINE.search(text)), None)
    return raised is not None and tells_of_failure(raised) and _LIFECYCLE.search(raised) is None


# IPython's (Jupyter's) traceback quotes each frame's source lines numbered ("   1043 # Error is only populated when",
# "--> 354             raise RuntimeError(...)") under the frame's header: its file and function
# ("File /x/jobs.py:1046, in _RunnableJob._block_until_complete(self)", "/x/pipeline_jobs.py in run(self)", a cell's
# "<ipython-input-8-140c> in <module>", "Cell In[3], line 5")
_NUMBERED_SOURCE_LINE = re2.compile(r"^\s*(?:-*>\s*)?\d+ ")
_IPYTHON_FRAME_HEADER = re2.compile(
    r"^\s*File \S[^\n]*:\d+, in \S|^\S+\.pyc? in \S+\(|^<ipython-input-[^>]*> in |^\s*Cell In\[\d+\], line \d+"
)
_SOURCE_REACH = 12  # numbered lines IPython quotes around a frame's line


def _quoted_source_line(texts: list[str], index: int) -> bool:
    """Whether line `index` is a source line an IPython traceback quotes: a numbered line below a frame's header,
    with only numbered lines between. Its words are the program's code (`raise RuntimeError("Job failed with:")`,
    "# Error is only populated when the job state is FAILED"), not what the run printed."""
    if _NUMBERED_SOURCE_LINE.search(texts[index]) is None:
        return False
    for text in reversed(texts[max(index - _SOURCE_REACH, 0) : index]):
        if _IPYTHON_FRAME_HEADER.search(text) is not None:
            return True
        if _NUMBERED_SOURCE_LINE.search(text) is None:
            return False
    return False


# Vertex AI's own account of any failed job: a replica's exit report (whatever its status), the final marker, and
# the Vertex AI SDK's exception for a job that ended failed ("RuntimeError: Job failed with:", the job's error on the
# lines after it), raised where a notebook or script waited for the job
_LIFECYCLE = re2.compile(
    r"^\s*Job failed\.?\s*$|exited with a non-zero status of \d+|^\s*RuntimeError: (?:Job|Training) failed with:\s*$"
)


def _speaks_for_none(texts: list[str], index: int) -> bool:
    """A bare exit report, a person's interrupt, or Python's report of a failed sitecustomize import."""
    text = texts[index]
    return bool(_BARE_EXIT.search(text) or _INTERRUPTED.search(text) or reported_by_sitecustomize(texts, index))


@dataclass(frozen=True)
class WordAnswer:
    failure_class: FailureClass
    confidence: float
    lines: list[int]  # indexes into the document, the line speaking most for the class first


class WordReader:
    """The text model's reading of one document (its probabilities computed once)."""

    def __init__(self, model: TextModel | None, doc: LogDocument, muted: Collection[int] = ()) -> None:
        """`muted`: lines whose words speak for no class and are not read (a warning that training stopped, which
        the run outlived)."""
        self.model = model
        self.offset = max(len(doc.lines) - MAX_LINES, 0)
        self.tail = doc.texts[self.offset :]
        if muted:
            self.tail = ["" if self.offset + i in muted else text for i, text in enumerate(self.tail)]

    @cached_property
    def probabilities(self) -> dict[str, float]:
        return self.model.probabilities(model_text(self.tail)) if self.model is not None and self.tail else {}

    @cached_property
    def speaking(self) -> list[str]:
        """The tail's lines that may speak for a class: a bare exit report, a person's interrupt, Python's report
        of a failed sitecustomize import (its notice and the error after it: Python runs the program anyway) and
        the tracebacks it reports as ignored (raised in a destructor, nothing stopped by them) speak for none."""
        tail = self.tail
        ignored = ignored_tracebacks(tail) if any(IGNORED_NOTICE in text for text in tail) else set()
        return ["" if i in ignored or _speaks_for_none(tail, i) else text for i, text in enumerate(tail)]

    def _ends_interrupted(self) -> bool:
        """The log ends on a person's interrupt: the words before it tell what ran, not what failed."""
        last = next((text for text in reversed(self.tail) if text.strip()), "")
        return _INTERRUPTED.search(last) is not None

    def answer(self, kb: KnowledgeBase) -> WordAnswer | None:
        """The class the words name, when the model may answer for the rules (see the module docstring)."""
        model = self.model
        if model is None or model.answer_min is None or model.answer_curve is None or not self.probabilities:
            return None
        name, probability = max(self.probabilities.items(), key=lambda item: item[1])
        if name == UNKNOWN or probability < model.answer_min or name not in kb.classes or self._ends_interrupted():
            return None
        failure_class = kb[name]
        if not failure_class.answer_from_words:
            return None
        lines = model.supporting_lines(self.speaking, name, limit=EVIDENCE_LINES)
        # the line speaking most for the class must tell of a failure itself, or be a frame of a traceback that ends
        # in one: words of progress ("1,204,331 rows") or of Vertex's exit report are on logs of every kind
        strongest = self.tail[lines[0]] if lines else ""
        quoted = bool(lines) and _quoted_source_line(self.tail, lines[0])  # the code's words, not the run's
        told = (tells_of_failure(strongest) and not quoted) or (
            bool(lines) and _frame_of_a_failure(self.tail, lines[0])
        )
        if not told or _LIFECYCLE.search(strongest):
            return None
        return WordAnswer(failure_class, model.answer_curve(probability), [self.offset + i for i in lines])

    def filled(self, kb: KnowledgeBase, answer: str, alternatives: list[Alternative]) -> list[Alternative]:
        """Up to ALTERNATIVES alternatives: the rules' own, filled up with the text model's likeliest other classes
        that have a line of their own speaking for them (never `unknown`, which is no lead to follow); the list is
        ordered by the confidence shown, highest first, whichever found them."""
        model = self.model
        if model is None or len(alternatives) >= ALTERNATIVES or not self.probabilities:
            return alternatives
        listed = {answer, UNKNOWN, *(a.failure_class for a in alternatives)}
        out = list(alternatives)
        for failure_class, probability in sorted(self.probabilities.items(), key=lambda item: -item[1]):
            if len(out) >= ALTERNATIVES or probability < MODEL_MIN:
                break
            if failure_class in listed or failure_class not in kb.classes:
                continue
            lines = model.supporting_lines(self.speaking, failure_class, limit=1)
            if not lines:
                continue
            out.append(
                Alternative(
                    failure_class=failure_class,
                    confidence=round(MODEL_SHARE * probability, 3),
                    evidence=redact(self.tail[lines[0]].strip())[:300],
                    source="text model",
                )
            )
        return sorted(out, key=lambda a: -a.confidence)
