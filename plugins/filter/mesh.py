# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the SSH mesh: the workers' names on the master (module_utils.cluster_shape), and the checks of the values
that reach the master's SSH files (module_utils.ssh_mesh)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.module_utils.cluster_shape import worker_aliases as cluster_worker_aliases
from ansible_collections.amx.cluster.plugins.module_utils.cluster_shape import worker_problems
from ansible_collections.amx.cluster.plugins.module_utils.ssh_mesh import (
    key_comment,
    key_owner,
    known_host_conflict,
    mesh_input_problems,
)


def worker_aliases(workers, master=None):
    """Map each worker's inventory name to its name on the master (``node<K>``), by the rule of
    module_utils.cluster_shape: a worker named ``node<K>`` keeps it, the others take the lowest K left free, in the
    list's order. A duplicate worker, or the master listed among the workers, is refused."""
    if not isinstance(workers, (list, tuple)) or not all(isinstance(w, str) and w for w in workers):
        raise AnsibleFilterError(f"worker_aliases: expected a list of inventory host names, got {workers!r}")
    problems = worker_problems(workers, master, [], "the workers")
    if problems:
        raise AnsibleFilterError(f"worker_aliases: {'; '.join(problems)}")
    return cluster_worker_aliases(list(workers), master)


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


def mesh_key_owner(public_text, private_exists, key_name, master):
    """Whether the key pair at ~/.ssh/<key_name> is absent, ours or foreign (see module_utils.ssh_mesh)."""
    if public_text is not None and not isinstance(public_text, str):
        raise AnsibleFilterError(f"mesh_key_owner: expected the public key's text or None, got {type(public_text)}")
    return key_owner(bool(private_exists), public_text, str(key_name), str(master))


def mesh_key_comment(key_name, master):
    """The comment of the public key ssh_mesh makes, its mark of ownership."""
    return key_comment(str(key_name), str(master))


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
    """Node naming and mesh input filters."""

    def filters(self):
        return {
            "worker_aliases": worker_aliases,
            "mesh_input_problems": mesh_input_problems_filter,
            "mesh_key_owner": mesh_key_owner,
            "mesh_key_comment": mesh_key_comment,
            "mesh_known_host_conflicts": mesh_known_host_conflicts,
        }
