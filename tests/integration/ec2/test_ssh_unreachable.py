# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A new node that SSH does not reach: provision fails with the likely causes, not the wait's raw error.

moto's instances never answer SSH, which is the failure under test. So that the wait talks to 127.0.0.1's network
only, the cluster goes into a subnet of 127.0.0.0/16 (moto accepts it; AWS would not) and is reached on its private
addresses: the master's address is a loopback one, where nothing listens on port 22.
"""

from __future__ import annotations

import socket

import pytest
from ec2_helpers import PLAYBOOKS, base_vars

CLUSTER = "ssh"


def test_a_node_without_ssh_fails_with_its_likely_causes(ec2, playbook):
    vpc = ec2.create_vpc(CidrBlock="127.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="127.0.0.0/24")["Subnet"]["SubnetId"]
    extra = base_vars(
        CLUSTER,
        ec2_cluster_configure_nodes=True,
        ec2_cluster_vpc_subnet_id=subnet,
        ec2_cluster_use_private_address=True,
        ec2_cluster_ssh_timeout=2,
        ec2_cluster_worker_count=1,
    )

    run = playbook(PLAYBOOKS / "provision.yml", extra)

    assert run.returncode != 0, run.explain()
    masters = ec2.describe_instances(Filters=[{"Name": "tag:amx.cluster/cluster", "Values": [CLUSTER]}])
    address = masters["Reservations"][0]["Instances"][0]["PrivateIpAddress"]
    assert address.startswith("127.0.0."), address
    with socket.socket() as probe:
        probe.settimeout(1)
        if probe.connect_ex((address, 22)) == 0:
            pytest.fail(f"something listens on {address}:22 on this machine: the test needs that port closed")
    output = " ".join(run.output.split())
    assert f"cluster {CLUSTER}: SSH does not answer on master ({address}): " in output, run.explain()
    assert "Likely causes, the likeliest first, and what was checked:" in output
    # AWS_ENDPOINT_URL (the tests' environment) points at moto: a local API, named with its fix.
    assert "not AWS: a local stand-in (moto) has no machines behind its instances" in output
    assert "pass -e ec2_cluster_configure_nodes=false" in output
    # The controller reaches 127.0.0.x from 127.0.0.1, outside the admin CIDR; the group's rule as moto holds it.
    assert (
        "the controller connects from 127.0.0.1, outside ec2_cluster_admin_cidr 203.0.113.7/32, the only range the "
        "security group lets reach port 22: provision again with -e ec2_cluster_admin_cidr=127.0.0.1/32"
    ) in output
    assert f"the security group amx-{CLUSTER} lets 203.0.113.7/32 reach port 22, as it should" in output
    assert "ec2_cluster_ssh_timeout=2 s" in output
    assert run.recap.get("rescued") == 1, run.explain()
