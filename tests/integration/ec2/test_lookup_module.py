# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The amx.cluster.ec2_cluster_lookup module against the local EC2 API: what it finds, and every problem at once.

The role's own cases (no credentials, an unknown region, an image that does not exist, names taken) run through
playbooks in test_bad_input.py; these are the module's answers themselves, and the problems no playbook case makes.
"""

from __future__ import annotations

import json

import ec2_helpers
from ec2_helpers import BASE_IMAGE, CANONICAL, REGION

NOBLE = "ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*"
ARM64_IMAGE = "ami-0a1b2c3d4e5f60003"


def lookup(aws_env, tmp_path, **args):
    """ansible localhost -m amx.cluster.ec2_cluster_lookup with the role's defaults for cluster lk; its result, with
    ``failed``."""
    given = {
        "cluster_name": "lk",
        "resource_name": "amx-lk",
        "image_owners": [CANONICAL],
        "image_name_pattern": NOBLE,
        "root_volume_size": 100,
        "region": REGION,
        **args,
    }
    proc, found = ec2_helpers.ad_hoc(aws_env, tmp_path, "ec2_cluster_lookup", json.dumps(given))
    return dict(found, failed=proc.returncode != 0)


def test_a_new_cluster_gets_the_newest_image_and_the_first_zones_default_subnet(ec2, aws_env, tmp_path):
    found = lookup(aws_env, tmp_path)
    assert not found.get("failed"), found.get("msg")
    assert found["changed"] is False
    assert found["image"]["image_id"] == BASE_IMAGE  # the newer of two amd64 images; the arm64 one is newer still
    assert found["image"]["root_device_name"] == "/dev/sda1"
    defaults = ec2.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}])["Subnets"]
    first = min(defaults, key=lambda subnet: subnet["AvailabilityZone"])
    assert (found["subnet_id"], found["vpc_id"]) == (first["SubnetId"], first["VpcId"])
    assert found["recorded_worker_count"] is None
    assert found["key_pair_exists"] is False


def test_the_recorded_size_comes_from_the_masters_tag(ec2, aws_env, tmp_path):
    ec2_helpers.launch(ec2, 1, "master", "lk", **{"amx.cluster/worker-count": "5"})
    ec2_helpers.launch(ec2, 1, "master", "other", **{"amx.cluster/worker-count": "9"})
    assert lookup(aws_env, tmp_path)["recorded_worker_count"] == 5


def test_every_problem_comes_at_once_with_its_fix(ec2, aws_env, tmp_path):
    found = lookup(aws_env, tmp_path, image_id=ARM64_IMAGE, vpc_subnet_id="subnet-0000000000000000f")
    assert found.get("failed")
    message = found["msg"]
    assert f"image {ARM64_IMAGE} (" in message and "is available, arm64, with a" in message, message
    assert "it must be available, x86_64, and no larger than ec2_cluster_root_volume_size (100 GiB)" in message
    assert "subnet subnet-0000000000000000f does not exist in us-east-1: check the id" in message


def test_a_zone_without_a_default_subnet_is_named(ec2, aws_env, tmp_path):
    found = lookup(aws_env, tmp_path, availability_zone="us-east-1z")
    assert found.get("failed")
    assert found["msg"] == (
        "us-east-1 has no default VPC subnet in us-east-1z: set ec2_cluster_vpc_subnet_id to a subnet to launch into,"
        " or ec2_cluster_availability_zone to another zone."
    )


def test_a_key_pair_of_the_name_is_the_clusters_only_with_its_tag(ec2, aws_env, tmp_path):
    ec2.create_key_pair(
        KeyName="amx-lk",
        TagSpecifications=[{"ResourceType": "key-pair", "Tags": [{"Key": "amx.cluster/cluster", "Value": "lk"}]}],
    )
    found = lookup(aws_env, tmp_path)
    assert not found.get("failed"), found.get("msg")
    assert found["key_pair_exists"] is True

    ec2.delete_key_pair(KeyName="amx-lk")
    ec2.create_key_pair(KeyName="amx-lk")
    found = lookup(aws_env, tmp_path)
    assert found.get("failed")
    assert found["msg"] == (
        "a key pair named amx-lk already exists without the tag amx.cluster/cluster=lk, so not as part of this"
        " cluster: choose another ec2_cluster_name, or delete or rename what is there."
    )
