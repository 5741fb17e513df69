# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.hf_examples_controller_pip_problem: over module_utils.examples.controller_pip_problem.

Its documentation is the sidecar hf_examples_controller_pip_problem.yml beside this file.
In use: controller_pip | hf_examples_controller_pip_problem(variable) -> "" or the reason it cannot be used.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.examples import controller_pip_problem
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {
            "hf_examples_controller_pip_problem": filter_function(
                "hf_examples_controller_pip_problem", controller_pip_problem
            )
        }
