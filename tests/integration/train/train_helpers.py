# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers for the tests that run the training scripts for real: paths, the run environment, the venv."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FILES = REPO / "roles" / "train" / "files"
PINS = Path(__file__).with_name("train-venv.txt")
CACHE = REPO / ".cache" / "train-venv"

# Offline, and one OpenMP thread per process: these machines have 2 cores and two ranks share them.
RUN_ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OMP_NUM_THREADS": "1",
    "PYTHONUNBUFFERED": "1",
    # Every rank of these tests is on this machine, whatever its host name resolves to: gloo on loopback, and
    # Hydra starting the ranks itself rather than through ssh.
    "GLOO_SOCKET_IFNAME": "lo",
    "HYDRA_LAUNCHER": "fork",
}


def run_env(**extra: str) -> dict:
    env = dict(os.environ)
    env.update(RUN_ENV)
    env.update(extra)
    return env


def pins() -> list:
    return [line.strip() for line in PINS.read_text().splitlines() if line.strip() and not line.startswith("#")]


@contextlib.contextmanager
def locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_venv() -> Path:
    key = hashlib.sha256((PINS.read_text() + sys.version).encode()).hexdigest()[:16]
    venv = CACHE / key
    python = venv / "bin" / "python"
    marker = venv / ".complete"
    with locked(CACHE / (key + ".lock")):
        if marker.exists() and python.exists():
            return python
        shutil.rmtree(venv, ignore_errors=True)
        started = time.time()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        log = venv / "pip-install.log"
        with open(log, "w") as handle:
            done = subprocess.run(
                [str(python), "-m", "pip", "install", "--disable-pip-version-check", *pins()],
                stdout=handle,
                stderr=subprocess.STDOUT,
                timeout=1800,
                check=False,
            )
        if done.returncode != 0:
            tail = "".join(log.read_text().splitlines(keepends=True)[-30:])
            pytest.fail("pip install of {} failed (log {}):\n{}".format(", ".join(pins()), log, tail))
        marker.write_text(json.dumps({"pins": pins(), "seconds": round(time.time() - started, 1)}) + "\n")
        return python


def make_tiny_qa(python: Path, out: Path, *extra: str) -> dict:
    done = subprocess.run(
        [str(python), str(FILES / "make_tiny_qa.py"), "--output_dir", str(out), *extra],
        capture_output=True,
        text=True,
        env=run_env(),
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((out / "manifest.json").read_text())
