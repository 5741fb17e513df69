# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.worker_aliases: a thin wrapper over module_utils.cluster_shape.worker_aliases.

Its documentation is the sidecar worker_aliases.yml beside this file.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.module_utils.cluster_shape import worker_aliases as cluster_worker_aliases
from ansible_collections.amx.cluster.plugins.module_utils.cluster_shape import worker_problems


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


class FilterModule:
    def filters(self):
        return {"worker_aliases": worker_aliases}
