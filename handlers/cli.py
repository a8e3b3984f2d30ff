"""The `trainmedic` command line (an edge: it parses arguments and wires the core). Heavy imports (Google clients,
the web stack) happen inside the commands, so `--help` and `diagnose` on files stay fast."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from bot.errors import BotError
from bot.models import Diagnosis, JobInfo

if TYPE_CHECKING:
    from bot.diagnosis.knowledge import KnowledgeBase
    from bot.store import AlertRecord

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
DEMO_OUT = Path("demo-output")  # where `trainmedic demo` writes by default (its store included)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainmedic",
        description="Tells ML teams why their Vertex AI training job failed and what to do next.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    diagnose = sub.add_parser(
        "diagnose",
        help="diagnose a failed job from its logs (files or stdin) or, with --job, from Vertex AI",
        description=(
            "PATH is a file, or - for stdin, holding plain log text, a JSON array of LogEntry objects "
            "(gcloud logging read --format=json) or JSON Lines of LogEntry objects; the format is detected. "
            "With --job, the job and its logs are fetched with Application Default Credentials."
        ),
    )
    diagnose.add_argument("paths", nargs="*", metavar="PATH")
    diagnose.add_argument("--format", choices=("text", "json"), default="text")
    diagnose.add_argument("--job", help="CustomJob id, projects/P/locations/L/customJobs/ID, or its console URL")
    diagnose.add_argument(
        "--project",
        help="project of --job (default: from the reference, config or gcloud), or of the logs given as PATHs "
        "(fills the commands)",
    )
    diagnose.add_argument(
        "--region",
        help="region of --job (default: tried across the configured regions), or of the logs given as PATHs",
    )
    diagnose.add_argument("--knowledge", type=Path, help="knowledge directory (default: the bundled one)")
    diagnose.add_argument(
        "--custom-job",
        type=Path,
        metavar="FILE",
        help="the job's CustomJob as JSON (gcloud ai custom-jobs describe ID --format=json): adds its state, "
        "error, machines, Spot scheduling and service account to the diagnosis of the PATHs",
    )
    diagnose.add_argument(
        "--rerun-plan",
        action="store_true",
        help="with --custom-job: also show what the alert's Rerun button would propose for that job (its changes "
        "in the knowledge base's order; the regions it may move to are the routing file's, TRAINMEDIC_CONFIG)",
    )

    kb = sub.add_parser("kb", help="inspect or validate the knowledge base")
    kb_sub = kb.add_subparsers(dest="kb_command", metavar="ACTION")
    kb_sub.required = True
    kb_list = kb_sub.add_parser("list", help="list the failure classes")
    kb_list.add_argument("--format", choices=("text", "json"), default="text")
    kb_list.add_argument("--knowledge", type=Path)
    kb_check = kb_sub.add_parser("check", help="validate every knowledge file; non-zero exit on a bad one")
    kb_check.add_argument("--knowledge", type=Path)

    sub.add_parser("serve", help="run the HTTP service (Pub/Sub push, Slack events, health) on $PORT")

    demo = sub.add_parser("demo", help="run the service locally against bundled sample failures")
    demo.add_argument("--out", type=Path, default=DEMO_OUT, help="folder for the Block Kit JSON")
    demo.add_argument("--keep-running", action="store_true", help="leave the demo service up to try /diagnose etc.")

    history = sub.add_parser(
        "history",
        help="print a job's alert and the actions recorded for it",
        description="Reads the store TRAINMEDIC_STORE names (default sqlite:///.trainmedic/state.db), or --store. "
        "`trainmedic demo` keeps its own store in its --out folder and prints the history command to run.",
    )
    history.add_argument("job", help="job id, or PROJECT/JOB_ID")
    history.add_argument("--format", choices=("text", "json"), default="text")
    history.add_argument(
        "--store",
        metavar="URL",
        help="the store to read, as TRAINMEDIC_STORE spells it: sqlite:///PATH, firestore or firestore:PROJECT "
        "(default: TRAINMEDIC_STORE, else sqlite:///.trainmedic/state.db)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "diagnose":
            return _diagnose(args, sys.stdout)
        if args.command == "kb":
            return _kb(args, sys.stdout)
        if args.command == "serve":
            from handlers.serve import serve

            return serve(os.environ)
        if args.command == "demo":
            from handlers.demo import run_demo

            return run_demo(out_dir=args.out, keep_running=args.keep_running)
        if args.command == "history":
            return _history(args, sys.stdout)
    except BotError as exc:
        print(f"trainmedic: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130
    return EXIT_USAGE


def _knowledge_dir(args: argparse.Namespace) -> Path | None:
    """--knowledge, else TRAINMEDIC_KNOWLEDGE, else the bundled knowledge/ directory."""
    if args.knowledge is not None:
        return args.knowledge
    from bot.config import load_settings_for_tools

    configured = load_settings_for_tools(os.environ).TRAINMEDIC_KNOWLEDGE
    return Path(configured) if configured else None


def _custom_job(path: Path) -> tuple[JobInfo, dict]:
    """The CustomJob in FILE: its facts, and the REST dict itself (a rerun plan reads its worker pools)."""
    from bot.errors import LogInputError
    from bot.gcp.job_resource import job_info_from_rest

    try:
        data = _read_bytes(str(path))
    except LogInputError as exc:
        raise LogInputError(f"{path}: {exc}") from None
    try:
        raw = json.loads(data.decode("utf-8", errors="replace"))
        return job_info_from_rest(raw), raw
    except (json.JSONDecodeError, ValueError, TypeError, AttributeError) as exc:
        raise LogInputError(f"{path}: not a CustomJob in JSON ({exc})") from None


def _shown(path: str) -> str:
    return "stdin (-)" if path == "-" else path


def _read_bytes(path: str) -> bytes:
    """The bytes of a PATH (- is stdin); LogInputError saying why when it cannot be read."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        from bot.errors import LogInputError

        raise LogInputError(f"cannot read it: {exc.strerror or exc}") from None


def _diagnose(args: argparse.Namespace, out: TextIO) -> int:
    """Diagnose each PATH (or --job). A PATH that is unreadable, empty or binary is reported on stderr with
    the reason and skipped; the others are still diagnosed, and the exit status is then 2."""
    from bot.alerting.ledger import LedgerClassifier
    from bot.diagnosis.classifier import Classifier
    from bot.diagnosis.knowledge import load_knowledge
    from bot.errors import LogInputError
    from bot.intake.log_input import read_log_bytes
    from bot.render.text import diagnosis_text

    color = args.format == "text" and out.isatty() and not os.environ.get("NO_COLOR")
    shown = 0

    def show(source: str, diagnosis: Diagnosis, job: JobInfo | None) -> None:
        nonlocal shown
        if args.format == "json":
            out.write(json.dumps({"source": source, **diagnosis.public_dict()}, ensure_ascii=False) + "\n")
        else:
            if shown:
                out.write("\n")
            out.write(diagnosis_text(diagnosis, source=source, color=color, job=job) + "\n")
        out.flush()
        shown += 1

    if args.job:
        if args.paths or args.custom_job:
            print("trainmedic diagnose: give either PATHs (with --custom-job) or --job, not both", file=sys.stderr)
            return EXIT_USAGE
        from handlers.remote_job import diagnose_remote_job

        diagnosis, source, job = diagnose_remote_job(
            args.job, project=args.project, region=args.region, knowledge=args.knowledge, environ=os.environ
        )
        show(source, diagnosis, job)
        return EXIT_OK
    if not args.paths:
        print("trainmedic diagnose: give at least one PATH (or - for stdin), or --job", file=sys.stderr)
        return EXIT_USAGE
    if args.rerun_plan and not args.custom_job:
        print("trainmedic diagnose: --rerun-plan needs the job's spec: give --custom-job FILE", file=sys.stderr)
        return EXIT_USAGE
    knowledge = load_knowledge(_knowledge_dir(args))
    classifier = LedgerClassifier(Classifier(knowledge))
    job, raw = _custom_job(args.custom_job) if args.custom_job else (None, None)
    if args.project or args.region:  # what the user says of the logs' job fills the commands, over the resource's
        from bot.models import JobInfo

        job = (job or JobInfo()).model_copy(
            update={k: v for k, v in (("project", args.project), ("region", args.region)) if v}
        )
    status = EXIT_OK
    for path in args.paths:
        try:
            lines = read_log_bytes(_read_bytes(path))
        except LogInputError as exc:
            print(f"trainmedic diagnose: {_shown(path)}: {exc}; not diagnosed", file=sys.stderr)
            status = EXIT_USAGE
            continue
        diagnosis = classifier.classify(lines, job)
        show(path, diagnosis, job)
        if args.rerun_plan and raw is not None:
            status = max(status, _show_rerun_plan(raw, diagnosis, knowledge, args.format, out))
    return status


def _show_rerun_plan(raw: dict, diagnosis: Diagnosis, knowledge: KnowledgeBase, form: str, out: TextIO) -> int:
    """The rerun the alert's button would propose for the job `raw`, after its diagnosis."""
    from bot.chat.rerun_plan import plan_rerun
    from bot.config import load_routing, load_settings_for_tools
    from bot.render.rerun_plan_text import rerun_plan_dict, rerun_plan_text

    regions = load_routing(load_settings_for_tools(os.environ).TRAINMEDIC_CONFIG).regions
    try:
        plan = plan_rerun(raw, diagnosis, job_key="cli", regions=regions, knowledge=knowledge)
    except ValueError as exc:
        print(f"trainmedic diagnose: no rerun plan: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if form == "json":
        out.write(json.dumps({"rerun_plan": rerun_plan_dict(plan)}, ensure_ascii=False) + "\n")
    else:
        out.write("\n" + rerun_plan_text(plan) + "\n")
    out.flush()
    return EXIT_OK


def _kb(args: argparse.Namespace, out: TextIO) -> int:
    from bot.diagnosis.knowledge import load_knowledge

    if args.kb_command == "check":
        from bot.errors import KnowledgeBaseError

        try:
            kb = load_knowledge(_knowledge_dir(args))
        except KnowledgeBaseError as exc:
            for path, field, problem in exc.problems:
                print(f"{path}: {field}: {problem}", file=sys.stderr)
            files = len({path for path, _, _ in exc.problems})
            print(f"trainmedic kb check: {len(exc.problems)} problem(s) in {files} file(s)", file=sys.stderr)
            return EXIT_FAILURE
        signals = sum(len(c.signals) for c in kb)
        out.write(f"knowledge base OK: {len(kb)} classes, {signals} signals\n")
        return EXIT_OK
    kb = load_knowledge(_knowledge_dir(args))
    if args.format == "json":
        rows = [
            {
                "id": c.id,
                "title": c.title,
                "symptom": c.symptom,
                "first_checks": c.first_checks,
                "remediation": c.remediation,
                "avoid": c.avoid,
                "signals": [s.name for s in c.signals],
                "commands": [t.title for t in c.commands],
            }
            for c in kb
        ]
        out.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
    else:
        width = max(len(c.id) for c in kb)
        for c in kb:
            out.write(f"{c.id:<{width}}  {c.title}\n")
    return EXIT_OK


def _history(args: argparse.Namespace, out: TextIO) -> int:
    from bot.config import load_routing, load_settings_for_tools
    from bot.errors import ConfigError
    from bot.store import open_store

    settings = load_settings_for_tools(os.environ)
    job_key = args.job
    if "/" not in job_key:
        routing = load_routing(settings.TRAINMEDIC_CONFIG)
        project = routing.default_project or settings.GOOGLE_CLOUD_PROJECT
        if not project:
            print("trainmedic history: give PROJECT/JOB_ID (no default project is configured)", file=sys.stderr)
            return EXIT_USAGE
        job_key = f"{project}/{job_key}"
    if args.store:
        url, origin = args.store, "--store"
    elif os.environ.get("TRAINMEDIC_STORE"):
        url, origin = settings.TRAINMEDIC_STORE, "TRAINMEDIC_STORE"
    else:
        url, origin = settings.TRAINMEDIC_STORE, "the default"
    elsewhere = (
        "Read another store with --store URL or TRAINMEDIC_STORE (sqlite:///PATH, firestore or firestore:PROJECT); "
        "`trainmedic demo` keeps its store in its --out folder: --store sqlite:///demo-output/state.db"
    )
    if url.startswith("sqlite:///"):
        file = Path(url[len("sqlite:///") :])
        demo_store = DEMO_OUT / "state.db"
        if not file.is_file() and origin == "the default" and demo_store.is_file():
            # no store of a running bot here, but `trainmedic demo` ran here: that is the store the user means
            print(
                f"trainmedic history: no store at {file.resolve()} (the default); reading the demo's store "
                f"{demo_store.resolve()}",
                file=sys.stderr,
            )
            file, url, origin = demo_store, f"sqlite:///{demo_store}", "the demo's --out folder"
        if not file.is_file():  # reading must not create an empty store
            print(f"trainmedic history: no store at {file.resolve()} ({url}, from {origin}).", file=sys.stderr)
            print(elsewhere, file=sys.stderr)
            return EXIT_FAILURE
    try:
        store = open_store(url)
    except ConfigError as exc:
        print(f"trainmedic history: {origin}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        alert = store.get_alert(job_key)
        records = store.history(job_key)
    finally:
        store.close()
    if args.format == "json":
        out.write(json.dumps(records, indent=2, default=str) + "\n")
        return EXIT_OK
    if alert is not None:
        out.write(_alert_line(alert) + "\n")
    if not records:
        found = "no recorded actions" if alert is not None else "no alert and no recorded actions"
        out.write(f"{found} for {job_key} in {url} (from {origin})\n")
        if alert is None:
            out.write(elsewhere + "\n")
        return EXIT_OK
    for record in records:
        out.write(
            f"{record.get('when', '?')}  {record.get('who', '?'):<12} {record.get('what', '?'):<14} "
            f"{record.get('result', '')}\n"
        )
    return EXIT_OK


def _alert_line(alert: AlertRecord) -> str:
    """One line on the job's alert: where it was posted, what it said, who acknowledged or reran it."""
    from bot.alerting.stored_alert import StoredAlert
    from bot.intake.sanitize import show_unsafe

    stored = StoredAlert.of(alert)
    said = f"{stored.diagnosis.failure_class} ({stored.diagnosis.title})" if stored else "?"
    if stored is not None and stored.context.failed_at is not None:
        said += f", failed {stored.context.failed_at.isoformat(timespec='seconds')}"
    if alert.posted:
        parts = [f"alert posted in channel {alert.channel} (message ts {alert.message_ts}): {said}"]
    else:
        parts = [f"alert not posted yet: {said}"]
    if alert.acknowledged_by:
        parts.append(f"acknowledged by {alert.acknowledged_by}")
    if alert.rerun_state == "done":
        parts.append(f"rerun by {alert.rerun_by} as job {alert.rerun_job_id}")
    elif alert.rerun_state:
        parts.append(f"rerun {alert.rerun_state} by {alert.rerun_by}")
    if stored is not None and stored.context.rerun_outcome:
        parts.append(stored.context.rerun_outcome)
    return show_unsafe("; ".join(parts))
