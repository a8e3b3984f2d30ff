"""The `trainmedic` command line (an edge: it parses arguments and wires the core). Heavy imports (Google clients,
the web stack) happen inside the commands, so `--help` and `diagnose` on files stay fast."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TextIO

from bot.errors import BotError
from bot.models import JobInfo

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


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
    diagnose.add_argument("--project", help="project of --job (default: from the reference, config or gcloud)")
    diagnose.add_argument("--region", help="region of --job (default: tried across the configured regions)")
    diagnose.add_argument("--knowledge", type=Path, help="knowledge directory (default: the bundled one)")
    diagnose.add_argument(
        "--custom-job",
        type=Path,
        metavar="FILE",
        help="the job's CustomJob as JSON (gcloud ai custom-jobs describe ID --format=json): adds its state, "
        "error, machines, Spot scheduling and service account to the diagnosis of the PATHs",
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
    demo.add_argument("--out", type=Path, default=Path("demo-output"), help="folder for the Block Kit JSON")
    demo.add_argument("--keep-running", action="store_true", help="leave the demo service up to try /diagnose etc.")

    history = sub.add_parser("history", help="print the recorded actions for a job")
    history.add_argument("job", help="job id, or PROJECT/JOB_ID")
    history.add_argument("--format", choices=("text", "json"), default="text")
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


def _custom_job(path: Path) -> JobInfo:
    from bot.errors import LogInputError
    from bot.job_resource import job_info_from_rest

    try:
        return job_info_from_rest(json.loads(_read(str(path))))
    except (json.JSONDecodeError, ValueError, TypeError) as exc:
        raise LogInputError(f"{path}: not a CustomJob in JSON ({exc})") from None


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        from bot.errors import LogInputError

        raise LogInputError(f"{path}: {exc.strerror}") from None


def _diagnose(args: argparse.Namespace, out: TextIO) -> int:
    from bot.classifier import Classifier
    from bot.knowledge import load_knowledge
    from bot.log_input import parse_log_text
    from bot.render_text import diagnosis_text

    if args.job:
        if args.paths:
            print("trainmedic diagnose: give either PATHs or --job, not both", file=sys.stderr)
            return EXIT_USAGE
        from bot.job_fetch import diagnose_remote_job

        diagnosis, source = diagnose_remote_job(
            args.job, project=args.project, region=args.region, knowledge=args.knowledge, environ=os.environ
        )
        results = [(source, diagnosis)]
    else:
        if not args.paths:
            print("trainmedic diagnose: give at least one PATH (or - for stdin), or --job", file=sys.stderr)
            return EXIT_USAGE
        classifier = Classifier(load_knowledge(_knowledge_dir(args)))
        job = _custom_job(args.custom_job) if args.custom_job else None
        results = [(path, classifier.classify(parse_log_text(_read(path)), job)) for path in args.paths]

    color = args.format == "text" and out.isatty() and not os.environ.get("NO_COLOR")
    for index, (source, diagnosis) in enumerate(results):
        if args.format == "json":
            out.write(json.dumps({"source": source, **diagnosis.public_dict()}, ensure_ascii=False) + "\n")
        else:
            if index:
                out.write("\n")
            out.write(diagnosis_text(diagnosis, source=source, color=color) + "\n")
    return EXIT_OK


def _kb(args: argparse.Namespace, out: TextIO) -> int:
    from bot.knowledge import load_knowledge

    kb = load_knowledge(_knowledge_dir(args))
    if args.kb_command == "check":
        signals = sum(len(c.signals) for c in kb)
        out.write(f"knowledge base OK: {len(kb)} classes, {signals} signals\n")
        return EXIT_OK
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
    store = open_store(settings.TRAINMEDIC_STORE)
    try:
        records = store.history(job_key)
    finally:
        store.close()
    if args.format == "json":
        out.write(json.dumps(records, indent=2, default=str) + "\n")
        return EXIT_OK
    if not records:
        out.write(f"no recorded actions for {job_key}\n")
        return EXIT_OK
    for record in records:
        out.write(
            f"{record.get('when', '?')}  {record.get('who', '?'):<12} {record.get('what', '?'):<14} "
            f"{record.get('result', '')}\n"
        )
    return EXIT_OK
