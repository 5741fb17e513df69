#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: launch_plan
short_description: The one-step launch's plan on the master, written after a full launch and removed after a failure
version_added: 0.2.0
description:
  - Runs on the master as root. With O(state=present) (the end of a full launch whose job passed), probes every node
    of the cluster, the master itself and each worker over the cluster's SSH mesh as the training user, in
    parallel, and writes the plan O(plan_dir)/<inputs>.json (JSON, root's, 0600, replaced atomically, with a
    digest) - the launch as a template of the run, each node's probe and fingerprint, the smoke test's fingerprint
    and the static part of the run's record.
  - With O(state=absent), removes the plan of O(inputs) after a job that failed (started in one step or on the full
    path), so that the next launch takes the full path, with its gates and smoke test.
  - M(amx.cluster.train_launch) reads the plan before the next launch (the C(launch_check) module_utils file, run
    on the master without a module's wrapper). The plan has no age; it holds while the smoke test's record and every
    node's fingerprint do (its boot id, kernel, the SSH files and the hostfile, the stack's manifest and virtualenv,
    tcmalloc, the launcher's packages, the role's scripts, the data set).
  - The probe is the collection's C(node_probe) module_utils file, run with the node's training Python.
  - The folder keeps the newest 16 plans (of other inputs, such as other settings or other checkouts); older ones
    are removed when a plan is written.
author:
  - amx.cluster developers (@amx-cluster)
options:
  state:
    description: C(present) writes the plan after a full launch, C(absent) removes it after a job that failed.
    type: str
    choices: [present, absent]
    default: present
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
    description: With O(state=present), the id of the run that passed.
    type: str
    default: ""
  timeout:
    description: Seconds that each node's probe may take.
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: In check mode nothing is written nor removed; RV(removed) says whether there is a plan to remove.
"""

EXAMPLES = r"""
- name: Keep the plan of a full launch whose job passed
  amx.cluster.launch_plan:
    state: present
    inputs: "{{ launch_inputs }}"
    plan: "{{ plan }}"
    run_dir: /home/trainer/amx-cluster-runs/squad-1
    run_id: squad-1
  become: true

- name: Remove it after a job that failed
  amx.cluster.launch_plan:
    state: absent
    inputs: "{{ launch_inputs }}"
  become: true
"""

RETURN = r"""
written:
  description: With O(state=present), whether a plan was written.
  returned: always
  type: bool
removed:
  description: With O(state=absent), whether there was a plan to remove.
  returned: always
  type: bool
reason:
  description: Why the plan was or was not written or removed.
  returned: always
  type: str
plan_path:
  description: The plan's file on the master.
  returned: always
  type: str
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
            state=dict(type="str", choices=["present", "absent"], default="present"),
            inputs=dict(type="str", required=True),
            plan_dir=dict(type="path", default="/var/lib/amx-cluster/launch"),
            plan=dict(type="dict", default={}),
            run_dir=dict(type="path"),
            run_id=dict(type="str", default=""),
            timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    params = module.params
    plan_path = ""
    try:
        plan_path = plan_file(params)
        if params["state"] == "present":
            result = {"written": False, "reason": "check mode"} if module.check_mode else write_plan(params, plan_path)
            result.update(removed=False, changed=bool(result["written"]))
        else:
            if module.check_mode:
                result = {"removed": os.path.lexists(plan_path), "reason": "check mode"}
            else:
                result = remove_plan(plan_path)
            result.update(written=False, changed=result["removed"])
    except (PlanModuleError, PlanError, LaunchError, OSError) as exc:
        module.fail_json(msg=f"launch_plan: {exc}", plan_path=plan_path)
    module.exit_json(plan_path=plan_path, **result)


if __name__ == "__main__":
    main()
