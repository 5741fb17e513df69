# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin amx.cluster.mesh_plan: ssh_mesh's checks and values, once for the play.

On the controller it reads what every node of the play shared (its address, port, user, key name, account and host
key) and checks it all (plugins/module_utils/ssh_mesh.py). When nothing is wrong and the cluster has workers, it
reads the master's files over the task's connection (delegated to the master): the key pair under
ssh_mesh_key_name (stat, slurp) and, when host keys are pinned, what ``ssh-keygen -F`` finds in known_hosts for each
node. Nothing is written. Problems are returned, not raised: each node's own assert then stops it with them all.
"""

from __future__ import annotations

import base64
import shlex
from typing import Any, Dict, Mapping, Optional, Tuple

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.amx.cluster.plugins.module_utils.cluster_shape import cluster_shape
from ansible_collections.amx.cluster.plugins.module_utils.ssh_mesh import master_problems, mesh_plan
from ansible_collections.amx.cluster.plugins.plugin_utils.hostvars import MISSING, hostvar

ARGUMENT_SPEC: Dict[str, Any] = {
    "master": {"type": "str", "default": ""},
    # Not a list: cluster_shape tells the user that a string is no list of workers.
    "workers": {"type": "raw"},
    "rotate": {"type": "bool", "default": False},
    "strict_host_key_checking": {"type": "bool", "default": True},
}

# What each node shares before the plan (tasks/preflight.yml), under these names.
SHARED = {
    "address": "__ssh_mesh_given_address",
    "port": "__ssh_mesh_node_port",
    "user": "__ssh_mesh_node_user",
    "key_name": "__ssh_mesh_node_key_name",
}


def node_values(hostvars: Mapping[str, Any], host: str) -> Dict[str, Any]:
    """What mesh_plan reads of one node: its shared port, user and key name, its user's passwd entry (getent) and
    its ed25519 host key."""
    values = {key: hostvar(hostvars, host, name, default=MISSING) for key, name in SHARED.items() if key != "address"}
    values = {key: value for key, value in values.items() if value is not MISSING}
    facts = hostvar(hostvars, host, "ansible_facts")
    facts = facts if isinstance(facts, Mapping) else {}
    accounts = facts.get("getent_passwd")
    if isinstance(accounts, Mapping) and values.get("user") in accounts:
        values["account"] = accounts[values["user"]]
    values["host_key"] = facts.get("ssh_host_key_ed25519_public") or None
    return values


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: Optional[str] = None, task_vars: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        task_vars = task_vars or {}
        hostvars = task_vars.get("hostvars", {})
        shape = cluster_shape(
            task_vars.get("groups", {}),
            hostvars,
            master=args["master"],
            workers=args["workers"],
            prefix="ssh_mesh",
            address_variable=SHARED["address"],
        )
        play_hosts = list(task_vars.get("ansible_play_hosts", []))
        nodes = {host: node_values(hostvars, host) for host in play_hosts}
        plan = mesh_plan(
            shape,
            list(task_vars.get("ansible_play_hosts_all", [])),
            play_hosts,
            nodes,
            args["strict_host_key_checking"],
        )
        plan["key"] = None
        if not plan["problems"] and plan["workers"]:
            account = nodes[plan["master"]].get("account")
            if not isinstance(account, (list, tuple)) or len(account) < 5:
                raise AnsibleActionFail(
                    f"amx.cluster.mesh_plan: no passwd entry of the mesh user on the master: {account!r}"
                )
            home = str(account[4])
            found = self._known_hosts(home, plan["entries"]) if args["strict_host_key_checking"] else {}
            private_exists, public_text = self._key_pair(f"{home}/.ssh/{plan['key_name']}", task_vars)
            keys = {name: values.get("host_key") for name, values in nodes.items()}
            checked = master_problems(plan, home, found, keys, private_exists, public_text, args["rotate"])
            plan["problems"] += checked["problems"]
            plan["key"] = checked["key"]
        result.update(plan, changed=False)
        return result

    def _module(self, name: str, module_args: Dict[str, Any], task_vars: Dict[str, Any]) -> Dict[str, Any]:
        done = self._execute_module(module_name=name, module_args=module_args, task_vars=task_vars)
        if done.get("failed"):
            raise AnsibleActionFail(f"amx.cluster.mesh_plan: {name} {module_args} on the master: {done.get('msg')}")
        return done

    def _key_pair(self, path: str, task_vars: Dict[str, Any]) -> Tuple[bool, Optional[str]]:
        """Whether the private key exists, and the public key's text (None when it is no regular file)."""
        private = self._module("ansible.legacy.stat", {"path": path, "get_checksum": False}, task_vars)
        public = self._module("ansible.legacy.stat", {"path": f"{path}.pub", "get_checksum": False}, task_vars)
        if not public["stat"].get("isreg"):
            return bool(private["stat"].get("exists")), None
        content = self._module("ansible.legacy.slurp", {"src": f"{path}.pub"}, task_vars)["content"]
        return bool(private["stat"].get("exists")), base64.b64decode(content).decode("utf-8", "replace")

    def _known_hosts(self, home: str, entries: Mapping[str, Mapping[str, Any]]) -> Dict[str, str]:
        """What ssh-keygen -F prints from the master's known_hosts for each node's name, by node (found only). A
        raw command, so that --check reads the file too; it only reads."""
        found = {}
        for name, entry in entries.items():
            argv = ["ssh-keygen", "-F", str(entry["known_host"]), "-f", f"{home}/.ssh/known_hosts"]
            # ssh-keygen's 255 (no known_hosts file) would read as a lost connection over ssh: it comes back as 3.
            command = f'{shlex.join(argv)}; rc=$?; if [ "$rc" = 255 ]; then exit 3; fi; exit "$rc"'
            done = self._low_level_execute_command(command, sudoable=True)
            if done["rc"] == 0:
                found[name] = done["stdout"]
            elif done["rc"] not in (1, 3):  # 1: not found; 3: no known_hosts file
                raise AnsibleActionFail(
                    f"amx.cluster.mesh_plan: {shlex.join(argv)} on the master: rc {done['rc']}, {done['stderr']}"
                )
        return found
