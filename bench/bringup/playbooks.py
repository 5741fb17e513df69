# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ansible-playbook as the benchmark runs it: its environment, one timed run, what its output says."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import time
from typing import Any, Dict, List, Optional

from benchlib.paths import REPO, VENV_BIN, environment_without

RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)
PROFILE_TASK = re.compile(r"^(.+?) -+ (\d+\.\d+)s$", re.MULTILINE)


def ansible_env(workdir: pathlib.Path, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = environment_without(["ANSIBLE_"])
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_HOST_KEY_CHECKING="True",
        # Control sockets of this benchmark only: a container's address can come back in the next cluster.
        ANSIBLE_SSH_CONTROL_PATH_DIR=str(workdir / "cp"),
        ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_tasks",
        PROFILE_TASKS_TASK_OUTPUT_LIMIT="8",
    )
    env.update(extra or {})
    return env


def play_recap(output: str) -> Dict[str, Dict[str, int]]:
    """The PLAY RECAP's counts per host, from ansible-playbook's output (empty when it has none)."""
    return {
        host: {"ok": int(ok), "changed": int(changed), "unreachable": int(unreachable), "failed": int(failed)}
        for host, ok, changed, unreachable, failed in RECAP.findall(output)
    }


def slowest_tasks(output: str) -> List[Dict[str, Any]]:
    """ansible.posix.profile_tasks' summary lines (`<task> ---- 12.34s`), slowest first as it prints them."""
    return [{"task": task.strip(), "seconds": float(seconds)} for task, seconds in PROFILE_TASK.findall(output)]


def playbook(
    path: pathlib.Path,
    inventory: pathlib.Path,
    logfile: pathlib.Path,
    env: Dict[str, str],
    extra_vars: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """Run ansible-playbook; wall seconds, changed count (all hosts), the slowest tasks. Fails loudly."""
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(path)]
    if extra_vars:
        argv += ["-e", json.dumps(extra_vars)]
    # The output goes to the log as it comes (tail -f it to follow a run); stderr follows stdout there.
    with open(logfile, "w") as handle:
        started = time.monotonic()
        rc = subprocess.run(
            argv, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT, timeout=7200, check=False
        ).returncode
        seconds = time.monotonic() - started
    output = logfile.read_text()
    recap = play_recap(output)
    if rc != 0 or not recap:
        raise RuntimeError(f"{path.name} failed (rc {rc}, log {logfile}):\n{output[-4000:].strip()}")
    return {
        "seconds": round(seconds, 2),
        "changed": sum(h["changed"] for h in recap.values()),
        "recap": recap,
        "slowest_tasks": slowest_tasks(output),
        "log": str(logfile),
    }
