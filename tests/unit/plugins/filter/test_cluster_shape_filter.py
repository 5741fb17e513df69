# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The amx.cluster.cluster_shape filter: a thin wrapper whose bad input becomes an error naming the filter."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.filter.cluster_shape import FilterModule

cluster_shape = FilterModule().filters()["cluster_shape"]


def test_the_filter_gives_the_shape():
    shape = cluster_shape({"all": ["m", "w"], "master": ["m"], "workers": ["w"]})
    assert shape["hostfile"] == ["localhost", "node1"]


def test_input_that_is_no_groups_names_the_filter():
    with pytest.raises(AnsibleFilterError, match=r"^amx\.cluster\.cluster_shape: .*mapping"):
        cluster_shape("groups")
