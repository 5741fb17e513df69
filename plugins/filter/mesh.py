# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters that name the cluster's nodes the way the recipe does: the master, then node1..N."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def worker_aliases(workers, master=None):
    """Map each worker's inventory name to its mesh alias ``node1``..``nodeN``, in inventory order.

    The order of ``groups['workers']`` is the inventory's (for the ec2_cluster inventory: the node index),
    so the aliases are stable from one run to the next. A duplicate worker, or the master listed among the
    workers, would put one machine twice in the MPI hostfile and is refused.
    """
    if not isinstance(workers, (list, tuple)) or not all(isinstance(w, str) and w for w in workers):
        raise AnsibleFilterError(f"worker_aliases: expected a list of inventory host names, got {workers!r}")
    seen = set()
    for worker in workers:
        if worker in seen:
            raise AnsibleFilterError(
                f"worker_aliases: host {worker!r} is listed twice in the workers group; list each machine once"
            )
        seen.add(worker)
    if master is not None and master in seen:
        raise AnsibleFilterError(
            f"worker_aliases: the master {master!r} is also in the workers group; keep it in 'master' only"
        )
    return {worker: f"node{index}" for index, worker in enumerate(workers, start=1)}


class FilterModule:
    """Node naming filters."""

    def filters(self):
        return {"worker_aliases": worker_aliases}
