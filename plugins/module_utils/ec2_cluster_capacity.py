# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Does a requested EC2 cluster fit the account's limits? Pure rules, no AWS calls.

EC2 limits running instances by vCPUs per instance class, one Service Quotas quota per class and market
(on-demand or spot). ``quota_code`` names the quota of an instance type; ``capacity_error`` compares what the
cluster needs with that quota (when AWS told it) and with the cap the user set (``ec2_cluster_max_vcpus``).

The quota is shared with every other instance of the class the account runs in the region; the check counts the
cluster's own nodes only, so it catches a request that can never fit, not one that collides with other machines.

Standard library only: the module runs on the controller's Python, which may be 3.8.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

# (instance type prefix, on-demand quota code, spot quota code, the quota's name in the Service Quotas console).
# Families not listed (dl, hpc, trn, mac, u-) have quotas this check does not know: only the cap applies to them.
_QUOTAS = (
    ("inf", "L-1945791B", "L-B5D1601B", "Inf instances"),
    ("vt", "L-DB2E81BA", "L-3819A6DF", "G and VT instances"),
    ("g", "L-DB2E81BA", "L-3819A6DF", "G and VT instances"),
    ("p", "L-417A185B", "L-7212CCBC", "P instances"),
    ("x", "L-7295265B", "L-E3A00192", "X instances"),
    ("f", "L-74FC7D96", "L-88CF9481", "F instances"),
)
_STANDARD = ("L-1216C47A", "L-34B43A08", "Standard (A, C, D, H, I, M, R, T, Z) instances")
_STANDARD_FAMILIES = ("a", "c", "d", "h", "i", "m", "r", "t", "z")
_TYPE_PATTERN = re.compile(r"^([a-z]+)[0-9]+[a-z0-9-]*\.[a-z0-9-]+$")


def quota_code(instance_type: str, spot: bool = False) -> Optional[Tuple[str, str]]:
    """The Service Quotas code and name of the vCPU quota that bounds this instance type, or None if unknown."""
    match = _TYPE_PATTERN.match(instance_type or "")
    if not match:
        return None
    family = match.group(1)
    market = "Running On-Demand" if not spot else "All Spot Instance Requests for"
    for prefix, on_demand, spot_code, name in _QUOTAS:
        if family.startswith(prefix):
            return (spot_code if spot else on_demand), f"{market} {name}"
    if family[0] in _STANDARD_FAMILIES and not family.startswith(("dl", "hpc", "trn", "mac")):
        return (_STANDARD[1] if spot else _STANDARD[0]), f"{market} {_STANDARD[2]}"
    return None


def capacity_error(
    cluster: str,
    region: str,
    instance_type: str,
    node_count: int,
    vcpus_per_node: int,
    max_vcpus: int,
    quota: Optional[float] = None,
    quota_name: str = "",
) -> Optional[str]:
    """Why the cluster cannot be launched (a message naming the variable to change), or None when it fits.

    max_vcpus 0 means no cap of the user's own; quota None means AWS did not tell the quota.
    """
    if node_count < 1:
        raise ValueError(f"node_count must be at least 1, got {node_count}")
    if vcpus_per_node < 1:
        raise ValueError(f"vcpus_per_node must be at least 1, got {vcpus_per_node}")
    if max_vcpus < 0:
        return f"ec2_cluster_max_vcpus is {max_vcpus}: set it to 0 (no cap) or to the most vCPUs the cluster may use"
    needed = node_count * vcpus_per_node
    what = (
        f"cluster {cluster}: {node_count} node(s) of {instance_type} ({vcpus_per_node} vCPUs each, the master and "
        f"ec2_cluster_worker_count={node_count - 1} workers) need {needed} vCPUs"
    )
    if max_vcpus and needed > max_vcpus:
        return (
            f"{what}, more than ec2_cluster_max_vcpus ({max_vcpus}): lower ec2_cluster_worker_count (at most "
            f"{max(max_vcpus // vcpus_per_node - 1, 0)} with this type), choose a smaller ec2_cluster_instance_type, "
            "or raise ec2_cluster_max_vcpus if you mean it"
        )
    if quota is not None and needed > quota:
        return (
            f"{what}, more than the account's quota in {region} for {quota_name} ({int(quota)} vCPUs): lower "
            f"ec2_cluster_worker_count (at most {max(int(quota) // vcpus_per_node - 1, 0)} with this type), choose a "
            "smaller ec2_cluster_instance_type, or ask AWS for a higher quota (Service Quotas console)"
        )
    return None
