#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: launch_plan
short_description: The one-step launch's plan on the master, written after a full launch and checked before the next
version_added: 0.2.0
description:
  - Runs on the master as root. With O(state=present) (the end of a full launch whose job passed), probes every node
    of the cluster, the master itself and each worker over the cluster's SSH mesh as the training user, in
    parallel, and writes the plan O(plan_dir)/<inputs>.json (JSON, root's, 0600, replaced atomically, with a
    digest) - the launch as a template of the run, each node's probe and fingerprint, the smoke test's fingerprint
    and the static part of the run's record.
  - "With O(state=check), reads the plan of O(inputs) and says whether the next launch may start in one step
    (RV(ready)) or why not (RV(reason)): the plan must be intact and of these inputs (its age decides nothing: it
    holds as long as the fingerprints do); the smoke test's record must still hold (its fingerprint, not its age,
    which counts on the full path only); every node, probed again in
    parallel, must give the plan's fingerprint (its boot id, kernel, the SSH files and the hostfile, the stack's
    manifest and virtualenv, tcmalloc, the launcher's packages, the role's scripts, the data set), have no folder
    for the new run and no process of an earlier run. When it may, and O(prepare=true), it makes the new run's
    folder on every node with the role's scripts and writes its C(launch.sh) on the master."
  - With O(state=absent), removes the plan of O(inputs) after a job that failed (started in one step or on the full
    path), so that the next launch takes the full path, with its gates and smoke test.
  - The probe is the collection's C(node_probe) module_utils file, run with the node's training Python.
  - M(amx.cluster.train_launch) runs the same check without this module's wrapper, in one round trip (the
    C(launch_check) module_utils file).
  - The folder keeps the newest 16 plans (of other inputs, such as other settings or other checkouts); older ones
    are removed when a plan is written.
author:
  - amx.cluster developers (@amx-cluster)
options:
  state:
    description:
      - C(present) writes the plan after a full launch, C(check) reads it before the next one, C(absent) removes it
        after a job that failed.
    type: str
    choices: [present, check, absent]
    default: check
  inputs:
    description: The hash of the launch's inputs (the C(amx.cluster.train_launch) action computes it on the controller).
    type: str
    required: true
  plan_dir:
    description: The folder of the plans on the master (created 0700 root when a plan is written).
    type: path
    default: /var/lib/amx-cluster/launch
  plan:
    description:
      - With O(state=present), what the full launch ran with. Keys C(user) (C(name), C(uid), C(gid),
        C(home)), C(run_root), C(run_files) (the role's scripts, copied into a new run's folder), C(nodes)
        (C(alias), C(name), C(python), C(spec), the probe), C(smoke) (C(record), C(fingerprint), C(max_age)),
        C(launch) (the arguments of the launch's rendering), C(job) (C(args) - the arguments of
        M(amx.cluster.train_job) - and C(results_dir) - the controller's results folder) and C(record) (the static
        part of C(run.json)).
    type: dict
    default: {}
  run_dir:
    description: With O(state=present), the folder of the run that passed (its C(launch.sh) must be the plan's launch).
    type: path
  run_id:
    description:
      - The run's id. With O(state=check), the new run's; empty gives a UTC time stamp (as amx.cluster.train names
        a run).
    type: str
    default: ""
  prepare:
    description: With O(state=check), make the new run's folders and its C(launch.sh) when the launch may go ahead.
    type: bool
    default: true
  timeout:
    description: Seconds that each node's probe may take.
    type: int
    default: 60
notes:
  - Check mode never prepares a run; RV(ready) is then false with the reason, so that the full path shows what it
    would do.
"""

EXAMPLES = r"""
- name: Check whether this launch may start in one step
  amx.cluster.launch_plan:
    state: check
    inputs: "{{ launch_inputs }}"
    run_id: squad-2
  become: true
  register: plan
"""

RETURN = r"""
ready:
  description: Whether the launch may start in one step (with O(prepare=true), its run folder is ready).
  returned: always
  type: bool
reason:
  description: Why it may or may not (the first differences found, by name, never by content).
  returned: always
  type: str
written:
  description: With O(state=present), whether a plan was written.
  returned: always
  type: bool
removed:
  description: With O(state=absent), whether there was a plan to remove.
  returned: always
  type: bool
plan_path:
  description: The plan's file on the master.
  returned: always
  type: str
run_id:
  description: The new run's id.
  returned: when ready
  type: str
run_dir:
  description: The new run's folder (on every node).
  returned: when ready
  type: str
launch:
  description: The new run's launch (C(command), C(argv), C(env), C(genv), C(setvars), C(script)).
  returned: when ready
  type: dict
job:
  description: The arguments of M(amx.cluster.train_job) for the new run.
  returned: when ready
  type: dict
record:
  description: The static part of the new run's C(run.json).
  returned: when ready
  type: dict
user:
  description: The training user (C(name), C(uid), C(gid), C(home)).
  returned: when ready
  type: dict
smoke_reason:
  description: Why the smoke test is not due (its record still holds).
  returned: when ready
  type: str
phases:
  description: Seconds of the check's phases, V(probe) (every node, in parallel) and V(prepare) (the run's folders).
  returned: when ready
  type: dict
smoke_figures:
  description:
    - What the recorded smoke test measured (C(run_id), C(onednn) the bf16 probe's lines per node), for the run's
      record.
  returned: when ready
  type: dict
"""

# Ansible modules import after their documentation (validate-modules checks it).
import contextlib
import os
import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.amx.cluster.plugins.module_utils import node_probe
from ansible_collections.amx.cluster.plugins.module_utils.files import write_atomically
from ansible_collections.amx.cluster.plugins.module_utils.launch import LaunchError
from ansible_collections.amx.cluster.plugins.module_utils.launch_check import (
    PlanModuleError,
    check,
    plan_file,
    probe_nodes,
    render,
)
from ansible_collections.amx.cluster.plugins.module_utils.launch_plan import (
    PLAN_VERSION,
    PlanError,
    launch_problems,
    plan_text,
    template_run,
)

# Plans kept in the folder, the newest by when they were written or last used (a count, not an age: no clock decides
# whether a plan holds).
PLANS_KEPT = 16
# A folder no run has: the launch filled with it must no longer name the run's own folder.
ELSEWHERE = "/nonexistent/amx-cluster-plan-check"
# What the role gives with state=present.
PLAN_PARTS = ("user", "run_root", "run_files", "nodes", "smoke", "launch", "job", "record")


def write_plan(params, plan_path):
    plan_in, run_dir = params["plan"], (params["run_dir"] or "").rstrip("/")
    run_id = params["run_id"]
    if not run_dir or not run_id:
        raise PlanModuleError("state=present needs run_dir and run_id: the run that passed")
    missing = [key for key in PLAN_PARTS if key not in plan_in]
    if missing:
        raise PlanModuleError(f"the plan lacks {', '.join(missing)}")
    launch = template_run(plan_in["launch"], run_dir, run_id)
    try:
        with open(os.path.join(run_dir, "launch.sh"), encoding="utf-8") as handle:
            ran = handle.read()
        problems = launch_problems(
            ran, render(launch, run_dir, run_id)["script"], render(launch, ELSEWHERE, "x")["script"], run_dir
        )
    except (OSError, LaunchError, KeyError, TypeError) as exc:
        problems = [f"the run's launch cannot be rendered again ({type(exc).__name__}: {exc})"]
    if problems:
        return {"written": False, "reason": "; ".join(problems)}
    nodes = plan_in["nodes"]
    answers = probe_nodes(
        nodes,
        {node["name"]: node["spec"] for node in nodes},
        plan_in["job"].get("ssh_options") or [],
        plan_in["user"],
        params["timeout"],
    )
    failed = [f"{name}: {answer.get('error')}" for name, answer in answers.items() if not answer.get("ok")]
    if failed:
        return {"written": False, "reason": "the probe failed on " + "; ".join(failed)}
    plan = {
        "version": PLAN_VERSION,
        "inputs": params["inputs"],
        "written": time.time(),
        "user": plan_in["user"],
        "run_root": plan_in["run_root"],
        "source_run_dir": run_dir,
        "run_files": list(plan_in["run_files"]),
        "nodes": [dict(node, fingerprint=node_probe.fingerprint(answers[node["name"]]["result"])) for node in nodes],
        "smoke": plan_in["smoke"],
        "launch": launch,
        "job": template_run(plan_in["job"], run_dir, run_id),
        "record": template_run(plan_in["record"], run_dir, run_id),
    }
    text = plan_text(plan)
    os.makedirs(params["plan_dir"], mode=0o700, exist_ok=True)
    write_atomically(plan_path, text, mode=0o600, prefix=".plan-")
    prune(params["plan_dir"], plan_path)
    return {"written": True, "reason": f"plan written for the next launch with these settings ({len(nodes)} nodes)"}


def prune(plan_dir, keep, kept=PLANS_KEPT):
    """Keep the newest plans of the folder (only the collection's own files): each is a few kilobytes, but every
    change of settings gives a new one."""
    plans = []
    for name in os.listdir(plan_dir):
        path = os.path.join(plan_dir, name)
        if path == keep or not re.fullmatch(r"[0-9a-f]{64}\.json", name):
            continue
        with contextlib.suppress(OSError):
            plans.append((os.lstat(path).st_mtime, path))
    for _mtime, path in sorted(plans, reverse=True)[max(kept - 1, 0) :]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def remove_plan(plan_path):
    try:
        os.unlink(plan_path)
    except FileNotFoundError:
        return {"removed": False, "reason": "no plan of these inputs"}
    return {"removed": True, "reason": "plan removed: the next launch with these settings takes the full path"}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["present", "check", "absent"], default="check"),
            inputs=dict(type="str", required=True),
            plan_dir=dict(type="path", default="/var/lib/amx-cluster/launch"),
            plan=dict(type="dict", default={}),
            run_dir=dict(type="path"),
            run_id=dict(type="str", default=""),
            prepare=dict(type="bool", default=True),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["state"] == "check":
        result = check(params, module.check_mode)
        if result.get("failed"):
            module.fail_json(**result)
        module.exit_json(**result)
    plan_path = ""
    try:
        plan_path = plan_file(params)
        if params["state"] == "present":
            result = {"written": False, "reason": "check mode"} if module.check_mode else write_plan(params, plan_path)
            result.update(ready=False, removed=False, changed=bool(result["written"]))
        elif module.check_mode:
            result = {"removed": os.path.lexists(plan_path), "reason": "check mode"}
        else:
            result = remove_plan(plan_path)
        result.setdefault("ready", False)
        result.setdefault("written", False)
        result.setdefault("changed", result.get("removed", False))
    except (PlanModuleError, PlanError, LaunchError, OSError) as exc:
        module.fail_json(msg=f"launch_plan: {exc}", plan_path=plan_path)
    module.exit_json(plan_path=plan_path, **result)


if __name__ == "__main__":
    main()
