# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one-step launch's check on the master: read the plan of these inputs, probe every node over the mesh and,
when every node is as it was, make the new run's folders.

amx.cluster.train_launch runs ``check`` on the master without Ansible's module wrapper (plugin_utils/node_bundle.py
sends this file and what it imports on standard input): the wrapper's build, transfer and start took about 0.3 s of
a launch that took 1.6 s on 3 nodes. amx.cluster.launch_plan writes the plan (state=present) with the probe and the
rendering here. Standard library only, Python 3.8+: the master's Python need not have Ansible.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Mapping

from ansible_collections.amx.cluster.plugins.module_utils import node_probe
from ansible_collections.amx.cluster.plugins.module_utils.files import ABSENT, read_root_record, write_atomically
from ansible_collections.amx.cluster.plugins.module_utils.inputs import RUN_ID
from ansible_collections.amx.cluster.plugins.module_utils.launch import LaunchError, launch_command
from ansible_collections.amx.cluster.plugins.module_utils.launch_plan import (
    PlanError,
    fill_run,
    node_changes,
    parse_plan,
    plan_fresh,
)
from ansible_collections.amx.cluster.plugins.module_utils.smoke_record import smoke_test_due

INPUTS = re.compile(r"[0-9a-f]{64}\Z")
DEFAULTS = {"plan_dir": "/var/lib/amx-cluster/launch", "run_id": "", "prepare": True, "timeout": 60}


class PlanModuleError(Exception):
    """What stops the check or the launch_plan module, said so that a person can act on it."""


def as_user(user):
    """subprocess keyword arguments that run a command as the training user (from root), with its home."""
    env = {
        "HOME": user["home"],
        "USER": user["name"],
        "LOGNAME": user["name"],
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
    }
    if os.geteuid() == int(user["uid"]):
        return {"env": env}
    if os.geteuid() != 0:
        raise PlanModuleError(f"the plan is of user {user['name']}: run the task as root (become: true)")

    def drop():
        os.setgroups(os.getgrouplist(user["name"], int(user["gid"])))
        os.setgid(int(user["gid"]))
        os.setuid(int(user["uid"]))

    return {"env": env, "preexec_fn": drop, "cwd": user["home"]}


def on_node(node, command, ssh_options, user, timeout, stdin=None):
    """Run a command (a list) on a node as the training user: the master itself, a worker over the mesh."""
    argv = command if node["alias"] == "localhost" else ["ssh", *list(ssh_options), node["alias"], shlex.join(command)]
    try:
        # Without input the command reads nothing (standard input may be the bundle train_launch sent).
        feed = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
        done = subprocess.run(argv, capture_output=True, timeout=timeout, check=False, **feed, **as_user(user))
    except subprocess.TimeoutExpired:
        return 124, b"", f"no answer within {timeout} s".encode()
    except OSError as exc:
        return 127, b"", str(exc).encode()
    return done.returncode, done.stdout, done.stderr


def probe_nodes(nodes, specs, ssh_options, user, timeout):
    """{node name: the probe's answer} for every node, all at once."""
    source = inspect.getsource(node_probe).encode("utf-8")

    def one(node):
        command = [node["python"], "-I", "-", json.dumps(specs[node["name"]], sort_keys=True)]
        rc, out, err = on_node(node, command, ssh_options, user, timeout, stdin=source)
        lines = [line for line in out.decode("utf-8", "replace").splitlines() if line.startswith("{")]
        if rc != 0 or not lines:
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"rc {rc}"]
            return node["name"], {"ok": False, "error": f"rc {rc}: {tail[0][:300]}"}
        try:
            return node["name"], json.loads(lines[-1])
        except ValueError:
            return node["name"], {"ok": False, "error": "the probe's answer is not JSON"}

    with ThreadPoolExecutor(max_workers=min(32, max(len(nodes), 1))) as pool:
        return dict(pool.map(one, nodes))


def render(launch, run_dir, run_id):
    """The launch of a run from the plan's template: launch_command's arguments, by name."""
    return launch_command(**fill_run(launch, run_dir, run_id))


def check_plan(params, plan_path, check_mode):
    text, why = read_root_record(plan_path)
    if text is None:
        if why == ABSENT:
            return {"ready": False, "reason": "no full launch with these settings has passed on this master yet"}
        return {"ready": False, "reason": f"the plan {plan_path} {why}: not trusted"}
    try:
        plan = parse_plan(text)
    except PlanError as exc:
        return {"ready": False, "reason": f"{exc}: not trusted"}
    now = time.time()
    fresh, reason = plan_fresh(plan, params["inputs"], now)
    if not fresh:
        return {"ready": False, "reason": reason}
    record, _why = read_root_record(plan["smoke"]["record"])
    # The one-step launch repeats no smoke test: its record holds while its fingerprint does, whatever its age (the
    # smoke test's own age counts on the full path only).
    smoke = smoke_test_due(record or "", plan["smoke"]["fingerprint"], now, max_age=sys.float_info.max)
    if smoke["run"]:
        return {"ready": False, "reason": f"the smoke test is due ({smoke['reason']})"}
    run_id = params["run_id"] or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    if not RUN_ID.fullmatch(run_id):
        return {"ready": False, "reason": f"train_run_id '{run_id}' cannot name a folder (the full path says how)"}
    user, nodes = plan["user"], plan["nodes"]
    run_dir = plan["run_root"].rstrip("/") + "/" + run_id
    specs = {
        node["name"]: dict(
            node["spec"],
            absent=[run_dir],
            processes={"user": int(user["uid"]), "prefix": plan["run_root"].rstrip("/") + "/"},
        )
        for node in nodes
    }
    ssh_options = plan["job"].get("ssh_options") or []
    probing = time.monotonic()
    answers = probe_nodes(nodes, specs, ssh_options, user, params["timeout"])
    phases = {"probe": round(time.monotonic() - probing, 3), "prepare": 0.0}
    changes = node_changes(plan, answers)
    if changes:
        shown = "; ".join(changes[:4]) + (f"; and {len(changes) - 4} more" if len(changes) > 4 else "")
        return {"ready": False, "reason": shown}
    if check_mode:
        return {"ready": False, "reason": "check mode (the full path shows what a launch would do)"}
    launch = render(plan["launch"], run_dir, run_id)
    if params["prepare"]:
        preparing = time.monotonic()
        prepare(plan, nodes, run_dir, launch["script"], ssh_options, params["timeout"])
        # A plan in use is among the newest that prune keeps.
        os.utime(plan_path)
        phases["prepare"] = round(time.monotonic() - preparing, 3)
    return {
        "ready": True,
        "changed": bool(params["prepare"]),
        "reason": f"{reason}; every node is as it was then",
        "smoke_reason": smoke["reason"],
        "smoke_figures": smoke.get("figures") or {},
        "run_id": run_id,
        "run_dir": run_dir,
        "launch": {key: launch[key] for key in ("command", "argv", "env", "genv", "setvars", "script")},
        "job": fill_run(plan["job"], run_dir, run_id),
        "record": fill_run(plan["record"], run_dir, run_id),
        "user": user,
        "phases": phases,
    }


def prepare(plan, nodes, run_dir, script, ssh_options, timeout):
    """The new run's folder on every node, with the role's scripts the last full launch ran (the probe just found
    them unchanged), and launch.sh on the master."""
    copies = ["{}/{}".format(plan["source_run_dir"], name) for name in plan["run_files"]]
    command = ["sh", "-c", 'd=$1; shift; mkdir -m 0700 -- "$d" && cp -p -- "$@" "$d/"', "sh", run_dir, *copies]
    if not copies:
        command = ["mkdir", "-m", "0700", "--", run_dir]

    def one(node):
        return node["name"], on_node(node, command, ssh_options, plan["user"], timeout)

    with ThreadPoolExecutor(max_workers=min(32, max(len(nodes), 1))) as pool:
        failed = [(name, rc, err) for name, (rc, _out, err) in pool.map(one, nodes) if rc != 0]
    if failed:
        raise PlanModuleError(
            "cannot prepare the run's folder {} on {}".format(
                run_dir,
                "; ".join(
                    f"{name} (rc {rc}: {err.decode('utf-8', 'replace').strip()[-300:]})" for name, rc, err in failed
                ),
            )
        )
    path = os.path.join(run_dir, "launch.sh")
    write_atomically(path, script, mode=0o700, prefix=".launch-")
    os.chown(path, int(plan["user"]["uid"]), int(plan["user"]["gid"]))


def plan_file(params: Mapping[str, Any]) -> str:
    """Where the plan of these inputs lives on the master."""
    if not INPUTS.match(str(params.get("inputs") or "")):
        raise PlanModuleError("inputs must be a sha256 hex digest (the amx.cluster.train_launch action's)")
    return os.path.join(params["plan_dir"], params["inputs"] + ".json")


def check(params: Mapping[str, Any], check_mode: bool = False) -> Dict[str, Any]:
    """Whether the next launch may start in one step (``ready``, ``reason``; when ready, the new run's ``run_id``,
    ``run_dir``, ``launch``, ``job``, ``record``, ``user``, ``smoke_reason``, ``smoke_figures`` and the ``phases``
    ``probe`` and ``prepare``), or {"failed": true, "msg"} for what stops the check itself."""
    params = {**DEFAULTS, **params}
    path = ""
    try:
        path = plan_file(params)
        result = check_plan(params, path, check_mode)
    except (PlanModuleError, PlanError, LaunchError, OSError) as exc:
        return {"failed": True, "msg": f"launch_plan: {exc}", "plan_path": path}
    result.update(plan_path=path, written=False, removed=False)
    result.setdefault("changed", False)
    return result
