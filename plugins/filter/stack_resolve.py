# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_resolve: a thin wrapper over module_utils.stack_profile.resolve_profile.

Its documentation is the sidecar stack_resolve.yml beside this file.
In use: profiles | stack_resolve(name, overrides, extra_packages, index_url, extra_index_urls, find_links).
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import resolve_profile
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_resolve": filter_function("stack_resolve", resolve_profile)}
