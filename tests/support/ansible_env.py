# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The environment of the ansible-playbook (and ansible-inventory) processes the integration tests start: one
place for what every such process needs, each test adding only its own variables."""

from __future__ import annotations

import os
import pathlib
from typing import Dict, Sequence

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
