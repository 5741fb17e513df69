# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.train_ssh_problems: a thin wrapper over module_utils.train_gates.ssh_problems.

Its documentation is the sidecar train_ssh_problems.yml beside this file.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.train_gates import ssh_problems
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    """The train role's gate on the master's SSH logins to the workers."""

    def filters(self):
        return {"train_ssh_problems": filter_function("train_ssh_problems", ssh_problems)}
