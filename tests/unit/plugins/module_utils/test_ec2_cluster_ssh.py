# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the message a failed SSH wait on new EC2 nodes turns into (module_utils/ec2_cluster_ssh.py)."""

from __future__ import annotations

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_ssh import (
    controller_address_toward,
    failed_waits,
    is_local_api,
    ssh_rule_covers,
    unreachable_message,
)

SSH_FROM_ADMIN = [
    {"ip_protocol": "tcp", "from_port": 22, "to_port": 22, "ip_ranges": [{"cidr_ip": "203.0.113.7/32"}]},
    {"ip_protocol": "-1", "user_id_group_pairs": [{"group_id": "sg-1"}]},
]
RESET = {"name": "master", "address": "54.1.2.3", "error": "[Errno 104] Connection reset by peer"}


def message(**changes):
    arguments = dict(
        cluster="demo",
        failures=[RESET],
        admin_cidr="203.0.113.7/32",
        group_name="amx-demo",
        permissions=SSH_FROM_ADMIN,
        controller_address="203.0.113.7",
        endpoint_url="",
        timeout=900,
    )
    arguments.update(changes)
    return unreachable_message(**arguments)


def test_failed_waits_takes_the_failed_items_in_order():
    results = [
        {"failed": False, "item": {"name": "master", "hostvars": {"ansible_host": "54.1.2.3"}}},
        {"failed": True, "msg": "Timeout when waiting for 54.1.2.4:22\n", "item": {"name": "node1", "hostvars": {}}},
        {"failed": True, "msg": "reset", "item": {"name": "node2", "hostvars": {"ansible_host": "54.1.2.5"}}},
        {"skipped": True},
    ]
    assert failed_waits(results) == [
        {"name": "node1", "address": "", "error": "Timeout when waiting for 54.1.2.4:22"},
        {"name": "node2", "address": "54.1.2.5", "error": "reset"},
    ]


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("", False),
        ("http://127.0.0.1:5077", True),
        ("https://moto.internal:4566", True),
        ("https://ec2.eu-west-1.amazonaws.com", False),
        ("https://ec2-fips.us-east-1.amazonaws.com", False),
        ("https://ec2.cn-north-1.amazonaws.com.cn", False),
    ],
)
def test_is_local_api(url, local):
    assert is_local_api(url) is local


@pytest.mark.parametrize(
    ("permissions", "cidr", "covered"),
    [
        (SSH_FROM_ADMIN, "203.0.113.7/32", True),
        (SSH_FROM_ADMIN, "203.0.113.8/32", False),
        (
            [{"ip_protocol": "tcp", "from_port": 20, "to_port": 30, "ip_ranges": [{"cidr_ip": "203.0.113.0/24"}]}],
            "203.0.113.7/32",
            True,
        ),
        (
            [{"ip_protocol": "tcp", "from_port": 443, "to_port": 443, "ip_ranges": [{"cidr_ip": "0.0.0.0/0"}]}],
            "203.0.113.7/32",
            False,
        ),
        ([{"ip_protocol": "-1", "ip_ranges": [{"cidr_ip": "0.0.0.0/0"}]}], "203.0.113.7/32", True),
        (
            [{"ip_protocol": "udp", "from_port": 22, "to_port": 22, "ip_ranges": [{"cidr_ip": "0.0.0.0/0"}]}],
            "203.0.113.7/32",
            False,
        ),
        (
            [{"ip_protocol": "tcp", "from_port": 22, "to_port": 22, "ipv6_ranges": [{"cidr_ipv6": "2001:db8::/48"}]}],
            "2001:db8::/64",
            True,
        ),
        (
            [{"ip_protocol": "tcp", "from_port": 22, "to_port": 22, "ipv6_ranges": [{"cidr_ipv6": "2001:db8::/48"}]}],
            "203.0.113.7/32",
            False,
        ),
        ([], "203.0.113.7/32", False),
        (SSH_FROM_ADMIN, "not a cidr", False),
    ],
)
def test_ssh_rule_covers(permissions, cidr, covered):
    assert ssh_rule_covers(permissions, cidr) is covered


def test_message_names_the_node_its_error_and_every_check():
    text = message()
    assert text.startswith(
        "cluster demo: SSH does not answer on master (54.1.2.3): [Errno 104] Connection reset by peer.\n"
    )
    assert "the controller's address 203.0.113.7 is inside ec2_cluster_admin_cidr 203.0.113.7/32" in text
    assert "the security group amx-demo lets 203.0.113.7/32 reach port 22" in text
    assert "ec2_cluster_ssh_timeout=900 s" in text
    assert "configure_nodes" not in text


def test_a_local_api_comes_first_with_its_fix():
    lines = message(endpoint_url="http://127.0.0.1:5077").splitlines()
    assert "the EC2 endpoint is http://127.0.0.1:5077, not AWS" in lines[2]
    assert "-e ec2_cluster_configure_nodes=false" in lines[2]


def test_a_controller_outside_the_admin_cidr_gets_its_own_address_as_the_fix():
    text = message(controller_address="198.51.100.20")
    assert (
        "the controller connects from 198.51.100.20, outside ec2_cluster_admin_cidr 203.0.113.7/32, the only range "
        "the security group lets reach port 22: provision again with -e ec2_cluster_admin_cidr=198.51.100.20/32"
    ) in text


def test_a_controller_behind_nat_is_told_to_check_its_public_address():
    text = message(controller_address="192.168.1.20")
    assert "192.168.1.20, a private address: the nodes see the address of its NAT" in text
    assert "curl -s https://checkip.amazonaws.com" in text


def test_a_controller_in_the_vpc_is_compared_with_the_cidr_directly():
    # The node's address is private too (use_private_address): no NAT between them.
    text = message(failures=[dict(RESET, address="172.31.0.4")], controller_address="172.31.9.9")
    assert "the controller connects from 172.31.9.9, outside ec2_cluster_admin_cidr 203.0.113.7/32" in text


def test_an_unknown_controller_address_says_how_to_find_it():
    text = message(controller_address=None)
    assert "the address you connect from may be outside ec2_cluster_admin_cidr 203.0.113.7/32" in text
    assert "curl -s https://checkip.amazonaws.com" in text


def test_a_security_group_without_the_ssh_rule():
    text = message(permissions=SSH_FROM_ADMIN[1:])
    assert "the security group amx-demo has no rule that lets 203.0.113.7/32 reach port 22" in text
    assert "may have lost its SSH rule" in message(permissions=None)


def test_every_failed_node_is_named():
    second = {"name": "node1", "address": "54.1.2.4", "error": "Timeout"}
    assert "master (54.1.2.3): [Errno 104] Connection reset by peer; node1 (54.1.2.4): Timeout." in message(
        failures=[RESET, second]
    )


def test_controller_address_toward_loopback_and_bad_input():
    # A UDP connect sends nothing: the route to 127.0.0.5 leaves from a loopback address.
    assert controller_address_toward("127.0.0.5").startswith("127.")
    assert controller_address_toward("not an address") is None
