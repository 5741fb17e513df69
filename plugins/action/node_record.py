# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin amx.cluster.node_record: whether a node role may skip its steps, and the record it leaves, in one
place.

On the controller it hashes the including role's inputs (plugin_utils/node_stamp.py: the collection's version and
plugin code, the files of the role and of amx.cluster.node_stamp, the role's options as templated for this host);
on the node, one call of module_utils.node_state reads the record of those inputs, takes the live fingerprint and
decides. The answer is node_state's, with the inputs hash that the role's record is written under. With write=true
it writes the record of the inputs hash the read returned, once the role's checks passed.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import yaml
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.amx.cluster.plugins.module_utils import node_state
from ansible_collections.amx.cluster.plugins.module_utils.node_state import StampError
from ansible_collections.amx.cluster.plugins.plugin_utils.launch_inputs import plain
from ansible_collections.amx.cluster.plugins.plugin_utils.node_stamp import (
    node_stamp_inputs,
    node_stamp_option_names,
)
from ansible_collections.amx.cluster.plugins.plugin_utils.node_stamp import node_state as record_call

# node_state's parameters, but the inputs hash: a read computes it, a write is given the read's.
ARGUMENT_SPEC: Dict[str, Any] = dict(node_state.ARGUMENT_SPEC, inputs_hash={"type": "str", "default": ""})


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
        if args["write"]:
            if not args["inputs_hash"]:
                raise AnsibleActionFail(f"{host}: write=true needs inputs_hash (the read's, at the role's start)")
            result.update(record_call(self, task_vars, args))
            result["changed"] = bool(result.get("changed"))
            return result
        caller = str(parents[0])
        omit = task_vars.get("omit") if isinstance(task_vars.get("omit"), str) else ""
        try:
            names = node_stamp_option_names(caller)
            template = self._templar.template
            options = {name: plain(template(task_vars[name]), omit) for name in names if name in task_vars}
            inputs = node_stamp_inputs(options, [caller, str(own)])
        except (StampError, OSError, yaml.YAMLError) as exc:
            raise AnsibleActionFail(f"{host}: the inputs of role {args['role']} cannot be hashed: {exc}") from None
        result.update(record_call(self, task_vars, dict(args, inputs_hash=inputs)))
        result.update(changed=False, inputs_hash=inputs)
        return result
