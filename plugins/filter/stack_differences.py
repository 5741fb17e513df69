# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_differences: a thin wrapper over module_utils.stack_profile.stack_differences.

Its documentation is the sidecar stack_differences.yml beside this file.
In use: {host: {package: version}} | stack_differences -> one line per package that differs between the hosts.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import stack_differences
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_differences": filter_function("stack_differences", stack_differences)}
