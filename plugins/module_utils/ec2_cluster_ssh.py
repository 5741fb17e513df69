# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Why the new nodes of a cluster do not answer SSH: the likely causes, in words a user can act on.

The role waits for port 22 on every new instance; when that wait fails, the raw error (``Connection reset by
peer``, a time-out) names no cause. ``unreachable_message`` puts the wait's failures beside what the controller
knows: the EC2 endpoint (a local stand-in's instances never answer), the controller's own address against the admin
CIDR, and the security group's SSH rule as AWS holds it.
"""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ansible_collections.amx.cluster.plugins.module_utils.admin_cidr import is_private

CHECKIP = "curl -s https://checkip.amazonaws.com"

Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]


def failed_waits(results: Sequence[Mapping[str, Any]]) -> List[Dict[str, str]]:
    """The nodes whose wait failed, from the results of a wait looped over the role's node list (each result has
    the node as ``item``): ``[{'name', 'address', 'error'}]`` in the loop's order."""
    failures = []
    for result in results:
        if not result.get("failed"):
            continue
        node = result.get("item") or {}
        hostvars = node.get("hostvars") or {}
        failures.append(
            {
                "name": str(node.get("name") or "?"),
                "address": str(hostvars.get("ansible_host") or ""),
                "error": str(result.get("msg") or "failed").strip(),
            }
        )
    return failures


def controller_address_toward(address: str) -> Optional[str]:
    """The controller's source address for a connection to ``address`` (what the node would see before any NAT),
    or None when it cannot be known. A UDP socket's connect chooses the route and sends nothing."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(address).version == 6 else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((address, 22))
            return str(probe.getsockname()[0])
    except (OSError, ValueError):
        return None


def is_local_api(endpoint_url: str) -> bool:
    """True when the EC2 endpoint is set and is not AWS's own (a local or stand-in API such as moto)."""
    if not endpoint_url:
        return False
    host = (urllib.parse.urlsplit(endpoint_url).hostname or "").lower()
    return not (host.endswith(".amazonaws.com") or host.endswith(".amazonaws.com.cn"))


def _network(value: str) -> Optional[Network]:
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None


def ssh_rule_covers(permissions: Sequence[Mapping[str, Any]], cidr: str) -> bool:
    """True when an ingress rule of the security group (``ip_permissions`` as AWS and amazon.aws give them) lets
    the whole of ``cidr`` reach TCP port 22."""
    wanted = _network(cidr)
    if wanted is None:
        return False
    for rule in permissions:
        protocol = str(rule.get("ip_protocol", ""))
        if protocol == "tcp":
            if not (int(rule.get("from_port", -1)) <= 22 <= int(rule.get("to_port", -1))):
                continue
        elif protocol != "-1":
            continue
        ranges = [r.get("cidr_ip", "") for r in rule.get("ip_ranges") or []]
        ranges += [r.get("cidr_ipv6", "") for r in rule.get("ipv6_ranges") or []]
        for allowed in filter(None, map(_network, ranges)):
            if allowed.version == wanted.version and wanted.subnet_of(allowed):  # type: ignore[arg-type]
                return True
    return False


def _address_cause(admin_cidr: str, controller: Optional[str], node_address: str) -> str:
    admin = _network(admin_cidr)
    fix = f"provision again with -e ec2_cluster_admin_cidr=<that address>/32 ({CHECKIP} gives it)"
    if controller is None or admin is None:
        return f"the address you connect from may be outside ec2_cluster_admin_cidr {admin_cidr}: if so, {fix}"
    source = ipaddress.ip_address(controller)
    node = _network(node_address)
    behind_nat = is_private(ipaddress.ip_network(source)) and node is not None and not is_private(node)
    if behind_nat:
        return (
            f"the controller connects from {controller}, a private address: the nodes see the address of its NAT "
            f"instead, which must be inside ec2_cluster_admin_cidr {admin_cidr}; if it is not, {fix}"
        )
    if source.version == admin.version and source in admin:
        return f"the controller's address {controller} is inside ec2_cluster_admin_cidr {admin_cidr}, as it should be"
    return (
        f"the controller connects from {controller}, outside ec2_cluster_admin_cidr {admin_cidr}, the only range the "
        f"security group lets reach port 22: provision again with -e ec2_cluster_admin_cidr={controller}/"
        f"{source.max_prefixlen} (or your range)"
    )


def unreachable_message(
    cluster: str,
    failures: Sequence[Mapping[str, str]],
    admin_cidr: str,
    group_name: str,
    permissions: Optional[Sequence[Mapping[str, Any]]],
    controller_address: Optional[str],
    endpoint_url: str,
    timeout: int,
) -> str:
    """The error of a failed SSH wait: which nodes, their raw errors, then the likely causes, the likeliest first.

    permissions: the security group's ingress rules as AWS holds them, None when unknown. controller_address: the
    controller's source address toward the first failed node (controller_address_toward), None when unknown.
    """
    nodes = "; ".join(f"{f['name']} ({f['address'] or 'no address'}): {f['error']}" for f in failures)
    causes = []
    if is_local_api(endpoint_url):
        causes.append(
            f"the EC2 endpoint is {endpoint_url}, not AWS: a local stand-in (moto) has no machines behind its "
            "instances, so SSH never answers; pass -e ec2_cluster_configure_nodes=false to create the cloud "
            "resources only"
        )
    first_address = failures[0]["address"] if failures else ""
    causes.append(_address_cause(admin_cidr, controller_address, first_address))
    if permissions is None:
        causes.append(f"the security group {group_name} may have lost its SSH rule: provision again restores it")
    elif ssh_rule_covers(permissions, admin_cidr):
        causes.append(f"the security group {group_name} lets {admin_cidr} reach port 22, as it should")
    else:
        causes.append(
            f"the security group {group_name} has no rule that lets {admin_cidr} reach port 22 (changed outside "
            "the collection?): provision again restores it"
        )
    causes.append(
        "a firewall between the controller and the nodes (outbound port 22 on your network, the subnet's network "
        "ACL, a route table without an internet gateway)"
    )
    causes.append(
        f"the nodes were still booting: the wait lasted ec2_cluster_ssh_timeout={timeout} s (the default is 900)"
    )
    listed = "\n".join(f"  - {cause}" for cause in causes)
    heading = "Likely causes, the likeliest first, and what was checked:"
    return f"cluster {cluster}: SSH does not answer on {nodes}.\n{heading}\n{listed}"
