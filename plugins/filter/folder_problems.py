# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.folder_problems: a thin wrapper over module_utils.inputs.folder_problems."""

from __future__ import annotations

DOCUMENTATION = r"""
name: folder_problems
short_description: Problems of folder variables (relative paths, system folders, the user's home)
version_added: 0.1.0
author: amx.cluster contributors
description:
  - Problems of folder variables (relative paths, system folders, the user's home).
  - The rules are in plugins/module_utils/inputs.py.
options:
  _input:
    description: Variable name to path.
    type: dict
    required: true
  home:
    description: The user's home folder, refused as a folder of a role too.
    type: str
  absolute:
    description: Refuse relative paths.
    type: bool
    default: true
  resolved:
    description: Variable name to the path a symbolic link resolves to, checked the same way.
    type: dict
"""

EXAMPLES = r"""
- name: Check the input
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ inventory_hostname }}: {{ __problems | join('; ') }}"
  vars:
    __problems: "{{ {'train_run_root': train_run_root} | amx.cluster.folder_problems }}"
"""

RETURN = r"""
_value:
  description: One sentence per problem (the variable, its value, what it is); empty when every folder is good.
  type: list
"""

from ansible_collections.amx.cluster.plugins.module_utils.inputs import folder_problems  # noqa: E402
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function  # noqa: E402


class FilterModule:
    def filters(self):
        return {"folder_problems": filter_function("folder_problems", folder_problems)}
