# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_wheelhouse_key: a thin wrapper over module_utils.stack_profile.wheelhouse_key.

Its documentation is the sidecar stack_wheelhouse_key.yml beside this file.
In use: resolved | stack_wheelhouse_key(python_version, platforms).
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import wheelhouse_key
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_wheelhouse_key": filter_function("stack_wheelhouse_key", wheelhouse_key)}
