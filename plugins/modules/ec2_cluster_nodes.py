#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ec2_cluster_nodes
short_description: Name the instances of an amx.cluster EC2 cluster and pin the names with tags
version_added: 0.1.0
description:
  - Lists the instances tagged C(amx.cluster/cluster=<cluster_name>), names them C(master) and
    C(node1..N) exactly as the M(amx.cluster.ec2_cluster) inventory plugin does, and (unless
    O(tag_nodes=false)) writes the C(amx.cluster/node-index) and C(Name) tags of any node whose tags
    do not match its name yet, so the names stay stable on later runs.
  - Workers keep the index their C(amx.cluster/node-index) tag gives; untagged workers get the lowest
    free indexes in launch order (launch time, launch index within a request, instance id).
  - Written because the amazon.aws modules cannot name a fleet consistently with the inventory
    plugin; the instances themselves are launched by M(amazon.aws.ec2_instance).
author:
  - amx.cluster developers (@amx-cluster)
options:
  cluster_name:
    description: The cluster's name, the value of the C(amx.cluster/cluster) tag.
    type: str
    required: true
  states:
    description: Instance states that count as members of the cluster.
    type: list
    elements: str
    default: [pending, running]
  use_private_address:
    description:
      - Use the private IP address as each node's C(ansible_host).
      - When V(false), the public IP address is used where there is one, the private one otherwise.
    type: bool
    default: false
  tag_nodes:
    description: Write the C(amx.cluster/node-index) and C(Name) tags where they are missing or differ.
    type: bool
    default: true
  shutdown_behavior:
    description:
      - When set, the instance-initiated shutdown behaviour every node must have (what C(shutdown -h now) on the
        node does to the instance, V(stop) or V(terminate)); set with ModifyInstanceAttribute where it differs.
      - The autostop and the maximum lifetime of the C(amx.cluster.ec2_cluster) role rely on it.
    type: str
    choices: [stop, terminate]
    version_added: 0.2.0
notes:
  - Supports check mode; in check mode no tag or attribute is written, and the result says whether one would be.
  - An instance tagged with the cluster but with a role other than C(master) or C(worker) is listed in RV(ignored).
extends_documentation_fragment:
  - amx.cluster.ec2_cluster_aws
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Name the nodes of the cluster demo
  amx.cluster.ec2_cluster_nodes:
    cluster_name: demo
    region: eu-west-1
  register: demo_nodes

- name: Name the nodes of the cluster demo, connection options for every AWS module of the block
  module_defaults:
    group/amx.cluster.aws:
      region: eu-west-1
      profile: lab
  block:
    - name: Name the nodes
      amx.cluster.ec2_cluster_nodes:
        cluster_name: demo

- name: Add them to the in-memory inventory
  ansible.builtin.add_host:
    name: "{{ item.name }}"
    groups: "{{ ['cluster', 'master' if item.node_role == 'master' else 'workers'] }}"
    ansible_host: "{{ item.hostvars.ansible_host }}"
  loop: "{{ demo_nodes.nodes }}"
  loop_control:
    label: "{{ item.name }}"
"""

RETURN = r"""
nodes:
  description: The cluster's nodes, the master first, then the workers by node index.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: The node's inventory name, C(master) or C(node<index>).
      type: str
      sample: node1
    node_role:
      description: C(master) or C(worker).
      type: str
      sample: worker
    node_index:
      description: 0 for the master, 1..N for the workers.
      type: int
      sample: 1
    instance_id:
      description: The EC2 instance id.
      type: str
      sample: i-0123456789abcdef0
    state:
      description: The instance state.
      type: str
      sample: running
    hostvars:
      description: The host variables the inventory plugin gives this node (C(ansible_host) and C(ec2_*)).
      type: dict
      sample: {"ansible_host": "203.0.113.10", "ec2_instance_id": "i-0123456789abcdef0", "ec2_node_index": 1}
tagged:
  description: Ids of the instances whose tags were (or in check mode would be) written.
  returned: success
  type: list
  elements: str
  sample: [i-0123456789abcdef0]
shutdown_behavior_set:
  description: Ids of the instances whose shutdown behaviour was (or in check mode would be) changed.
  returned: success
  type: list
  elements: str
  sample: [i-0123456789abcdef0]
ignored:
  description: Ids of instances tagged with the cluster whose role tag is neither master nor worker.
  returned: success
  type: list
  elements: str
  sample: []
"""

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_aws import (
    AWS_ERRORS,
    AwsAccessError,
    describe_cluster_instances,
    explain,
    module_client,
)
from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_nodes import (
    ClusterLayoutError,
    missing_tags,
    node_hostvars,
    order_nodes,
    simplify_instance,
)


def main() -> None:
    module = AnsibleAWSModule(
        argument_spec=dict(
            cluster_name=dict(type="str", required=True),
            states=dict(type="list", elements="str", default=["pending", "running"]),
            use_private_address=dict(type="bool", default=False),
            tag_nodes=dict(type="bool", default=True),
            shutdown_behavior=dict(type="str", choices=["stop", "terminate"]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    cluster_name = params["cluster_name"]
    action = f"listing the instances of cluster {cluster_name!r}"
    client = module_client(module)
    region = client.meta.region_name
    try:
        raw = describe_cluster_instances(client, cluster_name, params["states"])
        nodes, ignored = order_nodes(simplify_instance(instance, region) for instance in raw)
    except (AwsAccessError, ClusterLayoutError) as exc:
        module.fail_json(msg=f"{action}: {exc}")
    except AWS_ERRORS as exc:
        module.fail_json(msg=explain(exc, region, action))

    to_tag = missing_tags(nodes, cluster_name) if params["tag_nodes"] else {}
    if to_tag and not module.check_mode:
        for instance_id, tags in sorted(to_tag.items()):
            try:
                client.create_tags(
                    Resources=[instance_id], Tags=[{"Key": key, "Value": value} for key, value in sorted(tags.items())]
                )
            except AWS_ERRORS as exc:
                module.fail_json(msg=explain(exc, region, f"tagging {instance_id}"))
            for node in nodes:
                if node["instance_id"] == instance_id:
                    node["tags"].update(tags)

    behavior_set = []
    wanted = params["shutdown_behavior"]
    for node in nodes if wanted else []:
        instance_id = node["instance_id"]
        try:
            answer = client.describe_instance_attribute(
                InstanceId=instance_id, Attribute="instanceInitiatedShutdownBehavior"
            )
            if (answer.get("InstanceInitiatedShutdownBehavior") or {}).get("Value") == wanted:
                continue
            behavior_set.append(instance_id)
            if not module.check_mode:
                client.modify_instance_attribute(
                    InstanceId=instance_id, Attribute="instanceInitiatedShutdownBehavior", Value=wanted
                )
        except AWS_ERRORS as exc:
            module.fail_json(msg=explain(exc, region, f"setting the shutdown behaviour of {instance_id}"))

    result = [
        {
            "name": node["name"],
            "node_role": node["node_role"],
            "node_index": node["node_index"],
            "instance_id": node["instance_id"],
            "state": node["state"],
            "hostvars": node_hostvars(node, params["use_private_address"]),
        }
        for node in nodes
    ]
    module.exit_json(
        changed=bool(to_tag or behavior_set),
        nodes=result,
        tagged=sorted(to_tag),
        shutdown_behavior_set=behavior_set,
        ignored=ignored,
    )


if __name__ == "__main__":
    main()
