# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The worker image is never made of a master that holds the cluster's SSH mesh credentials.

The safe and simple rule: the image is made before the mesh exists (the first provision bakes before ssh_mesh
runs); a later re-bake (the stack or ec2_cluster_bake_revision changed) of a master that holds the mesh key is
refused, and nothing is imaged. Two parts, because moto's instances have no disk and no SSH:

* the check itself (roles/ec2_cluster/tasks/credentials.yml) runs for real on this machine, against a folder of
  the test standing for the master's home;
* the refusal runs the real cloud flow on moto, with the check's result given as an extra variable (the one thing
  mocked: moto cannot run the check on its master). What an image contains cannot be inspected in moto, so the
  test checks the order of operations: no CreateImage request after the refusal, the one image of the first run
  only.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from ec2_helpers import PLAYBOOKS, base_vars, cluster_resources

HERE_PLAYBOOKS = pathlib.Path(__file__).resolve().parent / "playbooks"
CLUSTER = "bake"


def test_the_check_finds_the_mesh_key_in_the_home_folder(playbook, tmp_path):
    node_home = tmp_path / "node-home"
    (node_home / ".ssh").mkdir(parents=True)
    report = tmp_path / "found.json"
    extra = {"__ec2_cluster_node_home": str(node_home), "credentials_report": str(report)}

    run = playbook(HERE_PLAYBOOKS / "master_credentials.yml", extra)
    assert run.returncode == 0, run.explain()
    assert json.loads(report.read_text()) == []

    (node_home / ".ssh" / "cluster").write_text("not a real key\n")
    (node_home / ".ssh" / "cluster.pub").write_text("ssh-ed25519 AAAA cluster\n")
    run = playbook(HERE_PLAYBOOKS / "master_credentials.yml", extra)
    assert run.returncode == 0, run.explain()
    ssh = node_home / ".ssh"
    assert json.loads(report.read_text()) == [str(ssh / "cluster"), str(ssh / "cluster.pub")]
    assert "not a real key" not in run.output

    run = playbook(HERE_PLAYBOOKS / "master_credentials.yml", {**extra, "ssh_mesh_key_name": "other"})
    assert run.returncode == 0, run.explain()
    assert json.loads(report.read_text()) == []


@pytest.mark.slow
def test_a_rebake_of_a_master_with_the_mesh_key_is_refused(ec2, moto, playbook):
    extra = base_vars(CLUSTER, ec2_cluster_worker_count=1)
    first = playbook(PLAYBOOKS / "cloud.yml", extra)
    assert first.returncode == 0, first.explain()
    (image,) = cluster_resources(ec2, CLUSTER)["images"]

    moto.start_recording()
    try:
        again = playbook(
            PLAYBOOKS / "cloud.yml",
            {
                **extra,
                "ec2_cluster_bake_revision": "2",
                "ec2_cluster_worker_count": 2,
                # Stands in for what the check finds on a real master after ssh_mesh ran.
                "__ec2_cluster_master_credentials": ["/home/ubuntu/.ssh/cluster", "/home/ubuntu/.ssh/cluster.pub"],
            },
        )
    finally:
        moto.stop_recording()
    assert again.returncode != 0, again.explain()
    output = " ".join(again.output.split())
    assert "a new image of cluster bake is due" in output, again.explain()
    assert "holds the cluster's SSH mesh credentials (/home/ubuntu/.ssh/cluster, /home/ubuntu/.ssh/cluster.pub)" in (
        output
    )
    assert moto.recorded("CreateImage") == []
    assert moto.recorded("RunInstances") == []
    resources = cluster_resources(ec2, CLUSTER)
    assert resources["images"] == [image]
    assert len(resources["instances"]) == 2  # the master and the first worker, untouched

    # Without mesh credentials the same re-bake goes ahead.
    moto.start_recording()
    try:
        clean = playbook(PLAYBOOKS / "cloud.yml", {**extra, "ec2_cluster_bake_revision": "2"})
    finally:
        moto.stop_recording()
    assert clean.returncode == 0, clean.explain()
    assert len(moto.recorded("CreateImage")) == 1
