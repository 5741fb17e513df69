# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A module of the collection run for real on this machine, as `ansible localhost -m amx.cluster.NAME`: the one
place the module tests start it, with the json callback and the node's Python (the system's, as on a node)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
from typing import Any, Dict, Optional, Sequence

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# The Python a node runs modules with: the system's when there is one, as on a real node.
NODE_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def ansible_binary() -> str:
    beside = pathlib.Path(sys.executable).parent / "ansible"
    found = str(beside) if beside.exists() else shutil.which("ansible")
    if not found:
        pytest.fail("the ansible command is not installed beside this Python nor on PATH: run `make setup`")
    return found


def run_module(
    name: str,
    args: Optional[str] = None,
    check: bool = False,
    path: Optional[str] = None,
    prefix: Sequence[str] = (),
    environment: Optional[Dict[str, str]] = None,
) -> Dict[str, Any]:
    """The host's result of `ansible localhost -m amx.cluster.<name> -a <args>` (connection local). ``path``
    replaces PATH for the run; ``prefix`` runs the whole command under another one (`taskset -c 0`), whose limits
    the module's process inherits, as it inherits ``environment``."""
    env = {**os.environ, **(environment or {})}
    env.update(
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
    )
    if path is not None:
        env["PATH"] = path
    command = [*prefix, ansible_binary(), "localhost", "-i", "localhost,", "-c", "local"]
    command += ["-e", f"ansible_python_interpreter={NODE_PYTHON}", "-m", f"amx.cluster.{name}"]
    if args:
        command += ["-a", args]
    if check:
        command.append("--check")
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    try:
        document = json.loads(proc.stdout)
    except ValueError:
        pytest.fail(f"ansible printed no JSON (rc {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return document["plays"][0]["tasks"][0]["hosts"]["localhost"]


def run_here(command: str, in_data: Optional[bytes] = None, env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """What a connection's _low_level_execute_command answers, for a command run on this machine as on a node (the
    stand-in actions of the tests that send node_bundle's commands)."""
    done = subprocess.run(command, shell=True, input=in_data, env=env, capture_output=True, timeout=60, check=False)
    return {"rc": done.returncode, "stdout": done.stdout.decode(), "stderr": done.stderr.decode()}
