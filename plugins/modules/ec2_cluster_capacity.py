#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ec2_cluster_capacity
short_description: Check that an amx.cluster EC2 cluster fits the account's vCPU quota and the user's cap
version_added: 0.1.0
description:
  - Reads the vCPUs of O(instance_type) (DescribeInstanceTypes) and the account's vCPU quota for its instance
    class (Service Quotas GetServiceQuota, for example C(L-1216C47A) "Running On-Demand Standard instances"), and
    fails, before anything is created, when O(node_count) nodes would need more vCPUs than the quota or than
    O(max_vcpus).
  - Read-only. When the Service Quotas API does not answer (no permission, an EC2 stand-in without it, an
    instance class whose quota is not known), only O(max_vcpus) applies; RV(quota_source) says why.
  - The quota is shared with the account's other instances of the class in the region; only the cluster's own
    nodes are counted.
author:
  - amx.cluster developers (@amx-cluster)
options:
  cluster_name:
    description: The cluster's name, for the messages.
    type: str
    required: true
  instance_type:
    description: The instance type of every node.
    type: str
    required: true
  node_count:
    description: The number of nodes, the master included.
    type: int
    required: true
  max_vcpus:
    description: The most vCPUs the cluster may use; V(0) for no cap of the user's own.
    type: int
    required: true
  spot:
    description: The nodes are spot instances (the spot quota applies).
    type: bool
    default: false
notes:
  - Supports check mode (it changes nothing in any mode).
  - O(endpoint_url) serves both APIs (EC2 and Service Quotas).
extends_documentation_fragment:
  - amx.cluster.ec2_cluster_aws
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Check that 8 r7iz.metal-16xl nodes fit
  amx.cluster.ec2_cluster_capacity:
    cluster_name: demo
    instance_type: r7iz.metal-16xl
    node_count: 8
    max_vcpus: 1024
    region: eu-west-1
"""

RETURN = r"""
vcpus_per_node:
  description: The default vCPUs of the instance type.
  returned: success
  type: int
  sample: 64
vcpus_needed:
  description: O(node_count) times RV(vcpus_per_node).
  returned: success
  type: int
  sample: 512
quota:
  description: The account's vCPU quota for the instance class, or null when it could not be read.
  returned: success
  type: float
  sample: 640.0
quota_source:
  description: Where RV(quota) came from, or why there is none.
  returned: success
  type: str
  sample: "service-quotas L-1216C47A"
"""

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_aws import AWS_ERRORS, explain, module_client
from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_capacity import capacity_error, quota_code


def main() -> None:
    module = AnsibleAWSModule(
        argument_spec=dict(
            cluster_name=dict(type="str", required=True),
            instance_type=dict(type="str", required=True),
            node_count=dict(type="int", required=True),
            max_vcpus=dict(type="int", required=True),
            spot=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    instance_type = params["instance_type"]
    client = module_client(module)
    region = client.meta.region_name
    try:
        types = client.describe_instance_types(InstanceTypes=[instance_type]).get("InstanceTypes", [])
    except AWS_ERRORS as exc:
        action = f"reading the vCPUs of instance type {instance_type}"
        module.fail_json(msg=explain(exc, region, action, "ec2:DescribeInstanceTypes"))
    if not types:
        module.fail_json(
            msg=f"instance type {instance_type} is not offered in {region}: set ec2_cluster_instance_type to one "
            "that is (`aws ec2 describe-instance-types` lists them)"
        )
    vcpus = int(types[0].get("VCpuInfo", {}).get("DefaultVCpus", 0))
    if vcpus < 1:
        module.fail_json(msg=f"AWS gave no vCPU count for {instance_type} in {region}")

    quota = None
    code = quota_code(instance_type, params["spot"])
    if code is None:
        source = f"unknown: no vCPU quota is known for {instance_type}'s instance class"
    else:
        try:
            quotas = module_client(module, "service-quotas")
            answer = quotas.get_service_quota(ServiceCode="ec2", QuotaCode=code[0])
            quota = float(answer["Quota"]["Value"])
            source = f"service-quotas {code[0]}"
        except AWS_ERRORS as exc:
            # No permission (servicequotas:GetServiceQuota), or an API without the quota: the cap still applies.
            source = "unavailable: " + explain(exc, region, f"reading quota {code[0]}")
        except (KeyError, TypeError, ValueError):
            source = f"unavailable: the answer for quota {code[0]} had no value"

    try:
        error = capacity_error(
            params["cluster_name"],
            region,
            instance_type,
            params["node_count"],
            vcpus,
            params["max_vcpus"],
            quota,
            code[1] if code else "",
        )
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    result = dict(
        changed=False,
        vcpus_per_node=vcpus,
        vcpus_needed=vcpus * params["node_count"],
        quota=quota,
        quota_source=source,
    )
    if error:
        module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
