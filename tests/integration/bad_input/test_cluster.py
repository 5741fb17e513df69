# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad cluster shapes given to the roles that span nodes (ssh_mesh, mpi_hostfile): a missing master group, two
masters, one machine under two names, a node with no address (no ssh_mesh_address and no default route), a worker
that is not in the inventory, a worker list given as a string, a worker that cannot be reached.

Each case is a run of its own (these checks compare the hosts of one play), of playbooks/role.yml on this machine
(connection local; the unreachable worker is an SSH host on a closed port of 127.0.0.1). ssh_mesh has no path
variable: it manages the real ~/.ssh of its user, so its cases run in check mode, which leaves the preflight's
checks as they are and guarantees that a check that goes missing cannot write there (the recap would still count
the would-be changes, and the test would fail).
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import pytest
from bad_input_helpers import LOCAL, TEST_PLAYBOOKS, assert_refused, cluster, node_paths, run_in_folder
from net import free_port

# ssh_mesh's argument spec and defaults/main.yml still give ssh_mesh_address a Jinja default
# (ansible_facts.default_ipv4.address), which validation evaluates on every node: on a node without a default route
# it stops there with a raw Jinja error, before the preflight can name the host. Issue 13, item 1 (static defaults:
# ssh_mesh_address "" in both, the default route's address then chosen by cluster_shape) removes it; both cases pass
# with that change. The mark is strict, so the case fails the suite once that lands until the mark goes.

UNREACHABLE = {
    "ansible_connection": "ssh",
    "ansible_host": "127.0.0.1",
    "ansible_port": free_port(),
    "ansible_user": "nobody",
    "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5",
}


@dataclass(frozen=True)
class ClusterCase:
    id: str
    role: str
    inventory: Dict[str, Any]  # host name -> its variables under master/workers, or a whole inventory
    bad: Dict[str, Any]  # extra variables
    host: str  # the host whose failure carries the message
    expect: Tuple[str, ...]
    lost: Optional[str] = None  # a host that must be reported unreachable
    xfail: Optional[str] = None  # why the case fails today, when it waits on another change (strict: it must fail)


def with_role(group: Dict[str, Any], role: str, folder: pathlib.Path) -> Dict[str, Any]:
    """A copy of an inventory (or group) where every host also gets the role to run and its own folder for every path
    variable of the roles."""
    copy: Dict[str, Any] = {}
    for key, value in group.items():
        if key == "hosts":
            copy[key] = {
                name: {**host, **node_paths(folder / "hosts" / name), "bad_input_role": role}
                for name, host in value.items()
            }
        elif isinstance(value, dict):
            copy[key] = with_role(value, role, folder)
        else:
            copy[key] = value
    return copy


def one_node() -> Dict[str, Any]:
    return cluster({"localhost": dict(LOCAL)}, {})


CASES = [
    ClusterCase(
        "mesh-no-master-group",
        "ssh_mesh",
        {"cluster": {"hosts": {"localhost": dict(LOCAL)}}},
        {},
        "localhost",
        (
            "localhost: the inventory has no host in group master",
            "Put the node that launches mpirun in group master and the others in group workers",
            "or set ssh_mesh_master",
        ),
    ),
    ClusterCase(
        "hostfile-no-master-group",
        "mpi_hostfile",
        {"cluster": {"hosts": {"localhost": dict(LOCAL)}}},
        {},
        "localhost",
        ("localhost: the inventory has no host in group master", "or set mpi_hostfile_master"),
    ),
    ClusterCase(
        "mesh-two-masters",
        "ssh_mesh",
        cluster({"localhost": dict(LOCAL), "second-master": dict(LOCAL)}, {}),
        {},
        "localhost",
        (
            "localhost: group master has 2 hosts (localhost, second-master)",
            "a cluster has one master",
            "move the others to workers",
        ),
    ),
    ClusterCase(
        "mesh-one-machine-twice",
        "ssh_mesh",
        cluster({"localhost": dict(LOCAL)}, {"node-b": dict(LOCAL)}),
        {},
        "localhost",
        (
            "localhost: the nodes' addresses (ssh_mesh_address, else the default route's) must differ",
            "localhost has '",
            "node-b has '",
            "two inventory names for one machine put it twice in the hostfile",
            "set ssh_mesh_address per host",
        ),
    ),
    ClusterCase(
        "mesh-node-without-a-default-route",
        "ssh_mesh",
        cluster(
            {"localhost": {**LOCAL, "ssh_mesh_address": "127.0.0.1"}},
            {"node-b": {**LOCAL, "bad_input_no_default_route": True}},
        ),
        {},
        "localhost",
        expect=(
            "localhost: node-b has no address for the other nodes: ssh_mesh_address is not set and it has no default "
            "route (ansible_facts.default_ipv4 has no address)",
            "set ssh_mesh_address for node-b (a host variable) to the address the other nodes reach it on",
            "Nothing was changed on any node",
        ),
    ),
    ClusterCase(
        "hostfile-workers-a-string",
        "mpi_hostfile",
        cluster({"localhost": dict(LOCAL)}, {"node-b": dict(LOCAL)}),
        {"mpi_hostfile_workers": "node-b"},
        "localhost",
        ("localhost: mpi_hostfile_workers must be a list of inventory host names", "write it as a YAML list"),
    ),
    ClusterCase(
        "mesh-unknown-worker",
        "ssh_mesh",
        one_node(),
        {"ssh_mesh_workers": ["nodee1"]},
        "localhost",
        ("localhost:", "ssh_mesh_workers names nodee1, not hosts of the inventory", "use inventory names"),
    ),
    ClusterCase(
        "mesh-address-with-a-newline",
        "ssh_mesh",
        cluster(
            {"localhost": {**LOCAL, "ssh_mesh_address": "127.0.0.1"}},
            {"node-b": {**LOCAL, "ssh_mesh_address": "127.0.0.2\n    ProxyCommand touch /tmp/amx-owned"}},
        ),
        {},
        "localhost",
        (
            "localhost: ssh_mesh_address of node-b '127.0.0.2\\n    ProxyCommand touch /tmp/amx-owned' is neither an "
            "IPv4 or IPv6 address nor a DNS host name",
            "set it to the address the other nodes reach this node on",
            "Nothing was changed on any node",
        ),
    ),
    ClusterCase(
        "mesh-user-with-a-newline",
        "ssh_mesh",
        cluster({"localhost": {**LOCAL, "ssh_mesh_address": "127.0.0.1"}}, {"node-b": dict(LOCAL)}),
        {"ssh_mesh_user": "root\nHost *"},
        "localhost",
        ("localhost: ssh_mesh_user of localhost 'root\\nHost *' is not a user name", "the account that runs MPI"),
    ),
    ClusterCase(
        "mesh-key-name-outside-ssh",
        "ssh_mesh",
        cluster({"localhost": {**LOCAL, "ssh_mesh_address": "127.0.0.1"}}, {"node-b": dict(LOCAL)}),
        {"ssh_mesh_key_name": "../.bashrc"},
        "localhost",
        ("localhost: ssh_mesh_key_name of localhost '../.bashrc' is not a file name", "such as cluster"),
    ),
    ClusterCase(
        "mesh-port-out-of-range",
        "ssh_mesh",
        cluster(
            {"localhost": {**LOCAL, "ssh_mesh_address": "127.0.0.1"}},
            {"node-b": {**LOCAL, "ssh_mesh_address": "127.0.0.2", "ssh_mesh_port": 70000}},
        ),
        {},
        "localhost",
        (
            "localhost: ssh_mesh_port of node-b 70000 is out of range (a port is a whole number from 1 to 65535)",
            "set it (or ansible_port, its default) to the port this node's sshd listens on for the other nodes",
            "Nothing was changed on any node",
        ),
    ),
    ClusterCase(
        "mesh-unreachable-worker",
        "ssh_mesh",
        cluster({"localhost": dict(LOCAL)}, {"node-gone": UNREACHABLE}),
        {},
        "localhost",
        (
            "localhost: the mesh needs every node, but node-gone was unreachable or failed earlier",
            "fix the connection variables (ansible_host, ansible_port, ansible_user)",
            "The mesh was left untouched on every node",
        ),
        lost="node-gone",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_cluster_shape_is_refused_before_any_change(tmp_path, request, case):
    if case.xfail:
        request.applymarker(pytest.mark.xfail(strict=True, reason=case.xfail))
    inventory = with_role(case.inventory, case.role, tmp_path)
    run, touched = run_in_folder(
        tmp_path, TEST_PLAYBOOKS / "role.yml", inventory, case.bad, check=case.role == "ssh_mesh"
    )
    assert_refused(run, case.host, case.role, case.expect, touched)
    if case.lost:
        lost = run.failure(case.lost)
        assert lost is not None and lost["status"] == "unreachable", run.explain()


def test_a_hostfile_master_outside_the_play_is_refused(tmp_path):
    host = {**LOCAL, **node_paths(tmp_path), "bad_input_role": "mpi_hostfile"}
    run, touched = run_in_folder(
        tmp_path, TEST_PLAYBOOKS / "role.yml", cluster({"localhost": host}, {}), {"mpi_hostfile_master": "mastr"}
    )
    assert touched == [], touched
    assert run.returncode != 0, run.explain()
    assert "mpi_hostfile_master is 'mastr', which is not in this play" in run.output, run.explain()
