from bot.models import Alternative, Command, Diagnosis
from bot.render.text import diagnosis_text


def make_diagnosis(**overrides) -> Diagnosis:
    fields = {
        "failure_class": "cuda_oom",
        "confidence": 0.87,
        "title": "CUDA out of memory",
        "symptom": "torch.OutOfMemoryError while allocating activations",
        "evidence": ['Traceback (most recent call last):\n  File "train.py", line 9', "torch.OutOfMemoryError"],
        "remediation": ["Halve the per-device batch size.", "Enable gradient checkpointing."],
        "avoid": ["Rerunning unchanged."],
        "first_checks": ["Compare the batch size with the last good run."],
        "commands": [Command(title="Describe the job", command="gcloud ai custom-jobs describe 1 \\\n  --region=r")],
        "alternatives": [Alternative(failure_class="host_oom", confidence=0.3)],
        "first_failing_replica": "workerpool0-0",
        "cascade": ["workerpool1-0: NCCL watchdog timeout"],
    }
    fields.update(overrides)
    return Diagnosis(**fields)


def test_full_rendering():
    assert diagnosis_text(make_diagnosis(), source="job 8501620632646057984") == (
        "CUDA out of memory\n"
        "  class:      cuda_oom  confidence: 87%\n"
        "  source:     job 8501620632646057984\n"
        "  first failing replica: workerpool0-0\n"
        "  failed as a consequence:\n"
        "    workerpool1-0: NCCL watchdog timeout\n"
        "\n"
        "torch.OutOfMemoryError while allocating activations\n"
        "\n"
        "Evidence:\n"
        "    Traceback (most recent call last):\n"
        '      File "train.py", line 9\n'
        "    torch.OutOfMemoryError\n"
        "\n"
        "Check first:\n"
        "  - Compare the batch size with the last good run.\n"
        "\n"
        "What to do:\n"
        "  1. Halve the per-device batch size.\n"
        "  2. Enable gradient checkpointing.\n"
        "\n"
        "Avoid:\n"
        "  - Rerunning unchanged.\n"
        "\n"
        "Commands:\n"
        "  Describe the job:\n"
        "    gcloud ai custom-jobs describe 1 \\\n"
        "      --region=r\n"
        "\n"
        "Also possible:\n"
        "  - host_oom 30%\n"
    )


def test_unknown_class_with_nothing_else():
    text = diagnosis_text(Diagnosis(failure_class="unknown", confidence=0.0, title="Unrecognised failure"))
    assert text == "Unrecognised failure\n  class:      unknown (no known failure pattern matched)\n"


def test_colour_only_when_asked():
    plain = diagnosis_text(make_diagnosis())
    coloured = diagnosis_text(make_diagnosis(), color=True)
    assert "\x1b" not in plain
    assert coloured.startswith("\x1b[1mCUDA out of memory\x1b[0m\n")
    assert "\x1b[36mcuda_oom\x1b[0m" in coloured


def test_control_characters_from_logs_cannot_drive_the_terminal():
    diagnosis = make_diagnosis(
        title="t\x1b]0;pwned\x07",
        evidence=["\x1b[2J\x1b[Hcleared", "tab\tkept", "bidi \u202e reversed"],
        commands=[Command(title="x\x1b[31m", command="echo \x1b[0m")],
    )
    text = diagnosis_text(diagnosis)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "t\\x1b]0;pwned\\x07" in text
    assert "    \\x1b[2J\\x1b[Hcleared\n" in text
    assert "    tab\tkept\n" in text
    assert "bidi \\u202e reversed" in text


def test_empty_title_has_a_fallback():
    assert diagnosis_text(Diagnosis(failure_class="unknown", confidence=0.0, title="")).startswith(
        "Training job failed\n"
    )


def test_an_alternative_beside_a_near_certain_answer_reads_below_one_percent_not_zero():
    # beside a 99.6% answer the alternatives share the 0.4% left: "0%" would say the class was ruled out
    diagnosis = Diagnosis(
        failure_class="accelerator_oom",
        confidence=0.996,
        title="GPU out of memory",
        alternatives=[
            Alternative(failure_class="distributed_setup", confidence=0.003),
            Alternative(failure_class="application_error", confidence=0.0),
        ],
    )
    text = diagnosis_text(diagnosis)
    assert "GPU out of memory" in text and "100%" in text
    assert "distributed_setup <1%" in text
    assert "application_error 0%" in text  # nothing left is nothing
