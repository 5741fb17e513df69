# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The whole cloud flow against a local EC2 API (moto): provision, inventory, provision again, teardown.

Node configuration is switched off (ec2_cluster_configure_nodes=false): moto's instances have no SSH server. Every
other step runs for real: the amazon.aws modules, the ec2_cluster_nodes module, the inventory plugin.
"""

from __future__ import annotations

import base64
import json
import pathlib

import pytest
from ec2_helpers import ACCESS_KEY_ID, BASE_IMAGE, PLAYBOOKS, REGION, SECRET_ACCESS_KEY, cluster_resources

HERE_PLAYBOOKS = pathlib.Path(__file__).resolve().parent / "playbooks"
CLUSTER = "flow"
ADMIN_CIDR = "203.0.113.7/32"


def make_bystanders(ec2):
    """Resources the teardown must leave alone: untagged ones, and ones of another cluster."""
    vpc = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"][0]["VpcId"]
    other_tag = [{"Key": "amx.cluster/cluster", "Value": "other"}]
    bystanders = {
        "security_groups": [
            ec2.create_security_group(GroupName="keep-me", Description="untagged", VpcId=vpc)["GroupId"],
            ec2.create_security_group(
                GroupName="amx-other",
                Description="another cluster",
                VpcId=vpc,
                TagSpecifications=[{"ResourceType": "security-group", "Tags": other_tag}],
            )["GroupId"],
        ],
        "key_pairs": [ec2.create_key_pair(KeyName="keep-me")["KeyName"]],
        "instances": [
            i["InstanceId"]
            for i in ec2.run_instances(ImageId=BASE_IMAGE, InstanceType="m7i.large", MinCount=1, MaxCount=1)[
                "Instances"
            ]
            + ec2.run_instances(
                ImageId=BASE_IMAGE,
                InstanceType="m7i.large",
                MinCount=1,
                MaxCount=1,
                TagSpecifications=[
                    {"ResourceType": "instance", "Tags": [*other_tag, {"Key": "amx.cluster/role", "Value": "master"}]}
                ],
            )["Instances"]
        ],
    }
    return bystanders


def still_there(ec2, bystanders):
    groups = {g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]}
    keys = {k["KeyName"] for k in ec2.describe_key_pairs()["KeyPairs"]}
    running = {
        i["InstanceId"]
        for r in ec2.describe_instances(Filters=[{"Name": "instance-state-name", "Values": ["running"]}])[
            "Reservations"
        ]
        for i in r["Instances"]
    }
    return {
        "security_groups": [g for g in bystanders["security_groups"] if g in groups],
        "key_pairs": [k for k in bystanders["key_pairs"] if k in keys],
        "instances": [i for i in bystanders["instances"] if i in running],
    }


def cluster_instances(ec2):
    reservations = ec2.describe_instances(
        Filters=[
            {"Name": "tag:amx.cluster/cluster", "Values": [CLUSTER]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ]
    )["Reservations"]
    instances = [i for r in reservations for i in r["Instances"]]
    return {next(t["Value"] for t in i["Tags"] if t["Key"] == "Name"): i for i in instances}


@pytest.mark.slow
def test_provision_inventory_reprovision_teardown(ec2, playbook, inventory_file, inventory_list, tmp_path, home):
    bystanders = make_bystanders(ec2)
    inventory = inventory_file(CLUSTER)
    report = tmp_path / "report.json"
    # The cluster's name, region and endpoint come from the inventory plugin (export_settings), as they would
    # with `-i inventory/ec2_cluster.yml`; only the admin CIDR is given on the command line.
    extra = {
        "ec2_cluster_admin_cidr": ADMIN_CIDR,
        "ec2_cluster_configure_nodes": False,
        "inventory_report": str(report),
    }

    # --- first provision
    first = playbook(HERE_PLAYBOOKS / "provision_report.yml", extra, inventory=inventory)
    assert first.returncode == 0, first.explain()
    assert first.recap["failed"] == 0, first.explain()

    nodes = cluster_instances(ec2)
    assert sorted(nodes) == ["flow-master", "flow-node1", "flow-node2", "flow-node3"], first.explain()
    master = nodes["flow-master"]
    workers = [nodes[f"flow-node{n}"] for n in (1, 2, 3)]
    tags = {name: {t["Key"]: t["Value"] for t in i["Tags"]} for name, i in nodes.items()}
    assert tags["flow-master"]["amx.cluster/role"] == "master"
    assert tags["flow-master"]["amx.cluster/node-index"] == "0"
    assert [tags[f"flow-node{n}"]["amx.cluster/node-index"] for n in (1, 2, 3)] == ["1", "2", "3"]
    assert all(tags[f"flow-node{n}"]["amx.cluster/role"] == "worker" for n in (1, 2, 3))

    # The master comes from the newest Ubuntu 24.04 amd64 image; the workers from the image baked of the master.
    assert master["ImageId"] == BASE_IMAGE
    images = ec2.describe_images(Owners=["self"], Filters=[{"Name": "tag:amx.cluster/cluster", "Values": [CLUSTER]}])[
        "Images"
    ]
    assert len(images) == 1
    baked = images[0]
    assert baked["Name"].startswith("amx-flow-")
    assert baked["SourceInstanceId"] == master["InstanceId"]
    assert {t["Key"] for t in baked["Tags"]} >= {"amx.cluster/cluster", "amx.cluster/fingerprint"}
    assert {w["ImageId"] for w in workers} == {baked["ImageId"]}

    # Every node: the requested type, IMDSv2 only, encrypted root volume, the cluster's group and key, lifetime.
    group = ec2.describe_security_groups(Filters=[{"Name": "group-name", "Values": ["amx-flow"]}])["SecurityGroups"][0]
    for instance in [master, *workers]:
        assert instance["InstanceType"] == "r7iz.metal-16xl"
        assert instance["MetadataOptions"]["HttpTokens"] == "required"
        assert instance["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
        assert instance["KeyName"] == "amx-flow"
        assert [g["GroupId"] for g in instance["SecurityGroups"]] == [group["GroupId"]]
        volume_ids = [b["Ebs"]["VolumeId"] for b in instance["BlockDeviceMappings"]]
        volumes = ec2.describe_volumes(VolumeIds=volume_ids)["Volumes"]
        assert [(v["Size"], v["Encrypted"], v["VolumeType"]) for v in volumes] == [(100, True, "gp3")]
        behaviour = ec2.describe_instance_attribute(
            InstanceId=instance["InstanceId"], Attribute="instanceInitiatedShutdownBehavior"
        )["InstanceInitiatedShutdownBehavior"]["Value"]
        # The autostop is on by default with the action "stop": a node's own shutdown stops its instance.
        assert behaviour == "stop"
        user_data = ec2.describe_instance_attribute(InstanceId=instance["InstanceId"], Attribute="userData")
        script = base64.b64decode(user_data["UserData"]["Value"]).decode()
        assert script.startswith("#cloud-config")
        assert "lifetime_minutes=720" in script
        # What a node receives from the cloud (its user data) never carries the controller's credentials.
        assert ACCESS_KEY_ID not in script and SECRET_ACCESS_KEY not in script
    assert len({i["SubnetId"] for i in [master, *workers]}) == 1

    # The security group: SSH from the admin CIDR only, everything from its own members, nothing open to the world.
    rules = group["IpPermissions"]
    ssh = [r for r in rules if r.get("FromPort") == 22]
    assert [(r["IpProtocol"], r["ToPort"], [x["CidrIp"] for x in r["IpRanges"]]) for r in ssh] == [
        ("tcp", 22, [ADMIN_CIDR])
    ]
    own = [r for r in rules if r["IpProtocol"] == "-1"]
    assert [[p["GroupId"] for p in r["UserIdGroupPairs"]] for r in own] == [[group["GroupId"]]]
    assert not [x for r in rules for x in r.get("IpRanges", []) if x["CidrIp"] == "0.0.0.0/0"]

    # The in-memory inventory handed to the node plays.
    built = json.loads(report.read_text())
    assert built["groups"] == {
        "master": ["master"],
        "workers": ["node1", "node2", "node3"],
        "cluster": ["master", "node1", "node2", "node3"],
    }
    by_name = {"master": master, **{f"node{n}": workers[n - 1] for n in (1, 2, 3)}}
    known_hosts = str(home / ".ansible" / "amx_cluster" / CLUSTER / REGION / "known_hosts")
    for name, instance in by_name.items():
        hostvars = built["hostvars"][name]
        assert hostvars["ec2_instance_id"] == instance["InstanceId"]
        assert hostvars["ansible_host"] == instance["PublicIpAddress"]
        assert hostvars["ansible_user"] == "ubuntu"
        assert hostvars["ansible_ssh_private_key_file"] == "~/.ssh/id_ed25519"
        assert "StrictHostKeyChecking=accept-new" in hostvars["ansible_ssh_common_args"]
        assert f"UserKnownHostsFile={known_hosts}" in hostvars["ansible_ssh_common_args"]

    # --- the dynamic inventory finds the same cluster
    listed, data = inventory_list(inventory)
    assert listed.returncode == 0, listed.explain()
    assert data["master"]["hosts"] == ["master"]
    assert data["workers"]["hosts"] == ["node1", "node2", "node3"]
    assert data["cluster"]["hosts"] == ["master", "node1", "node2", "node3"]
    for name, instance in by_name.items():
        hostvars = data["_meta"]["hostvars"][name]
        assert hostvars["ec2_instance_id"] == instance["InstanceId"]
        assert hostvars["ansible_host"] == instance["PublicIpAddress"]
        assert hostvars["ec2_node_index"] == (0 if name == "master" else int(name[4:]))
    assert data["_meta"]["hostvars"]["node1"]["ec2_cluster_name"] == CLUSTER  # exported on the group all

    # --- a second provision changes nothing
    second = playbook(HERE_PLAYBOOKS / "provision_report.yml", extra, inventory=inventory)
    assert second.returncode == 0, second.explain()
    assert second.recap["changed"] == 0, second.explain()
    assert {name: i["InstanceId"] for name, i in cluster_instances(ec2).items()} == {
        name: i["InstanceId"] for name, i in nodes.items()
    }
    assert json.loads(report.read_text()) == built

    # --- teardown removes every tagged resource and nothing else
    state_dir = home / ".ansible" / "amx_cluster" / CLUSTER
    assert state_dir.is_dir()
    # moto answers every placement-group call with HTTP 500, so the teardown does not look for one here.
    teardown_vars = {"ec2_cluster_teardown_placement_group": False}
    down = playbook(PLAYBOOKS / "teardown.yml", teardown_vars, inventory=inventory)
    assert down.returncode == 0, down.explain()
    left = cluster_resources(ec2, CLUSTER)
    assert left == {key: [] for key in left}, left
    assert (
        ec2.describe_snapshots(SnapshotIds=[], Filters=[{"Name": "description", "Values": [f"*{baked['ImageId']}*"]}])[
            "Snapshots"
        ]
        == []
    )
    assert still_there(ec2, bystanders) == bystanders
    assert not state_dir.exists()

    print(
        f"\ntimings: provision {first.seconds:.1f}s, inventory {listed.seconds:.1f}s, provision again "
        f"{second.seconds:.1f}s, teardown {down.seconds:.1f}s (region {REGION})"
    )


def worker_names(ec2):
    return sorted(name for name in cluster_instances(ec2) if name != f"{CLUSTER}-master")


@pytest.mark.slow
def test_resize_acts_on_the_nodes_that_exist_and_the_size_lasts(ec2, playbook, inventory_file, tmp_path):
    """Shrink then grow with -e: the run's inventory holds exactly the nodes that exist, and a plain run keeps the
    size chosen last (recorded on the master), instead of going back to the default of 3 workers."""
    inventory = inventory_file(CLUSTER)
    report = tmp_path / "report.json"
    extra = {
        "ec2_cluster_admin_cidr": ADMIN_CIDR,
        "ec2_cluster_configure_nodes": False,
        "inventory_report": str(report),
    }

    def provision(**overrides):
        run = playbook(HERE_PLAYBOOKS / "provision_report.yml", {**extra, **overrides}, inventory=inventory)
        assert run.returncode == 0, run.explain()
        return run, json.loads(report.read_text())["groups"]

    def recorded_size():
        master = cluster_instances(ec2)[f"{CLUSTER}-master"]
        return {t["Key"]: t["Value"] for t in master["Tags"]}.get("amx.cluster/worker-count")

    _run, groups = provision(ec2_cluster_worker_count=2)
    assert groups["workers"] == ["node1", "node2"]
    assert worker_names(ec2) == ["flow-node1", "flow-node2"]
    assert recorded_size() == "2"

    # Shrink: node2 is terminated, and the rest of the run (the inventory the node plays get) no longer has it,
    # although the inventory plugin listed it when the run started.
    run, groups = provision(ec2_cluster_worker_count=1)
    assert worker_names(ec2) == ["flow-node1"]
    assert groups == {"master": ["master"], "workers": ["node1"], "cluster": ["master", "node1"]}, run.explain()
    assert recorded_size() == "1"

    # A plain run keeps the size chosen last: nothing launched, nothing changed.
    run, groups = provision()
    assert worker_names(ec2) == ["flow-node1"], run.explain()
    assert groups["workers"] == ["node1"]
    assert run.recap["changed"] == 0, run.explain()

    # Grow again: the new worker is in this run's inventory.
    run, groups = provision(ec2_cluster_worker_count=2)
    assert worker_names(ec2) == ["flow-node1", "flow-node2"]
    assert groups == {"master": ["master"], "workers": ["node1", "node2"], "cluster": ["master", "node1", "node2"]}
    assert recorded_size() == "2"
