"""Where no rule has evidence enough, the text model's words may name the class (bot/diagnosis/words/word_evidence.py).

Real parts: the bundled knowledge base and classifier, with the text model replaced by a small real TextModel
whose words are chosen here (made-up words no rule knows), so that each condition is seen to decide; and the
bundled model file, whose `answer` section is validated at load.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bot.diagnosis.calibration import Curve
from bot.diagnosis.classifier import Classifier
from bot.diagnosis.knowledge import default_knowledge_dir, load_knowledge
from bot.diagnosis.words.text_model import MODEL_FILE, TextModel, load_text_model
from bot.errors import KnowledgeBaseError
from bot.intake.log_input import text_to_lines
from bot.render.alert_blocks import WORDS_NOTE
from bot.render.alert_context import AlertContext
from bot.render.channel_message import diagnosis_message
from bot.render.diagnosis_card import diagnosis_card
from bot.render.text import diagnosis_text

CURVE = Curve(((0.45, 0.69), (0.9, 0.75)))
FAILURE = "stage two aborted\nERROR: zebra zebra quagga while loading the shard"


def model(answer_min: float | None = 0.4) -> TextModel:
    """zebra and quagga speak for host_oom, quokka for underfitting, calm for unknown."""
    return TextModel(
        classes=("host_oom", "underfitting", "unknown"),
        intercept=(0.0, 0.0, 0.0),
        terms={
            "zebra": (1.0, (8.0, 0.0, 0.0)),
            "quagga": (1.0, (4.0, 0.0, 0.0)),
            "quokka": (1.0, (0.0, 8.0, 0.0)),
            "calm": (1.0, (0.0, 0.0, 8.0)),
        },
        token_pattern=re.compile(r"[A-Za-z_][A-Za-z0-9_]+"),
        answer_min=answer_min,
        answer_curve=CURVE if answer_min is not None else None,
    )


def classify(text: str, text_model: TextModel | None):
    kb = load_knowledge()
    kb.text_model = text_model
    return Classifier(kb).classify(text_to_lines(text))


def test_no_rule_matches_so_the_words_name_the_class_with_their_lines_as_evidence() -> None:
    assert classify(FAILURE, None).failure_class == "unknown"  # no rule knows these words
    diagnosis = classify(FAILURE, model())
    assert (diagnosis.failure_class, diagnosis.basis) == ("host_oom", "words")
    assert diagnosis.confidence == 0.75  # the curve's value, below what a rule's proof reaches
    assert diagnosis.evidence == ["ERROR: zebra zebra quagga while loading the shard"]
    assert "unknown" in [a.failure_class for a in diagnosis.alternatives]  # nothing wrong stays possible
    assert "basis:      the words of its lines (no rule matched): likely, not proven" in diagnosis_text(diagnosis)


def test_a_curve_class_is_never_named_from_words() -> None:
    diagnosis = classify(FAILURE.replace("zebra", "quokka"), model())
    assert (diagnosis.failure_class, diagnosis.basis) == ("unknown", "rules")


def test_words_of_a_running_job_with_no_error_name_nothing() -> None:
    healthy = "\n".join(f"epoch {n} step {n * 100} loss {2.0 / n:.3f} zebra" for n in range(1, 9))
    assert classify(healthy, model()).failure_class == "unknown"
    assert classify(healthy + "\nERROR: zebra quagga", model()).failure_class == "host_oom"


def test_words_on_a_line_that_tells_of_no_failure_name_nothing() -> None:
    progress = "backfill: partition 7 done, zebra quagga rows\nthe exporter stopped\nJob failed."
    assert classify(progress, model()).failure_class == "unknown"
    exit_report = "The replica workerpool0-0 exited with a non-zero status of 3. zebra quagga"
    assert classify(exit_report, model()).failure_class == "unknown"  # Vertex's exit report is on every failure
    assert classify(progress.replace("done,", "failed,"), model()).failure_class == "host_oom"


def test_an_unlikely_class_or_unknown_itself_is_no_answer() -> None:
    mixed = "ERROR: zebra calm calm calm quokka quokka"  # host_oom no likelier than the others
    assert classify(mixed, model()).failure_class == "unknown"
    assert classify("ERROR: calm calm", model()).failure_class == "unknown"


def test_a_model_without_an_answer_section_only_fills_alternatives() -> None:
    diagnosis = classify(FAILURE, model(answer_min=None))
    assert diagnosis.failure_class == "unknown"
    assert [(a.failure_class, a.source) for a in diagnosis.alternatives] == [("host_oom", "text model")]


def test_a_rules_answer_is_never_replaced_by_words() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB\nERROR: zebra zebra zebra"
    diagnosis = classify(oom, model())
    assert (diagnosis.failure_class, diagnosis.basis) == ("accelerator_oom", "rules")


def test_the_bundled_model_may_answer_and_never_claims_a_rules_confidence() -> None:
    bundled = load_text_model(default_knowledge_dir() / MODEL_FILE)
    assert bundled is not None and bundled.answer_min is not None and bundled.answer_curve is not None
    assert 0.0 < bundled.answer_min < 1.0
    assert max(y for _, y in bundled.answer_curve.points) < 0.8


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"curve": [[0.5, 0.6]]}, "min_probability"),
        ({"min_probability": 0.4, "curve": []}, "curve"),
        ({"min_probability": 0.4, "curve": [[0.5, 0.7], [0.6, 0.6]]}, "curve"),
        ({"min_probability": 1.5, "curve": [[0.5, 0.6]]}, "min_probability"),
        ([0.4], "answer"),
    ],
)
def test_a_malformed_answer_section_stops_the_load(tmp_path: Path, answer: object, problem: str) -> None:
    raw = json.loads((default_knowledge_dir() / MODEL_FILE).read_text(encoding="utf-8"))
    raw["answer"] = answer
    path = tmp_path / "model.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match=problem):
        load_text_model(path)


def test_the_alert_and_its_card_say_the_words_named_the_class() -> None:
    diagnosis = classify(FAILURE, model())
    ctx = AlertContext(job_id="8501620632646057984", job_key="p/8501620632646057984", project="p", region="us-central1")
    for blocks in (diagnosis_message(diagnosis, ctx)["blocks"], diagnosis_card(diagnosis, ctx)["blocks"]):
        assert WORDS_NOTE in json.dumps(blocks)
    by_rules = classify("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB", model())
    assert WORDS_NOTE not in json.dumps(diagnosis_message(by_rules, ctx)["blocks"])


def test_alternatives_are_listed_by_the_confidence_shown_whichever_found_them() -> None:
    # a rules answer short of 0.8 lists `unknown` (a rules alternative) and the text model adds host_oom: the
    # list reads highest first, not rules first
    text = "terminate called after throwing an instance of 'dmlc::Error'\n  what():  Create cublas handle failed\n"
    diagnosis = classify(text + "ERROR: zebra zebra quagga while loading the shard", model())
    assert diagnosis.failure_class == "accelerator_oom"
    shown = [(a.failure_class, a.source == "text model", a.confidence) for a in diagnosis.alternatives]
    assert [c for _, _, c in shown] == sorted((c for _, _, c in shown), reverse=True)
    assert shown[0][:2] == ("host_oom", True) and shown[1][0] == "unknown"


def test_a_source_line_an_ipython_traceback_quotes_tells_no_failure_of_the_run() -> None:
    # the strongest line for host_oom is the code IPython quotes under a frame's header (a numbered comment with an
    # error word in it), not something the run printed: no answer from words
    quoted = (
        "File /opt/conda/lib/python3.10/site-packages/zoo/jobs.py:210, in Runner.wait(self)\n"
        "    208 # an error here means zebra zebra quagga\n"
        "    209 # see the job's log\n"
        "stage two stopped"
    )
    assert classify(quoted, model()).failure_class == "unknown"
    # the same words printed by the run (no frame header above them) still name the class
    printed = "    208 # an error here means zebra zebra quagga\nstage two stopped"
    assert classify(printed, model()).failure_class == "host_oom"
