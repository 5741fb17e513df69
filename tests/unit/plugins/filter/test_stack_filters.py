# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The stack filters are thin: they pass through, and bad input becomes an AnsibleFilterError naming the filter."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from filter_files import filters_named

# Every stack_* filter, each from its own file plugins/filter/<name>.py.
FILTERS = filters_named("stack_")


def test_every_filter_is_exported():
    assert set(FILTERS) == {
        "stack_resolve",
        "stack_problems",
        "stack_platform_tags",
        "stack_requirements_hash",
        "stack_wheelhouse_key",
        "stack_download_args",
        "stack_index_args",
        "stack_transformers_dialect",
        "stack_manifest",
        "stack_wheels_missing",
        "stack_differences",
        "stack_packages_lost",
        "stack_major_minor",
    }


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("stack_resolve", ({}, "native"), "amx.cluster.stack_resolve: no stack profiles are defined"),
        ("stack_platform_tags", ("x86_64", None), "amx.cluster.stack_platform_tags: the node has no glibc"),
        ("stack_major_minor", ("abc",), "amx.cluster.stack_major_minor: cannot read a version"),
        ("stack_wheels_missing", (["x.tar.gz"], ""), "amx.cluster.stack_wheels_missing"),
        ("stack_problems", ({}, "3.11"), "amx.cluster.stack_problems"),
        ("stack_differences", (["not a mapping"],), "amx.cluster.stack_differences"),
        ("stack_packages_lost", (["torch"], ""), "amx.cluster.stack_packages_lost: the recorded packages"),
    ],
)
def test_errors_name_the_filter(name, args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS[name](*args)


def test_pass_through():
    assert FILTERS["stack_major_minor"]("2.8.0+cpu") == "2.8"
    assert FILTERS["stack_platform_tags"]("x86_64", "2.28")[0] == "manylinux_2_28_x86_64"
