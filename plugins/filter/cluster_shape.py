# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.cluster_shape: a thin wrapper over module_utils.cluster_shape (docs: cluster_shape.yml)."""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.cluster_shape import cluster_shape
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    """The cluster's shape: master, workers, their names on the master, addresses, problems."""

    def filters(self):
        return {"cluster_shape": filter_function("cluster_shape", cluster_shape)}
