# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared values and helpers of the EC2 integration tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

REPO = pathlib.Path(__file__).resolve().parents[3]
VENV_BIN = REPO / ".venv" / "bin"
PLAYBOOKS = REPO / "playbooks"
HERE = pathlib.Path(__file__).resolve().parent
REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
# Dummy credentials (moto takes any), distinctive enough to search for in what reaches the nodes.
ACCESS_KEY_ID = "AKIAAMXCLUSTERTESTS1"
SECRET_ACCESS_KEY = "amx-cluster-tests-secret-never-on-a-node"

# Canonical's owner id and Ubuntu 24.04 names, as the role's defaults look for them: an older and a newer amd64
# image (the newer must win) and an arm64 one (the wrong architecture must be skipped); and an Ubuntu 20.04 image,
# as the blog preset (playbooks/vars/blog-recipe.yml) looks for it.
CANONICAL = "099720109477"
BASE_IMAGE = "ami-0a1b2c3d4e5f60002"
FOCAL_IMAGE = "ami-0a1b2c3d4e5f60010"
AMIS = [
    {
        "ami_id": ami_id,
        "name": f"ubuntu/images/{volume}/ubuntu-{release}-{arch_name}-server-{date}",
        "description": f"Canonical, Ubuntu, {release[-5:]} LTS, {arch_name}",
        "owner_id": CANONICAL,
        "public": True,
        "virtualization_type": "hvm",
        "architecture": arch,
        "state": "available",
        "platform": None,
        "image_type": "machine",
        "hypervisor": "xen",
        "root_device_name": "/dev/sda1",
        "root_device_type": "ebs",
        "sriov": "simple",
        "creation_date": f"{date[:4]}-{date[4:6]}-{date[6:]}T00:00:00.000Z",
    }
    for ami_id, volume, release, arch, arch_name, date in [
        ("ami-0a1b2c3d4e5f60001", "hvm-ssd-gp3", "noble-24.04", "x86_64", "amd64", "20250101"),
        (BASE_IMAGE, "hvm-ssd-gp3", "noble-24.04", "x86_64", "amd64", "20250601"),
        ("ami-0a1b2c3d4e5f60003", "hvm-ssd-gp3", "noble-24.04", "arm64", "arm64", "20250701"),
        (FOCAL_IMAGE, "hvm-ssd", "focal-20.04", "x86_64", "amd64", "20230101"),
    ]
]


@dataclass
class Run:
    args: List[str]
    returncode: int
    output: str
    recap: Dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def explain(self) -> str:
        command = " ".join(self.args)
        return f"{command}\nexit {self.returncode} after {self.seconds:.1f}s\n{self.output[-6000:]}"


RECAP = re.compile(r"^localhost\s+:\s+(.*)$", re.MULTILINE)


def parse_recap(output: str) -> Dict[str, int]:
    matches = RECAP.findall(output)
    if not matches:
        return {}
    return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", matches[-1])}


def cluster_resources(ec2, cluster: str) -> Dict[str, List[str]]:
    """Everything in moto that carries the cluster's tag (terminated instances excluded)."""
    tag = [{"Name": "tag:amx.cluster/cluster", "Values": [cluster]}]
    live = {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped", "shutting-down"]}
    return {
        "instances": [
            i["InstanceId"]
            for r in ec2.describe_instances(Filters=[*tag, live])["Reservations"]
            for i in r["Instances"]
        ],
        "images": [i["ImageId"] for i in ec2.describe_images(Owners=["self"], Filters=tag)["Images"]],
        "snapshots": [s["SnapshotId"] for s in ec2.describe_snapshots(OwnerIds=["self"], Filters=tag)["Snapshots"]],
        "security_groups": [g["GroupId"] for g in ec2.describe_security_groups(Filters=tag)["SecurityGroups"]],
        "key_pairs": [k["KeyName"] for k in ec2.describe_key_pairs(Filters=tag)["KeyPairs"]],
        "launch_templates": [
            t["LaunchTemplateId"] for t in ec2.describe_launch_templates(Filters=tag)["LaunchTemplates"]
        ],
    }


def anything_created(ec2) -> Dict[str, List[str]]:
    """What exists in moto beyond its defaults (default VPC, subnets, security groups, the AMIs it was given)."""
    return {
        "instances": [i["InstanceId"] for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]],
        "images": [i["ImageId"] for i in ec2.describe_images(Owners=["self"])["Images"]],
        "security_groups": [
            g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"] if g["GroupName"] != "default"
        ],
        "key_pairs": [k["KeyName"] for k in ec2.describe_key_pairs()["KeyPairs"]],
        "launch_templates": [t["LaunchTemplateId"] for t in ec2.describe_launch_templates()["LaunchTemplates"]],
    }


def base_vars(cluster: str, **extra: Any) -> Dict[str, Any]:
    """The variables of a cloud-only provision against moto."""
    values: Dict[str, Any] = {
        "ec2_cluster_name": cluster,
        "ec2_cluster_region": REGION,
        "ec2_cluster_admin_cidr": "203.0.113.7/32",
        "ec2_cluster_configure_nodes": False,
    }
    values.update(extra)
    return values


def launch(ec2, count: int, role: Optional[str], cluster: str, **tags: str) -> List[Dict[str, Any]]:
    """`count` instances in one request, tagged as members of `cluster` with `role` (None: no role tag), in
    launch-index order."""
    all_tags = {"amx.cluster/cluster": cluster, **tags}
    if role is not None:
        all_tags["amx.cluster/role"] = role
    reservation = ec2.run_instances(
        ImageId=BASE_IMAGE,
        InstanceType="m7i.large",
        MinCount=count,
        MaxCount=count,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in all_tags.items()]}],
    )
    return sorted(reservation["Instances"], key=lambda i: i["AmiLaunchIndex"])


def ad_hoc(aws_env: Dict[str, str], tmp_path: pathlib.Path, module: str, args: str, *extra: str) -> Tuple[Any, Dict]:
    """`ansible localhost -m amx.cluster.<module> -a <args>` with the tests' environment: the process, and the
    module's result as the tree callback wrote it (which leaves ``failed`` out: the exit status says it)."""
    tree = tmp_path / "tree"
    empty = tmp_path / "empty-inventory.yml"
    empty.write_text("all: {}\n")
    command = [str(VENV_BIN / "ansible"), "localhost", "-i", str(empty), "-m", f"amx.cluster.{module}"]
    proc = subprocess.run(
        [*command, "-a", args, "--tree", str(tree), *extra],
        cwd=REPO,
        env=dict(aws_env, ANSIBLE_LOAD_CALLBACK_PLUGINS="1"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc, json.loads((tree / "localhost").read_text())
