# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.hf_examples_input_problems: a thin wrapper over module_utils.examples.input_problems.

Its documentation is the sidecar hf_examples_input_problems.yml beside this file.
In use: url | hf_examples_input_problems(ref) -> messages (empty: both may reach git).
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.examples import input_problems
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"hf_examples_input_problems": filter_function("hf_examples_input_problems", input_problems)}
