# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_major_minor: a thin wrapper over module_utils.stack_profile.major_minor.

Its documentation is the sidecar stack_major_minor.yml beside this file.
In use: "2.8.0" | stack_major_minor -> "2.8".
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import major_minor
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_major_minor": filter_function("stack_major_minor", major_minor)}
