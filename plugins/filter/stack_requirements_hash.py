# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_requirements_hash: a thin wrapper over module_utils.stack_profile.requirements_hash.

Its documentation is the sidecar stack_requirements_hash.yml beside this file.
In use: resolved | stack_requirements_hash.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import requirements_hash
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_requirements_hash": filter_function("stack_requirements_hash", requirements_hash)}
