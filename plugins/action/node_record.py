# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin amx.cluster.node_record: whether a node role may skip its steps, in one place.

On the controller it hashes the including role's inputs (plugin_utils/node_stamp.py: the collection's version and
plugin code, the files of the role and of amx.cluster.node_stamp, the role's options as templated for this host);
on the node, one amx.cluster.node_state call reads the record of those inputs, takes the live fingerprint and
decides. The answer is node_state's, with the inputs hash that the role's record is written under.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import yaml
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.amx.cluster.plugins.module_utils.node_state import StampError
from ansible_collections.amx.cluster.plugins.plugin_utils.launch_inputs import plain
from ansible_collections.amx.cluster.plugins.plugin_utils.node_stamp import node_stamp_inputs, node_stamp_option_names

ARGUMENT_SPEC: Dict[str, Any] = {
    "role": {"type": "str", "required": True},
    "stamp_dir": {"type": "path", "default": "/var/lib/amx-cluster/stamps"},
    "force": {"type": "bool", "default": False},
}


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
        parents = task_vars.get("ansible_parent_role_paths") or []
        own = task_vars.get("role_path")
        if not parents or not own:
            raise AnsibleActionFail(
                f"{host}: amx.cluster.node_stamp is internal to the node roles (tcmalloc, torch_stack, hf_examples,"
                " amx_check), which include it; run one of them instead."
            )
        caller = str(parents[0])
        omit = task_vars.get("omit") if isinstance(task_vars.get("omit"), str) else ""
        try:
            names = node_stamp_option_names(caller)
            template = self._templar.template
            options = {name: plain(template(task_vars[name]), omit) for name in names if name in task_vars}
            inputs = node_stamp_inputs(options, [caller, str(own)])
        except (StampError, OSError, yaml.YAMLError) as exc:
            raise AnsibleActionFail(f"{host}: the inputs of role {args['role']} cannot be hashed: {exc}") from None
        found = self._execute_module(
            module_name="amx.cluster.node_state",
            module_args=dict(args, inputs_hash=inputs),
            task_vars=task_vars,
        )
        if found.get("failed"):
            raise AnsibleActionFail(found.get("msg") or "amx.cluster.node_state failed")
        found.pop("invocation", None)
        result.update(found)
        result.update(changed=False, inputs_hash=inputs)
        return result
