# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hf_examples filters are thin: they pass through, and bad input becomes an AnsibleFilterError naming the
filter."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from filter_files import filters_named

# Every hf_examples_* filter, each from its own file plugins/filter/<name>.py.
FILTERS = filters_named("hf_examples_")


def test_the_input_check_passes_through():
    check = FILTERS["hf_examples_input_problems"]
    assert check("file:///srv/transformers", "v1.0.0") == []
    assert "starts with '-'" in check("--upload-pack=x", "v1.0.0")[0]


def test_every_filter_is_exported():
    assert set(FILTERS) == {
        "hf_examples_input_problems",
        "hf_examples_indexes",
        "hf_examples_download_spec",
        "hf_examples_download_args",
        "hf_examples_controller_pip_problem",
        "hf_examples_constraints",
        "hf_examples_script_problems",
    }


def test_bad_input_names_the_filter():
    with pytest.raises(AnsibleFilterError, match=r"amx\.cluster\.hf_examples_indexes: hf_examples_index_url must be"):
        FILTERS["hf_examples_indexes"]({}, 3)


def test_the_pip_check_names_the_variable_it_is_given():
    problem = FILTERS["hf_examples_controller_pip_problem"](["pip3"], "torch_stack_controller_pip")
    assert problem.startswith("torch_stack_controller_pip is ['pip3']")
