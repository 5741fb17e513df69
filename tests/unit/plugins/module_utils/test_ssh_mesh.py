# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.filter.mesh_input_problems import mesh_input_problems_filter
from ansible_collections.amx.cluster.plugins.filter.mesh_key_comment import mesh_key_comment
from ansible_collections.amx.cluster.plugins.filter.mesh_known_host_conflicts import mesh_known_host_conflicts
from ansible_collections.amx.cluster.plugins.module_utils.ssh_mesh import (
    address_problem,
    key_name_problem,
    key_owner,
    known_host_conflict,
    known_host_name,
    mesh_entries,
    port_problem,
    user_problem,
)


@pytest.mark.parametrize(
    "address",
    ["10.0.0.11", "192.0.2.7", "2001:db8::7", "::1", "fe80::1", "ip-10-0-0-11.ec2.internal", "node1", "a.b.", "x-1"],
)
def test_addresses_and_host_names_pass(address):
    assert address_problem(address) is None


@pytest.mark.parametrize(
    "address",
    [
        "",
        None,
        7,
        "10.0.0.11\n    ProxyCommand sh -c 'touch /tmp/owned'",
        "10.0.0.11 ProxyCommand x",
        "10.0.0.11#x",
        "node1\tUser root",
        "-oProxyCommand=x",
        "10.0.0.300",
        "10.0.0",
        "host_name",
        "bad-.example.com",
        "a..b",
        "a" * 64,
        "%h",
        "[::1]",
        "node1/22",
    ],
)
def test_anything_else_is_refused(address):
    assert address_problem(address)


@pytest.mark.parametrize("user", ["amx", "ubuntu", "ec2-user", "_svc", "a.b", "x" * 32])
def test_user_names_pass(user):
    assert user_problem(user) is None


@pytest.mark.parametrize("user", ["", None, "amx\nHost *", "a b", "1amx", "-amx", "x" * 33, "root#", "amx\n"])
def test_bad_user_names_are_refused(user):
    assert user_problem(user)


@pytest.mark.parametrize("name", ["cluster", "id_cluster", "amx-cluster.2", "id_ed25519"])
def test_key_names_pass(name):
    assert key_name_problem(name) is None


@pytest.mark.parametrize(
    "name",
    [
        *("", None, "../id_ed25519", "a/b", ".hidden", "-f", "key name", "k\nIdentityFile x", "cluster\n"),
        *("cluster.pub", "config", "authorized_keys", "known_hosts", "..", "x" * 65),
    ],
)
def test_bad_key_names_are_refused(name):
    assert key_name_problem(name)


def test_the_filter_names_host_variable_and_value():
    problems = mesh_input_problems_filter(
        {"m": "10.0.0.1", "w1": "10.0.0.2\nProxyCommand x"}, {"m": "amx", "w1": "amx"}, {"m": "../k", "w1": "c"}
    )
    assert len(problems) == 2
    assert problems[0].startswith("ssh_mesh_key_name of m '../k' is not a file name")
    assert problems[1].startswith("ssh_mesh_address of w1 '10.0.0.2\\nProxyCommand x' is neither")
    assert "set it to the address the other nodes reach this node on" in problems[1]
    assert mesh_input_problems_filter({"m": "10.0.0.1"}, {"m": "amx"}, {"m": "cluster"}) == []
    with pytest.raises(AnsibleFilterError, match="mesh_input_problems"):
        mesh_input_problems_filter(["10.0.0.1"])


def test_a_key_the_role_made_is_its_own():
    comment = mesh_key_comment("cluster", "master")
    assert comment == "amx.cluster-ssh_mesh:cluster@master"
    assert key_owner(True, f"ssh-ed25519 AAAAC3 {comment}\n", "cluster", "master") == {"owner": "ours", "reason": None}
    # The key an earlier version made (its comment <name>@<master>) is its own too.
    assert key_owner(True, "ssh-ed25519 AAAAC3 cluster@master", "cluster", "master")["owner"] == "ours"
    assert key_owner(False, None, "cluster", "master") == {"owner": "absent", "reason": None}


@pytest.mark.parametrize(
    ("private", "public", "reason"),
    [
        (True, "ssh-ed25519 AAAAC3 alice@laptop", "does not carry the comment"),
        (True, "ssh-ed25519 AAAAC3", "does not carry the comment"),
        (True, "ssh-ed25519 AAAAC3 cluster@other-master", "does not carry the comment"),
        (True, "ssh-ed25519 AAAAC3 xamx.cluster-ssh_mesh:cluster@master", "does not carry the comment"),
        (True, "", "does not carry the comment"),
        (True, None, "no public key beside it"),
        (False, "ssh-ed25519 AAAAC3 amx.cluster-ssh_mesh:cluster@master", "only its public key"),
    ],
)
def test_any_other_key_is_foreign(private, public, reason):
    result = key_owner(private, public, "cluster", "master")
    assert result["owner"] == "foreign"
    assert reason in result["reason"]


KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIOwn"
FOUND = "# Host 10.0.0.2 found: line {n}\n{line}\n"


@pytest.mark.parametrize(
    ("found", "conflict"),
    [
        ("", False),
        (FOUND.format(n=1, line=f"|1|salt=|hash= ssh-ed25519 {KEY}"), False),  # the same key: nothing to replace
        (FOUND.format(n=1, line=f"10.0.0.2 ssh-ed25519 {KEY} comment"), False),
        (FOUND.format(n=3, line="10.0.0.2 ssh-rsa AAAAB3Nza"), False),  # another type: the module adds beside it
        (FOUND.format(n=1, line="|1|salt=|hash= ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOther"), True),
        (
            FOUND.format(n=1, line=f"10.0.0.2 ssh-ed25519 {KEY}")
            + FOUND.format(n=2, line="10.0.0.2 ssh-ed25519 AAAAX"),
            True,
        ),
        (FOUND.format(n=1, line="@cert-authority 10.0.0.2 ssh-ed25519 AAAAX"), False),
        (FOUND.format(n=1, line="@revoked 10.0.0.2 ssh-ed25519 AAAAX"), False),
    ],
)
def test_another_pinned_key_for_the_address_is_a_conflict(found, conflict):
    assert known_host_conflict(found, KEY + "\n") is conflict


def test_the_filter_names_the_nodes_in_conflict():
    results = [
        {"item": "m", "rc": 1, "stdout": ""},
        {"item": "w1", "rc": 0, "stdout": f"w1 ssh-ed25519 {KEY}"},
        {"item": "w2", "rc": 0, "stdout": "w2 ssh-ed25519 AAAAX"},
        {"item": "w3", "rc": 255, "stdout": "w3 ssh-ed25519 AAAAX"},
    ]
    assert mesh_known_host_conflicts(results, {"m": KEY, "w1": KEY, "w2": KEY, "w3": KEY}) == ["w2"]
    with pytest.raises(AnsibleFilterError, match="mesh_known_host_conflicts"):
        mesh_known_host_conflicts("w2", {})


@pytest.mark.parametrize("port", [22, 1, 2222, 65535, "22", "2222", "65535"])
def test_ports_pass(port):
    assert port_problem(port) is None


@pytest.mark.parametrize(
    ("port", "problem"),
    [
        (0, "out of range"),
        (65536, "out of range"),
        (-22, "out of range"),
        ("0", "out of range"),
        ("70000", "out of range"),
        ("", "not a port number"),
        ("22\n    ProxyCommand x", "not a port number"),
        ("22 ", "not a port number"),
        ("-1", "not a port number"),
        ("\uff12\uff12", "not a port number"),  # full-width digits: str.isdigit() says yes, ssh would not
        ("ssh", "not a port number"),
        (None, "not a port number"),
        (True, "not a port number"),
        (22.0, "not a port number"),
    ],
)
def test_anything_but_a_port_is_refused(port, problem):
    assert problem in port_problem(port)


def test_a_bad_port_is_named_with_its_host_and_the_fix():
    problems = mesh_input_problems_filter({"m": "10.0.0.1", "w1": "10.0.0.2"}, ports={"m": 22, "w1": 70000})
    assert problems == [
        "ssh_mesh_port of w1 70000 is out of range (a port is a whole number from 1 to 65535): set it (or "
        "ansible_port, its default) to the port this node's sshd listens on for the other nodes"
    ]


@pytest.mark.parametrize(
    ("address", "port", "name"),
    [
        ("10.0.0.2", 22, "10.0.0.2"),
        ("10.0.0.2", "22", "10.0.0.2"),
        ("10.0.0.2", 2222, "[10.0.0.2]:2222"),
        ("Node-B.Example.COM", 22, "node-b.example.com"),  # ssh compares host names in lower case
        ("Node-B.example.com", "2200", "[node-b.example.com]:2200"),
        ("2001:db8::7", 22, "2001:db8::7"),
        ("2001:DB8::7", 2222, "[2001:db8::7]:2222"),
    ],
)
def test_the_known_hosts_name_carries_a_port_other_than_22(address, port, name):
    assert known_host_name(address, port) == name


NODES = {
    "m": {"address": "10.0.0.1", "port": 22, "user": "amx"},
    "w-b": {"address": "10.0.0.3", "port": "2222", "user": "mpi"},
    "w-a": {"address": "10.0.0.2", "port": 22, "user": "amx"},
}


def test_each_node_gets_its_own_port_and_user_master_first():
    entries = mesh_entries("m", {"w-b": "node1", "w-a": "node2"}, NODES)
    assert list(entries) == ["m", "w-b", "w-a"]
    assert entries["m"] == {
        "name": "m",
        "alias": None,
        "address": "10.0.0.1",
        "port": 22,
        "user": "amx",
        "known_host": "10.0.0.1",
    }
    assert entries["w-b"] == {
        "name": "w-b",
        "alias": "node1",
        "address": "10.0.0.3",
        "port": 2222,
        "user": "mpi",
        "known_host": "[10.0.0.3]:2222",
    }
    assert entries["w-a"]["alias"] == "node2" and entries["w-a"]["known_host"] == "10.0.0.2"


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ({k: v for k, v in NODES.items() if k != "w-a"}, "w-a: no address, port and user"),
        ({**NODES, "w-a": {"address": "10.0.0.2", "user": "amx"}}, "w-a: no address, port and user"),
        ({**NODES, "w-a": {**NODES["w-a"], "port": 0}}, "w-a: the port 0 is out of range"),
        ({**NODES, "m": {**NODES["m"], "user": "amx\nHost *"}}, "m: the user 'amx\\nHost *' is not a user name"),
        ({**NODES, "w-b": {**NODES["w-b"], "address": "10.0.0.3 x"}}, "w-b: the address '10.0.0.3 x' is neither"),
    ],
)
def test_entries_refuse_what_the_preflight_would_have_refused(nodes, message):
    with pytest.raises(ValueError) as error:
        mesh_entries("m", {"w-b": "node1", "w-a": "node2"}, nodes)
    assert message in str(error.value)
