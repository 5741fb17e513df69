# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.hf_examples_constraints: a thin wrapper over module_utils.examples.constraints_text.

Its documentation is the sidecar hf_examples_constraints.yml beside this file.
In use: freeze_text | hf_examples_constraints -> "name==version" lines.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.examples import constraints_text
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"hf_examples_constraints": filter_function("hf_examples_constraints", constraints_text)}
