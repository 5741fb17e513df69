# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_manifest: a thin wrapper over module_utils.stack_profile.build_manifest.

Its documentation is the sidecar stack_manifest.yml beside this file.
In use: profile_name | stack_manifest(requirements_sha256, freeze_text, versions, python_version).
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import build_manifest
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_manifest": filter_function("stack_manifest", build_manifest)}
