# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin amx.cluster.provision_stamp: provision.yml's one-step check of a node, and the stamp that a full
provision leaves for it.

With state=check (provision.yml's first node play), it hashes the provision's inputs on the controller as the
one-step launch hashes a launch's (plugin_utils/launch_inputs.py), over the running host's own settings only (a
change on another host shows in that host's own check). Then one amx.cluster.node_state call on the node: the
provision stamp must be of these inputs, and every node role's stamp that it names must still hold as its role
would decide, with the files of the SSH mesh and the hostfile as they were. When every node says so, the playbook
ends there. With state=present (the end of a full provision that passed), it writes that stamp, naming the
node roles' stamps this run decided on and the files that amx.cluster.ssh_mesh and amx.cluster.mpi_hostfile
published.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.amx.cluster.plugins.plugin_utils.launch_inputs import cluster_settings, forced, play_inputs
from ansible_collections.amx.cluster.plugins.plugin_utils.node_stamp import node_state

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAMP_ROLE = "provision"
# The node roles whose stamps a provisioned node rests on; hf_examples keeps none when it is turned off.
NODE_ROLES = ("tcmalloc", "torch_stack", "hf_examples", "amx_check")
OPTIONAL_ROLES = ("hf_examples",)
# -e NAME=true asks for what only the full path does: every role in full, a new cluster key. Asked twice in a row,
# it must act twice, although the inputs are those of the run before.
FULL_RUN_SWITCHES = ["node_stamp_force", "ssh_mesh_rotate"]

ARGUMENT_SPEC: Dict[str, Any] = {
    "state": {"type": "str", "choices": ["check", "present"], "default": "check"},
    "inputs": {"type": "str", "default": ""},
    "stamp_dir": {"type": "path", "default": "/var/lib/amx-cluster/stamps"},
}


def named_stamps(task_vars: Dict[str, Any]) -> Tuple[Dict[str, Dict[str, Any]], List[str]]:
    """({role: {inputs_hash}} of the node roles that decided on their stamp in this run, the roles that
    should have and did not)."""
    stamps: Dict[str, Dict[str, Any]] = {}
    missing: List[str] = []
    for role in NODE_ROLES:
        decision = task_vars.get(f"__{role}_stamp")
        if not isinstance(decision, dict) or not decision.get("inputs_hash"):
            if role not in OPTIONAL_ROLES:
                missing.append(role)
            continue
        stamps[role] = {"inputs_hash": str(decision["inputs_hash"])}
    return stamps, missing


def mesh_files(task_vars: Dict[str, Any]) -> Tuple[List[str], List[str]]:
    """(the files the mesh and the hostfile wrote on this node, the roles that published none in this run)."""
    files: List[str] = []
    missing: List[str] = []
    for role, fact in (("ssh_mesh", "ssh_mesh_files"), ("mpi_hostfile", "mpi_hostfile_file")):
        value = task_vars.get(fact)
        if value is None:
            missing.append(role)
        elif isinstance(value, str):
            files += [value] if value else []
        else:
            files += [str(path) for path in value]
    return sorted(set(files)), missing


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: Optional[str] = None, task_vars: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        task_vars = task_vars or {}
        host = task_vars.get("inventory_hostname")
        common = {"role": STAMP_ROLE, "stamp_dir": args["stamp_dir"]}
        if args["state"] == "check":
            own = cluster_settings(task_vars, self._templar, only_self=True)
            inputs = play_inputs(task_vars, own, COLLECTION_ROOT)
            switched = forced(own, FULL_RUN_SWITCHES)
            if switched:
                reason = f"a full run was asked for ({', '.join(switched)})"
                result.update(changed=False, inputs=inputs, skip=False, reason=reason)
                return result
            found = node_state(self, task_vars, dict(common, inputs_hash=inputs))
            result.update(changed=False, inputs=inputs, skip=bool(found["skip"]), reason=found["reason"])
            # The Python discovered for the call, kept as Ansible keeps it for the run's next tasks.
            if found.get("ansible_facts"):
                result["ansible_facts"] = found["ansible_facts"]
            return result

        if not args["inputs"]:
            raise AnsibleActionFail(f"{host}: state=present needs inputs (the check's, from the start of the run)")
        stamps, unstamped = named_stamps(task_vars)
        files, unpublished = mesh_files(task_vars)
        if unstamped or unpublished:
            # Roles left out of this run (--tags, a failed include): a record without them would skip them next time.
            result.update(
                changed=False,
                written=False,
                reason="no provision stamp: {} did not run in full here".format(", ".join(unstamped + unpublished)),
            )
            return result
        probe = {"files": files, "stamps": stamps}
        written = node_state(self, task_vars, dict(common, inputs_hash=args["inputs"], write=True, probe=probe))
        # Like the roles' stamps, the record of the collection's own checks: keeping it is not a change.
        result.update(changed=False, written=bool(written["written"]), reason=written["reason"], files=files)
        return result
