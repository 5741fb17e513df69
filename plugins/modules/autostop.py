#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: autostop
short_description: Install, remove or read a node's autostop (shut down after some minutes idle)
version_added: 0.2.0
description:
  - With O(state=present), installs on the node the autostop checker (the source of the collection's
    C(module_utils/autostop.py), as C(/usr/local/libexec/amx-cluster-autostop.py)), its settings
    (C(/etc/amx-cluster/autostop.json)) and a systemd service and timer (C(amx-cluster-autostop.service),
    C(.timer) in C(/etc/systemd/system)) that run it every minute; enables and starts the timer when systemd runs
    the node.
  - The checker shuts the node down (O(shutdown_command)) once the node has had no training job of the collection
    and no interactive login for O(idle_minutes). Whether that stops or terminates an EC2 instance is the
    instance's initiated-shutdown behaviour, which the C(amx.cluster.ec2_cluster) role sets to O(action).
  - With O(state=absent), stops and disables the timer and removes those files, only where they carry the
    collection's marker line.
  - With O(state=touch), records the node as busy now (a run of the controller), so that its idle time counts
    again from the next check. C(train.yml) and C(provision.yml) do it first, so that a node idle for almost its
    minutes is not shut down while they get it ready. Nothing happens where the autostop is not installed. It is
    bookkeeping, never reported as a change.
  - With O(state=status), changes nothing and returns the settings, the checker's last state, the decision the
    checker would make now (RV(now), not acted on), the node's uptime, the maximum lifetime's deadline, and the
    training jobs running with the last line of their progress file (C(progress.jsonl) in the job's run folder).
author:
  - amx.cluster developers (@amx-cluster)
options:
  state:
    description: What to do.
    type: str
    choices: [present, absent, status, touch]
    default: present
  idle_minutes:
    description: Minutes with no job and no login after which the node shuts down; at least 1 for O(state=present).
    type: int
    default: 60
  action:
    description: What the shutdown does to the instance (V(stop) or V(terminate)); shown in the checker's log.
    type: str
    choices: [stop, terminate]
    default: stop
  shutdown_command:
    description:
      - The argv the checker runs to shut the node down. Tests replace it with a recorder.
      - Its first element must be a program found on the node (in E(PATH) or the sbin folders).
    type: list
    elements: str
    default: [shutdown, -h, now]
notes:
  - Supports check mode; in check mode nothing is written, and the result's C(changed) says whether something would be.
  - The checker runs with the Python that runs this module (its path goes into the service and the shebang).
  - Without systemd (a container) the files are installed and RV(timer_active) is V(false).
"""

EXAMPLES = r"""
- name: Stop the node after two idle hours
  amx.cluster.autostop:
    idle_minutes: 120
    action: stop
  become: true

- name: Read the idle time
  amx.cluster.autostop:
    state: status
  become: true
  register: autostop_status
"""

RETURN = r"""
files:
  description: The files written or removed (or, in check mode, that would be).
  returned: always
  type: list
  elements: str
  sample: [/etc/amx-cluster/autostop.json]
systemd:
  description: Whether systemd runs the node.
  returned: always
  type: bool
timer_active:
  description: Whether the timer is active after the call.
  returned: always
  type: bool
settings:
  description: The installed settings (idle_minutes, action, shutdown_command); null when not installed.
  returned: always
  type: dict
last_check:
  description: The checker's last state (boot_id, idle_seconds, idle_since_wall, shutdown_due_wall, busy, reason);
    null before its first check.
  returned: always
  type: dict
now:
  description: The decision the checker would make now (shutdown, reason, idle_seconds, shutdown_due_wall, busy),
    from its last state; null when the autostop is not installed.
  returned: O(state=status)
  type: dict
uptime_seconds:
  description: Seconds since the node booted.
  returned: O(state=status)
  type: float
lifetime_deadline_wall:
  description: When the maximum lifetime powers the node off (epoch seconds); null without one.
  returned: O(state=status)
  type: float
busy:
  description: What keeps the node busy now (C(job <name>), C(login <user@tty>)); empty when it is idle.
  returned: O(state=status)
  type: list
  elements: str
jobs:
  description: The training jobs with a process on the node, each with its run folder and its last progress record
    (C(line), as train.yml prints it, C(step), C(total_steps), C(eta_seconds)) when it has one.
  returned: O(state=status)
  type: list
  elements: dict
"""

import inspect
import json
import os
import shutil
import sys

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.amx.cluster.plugins.module_utils import autostop
from ansible_collections.amx.cluster.plugins.module_utils.train_progress import format_progress, parse_progress


def _current(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None


def _systemctl(module, *args):
    return module.run_command(["systemctl", *args])


def _timer_active(module, systemd):
    return systemd and _systemctl(module, "is-active", "--quiet", f"{autostop.UNIT_NAME}.timer")[0] == 0


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _progress(folder):
    """The last record of the progress file of a job's run folder, as train.yml shows it; None without one."""
    for name in ("progress.jsonl", "single/progress.jsonl"):
        try:
            with open(os.path.join(folder, name), "rb") as handle:
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - 65536))
                records = parse_progress(handle.read().decode("utf-8", "replace"))
        except OSError:
            continue
        if records:
            last = records[-1]
            return {
                "line": format_progress(last),
                "step": last.get("step"),
                "total_steps": last.get("total_steps"),
                "eta_seconds": last.get("eta_seconds"),
            }
    return None


def _status():
    seen = autostop.processes()
    observation = autostop.observe(seen=seen)
    previous = _read_json(autostop.STATE_PATH)
    try:
        settings = autostop.check_settings(_read_json(autostop.CONFIG_PATH))
    except autostop.SettingsError:
        settings = None
    now = None
    if settings is not None:
        decision = autostop.decide(settings, observation, previous)
        now = dict(decision.state, shutdown=decision.shutdown, reason=decision.reason)
    try:
        with open(autostop.LIFETIME_DEADLINE_PATH, encoding="utf-8") as handle:
            deadline = float(handle.read().strip())
    except (OSError, ValueError):
        deadline = None
    folders = autostop.job_folders(seen)
    jobs = [
        {"job": job, "run_dir": folders.get(job), "progress": _progress(folders[job]) if job in folders else None}
        for job in observation.jobs
        if not job.startswith("agent pid ")
    ]
    return {
        "settings": settings._asdict() if settings else None,
        "last_check": previous,
        "now": now,
        "uptime_seconds": observation.uptime,
        "lifetime_deadline_wall": deadline,
        "jobs": jobs,
        "busy": autostop.busy_reasons(observation),
    }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["present", "absent", "status", "touch"], default="present"),
            idle_minutes=dict(type="int", default=60),
            action=dict(type="str", choices=list(autostop.ACTIONS), default="stop"),
            shutdown_command=dict(type="list", elements="str", default=list(autostop.DEFAULT_SHUTDOWN_COMMAND)),
        ),
        supports_check_mode=True,
    )
    params = module.params
    systemd = os.path.isdir("/run/systemd/system")
    timer = f"{autostop.UNIT_NAME}.timer"

    if params["state"] == "status":
        module.exit_json(
            changed=False, files=[], systemd=systemd, timer_active=_timer_active(module, systemd), **_status()
        )

    if params["state"] == "touch":
        try:
            settings = autostop.check_settings(_read_json(autostop.CONFIG_PATH))
        except autostop.SettingsError:
            settings = None
        if settings is not None and not module.check_mode:
            observation = autostop.observe()
            busy = observation._replace(jobs=(*observation.jobs, "ansible run"))
            decision = autostop.decide(settings, busy, _read_json(autostop.STATE_PATH))
            autostop.write_state(autostop.STATE_PATH, dict(decision.state, reason=decision.reason))
        module.exit_json(
            changed=False,
            files=[],
            systemd=systemd,
            timer_active=_timer_active(module, systemd),
            settings=settings._asdict() if settings else None,
            last_check=_read_json(autostop.STATE_PATH),
        )

    if params["state"] == "absent":
        paths = [autostop.TIMER_PATH, autostop.SERVICE_PATH, autostop.CONFIG_PATH, autostop.SCRIPT_PATH]
        ours = [path for path in paths if autostop.MARKER in (_current(path) or "")]
        if ours and not module.check_mode:
            if systemd:
                _systemctl(module, "disable", "--now", timer)
            for path in ours:
                os.remove(path)
            if systemd:
                _systemctl(module, "daemon-reload")
        module.exit_json(
            changed=bool(ours),
            files=ours,
            systemd=systemd,
            timer_active=_timer_active(module, systemd),
            settings=None,
            last_check=_read_json(autostop.STATE_PATH),
        )

    try:
        settings = autostop.check_settings(
            {
                "idle_minutes": params["idle_minutes"],
                "action": params["action"],
                "shutdown_command": params["shutdown_command"],
            }
        )
    except autostop.SettingsError as exc:
        module.fail_json(msg=f"autostop: {exc}")
    if settings.idle_minutes < 1:
        module.fail_json(
            msg="autostop: idle_minutes must be 1 or more with state=present; use state=absent to turn it off"
        )

    # The checker runs the command with systemd's PATH, which has the sbin folders.
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin"])
    if shutil.which(settings.shutdown_command[0], path=search) is None:
        module.fail_json(
            msg=f"autostop: the shutdown command's program {settings.shutdown_command[0]!r} is not found on this node;"
            " give the command as a list of arguments, such as [shutdown, -h, now]"
        )

    python = sys.executable
    wanted = {
        autostop.SCRIPT_PATH: (autostop.script_source(inspect.getsource(autostop), python), 0o755),
        autostop.CONFIG_PATH: (autostop.config_document(settings), 0o644),
        autostop.SERVICE_PATH: (autostop.service_unit(python), 0o644),
        autostop.TIMER_PATH: (autostop.timer_unit(), 0o644),
    }
    changed = []
    for path, (text, mode) in wanted.items():
        same = _current(path) == text
        if same:
            info = os.stat(path)
            same = (info.st_mode & 0o7777, info.st_uid) == (mode, 0)
        if not same:
            changed.append(path)
            if not module.check_mode:
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                tmp = f"{path}.tmp.{os.getpid()}"
                with open(tmp, "w", encoding="utf-8") as handle:
                    handle.write(text)
                os.chmod(tmp, mode)
                os.chown(tmp, 0, 0)
                os.replace(tmp, path)

    started = False
    if systemd and not module.check_mode:
        units_changed = {autostop.SERVICE_PATH, autostop.TIMER_PATH} & set(changed)
        if units_changed:
            rc, _out, err = _systemctl(module, "daemon-reload")
            if rc != 0:
                module.fail_json(msg=f"autostop: systemctl daemon-reload failed: {err.strip()}")
        enabled = _systemctl(module, "is-enabled", "--quiet", timer)[0] == 0
        if not enabled or not _timer_active(module, systemd):
            rc, _out, err = _systemctl(module, "enable", "--now", timer)
            if rc != 0:
                module.fail_json(msg=f"autostop: could not enable and start {timer}: {err.strip()}")
            started = True
    module.exit_json(
        changed=bool(changed) or started,
        files=changed,
        systemd=systemd,
        timer_active=_timer_active(module, systemd),
        settings=settings._asdict(),
        last_check=_read_json(autostop.STATE_PATH),
    )


if __name__ == "__main__":
    main()
