# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_packages_lost: a thin wrapper over module_utils.stack_profile.packages_lost.

Its documentation is the sidecar stack_packages_lost.yml beside this file.
In use: manifest.packages | stack_packages_lost(freeze_text) -> recorded packages now absent or at another version.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import packages_lost
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_packages_lost": filter_function("stack_packages_lost", packages_lost)}
