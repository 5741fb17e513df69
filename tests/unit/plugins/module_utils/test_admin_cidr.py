# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.filter.admin_cidr_check import admin_cidr_check
from ansible_collections.amx.cluster.plugins.module_utils.admin_cidr import check_admin_cidr

ACCEPTED = [
    "203.0.113.7/32",
    "198.51.100.0/24",
    "1.2.0.0/16",  # the widest public IPv4 range without the opt-in
    "10.0.0.0/8",  # private: not the internet
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",  # shared address space (carrier NAT)
    "127.0.0.0/8",
    "169.254.0.0/16",
    "10.20.0.0/14",  # wide, but inside 10.0.0.0/8
    "2001:db8::/64",
    "2001:db8:1234::/48",  # the widest public IPv6 range without the opt-in
    "2001:db8::1/128",
    "fd00::/8",  # unique-local
    "fc00::/7",
    "fe80::/10",
    "::1/128",
]


@pytest.mark.parametrize("cidr", ACCEPTED)
def test_narrow_or_private_ranges_are_accepted_as_written(cidr):
    assert check_admin_cidr(cidr) == {"cidr": cidr, "problem": None}


@pytest.mark.parametrize(
    ("cidr", "pieces"),
    [
        ("0.0.0.0/0", ["0.0.0.0/0 opens SSH to the whole internet", "ec2_cluster_allow_open_world=true"]),
        ("::/0", ["::/0 opens SSH to the whole internet", "ec2_cluster_allow_open_world=true"]),
        ("1.0.0.0/8", ["1.0.0.0/8 opens SSH to a large part of the internet (a public /8", "IPv4", "/16"]),
        ("0.0.0.0/1", ["0.0.0.0/1 opens SSH to a large part of the internet"]),
        ("128.0.0.0/1", ["128.0.0.0/1 opens SSH"]),
        ("198.50.0.0/15", ["a public /15", "/16"]),
        ("8.0.0.0/7", ["a public /7"]),
        ("2001:db8::/32", ["2001:db8::/32 opens SSH to a large part of the internet (a public /32", "IPv6", "/48"]),
        ("2600::/47", ["a public /47"]),
        ("::/1", ["::/1 opens SSH"]),
        ("8000::/1", ["8000::/1 opens SSH"]),
        ("2000::/3", ["2000::/3 opens SSH"]),
        # A range that holds a private block and public space is public.
        ("8.0.0.0/5", ["8.0.0.0/5 opens SSH"]),
        ("172.0.0.0/8", ["172.0.0.0/8 opens SSH"]),
        ("fc00::/6", ["fc00::/6 opens SSH"]),
    ],
)
def test_wide_public_ranges_need_the_opt_in(cidr, pieces):
    result = check_admin_cidr(cidr)
    assert result["cidr"] == cidr
    for piece in pieces:
        assert piece in result["problem"]
    assert check_admin_cidr(cidr, allow_open_world=True) == {"cidr": cidr, "problem": None}


@pytest.mark.parametrize(
    ("value", "pieces"),
    [
        ("", ["ec2_cluster_admin_cidr is not set", "203.0.113.7/32"]),
        (None, ["ec2_cluster_admin_cidr is not set"]),
        (["203.0.113.7/32"], ["ec2_cluster_admin_cidr is not set"]),
        ("203.0.113.300/32", ["'203.0.113.300/32' is not an IPv4 or IPv6 CIDR", "such as 203.0.113.7/32"]),
        ("203.0.113.7/33", ["is not an IPv4 or IPv6 CIDR"]),
        ("2001:db8::/129", ["is not an IPv4 or IPv6 CIDR"]),
        ("203.0.113.7/", ["is not an IPv4 or IPv6 CIDR"]),
        ("/24", ["is not an IPv4 or IPv6 CIDR"]),
        ("203.0.113.7/24/8", ["is not an IPv4 or IPv6 CIDR"]),
        ("203.0.113.7/-1", ["is not an IPv4 or IPv6 CIDR"]),
        ("203.0.113.7/0x20", ["is not an IPv4 or IPv6 CIDR"]),
        ("010.0.0.0/8", ["is not an IPv4 or IPv6 CIDR"]),  # leading zeros: octal to some parsers
        ("10.0.0/8", ["is not an IPv4 or IPv6 CIDR"]),
        ("any", ["'any' is not an IPv4 or IPv6 CIDR"]),
        ("42", ["'42' is not an IPv4 or IPv6 CIDR"]),
        ("2001:db8:::/64", ["is not an IPv4 or IPv6 CIDR"]),
        ("203.0.113.7/32\n", ["is not an IPv4 or IPv6 CIDR"]),
        (" 203.0.113.7/32", ["is not an IPv4 or IPv6 CIDR"]),
        ("203.0.113.7/32,0.0.0.0/0", ["is not an IPv4 or IPv6 CIDR"]),
        ("203.0.113.7", ["'203.0.113.7' is an address without a prefix length", "write 203.0.113.7/32"]),
        ("2001:db8::7", ["is an address without a prefix length", "write 2001:db8::7/128"]),
        (
            "10.0.0.1/24",
            [
                "'10.0.0.1/24' has host bits set",
                "(the range it names is 10.0.0.0/24)",
                "write 10.0.0.0/24",
                "10.0.0.1/32",
            ],
        ),
        ("203.0.113.7/0", ["has host bits set", "0.0.0.0/0"]),  # not read as the open world, not accepted either
        ("2001:db8::1/64", ["has host bits set", "write 2001:db8::/64", "2001:db8::1/128"]),
        ("2001:DB8::/64", ["is not written in its canonical form: write 2001:db8::/64"]),
        ("2001:db8:0:0::/64", ["canonical form: write 2001:db8::/64"]),
    ],
)
def test_malformed_values_are_refused_never_rewritten(value, pieces):
    result = check_admin_cidr(value)
    assert result["problem"], result
    for piece in pieces:
        assert piece in result["problem"]
    # The opt-in does not make a malformed value acceptable.
    assert check_admin_cidr(value, allow_open_world=True)["problem"] == result["problem"]


def test_the_filter_takes_the_opt_in_as_ansible_passes_it():
    assert admin_cidr_check("0.0.0.0/0", "true")["problem"] is None
    assert admin_cidr_check("0.0.0.0/0", False)["problem"]
    with pytest.raises(AnsibleFilterError, match="admin_cidr_check"):
        admin_cidr_check("0.0.0.0/0", "perhaps")
