# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.filter.worker_aliases import worker_aliases


def test_aliases_follow_inventory_order():
    assert worker_aliases(["w-b", "w-a", "w-c"]) == {"w-b": "node1", "w-a": "node2", "w-c": "node3"}


def test_workers_named_like_aliases_keep_their_names():
    assert worker_aliases(["node3", "web", "node1"], master="node2") == {
        "node3": "node3",
        "web": "node4",
        "node1": "node1",
    }


def test_no_workers_is_a_one_node_cluster():
    assert worker_aliases([], master="m") == {}


@pytest.mark.parametrize(
    ("workers", "master", "message"),
    [
        (["a", "b", "a"], None, "the workers lists a more than once"),
        (["a", "m"], "m", "the master m is also in the workers"),
        ("a,b", None, "expected a list"),
        (["a", ""], None, "expected a list"),
    ],
)
def test_bad_worker_lists_are_refused(workers, master, message):
    with pytest.raises(AnsibleFilterError, match="worker_aliases") as error:
        worker_aliases(workers, master=master)
    assert message in str(error.value)
