# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.hostfile_problems: a thin wrapper over module_utils.inputs.hostfile_problems."""

from __future__ import annotations

DOCUMENTATION = r"""
name: hostfile_problems
short_description: An MPI hostfile against the cluster's aliases, by line number, never quoting the file
version_added: 0.1.0
author: amx.cluster contributors
description:
  - An MPI hostfile against the cluster's aliases, by line number, never quoting the file.
  - The rules are in plugins/module_utils/inputs.py.
positional: aliases
options:
  _input:
    description: The hostfile's text.
    type: str
    required: true
  aliases:
    description: The cluster's aliases in hostfile order (localhost, node1...).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Check the input
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "{{ inventory_hostname }}: {{ __problems | join('; ') }}"
  vars:
    __problems: "{{ hostfile_text | amx.cluster.hostfile_problems(['localhost', 'node1']) }}"
"""

RETURN = r"""
_value:
  description: C(ok), C(hosts) (the aliases listed, when every line is one) and C(problems) (by line number).
  type: dict
"""

from ansible_collections.amx.cluster.plugins.module_utils.inputs import hostfile_problems  # noqa: E402
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function  # noqa: E402


class FilterModule:
    def filters(self):
        return {"hostfile_problems": filter_function("hostfile_problems", hostfile_problems)}
