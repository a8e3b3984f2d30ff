import json
import re
import time
import warnings
from datetime import UTC, datetime

import pytest
from slack_sdk.models.blocks import Block

from bot.models import Alternative, Command, Diagnosis, JobInfo, WorkerPool
from bot.render.alert_actions import ACTION_ACKNOWLEDGE, ACTION_RERUN, ACTION_UNACKNOWLEDGE
from bot.render.alert_context import AlertContext
from bot.render.block_kit import MAX_MESSAGE_TEXT, message_digest, text_length
from bot.render.channel_message import CHANNEL_MESSAGE_TEXT, diagnosis_message
from bot.render.diagnosis_card import diagnosis_card

# Everything a hostile log line or job field might try: mentions, a disguised link, a raw & and a fence.
HOSTILE = "<!channel> <!here> <!everyone> <@U123> <#C999> <!subteam^S1> <https://evil.example|click> & BREAK```OUT"
FAILED_AT = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
ACKED_AT = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)


def make_diagnosis(**overrides) -> Diagnosis:
    fields = {
        "failure_class": "cuda_oom",
        "confidence": 0.87,
        "title": "CUDA out of memory",
        "symptom": "torch.OutOfMemoryError while allocating activations",
        "evidence": [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            "The replica workerpool0-0 exited with a non-zero status of 1.",
        ],
        "remediation": ["Halve the per-device batch size.", "Enable gradient checkpointing."],
        "avoid": ["Rerunning unchanged: it will fail the same way."],
        "first_checks": ["Compare the batch size with the last good run."],
        "commands": [
            Command(title="Describe the job", command="gcloud ai custom-jobs describe 1 --region=us-central1"),
            Command(title="Read the logs", command="gcloud ai custom-jobs stream-logs 1 --region=us-central1"),
        ],
        "alternatives": [Alternative(failure_class="host_oom", confidence=0.3)],
        "first_failing_replica": "workerpool0-0",
        "cascade": ["workerpool1-0: NCCL watchdog timeout"],
    }
    fields.update(overrides)
    return Diagnosis(**fields)


def make_ctx(**overrides) -> AlertContext:
    fields = {
        "job": JobInfo(
            job_id="8501620632646057984",
            display_name="resnet-train",
            worker_pools=[
                WorkerPool(
                    machine_type="a2-highgpu-1g",
                    accelerator_type="NVIDIA_TESLA_A100",
                    accelerator_count=1,
                    replica_count=1,
                ),
                WorkerPool(machine_type="a2-highgpu-1g", replica_count=3),
            ],
            labels={"team": "vision"},
            start_time=datetime(2024, 5, 1, 9, 0, tzinfo=UTC),
        ),
        "project": "my-proj",
        "region": "us-central1",
        "job_id": "8501620632646057984",
        "display_name": "resnet-train",
        "first_failing_replica": "workerpool0-0",
        "failed_at": FAILED_AT,
        "attempt": 2,
        "job_key": "my-proj/us-central1/8501620632646057984",
    }
    fields.update(overrides)
    return AlertContext(**fields)


# ---- checks shared by every test ------------------------------------------------------------------------


def texts(node) -> list[str]:
    """Every "text" string in a block tree, counted independently of the renderer."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "text" and isinstance(value, str):
                found.append(value)
            else:
                found += texts(value)
    elif isinstance(node, list):
        for value in node:
            found += texts(value)
    return found


def check_limits(message: dict, *, buttons: bool = True) -> None:
    """Slack's limits: slack_sdk validates what it can; the rest is counted here. The channel message ends
    with its buttons; the card (`buttons=False`) has none."""
    assert set(message) == {"text", "blocks"}
    blocks = message["blocks"]
    assert 1 <= len(blocks) <= 50
    assert 0 < len(message["text"]) <= 3000
    assert sum(len(t) for t in texts(blocks)) <= 11_000
    assert sum(len(t) for t in texts(blocks)) <= MAX_MESSAGE_TEXT  # our own, stricter budget
    for block in blocks:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an unknown key would only warn
            parsed = Block.parse(block)
            assert parsed is not None
            assert parsed.to_dict() == block  # to_dict() raises SlackObjectFormationError on over-long fields
        kind = block["type"]
        if kind == "header":
            assert block["text"]["type"] == "plain_text"
            assert 0 < len(block["text"]["text"]) <= 150
        elif kind == "section":
            assert 0 < len(block["text"]["text"]) <= 3000
        elif kind == "context":
            assert 1 <= len(block["elements"]) <= 10
            assert all(len(e["text"]) <= 2000 for e in block["elements"])
        elif kind == "actions":
            assert 1 <= len(block["elements"]) <= 25
            for button in block["elements"]:
                assert len(button["text"]["text"]) <= 75
                assert len(button["value"]) <= 2000
        for text in texts(block):
            assert text.count("```") % 2 == 0, text  # every fence we open is closed
    if buttons:
        assert blocks[-1]["type"] == "actions"
    else:
        assert all(block["type"] != "actions" for block in blocks)
    assert text_length(blocks) == sum(len(t) for t in texts(blocks))


def check_inert(message: dict) -> None:
    """No injected control sequence survives; the only <...> are the ones the renderer builds."""
    raw = json.dumps(message, ensure_ascii=False)
    for bad in ("<!channel>", "<!here>", "<!everyone>", "<@U123>", "<#C999>", "<!subteam", "<https://evil"):
        assert bad not in raw
    assert "BREAK```" not in raw and "```OUT" not in raw
    for text in texts(message):
        assert re.search(r"&(?!amp;|lt;|gt;)", text) is None, text
        for token in re.findall(r"<[^>]*>?", text):
            assert re.fullmatch(
                r"<!date\^\d+\^\{date_short_pretty\} \{time\}\|[0-9: -]+UTC>"
                r"|<@[UW][A-Z0-9]+>"
                r"|<https://console\.cloud\.google\.com/[^ <>|]+\|[^<>|]+>",
                token,
            ), token


def section_texts(message: dict) -> list[str]:
    return [b["text"]["text"] for b in message["blocks"] if b["type"] == "section"]


def context_texts(message: dict) -> list[str]:
    return [e["text"] for b in message["blocks"] if b["type"] == "context" for e in b["elements"]]


def buttons(message: dict) -> list[dict]:
    return message["blocks"][-1]["elements"]


def render(diagnosis: Diagnosis | None = None, ctx: AlertContext | None = None) -> dict:
    """The channel message, after checking it and the card (both within Slack's limits, both inert)."""
    diagnosis, ctx = diagnosis or make_diagnosis(), ctx or make_ctx()
    render_card(diagnosis, ctx)
    message = diagnosis_message(diagnosis, ctx)
    check_limits(message)
    check_inert(message)
    return message


def render_card(diagnosis: Diagnosis | None = None, ctx: AlertContext | None = None) -> dict:
    """The full card (the thread reply, the /diagnose answer), checked."""
    card = diagnosis_card(diagnosis or make_diagnosis(), ctx or make_ctx())
    check_limits(card, buttons=False)
    check_inert(card)
    return card


# ---- layout ----------------------------------------------------------------------------------------------


def test_layout_of_the_channel_message():
    message = render()
    kinds = [b["type"] for b in message["blocks"]]
    assert kinds == [
        "header",
        "section",  # confidence, cascade (the symptom is the card's)
        "context",  # key facts
        "section",  # evidence
        "section",  # the first remedies
        "section",  # command 1
        "section",  # command 2
        "context",  # what the thread holds
        "divider",
        "actions",
    ]
    assert message["blocks"][0]["text"]["text"] == "resnet-train: CUDA out of memory"
    assert message["text"] == "Training job failed: resnet-train: CUDA out of memory (cuda_oom, 87%)"
    assert [f["text"] for f in message["blocks"][2]["elements"]] == [
        "Job `8501620632646057984` in `my-proj` · `us-central1`",
        "First failure `workerpool0-0`",
        "Machine `a2-highgpu-1g` · 1× `NVIDIA_TESLA_A100` · 4 replicas",
    ]
    headline, evidence, remedies, command1, command2 = section_texts(message)
    assert headline == (
        "*87% confidence* · `cuda_oom`\n"
        ":link: *Cascade:* workerpool1-0 timed out in NCCL collectives after workerpool0-0 failed (cuda_oom)."
    )
    assert "torch.OutOfMemoryError while allocating" not in json.dumps(message)  # the symptom: in the thread
    assert evidence == (
        "*Evidence*\n```\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "The replica workerpool0-0 exited with a non-zero status of 1.\n```"
    )
    assert remedies == "*What to do*\n1. Halve the per-device batch size.\n2. Enable gradient checkpointing."
    assert command1 == "*Describe the job*\n```\ngcloud ai custom-jobs describe 1 --region=us-central1\n```"
    assert command2.startswith("*Read the logs*\n```\n")
    assert context_texts(message)[-1] == ":speech_balloon: *In the thread:* first checks, what to avoid, logs"
    assert text_length(message["blocks"]) <= CHANNEL_MESSAGE_TEXT


def test_the_channel_message_shows_the_first_two_remedies_and_points_to_the_rest():
    remediation = [f"Step {i}: do thing number {i}." for i in range(1, 7)]
    message = render(make_diagnosis(remediation=remediation))
    [remedies] = [t for t in section_texts(message) if t.startswith("*What to do*")]
    assert remedies == "*What to do*\n1. Step 1: do thing number 1.\n2. Step 2: do thing number 2."
    assert "all 6 steps" in context_texts(message)[-1]
    card = render_card(make_diagnosis(remediation=remediation))
    [steps] = [t for t in section_texts(card) if "*What to do*" in t]
    assert all(f"{i}. Step {i}: do thing number {i}." in steps for i in range(1, 7))


def test_the_channel_message_holds_commands_only_whole_and_counts_the_rest():
    command = Command(title="Long", command="gcloud " + "--flag=value " * 60)
    message = render(make_diagnosis(commands=[command] * 3))
    assert not [t for t in section_texts(message) if t.startswith("*Long*")]  # 700+ characters: none fits
    assert context_texts(message)[-1].startswith(":speech_balloon: *In the thread:* 3 commands, ")
    assert len([t for t in section_texts(render_card(make_diagnosis(commands=[command] * 3))) if "*Long*" in t]) == 3


def test_long_evidence_lines_are_cut_in_the_middle_in_the_channel():
    line = "google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/" + "x" * 400 + (
        " does not have storage.objects.get access"
    )
    message = render(make_diagnosis(evidence=[line, "second", "third", "fourth", "fifth"]))
    [evidence] = [t for t in section_texts(message) if t.startswith("*Evidence*")]
    assert "google.api_core.exceptions.Forbidden" in evidence and "does not have storage.objects.get access" in evidence
    assert " … " in evidence and "… (2 more in the thread)" in evidence
    card = render_card(make_diagnosis(evidence=[line, "second", "third", "fourth", "fifth"]))
    assert line in "".join(section_texts(card))


@pytest.mark.parametrize(
    ("cascade", "first", "failure_class", "expected"),
    [
        (
            [f"workerpool{p}-{i} (distributed_setup): [E ProcessGroupNCCL.cpp:616] Watchdog caught collective "
             "operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 600031 milliseconds before timing out"
             for p, i in [(0, 1), (0, 2), (0, 3), (1, 0)]],
            "workerpool0-0",
            "accelerator_oom",
            "workerpool0-1..3 and workerpool1-0 timed out in NCCL collectives after workerpool0-0 ran out of GPU "
            "memory.",
        ),
        (
            ["workerpool1-0 (distributed_setup): RendezvousTimeoutError: timed out",
             "workerpool1-1 (distributed_setup): Connection reset by peer",
             "workerpool1-3 (distributed_setup): Connection reset by peer"],
            "workerpool0-0",
            "host_oom",
            "workerpool1-0 failed to rendezvous and workerpool1-1 and workerpool1-3 lost contact with the other "
            "replicas after workerpool0-0 ran out of host memory.",
        ),
        (
            [f"workerpool1-{i} (application_error): RuntimeError: boom" for i in range(9)],
            None,
            "accelerator_oom",
            "workerpool1-0..8 failed (application_error) as a consequence of the failure above.",
        ),
        (
            ["? (distributed_setup): NCCL timeout", "not the classifier's format"],
            "workerpool0-0",
            "preemption",
            "another replica timed out in NCCL collectives and another replica failed after workerpool0-0 was "
            "preempted.",
        ),
    ],
    ids=["oom-nccl", "mixed", "no-first-replica", "odd-entries"],
)
def test_the_cascade_is_one_line_naming_the_replicas_and_what_they_did(cascade, first, failure_class, expected):
    evidence = ["torch.OutOfMemoryError: CUDA out of memory."]
    diagnosis = make_diagnosis(failure_class=failure_class, cascade=cascade, evidence=evidence)
    ctx = make_ctx(first_failing_replica=first) if first else make_ctx(first_failing_replica=None)
    diagnosis = diagnosis.model_copy(update={"first_failing_replica": first})
    for message in (render(diagnosis, ctx), render_card(diagnosis, ctx)):
        lines = [line for t in section_texts(message) for line in t.splitlines() if "Cascade" in line]
        assert lines == [":link: *Cascade:* " + expected]


def test_the_cascade_line_is_escaped_and_bounded():
    cascade = [f"<!channel>&{i} (<x>): {HOSTILE}" for i in range(300)]
    message = render(make_diagnosis(cascade=cascade))
    [line] = [line for t in section_texts(message) for line in t.splitlines() if "Cascade" in line]
    assert line.startswith(":link: *Cascade:* &lt;!channel&gt;&amp;0, &lt;!channel&gt;&amp;1, ")
    assert "295 more failed (&lt;x&gt;) after workerpool0-0" in line and len(line) <= 320


def test_layout_of_the_card():
    message = render_card()
    kinds = [b["type"] for b in message["blocks"]]
    assert kinds == [
        "header",
        "context",  # facts
        "section",  # confidence, symptom, cascade
        "section",  # evidence
        "section",  # check first + what to do
        "section",  # avoid
        "section",  # command 1
        "section",  # command 2
        "context",  # also possible
        "context",  # links
    ]
    assert message["blocks"][0]["text"]["text"] == "resnet-train: CUDA out of memory"
    assert message["text"] == "Training job failed: resnet-train: CUDA out of memory (cuda_oom, 87%)"

    facts = message["blocks"][1]["elements"]
    assert [f["text"] for f in facts] == [
        "Project `my-proj`",
        "Region `us-central1`",
        "Job `8501620632646057984`",
        "First failure `workerpool0-0`",
        "Machine `a2-highgpu-1g` · 1× `NVIDIA_TESLA_A100` · 4 replicas",
        "Failed <!date^1714564800^{date_short_pretty} {time}|2024-05-01 12:00 UTC>",
        "2 failed attempts seen",
        "Labels `team=vision`",
    ]
    summary, evidence, remediation, avoid, command1, command2 = section_texts(message)
    assert summary.startswith("*87% confidence* · `cuda_oom`\ntorch.OutOfMemoryError while allocating")
    cascade = ":link: *Cascade:* workerpool1-0 timed out in NCCL collectives after workerpool0-0 failed (cuda_oom)."
    assert summary.endswith("\n" + cascade)
    assert evidence == (
        "*Evidence*\n```\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "The replica workerpool0-0 exited with a non-zero status of 1.\n```"
    )
    assert remediation == (
        "*Check first*\n• Compare the batch size with the last good run.\n"
        "*What to do*\n1. Halve the per-device batch size.\n2. Enable gradient checkpointing."
    )
    assert avoid == "*Avoid*\n• Rerunning unchanged: it will fail the same way."
    assert command1 == "*Describe the job*\n```\ngcloud ai custom-jobs describe 1 --region=us-central1\n```"
    assert command2.startswith("*Read the logs*\n```\n")
    alternatives, links = context_texts(message)[-2:]
    assert alternatives == "Also possible: `host_oom` 30%"
    assert "<https://console.cloud.google.com/vertex-ai/locations/us-central1/training/8501620632646057984" in links
    assert "|Job in console>" in links and "|Logs (all replicas)>" in links and "|Logs for workerpool0-0>" in links
    assert "resource.labels.task_name%3D%22workerpool0-0%22" in links
    assert ";timeRange=2024-05-01T08%3A50%3A00Z%2F2024-05-01T12%3A10%3A00Z" in links


def test_buttons_carry_only_the_job_key():
    message = render()
    assert [(b["action_id"], b["text"]["text"]) for b in buttons(message)] == [
        (ACTION_ACKNOWLEDGE, "Acknowledge"),
        (ACTION_RERUN, "Rerun"),
    ]
    assert all(b["value"] == "my-proj/us-central1/8501620632646057984" for b in buttons(message))
    rerun = buttons(message)[1]
    assert rerun["style"] == "primary"
    assert rerun["confirm"]["confirm"]["text"] == "Rerun"


def test_acknowledged_message_offers_undo_and_says_who():
    message = render(ctx=make_ctx(acknowledged_by="U0789ABC", acknowledged_at=ACKED_AT))
    assert [b["action_id"] for b in buttons(message)] == [ACTION_UNACKNOWLEDGE, ACTION_RERUN]
    assert buttons(message)[0]["text"]["text"] == "Undo acknowledge"
    assert all(b["value"] == make_ctx().job_key for b in buttons(message))
    assert (
        ":white_check_mark: Acknowledged by <@U0789ABC> at "
        "<!date^1714566600^{date_short_pretty} {time}|2024-05-01 12:30 UTC>"
    ) in context_texts(message)


def test_rerun_removes_the_rerun_button_and_links_the_new_job():
    message = render(ctx=make_ctx(rerun_by="W42", rerun_job_id="999"))
    assert [b["action_id"] for b in buttons(message)] == [ACTION_ACKNOWLEDGE]
    status = [t for t in context_texts(message) if t.startswith(":repeat:")]
    assert status == [
        ":repeat: Rerun by <@W42> as job "
        "<https://console.cloud.google.com/vertex-ai/locations/us-central1/training/999?project=my-proj|999>"
    ]


def test_a_rerun_in_another_region_is_linked_in_that_region():
    name = "projects/my-proj/locations/europe-west4/customJobs/1234"
    message = render(ctx=make_ctx(rerun_by="W42", rerun_job_id=name))
    status = [t for t in context_texts(message) if t.startswith(":repeat:")]
    assert status == [
        ":repeat: Rerun by <@W42> as job "
        "<https://console.cloud.google.com/vertex-ai/locations/europe-west4/training/1234?project=my-proj|1234>"
    ]


def test_acknowledged_and_rerun_together():
    message = render(ctx=make_ctx(acknowledged_by="U1", acknowledged_at=None, rerun_by="U2", rerun_job_id="7"))
    assert [b["action_id"] for b in buttons(message)] == [ACTION_UNACKNOWLEDGE]
    status_block = message["blocks"][-2]
    assert status_block["type"] == "context"
    assert [e["text"] for e in status_block["elements"]][0] == ":white_check_mark: Acknowledged by <@U1>"


@pytest.mark.parametrize("user", ["<!channel>", "U123\n", "u123", "B123", "U12 3", "U" + "1" * 40, ""])
def test_mentions_are_only_built_from_real_user_ids(user):
    message = render(ctx=make_ctx(acknowledged_by=user, rerun_by=user, rerun_job_id="5"))
    assert "<@" not in json.dumps(message)


def test_unavailable_items_are_listed():
    ctx = make_ctx(unavailable=["job details: the bot lacks aiplatform.customJobs.get", "logs: quota exceeded"])
    message = render(ctx=ctx)
    notice = message["blocks"][3]
    assert notice["type"] == "context"
    assert notice["elements"][0]["text"] == (
        ":warning: Could not fetch, so this diagnosis may be incomplete: "
        "job details: the bot lacks aiplatform.customJobs.get; logs: quota exceeded"
    )


def test_unknown_class_keeps_the_layout_with_what_is_known():
    diagnosis = Diagnosis(failure_class="unknown", confidence=0.0, title="Unrecognised failure")
    job = JobInfo(error_message="The replica workerpool0-0 exited with a non-zero status of 2.\nboom <!here>")
    ctx = make_ctx(job=job, display_name=None, attempt=None)
    message = render(diagnosis, ctx)
    kinds = [b["type"] for b in message["blocks"]]
    assert kinds == ["header", "section", "context", "section", "context", "divider", "actions"]
    assert message["blocks"][0]["text"]["text"] == "8501620632646057984: Unrecognised failure"
    summary, evidence = section_texts(message)
    assert summary == "*Unclassified failure*: no known failure pattern matched."
    assert "exited with a non-zero status of 2.\nboom &lt;!here&gt;\n```" in evidence
    assert message["text"].endswith("(unclassified)")
    card = render_card(diagnosis, ctx)
    assert [b["type"] for b in card["blocks"]] == ["header", "context", "section", "section", "context"]
    assert section_texts(card) == [summary, evidence]


def test_bare_minimum_context_renders():
    diagnosis = Diagnosis(failure_class="unknown", confidence=0.0, title="")
    ctx = AlertContext(job_id="", job_key="k")
    message = render(diagnosis, ctx)
    assert [b["type"] for b in message["blocks"]] == ["header", "section", "context", "divider", "actions"]
    assert message["blocks"][0]["text"]["text"] == "Vertex AI job"
    assert context_texts(message) == [":speech_balloon: *In the thread:* the full diagnosis"]
    assert [b["type"] for b in render_card(diagnosis, ctx)["blocks"]] == ["header", "section"]


# ---- escaping ----------------------------------------------------------------------------------------------


def hostile_inputs() -> tuple[Diagnosis, AlertContext]:
    diagnosis = make_diagnosis(
        failure_class=HOSTILE,
        title=HOSTILE,
        symptom=HOSTILE,
        evidence=[HOSTILE, f"Traceback ... {HOSTILE}"],
        remediation=[HOSTILE],
        avoid=[HOSTILE],
        first_checks=[HOSTILE],
        commands=[Command(title=HOSTILE, command=f"echo '{HOSTILE}'")],
        alternatives=[Alternative(failure_class=HOSTILE, confidence=0.2)],
        first_failing_replica=HOSTILE,
        cascade=[HOSTILE],
    )
    job = JobInfo(
        display_name=HOSTILE,
        labels={HOSTILE: HOSTILE},
        error_message=HOSTILE,
        worker_pools=[WorkerPool(machine_type=HOSTILE, accelerator_type=HOSTILE, accelerator_count=2)],
        project=HOSTILE,
        region=HOSTILE,
    )
    ctx = make_ctx(
        job=job,
        project=HOSTILE,
        region=HOSTILE,
        job_id=HOSTILE,
        display_name=HOSTILE,
        first_failing_replica=HOSTILE,
        unavailable=[HOSTILE],
        acknowledged_by=HOSTILE,
        acknowledged_at=ACKED_AT,
        rerun_by=HOSTILE,
        rerun_job_id=HOSTILE,
    )
    return diagnosis, ctx


def test_every_log_and_job_derived_string_is_escaped():
    diagnosis, ctx = hostile_inputs()
    message = render(diagnosis, ctx)  # render() runs check_inert on the whole message
    raw = json.dumps(message, ensure_ascii=False)
    assert "&lt;!channel&gt;" in raw and "&amp;" in raw
    assert "&lt;!channel&gt;" in message["blocks"][0]["text"]["text"]  # the header too
    assert "&lt;!channel&gt;" in message["text"]  # and the notification fallback


def test_unknown_class_with_hostile_error_message_is_escaped():
    diagnosis = Diagnosis(failure_class="unknown", confidence=0.0, title="x")
    render(diagnosis, make_ctx(job=JobInfo(error_message=f"{HOSTILE}\n{HOSTILE}")))


# ---- limits under huge input -------------------------------------------------------------------------------


def huge_diagnosis() -> Diagnosis:
    long = "E" * 4_990 + " <!channel>"
    return make_diagnosis(
        title="T" * 2_000,
        symptom="S" * 50_000,
        evidence=[long] * 10_000,
        remediation=[f"fix {i} " + "r" * 3_000 for i in range(500)],
        avoid=["a" * 5_000] * 500,
        first_checks=["c" * 5_000] * 500,
        commands=[Command(title="C" * 1_000, command=("gcloud " + "x" * 5_000 + "\n") * 50) for _ in range(200)],
        alternatives=[Alternative(failure_class="alt" * 300, confidence=0.01)] * 100,
        cascade=["workerpool1-0: " + "n" * 5_000] * 300,
    )


def huge_ctx() -> AlertContext:
    big = "P" * 1_000
    job = JobInfo(
        labels={f"k{i}" * 50: "v" * 1_000 for i in range(100)},
        worker_pools=[WorkerPool(machine_type=big, accelerator_type=big, accelerator_count=10**9)],
        error_message="e" * 1_000_000,
    )
    return make_ctx(
        job=job,
        project=big,
        region=big,
        job_id="9" * 1_000,
        display_name="D" * 1_000,
        first_failing_replica="workerpool" * 100,
        attempt=10**50,
        unavailable=["u" * 5_000] * 100,
        acknowledged_by="U" + "A" * 30,
        acknowledged_at=ACKED_AT,
        rerun_by="U1",
        rerun_job_id="8" * 1_000,
        job_key="k" * 2_000,
    )


@pytest.mark.parametrize(
    ("diagnosis", "ctx"),
    [
        (lambda: huge_diagnosis(), lambda: make_ctx()),
        (lambda: huge_diagnosis(), lambda: huge_ctx()),
        (lambda: make_diagnosis(), lambda: huge_ctx()),
        (lambda: make_diagnosis(evidence=["z" * 5_000] * 10_000), lambda: make_ctx(display_name="D" * 1_000)),
        (lambda: make_diagnosis(commands=[Command(title="ls", command="ls")] * 200), lambda: make_ctx()),
        (lambda: make_diagnosis(remediation=["r"] * 5_000, avoid=["a"] * 5_000), lambda: make_ctx()),
        (lambda: make_diagnosis(evidence=["<&>" * 2_000] * 1_000), lambda: make_ctx()),
        (lambda: make_diagnosis(evidence=["`" * 5_000] * 100), lambda: make_ctx()),
    ],
    ids=[
        "huge-diagnosis",
        "everything-huge",
        "huge-context",
        "brief-case",
        "200-tiny-commands",
        "long-lists",
        "escaping-triples-length",
        "backtick-storm",
    ],
)
def test_limits_hold_whatever_the_input_size(diagnosis, ctx):
    started = time.perf_counter()
    message = render(diagnosis(), ctx())  # check_limits asserts every limit, check_inert the escaping
    assert time.perf_counter() - started < 2.0
    assert len(message["blocks"][0]["text"]["text"]) <= 150
    # One screen even so: only the capped fixed parts (header, headline, facts, notice, status, buttons) can
    # take it past CHANNEL_MESSAGE_TEXT, and only with absurd values; everything else gives way first.
    assert text_length(message["blocks"]) <= CHANNEL_MESSAGE_TEXT + 200


def test_huge_evidence_is_cut_first():
    diagnosis = make_diagnosis(evidence=["z" * 5_000] * 10_000)
    message = render_card(diagnosis, make_ctx(display_name="D" * 1_000))
    header = message["blocks"][0]["text"]["text"]
    assert header.endswith(": CUDA out of memory") and header.startswith("DDD") and "…" in header
    evidence = next(t for t in section_texts(message) if t.startswith("*Evidence*"))
    assert re.search(r"… \((9999|10000) more lines\)\n```$", evidence)
    # Nothing else had to give way.
    assert "*What to do*\n1. Halve the per-device batch size.\n2. Enable gradient checkpointing." in "".join(
        section_texts(message)
    )
    titles = [t.split("\n")[0] for t in section_texts(message)]
    assert "*Describe the job*" in titles and "*Read the logs*" in titles


def test_commands_are_cut_before_remediation():
    diagnosis = huge_diagnosis()
    message = render_card(diagnosis, make_ctx())
    sections = section_texts(message)
    assert any(t.startswith("*Evidence*\n```\nEEE") for t in sections)
    checks = next(t for t in sections if t.startswith("*Check first*"))
    assert checks.startswith("*Check first*\n• ccc") and checks.endswith("_…and 499 more_")
    remediation = next(t for t in sections if t.startswith("*What to do*"))
    assert remediation.startswith("*What to do*\n1. fix 0 rrr") and remediation.endswith("more_")
    assert any(t.startswith("*CCC") for t in sections)  # at least one command survives
    assert any(re.fullmatch(r"…and \d+ more commands: run `trainmedic diagnose`", t) for t in context_texts(message))


def test_nonsense_numbers_and_times_do_not_break_rendering():
    diagnosis = make_diagnosis(
        alternatives=[
            Alternative(failure_class="a", confidence=float("nan")),
            Alternative(failure_class="b", confidence=7),
        ]
    )
    job = JobInfo(worker_pools=[WorkerPool(accelerator_type="T4", accelerator_count=-3, replica_count=10**9)])
    ctx = make_ctx(job=job, failed_at=datetime.max, acknowledged_by="U1", acknowledged_at=datetime.min, attempt=0)
    render(diagnosis, ctx)
    card = render_card(diagnosis, ctx)
    assert "Also possible: `a` ?% · `b` 100%" in context_texts(card)
    assert "0 failed attempts seen" in [e["text"] for e in card["blocks"][1]["elements"]]


def test_many_tiny_commands_stay_within_the_block_limit():
    message = render_card(make_diagnosis(commands=[Command(title=f"c{i}", command="ls") for i in range(200)]))
    shown = [t for t in section_texts(message) if re.match(r"\*c\d+\*", t)]
    assert len(shown) == 10
    assert "…and 190 more commands: run `trainmedic diagnose`" in context_texts(message)


# ---- purity and digest ---------------------------------------------------------------------------------------


def test_rendering_is_pure_and_repeatable():
    diagnosis, ctx = make_diagnosis(), make_ctx()
    before = (diagnosis.model_dump(), ctx.model_dump())
    assert diagnosis_message(diagnosis, ctx) == diagnosis_message(diagnosis, ctx)
    assert (diagnosis.model_dump(), ctx.model_dump()) == before


def test_digest_is_stable_and_tracks_content():
    first = message_digest(diagnosis_message(make_diagnosis(), make_ctx()))
    again = message_digest(diagnosis_message(make_diagnosis(), make_ctx()))
    assert first == again
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    acked = message_digest(diagnosis_message(make_diagnosis(), make_ctx(acknowledged_by="U1")))
    retitled = message_digest(diagnosis_message(make_diagnosis(title="Other"), make_ctx()))
    assert len({first, acked, retitled}) == 3


def test_digest_ignores_key_order():
    message = diagnosis_message(make_diagnosis(), make_ctx())
    reordered = json.loads(json.dumps(message, sort_keys=True))
    reordered = {"blocks": reordered["blocks"], "text": reordered["text"]}
    assert message_digest(reordered) == message_digest(message)


def test_job_key_is_required_and_bounded():
    with pytest.raises(ValueError):
        AlertContext(job_id="1", job_key="")
    with pytest.raises(ValueError):
        AlertContext(job_id="1", job_key="k" * 2_001)


def test_a_curve_finding_is_stated_under_the_symptom_and_escaped():
    finding = "val_loss best 0.41 at epoch 12, 0.78 at epoch 40 <!channel>"
    message = render(make_diagnosis(failure_class="overfitting", finding=finding))
    check_limits(message)
    check_inert(message)
    shown = [t for t in section_texts(message) if "*The curve:*" in t]
    assert len(shown) == 1 and "val_loss best 0.41 at epoch 12, 0.78 at epoch 40" in shown[0]
    assert "<!channel>" not in shown[0]
    assert not [t for t in section_texts(render(make_diagnosis())) if "*The curve:*" in t]


def test_an_alternative_shows_its_own_line_escaped_and_says_where_it_came_from():
    diagnosis = make_diagnosis(
        alternatives=[
            Alternative(failure_class="host_oom", confidence=0.3, evidence="Killed <!channel> @here"),
            Alternative(
                failure_class="preemption",
                confidence=0.1,
                evidence="node *reclaimed* " + "x" * 300,
                source="text model",
            ),
        ]
    )
    card = render_card(diagnosis)
    alternatives = next(t for t in context_texts(card) if t.startswith("Also possible"))
    assert "`host_oom` 30% (line: \u201cKilled &lt;!channel&gt; @here\u201d)" in alternatives
    assert "<!channel>" not in alternatives
    assert "`preemption` 10% (words: \u201cnode" in alternatives
    assert len(alternatives) < 300  # each reason is bounded
    check_limits(card, buttons=False)
    said = "val_loss logged 15 times: 1.908 at epoch 1, 1.848 at epoch 15"
    lead = Alternative(failure_class="underfitting", confidence=0.07, evidence=said, source="curve")
    led = next(t for t in context_texts(render_card(make_diagnosis(alternatives=[lead]))) if t.startswith("Also"))
    assert f"`underfitting` 7% (curve: \u201c{said}\u201d)" in led


def test_the_channel_message_stays_within_its_budget_whatever_commands_fit():
    # a command just long enough to fill what is left: the note then says "N more commands", longer than "N commands"
    for extra in range(0, 700, 7):
        commands = [Command(title="Fix", command="gcloud a " + "x" * extra)] + [
            Command(title=f"Look {i}", command=f"gcloud b{i} --flag=value") for i in range(9)
        ]
        message = diagnosis_message(make_diagnosis(commands=commands), make_ctx())
        assert text_length(message["blocks"]) <= CHANNEL_MESSAGE_TEXT, extra
