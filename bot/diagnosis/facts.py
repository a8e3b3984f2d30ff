"""Structured facts about one job, derived from its log lines and its CustomJob resource.

Knowledge files refer to these by name (`facts: [...]` in a signal); the classifier never guesses at them.
Training-curve facts come from the curves the job printed (`curves` reads them, `curve_facts` judges them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import NamedTuple

import re2

from bot.diagnosis.curves.blowups import nonfinite_only_at_start, validation_loss_never_finite
from bot.diagnosis.curves.facts import curve_findings
from bot.diagnosis.curves.finding import Finding
from bot.diagnosis.curves.loss_findings import loss_recovered
from bot.diagnosis.curves.reader import read_curves
from bot.diagnosis.curves.series import LOSS, TRAIN, Curves
from bot.diagnosis.data_wait import data_wait_dominates, data_wait_stalls, data_waits
from bot.diagnosis.traceback_facts import (
    last_plain_traceback,
    missing_path_being_written,
    package_failed_at_import,
    raised_outside_data_code,
    traceback_cut_in_data_library,
)
from bot.intake.log_document import LogDocument
from bot.models import JobInfo

CURVE_READ = "curves_logged"  # a fact, and its finding says what the curve went from and to
LOG_END = "log_end"  # a finding's name (never a fact): the log's last line, the platform's lifecycle lines aside
LAST_RUN = "last_run_start"  # a finding's name (never a fact): where another run started over, after an earlier one
TRAINED_ON = "trained_on"  # a finding's name (never a fact): the first of the last lines printing training values
LIMIT_STOP = "stopped_at_its_limit"  # a fact, and its finding is the scheduler's line that says so
TRAINED_ON_LINES = 3  # training values on this many later lines: the run went on past a line that says it stopped
FACT_NAMES: frozenset[str] = frozenset(
    {
        "steps_logged",  # the job printed training progress (loss values, epochs, steps)
        "no_steps_logged",  # ... and this says it did not: it failed before training started
        "spot",  # the job ran on Spot capacity
        "multi_replica",  # more than one replica (from the job spec or the logs)
        "job_failed",  # the job is known to have failed (state or Vertex's "Job failed." entry)
        "no_error_lines",  # nothing in the logs looks like an error, a traceback or a kill
        "loss_flat",  # training loss never moved from where it started
        "loss_at_chance",  # loss at ln(k) or accuracy at 1/k: the model guesses uniformly over k classes
        "val_loss_rising",  # validation was best a while ago and is clearly worse, while training improved
        "generalization_gap",  # the gap between validation and training grew to a large one
        "val_stalled_train_improving",  # early stopping: validation stopped improving while training improved
        "val_loss_crept_up",  # validation loss a little higher at most evaluations since its best, training falling
        "validation_recently_improved",  # the last early-stopping report of a new best has fewer than three
        # "did not improve" after it: no stall in progress
        "curves_logged",  # a training or validation metric was printed more than once
        "loss_plateau_high",  # from the start the loss fell a little, then stopped far above where it began
        "metric_stuck",  # an accuracy-like metric low and flat, or the very same value epoch after epoch
        "no_better_than_chance",  # a binary log loss never below ln 2, an AUC at 0.5, or loss and accuracy at chance
        "validation_never_improved",  # validation accuracy low and never clearly better, training not far ahead
        "validation_constant",  # the very same validation loss at every evaluation while the training loss moved
        "single_class_predictions",  # a printed confusion matrix with every prediction in one column
        "data_wait_dominates",  # per-step timings: most of each step is spent waiting for the next batch
        "data_wait_stalls",  # per-step timings: batches mostly ready at once, but some steps wait seconds for data
        "gcsfuse_mounted",  # the log shows Cloud Storage FUSE mounting a bucket (the user ran gcsfuse)
        "loss_spiked",  # the training loss steady, then doubled mid-run and stayed up, a loss turned NaN, or a
        # perplexity above a million (worse than a uniform guess over any vocabulary): the run blew up
        "loss_recovered",  # the training loss ended at half its earlier peak or lower: training went on from it
        "nonfinite_only_at_start",  # a loss NaN or infinite at its first value only, finite at three or more after
        "validation_loss_never_finite",  # a validation loss NaN at every evaluation (three or more), every training
        # loss a number at each of its values: the evaluation's loss fails, training does not diverge
        "r2_ended_good",  # two or more R² values printed, the last at 0.5 or better: the model explains the variance
        "finished_cleanly",  # the log's last lines report a clean end (exit code 0, training complete), no error after
        "shuffle_buffer_filled",  # tf.data's shuffle buffer reported full: its slow filling ended
        "sitecustomize_errors_only",  # the only errors are a failed sitecustomize's, which Python reports and runs on
        "worker_death_at_teardown",  # loader workers' deaths told only as the iterator was torn down, another error
        # having ended the run (PyTorch's "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__")
        "traceback_cut_in_data_library",  # the log ends inside a traceback whose innermost frame is a data
        # library's (Hugging Face datasets, h5py, torch.utils.data, tf.data, PIL...): it failed reading data
        "package_failed_at_import",  # the last traceback was raised as the program imported an installed package
        # (its own import statement, then module top levels into the package): the environment, before training
        "missing_path_being_written",  # the last missing-path exception was raised writing a file (a save, open()
        # in a write mode): an output folder the program never made, not its data
        "raised_outside_data_code",  # the last traceback ended in its exception, and none of its frames reads data (a
        # data library's code, a dataset's __getitem__ or collate): what it raised is no data failure
        "stopped_at_its_limit",  # the batch scheduler ended the job at the run time it was given, or its owner
        # cancelled it (Slurm's DUE TO TIME LIMIT, LSF's TERM_RUNLIMIT and TERM_OWNER, PBS's walltime, a Kubernetes
        # Job's deadline), or the job requeued itself on the warning signal before its limit: the SIGTERM and the kill
        # that follow are the limit's, no reclaim and no memory kill
        "ignored_exceptions_only",  # every exception is one Python reported as ignored (raised in a destructor or
        # at interpreter shutdown, "Exception ignored in: <bound method Session.__del__"): none stopped the program
        "download_recovered_from_mirror",  # a download that failed over to the next mirror ("Failed to download
        # (trying next)"), an archive extracted after the last such failure: the data arrived from another host
        "spawned_before_main",  # Python's multiprocessing refused to start a process before the main module had
        # finished importing (spawn start method: Windows, macOS): loader workers or a pool started at import, with no
        # `if __name__ == "__main__":` guard - the workers that then die or time out are its echo, not the data's
    }
    | {f"job_error_code_{code}" for code in range(1, 17)}  # google.rpc.Code of CustomJob.error
)

# RE2 (linear time, no look-behind): these scan the whole joined log once.
_PROGRESS = re2.compile(
    r"(?mi)\b(?:epoch|step|iter(?:ation)?)\s*[:=#]?\s*\d+|\d+/\d+\s*\[[=>.\s]*\]|\d+(?:\.\d+)?\s*(?:it/s|s/it)\b"
)
_ERRORISH = re2.compile(
    r"(?mi)traceback|error|exception|fatal|killed|abort|segmentation fault|core dumped|non-zero|"
    r"exit(?:ed)? (?:code|status)|terminat|fail"
)
# A program's own report that it ended well: an IDE's "Process finished with exit code 0", a launcher's "exited with
# code 0", a trainer's "Training complete(d)/done/finished", "Finished training" ("训练完成"), the Hugging Face
# Trainer's closing metrics ({'train_runtime': ...}, printed when train() returns).
_CLEAN_END = re2.compile(
    r"(?i)process finished with exit code 0\b|exited with (?:exit )?code 0\b|\btraining (?:is )?(?:done|complete|"
    r"completed|finished)\b|\bfinished training\b|['\"]train_runtime['\"]:|训练(?:完成|结束)"
    r"|`Trainer\.fit` stopped: `max_(?:epochs|steps)=\d+` reached"  # Lightning's run that ran its full length
    r"|\blaunch\.py:\d+:main\] Process \d+ exits successfully"  # DeepSpeed's launcher: a worker process returned 0
    r"|\bReporting training SUCCESS\b|\bCompleted - Training job completed\b"  # SageMaker's toolkit and job status
    # Vertex AI's and AI Platform's own word that the job or its task succeeded (service log, SDK, gcloud describe)
    r"|\b(?:Task|Job) completed successfully\b|\bJOB_STATE_SUCCEEDED\b|^\s*state: SUCCEEDED\s*$"
)
_CLEAN_END_WITHIN = 5  # of the last non-blank lines
# ... or the run's epoch count at its planned total ("Epoch [10/10]", "Epoch 20/20"): it trained its full length
_EPOCH_OF_TOTAL = re2.compile(r"(?i)\bepoch\s*[\[(]?\s*(\d+)\s*/\s*(\d+)\b")
# ... unless the same line hedges it ("Training finished. If you see error messages above, training did not complete
# successfully") or the log raised an exception somewhere: then the end reports a run that broke
_CLEAN_END_HEDGED = re2.compile(r"(?i)\bnot\b|unsuccess|\bfail|\berror")
_EXCEPTION_AT_START = r"^\W*(?:[\w.]+\.)?\w*(?:Error|Exception)\b:"  # a raised exception's last line
_RAISED = re2.compile(r"(?m)Traceback \(most recent call last\)|" + _EXCEPTION_AT_START)
# A batch scheduler's own record that the job reached the run time it asked for, or that its owner killed it (LSF's
# exit reasons name both; Slurm and PBS name the time limit; a Kubernetes Job past activeDeadlineSeconds)
_LIMIT_OR_OWNER_STOP = re2.compile(
    r"CANCELLED AT \S+ DUE TO TIME LIMIT|\bTERM_(?:RUNLIMIT|OWNER)\b|job killed after reaching LSF run time limit"
    r"|PBS: job killed: walltime \d+ exceeded limit|Job was active longer than specified deadline"
)
_LIMIT_WORDS = (b"LIMIT", b"TERM_OWNER", b"run time limit", b"walltime", b"specified deadline")  # bytes first: cheaper
# A job that put itself back in the queue when the scheduler's warning signal came ahead of its time limit (Slurm's
# `--signal=USR1@90` and a handler that checkpoints and runs `scontrol requeue`): Slurm then records "DUE TO JOB
# REQUEUE" as it would for a preemption, but the log shows the warning signal first. A planned walltime restart.
_REQUEUE_STOP = re2.compile(r"CANCELLED AT \S+ DUE TO JOB REQUEUE")
_WARNING_SIGNAL = re2.compile(r"\bSIG ?USR1\b|\bUSR1\b")
# gcsfuse's own start-up lines: "Start gcsfuse/0.40.0", "Mounting file system \"B\"...", "successfully mounted"
_GCSFUSE_MOUNT = (b"Start gcsfuse/", b"Mounting file system ", b"File system has been successfully mounted")
_NEXT_MIRROR = re2.compile(r"Failed to download \(trying next\)")
_EXTRACTED = re2.compile(r"(?m)^\W*Extracting \S+ to \S+")
_MATRIX_START = re2.compile(r"(?m)^[ \t]*\[\[[ \t]*\d")  # a printed confusion matrix: "[[   0   0 7917   0]"
_MATRIX_ROW = re.compile(r"^\s*\[{1,2}\s*((?:\d+\s+)+\d+)\s*\]{1,2}\s*$")
# A data loader's iterator torn down (garbage-collected as the process unwinds): an error raised in its __del__ is
# printed as "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x...>" and its traceback
_TEARDOWN = re2.compile(r"(?m)^Exception ignored in: <(?:function|bound method) \w*DataLoaderIter\w*\.__del__")
_WORKER_DEATH = re2.compile(r"(?m)killed by signal")
_EXCEPTION_LINE = re.compile(_EXCEPTION_AT_START)
_TEARDOWN_LINES = 40  # the teardown's traceback ends at its exception line, within these
IGNORED_NOTICE = "Exception ignored in: "  # Python's report of an exception nothing could catch
_IGNORED = re2.compile(re2.escape(IGNORED_NOTICE))
# A coefficient of determination and its value ("R2: -0.31", "r2_score = 0.87", "R²_rand=0.9931", "R²: 0.91": no
# word boundary follows the superscript two before a colon, so "R²" is matched on its own)
_R2_VALUE = re2.compile(  # RE2 over the log's bytes: one pass in C (a Python pattern per line costs ms per 5,000)
    r"(?i)\b(?:(?:r\^?2|r2|r-squared|r_squared|coefficient of determination)(?:[ _]score)?\b|r²(?:[ _]score\b)?)"
    r"[^\n:=]*[:=][ \t]*"
    r"(-?[ ]?\d+(?:\.\d+)?)"
)
_R2_GOOD = 0.5
# Python imports the image's sitecustomize before the program; when that fails it prints "Error in sitecustomize;
# set PYTHONVERBOSE for traceback:" and the error's last line (on the same line or the next), then runs the program
SITECUSTOMIZE_NOTICE = "Error in sitecustomize"
_NO_MODULE = re2.compile(r"(?m)No module named")
_LIFECYCLE = frozenset({"Job failed.", "Finished tearing down training program.", "Tearing down training program."})
_REPLICA = re.compile(r"^workerpool\d+-\d+$")
_REPLICA_OF = attrgetter("replica")


def _single_class_matrix(doc: LogDocument) -> Finding | None:
    """A confusion matrix (numpy/sklearn print) whose every prediction falls in one column: the model predicts
    one class whatever the input."""
    if b"[[" not in doc.data:  # a bytes search is many times faster than the pattern's scan, which needs "[[" too
        return None
    for match in _MATRIX_START.finditer(doc.data):
        start = doc.line_at(match.start())
        rows: list[list[int]] = []
        for index in range(start, min(len(doc.lines), start + 50)):
            row = _MATRIX_ROW.match(doc.lines[index].text)
            if row is None:
                break
            rows.append([int(cell) for cell in row.group(1).split()])
            if doc.lines[index].text.rstrip().endswith("]]") and index > start:
                break
        if len(rows) < 2 or len({len(r) for r in rows}) != 1 or len(rows) != len(rows[0]):
            continue
        columns = {i for r in rows for i, cell in enumerate(r) if cell}
        if len(columns) == 1 and sum(1 for r in rows if any(r)) >= 2:
            column = next(iter(columns))
            return Finding(
                (start, start + len(rows) - 1),
                f"confusion matrix: all {sum(r[column] for r in rows)} predictions in column {column + 1} of "
                f"{len(rows)}",
            )
    return None


def _recovered_from_mirror(data: bytes) -> bool:
    """An archive extracted after the last download that failed over to the next mirror (torchvision's datasets try
    each mirror in turn): that file came from another host."""
    failed = [m.start() for m in _NEXT_MIRROR.finditer(data)]
    extracted = [m.start() for m in _EXTRACTED.finditer(data)]
    return bool(failed and extracted) and extracted[-1] > failed[-1]


def _worker_death_at_teardown(doc: LogDocument) -> bool:
    """Every "killed by signal" line stands in the traceback of a data-loader iterator's teardown, and an exception
    outside those tracebacks ended the run: the workers died because the process went down (a worker that dies
    mid-epoch is reported by the training loop's own traceback, outside any teardown)."""
    if b"__del__" not in doc.data or b"killed by signal" not in doc.data:
        return False
    teardown: set[int] = set()
    for match in _TEARDOWN.finditer(doc.data):
        start = doc.line_at(match.start())
        for index in range(start, min(len(doc.lines), start + _TEARDOWN_LINES)):
            teardown.add(index)
            if index > start and _EXCEPTION_LINE.match(doc.lines[index].text):
                break
    deaths = {doc.line_at(match.start()) for match in _WORKER_DEATH.finditer(doc.data)}
    if not teardown or not deaths <= teardown:
        return False
    return any(index not in teardown and _EXCEPTION_LINE.match(text) for index, text in enumerate(doc.texts))


def _ignored_exceptions_only(doc: LogDocument) -> bool:
    """Every exception line ends a traceback Python opened with "Exception ignored in:" (ignored_tracebacks)."""
    if _IGNORED.search(doc.data) is None:
        return False
    ignored = ignored_tracebacks(doc.texts, [doc.line_at(match.start()) for match in _IGNORED.finditer(doc.data)])
    # an exception line names an Error or an Exception: the plain substring test spares the regex most lines
    raised = [i for i, t in enumerate(doc.texts) if ("Error" in t or "Exception" in t) and _EXCEPTION_LINE.match(t)]
    return bool(raised) and all(index in ignored for index in raised)


def ignored_tracebacks(texts: Sequence[str], notices: Iterable[int] | None = None) -> set[int]:
    """The lines of each traceback Python opened with "Exception ignored in:", notice to exception line: raised
    where nothing could catch it (a destructor, a finaliser at exit), reported, and the program went on or had
    already finished. The notice may follow a progress bar's \\r on its line. `notices`: the notices' lines, when
    the caller found them already."""
    if notices is None:
        notices = [i for i, text in enumerate(texts) if IGNORED_NOTICE in text]
    ignored: set[int] = set()
    for start in notices:
        for index in range(start, min(len(texts), start + _TEARDOWN_LINES)):
            ignored.add(index)
            if index > start and _EXCEPTION_LINE.match(texts[index]):
                break
    return ignored


def _sitecustomize_errors_only(doc: LogDocument) -> bool:
    """Every exception line and every "No module named" is the line after (or the same as) Python's "Error in
    sitecustomize" notice."""
    if SITECUSTOMIZE_NOTICE.encode() not in doc.data:
        return False
    texts = doc.texts
    errors = {doc.line_at(match.start()) for match in _NO_MODULE.finditer(doc.data)}
    errors.update(i for i, text in enumerate(texts) if _EXCEPTION_LINE.match(text))
    return bool(errors) and all(reported_by_sitecustomize(texts, i) for i in errors)


def reported_by_sitecustomize(texts: Sequence[str], index: int) -> bool:
    """Whether line `index` is Python's notice of a failed sitecustomize import or the error line printed after it."""
    return SITECUSTOMIZE_NOTICE in texts[index] or (index > 0 and SITECUSTOMIZE_NOTICE in texts[index - 1])


def _ran_full_length(text: str) -> bool:
    """A line counting the run's last planned epoch ("Epoch [10/10]")."""
    count = _EPOCH_OF_TOTAL.search(text)
    return count is not None and int(count.group(1)) == int(count.group(2)) > 0


def _r2_ended_good(doc: LogDocument) -> bool:
    """Two or more R² values printed, the last at 0.5 or better: whatever it was in the first steps (below zero, as a
    model starts worse than predicting the mean), the model came to explain most of the variance."""
    values = [m.group(1) for m in _R2_VALUE.finditer(doc.data)]
    return len(values) >= 2 and float(values[-1].replace(b" ", b"")) >= _R2_GOOD


class JobFacts(NamedTuple):
    names: frozenset[str]  # the facts that hold (FACT_NAMES)
    findings: dict[str, Finding]  # the lines and sentence showing a fact (the curve facts), and places signals use
    curves: Curves  # the training curves read from the log


def derive_facts(doc: LogDocument, job: JobInfo | None) -> JobFacts:
    """The facts that hold for this job, and for the training-curve facts the lines and sentence that show them."""
    facts: set[str] = set()
    lines = doc.lines
    curves = read_curves(doc)
    if curves.any or _PROGRESS.search(doc.data):
        facts.add("steps_logged")
    else:
        facts.add("no_steps_logged")
    if any(words in doc.data for words in _GCSFUSE_MOUNT):
        facts.add("gcsfuse_mounted")
    limit_stop = _LIMIT_OR_OWNER_STOP.search(doc.data) if any(w in doc.data for w in _LIMIT_WORDS) else None
    if limit_stop is None and b"DUE TO JOB REQUEUE" in doc.data:
        requeued, warned = _REQUEUE_STOP.search(doc.data), _WARNING_SIGNAL.search(doc.data)
        limit_stop = requeued if requeued and warned and warned.start() < requeued.start() else None
    if limit_stop is not None:
        facts.add(LIMIT_STOP)
    if b"has finished its bootstrapping phase" in doc.data:
        facts.add("spawned_before_main")
    if b"trying next" in doc.data and _recovered_from_mirror(doc.data):
        facts.add("download_recovered_from_mirror")
    if b"Shuffle buffer filled" in doc.data:
        facts.add("shuffle_buffer_filled")
    if _sitecustomize_errors_only(doc):
        facts.add("sitecustomize_errors_only")
    if _worker_death_at_teardown(doc):
        facts.add("worker_death_at_teardown")
    if _ignored_exceptions_only(doc):
        facts.add("ignored_exceptions_only")
    if not any(lines[doc.line_at(m.start())].text.strip() not in _LIFECYCLE for m in _ERRORISH.finditer(doc.data)):
        facts.add("no_error_lines")
    tail = [line.text for line in lines[-_CLEAN_END_WITHIN:]]
    ends = [
        i
        for i, text in enumerate(tail)
        if (_CLEAN_END.search(text) or _ran_full_length(text)) and not _CLEAN_END_HEDGED.search(text)
    ]
    if ends and not any(_ERRORISH.search(text) for text in tail[ends[-1] + 1 :]) and not _RAISED.search(doc.data):
        facts.add("finished_cleanly")
    said = (i for i in range(len(lines) - 1, -1, -1) if (text := lines[i].text.strip()) and text not in _LIFECYCLE)
    at_end = next(said, None)  # the log's last line, the platform's lifecycle lines aside
    replicas = {replica for replica in set(map(_REPLICA_OF, lines)) if replica and _REPLICA.match(replica)}
    if len(replicas) > 1:
        facts.add("multi_replica")
    if job is not None:
        if job.spot:
            facts.add("spot")
        if job.replica_total > 1:
            facts.add("multi_replica")
        if job.state == "JOB_STATE_FAILED":
            facts.add("job_failed")
        if job.error_code:
            facts.add(f"job_error_code_{job.error_code}")
    if b"Job failed." in doc.data and any(
        line.replica == "service" and line.text.strip() == "Job failed." for line in lines
    ):
        facts.add("job_failed")
    if loss_recovered(curves.primary(TRAIN, LOSS)):
        facts.add("loss_recovered")
    if nonfinite_only_at_start(curves):
        facts.add("nonfinite_only_at_start")
    if validation_loss_never_finite(curves):
        facts.add("validation_loss_never_finite")
    if _r2_ended_good(doc):
        facts.add("r2_ended_good")
    findings = curve_findings(curves)
    if limit_stop is not None:
        findings[LIMIT_STOP] = Finding((doc.line_at(limit_stop.start()),), "the scheduler stopped the job")
    if at_end is not None:  # not a fact: the line a signal with `at_end` must match
        findings[LOG_END] = Finding((at_end,), "the log's last line")
    # the lines printing a training run's values, its evaluations' too ("step:4000/20000 val_loss:2.17")
    trained = sorted({p.line for series in curves.series.values() for p in series.points})
    if len(trained) >= TRAINED_ON_LINES:  # not a fact: a signal with `ends_training` matched before it was outlived
        findings[TRAINED_ON] = Finding((trained[-TRAINED_ON_LINES],), "training printed values on the lines after it")
    if curves.run_start is not None:  # not a fact: where the classifier stops reading a last-run-only class's words
        findings[LAST_RUN] = Finding((curves.run_start,), f"the log's last run starts on line {curves.run_start + 1}")
    matrix = _single_class_matrix(doc)
    if matrix is not None:
        findings["single_class_predictions"] = matrix
    last_traceback = last_plain_traceback(doc)  # read once: two facts are read from its frames
    imported = package_failed_at_import(last_traceback)
    cut = traceback_cut_in_data_library(doc) if imported is None else None  # importing a data library reads no data
    if imported is not None:
        findings["package_failed_at_import"] = imported
    if cut is not None:
        findings["traceback_cut_in_data_library"] = cut
    outside = raised_outside_data_code(doc, last_traceback)
    if outside is not None:
        findings["raised_outside_data_code"] = outside
    written = missing_path_being_written(doc)
    if written is not None:
        findings["missing_path_being_written"] = written
    waits = data_waits(doc)
    waiting = data_wait_dominates(doc, waits)
    if waiting is not None:
        findings["data_wait_dominates"] = waiting
    stalling = data_wait_stalls(waits)
    if stalling is not None:
        findings["data_wait_stalls"] = stalling
    facts.update(findings)
    return JobFacts(frozenset(facts & FACT_NAMES), findings, curves)
