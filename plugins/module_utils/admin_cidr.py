# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The admin CIDR of the cluster's security group: parsed, refused when malformed or not written in its canonical
form, and refused when it opens SSH to a large part of the internet without the opt-in.

"A large part of the internet" is a public range wider than MAX_PUBLIC_PREFIX allows: an IPv4 prefix
shorter than /16 (more than 65,536 addresses) or an IPv6 prefix shorter than /48 (more than one site). Ranges that
lie wholly inside a private, shared or loopback block (PRIVATE_NETWORKS) are no part of the internet and may be as
wide as they like.
"""

from __future__ import annotations

import ipaddress
from typing import Dict, Optional, Union

Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]

# The shortest prefix accepted for a public range without the opt-in, per IP version.
MAX_PUBLIC_PREFIX = {4: 16, 6: 48}

# Blocks that are not routed on the internet: RFC 1918, shared address space (RFC 6598), loopback, link-local,
# IPv6 unique-local (RFC 4193).
PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(block)
    for block in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "fc00::/7",
        "fe80::/10",
        "::1/128",
    )
)

VARIABLE = "ec2_cluster_admin_cidr"
OPT_IN = "ec2_cluster_allow_open_world"
EXAMPLE = "203.0.113.7/32 or 2001:db8::/64"


def is_private(network: Network) -> bool:
    """True when the whole range lies in one of PRIVATE_NETWORKS."""
    return any(
        network.version == block.version and network.subnet_of(block)  # type: ignore[arg-type]
        for block in PRIVATE_NETWORKS
    )


def check_admin_cidr(value: object, allow_open_world: bool = False) -> Dict[str, Optional[str]]:
    """Check one admin CIDR. Returns ``{'cidr': canonical form or None, 'problem': None or what is wrong and what to
    write instead}``. The value is never rewritten: a value that is not already the canonical form of a network is
    a problem, whose message gives the form to write."""
    if not isinstance(value, str) or not value:
        return {
            "cidr": None,
            "problem": f"{VARIABLE} is not set: set it to the address range you SSH from, such as your public "
            "address as a /32 (e.g. -e ec2_cluster_admin_cidr=203.0.113.7/32); only it may reach port 22.",
        }
    shown = repr(value)
    if "/" not in value:
        try:
            address = ipaddress.ip_address(value)
        except ValueError:
            address = None
        if address is not None:
            return {
                "cidr": None,
                "problem": f"{VARIABLE} {shown} is an address without a prefix length: write "
                f"{address}/{address.max_prefixlen} for this one address, or the range you SSH from.",
            }
    try:
        network = ipaddress.ip_network(value, strict=False)
    except ValueError:
        return {
            "cidr": None,
            "problem": f"{VARIABLE} {shown} is not an IPv4 or IPv6 CIDR: write an address and a prefix length, "
            f"such as {EXAMPLE}.",
        }
    if "/" not in value:  # a name ipaddress read as a network without a prefix (an integer, say)
        return {
            "cidr": None,
            "problem": f"{VARIABLE} {shown} is not an IPv4 or IPv6 CIDR: write an address and a prefix length, "
            f"such as {EXAMPLE}.",
        }
    canonical = str(network)
    address_part = value.split("/", 1)[0]
    if network.network_address != ipaddress.ip_address(address_part):
        single = f"{address_part}/{network.max_prefixlen}"
        return {
            "cidr": None,
            "problem": f"{VARIABLE} {shown} has host bits set (the range it names is {canonical}): write {canonical} "
            f"for that range, or {single} for the one address.",
        }
    if canonical != value:
        return {
            "cidr": None,
            "problem": f"{VARIABLE} {shown} is not written in its canonical form: write {canonical}.",
        }
    bound = MAX_PUBLIC_PREFIX[network.version]
    if not allow_open_world and network.prefixlen < bound and not is_private(network):
        if network.prefixlen == 0:
            reach = "opens SSH to the whole internet"
        else:
            reach = (
                f"opens SSH to a large part of the internet (a public /{network.prefixlen}; the widest public "
                f"IPv{network.version} range accepted without the opt-in is a /{bound})"
            )
        return {
            "cidr": canonical,
            "problem": f"{VARIABLE} {canonical} {reach}: set it to your own address range (e.g. 203.0.113.7/32), "
            f"or set {OPT_IN}=true if you really want port 22 open that widely.",
        }
    return {"cidr": canonical, "problem": None}
