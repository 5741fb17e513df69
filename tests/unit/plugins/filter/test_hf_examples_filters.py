# SPDX-License-Identifier: GPL-3.0-or-later
"""The hf_examples filters are thin: they pass through, and bad input becomes an AnsibleFilterError naming the
filter."""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.filter.hf_examples import FilterModule

FILTERS = FilterModule().filters()


def test_the_input_check_passes_through():
    check = FILTERS["hf_examples_input_problems"]
    assert check("file:///srv/transformers", "v1.0.0") == []
    assert "starts with '-'" in check("--upload-pack=x", "v1.0.0")[0]
