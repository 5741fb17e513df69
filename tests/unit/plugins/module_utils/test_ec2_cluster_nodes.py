# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the EC2 cluster naming rules shared by the inventory plugin and the ec2_cluster_nodes module."""

from __future__ import annotations

import datetime
import pathlib

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_nodes import (
    CLUSTER_NAME_PATTERN,
    TAG_CLUSTER,
    TAG_NAME,
    TAG_NODE_INDEX,
    TAG_ROLE,
    ClusterLayoutError,
    check_cluster_name,
    cluster_filters,
    launch_order,
    misnamed_inventory_file,
    missing_tags,
    node_address,
    node_hostvars,
    of_cluster,
    order_nodes,
    parse_node_index,
    simplify_instance,
    tags_to_dict,
)

REPO = pathlib.Path(__file__).resolve().parents[4]
T0 = "2026-01-01T10:00:00.000000Z"
T1 = "2026-01-01T10:05:00.000000Z"
T2 = "2026-01-01T11:00:00.000000Z"


def inst(instance_id, role="worker", index=None, launch_time=T0, launch_index=0, cluster="demo", **extra):
    tags = {TAG_CLUSTER: cluster}
    if role is not None:
        tags[TAG_ROLE] = role
    if index is not None:
        tags[TAG_NODE_INDEX] = index
    node = {
        "instance_id": instance_id,
        "launch_time": launch_time,
        "ami_launch_index": launch_index,
        "private_ip_address": f"10.0.0.{len(instance_id) + launch_index}",
        "public_ip_address": "",
        "tags": tags,
    }
    node.update(extra)
    return node


def names(nodes):
    return [(node["name"], node["instance_id"]) for node in nodes]


@pytest.mark.parametrize(
    ("instances", "expected"),
    [
        pytest.param([], [], id="empty"),
        pytest.param([inst("i-m", role="master")], [("master", "i-m")], id="master-only"),
        pytest.param(
            [inst("i-c", launch_index=2), inst("i-a", launch_index=0), inst("i-b", launch_index=1)],
            [("node1", "i-a"), ("node2", "i-b"), ("node3", "i-c")],
            id="one-request-by-launch-index-not-id",
        ),
        pytest.param(
            [inst("i-a", launch_index=1), inst("i-b", launch_index=0, launch_time=T1)],
            [("node1", "i-a"), ("node2", "i-b")],
            id="earlier-request-first",
        ),
        pytest.param(
            [inst("i-a", index="3"), inst("i-b", index="1"), inst("i-m", role="master", index="0")],
            [("master", "i-m"), ("node1", "i-b"), ("node3", "i-a")],
            id="tags-win-and-keep-gaps",
        ),
        pytest.param(
            [inst("i-new", launch_time=T2), inst("i-old", index="2")],
            [("node1", "i-new"), ("node2", "i-old")],
            id="untagged-fills-lowest-free-index",
        ),
        pytest.param(
            [inst("i-first", index="1"), inst("i-dup", index="1", launch_time=T1)],
            [("node1", "i-first"), ("node2", "i-dup")],
            id="duplicate-index-older-keeps-it",
        ),
        pytest.param(
            [inst("i-x", index="abc"), inst("i-y", index="0"), inst("i-z", index="-2", launch_time=T1)],
            [("node1", "i-x"), ("node2", "i-y"), ("node3", "i-z")],
            id="malformed-or-zero-index-treated-as-untagged",
        ),
        pytest.param(
            [inst("i-a"), inst("i-a")],
            [("node1", "i-a")],
            id="same-instance-twice-counts-once",
        ),
    ],
)
def test_order_nodes_names(instances, expected):
    nodes, ignored = order_nodes(instances)
    assert names(nodes) == expected
    assert ignored == []


def test_order_nodes_is_independent_of_input_order():
    instances = [inst(f"i-{n}", launch_index=n) for n in range(12)] + [inst("i-m", role="master")]
    forward = order_nodes(instances)[0]
    backward = order_nodes(list(reversed(instances)))[0]
    assert names(forward) == names(backward)
    assert [node["name"] for node in forward] == ["master"] + [f"node{n}" for n in range(1, 13)]
    assert [node["node_index"] for node in forward] == list(range(13))


def test_order_nodes_marks_where_the_index_came_from():
    nodes = order_nodes([inst("i-a", index="2"), inst("i-b")])[0]
    by_id = {node["instance_id"]: node for node in nodes}
    assert by_id["i-a"]["index_from_tag"] is True
    assert by_id["i-b"]["index_from_tag"] is False
    assert by_id["i-b"]["node_index"] == 1


@pytest.mark.parametrize("role", [None, "", "bastion", "Master"])
def test_order_nodes_ignores_other_roles(role):
    nodes, ignored = order_nodes([inst("i-odd", role=role), inst("i-w")])
    assert names(nodes) == [("node1", "i-w")]
    assert ignored == ["i-odd"]


def test_order_nodes_refuses_two_masters():
    with pytest.raises(ClusterLayoutError, match=r"2 instances are tagged amx.cluster/role=master \(i-m1, i-m2\)"):
        order_nodes([inst("i-m2", role="master"), inst("i-m1", role="master")])


def test_order_nodes_does_not_modify_its_input():
    original = inst("i-a")
    order_nodes([original])
    assert "name" not in original


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", 0),
        ("7", 7),
        (" 12 ", 12),
        (3, 3),
        ("", None),
        (None, None),
        ("x1", None),
        ("-1", None),
        (-1, None),
        (True, None),
        ("1.5", None),
        ("\u00b2", None),  # a superscript two: str.isdigit() says yes, int() refuses it
        ("\u0663", None),  # an Arabic-Indic three
        ("\uff11", None),  # a full-width one
    ],
)
def test_parse_node_index(value, expected):
    assert parse_node_index(value) == expected


def test_cluster_filters():
    assert cluster_filters("demo", ["running"]) == [
        {"Name": "tag:amx.cluster/cluster", "Values": ["demo"]},
        {"Name": "instance-state-name", "Values": ["running"]},
    ]


@pytest.mark.parametrize(
    ("name", "states", "message"),
    [("", ["running"], "cluster name '' is not valid"), ("demo", ["runing"], "runing"), ("demo", [], r"\(none\)")],
)
def test_cluster_filters_rejects(name, states, message):
    with pytest.raises(ClusterLayoutError, match=message):
        cluster_filters(name, states)


def test_simplify_instance_keeps_what_naming_needs():
    raw = {
        "InstanceId": "i-0abc",
        "InstanceType": "r7iz.metal-16xl",
        "ImageId": "ami-1",
        "State": {"Name": "running", "Code": 16},
        "LaunchTime": datetime.datetime(2026, 1, 1, 11, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
        "AmiLaunchIndex": 3,
        "PrivateIpAddress": "10.0.0.5",
        "PublicIpAddress": "203.0.113.5",
        "Placement": {"AvailabilityZone": "eu-west-1a", "GroupName": "amx-demo"},
        "SubnetId": "subnet-1",
        "VpcId": "vpc-1",
        "InstanceLifecycle": "spot",
        "Tags": [{"Key": TAG_CLUSTER, "Value": "demo"}, {"Key": "Name", "Value": "demo-node1"}],
        "BlockDeviceMappings": [{"DeviceName": "/dev/sda1"}],
    }
    simple = simplify_instance(raw, "eu-west-1")
    assert simple["launch_time"] == T0  # converted to UTC
    assert simple["ami_launch_index"] == 3
    assert simple["lifecycle"] == "spot"
    assert simple["placement_group"] == "amx-demo"
    assert simple["tags"] == {TAG_CLUSTER: "demo", "Name": "demo-node1"}
    assert simple["region"] == "eu-west-1"
    assert "BlockDeviceMappings" not in simple


def test_simplify_instance_defaults_for_a_pending_instance():
    simple = simplify_instance({"InstanceId": "i-1", "State": {"Name": "pending"}}, "us-east-1")
    assert simple["public_ip_address"] == ""
    assert simple["lifecycle"] == "on-demand"
    assert simple["tags"] == {}
    assert simple["launch_time"] == ""


def test_launch_order_sorts_by_time_then_index_then_id():
    a = inst("i-b", launch_index=0, launch_time=T1)
    b = inst("i-a", launch_index=1, launch_time=T0)
    c = inst("i-c", launch_index=1, launch_time=T0)
    assert [x["instance_id"] for x in sorted([a, c, b], key=launch_order)] == ["i-a", "i-c", "i-b"]


@pytest.mark.parametrize(
    ("public", "private", "use_private", "expected"),
    [
        ("203.0.113.1", "10.0.0.1", False, "203.0.113.1"),
        ("", "10.0.0.1", False, "10.0.0.1"),
        ("203.0.113.1", "10.0.0.1", True, "10.0.0.1"),
        ("", "", False, ""),
    ],
)
def test_node_address(public, private, use_private, expected):
    assert node_address({"public_ip_address": public, "private_ip_address": private}, use_private) == expected


def test_node_hostvars_are_namespaced():
    nodes = order_nodes([inst("i-a", index="2", public_ip_address="203.0.113.9", instance_type="m7i.large")])[0]
    hostvars = node_hostvars(nodes[0])
    assert hostvars["ansible_host"] == "203.0.113.9"
    assert hostvars["ec2_node_index"] == 2
    assert hostvars["ec2_node_role"] == "worker"
    assert hostvars["ec2_node_cluster"] == "demo"
    assert hostvars["ec2_tags"][TAG_NODE_INDEX] == "2"
    assert hostvars["ec2_instance_type"] == "m7i.large"
    assert not [key for key in hostvars if key != "ansible_host" and not key.startswith("ec2_")]
    assert not [key for key in hostvars if key.startswith("ec2_cluster_") or key == "tags"]


def test_node_hostvars_without_address_has_no_ansible_host():
    nodes = order_nodes([inst("i-a", private_ip_address="")])[0]
    assert "ansible_host" not in node_hostvars(nodes[0])


def test_missing_tags_only_where_they_differ():
    nodes = order_nodes(
        [
            inst("i-m", role="master", index="0", Name=None),
            inst("i-a", index="1"),
            inst("i-b"),
        ]
    )[0]
    nodes[1]["tags"][TAG_NAME] = "demo-node1"
    nodes[0]["tags"][TAG_NAME] = "demo-master"
    assert missing_tags(nodes, "demo") == {"i-b": {TAG_NODE_INDEX: "2", TAG_NAME: "demo-node2"}}


def test_tags_to_dict():
    assert tags_to_dict([{"Key": "a", "Value": "1"}, {"Key": "b"}]) == {"a": "1", "b": ""}
    assert tags_to_dict(None) == {}


def test_order_nodes_says_why_a_set_index_tag_was_ignored():
    nodes = order_nodes(
        [inst("i-a", index="1"), inst("i-dup", index="1", launch_time=T1), inst("i-sup", index="\u00b2"), inst("i-0")]
    )[0]
    why = {node["instance_id"]: node.get("index_tag_ignored") for node in nodes}
    assert why == {
        "i-a": None,
        "i-dup": "node1 is i-a, launched earlier",
        "i-sup": "'\u00b2' is not a whole number from 1 up",
        "i-0": None,  # no tag at all: nothing to say
    }


@pytest.mark.parametrize("name", ["demo", "a", "Demo-2", "0", "x" * 40])
def test_cluster_names_the_role_accepts(name):
    assert check_cluster_name(name) == name


@pytest.mark.parametrize("name", ["", "demo*", "de?o", "*", "-demo", "demo_1", "demo prod", "x" * 41, "démo", None, 7])
def test_cluster_names_the_role_refuses_never_reach_the_tag_filter(name):
    with pytest.raises(ClusterLayoutError, match="1-40 letters, digits or hyphens"):
        cluster_filters(name, ["running"])


def test_the_role_and_the_plugins_accept_the_same_cluster_names():
    preflight = (REPO / "roles" / "ec2_cluster" / "tasks" / "preflight.yml").read_text()
    assert f"ec2_cluster_name is match('^{CLUSTER_NAME_PATTERN}$')" in preflight


def test_of_cluster_keeps_exact_matches_only():
    def raw(instance_id, cluster):
        return {"InstanceId": instance_id, "Tags": [{"Key": "amx.cluster/cluster", "Value": cluster}]}

    found = of_cluster([raw("i-1", "demo"), raw("i-2", "demo2"), raw("i-3", "Demo"), {"InstanceId": "i-4"}], "demo")
    assert [item["InstanceId"] for item in found] == ["i-1"]


@pytest.mark.parametrize(
    ("path", "text", "suggested"),
    [
        ("/x/my-cluster.yml", "plugin: amx.cluster.ec2_cluster\ncluster_name: a\n", "/x/my-cluster.ec2_cluster.yml"),
        ("/x/c.yaml", "# comment\nplugin: 'amx.cluster.ec2_cluster'  # the plugin\n", "/x/c.ec2_cluster.yml"),
        ("c.yml", 'plugin: "ec2_cluster"\n', "c.ec2_cluster.yml"),
        ("/x/ec2_cluster.yml.bak", "plugin: amx.cluster.ec2_cluster\n", "/x/ec2_cluster.yml.bak.ec2_cluster.yml"),
    ],
)
def test_misnamed_inventory_file_says_why_and_the_fix(path, text, suggested):
    problem = misnamed_inventory_file(path, text)
    assert problem == (
        f"{path} names the amx.cluster.ec2_cluster inventory plugin, which reads only files whose name ends in "
        f"ec2_cluster.yml or ec2_cluster.yaml: rename it, for example to {suggested}"
    )
    assert "cluster_name" not in problem


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/x/demo.ec2_cluster.yml", "plugin: amx.cluster.ec2_cluster\n"),
        ("/x/ec2_cluster.yaml", "plugin: amx.cluster.ec2_cluster\n"),
        ("/x/aws.yml", "plugin: amazon.aws.aws_ec2\n"),
        ("/x/fleet.yml", "all:\n  hosts:\n    ec2_cluster:\n"),
        ("/x/other.yml", "plugin: amx.cluster.ec2_cluster_other\n"),
    ],
)
def test_misnamed_inventory_file_is_quiet_otherwise(path, text):
    assert misnamed_inventory_file(path, text) is None
