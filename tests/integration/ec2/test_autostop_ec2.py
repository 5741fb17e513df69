# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cloud side of the autostop, against the local EC2 API: the nodes' initiated-shutdown behaviour (what the
node's own `shutdown -h now` does) follows ec2_cluster_idle_action at launch and on nodes that exist already; a
stopped master is listed by the inventory plugin in group stopped, train.yml refuses the cluster naming
provision.yml, and provision.yml starts it again.

The node side (the checker, its timer, the decision) runs in a container: tests/integration/autostop/.
moto cannot run the node's shutdown, so the test stops the instance through the API as the node's shutdown would.
"""

from __future__ import annotations

import pytest
from ec2_helpers import PLAYBOOKS, base_vars

CLUSTER = "idle"

pytestmark = pytest.mark.slow


def behaviours(ec2):
    found = {}
    for reservation in ec2.describe_instances(Filters=[{"Name": "tag:amx.cluster/cluster", "Values": [CLUSTER]}])[
        "Reservations"
    ]:
        for instance in reservation["Instances"]:
            if instance["State"]["Name"] == "terminated":
                continue
            name = {t["Key"]: t["Value"] for t in instance["Tags"]}["Name"]
            value = ec2.describe_instance_attribute(
                InstanceId=instance["InstanceId"], Attribute="instanceInitiatedShutdownBehavior"
            )["InstanceInitiatedShutdownBehavior"]["Value"]
            found[name] = (instance["InstanceId"], instance["State"]["Name"], value)
    return found


def test_shutdown_behaviour_stopped_nodes_and_their_start(ec2, playbook, inventory_file, inventory_list):
    extra = base_vars(
        CLUSTER,
        ec2_cluster_image_strategy="parallel",
        ec2_cluster_worker_count=1,
        ec2_cluster_instance_type="m7i.large",
    )
    first = playbook(PLAYBOOKS / "cloud.yml", extra)
    assert first.returncode == 0, first.explain()
    nodes = behaviours(ec2)
    assert {name: value for name, (_i, _s, value) in nodes.items()} == {"idle-master": "stop", "idle-node1": "stop"}

    # Nodes that exist already take the new action (ModifyInstanceAttribute), and only once.
    terminate = playbook(PLAYBOOKS / "cloud.yml", dict(extra, ec2_cluster_idle_action="terminate"))
    assert terminate.returncode == 0, terminate.explain()
    assert {value for (_i, _s, value) in behaviours(ec2).values()} == {"terminate"}
    assert terminate.recap["changed"] >= 1
    again = playbook(PLAYBOOKS / "cloud.yml", dict(extra, ec2_cluster_idle_action="terminate"))
    assert again.returncode == 0 and again.recap["changed"] == 0, again.explain()
    # The master's idle checker ran `shutdown -h now`, and the instance stopped (the API's stop stands in for it).
    master_id = behaviours(ec2)["idle-master"][0]
    ec2.stop_instances(InstanceIds=[master_id])
    inventory = inventory_file(CLUSTER)
    listed, data = inventory_list(inventory)
    assert listed.returncode == 0, listed.explain()
    assert data["stopped"]["hosts"] == ["master"] and data["cluster"]["hosts"] == ["node1"]
    words = " ".join(listed.output.split())
    assert f"master is not running (master {master_id} stopped)" in words
    assert "Start it again with playbooks/provision.yml" in words

    refused = playbook(PLAYBOOKS / "train.yml", inventory=inventory)
    assert refused.returncode != 0
    words = " ".join(refused.output.split())
    assert "Nodes of the cluster are stopped: master" in words, refused.explain()
    assert f"ansible-playbook -i {inventory} playbooks/provision.yml" in words, refused.explain()
    assert refused.recap.get("changed", 0) == 0

    # status.yml from the inventory alone (no SSH to moto's instances): the stopped master, the running worker, its
    # price (m7i.large is not in the collection's table: the test gives one).
    status = playbook(
        PLAYBOOKS / "status.yml",
        {"ec2_cluster_configure_nodes": False, "status_prices": {"m7i.large": 0.2016}},
        inventory=inventory,
    )
    assert status.returncode == 0, status.explain()
    words = " ".join(status.output.split())
    assert f"master | stopped | m7i.large | {master_id}" in words, status.explain()
    node1 = behaviours(ec2)["idle-node1"][0]
    assert f"node1 | running | m7i.large | {node1} | up 0:0" in words, status.explain()
    assert "not asked | $0.2016/h, $0.0" in words, status.explain()
    assert "no training job running" in words
    assert "cost: $0.2016/h for the running nodes" in words

    started = playbook(PLAYBOOKS / "provision.yml", extra, inventory=inventory)
    assert started.returncode == 0, started.explain()
    assert behaviours(ec2)["idle-master"][1] == "running"
    listed, data = inventory_list(inventory)
    assert data["cluster"]["hosts"] == ["master", "node1"] and "stopped" not in data
