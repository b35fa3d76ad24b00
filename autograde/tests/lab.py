"""JupyterLab started exactly as `make lab` starts it (the Makefile's rule and .jupyter/), for the tests.

The rule runs with LAB_DIR set to a scratch folder and LAB_ARGS adding a free port and a known token; the
user-level Jupyter folders point into scratch space too, so a developer's own ~/.jupyter changes nothing.
The helpers poll with generous deadlines and never sleep a fixed time: a loaded machine is only slower.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from autograde.paths import REPO

START_TIMEOUT = 180.0  # seconds for JupyterLab to answer on a loaded 2-core machine (about 6 s when idle)
ERROR_LINE = re.compile(r"^\[(E|C) |Traceback \(most recent call last\)|\bCRITICAL\b|\bERROR\b", re.M)
"""A server log line that reports an error: Jupyter's [E ...] and [C ...] levels, or a Python traceback."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Lab:
    """A running JupyterLab: its base URL, token, notebook folder and log file."""

    url: str
    token: str
    root: Path
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def server_log(self) -> str:
        """The log lines from the Jupyter server itself (make's echo of the command line left out)."""
        return "\n".join(ln for ln in self.log().splitlines() if not ln.startswith("JUPYTER_CONFIG_PATH="))

    def error_lines(self) -> list[str]:
        return [ln for ln in self.server_log().splitlines() if ERROR_LINE.search(ln)]

    def error_records(self) -> list[str]:
        """The log's error records (a record: one '[X date ...]' line with the lines that continue it)."""
        records: list[str] = []
        for line in self.server_log().splitlines():
            if line.startswith("[") or not records:
                records.append(line)
            else:
                records[-1] += "\n" + line
        return [r for r in records if ERROR_LINE.search(r)]

    def get(self, path: str, timeout: float = 60.0) -> tuple[int, str]:
        """(HTTP status, body) of GET path, authenticated with the token; redirects are not followed."""
        request = urllib.request.Request(self.url + path, headers={"Authorization": f"token {self.token}"})
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(request, timeout=timeout) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def page_config(self) -> dict:
        """The page config JupyterLab embeds in /lab (extensions to load, disabled plugins...)."""
        status, body = self.get("/lab")
        assert status == 200, f"GET /lab answered {status}"
        found = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', body, re.S)
        assert found, "no jupyter-config-data in /lab"
        return json.loads(found.group(1))

    def loaded_server_extensions(self) -> list[str]:
        """The server extensions the log says were loaded, in order."""
        return re.findall(r"\] (\S+) \| extension was successfully loaded", self.server_log())


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003 - urllib's signature
        return None


def lab_command(notebook_dir: Path, port: int, token: str) -> list[str]:
    """`make lab` with a scratch LAB_DIR, a port and a token; the venv is this interpreter's, taken as installed."""
    venv = Path(sys.prefix)
    args = f"--port={port} --ServerApp.port_retries=0 --IdentityProvider.token={token}"
    return ["make", "--no-print-directory", "-o", str(venv / ".installed"), "lab", f"VENV={venv}",
            f"LAB_DIR={notebook_dir}", f"LAB_ARGS={args}"]


def lab_environment(scratch: Path) -> dict[str, str]:
    """The environment of a first-time student: user-level Jupyter and IPython folders empty, in scratch."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER_", "IPYTHON"))}
    for name, folder in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                         ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
        (scratch / folder).mkdir(parents=True, exist_ok=True)
        env[name] = str(scratch / folder)
    return env


@contextmanager
def running_lab(scratch: Path, timeout: float = START_TIMEOUT) -> Iterator[Lab]:
    """Start `make lab` on scratch/lab (release/ is copied there as for a student) and stop it afterwards."""
    scratch.mkdir(parents=True, exist_ok=True)
    root, port, token = scratch / "lab", free_port(), secrets.token_hex(16)
    lab = Lab(f"http://127.0.0.1:{port}", token, root, scratch / "lab.log")
    with open(lab.log_path, "wb") as log:
        proc = subprocess.Popen(lab_command(root, port, token), cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=lab_environment(scratch / "home"),
                                start_new_session=True)
    try:
        _wait_until_up(lab, proc, timeout)
        yield lab
    finally:
        _stop(proc)


def _wait_until_up(lab: Lab, proc: subprocess.Popen, timeout: float) -> None:
    """Poll /api/status until it answers 200; fail at once, with the log, if make lab exits first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if lab.get("/api/status", timeout=10)[0] == 200:
                return
        except OSError:  # not listening yet
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"JupyterLab did not answer within {timeout:.0f} s:\n{lab.log()[-3000:]}")
        try:
            proc.wait(timeout=0.5)  # the poll interval; returns early if make lab has exited
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"make lab exited with {proc.returncode}:\n{lab.log()[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    """Stop make and the JupyterLab it started (their own process group): SIGTERM, then SIGKILL after 30 s."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        except ProcessLookupError:
            pass
