# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
import pytest

from ansible_collections.amx.cluster.plugins.module_utils.cluster_shape import cluster_shape
from ansible_collections.amx.cluster.plugins.module_utils.ssh_mesh import (
    account_problems,
    address_problem,
    host_key_problem,
    key_comment,
    key_name_problem,
    key_owner,
    key_problem,
    known_host_conflict,
    known_host_conflicts,
    known_host_name,
    known_hosts_problem,
    master_problems,
    mesh_entries,
    mesh_input_problems,
    mesh_plan,
    play_problems,
    port_problem,
    user_problem,
)


def inputs(addresses, users=None, key_names=None, ports=None):
    """The nodes of mesh_input_problems from one mapping per variable (host name -> value)."""
    nodes = {}
    for variable, values in (
        ("ssh_mesh_address", addresses),
        ("ssh_mesh_port", ports or {}),
        ("ssh_mesh_user", users or {}),
        ("ssh_mesh_key_name", key_names or {}),
    ):
        for node, value in values.items():
            nodes.setdefault(node, {})[variable] = value
    return nodes


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


def test_the_problems_name_host_variable_and_value():
    problems = mesh_input_problems(
        inputs({"m": "10.0.0.1", "w1": "10.0.0.2\nProxyCommand x"}, {"m": "amx", "w1": "amx"}, {"m": "../k", "w1": "c"})
    )
    assert len(problems) == 2
    assert problems[0].startswith("ssh_mesh_key_name of m '../k' is not a file name")
    assert problems[1].startswith("ssh_mesh_address of w1 '10.0.0.2\\nProxyCommand x' is neither")
    assert "set it to the address the other nodes reach this node on" in problems[1]
    assert mesh_input_problems(inputs({"m": "10.0.0.1"}, {"m": "amx"}, {"m": "cluster"})) == []
    # A node without values (it shared none) is not checked here: the play's checks name it.
    assert mesh_input_problems({"m": "10.0.0.1"}) == []


def test_a_key_the_role_made_is_its_own():
    comment = key_comment("cluster", "master")
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


def test_the_nodes_in_conflict_are_named():
    # What ssh-keygen -F found, by node (the action leaves out the nodes it found nothing for).
    found = {"w1": f"w1 ssh-ed25519 {KEY}", "w2": "w2 ssh-ed25519 AAAAX", "w3": "w3 ssh-ed25519 AAAAY"}
    assert known_host_conflicts(found, {"m": KEY, "w1": KEY, "w2": KEY, "w3": KEY}) == ["w2", "w3"]
    assert known_host_conflicts({}, {"m": KEY}) == []
    # A node without a host key of its own: any pinned ed25519 key is another one.
    assert known_host_conflicts({"w1": f"w1 ssh-ed25519 {KEY}"}, {"w1": None}) == ["w1"]


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
    problems = mesh_input_problems(inputs({"m": "10.0.0.1", "w1": "10.0.0.2"}, ports={"m": 22, "w1": 70000}))
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
        ({**NODES, "w-a": {**NODES["w-a"], "port": 99999}}, "w-a: the port 99999 is out of range"),
        ({**NODES, "m": {**NODES["m"], "user": "amx\nHost *"}}, "m: the user 'amx\\nHost *' is not a user name"),
        ({**NODES, "w-b": {**NODES["w-b"], "address": "10.0.0.3 x"}}, "w-b: the address '10.0.0.3 x' is neither"),
    ],
)
def test_entries_refuse_what_the_preflight_would_have_refused(nodes, message):
    # The cases of the former mesh_entries filter are among these (a bad port, a worker without values).
    with pytest.raises(ValueError) as error:
        mesh_entries("m", {"w-b": "node1", "w-a": "node2"}, nodes)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("play_all", "play", "pieces"),
    [
        (["m", "w"], ["m", "w"], []),
        (["m"], ["m"], ["Missing from the play: w.", "Run it with `hosts: cluster`"]),
        (["m", "w", "x"], ["m", "w", "x"], ["In the play but neither the master nor a worker: x."]),
        (["m", "w"], ["m"], ["but w was unreachable or failed earlier", "bring it up", "left untouched"]),
    ],
)
def test_the_play_holds_the_nodes_and_lost_none(play_all, play, pieces):
    problems = play_problems(["m", "w"], play_all, play)
    assert len(problems) == (1 if pieces else 0)
    for piece in pieces:
        assert piece in problems[0]


def test_lost_nodes_are_named_together():
    (problem,) = play_problems(["m", "w1", "w2"], ["m", "w1", "w2"], ["m"])
    assert "but w1, w2 were unreachable" in problem and "bring them up" in problem


def test_a_missing_account_names_user_and_host():
    accounts = {"m": ["x", "1000", "1000", "", "/home/amx", "/bin/sh"], "w": None}
    assert account_problems({"m": "amx", "w": "mpi"}, accounts) == [
        "user 'mpi' does not exist on w: create it on every node first, or set ssh_mesh_user to an existing account."
    ]


def test_nodes_without_a_host_key_are_named():
    assert host_key_problem({"m": KEY, "w": KEY}) is None
    problem = host_key_problem({"m": KEY, "w1": None, "w2": ""})
    assert problem.startswith("w1, w2 reported no ed25519 host key in their facts")
    assert "ssh_mesh_strict_host_key_checking: false" in problem


def test_a_conflict_names_file_master_address_and_node():
    entries = {"w": {"known_host": "[10.0.0.2]:2222"}}
    assert known_hosts_problem("m", "/home/amx/.ssh/known_hosts", [], entries) is None
    problem = known_hosts_problem("m", "/home/amx/.ssh/known_hosts", ["w"], entries)
    assert problem.startswith(
        "/home/amx/.ssh/known_hosts on the master m pins another ed25519 host key for [10.0.0.2]:2222 (w)"
    )
    assert "ssh-keygen -R ADDRESS -f that file" in problem


@pytest.mark.parametrize(("rotate", "would"), [(True, "delete it to rotate it"), (False, "hand it to every node")])
def test_a_foreign_key_names_its_path_and_what_would_happen(rotate, would):
    key = {"owner": "foreign", "reason": "only its public key is there", "path": "/h/.ssh/c", "rotate": rotate}
    problem = key_problem("m", key)
    assert problem.startswith("the master m already has /h/.ssh/c (ssh_mesh_key_name), a key amx.cluster did not make")
    assert f"The mesh would {would}." in problem
    assert key_problem("m", {**key, "owner": "ours"}) is None
    assert key_problem("m", {**key, "owner": "absent"}) is None


ACCOUNT = ["x", "1000", "1001", "", "/home/amx", "/bin/sh"]


def shape_of(workers=("w",), addresses=None, master="m"):
    """cluster_shape's answer for a master and workers, each with its ssh_mesh_address."""
    names = [master, *workers]
    addresses = addresses or {name: f"10.0.0.{index + 1}" for index, name in enumerate(names)}
    groups = {"all": names, "master": [master], "workers": list(workers)}
    hostvars = {name: {"ssh_mesh_address": address} for name, address in addresses.items()}
    return cluster_shape(groups, hostvars, prefix="ssh_mesh")


def node(**values):
    return {"port": 22, "user": "amx", "key_name": "cluster", "account": ACCOUNT, "host_key": KEY, **values}


def test_a_good_cluster_gets_its_entries_and_key_comment():
    plan = mesh_plan(shape_of(), ["m", "w"], ["m", "w"], {"m": node(), "w": node(port="2222", user="mpi")}, True)
    assert plan["problems"] == []
    assert plan["master"] == "m" and plan["workers"] == ["w"] and plan["aliases"] == {"w": "node1"}
    assert plan["entries"]["w"]["known_host"] == "[10.0.0.2]:2222" and plan["entries"]["w"]["user"] == "mpi"
    assert plan["key_comment"] == "amx.cluster-ssh_mesh:cluster@m"


def test_a_one_node_cluster_checks_the_account_only():
    shape = shape_of(workers=())
    plan = mesh_plan(shape, ["m"], ["m"], {"m": node(host_key=None, port=99999)}, True)
    assert plan["problems"] == [] and plan["entries"] == {}
    plan = mesh_plan(shape, ["m"], ["m"], {"m": node(account=None)}, True)
    assert plan["problems"] == [
        "user 'amx' does not exist on m: create it on every node first, or set ssh_mesh_user to an existing account."
    ]


def test_every_problem_of_every_node_at_once():
    nodes = {
        "m": node(key_name="../k", account=None),
        "w1": node(port=70000, host_key=None),
        "w2": node(user="a b"),
    }
    shape = shape_of(workers=("w1", "w2"), addresses={"m": "10.0.0.1", "w1": "10.0.0.2 x", "w2": "10.0.0.3"})
    plan = mesh_plan(shape, ["m", "w1", "w2"], ["m", "w1", "w2"], nodes, True)
    found = " ".join(plan["problems"])
    for piece in (
        "ssh_mesh_address of w1 '10.0.0.2 x' is neither",
        "ssh_mesh_key_name of m '../k' is not a file name",
        "ssh_mesh_port of w1 70000 is out of range",
        "ssh_mesh_user of w2 'a b' is not a user name",
        "user 'amx' does not exist on m",
        "w1 reported no ed25519 host key",
    ):
        assert piece in found
    assert all(problem.endswith(".") for problem in plan["problems"])
    # The input problems come first, and nothing is planned from wrong values.
    assert plan["problems"][0].startswith("ssh_mesh_address of w1")
    assert plan["entries"] == {} and plan["key_comment"] is None
    # Without pinning, host keys are not needed.
    assert "host key" not in " ".join(mesh_plan(shape, ["m", "w1", "w2"], ["m", "w1", "w2"], nodes, False)["problems"])


def test_a_bad_shape_or_play_stops_the_plan_there():
    bad = shape_of()
    bad = {**bad, "problems": ["group master has 2 hosts (a, b)"]}
    plan = mesh_plan(bad, ["m", "w"], ["m", "w"], {"m": node(port=0)}, True)
    assert plan["problems"] == [
        "group master has 2 hosts (a, b). The master launches mpirun and the workers are node1..N, each machine once."
    ]
    plan = mesh_plan(shape_of(), ["m", "w"], ["m"], {"m": node(port=0)}, True)
    assert len(plan["problems"]) == 1 and "w was unreachable" in plan["problems"][0]


def test_the_master_files_give_the_key_and_the_conflicts():
    plan = mesh_plan(shape_of(), ["m", "w"], ["m", "w"], {"m": node(), "w": node()}, True)
    keys = {"m": KEY, "w": KEY}
    ours = f"ssh-ed25519 AAAA {key_comment('cluster', 'm')}"
    done = master_problems(plan, "/home/amx", {}, keys, True, ours, False)
    assert done == {
        "problems": [],
        "key": {"owner": "ours", "reason": None, "path": "/home/amx/.ssh/cluster", "rotate": False},
    }
    done = master_problems(plan, "/home/amx", {"w": "10.0.0.2 ssh-ed25519 AAAAX"}, keys, True, "x y alice", True)
    assert done["key"]["owner"] == "foreign"
    assert done["problems"][0].startswith("/home/amx/.ssh/known_hosts on the master m pins another")
    assert "10.0.0.2 (w)" in done["problems"][0]
    assert "The mesh would delete it to rotate it." in done["problems"][1]
