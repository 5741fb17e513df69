#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ec2_cluster_lookup
short_description: Check what an amx.cluster EC2 cluster needs in the account before anything is created
version_added: 0.2.0
description:
  - Read-only calls, in one process and one client, that find what would stop the cluster in the account and
    region, and what its creation needs. The credentials and the region (DescribeRegions); the worker count the
    last run recorded on the cluster's master; the base image (O(image_id), or the newest available image of
    O(image_owners) named O(image_name_pattern)) and whether it is usable; the subnet (O(vpc_subnet_id), or the
    default VPC's default subnet); and whether a security group or key pair named O(resource_name) exists without
    the cluster's tag, which the cluster must not take over.
  - It fails with every problem it found, each with what to change. The credentials and the region are checked
    first, and when they fail nothing else is asked.
author:
  - amx.cluster developers (@amx-cluster)
options:
  cluster_name:
    description: The cluster's name (its C(amx.cluster/cluster) tag).
    type: str
    required: true
  resource_name:
    description: The name of the cluster's security group and key pair.
    type: str
    required: true
  image_id:
    description: The base image's id; empty to look it up by O(image_owners) and O(image_name_pattern).
    type: str
    default: ""
  image_owners:
    description: The owners of the images O(image_name_pattern) is matched against.
    type: list
    elements: str
    default: []
  image_name_pattern:
    description: The name pattern of the base image (C(*) and C(?) as in the EC2 API's filters).
    type: str
    default: ""
  image_architecture:
    description: The architecture the base image must have.
    type: str
    default: x86_64
  root_volume_size:
    description: The root volume's size in GiB; the base image's root snapshot must not be larger.
    type: int
    required: true
  vpc_subnet_id:
    description: The subnet to launch into; empty for the default VPC's default subnet.
    type: str
    default: ""
  availability_zone:
    description: The zone of the default subnet; empty for the first zone that has one.
    type: str
    default: ""
notes:
  - Supports check mode (it changes nothing in any mode).
extends_documentation_fragment:
  - amx.cluster.ec2_cluster_aws
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Check the account for the cluster demo before creating it
  amx.cluster.ec2_cluster_lookup:
    cluster_name: demo
    resource_name: amx-demo
    image_owners: ["099720109477"]
    image_name_pattern: ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*
    root_volume_size: 100
    region: eu-west-1
  register: lookup
"""

RETURN = r"""
recorded_worker_count:
  description: The worker count the last run recorded on the cluster's master, or null (no master, no record).
  returned: success
  type: int
  sample: 3
image:
  description: The base image.
  returned: success
  type: dict
  contains:
    image_id:
      description: Its id.
      type: str
      sample: ami-0123456789abcdef0
    name:
      description: Its name.
      type: str
      sample: ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-20250115
    root_device_name:
      description: The device name of its root volume.
      type: str
      sample: /dev/sda1
    root_size:
      description: The size in GiB of its root snapshot (0 when the image does not say).
      type: int
      sample: 8
subnet_id:
  description: The subnet the nodes launch into.
  returned: success
  type: str
  sample: subnet-0123456789abcdef0
vpc_id:
  description: The VPC of that subnet.
  returned: success
  type: str
  sample: vpc-0123456789abcdef0
key_pair_exists:
  description: Whether a key pair named O(resource_name) exists (the cluster's, since a foreign one fails).
  returned: success
  type: bool
  sample: false
"""

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_aws import (
    AUTH_ERRORS,
    AWS_ERRORS,
    HAS_BOTO3,
    explain,
    module_client,
)
from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_nodes import (
    ROLE_MASTER,
    TAG_CLUSTER,
    TAG_ROLE,
    TAG_WORKER_COUNT,
)

if HAS_BOTO3:
    import botocore.exceptions

# The states of an instance that still counts as the cluster's master.
LIVE_STATES = ["pending", "running", "stopping", "stopped"]
RECORDED_COUNT = re.compile(r"^[0-9]{1,5}$")


def access_problem(exc: BaseException, region: str) -> str:
    """Why DescribeRegions failed, as the fix: no credentials, credentials refused, or no answer in the region."""
    said = (str(exc).splitlines() or [""])[0]
    code = exc.response.get("Error", {}).get("Code", "") if hasattr(exc, "response") else ""
    if HAS_BOTO3 and isinstance(exc, botocore.exceptions.NoCredentialsError):
        advice = (
            "no AWS credentials found: export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, export AWS_PROFILE or"
            " set ec2_cluster_aws_profile, or run `aws configure`."
        )
    elif code in AUTH_ERRORS:
        advice = (
            "AWS refused the credentials: check the access key and secret (or renew the session) of the profile in use."
        )
    else:
        advice = (
            f"AWS did not answer in region {region}: check that ec2_cluster_region is a region this account may use"
            " (`aws ec2 describe-regions` lists them) and that the controller reaches AWS."
        )
    return f"{advice} (AWS said: {said})"


def recorded_worker_count(client: Any, cluster_name: str) -> Optional[int]:
    """The worker count on the master's tag, when there is a master and the tag is a count."""
    filters = [
        {"Name": f"tag:{TAG_CLUSTER}", "Values": [cluster_name]},
        {"Name": f"tag:{TAG_ROLE}", "Values": [ROLE_MASTER]},
        {"Name": "instance-state-name", "Values": LIVE_STATES},
    ]
    for reservation in client.describe_instances(Filters=filters).get("Reservations", []):
        for instance in reservation.get("Instances", []):
            tags = {tag["Key"]: tag["Value"] for tag in instance.get("Tags", [])}
            value = tags.get(TAG_WORKER_COUNT, "")
            if tags.get(TAG_CLUSTER) == cluster_name and RECORDED_COUNT.match(value):
                return int(value)
    return None


def base_image(client: Any, params: Dict[str, Any], region: str) -> Tuple[Optional[Dict[str, Any]], List[str]]:
    """The base image, or the problem with it."""
    if params["image_id"]:
        images = client.describe_images(Filters=[{"Name": "image-id", "Values": [params["image_id"]]}])["Images"]
        missing = (
            f"image {params['image_id']} does not exist in {region} (or is not visible to this account): check the"
            " id, AMI ids differ between regions."
        )
    else:
        filters = [
            {"Name": "name", "Values": [params["image_name_pattern"]]},
            {"Name": "architecture", "Values": [params["image_architecture"]]},
            {"Name": "state", "Values": ["available"]},
        ]
        images = client.describe_images(Owners=params["image_owners"], Filters=filters)["Images"]
        missing = (
            f"no {params['image_architecture']} image named {params['image_name_pattern']} owned by"
            f" {', '.join(params['image_owners'])} in {region}: change ec2_cluster_image_name_pattern or"
            " ec2_cluster_image_owners, or set ec2_cluster_image_id."
        )
    if not images:
        return None, [missing]
    image = max(images, key=lambda found: found.get("CreationDate", ""))
    root = image.get("RootDeviceName", "")
    root_size = next(
        (
            int(mapping.get("Ebs", {}).get("VolumeSize") or 0)
            for mapping in image.get("BlockDeviceMappings", [])
            if mapping.get("DeviceName") == root
        ),
        0,
    )
    found = {
        "image_id": image["ImageId"],
        "name": image.get("Name", ""),
        "root_device_name": root,
        "root_size": root_size,
    }
    state, architecture = image.get("State", ""), image.get("Architecture", "")
    if (
        state == "available"
        and architecture == params["image_architecture"]
        and params["root_volume_size"] >= root_size
    ):
        return found, []
    return found, [
        f"image {found['image_id']} ({found['name']}) is {state}, {architecture}, with a {root_size} GiB root"
        f" snapshot: it must be available, {params['image_architecture']}, and no larger than"
        f" ec2_cluster_root_volume_size ({params['root_volume_size']} GiB); choose another image or raise the volume"
        " size."
    ]


def subnet(client: Any, params: Dict[str, Any], region: str) -> Tuple[Optional[Dict[str, Any]], List[str]]:
    """The subnet to launch into, or the problem with it."""
    if params["vpc_subnet_id"]:
        found = client.describe_subnets(Filters=[{"Name": "subnet-id", "Values": [params["vpc_subnet_id"]]}])
        if found["Subnets"]:
            return found["Subnets"][0], []
        return None, [
            f"subnet {params['vpc_subnet_id']} does not exist in {region}: check the id (subnet ids differ between"
            " regions), or leave ec2_cluster_vpc_subnet_id empty for the default VPC."
        ]
    zone = params["availability_zone"]
    filters = [{"Name": "default-for-az", "Values": ["true"]}]
    if zone:
        filters.append({"Name": "availability-zone", "Values": [zone]})
    subnets = client.describe_subnets(Filters=filters)["Subnets"]
    if subnets:
        return min(subnets, key=lambda found: found.get("AvailabilityZone", "")), []
    if zone:
        return None, [
            f"{region} has no default VPC subnet in {zone}: set ec2_cluster_vpc_subnet_id to a subnet to launch"
            " into, or ec2_cluster_availability_zone to another zone."
        ]
    return None, [f"{region} has no default VPC subnet: set ec2_cluster_vpc_subnet_id to a subnet to launch into."]


def taken_names(client: Any, params: Dict[str, Any], vpc_id: str) -> Tuple[bool, List[str]]:
    """Whether the cluster's key pair exists, and the problem when its name or the security group's is another's."""
    name = params["resource_name"]
    groups = client.describe_security_groups(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "group-name", "Values": [name]}]
    )["SecurityGroups"]
    keys = client.describe_key_pairs(Filters=[{"Name": "key-name", "Values": [name]}])["KeyPairs"]

    def foreign(found: List[Dict[str, Any]]) -> bool:
        tags = {tag["Key"]: tag["Value"] for tag in (found[0].get("Tags") or [])} if found else {}
        return bool(found) and tags.get(TAG_CLUSTER) != params["cluster_name"]

    others = [what for what, found in (("a security group", groups), ("a key pair", keys)) if foreign(found)]
    if not others:
        return bool(keys), []
    return bool(keys), [
        f"{' and '.join(others)} named {name} already exist{'s' if len(others) == 1 else ''} without the tag"
        f" {TAG_CLUSTER}={params['cluster_name']}, so not as part of this cluster: choose another ec2_cluster_name,"
        " or delete or rename what is there."
    ]


def main() -> None:
    module = AnsibleAWSModule(
        argument_spec=dict(
            cluster_name=dict(type="str", required=True),
            resource_name=dict(type="str", required=True),
            image_id=dict(type="str", default=""),
            image_owners=dict(type="list", elements="str", default=[]),
            image_name_pattern=dict(type="str", default=""),
            image_architecture=dict(type="str", default="x86_64"),
            root_volume_size=dict(type="int", required=True),
            vpc_subnet_id=dict(type="str", default=""),
            availability_zone=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    params = module.params
    client = module_client(module)
    region = client.meta.region_name
    try:
        regions = sorted(found["RegionName"] for found in client.describe_regions()["Regions"])
    except AWS_ERRORS as exc:
        module.fail_json(msg=access_problem(exc, region))
    if region not in regions:
        module.fail_json(
            msg=f"region {region} is not among the regions these credentials may use ({', '.join(regions)}): set"
            " ec2_cluster_region to one of them, or opt in to the region first."
        )

    step, grant = "reading the cluster's master", "ec2:DescribeInstances"
    try:
        recorded = recorded_worker_count(client, params["cluster_name"])
        step, grant = "looking up the base image", "ec2:DescribeImages"
        image, problems = base_image(client, params, region)
        step, grant = "looking up the subnet", "ec2:DescribeSubnets"
        chosen, found = subnet(client, params, region)
        problems += found
        key_pair_exists = False
        if chosen:
            step = "looking for a security group and a key pair of the cluster's name"
            grant = "ec2:DescribeSecurityGroups and ec2:DescribeKeyPairs"
            key_pair_exists, found = taken_names(client, params, chosen["VpcId"])
            problems += found
    except AWS_ERRORS as exc:
        module.fail_json(msg=explain(exc, region, step, grant))
    if problems:
        module.fail_json(msg=" ".join(problems))
    module.exit_json(
        changed=False,
        recorded_worker_count=recorded,
        image=image,
        subnet_id=chosen["SubnetId"],
        vpc_id=chosen["VpcId"],
        key_pair_exists=key_pair_exists,
    )


if __name__ == "__main__":
    main()
