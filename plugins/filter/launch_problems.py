# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.launch_problems: a thin wrapper over module_utils.inputs.launch_problems."""

from __future__ import annotations

DOCUMENTATION = r"""
name: launch_problems
short_description: Problems of a training launch's inputs, before anything is written
version_added: 0.1.0
author: amx.cluster contributors
description:
  - Problems of a training launch's inputs, before anything is written.
  - The rules are in plugins/module_utils/inputs.py.
options:
  _input:
    description: The role's variables by name (train_extra_env, train_extra_args, train_epochs, train_run_id...).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check the input
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ inventory_hostname }}: {{ __problems | join('; ') }}"
  vars:
    __problems: "{{ {'train_extra_env': train_extra_env, 'train_run_id': train_run_id} | amx.cluster.launch_problems }}"
"""

RETURN = r"""
_value:
  description: One sentence per problem, naming the variable; empty when the launch inputs are good.
  type: list
"""

from ansible_collections.amx.cluster.plugins.module_utils.inputs import launch_problems  # noqa: E402
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function  # noqa: E402


class FilterModule:
    def filters(self):
        return {"launch_problems": filter_function("launch_problems", launch_problems)}
