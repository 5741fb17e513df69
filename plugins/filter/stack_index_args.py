# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_index_args: a thin wrapper over module_utils.stack_profile.index_args.

Its documentation is the sidecar stack_index_args.yml beside this file.
In use: resolved | stack_index_args -> --index-url/--extra-index-url/--find-links argv.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import index_args
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_index_args": filter_function("stack_index_args", index_args)}
