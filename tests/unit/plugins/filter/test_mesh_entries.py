# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.filter.mesh_entries import FilterModule, mesh_entries_filter

NODES = {
    "m": {"address": "10.0.0.1", "port": 22, "user": "amx"},
    "w": {"address": "10.0.0.2", "port": 2222, "user": "mpi"},
}


def test_the_filter_is_registered():
    assert FilterModule().filters() == {"mesh_entries": mesh_entries_filter}


def test_the_filter_gives_each_node_its_entry():
    entries = mesh_entries_filter(NODES, "m", {"w": "node1"})
    assert [(e["alias"], e["port"], e["user"], e["known_host"]) for e in entries.values()] == [
        (None, 22, "amx", "10.0.0.1"),
        ("node1", 2222, "mpi", "[10.0.0.2]:2222"),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((["m", "w"], "m", {"w": "node1"}), "expected a dict of host name"),
        ((NODES, "m", ["w"]), "expected a dict of host name"),
        ((NODES, None, {"w": "node1"}), "expected a dict of host name"),
        (({**NODES, "w": {**NODES["w"], "port": 99999}}, "m", {"w": "node1"}), "w: the port 99999 is out of range"),
        ((NODES, "m", {"w": "node1", "x": "node2"}), "x: no address, port and user"),
    ],
)
def test_bad_input_names_the_filter(args, message):
    with pytest.raises(AnsibleFilterError, match=r"amx\.cluster\.mesh_entries") as error:
        mesh_entries_filter(*args)
    assert message in str(error.value)
