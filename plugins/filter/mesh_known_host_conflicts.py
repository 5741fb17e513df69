# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.mesh_known_host_conflicts: a thin wrapper over module_utils.ssh_mesh.known_host_conflict.

Its documentation is the sidecar mesh_known_host_conflicts.yml beside this file.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.module_utils.ssh_mesh import known_host_conflict


def mesh_known_host_conflicts(results, keys):
    """The nodes (the `item` of each result of `ssh-keygen -F <address>` over the nodes) whose address the master's
    known_hosts pins to another ed25519 key than keys[node] (see module_utils.ssh_mesh.known_host_conflict)."""
    if not isinstance(results, list) or not isinstance(keys, dict):
        raise AnsibleFilterError("mesh_known_host_conflicts: expected the registered results and a dict of host keys")
    return [
        result["item"]
        for result in results
        if result.get("rc") == 0
        and known_host_conflict(str(result.get("stdout", "")), str(keys.get(result["item"], "")))
    ]


class FilterModule:
    def filters(self):
        return {"mesh_known_host_conflicts": mesh_known_host_conflicts}
