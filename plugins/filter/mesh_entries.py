# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filter amx.cluster.mesh_entries: what ssh_mesh writes for each node (see module_utils.ssh_mesh)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.module_utils.ssh_mesh import mesh_entries
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function

_entries = filter_function("mesh_entries", mesh_entries)


def mesh_entries_filter(nodes, master, aliases):
    """Inventory name -> the node's ~/.ssh/config entry and known_hosts name, the master first."""
    if not isinstance(nodes, dict) or not isinstance(aliases, dict) or not isinstance(master, str):
        raise AnsibleFilterError(
            "amx.cluster.mesh_entries: expected a dict of host name to its address, port and user, the master's name"
            " and the workers' aliases (a dict)"
        )
    return _entries(master, aliases, nodes)


class FilterModule:
    """The mesh's per-node SSH entries."""

    def filters(self):
        return {"mesh_entries": mesh_entries_filter}
