# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_problems: a thin wrapper over module_utils.stack_profile.profile_problems.

Its documentation is the sidecar stack_problems.yml beside this file.
In use: resolved | stack_problems(python_version, allow_yanked, yanked_rules) -> list of messages.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import profile_problems
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_problems": filter_function("stack_problems", profile_problems)}
