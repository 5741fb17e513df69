# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster's shape: master, workers, the names the master uses, the addresses, the problems."""

from __future__ import annotations

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.cluster_shape import (
    ShapeError,
    cluster_shape,
    node_address,
    worker_aliases,
    worker_problems,
)


def groups(master, workers, cluster=None, extra=()):
    every = list(master) + list(workers) + list(extra)
    found = {"all": every, "master": list(master), "workers": list(workers)}
    found["cluster"] = list(master) + list(workers) if cluster is None else list(cluster)
    return found


def facts(address):
    """A node's variables as the setup module leaves them: default_ipv4 is {} on a node without a default route."""
    return {"ansible_facts": {"default_ipv4": {"address": address} if address else {}}}


# --- names on the master -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("workers", "master", "expected"),
    [
        # A fleet whose names are not node names: node1..N in the inventory's order.
        (["w-b", "w-a", "w-c"], "m", ["node1", "node2", "node3"]),
        # The ec2_cluster inventory with a gap (node2 terminated outside the collection): the names stay.
        (["node1", "node3", "node7"], "master", ["node1", "node3", "node7"]),
        # Mixed: node names keep theirs, the others take the lowest names left free, in order.
        (["node3", "web", "node1", "db"], "m", ["node3", "node2", "node1", "node4"]),
        # A master named node1 keeps node1 free: ssh node1 on the master is never another machine.
        (["node2", "gpu"], "node1", ["node2", "node3"]),
        # Not node names: a leading zero, node0, a suffix.
        (["node01", "node0", "node1x"], "m", ["node1", "node2", "node3"]),
        # Inventory order decides, not the names' sort order.
        (["node2", "node1"], "m", ["node2", "node1"]),
        ([], "m", []),
        # The former worker_aliases filter's cases.
        (["w-b", "w-a", "w-c"], "m", ["node1", "node2", "node3"]),
        (["node3", "web", "node1"], "node2", ["node3", "node4", "node1"]),
    ],
)
def test_the_names_the_master_uses(workers, master, expected):
    assert list(worker_aliases(workers, master).values()) == expected
    shape = cluster_shape(groups([master], workers))
    assert shape["problems"] == []
    assert shape["hostfile"] == ["localhost", *expected]
    assert shape["nodes"] == [{"name": master, "alias": "localhost"}] + [
        {"name": w, "alias": a} for w, a in zip(workers, expected)
    ]


@pytest.mark.parametrize(
    ("workers", "master", "message"),
    [
        (["a", "b", "a"], None, "the workers lists a more than once"),
        (["a", "m"], "m", "the master m is also in the workers"),
    ],
)
def test_bad_worker_lists_are_named(workers, master, message):
    # The former worker_aliases filter refused these lists with these messages.
    assert any(message in problem for problem in worker_problems(workers, master, [], "the workers"))


def test_the_names_are_distinct_on_a_large_cluster():
    workers = [f"node{n}" for n in range(1, 2001, 2)] + [f"ip-10-0-{n // 256}-{n % 256}" for n in range(1000)]
    aliases = worker_aliases(workers, "master")
    assert len(set(aliases.values())) == len(workers)
    assert all(aliases[f"node{n}"] == f"node{n}" for n in range(1, 2001, 2))
    assert aliases["ip-10-0-0-0"] == "node2"


# --- the shape and its problems --------------------------------------------------------------------------------------


def test_a_good_cluster():
    shape = cluster_shape(groups(["m"], ["a", "b"]), cluster=True)
    assert shape["master"] == "m"
    assert shape["workers"] == ["a", "b"]
    assert shape["aliases"] == {"a": "node1", "b": "node2"}
    assert shape["problems"] == []
    assert "addresses" not in shape  # no hostvars, no addresses


def test_a_one_node_cluster():
    shape = cluster_shape({"all": ["m"], "master": ["m"]})
    assert (shape["master"], shape["workers"], shape["hostfile"], shape["problems"]) == ("m", [], ["localhost"], [])


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"groups": {"all": ["m"], "cluster": ["m"]}, "prefix": "ssh_mesh"},
            "the inventory has no host in group master. Put the node that launches mpirun in group master and the "
            "others in group workers, both under group cluster (see inventory/local.yml), or set ssh_mesh_master",
        ),
        (
            {"groups": groups(["m1", "m2"], ["a"])},
            "group master has 2 hosts (m1, m2), but a cluster has one master, the node that launches mpirun: keep it "
            "in master and move the others to workers",
        ),
        (
            {"groups": groups(["m"], []), "master": "mastr", "prefix": "mpi_hostfile"},
            "mpi_hostfile_master 'mastr' is not a host of the inventory",
        ),
        (
            {"groups": groups(["m"], ["a", "m"]), "prefix": "ssh_mesh"},
            "the master m is also in group workers: keep it in master only",
        ),
        (
            {"groups": groups(["m"], ["a", "m"]), "workers": ["a", "m"], "prefix": "ssh_mesh"},
            "the master m is also in ssh_mesh_workers (group workers): keep it in master only",
        ),
        (
            {"groups": groups(["m"], ["a"]), "workers": ["a", "b", "a", "b"], "prefix": "ssh_mesh"},
            "ssh_mesh_workers lists a, b more than once, which would put the same machine twice in the hostfile",
        ),
        (
            {"groups": groups(["m"], ["a"]), "workers": ["a", "nodee1"], "prefix": "ssh_mesh"},
            "ssh_mesh_workers names nodee1, not hosts of the inventory: use inventory names",
        ),
        (
            {"groups": groups(["m"], ["a"]), "workers": "a", "prefix": "mpi_hostfile"},
            "mpi_hostfile_workers must be a list of inventory host names, got a string: write it as a YAML list",
        ),
        (
            {"groups": groups(["m"], ["a"], cluster=["m", "a", "stray"], extra=["stray"]), "cluster": True},
            "group cluster must hold the master and the workers and nothing else, but stray is in it and in neither",
        ),
        (
            {"groups": groups(["m"], ["a", "b"], cluster=["m"]), "cluster": True},
            "group cluster must hold the master and the workers and nothing else, but a, b are missing from it",
        ),
    ],
    ids=[
        "no-master",
        "two-masters",
        "unknown-master",
        "master-is-a-worker",
        "master-is-a-worker-by-the-role-variable",
        "worker-twice",
        "unknown-worker",
        "workers-a-string",
        "cluster-has-more",
        "cluster-has-less",
    ],
)
def test_problems_say_what_to_change(kwargs, expected):
    problems = cluster_shape(**kwargs)["problems"]
    assert any(expected in problem for problem in problems), problems


def test_the_cluster_group_is_checked_only_when_asked():
    assert cluster_shape(groups(["m"], ["a"], cluster=[]))["problems"] == []


def test_empty_groups_report_no_master():
    shape = cluster_shape({"all": [], "master": [], "workers": [], "cluster": []}, cluster=True)
    assert shape["master"] is None and shape["nodes"] == [] and shape["hostfile"] == []
    assert shape["problems"] == [
        "the inventory has no host in group master. Put the node that launches mpirun in group master and the others "
        "in group workers, both under group cluster (see inventory/local.yml)"
    ]


def test_a_role_variable_overrides_the_groups():
    shape = cluster_shape(groups(["m"], ["a", "b"]), master="b", workers=["a"])
    assert (shape["master"], shape["workers"], shape["problems"]) == ("b", ["a"], [])


def test_groups_that_are_not_a_mapping_are_refused():
    with pytest.raises(ShapeError, match="mapping"):
        cluster_shape(["m"])
    with pytest.raises(ShapeError, match="group workers must be a list"):
        cluster_shape({"workers": "a"})


# --- addresses -------------------------------------------------------------------------------------------------------


def test_the_default_route_unless_set_per_host():
    hostvars = {"m": facts("10.0.0.1"), "a": {**facts("10.0.0.2"), "ssh_mesh_address": "192.168.7.2"}}
    shape = cluster_shape(groups(["m"], ["a"]), hostvars)
    assert shape["addresses"] == {"m": "10.0.0.1", "a": "192.168.7.2"}
    assert shape["master_address"] == "10.0.0.1"
    assert shape["address_problems"] == []
    assert [node["address"] for node in shape["nodes"]] == ["10.0.0.1", "192.168.7.2"]


def test_a_node_without_a_default_route_is_reached_on_its_own_address():
    """Two networks: the cluster network is not the default route (and one node has no default route at all)."""
    hostvars = {
        "m": {**facts("172.17.0.2"), "ssh_mesh_address": "10.10.0.1"},
        "a": {**facts(None), "ssh_mesh_address": "10.10.0.2"},
    }
    shape = cluster_shape(groups(["m"], ["a"]), hostvars)
    assert shape["addresses"] == {"m": "10.10.0.1", "a": "10.10.0.2"}
    assert shape["master_address"] == "10.10.0.1"
    assert shape["address_problems"] == []


def test_a_node_with_neither_is_named_with_the_variable_to_set():
    shape = cluster_shape(groups(["m"], ["a"]), {"m": facts("10.0.0.1"), "a": facts(None)})
    assert shape["addresses"]["a"] == ""
    assert shape["address_problems"] == [
        "a has no address for the other nodes: ssh_mesh_address is not set and it has no default route "
        "(ansible_facts.default_ipv4 has no address): set ssh_mesh_address for a (a host variable) to the address "
        "the other nodes reach it on"
    ]
    assert shape["nodes"][1]["address_problem"] == shape["address_problems"][0]


def test_a_node_without_facts():
    shape = cluster_shape(groups(["m"], ["a"]), {"m": facts("10.0.0.1"), "a": {}})
    assert (
        "a has no address for the other nodes: ssh_mesh_address is not set and no facts were gathered there"
        in (shape["address_problems"][0])
    )


def test_the_master_without_an_address():
    shape = cluster_shape(groups(["m"], ["a"]), {"m": facts(""), "a": facts("10.0.0.2")})
    assert shape["master_address"] == ""
    assert shape["nodes"][0]["address_problem"].startswith("m has no address for the other nodes")


def test_a_one_node_cluster_needs_no_address():
    shape = cluster_shape(groups(["m"], []), {"m": facts(None)})
    assert shape["master_address"] == "127.0.0.1"
    assert shape["address_problems"] == []
    assert cluster_shape(groups(["m"], []), {"m": facts("10.0.0.1")})["master_address"] == "10.0.0.1"


def test_one_address_for_two_nodes():
    shape = cluster_shape(groups(["m"], ["a", "b"]), {"m": facts("10.0.0.1"), "a": facts("10.0.0.1"), "b": facts("x")})
    assert shape["address_problems"] == [
        "the nodes' addresses (ssh_mesh_address, else the default route's) must differ, but m has '10.0.0.1', a has "
        "'10.0.0.1', so the workers would not be distinct machines (two inventory names for one machine put it twice "
        "in the hostfile): list each machine once, or set ssh_mesh_address per host to the address the other nodes "
        "reach it on"
    ]


def test_an_address_that_would_add_a_directive():
    hostvars = {"m": facts("10.0.0.1"), "a": {"ssh_mesh_address": "10.0.0.2\n    ProxyCommand x"}}
    problems = cluster_shape(groups(["m"], ["a"]), hostvars)["address_problems"]
    assert problems == [
        "ssh_mesh_address of a '10.0.0.2\\n    ProxyCommand x' is neither an IPv4 or IPv6 address nor a DNS host name "
        "(letters, digits, '-' and '.'): set it to the address the other nodes reach this node on"
    ]


class Failing:
    """Stands in for a value Ansible could not template (an undefined fact): it raises when used, as Ansible's
    markers do. Ansible's own lazy hostvars cannot be built outside a play."""

    def __str__(self):
        raise RuntimeError("'dict object' has no attribute 'eth1'")


def test_an_address_that_cannot_be_templated_is_a_problem_not_a_crash():
    found = node_address({"a": {"ssh_mesh_address": Failing()}}, "a")
    assert found["address"] == ""
    assert found["problem"] == (
        "ssh_mesh_address of a cannot be read ('dict object' has no attribute 'eth1'): set ssh_mesh_address for a "
        "(a host variable) to the address the other nodes reach it on"
    )


def test_the_address_variable_can_be_a_fact_of_a_role():
    found = node_address({"a": {"__shared": "10.1.1.1", "ssh_mesh_address": "bad value"}}, "a", "__shared")
    assert found == {"address": "10.1.1.1", "source": "ssh_mesh_address", "problem": None}


def test_an_ipv6_or_dns_address_is_kept():
    hostvars = {"m": {"ssh_mesh_address": "fd00::1"}, "a": {"ssh_mesh_address": "node-a.cluster.internal"}}
    assert cluster_shape(groups(["m"], ["a"]), hostvars)["addresses"] == {
        "m": "fd00::1",
        "a": "node-a.cluster.internal",
    }
