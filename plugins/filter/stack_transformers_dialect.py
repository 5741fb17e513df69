# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.stack_transformers_dialect: a thin wrapper over module_utils.stack_profile.transformers_dialect.

Its documentation is the sidecar stack_transformers_dialect.yml beside this file.
In use: "4.24.0" | stack_transformers_dialect -> {backend_flag, cpu_flag, ipex_flag, ...}.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import transformers_dialect
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"stack_transformers_dialect": filter_function("stack_transformers_dialect", transformers_dialect)}
