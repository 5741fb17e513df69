# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures for the tests that run the training scripts for real.

``train_python``: the interpreter of a scratch venv with the pins of train-venv.txt, built once under
``.cache/train-venv/<hash>`` (about 2 minutes the first time) and reused while the pins and the Python version
stay the same. ``AMX_CLUSTER_TRAIN_PYTHON`` points the tests at an existing interpreter instead.
``tiny_qa``: a tiny model and data set made by make_tiny_qa.py, once per session.
``mpirun``: the MPI launcher; missing, the MPI tests are skipped with the reason (and fail under CI=true).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from train_helpers import build_venv, make_tiny_qa, run_env


@pytest.fixture(scope="session")
def train_python() -> Path:
    given = os.environ.get("AMX_CLUSTER_TRAIN_PYTHON")
    if given:
        return Path(given)
    return build_venv()


@pytest.fixture(scope="session")
def installed_versions(train_python) -> dict:
    code = (
        "import json, torch, transformers; "
        "print(json.dumps({'torch': torch.__version__, 'transformers': transformers.__version__}))"
    )
    out = subprocess.run([str(train_python), "-c", code], capture_output=True, text=True, check=True, env=run_env())
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def tiny_qa(train_python, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("tiny-qa")
    return make_tiny_qa(train_python, out)


@pytest.fixture(scope="session")
def mpirun() -> str:
    found = shutil.which("mpirun")
    if not found:
        if os.environ.get("CI"):
            pytest.fail("mpirun is not installed (apt-get install -y mpich): the MPI tests must run in CI")
        pytest.skip("mpirun is not installed here (apt-get install -y mpich)")
    return found


@pytest.fixture
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def localhost_hostfile(tmp_path) -> Path:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("localhost\n")
    return hostfile
