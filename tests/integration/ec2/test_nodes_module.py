# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The amx.cluster.ec2_cluster_nodes module against the local EC2 API: naming, tagging, check mode, errors."""

from __future__ import annotations

import ec2_helpers
from ec2_helpers import REGION


def launch(ec2, count, role, cluster="mod", **tags):
    return ec2_helpers.launch(ec2, count, role, cluster, **tags)


def run_module(aws_env, tmp_path, *extra, args="cluster_name=mod region=" + REGION):
    """ansible localhost -m amx.cluster.ec2_cluster_nodes: the process and its result."""
    return ec2_helpers.ad_hoc(aws_env, tmp_path, "ec2_cluster_nodes", args, *extra)


def tags_of(ec2, instance_id):
    reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    return {t["Key"]: t["Value"] for t in reservations[0]["Instances"][0]["Tags"]}


def test_names_and_pins_in_check_mode_then_for_real(ec2, aws_env, tmp_path):
    master = launch(ec2, 1, "master")[0]
    workers = launch(ec2, 2, "worker")

    proc, checked = run_module(aws_env, tmp_path, "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert checked["changed"] is True
    assert sorted(checked["tagged"]) == sorted([master["InstanceId"], *(w["InstanceId"] for w in workers)])
    assert "amx.cluster/node-index" not in tags_of(ec2, workers[0]["InstanceId"])  # check mode wrote nothing

    proc, done = run_module(aws_env, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [(n["name"], n["instance_id"]) for n in done["nodes"]] == [
        ("master", master["InstanceId"]),
        ("node1", workers[0]["InstanceId"]),
        ("node2", workers[1]["InstanceId"]),
    ]
    assert tags_of(ec2, workers[1]["InstanceId"])["amx.cluster/node-index"] == "2"
    assert tags_of(ec2, workers[1]["InstanceId"])["Name"] == "mod-node2"
    assert done["nodes"][1]["hostvars"]["ansible_host"] == workers[0]["PublicIpAddress"]

    proc, again = run_module(aws_env, tmp_path)
    assert proc.returncode == 0
    assert again["changed"] is False
    assert again["tagged"] == []


def test_two_masters_fail_with_the_ids(ec2, aws_env, tmp_path):
    masters = launch(ec2, 2, "master")
    proc, result = run_module(aws_env, tmp_path)
    assert proc.returncode != 0
    assert "2 instances are tagged amx.cluster/role=master" in result["msg"]
    assert all(m["InstanceId"] in result["msg"] for m in masters)


def behaviour_of(ec2, instance_id):
    return ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="instanceInitiatedShutdownBehavior")[
        "InstanceInitiatedShutdownBehavior"
    ]["Value"]


def test_shutdown_behavior_in_check_mode_then_for_real_then_unchanged(ec2, aws_env, tmp_path):
    master = launch(ec2, 1, "master")[0]
    worker = launch(ec2, 1, "worker")[0]
    ec2.stop_instances(InstanceIds=[worker["InstanceId"]])  # a stopped node takes it too
    ids = sorted([master["InstanceId"], worker["InstanceId"]])
    args = f"cluster_name=mod region={REGION} tag_nodes=false states=running,stopped shutdown_behavior=terminate"

    proc, checked = run_module(aws_env, tmp_path, "--check", args=args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert checked["changed"] is True and sorted(checked["shutdown_behavior_set"]) == ids
    assert behaviour_of(ec2, master["InstanceId"]) == "stop"  # EC2's default; check mode wrote nothing

    proc, done = run_module(aws_env, tmp_path, args=args)
    assert proc.returncode == 0 and sorted(done["shutdown_behavior_set"]) == ids
    assert [behaviour_of(ec2, instance_id) for instance_id in ids] == ["terminate", "terminate"]

    proc, again = run_module(aws_env, tmp_path, args=args)
    assert proc.returncode == 0 and again["changed"] is False and again["shutdown_behavior_set"] == []
