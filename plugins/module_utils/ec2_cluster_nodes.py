# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who is who in an amx.cluster EC2 cluster: the tags, the names, the order.

Pure functions shared by the ``amx.cluster.ec2_cluster`` inventory plugin and the
``amx.cluster.ec2_cluster_nodes`` module, so that the in-memory inventory built while provisioning
and the dynamic inventory read later name every instance the same way.

The rules:

* an instance belongs to cluster ``C`` when its tag ``amx.cluster/cluster`` is ``C``;
* its role tag ``amx.cluster/role`` is ``master`` or ``worker`` (anything else is ignored);
* the master is named ``master`` (node index 0); there can be at most one;
* a worker is named ``node<i>`` where ``i`` is its ``amx.cluster/node-index`` tag (1, 2, ...);
  workers without a usable tag (missing, malformed, 0, or a duplicate of an older worker's) get the
  lowest free indexes, in launch order: launch time, then launch index within one launch request,
  then instance id. Launch time alone is not enough: instances launched in one request share it.

Standard library only: the module runs on the controller's Python, which may be 3.8.
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

TAG_CLUSTER = "amx.cluster/cluster"
TAG_ROLE = "amx.cluster/role"
TAG_NODE_INDEX = "amx.cluster/node-index"
# The worker count each run records on the master: a later run that does not set one keeps that size.
TAG_WORKER_COUNT = "amx.cluster/worker-count"
TAG_NAME = "Name"
ROLE_MASTER = "master"
ROLE_WORKER = "worker"
ROLES = (ROLE_MASTER, ROLE_WORKER)
MASTER_NAME = "master"
WORKER_PREFIX = "node"
INSTANCE_STATES = ("pending", "running", "shutting-down", "terminated", "stopping", "stopped")
# A cluster name, as the ec2_cluster role accepts it: it also names AWS resources (amx-<name>), and it must hold no
# `*` or `?`, which EC2 tag filters read as wildcards (two clusters would merge).
CLUSTER_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9-]{0,39}"
_ASCII_NUMBER = re.compile(r"[0-9]+")


class ClusterLayoutError(ValueError):
    """The instances found cannot form a cluster; the message says which ones and what to do."""


# The inventory plugin reads only files whose name ends so (the convention of Ansible's inventory plugins).
INVENTORY_FILE_SUFFIXES = ("ec2_cluster.yml", "ec2_cluster.yaml")
_NAMES_THE_PLUGIN = re.compile(r"^plugin:\s*[\"']?(?:amx\.cluster\.)?ec2_cluster[\"']?\s*(?:#.*)?$", re.MULTILINE)


def misnamed_inventory_file(path: str, text: str) -> Optional[str]:
    """Why the inventory plugin will not read ``path`` although the file (``text``) names it, with the fix; None
    when the name is right or the file names another plugin. Says nothing of the file's contents."""
    if path.endswith(INVENTORY_FILE_SUFFIXES) or not _NAMES_THE_PLUGIN.search(text):
        return None
    folder, name = path.rpartition("/")[::2]
    stem = name.rsplit(".", 1)[0] if name.endswith((".yml", ".yaml")) else name
    suggested = f"{folder}/{stem}.ec2_cluster.yml" if folder else f"{stem}.ec2_cluster.yml"
    return (
        f"{path} names the amx.cluster.ec2_cluster inventory plugin, which reads only files whose name ends in "
        f"{' or '.join(INVENTORY_FILE_SUFFIXES)}: rename it, for example to {suggested}"
    )


def tags_to_dict(tags: Optional[Iterable[Mapping[str, str]]]) -> Dict[str, str]:
    """Turn EC2's ``[{"Key": k, "Value": v}]`` into ``{k: v}``."""
    return {tag["Key"]: tag.get("Value", "") for tag in tags or ()}


def check_cluster_name(cluster_name: Any) -> str:
    """The cluster name when it is one the role accepts; ClusterLayoutError saying the rule otherwise."""
    if not isinstance(cluster_name, str) or not re.fullmatch(CLUSTER_NAME_PATTERN, cluster_name):
        raise ClusterLayoutError(
            f"the cluster name {cluster_name!r} is not valid: use 1-40 letters, digits or hyphens, starting with a "
            "letter or digit (the name ec2_cluster_name gave the cluster)"
        )
    return cluster_name


def of_cluster(instances: Iterable[Mapping[str, Any]], cluster_name: str) -> List[Mapping[str, Any]]:
    """The instances whose cluster tag is exactly ``cluster_name`` (boto3 shape, ``Tags`` as a list).

    The server-side tag filter is the fast path; this re-check makes the answer exact whatever the API matched.
    """
    return [item for item in instances if tags_to_dict(item.get("Tags")).get(TAG_CLUSTER) == cluster_name]


def cluster_filters(cluster_name: str, states: Sequence[str]) -> List[Dict[str, Any]]:
    """Server-side DescribeInstances filters for the cluster's instances in the given states."""
    check_cluster_name(cluster_name)
    unknown = [state for state in states if state not in INSTANCE_STATES]
    if unknown or not states:
        raise ClusterLayoutError(
            "instance states {} are not EC2 instance states; use some of: {}".format(
                ", ".join(unknown) or "(none)", ", ".join(INSTANCE_STATES)
            )
        )
    return [
        {"Name": f"tag:{TAG_CLUSTER}", "Values": [cluster_name]},
        {"Name": "instance-state-name", "Values": list(states)},
    ]


_ISO_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6})\d*)?(Z|[+-]\d{2}:?\d{2})?$")


def _iso_utc(value: Any) -> str:
    """A launch time, from a datetime or an EC2 timestamp string, as UTC text that sorts in time order."""
    if isinstance(value, str):
        match = _ISO_TIME.match(value.strip())
        if not match:
            return value
        date, clock, fraction, zone = match.groups()
        value = datetime.datetime.strptime(f"{date}T{clock}.{(fraction or '0').ljust(6, '0')}", "%Y-%m-%dT%H:%M:%S.%f")
        if zone and zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            hours, minutes = int(zone[1:3]), int(zone[-2:])
            value = value - sign * datetime.timedelta(hours=hours, minutes=minutes)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return str(value or "")


def simplify_instance(instance: Mapping[str, Any], region: str) -> Dict[str, Any]:
    """Keep what naming and hostvars need from one DescribeInstances entry, as JSON-safe values."""
    placement = instance.get("Placement") or {}
    state = instance.get("State") or {}
    return {
        "instance_id": instance["InstanceId"],
        "instance_type": instance.get("InstanceType", ""),
        "image_id": instance.get("ImageId", ""),
        "state": state.get("Name", ""),
        "launch_time": _iso_utc(instance.get("LaunchTime")),
        "ami_launch_index": int(instance.get("AmiLaunchIndex") or 0),
        "private_ip_address": instance.get("PrivateIpAddress") or "",
        "public_ip_address": instance.get("PublicIpAddress") or "",
        "private_dns_name": instance.get("PrivateDnsName") or "",
        "public_dns_name": instance.get("PublicDnsName") or "",
        "availability_zone": placement.get("AvailabilityZone", ""),
        "placement_group": placement.get("GroupName", ""),
        "subnet_id": instance.get("SubnetId", ""),
        "vpc_id": instance.get("VpcId", ""),
        "lifecycle": instance.get("InstanceLifecycle") or "on-demand",
        "region": region,
        "tags": tags_to_dict(instance.get("Tags")),
    }


def parse_node_index(value: Any) -> Optional[int]:
    """The node index a tag value carries, or None when it is not a plain non-negative integer."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    text = str(value or "").strip()
    # str.isdigit() also accepts digits int() refuses (superscripts) and other scripts' digits: ASCII only.
    if not _ASCII_NUMBER.fullmatch(text):
        return None
    return int(text)


def launch_order(instance: Mapping[str, Any]) -> Tuple[str, int, str]:
    """Sort key: launch time, then launch index within the request, then id (a total order)."""
    return (instance.get("launch_time", ""), int(instance.get("ami_launch_index", 0)), instance["instance_id"])


def order_nodes(instances: Iterable[Mapping[str, Any]]) -> Tuple[List[Dict[str, Any]], List[str]]:
    """Name the cluster's simplified instances.

    Returns ``(nodes, ignored)``: ``nodes`` is the master (if any) then the workers by node index,
    each a copy of the instance with ``name``, ``node_role``, ``node_index`` and ``index_from_tag``
    added, and ``index_tag_ignored`` (why) on a worker whose node-index tag is set but unusable;
    ``ignored`` lists the ids of instances whose role tag is neither master nor worker.
    Raises ClusterLayoutError when more than one instance is tagged master.
    """
    masters: List[Dict[str, Any]] = []
    workers: List[Dict[str, Any]] = []
    ignored: List[str] = []
    seen = set()
    for instance in instances:
        if instance["instance_id"] in seen:
            continue
        seen.add(instance["instance_id"])
        role = instance.get("tags", {}).get(TAG_ROLE, "")
        if role == ROLE_MASTER:
            masters.append(dict(instance))
        elif role == ROLE_WORKER:
            workers.append(dict(instance))
        else:
            ignored.append(instance["instance_id"])

    if len(masters) > 1:
        ids = ", ".join(sorted(m["instance_id"] for m in masters))
        raise ClusterLayoutError(
            f"{len(masters)} instances are tagged {TAG_ROLE}={ROLE_MASTER} ({ids}): a cluster has one master; "
            "terminate the extra ones (or run teardown.yml and provision again)"
        )

    nodes: List[Dict[str, Any]] = []
    for master in masters:
        master.update(name=MASTER_NAME, node_role=ROLE_MASTER, node_index=0, index_from_tag=False)
        nodes.append(master)

    taken: Dict[int, Dict[str, Any]] = {}
    untagged: List[Dict[str, Any]] = []
    for worker in sorted(workers, key=launch_order):
        raw = worker.get("tags", {}).get(TAG_NODE_INDEX)
        index = parse_node_index(raw)
        if index is not None and index >= 1 and index not in taken:
            worker["index_from_tag"] = True
            taken[index] = worker
            continue
        worker["index_from_tag"] = False
        untagged.append(worker)
        if index is not None and index >= 1:
            worker["index_tag_ignored"] = f"node{index} is {taken[index]['instance_id']}, launched earlier"
        elif str(raw or "").strip():
            worker["index_tag_ignored"] = f"{raw!r} is not a whole number from 1 up"
    free = 1
    for worker in untagged:
        while free in taken:
            free += 1
        taken[free] = worker
    for index in sorted(taken):
        worker = taken[index]
        worker.update(name=f"{WORKER_PREFIX}{index}", node_role=ROLE_WORKER, node_index=index)
        nodes.append(worker)
    return nodes, ignored


def node_address(node: Mapping[str, Any], use_private_address: bool = False) -> str:
    """The address Ansible connects to: the public IP (private when there is none), or the private IP."""
    if use_private_address:
        return node.get("private_ip_address", "")
    return node.get("public_ip_address") or node.get("private_ip_address", "")


def node_hostvars(node: Mapping[str, Any], use_private_address: bool = False) -> Dict[str, Any]:
    """Host variables of one named node, namespaced ``ec2_*`` (never ``tags``, never ``ec2_cluster_*``)."""
    hostvars: Dict[str, Any] = {
        "ec2_instance_id": node["instance_id"],
        "ec2_instance_type": node.get("instance_type", ""),
        "ec2_image_id": node.get("image_id", ""),
        "ec2_state": node.get("state", ""),
        "ec2_launch_time": node.get("launch_time", ""),
        "ec2_ami_launch_index": node.get("ami_launch_index", 0),
        "ec2_private_ip_address": node.get("private_ip_address", ""),
        "ec2_public_ip_address": node.get("public_ip_address", ""),
        "ec2_private_dns_name": node.get("private_dns_name", ""),
        "ec2_public_dns_name": node.get("public_dns_name", ""),
        "ec2_availability_zone": node.get("availability_zone", ""),
        "ec2_placement_group": node.get("placement_group", ""),
        "ec2_subnet_id": node.get("subnet_id", ""),
        "ec2_vpc_id": node.get("vpc_id", ""),
        "ec2_lifecycle": node.get("lifecycle", ""),
        "ec2_region": node.get("region", ""),
        "ec2_tags": dict(node.get("tags", {})),
        "ec2_node_role": node["node_role"],
        "ec2_node_index": node["node_index"],
        "ec2_node_cluster": node.get("tags", {}).get(TAG_CLUSTER, ""),
    }
    address = node_address(node, use_private_address)
    if address:
        hostvars["ansible_host"] = address
    return hostvars


def missing_tags(nodes: Iterable[Mapping[str, Any]], cluster_name: str) -> Dict[str, Dict[str, str]]:
    """The tags to write so that names survive: node index and Name, per instance id, where they differ."""
    result: Dict[str, Dict[str, str]] = {}
    for node in nodes:
        wanted = {
            TAG_NODE_INDEX: str(node["node_index"]),
            TAG_NAME: "{}-{}".format(cluster_name, node["name"]),
        }
        tags = node.get("tags", {})
        diff = {key: value for key, value in wanted.items() if tags.get(key) != value}
        if diff:
            result[node["instance_id"]] = diff
    return result
