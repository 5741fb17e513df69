# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the hf_examples role: thin wrappers around plugins/module_utils/examples.py."""

from __future__ import annotations

from typing import Any, Callable, Dict

from ansible_collections.amx.cluster.plugins.module_utils import examples as ex
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function

_FILTERS = {
    # url | hf_examples_input_problems(ref) -> messages (empty: both may reach git)
    "hf_examples_input_problems": ex.input_problems,
    # torch_stack_indexes | hf_examples_indexes(index_url, extra_index_urls, find_links) -> the indexes to use
    "hf_examples_indexes": ex.effective_indexes,
    # requirements_text | hf_examples_download_spec(freeze_text, marker_values, indexes, platforms) -> spec with key
    "hf_examples_download_spec": ex.download_spec,
    # spec | hf_examples_download_args(folder, extra_args) -> pip arguments after the runner
    "hf_examples_download_args": ex.download_args,
    # controller_pip | hf_examples_controller_pip_problem(variable) -> "" or the reason it cannot be used
    "hf_examples_controller_pip_problem": ex.controller_pip_problem,
    # freeze_text | hf_examples_constraints -> "name==version" lines
    "hf_examples_constraints": ex.constraints_text,
    # example | hf_examples_script_problems(torch_stack_packages, profile) -> one message per missing package
    "hf_examples_script_problems": ex.script_problems,
}


class FilterModule:
    """hf_examples filters."""

    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {name: filter_function(name, func) for name, func in _FILTERS.items()}
