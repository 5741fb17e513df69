# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_wheels_missing: a thin wrapper over module_utils.stack_profile.wheels_missing.

Its documentation is the sidecar stack_wheels_missing.yml beside this file.
In use: wheel_files | stack_wheels_missing(freeze_text) -> wheels not installed at that version.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import wheels_missing
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_wheels_missing": filter_function("stack_wheels_missing", wheels_missing)}
