# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.mesh_input_problems: a thin wrapper over module_utils.ssh_mesh.mesh_input_problems.

Its documentation is the sidecar mesh_input_problems.yml beside this file.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.module_utils.ssh_mesh import mesh_input_problems


def mesh_input_problems_filter(addresses, users=None, key_names=None, ports=None):
    """What is wrong with the values that reach the master's SSH files (see module_utils.ssh_mesh): each argument
    maps an inventory name to that node's ssh_mesh_address, ssh_mesh_user, ssh_mesh_key_name or ssh_mesh_port."""
    maps = {
        "ssh_mesh_address": addresses,
        "ssh_mesh_port": ports or {},
        "ssh_mesh_user": users or {},
        "ssh_mesh_key_name": key_names or {},
    }
    for variable, values in maps.items():
        if not isinstance(values, dict):
            raise AnsibleFilterError(f"mesh_input_problems: expected a dict of host name to {variable}, got {values!r}")
    nodes = {}
    for variable, values in maps.items():
        for node, value in values.items():
            nodes.setdefault(node, {})[variable] = value
    return mesh_input_problems(nodes)


class FilterModule:
    def filters(self):
        return {"mesh_input_problems": mesh_input_problems_filter}
