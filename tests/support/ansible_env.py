# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The environment of the ansible-playbook (and ansible-inventory) processes the integration tests start: one
place for what every such process needs, each test adding only its own variables."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from typing import Any, Dict, List, Sequence

REPO = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"


def ansible_env(home: pathlib.Path, drop: Sequence[str] = (), **extra: str) -> Dict[str, str]:
    """This process's environment without any ``ANSIBLE_*`` variable (nor those starting with a prefix in
    ``drop``, such as ``AWS_`` or ``PIP_``), with ``home`` as HOME (Ansible's own folders, ~/.ansible, land there),
    the virtualenv's tools first on PATH, the repository's ansible.cfg, no colour and no retry files; ``extra``
    is added last."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", *drop))}
    env.update(
        HOME=str(home),
        PATH=f"{VENV_BIN}:{env.get('PATH', '/usr/bin:/bin')}",
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_RETRY_FILES_ENABLED="0",
    )
    env.update(extra)
    return env


def local_play_tasks(play: pathlib.Path, *args: str, timeout: int = 180) -> List[Dict[str, Any]]:
    """Run ``play`` on localhost (connection local) from the repository root, so that its ansible.cfg finds the
    collection, with the json callback; the play must succeed. Returns the first play's tasks as that callback
    reports them (``tasks[i]["hosts"]["localhost"]`` is a task's result)."""
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="json")
    env.pop("ANSIBLE_CONFIG", None)
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(play), *args]
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return json.loads(done.stdout)["plays"][0]["tasks"]
