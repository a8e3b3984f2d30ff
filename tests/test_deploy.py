"""deploy/: setup and teardown, the Slack app manifest, the image files and the example routing file.

The gcloud checks give the real gcloud CLI a brand-new, empty config directory: no account, no token, and
no network is needed. A command whose arguments parse stops at "You do not currently have an active account
selected." (exit 1). A bad group, command or flag is an argparse error (exit 2) before that point. Member
and role formats are not checked offline, so this file checks them itself.

The dry runs print `NAME="$(gcloud ...)"` lines for values only a live project has, and "${NAME}" where
those values are used. `expand` reads that small shell dialect, substitutes realistic sample values, and
yields each gcloud command with its stdin.

The idempotency tests run the scripts for real against `fake_gcloud`, a stateful stand-in on PATH that
keeps resources in a JSON file.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType
from urllib.parse import urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
PROJECT, REGION = "my-proj", "us-central1"
NUMBER = "123456789012"
JOB_SA = f"trainer@{PROJECT}.iam.gserviceaccount.com"
SERVICE_URL = f"https://trainmedic-{NUMBER}.{REGION}.run.app"
# The service's routes: the Slack manifest and the push subscription must point at these.
SLACK_ROUTE, PUSH_ROUTE = "/slack/events", "/pubsub/push"

# Realistic values for the dry run's live lookups.
SAMPLES = {
    "PROJECT_NUMBER": NUMBER,
    "SINK_WRITER": f"serviceAccount:service-{NUMBER}@gcp-sa-logging.iam.gserviceaccount.com",
    "SLACK_BOT_TOKEN_VERSION": "1",
    "SLACK_SIGNING_SECRET_VERSION": "1",
    "ROUTING_CONFIG_VERSION": "2",
    "IMAGE": f"{REGION}-docker.pkg.dev/{PROJECT}/trainmedic/trainmedic@sha256:{'ab' * 32}",
    "DEPLOYED_URL": SERVICE_URL,
}
AUTH_ERROR = "You do not currently have an active account selected."


def load_setup() -> ModuleType:
    loader = SourceFileLoader("deploy_setup_under_test", str(DEPLOY / "setup"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[loader.name] = module
    loader.exec_module(module)
    return module


deploy_setup = load_setup()


# ----------------------------------------------------------------------------------------- dry runs


def run_script(
    name: str, *args: str, path_dir: Path, env: dict[str, str] | None = None, deploy: Path = DEPLOY
) -> subprocess.CompletedProcess:
    """Run deploy/NAME with `path_dir` first on PATH (where a fake gcloud lives)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    full_env.update(env or {})
    full_env["PATH"] = f"{path_dir}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        [sys.executable, str(deploy / name), *args],
        capture_output=True,
        text=True,
        env=full_env,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


def tripwire(directory: Path) -> Path:
    """A gcloud that records being called: a dry run must never call it."""
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / "called"
    script = directory / "gcloud"
    script.write_text(f'#!/bin/sh\necho "$@" >> {shlex.quote(str(marker))}\nexit 99\n')
    script.chmod(0o755)
    return marker


def dry_run(name: str, *args: str, env: dict[str, str] | None = None) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        marker = tripwire(Path(tmp))
        result = run_script(
            name, "--project", PROJECT, "--region", REGION, "--dry-run", *args, path_dir=Path(tmp), env=env
        )
        assert result.returncode == 0, result.stderr
        assert not marker.exists(), f"--dry-run called gcloud: {marker.read_text()}"
    return result.stdout.splitlines()


SETUP_ARGS = ("--job-service-account", JOB_SA)
SLACK_ENV = {"SLACK_BOT_TOKEN": "xoxb-not-a-real-token", "SLACK_SIGNING_SECRET": "not-a-real-signing-secret"}


@pytest.fixture(scope="module")
def setup_lines() -> list[str]:
    return dry_run("setup", *SETUP_ARGS, env=SLACK_ENV)


@pytest.fixture(scope="module")
def teardown_lines() -> list[str]:
    return dry_run("teardown", *SETUP_ARGS, "--delete-firestore-database")


_ASSIGNMENT = re.compile(r'^(?P<name>[A-Z][A-Z0-9_]*)="\$\((?P<command>.*)\)"$')
_REDIRECT = re.compile(r"\s+(?:\d?>&\d|\d?>\s*/dev/null)(?=\s|$)")
_OPERATORS = {"||", "&&", "|", ";"}


def expand(lines: list[str]) -> Iterator[tuple[list[str], bytes]]:
    """Every gcloud command in the dry-run output, as (argv after "gcloud", stdin)."""
    for line in lines:
        assignment = _ASSIGNMENT.match(line)
        if assignment:
            assert assignment["name"] in SAMPLES, f"no sample value for {assignment['name']}"
            line = assignment["command"]
        for name in re.findall(r"\$\{([A-Z][A-Z0-9_]*)\}", line):
            assert name in SAMPLES, f"{line}\nuses ${{{name}}}, which no earlier line sets"
            line = line.replace("${" + name + "}", SAMPLES[name])
        lexer = shlex.shlex(_REDIRECT.sub("", line), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        segment: list[str] = []
        stdin = b""
        for token in [*lexer, ";"]:
            if token not in _OPERATORS:
                segment.append(token)
                continue
            if segment[:1] == ["gcloud"]:
                yield segment[1:], stdin
            # `printf %s DATA | gcloud ...` feeds DATA to gcloud
            stdin = segment[2].encode() if token == "|" and segment[:2] == ["printf", "%s"] else b""
            segment = []


def gcloud_parse(argv: list[str], stdin: bytes) -> tuple[int, str]:
    """Run the real gcloud with no credentials: only its argument parser and local checks can pass."""
    with tempfile.TemporaryDirectory() as home:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": home,
            "LANG": "C.UTF-8",
            "CLOUDSDK_CONFIG": os.path.join(home, "gcloud"),
            "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
            "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "true",
            "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "true",
        }
        result = subprocess.run(["gcloud", *argv], input=stdin, capture_output=True, env=env, timeout=60, check=False)
    return result.returncode, result.stderr.decode(errors="replace")


README_SAMPLES = {"$PROJECT": PROJECT, "$REGION": REGION, "$IMAGE": SAMPLES["IMAGE"], "$JOB_ID": "8501620632646057984"}


def readme_commands() -> list[list[str]]:
    """The gcloud commands in deploy/README.md's sh blocks (continuation lines joined, variables filled in)."""
    text = (DEPLOY / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            inner = re.fullmatch(r"[A-Z_]+=\$\((gcloud .*)\)", line)
            line = inner[1] if inner else line
            if line.startswith("gcloud "):
                for name, value in README_SAMPLES.items():
                    line = line.replace(name, value)
                commands.append(shlex.split(line)[1:])
    return commands


@pytest.fixture(scope="module")
def parsed(setup_lines: list[str], teardown_lines: list[str]) -> dict[str, tuple[int, str]]:
    """The real gcloud's verdict on every distinct command of both dry runs and the README, a few at a time."""
    if shutil.which("gcloud") is None:
        pytest.skip("gcloud is not installed, so the commands cannot be checked against its parser")
    commands = {shlex.join(argv): (argv, stdin) for argv, stdin in expand(setup_lines + teardown_lines)}
    commands.update({shlex.join(argv): (argv, b"") for argv in readme_commands()})
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        verdicts = pool.map(lambda item: gcloud_parse(*item), commands.values())
        return dict(zip(commands, verdicts, strict=True))


def assert_all_parse(commands: list[list[str]], parsed: dict[str, tuple[int, str]]) -> None:
    bad = []
    for argv in commands:
        rc, stderr = parsed[shlex.join(argv)]
        if rc != 1 or AUTH_ERROR not in stderr:
            bad.append(f"gcloud {shlex.join(argv)}\n  -> exit {rc}: {stderr.strip()[:400]}")
    assert not bad, "gcloud rejected these commands:\n" + "\n".join(bad)


def test_every_setup_command_passes_the_gcloud_parser(setup_lines, parsed):
    assert_all_parse([argv for argv, _ in expand(setup_lines)], parsed)


def test_every_teardown_command_passes_the_gcloud_parser(teardown_lines, parsed):
    assert_all_parse([argv for argv, _ in expand(teardown_lines)], parsed)


def test_every_gcloud_command_in_the_readme_passes_the_parser(parsed):
    assert len(readme_commands()) >= 5
    assert_all_parse(readme_commands(), parsed)


def test_the_readme_uses_only_options_the_scripts_have():
    text = (DEPLOY / "README.md").read_text(encoding="utf-8")
    for name in ("setup", "teardown"):
        result = subprocess.run(
            [sys.executable, str(DEPLOY / name), "--help"], capture_output=True, text=True, check=True
        )
        for line in re.findall(rf"deploy/{name} [^\n]*(?:\\\n[^\n]*)*", text):
            for option in re.findall(r"(?<![\w-])--[a-z][a-z-]+", line):
                assert option in result.stdout, f"deploy/{name} has no {option}"


def test_the_parser_check_catches_a_bad_flag():
    if shutil.which("gcloud") is None:
        pytest.skip("gcloud is not installed")
    rc, stderr = gcloud_parse(["pubsub", "topics", "create", "t", "--projct=my-proj"], b"")
    assert rc == 2 and "unrecognized arguments" in stderr


def test_dry_run_is_one_pasteable_command_per_line(setup_lines, teardown_lines):
    for line in setup_lines + teardown_lines:
        assert line.strip() and not line.startswith("#"), repr(line)
        assert shlex.split(line), line  # balanced quotes: it pastes as one command
        assert line.startswith("gcloud ") or _ASSIGNMENT.match(line) or line.startswith("printf %s "), line
    assert sum(1 for _ in expand(setup_lines)) >= 40


def test_dry_run_never_shows_the_slack_credentials(setup_lines):
    text = "\n".join(setup_lines)
    for var, value in SLACK_ENV.items():
        assert value not in text
        assert f'printf %s "${var}" | gcloud secrets versions add ' in text


def test_dry_run_without_slack_credentials_adds_no_slack_versions():
    lines = dry_run("setup")
    assert not [line for line in lines if "--data-file=-" in line]
    assert any(line.startswith("gcloud run deploy ") for line in lines)


# ----------------------------------------------------------------------------------------- IAM


def option_values(lines: list[str], flag: str) -> list[str]:
    return [arg.split("=", 1)[1] for argv, _ in expand(lines) for arg in argv if arg.startswith(f"--{flag}=")]


_SA = r"[a-z][a-z0-9-]{4,28}[a-z0-9]@[a-z][a-z0-9-]{4,28}[a-z0-9]\.iam\.gserviceaccount\.com"
_AGENT = r"service-[0-9]+@gcp-sa-[a-z-]+\.iam\.gserviceaccount\.com"
_MEMBER = re.compile(rf"^serviceAccount:(?:{_SA}|{_AGENT})$")
_ROLE = re.compile(
    r"^(?:roles/[a-z][a-zA-Z]*\.[a-zA-Z.]+|projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/roles/[a-zA-Z0-9_.]{3,64})$"
)


def test_members_roles_and_accounts_are_well_formed(setup_lines, teardown_lines):
    lines = setup_lines + teardown_lines
    members, roles = option_values(lines, "member"), option_values(lines, "role")
    assert members and roles
    assert [m for m in members if not _MEMBER.match(m)] == []
    assert [r for r in roles if not _ROLE.match(r)] == []
    for flag in ("service-account", "push-auth-service-account"):
        assert all(re.fullmatch(_SA, email) for email in option_values(setup_lines, flag))
    permissions = option_values(setup_lines, "permissions")[0].split(",")
    assert all(re.fullmatch(r"[a-z]+\.[a-zA-Z]+\.[a-zA-Z]+", p) for p in permissions)


def bindings(lines: list[str]) -> set[tuple[str, str, str, str]]:
    """Every add-iam-policy-binding: (command group, resource, member, role)."""
    found = set()
    for argv, _ in expand(lines):
        if "add-iam-policy-binding" in argv:
            at = argv.index("add-iam-policy-binding")
            flags = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
            found.add((" ".join(argv[:at]), argv[at + 1], flags["member"], flags["role"]))
    return found


def test_the_bot_gets_exactly_its_least_privilege_grants(setup_lines):
    bot = f"serviceAccount:trainmedic-bot@{PROJECT}.iam.gserviceaccount.com"
    assert {(g, resource, role) for g, resource, member, role in bindings(setup_lines) if member == bot} == {
        ("projects", PROJECT, f"projects/{PROJECT}/roles/trainmedic_bot"),
        ("projects", PROJECT, "roles/datastore.user"),
        ("iam service-accounts", JOB_SA, "roles/iam.serviceAccountUser"),  # on the job's account only
        ("secrets", "trainmedic-slack-bot-token", "roles/secretmanager.secretAccessor"),
        ("secrets", "trainmedic-slack-signing-secret", "roles/secretmanager.secretAccessor"),
        ("secrets", "trainmedic-routing-config", "roles/secretmanager.secretAccessor"),
    }
    role = option_values(setup_lines, "permissions")
    permissions = [
        "aiplatform.customJobs.create",
        "aiplatform.customJobs.get",
        "aiplatform.customJobs.list",
        "aiplatform.pipelineJobs.create",
        "aiplatform.pipelineJobs.get",
        "aiplatform.pipelineJobs.list",
        "cloudquotas.quotas.get",
    ]
    assert role == [",".join([*permissions, "logging.logEntries.list", "logging.privateLogEntries.list"])]


def test_pubsub_wiring(setup_lines):
    agent = f"serviceAccount:service-{NUMBER}@gcp-sa-pubsub.iam.gserviceaccount.com"
    push_sa = f"trainmedic-push@{PROJECT}.iam.gserviceaccount.com"
    assert {
        ("pubsub topics", "trainmedic-vertex-failures-dead-letter", agent, "roles/pubsub.publisher"),
        ("pubsub subscriptions", "trainmedic-vertex-failures-push", agent, "roles/pubsub.subscriber"),
        ("iam service-accounts", push_sa, agent, "roles/iam.serviceAccountTokenCreator"),
        ("pubsub topics", "trainmedic-vertex-failures", SAMPLES["SINK_WRITER"], "roles/pubsub.publisher"),
    } <= bindings(setup_lines)
    creates = {argv[3]: argv for argv, _ in expand(setup_lines) if argv[:3] == ["pubsub", "subscriptions", "create"]}
    audience = SERVICE_URL + PUSH_ROUTE
    assert {
        "--topic=trainmedic-vertex-failures",
        f"--push-endpoint={audience}",
        f"--push-auth-token-audience={audience}",
        f"--push-auth-service-account={push_sa}",
        "--ack-deadline=60",
        "--min-retry-delay=10s",
        "--max-retry-delay=600s",
        f"--dead-letter-topic=projects/{PROJECT}/topics/trainmedic-vertex-failures-dead-letter",
        "--max-delivery-attempts=5",
        "--expiration-period=never",
    } <= set(creates["trainmedic-vertex-failures-push"])
    assert {"--topic=trainmedic-vertex-failures-dead-letter", "--expiration-period=never"} <= set(
        creates["trainmedic-dead-letters"]
    )


def test_cloud_run_deploy_flags_and_settings(setup_lines):
    from bot.config import Settings, load_settings

    deploy = next(argv for argv, _ in expand(setup_lines) if argv[:2] == ["run", "deploy"])
    for flag in (
        "--no-invoker-iam-check",
        "--no-cpu-throttling",
        "--min-instances=1",
        f"--service-account=trainmedic-bot@{PROJECT}.iam.gserviceaccount.com",
        f"--image={SAMPLES['IMAGE']}",
    ):
        assert flag in deploy
    assert "--allow-unauthenticated" not in deploy and "--no-allow-unauthenticated" not in deploy
    flags = dict(a[2:].split("=", 1) for a in deploy if a.startswith("--") and "=" in a)
    env = dict(item.split("=", 1) for item in flags["set-env-vars"].split(","))
    secrets = dict(item.split("=", 1) for item in flags["set-secrets"].split(","))
    assert env["PUBSUB_PUSH_AUDIENCE"] == SERVICE_URL + PUSH_ROUTE
    assert env["PUBSUB_PUSH_SERVICE_ACCOUNT"] == f"trainmedic-push@{PROJECT}.iam.gserviceaccount.com"
    assert env["TRAINMEDIC_STORE"] == "firestore"
    assert secrets[env["TRAINMEDIC_CONFIG"]] == "trainmedic-routing-config:2"  # the routing file, pinned
    assert secrets["SLACK_BOT_TOKEN"] == "trainmedic-slack-bot-token:1"
    assert "PORT" not in env  # Cloud Run sets PORT itself and refuses it as a setting
    # Every name is a real setting, and together they pass the service's own validation.
    env_secrets = {name for name in secrets if not name.startswith("/")}
    assert set(env) | env_secrets <= set(Settings.model_fields)
    settings = load_settings({**env, **{name: "x" for name in env_secrets}})
    assert settings.PUBSUB_VERIFY_TOKEN and settings.TRAINMEDIC_CONFIG == "/etc/trainmedic/routing.yaml"


# ----------------------------------------------------------------------------------------- the sink filter


_SEVERITIES = ["DEFAULT", "DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"]
_TOKEN = re.compile(r'\s*(\(|\)|"(?:[^"\\]|\\.)*"|>=|<=|!=|[=<>:]|[A-Za-z_][\w.]*|[0-9]+)')


def matches(query: str, entry: dict) -> bool:
    """Evaluate the subset of the Logging query language the sink uses. As in Logging, OR binds tighter
    than AND; NOT binds tightest."""
    tokens, pos = [], 0
    while query[pos:].strip():
        token = _TOKEN.match(query, pos)
        assert token, f"this evaluator does not know the syntax at {query[pos:]!r}"
        tokens.append(token[1])
        pos = token.end()
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def conjunction() -> bool:
        value = disjunction()
        while peek() == "AND":
            take()
            value = disjunction() and value
        return value

    def disjunction() -> bool:
        value = unary()
        while peek() == "OR":
            take()
            value = unary() or value
        return value

    def unary() -> bool:
        if peek() == "NOT":
            take()
            return not unary()
        if peek() == "(":
            take()
            value = conjunction()
            assert take() == ")"
            return value
        field, op, literal = take(), take(), take()
        expected = json.loads(literal) if literal.startswith('"') else literal
        actual: object = entry
        for part in field.split("."):
            actual = actual.get(part) if isinstance(actual, dict) else None
        if actual is None:
            return op == "!="
        if op in (">=", "<=", ">", "<"):
            if field == "severity":
                a, b = _SEVERITIES.index(str(actual)), _SEVERITIES.index(expected)
            else:  # a number
                a, b = float(actual), float(expected)  # type: ignore[arg-type]
            return {">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b}[op]
        return {"=": actual == expected, "!=": actual != expected, ":": str(expected) in str(actual)}[op]

    value = conjunction()
    assert peek() is None
    return value


def entry(
    resource_type: str, task: str | None, severity: str, text: str | None = None, json_message: str | None = None
) -> dict:
    labels = (
        {"project_id": PROJECT, "job_id": "8501620632646057984"}
        if resource_type == "ml_job"
        else {"service_name": "trainmedic", "revision_name": "trainmedic-00001-abc", "location": REGION}
    )
    if task:
        labels["task_name"] = task
    result: dict = {"resource": {"type": resource_type, "labels": labels}, "severity": severity}
    if text is not None:
        result["textPayload"] = text
    if json_message is not None:
        result["jsonPayload"] = {"message": json_message}
    return result


def pipeline_entry(state: str) -> dict:
    labels = {"resource_container": PROJECT, "location": REGION, "pipeline_job_id": "train-20261130101500"}
    return {
        "resource": {"type": "aiplatform.googleapis.com/PipelineJob", "labels": labels},
        "severity": "INFO",
        "jsonPayload": {"state": state},
    }


@pytest.mark.parametrize(
    ("log_entry", "selected"),
    [
        (
            entry(
                "ml_job",
                "service",
                "ERROR",
                "The replica workerpool0-0 exited with a non-zero status of 1. "
                "Termination reason: Error. \nTraceback (most recent call last):\n...",
            ),
            True,
        ),
        (
            entry(
                "ml_job",
                "service",
                "ERROR",
                "Replicas low on memory: workerpool0. Specify a machine with larger memory",
            ),
            True,
        ),
        (entry("ml_job", "service", "INFO", "Job failed."), True),
        (entry("ml_job", "service", "INFO", json_message="Job failed."), True),
        (entry("ml_job", "service", "CRITICAL", json_message="Internal error"), True),
        (entry("ml_job", "service", "INFO", "Job is running."), False),
        (entry("ml_job", "service", "INFO", "Job completed successfully."), False),
        (entry("ml_job", "service", "WARNING", "Job is preparing."), False),
        # container stderr is logged at ERROR, pip warnings included
        (
            entry(
                "ml_job",
                "workerpool0-0",
                "ERROR",
                "WARNING: Running pip as the 'root' user can result in broken permissions",
            ),
            False,
        ),
        (entry("ml_job", "workerpool0-0", "ERROR", "Traceback (most recent call last):"), False),
        (entry("ml_job", "workerpool1-0", "INFO", "Job failed."), False),
        # Vertex AI Pipelines: the run's failure, not its other state changes
        (pipeline_entry("PIPELINE_STATE_FAILED"), True),
        (pipeline_entry("PIPELINE_STATE_SUCCEEDED"), False),
        (pipeline_entry("PIPELINE_STATE_RUNNING"), False),
        (entry("aiplatform.googleapis.com/PipelineJob", None, "ERROR", "task failed"), False),
        # the bot's own logs, even when they quote a failure
        (entry("cloud_run_revision", None, "ERROR", "Job failed."), False),
        (entry("cloud_run_revision", "service", "ERROR", json_message="Job failed."), False),
    ],
)
def test_sink_filter_selects_training_failures_only(log_entry, selected):
    assert matches(deploy_setup.SINK_FILTER, log_entry) is selected


def test_the_evaluator_binds_or_tighter_than_and():
    assert matches('severity="INFO" AND textPayload="a" OR textPayload="b"', entry("ml_job", "service", "INFO", "b"))
    assert not matches(
        'severity="ERROR" AND textPayload="a" OR textPayload="b"', entry("ml_job", "service", "INFO", "b")
    )


def test_the_sink_uses_that_filter(setup_lines):
    assert option_values(setup_lines, "log-filter") == [deploy_setup.SINK_FILTER]


# ----------------------------------------------------------------------------------------- Slack manifest


# Why each bot scope is in the manifest: the Slack command and event, and the Web API methods the code calls.
BASE_SCOPES = {"commands": "the /diagnose slash command", "app_mentions:read": "the app_mention event"}
METHOD_SCOPES = {
    "auth_test": set(),
    "chat_postMessage": {"chat:write"},
    "chat_update": {"chat:write"},
    "chat_delete": {"chat:write"},
    "chat_postEphemeral": {"chat:write"},
    "views_open": set(),
    "views_update": set(),
    "views_push": set(),
    "conversations_members": {"channels:read", "groups:read"},  # public and private channels
    "conversations_list": {"channels:read", "groups:read"},  # a routed "#name" to its channel id
    "conversations_history": {"channels:history", "groups:history"},  # an alert posted but never confirmed
    "conversations_replies": {"channels:history", "groups:history"},  # and its card, in the alert's thread
    "usergroups_users_list": {"usergroups:read"},
    "users_lookupByEmail": {"users:read", "users:read.email"},  # the caller of a refused job creation
}
# slack_sdk names Web API methods family_method (chat_postMessage). The code calls them directly
# (client.chat_update(...)) or by name (self._call("chat_update", ...)).
_SLACK_METHOD = (
    r"(?:admin|apps|auth|bookmarks|bots|calls|chat|conversations|dnd|emoji|files|pins|reactions|reminders|search"
    r"|stars|team|usergroups|users|views|workflows)_[a-z][a-zA-Z_]*"
)
_SLACK_CALL = re.compile(rf"\.({_SLACK_METHOD})\(|[\"']({_SLACK_METHOD})[\"']")


def slack_methods_called() -> set[str]:
    sources = [*(ROOT / "bot").rglob("*.py"), *(ROOT / "handlers").rglob("*.py")]
    return {a or b for path in sources for a, b in _SLACK_CALL.findall(path.read_text(encoding="utf-8"))}


def service_routes() -> set[tuple[str, str]]:
    """(path, method) for every route of the service's HTTP app."""
    from types import SimpleNamespace

    from handlers.app import create_app

    app = create_app(SimpleNamespace(alerts=None, verifier=None, bolt=None, store=None))  # nothing is called
    return {(route.path, method) for route in app.routes for method in route.methods}


@pytest.fixture(scope="module")
def manifest() -> dict:
    return yaml.safe_load((DEPLOY / "slack-app-manifest.yaml").read_text(encoding="utf-8"))


def test_the_service_has_the_routes_the_deployment_uses():
    assert {(SLACK_ROUTE, "POST"), (PUSH_ROUTE, "POST"), ("/healthz", "GET")} <= service_routes()


def test_manifest_urls_and_command_match_the_service(manifest):
    from handlers.slack_listeners import DIAGNOSE_COMMAND

    commands = manifest["features"]["slash_commands"]
    assert [c["command"] for c in commands] == [DIAGNOSE_COMMAND] == ["/diagnose"]
    settings = manifest["settings"]
    sources = [*(ROOT / "bot").rglob("*.py"), *(ROOT / "handlers").rglob("*.py")]
    events = {e for path in sources for e in re.findall(r'\.event\("([\w.]+)"\)', path.read_text(encoding="utf-8"))}
    assert settings["event_subscriptions"]["bot_events"] == sorted(events) == ["app_mention"]
    urls = [
        commands[0]["url"],
        settings["interactivity"]["request_url"],
        settings["event_subscriptions"]["request_url"],
    ]
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["socket_mode_enabled"] is False  # Slack calls the service over HTTP
    for url in urls:
        parts = urlparse(url)
        assert parts.scheme == "https" and parts.netloc.endswith(".run.app"), url
        assert (parts.path, "POST") in service_routes()
        assert parts.path == SLACK_ROUTE
    assert manifest["_metadata"]["major_version"] == 1
    assert manifest["features"]["bot_user"]["display_name"]


def test_manifest_scopes_are_the_ones_the_code_needs(manifest):
    scopes = manifest["oauth_config"]["scopes"]["bot"]
    assert len(scopes) == len(set(scopes))
    called = slack_methods_called()
    assert {"chat_postMessage", "chat_update"} <= called  # the scan finds the calls
    unknown = sorted(called - set(METHOD_SCOPES))
    assert not unknown, f"add the scopes of these Slack methods to METHOD_SCOPES: {unknown}"
    needed = set(BASE_SCOPES).union(*(METHOD_SCOPES[name] for name in called))
    assert set(scopes) == needed, f"missing {sorted(needed - set(scopes))}, not needed {sorted(set(scopes) - needed)}"


def test_setup_fills_the_service_url_into_the_manifest():
    rendered = yaml.safe_load(deploy_setup.rendered_manifest(SERVICE_URL))
    assert rendered["features"]["slash_commands"][0]["url"] == SERVICE_URL + SLACK_ROUTE
    assert rendered["settings"]["interactivity"]["request_url"] == SERVICE_URL + SLACK_ROUTE
    assert rendered["settings"]["event_subscriptions"]["request_url"] == SERVICE_URL + SLACK_ROUTE


# ----------------------------------------------------------------------------------------- image files


def test_dockerfile_is_slim_non_root_production_and_without_dev_extras():
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    instructions = [line for line in text.splitlines() if line and not line.startswith((" ", "#"))]
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.M)
    assert base and re.fullmatch(r"python:3\.11-slim(?:-\w+)?", base[1])
    assert [i for i in instructions if i.startswith("FROM")] == [
        "FROM ${PYTHON_IMAGE} AS build",
        "FROM ${PYTHON_IMAGE}",
    ]
    user = [i for i in instructions if i.startswith("USER ")]
    assert user == ["USER 10001:10001"] and instructions.index(user[0]) > instructions.index("FROM ${PYTHON_IMAGE}")
    assert instructions[-1] == 'CMD ["trainmedic", "serve"]'  # exec form: uvicorn gets SIGTERM
    assert "[dev]" not in text and "optional-dependencies" not in text and "pip install -e" not in text
    knowledge = re.search(r"^COPY knowledge (\S+)$", text, re.M)
    assert knowledge and f"TRAINMEDIC_KNOWLEDGE={knowledge[1]}" in text


def test_dockerignore_admits_exactly_the_image_inputs():
    patterns = [
        line
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    assert patterns[0] == "*"  # everything out (.venv, .git, tests, local state), then only these back in
    admitted = {p[1:] for p in patterns if p.startswith("!")}
    assert admitted == set(deploy_setup.IMAGE_INPUTS) - {"deploy/Dockerfile", ".dockerignore"}
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    sources = {word for line in re.findall(r"^COPY (?!--from)(.+) \S+$", dockerfile, re.M) for word in line.split()}
    assert sources <= admitted, f"COPY uses files the .dockerignore keeps out: {sources - admitted}"
    assert not re.search(r"^ADD ", dockerfile, re.M)


def test_image_tag_follows_the_image_inputs(tmp_path):
    for entry_name in deploy_setup.IMAGE_INPUTS:
        source = ROOT / entry_name
        target = tmp_path / entry_name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy(source, target)
    before = deploy_setup.source_digest(tmp_path)
    assert deploy_setup.source_digest(tmp_path) == before
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("x = 1\n")  # not in the image: same tag
    assert deploy_setup.source_digest(tmp_path) == before
    (tmp_path / "bot" / "cli.py").write_text("changed\n")
    assert deploy_setup.source_digest(tmp_path) != before


def test_example_routing_file_is_valid():
    from bot.config import load_routing
    from bot.diagnosis.knowledge import CLASS_IDS

    config = load_routing(str(DEPLOY / "trainmedic.example.yaml"))
    classes = {r.match.failure_class for r in config.routes if r.match.failure_class} | set(config.class_channels)
    assert classes and classes <= set(CLASS_IDS)
    ids = config.rerun_allowed + [i for r in config.routes for i in r.rerun_allowed]
    assert ids and all(re.fullmatch(r"[US][A-Z0-9]{8,}", i) for i in ids)


# ----------------------------------------------------------------------------------------- idempotency

FAKE_GCLOUD = r"""
import json, os, sys

NUMBER = "123456789012"
args = sys.argv[1:]
stdin = sys.stdin.buffer.read()
with open(os.environ["FAKE_GCLOUD_LOG"], "a") as log:
    log.write(json.dumps(args) + "\n")
state_path = os.environ["FAKE_GCLOUD_STATE"]
state = json.load(open(state_path)) if os.path.exists(state_path) else {"res": {}, "versions": {}, "bindings": []}
res, versions, bindings = state["res"], state["versions"], state["bindings"]
flags = dict(a[2:].partition("=")[::2] for a in args if a.startswith("--"))
words = [a for a in args if not a.startswith("--")]
project, fmt = flags.get("project"), flags.get("format", "")


def finish(out=b"", rc=0, err=""):
    json.dump(state, open(state_path, "w"))
    sys.stdout.buffer.write(out if isinstance(out, bytes) else out.encode())
    sys.stderr.write(err)
    sys.exit(rc)


def show(key):
    if key not in res:
        finish(rc=1, err="ERROR: NOT_FOUND\n")
    if fmt == "json":
        finish(json.dumps(res[key]))
    value = res[key]
    for part in fmt[len("value("):-1].split("."):
        value = value[part]
    finish(str(value) + "\n")


def topic(name):
    return name if name.startswith("projects/") else f"projects/{project}/topics/{name}"


def subscription(sub):
    if "topic" in flags:
        sub["topic"] = topic(flags["topic"])
    sub["ackDeadlineSeconds"] = int(flags.get("ack-deadline", sub.get("ackDeadlineSeconds", 10)))
    if "push-endpoint" in flags:
        sub["pushConfig"] = {"pushEndpoint": flags["push-endpoint"], "oidcToken": {
            "serviceAccountEmail": flags["push-auth-service-account"], "audience": flags["push-auth-token-audience"]}}
        sub["retryPolicy"] = {"minimumBackoff": flags["min-retry-delay"], "maximumBackoff": flags["max-retry-delay"]}
        sub["deadLetterPolicy"] = {"deadLetterTopic": topic(flags["dead-letter-topic"]),
                                   "maxDeliveryAttempts": int(flags["max-delivery-attempts"])}
    if flags.get("expiration-period") == "never":
        sub["expirationPolicy"] = {}
    return sub


for verb in ("add-iam-policy-binding", "remove-iam-policy-binding"):
    if verb in words:
        at = words.index(verb)
        binding = [" ".join(words[:at]), words[at + 1], flags["member"], flags["role"]]
        if verb.startswith("add"):
            bindings.append(binding) if binding not in bindings else None
        elif binding in bindings:
            bindings.remove(binding)
        else:
            finish(rc=1, err="ERROR: Policy binding with the specified principal, role, and condition not found!\n")
        finish()

if words[:2] == ["services", "enable"]:
    finish()
if words[:2] == ["projects", "describe"] and fmt == "value(projectNumber)":
    finish(NUMBER + "\n")
if words[:4] == ["beta", "services", "identity", "create"]:
    finish(f"Service identity created: service-{NUMBER}@gcp-sa-pubsub.iam.gserviceaccount.com\n")
if words[:2] == ["builds", "submit"]:
    image = json.loads(stdin)["images"][0]
    digest = image.rsplit(":", 1)[0] + "@sha256:" + "0" * 64
    res["artifacts/docker/images/" + image] = {"image_summary": {"fully_qualified_digest": digest}}
    finish()
if words[:2] == ["run", "deploy"]:
    url = f"https://{words[2]}-{NUMBER}.{flags['region']}.run.app"
    res["run/services/" + words[2]] = {"status": {"url": url}, "deployed": args}
    finish()
if words[:2] == ["secrets", "versions"]:
    secret = words[3] if words[2] == "add" else flags["secret"]
    if secret not in versions or (words[2] != "add" and not versions[secret]):
        finish(rc=1, err="ERROR: NOT_FOUND\n")
    if words[2] == "add":
        data = stdin if flags["data-file"] == "-" else open(flags["data-file"], "rb").read()
        versions[secret].append(data.decode())
        finish()
    if words[2] == "access":
        finish(versions[secret][-1].encode())
    if words[2] == "describe" and fmt == "value(name.basename())":
        finish(f"{len(versions[secret])}\n")

# describe / create / update / delete / undelete of one named resource
if words[0] in ("secrets", "firestore") or words[:3] == ["artifacts", "docker", "images"]:
    group_len = {"secrets": 1, "firestore": 2, "artifacts": 3}[words[0]]
else:
    group_len = 2
group, verb = words[:group_len], words[group_len]
name = flags.get("database", "(default)") if group[0] == "firestore" else words[group_len + 1]
if group == ["scheduler", "jobs"] and verb in ("create", "update") and name == "http":  # jobs create http NAME
    name = words[group_len + 2]
if group == ["iam", "service-accounts"] and verb == "create":
    name = f"{name}@{project}.iam.gserviceaccount.com"
key = "/".join(group) + "/" + name
if verb == "describe":
    show(key)
if verb == "create":
    if key in res:
        finish(rc=1, err="ERROR: ALREADY_EXISTS\n")
    if group == ["iam", "roles"]:
        res[key] = {"includedPermissions": flags["permissions"].split(",")}
    elif group == ["logging", "sinks"]:
        writer = f"serviceAccount:service-{NUMBER}@gcp-sa-logging.iam.gserviceaccount.com"
        res[key] = {"destination": words[4], "filter": flags["log-filter"], "writerIdentity": writer}
    elif group == ["pubsub", "subscriptions"]:
        res[key] = subscription({})
    elif group == ["scheduler", "jobs"]:
        res[key] = {"name": name, "httpTarget": {"uri": flags["uri"]}, "schedule": flags["schedule"]}
    elif group == ["firestore", "databases"]:
        res[key] = {"type": "FIRESTORE_NATIVE" if flags["type"] == "firestore-native" else "DATASTORE_MODE"}
    else:
        res[key] = {"name": name}
        if group == ["secrets"]:
            versions[name] = []
    finish()
if key not in res:
    finish(rc=1, err="ERROR: NOT_FOUND\n")
if verb == "update" and group == ["logging", "sinks"]:
    res[key].update(destination=words[4], filter=flags["log-filter"])
    finish()
if verb == "update" and group == ["pubsub", "subscriptions"]:
    subscription(res[key])
    finish()
if verb == "update" and group == ["scheduler", "jobs"]:
    res[key].update(httpTarget={"uri": flags["uri"]}, schedule=flags["schedule"])
    finish()
if verb == "update" and group == ["iam", "roles"]:
    res[key]["includedPermissions"] = flags["permissions"].split(",")
    finish()
if verb == "undelete":
    res[key].pop("deleted")
    finish()
if verb == "delete":
    if group == ["iam", "roles"]:  # soft delete: it still describes, with deleted: true
        res[key]["deleted"] = True
    else:
        del res[key]
        bindings[:] = [b for b in bindings if b[:2] != [" ".join(group), name]]
        if group == ["artifacts", "repositories"]:  # its images go with it
            prefix = f"artifacts/docker/images/{flags['location']}-docker.pkg.dev/{project}/{name}/"
            for image in [k for k in res if k.startswith(prefix)]:
                del res[image]
    finish()
finish(rc=2, err=f"fake gcloud: unknown command {args}\n")
"""

# Commands that are idempotent by nature, so a second run may repeat them.
IDEMPOTENT = ({"services", "enable"}, {"identity", "create"}, {"add-iam-policy-binding"}, {"run", "deploy"})
CHANGES = {
    "create",
    "update",
    "delete",
    "undelete",
    "add",
    "submit",
    "remove-iam-policy-binding",
    "deploy",
    "add-iam-policy-binding",
    "enable",
}


class FakeProject:
    """A project held by fake_gcloud: what exists, and which commands each script run sent.

    The scripts run from a copy of the repository's deploy inputs, so the test does not depend on files
    other people are editing (a README.md is made up if there is none).
    """

    def __init__(self, root: Path) -> None:
        self.repo = root / "repo"
        for name in {*deploy_setup.IMAGE_INPUTS, "deploy"}:
            source, target = ROOT / name, self.repo / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
            elif source.exists():
                shutil.copy(source, target)
        if not (self.repo / "README.md").exists():
            (self.repo / "README.md").write_text("# trainmedic\n")
        self.bin = root / "bin"
        self.bin.mkdir()
        script = self.bin / "gcloud"
        script.write_text(f"#!{sys.executable} -IS\n{FAKE_GCLOUD}")
        script.chmod(0o755)
        self.state, self.log = root / "state.json", root / "log.jsonl"

    def run(
        self, name: str, *args: str, env: dict[str, str] | None = None
    ) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
        self.log.write_text("")
        fake_env = {"FAKE_GCLOUD_STATE": str(self.state), "FAKE_GCLOUD_LOG": str(self.log)}
        result = run_script(
            name,
            "--project",
            PROJECT,
            "--region",
            REGION,
            *args,
            path_dir=self.bin,
            env={**fake_env, **(env or {})},
            deploy=self.repo / "deploy",
        )
        calls = [json.loads(line) for line in self.log.read_text().splitlines()]
        return result, calls

    @property
    def resources(self) -> dict:
        return json.loads(self.state.read_text())["res"]

    @property
    def bindings(self) -> list:
        return json.loads(self.state.read_text())["bindings"]


def changes(calls: list[list[str]]) -> list[list[str]]:
    words = [[a for a in call if not a.startswith("--")] for call in calls]
    return [call for call, w in zip(calls, words, strict=True) if CHANGES & set(w)]


def test_setup_twice_changes_nothing_the_second_time_and_teardown_removes_it_all(tmp_path):
    project = FakeProject(tmp_path)

    first, calls = project.run("setup", *SETUP_ARGS)
    assert first.returncode == 3, first.stderr  # no Slack credentials yet: stop before the build
    assert f"{SERVICE_URL}/slack/events" in first.stderr and "SLACK_BOT_TOKEN" in first.stderr
    assert not [c for c in calls if c[:2] in (["builds", "submit"], ["run", "deploy"])]

    second, calls = project.run("setup", *SETUP_ARGS, env=SLACK_ENV)
    assert second.returncode == 0, second.stderr
    deploys = [c for c in calls if c[:2] == ["run", "deploy"]]
    assert len(deploys) == 1 and [c for c in calls if c[:2] == ["builds", "submit"]]
    assert f"url: {SERVICE_URL}/slack/events" in second.stdout  # the manifest, ready for Slack

    third, calls = project.run("setup", *SETUP_ARGS, env=SLACK_ENV)
    assert third.returncode == 0, third.stderr
    repeated = [c for c in changes(calls) if not any(kinds <= set(c) for kinds in IDEMPOTENT)]
    assert repeated == [], "a second run changed these"
    assert [c for c in calls if c[:2] == ["run", "deploy"]] == deploys  # same digest and versions: no new revision

    edited = tmp_path / "routing.yaml"
    edited.write_text((DEPLOY / "trainmedic.example.yaml").read_text() + "\n# edited\n")
    fourth, calls = project.run("setup", *SETUP_ARGS, "--routing-config", str(edited), env=SLACK_ENV)
    assert fourth.returncode == 0, fourth.stderr
    assert [c[:4] for c in changes(calls) if "versions" in c] == [
        ["secrets", "versions", "add", "trainmedic-routing-config"]
    ]
    deploy = next(c for c in calls if c[:2] == ["run", "deploy"])
    assert any("=trainmedic-routing-config:2" in a for a in deploy)  # the new version is pinned: a new revision

    # Someone edited resources by hand: the next run puts them back.
    state = json.loads(project.state.read_text())
    state["res"]["logging/sinks/trainmedic-vertex-failures"]["filter"] = 'resource.type="ml_job" severity>=ERROR'
    state["res"]["pubsub/subscriptions/trainmedic-vertex-failures-push"]["ackDeadlineSeconds"] = 10
    state["res"]["iam/roles/trainmedic_bot"]["includedPermissions"] = ["aiplatform.customJobs.get"]
    project.state.write_text(json.dumps(state))
    fifth, calls = project.run("setup", *SETUP_ARGS, "--routing-config", str(edited), env=SLACK_ENV)
    assert fifth.returncode == 0, fifth.stderr
    fixed = [c[:3] for c in changes(calls) if not any(kinds <= set(c) for kinds in IDEMPOTENT)]
    assert fixed == [["iam", "roles", "update"], ["logging", "sinks", "update"], ["pubsub", "subscriptions", "update"]]
    assert project.resources["logging/sinks/trainmedic-vertex-failures"]["filter"] == deploy_setup.SINK_FILTER
    assert project.resources["pubsub/subscriptions/trainmedic-vertex-failures-push"]["ackDeadlineSeconds"] == 60

    down, calls = project.run("teardown", *SETUP_ARGS)
    assert down.returncode == 0, down.stderr
    assert set(project.resources) == {"firestore/databases/(default)", "iam/roles/trainmedic_bot"}  # kept; soft-deleted
    assert project.resources["iam/roles/trainmedic_bot"]["deleted"] is True
    assert [b for b in project.bindings if "trainmedic-bot@" in b[2]] == []

    again, calls = project.run("teardown", *SETUP_ARGS)
    assert again.returncode == 0, again.stderr
    assert [c for c in changes(calls) if "remove-iam-policy-binding" not in c] == []

    back, calls = project.run("setup", *SETUP_ARGS, env=SLACK_ENV)
    assert back.returncode == 0, back.stderr
    assert ["iam", "roles", "undelete", "trainmedic_bot"] in [c[:4] for c in calls]
