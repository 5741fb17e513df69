# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input to the cloud part: each case is a clear error, and nothing exists in the EC2 API afterwards.

Each case runs playbooks/cloud.yml against the local EC2 API with one thing wrong, and checks the message (what is
wrong and what to do) and that moto holds no instance, image, security group, key pair or launch template.
"""

from __future__ import annotations

import pytest
from ec2_helpers import PLAYBOOKS, anything_created, base_vars

CLUSTER = "bad"


def without_credentials(env):
    env = dict(env)
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        env.pop(key)
    return env


CASES = [
    pytest.param(
        {"ec2_cluster_admin_cidr": ""},
        None,
        ["ec2_cluster_admin_cidr is not set", "203.0.113.7/32"],
        id="no-admin-cidr",
    ),
    pytest.param(
        {"ec2_cluster_admin_cidr": "0.0.0.0/0"},
        None,
        ["opens SSH to the whole internet", "ec2_cluster_allow_open_world=true"],
        id="open-world-cidr-without-opt-in",
    ),
    pytest.param(
        {"ec2_cluster_admin_cidr": "::/0"},
        None,
        ["opens SSH to the whole internet"],
        id="open-world-ipv6-cidr-without-opt-in",
    ),
    pytest.param(
        {"ec2_cluster_admin_cidr": "203.0.113.300/32"},
        None,
        ["is not an IPv4 or IPv6", "CIDR"],
        id="malformed-cidr",
    ),
    pytest.param(
        {"ec2_cluster_admin_cidr": "1.0.0.0/8"},
        None,
        ["ec2_cluster_admin_cidr 1.0.0.0/8 opens SSH to a large part of the internet", "ec2_cluster_allow_open_world"],
        id="wide-ipv4-cidr-without-opt-in",
    ),
    pytest.param(
        {"ec2_cluster_admin_cidr": "2001:db8::/32"},
        None,
        ["ec2_cluster_admin_cidr 2001:db8::/32 opens SSH to a large part of the internet", "/48"],
        id="wide-ipv6-cidr-without-opt-in",
    ),
    pytest.param(
        {"ec2_cluster_admin_cidr": "10.0.0.1/24"},
        None,
        ["'10.0.0.1/24' has host bits set", "write 10.0.0.0/24", "10.0.0.1/32"],
        id="cidr-with-host-bits",
    ),
    pytest.param(
        {"ec2_cluster_admin_cidr": "203.0.113.7/0"},
        None,
        ["'203.0.113.7/0' has host bits set", "0.0.0.0/0"],
        id="open-world-cidr-in-disguise",
    ),
    pytest.param(
        {"ec2_cluster_region": "eu-nowhere-9"},
        None,
        ["AWS did not answer in region eu-nowhere-9", "aws ec2 describe-regions"],
        id="unknown-region",
    ),
    pytest.param(
        {"ec2_cluster_region": "mars"},
        None,
        ["which is not an AWS region name", "eu-west-1"],
        id="malformed-region",
    ),
    pytest.param(
        {},
        without_credentials,
        ["no AWS credentials found", "AWS_ACCESS_KEY_ID", "AWS_PROFILE"],
        id="no-credentials",
    ),
    pytest.param(
        {"ec2_cluster_worker_count": -1},
        None,
        ["ec2_cluster_worker_count is -1", "0 or more"],
        id="negative-worker-count",
    ),
    pytest.param(
        {"ec2_cluster_worker_count": "three"},
        None,
        ["ec2_cluster_worker_count", "int"],
        id="worker-count-not-a-number",
    ),
    pytest.param(
        {"ec2_cluster_image_id": "ami-0123456789abcdef0"},
        None,
        ["image ami-0123456789abcdef0 does not exist in us-east-1", "AMI ids differ between regions"],
        id="image-does-not-exist",
    ),
    pytest.param(
        {"ec2_cluster_image_name_pattern": "ubuntu/images/*/ubuntu-oracular-*"},
        None,
        ["no x86_64 image named ubuntu/images/*/ubuntu-oracular-* owned by 099720109477"],
        id="no-image-matches-the-pattern",
    ),
    pytest.param(
        {"ec2_cluster_public_key_file": "~/.ssh/missing.pub"},
        None,
        ["the public key ~/.ssh/missing.pub does not exist", "ec2_cluster_key_mode=create"],
        id="missing-public-key",
    ),
    pytest.param(
        {"ec2_cluster_name": "no_underscores"},
        None,
        ['ec2_cluster_name is "no_underscores"', "letters, digits or hyphens"],
        id="bad-cluster-name",
    ),
    pytest.param(
        {"ec2_cluster_idle_minutes": -5},
        None,
        ["ec2_cluster_idle_minutes (-5) must be 0 (autostop off) or more"],
        id="negative-idle-minutes",
    ),
    pytest.param(
        {"ec2_cluster_idle_action": "hibernate"},
        None,
        ["ec2_cluster_idle_action", "hibernate", "stop, terminate"],
        id="unknown-idle-action",
    ),
    pytest.param(
        {"ec2_cluster_spot": True, "ec2_cluster_idle_action": "stop"},
        None,
        ["ec2_cluster_idle_action (stop) stop or terminate (terminate for spot nodes, which cannot be stopped)"],
        id="spot-nodes-cannot-be-stopped",
    ),
]


@pytest.mark.parametrize(("overrides", "env_change", "messages"), CASES)
def test_bad_input_fails_before_anything_is_created(ec2, playbook, aws_env, overrides, env_change, messages):
    env = env_change(aws_env) if env_change else aws_env
    run = playbook(PLAYBOOKS / "cloud.yml", base_vars(CLUSTER, **overrides), env=env)
    assert run.returncode != 0, run.explain()
    output = " ".join(run.output.split())  # messages are folded over several lines
    for message in messages:
        assert message in output, run.explain()
    created = anything_created(ec2)
    assert created == {key: [] for key in created}, run.explain()


def test_foreign_hosts_in_the_cluster_groups_are_refused(ec2, playbook, tmp_path):
    """Provisioning with an inventory whose `cluster` group holds other machines would configure them too."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("cluster:\n  hosts:\n    build-server:\n      ansible_host: 192.0.2.10\n")
    run = playbook(PLAYBOOKS / "cloud.yml", base_vars(CLUSTER), inventory=inventory)
    assert run.returncode != 0, run.explain()
    output = " ".join(run.output.split())
    assert "already has hosts build-server in the groups master/workers/cluster" in output, run.explain()
    assert "-i inventory/ec2_cluster.yml" in output
    created = anything_created(ec2)
    assert created == {key: [] for key in created}


def test_created_key_pair_without_its_private_key_is_refused(ec2, playbook, home):
    """The cluster's created key pair exists in AWS but its private key is gone: no node could be reached."""
    tag = [{"Key": "amx.cluster/cluster", "Value": CLUSTER}]
    ec2.create_key_pair(KeyName="amx-bad", TagSpecifications=[{"ResourceType": "key-pair", "Tags": tag}])
    run = playbook(PLAYBOOKS / "cloud.yml", base_vars(CLUSTER, ec2_cluster_key_mode="create"))
    assert run.returncode != 0, run.explain()
    output = " ".join(run.output.split())
    assert "the key pair amx-bad exists in AWS but its private key" in output, run.explain()
    assert "run playbooks/teardown.yml" in output
    created = anything_created(ec2)
    assert created == {key: (["amx-bad"] if key == "key_pairs" else []) for key in created}


def test_untagged_resources_with_the_cluster_names_are_not_taken_over(ec2, playbook):
    """A security group named amx-<name> that is not the cluster's would be adopted, then torn down: refuse."""
    ec2.create_security_group(GroupName="amx-bad", Description="someone else's")
    run = playbook(PLAYBOOKS / "cloud.yml", base_vars(CLUSTER))
    assert run.returncode != 0, run.explain()
    output = " ".join(run.output.split())
    assert "a security group named amx-bad already exists without the tag amx.cluster/cluster=bad" in output, (
        run.explain()
    )
    assert ec2.describe_instances()["Reservations"] == []
    assert ec2.describe_key_pairs()["KeyPairs"] == []


def test_nothing_happens_without_a_cluster_name(ec2, playbook):
    """Without ec2_cluster_name the cloud part skips cleanly (provision.yml on a fleet without a cloud)."""
    values = base_vars(CLUSTER)
    del values["ec2_cluster_name"]
    run = playbook(PLAYBOOKS / "cloud.yml", values)
    assert run.returncode == 0, run.explain()
    assert run.recap["changed"] == 0
    created = anything_created(ec2)
    assert created == {key: [] for key in created}


def test_a_cluster_beyond_the_vcpu_cap_is_refused_before_anything_exists(ec2, moto, playbook, home):
    """20 workers of r7iz.metal-16xl (64 vCPUs each) need 1344 vCPUs, more than the default cap (1024).

    moto's Service Quotas API knows no EC2 quota (it answers NoSuchResource), so here the cap refuses; where AWS
    answers, the account's quota is compared the same way (unit tests of ec2_cluster_capacity).
    """
    moto.start_recording()
    try:
        run = playbook(PLAYBOOKS / "cloud.yml", base_vars(CLUSTER, ec2_cluster_worker_count=20))
    finally:
        moto.stop_recording()
    assert run.returncode != 0, run.explain()
    output = " ".join(run.output.split())
    assert "21 node(s) of r7iz.metal-16xl (64 vCPUs each" in output, run.explain()
    assert "need 1344 vCPUs, more than ec2_cluster_max_vcpus (1024)" in output
    assert "lower ec2_cluster_worker_count (at most 15 with this type)" in output
    created = anything_created(ec2)
    assert created == {key: [] for key in created}, run.explain()
    assert moto.recorded("RunInstances") == []
    # Not even the controller folder of the cluster's files exists.
    assert not (home / ".ansible" / "amx_cluster").exists()
