"""Start and stop the Google Cloud Pub/Sub and Firestore emulators for tests (loopback only).

Prefers the SDK's direct launchers (no gcloud Python wrapper: about 0.4 s faster, 60 MiB smaller) and
falls back to `gcloud [beta] emulators ... start`. Each emulator runs in its own session, so stopping it
kills the whole process group: killing only the gcloud wrapper would orphan the Java emulator.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

READY_TIMEOUT = 30.0
_LOOPBACK = "127.0.0.1"
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class EmulatorError(RuntimeError):
    pass


@dataclass
class Emulator:
    """A running emulator: `host` is "127.0.0.1:PORT", ready for *_EMULATOR_HOST."""

    kind: str
    host: str
    project: str
    process: subprocess.Popen[bytes]
    log_path: Path
    started_in: float = 0.0
    _workdir: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def reset(self) -> None:
        """Firestore only: delete every document of this emulator's project."""
        if self.kind != "firestore":
            raise EmulatorError("only the Firestore emulator can be reset (restart Pub/Sub instead)")
        url = f"{self.url}/emulator/v1/projects/{self.project}/databases/(default)/documents"
        with _NO_PROXY.open(urllib.request.Request(url, method="DELETE"), timeout=10) as response:
            response.read()

    def export(self, directory: Path) -> Path:
        """Firestore only: write every document to an export under `directory` (an existing folder, read by
        the emulator itself); returns the export's metadata file, for `start_firestore(import_data=...)`."""
        if self.kind != "firestore":
            raise EmulatorError("only the Firestore emulator can export its data")
        before = set(directory.glob("*/*.overall_export_metadata"))
        url = f"{self.url}/emulator/v1/projects/{self.project}:export"
        body = json.dumps({"database": f"projects/{self.project}/databases/(default)",
                           "export_directory": str(directory)}).encode()  # fmt: skip
        request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
        with _NO_PROXY.open(request, timeout=60) as response:
            response.read()
        made = set(directory.glob("*/*.overall_export_metadata")) - before
        if len(made) != 1:
            raise EmulatorError(f"the Firestore emulator's export made {len(made)} metadata files in {directory}")
        return made.pop()

    def stop(self) -> None:
        """Stop the whole process group (the launcher and its JVM) and wait until none of it runs."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:
                self.process.poll()  # reap the launcher, so that only the JVM can keep the group alive
                if not _group_running(self.process.pid):
                    break
                time.sleep(0.05)
            else:
                continue
            break
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=1.0)
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def __enter__(self) -> Emulator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _group_running(pgid: int) -> bool:
    """Whether a process of the group still runs (zombies waiting for init to reap them do not count)."""
    proc = Path("/proc")
    if not proc.is_dir():  # not Linux: any member, zombie or not, counts
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            state, _ppid, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(group) == pgid and state != "Z":
            return True
    return False


def sdk_root() -> Path | None:
    """The Cloud SDK root: from the `gcloud` on PATH, else from `gcloud info`; None if there is no gcloud."""
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        return None
    candidate = Path(gcloud).resolve().parent.parent
    if (candidate / "platform").is_dir():
        return candidate
    try:
        out = subprocess.run(
            [gcloud, "info", "--format=value(installation.sdk_root)"],
            capture_output=True,
            text=True,
            timeout=30,
            env=_gcloud_env(Path(tempfile.gettempdir()) / "trainmedic-gcloudcfg"),
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out) if out else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_LOOPBACK, 0))
        return int(sock.getsockname()[1])


def start_pubsub(
    project: str = "test-project", *, port: int | None = None, timeout: float = READY_TIMEOUT
) -> Emulator:
    """Start a Pub/Sub emulator on a free loopback port (or `port`) and wait until it answers."""
    return _start("pubsub", project, port, timeout)


def start_firestore(
    project: str = "test-project",
    *,
    port: int | None = None,
    timeout: float = READY_TIMEOUT,
    import_data: Path | None = None,
) -> Emulator:
    """Start a Firestore emulator on a free loopback port (or `port`) and wait until it answers; `import_data`
    (the metadata file `Emulator.export` returned) loads an earlier emulator's documents."""
    extra = [f"--import-data={import_data}"] if import_data is not None else []
    return _start("firestore", project, port, timeout, extra)


def _gcloud() -> str:
    return shutil.which("gcloud") or "gcloud"


def _gcloud_env(config_dir: Path) -> dict[str, str]:
    config_dir.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "CLOUDSDK_CONFIG": str(config_dir),
        "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING": "true",
        "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK": "true",
    }


def _command(kind: str, port: int, project: str, workdir: Path, extra: list[str] | None = None) -> list[str]:
    return [*_base_command(kind, port, project, workdir), *(extra or [])]


def _base_command(kind: str, port: int, project: str, workdir: Path) -> list[str]:
    root = sdk_root()
    if root is None:
        raise EmulatorError("gcloud is not installed (needed for the Pub/Sub and Firestore emulators)")
    if kind == "pubsub":
        direct = root / "platform/pubsub-emulator/bin/cloud-pubsub-emulator"
        if direct.is_file():
            return [str(direct), f"--host={_LOOPBACK}", f"--port={port}"]
        data_dir = workdir / "pubsub-data"
        data_dir.mkdir()
        return [_gcloud(), "beta", "emulators", "pubsub", "start", f"--host-port={_LOOPBACK}:{port}",
                f"--project={project}", f"--data-dir={data_dir}"]  # fmt: skip
    direct = root / "platform/cloud-firestore-emulator/cloud_firestore_emulator"
    if direct.is_file():
        return [
            str(direct),
            "start",
            f"--host={_LOOPBACK}",
            f"--port={port}",
            "--database-mode=firestore-native",
        ]
    return [_gcloud(), "emulators", "firestore", "start", f"--host-port={_LOOPBACK}:{port}"]


def _start(kind: str, project: str, port: int | None, timeout: float, extra: list[str] | None = None) -> Emulator:
    for attempt in range(3):
        try:
            return _start_once(kind, project, port or free_port(), timeout, extra)
        except EmulatorError as exc:
            # free_port() cannot reserve the port: another process may take it first. Try a new port.
            if port is not None or attempt == 2 or "already in use" not in str(exc).lower():
                raise
    raise AssertionError("unreachable")


def _start_once(kind: str, project: str, port: int, timeout: float, extra: list[str] | None = None) -> Emulator:
    workdir = tempfile.TemporaryDirectory(prefix=f"trainmedic-{kind}-")
    path = Path(workdir.name)
    command = _command(kind, port, project, path, extra)
    log_path = path / "emulator.log"
    began = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=_gcloud_env(path / "gcloudcfg"),
            cwd=path,
        )
    emulator = Emulator(kind, f"{_LOOPBACK}:{port}", project, process, log_path, _workdir=workdir)
    try:
        _wait_ready(emulator, timeout)
    except EmulatorError as exc:
        tail = emulator.log_tail()
        emulator.stop()
        raise EmulatorError(f"{exc}\n--- {kind} emulator log, last lines ---\n{tail}") from None
    except BaseException:
        emulator.stop()
        raise
    emulator.started_in = time.monotonic() - began
    return emulator


def _wait_ready(emulator: Emulator, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if emulator.process.poll() is not None:
            code = emulator.process.returncode
            raise EmulatorError(f"the {emulator.kind} emulator exited with code {code} before it was ready")
        try:
            with _NO_PROXY.open(f"{emulator.url}/", timeout=1) as response:
                if response.read().strip() == b"Ok":
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.05)
    raise EmulatorError(
        f"the {emulator.kind} emulator did not answer Ok on {emulator.url}/ within {timeout:.0f} s"
    )
