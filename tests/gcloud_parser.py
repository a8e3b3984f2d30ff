"""Run gcloud commands through the real gcloud CLI's argument parser, offline and without credentials.

With no account configured gcloud parses the command line fully and then stops at authentication:
exit 2 means the command, a flag or a required flag is wrong; exit 1 with "no active account" means it parsed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

NO_ACCOUNT = "You do not currently have an active account selected"


@dataclass(frozen=True)
class ParseResult:
    command: str
    returncode: int
    stderr: str

    @property
    def parsed(self) -> bool:
        return self.returncode != 2 and NO_ACCOUNT in self.stderr


def gcloud_available() -> bool:
    return shutil.which("gcloud") is not None


def check_commands(commands: list[str], config_dir: Path) -> list[ParseResult]:
    config_dir.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(config_dir),
        "CLOUDSDK_CONFIG": str(config_dir),
        "CLOUDSDK_CORE_DISABLE_PROMPTS": "1",
        "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "true",
        "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "true",
    }

    def run(command: str) -> ParseResult:
        argv = shlex.split(command)
        assert argv[0] == "gcloud", command
        done = subprocess.run(
            argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False
        )
        return ParseResult(command, done.returncode, done.stderr)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(run, commands))


# Placeholders stand for values the user fills in; gcloud checks some values before authentication (a project
# id's form, a known region), so the parser check gives it realistic stand-ins for them.
SAMPLE_VALUES = {
    "PROJECT_ID": "example-project",
    "REGION": "us-central1",
}


def with_sample_values(command: str) -> str:
    for placeholder, value in SAMPLE_VALUES.items():
        command = re.sub(rf"\b{placeholder}\b", value, command)
    return command
