# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_platform_tags: a thin wrapper over module_utils.stack_profile.platform_tags.

Its documentation is the sidecar stack_platform_tags.yml beside this file.
In use: arch | stack_platform_tags(glibc_version) -> pip --platform tags.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import platform_tags
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_platform_tags": filter_function("stack_platform_tags", platform_tags)}
