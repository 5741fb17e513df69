# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.hf_examples_indexes: a thin wrapper over module_utils.examples.effective_indexes.

Its documentation is the sidecar hf_examples_indexes.yml beside this file.
In use: torch_stack_indexes | hf_examples_indexes(index_url, extra_index_urls, find_links) -> the indexes to use.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.examples import effective_indexes
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"hf_examples_indexes": filter_function("hf_examples_indexes", effective_indexes)}
