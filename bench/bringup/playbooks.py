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
# What train.yml's first play (amx.cluster.train_launch) says on stderr: the job started in one step, or why the full
# path runs instead.
ONE_STEP = re.compile(r"^one-step launch \[[^\]\n]+\] run (\S+): (.*)$", re.MULTILINE)
HAND_OVER = re.compile(r"^one-step launch \[[^\]\n]+\] the full path runs: (.*)$", re.MULTILINE)
# What the full path's last step says (roles/train/tasks/plan.yml): whether it kept a plan for the next launch.
PLAN_NOTE = re.compile(r'^\s*"msg": "One-step launch: (.*)"\s*$', re.MULTILINE)
PLAN_NOT_KEPT = re.compile(r"no plan kept \((.*)\)\.?$", re.DOTALL)


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


def launch_path(output: str, run_id: str) -> Dict[str, Any]:
    """Which path train.yml took for run `run_id`, from its output: one_step True (with the reason the plan gave),
    False (with the reason for the hand-over to the full path), or None when the output says neither (a
    train.yml without the one-step launch)."""
    for started, reason in ONE_STEP.findall(output):
        if started == run_id:
            return {"one_step": True, "reason": reason.strip()}
    handed_over = HAND_OVER.findall(output)
    if handed_over:
        return {"one_step": False, "reason": handed_over[0].strip()}
    return {"one_step": None, "reason": None}


def plan_kept(output: str) -> Dict[str, Any]:
    """Whether a full train.yml kept the one-step launch's plan, from its last note: kept True, False (with the
    reason it gives), or None when the output has no such note (no plan step ran: a one-step launch, or a train.yml
    without the one-step launch)."""
    notes = PLAN_NOTE.findall(output)
    if not notes:
        return {"kept": None, "reason": None}
    try:
        note = json.loads(f'"{notes[-1]}"')  # the callback shows the message as a JSON string
    except ValueError:
        note = notes[-1]
    not_kept = PLAN_NOT_KEPT.search(note)
    if not_kept:
        return {"kept": False, "reason": not_kept.group(1).strip()}
    return {"kept": True, "reason": None}


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
