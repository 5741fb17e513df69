# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.train_stale_workers: a thin wrapper over module_utils.train_gates.stale_workers.

Its documentation is the sidecar train_stale_workers.yml beside this file.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.train_gates import stale_workers
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    """The workers whose copy of a folder differs from the master's."""

    def filters(self):
        return {"train_stale_workers": filter_function("train_stale_workers", stale_workers)}
