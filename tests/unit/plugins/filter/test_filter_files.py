# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The layout of plugins/filter/: one filter per file, the file named after its filter, its docs in the file
(DOCUMENTATION) or in the sidecar <name>.yml beside it, and no sidecar without its filter."""

from __future__ import annotations

import importlib

import pytest
from filter_files import FILTER_DIR

FILES = sorted(path for path in FILTER_DIR.glob("*.py") if path.name != "__init__.py")


def test_the_folder_holds_the_filters_users_call_and_no_more():
    # Filters are public API (issue 28): what a role needs privately is module_utils called by an action.
    assert [path.stem for path in FILES] == [
        "admin_cidr_check",
        "cluster_shape",
        "flag_dialect",
        "launch_command",
        "launch_env",
        "rank_layout",
    ]


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_each_file_holds_the_one_filter_it_is_named_after(path):
    module = importlib.import_module(f"ansible_collections.amx.cluster.plugins.filter.{path.stem}")
    assert list(module.FilterModule().filters()) == [path.stem]
    sidecar = path.with_suffix(".yml")
    assert hasattr(module, "DOCUMENTATION") != sidecar.exists(), (
        f"{path.name}: document the filter once, in DOCUMENTATION or in {sidecar.name}"
    )


def test_every_sidecar_sits_beside_its_filter():
    lonely = sorted(path.name for path in FILTER_DIR.glob("*.yml") if not path.with_suffix(".py").exists())
    assert lonely == []
