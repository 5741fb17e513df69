# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One container of the tests' node image (tests/cluster/node-image.sh), reached by Ansible through Docker
(community.docker's docker connection), for the tests that run a role on a single node."""

from __future__ import annotations

import contextlib
import json
import pathlib
import shutil
import subprocess
import uuid
from typing import Dict, Iterator, List

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"


def run(argv: List[str], timeout: int = 300, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


@contextlib.contextmanager
def docker_node(folder: pathlib.Path, label: str, play: str) -> Iterator[Dict]:
    """A started container named amx-LABEL-XXXX, with ``play`` as folder/play.yml and folder/inventory.json naming
    it as host ``node``; removed on exit. Skips (saying why) where no Docker engine or controller venv is there."""
    if shutil.which("docker") is None or run(["docker", "info"], check=False).returncode != 0:
        pytest.skip("no Docker engine answers here (`make docker` starts one): the test needs a node container")
    if not (VENV_BIN / "ansible-playbook").exists():
        pytest.skip(f"ansible-playbook is not in {VENV_BIN}: run `make setup` first")
    image = run(["bash", str(REPO / "tests" / "cluster" / "node-image.sh")], timeout=900).stdout.strip().splitlines()
    name = f"amx-{label}-{uuid.uuid4().hex[:8]}"
    run(["docker", "run", "-d", "--name", name, "--label", f"amx-cluster-test={label}", image[-1]])
    (folder / "play.yml").write_text(play)
    host = {
        "ansible_connection": "community.docker.docker",
        "ansible_host": name,
        "ansible_python_interpreter": "/usr/bin/python3",
    }
    (folder / "inventory.json").write_text(json.dumps({"all": {"hosts": {"node": host}}}))
    try:
        yield {"name": name, "folder": folder}
    finally:
        run(["docker", "rm", "-f", name], check=False)
