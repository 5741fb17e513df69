# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller files of a cluster survive a teardown that is not theirs, against the local EC2 API (moto).

State is kept per cluster and region (~/.ansible/amx_cluster/<name>/<region>/) with a manifest of the files the
collection wrote; a teardown removes only those, never a private key while the cluster has instances in its
region, and a teardown that finds nothing in its region while another region's files exist removes nothing.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from ec2_helpers import PLAYBOOKS, REGION, base_vars, cluster_resources

HERE_PLAYBOOKS = pathlib.Path(__file__).resolve().parent / "playbooks"
CLUSTER = "keep"
OTHER_REGION = "eu-west-1"


@pytest.fixture
def provisioned(ec2, playbook, home):
    run = playbook(
        PLAYBOOKS / "cloud.yml", base_vars(CLUSTER, ec2_cluster_key_mode="create", ec2_cluster_worker_count=0)
    )
    assert run.returncode == 0, run.explain()
    cluster_dir = home / ".ansible" / "amx_cluster" / CLUSTER
    key = cluster_dir / REGION / "amx-keep.pem"
    assert key.read_text().startswith("-----BEGIN")
    manifest = json.loads((cluster_dir / REGION / ".amx-cluster-files.json").read_text())
    assert manifest["files"] == {"amx-keep.pem": "private_key", "known_hosts": "known_hosts"}
    assert manifest["region"] == REGION
    return cluster_dir, key


@pytest.mark.slow
def test_teardown_in_another_region_keeps_the_key_and_a_real_teardown_only_what_it_wrote(
    ec2, playbook, provisioned, moto
):
    cluster_dir, key = provisioned
    mine = cluster_dir / REGION / "mine.txt"
    mine.write_text("the user's own file\n")
    notes = cluster_dir / "notes.txt"
    notes.write_text("the user's own notes\n")
    known_hosts = cluster_dir / REGION / "known_hosts"
    known_hosts.write_text("master ssh-ed25519 AAAA\n")  # what SSH would have written for the nodes
    teardown_vars = {"ec2_cluster_name": CLUSTER, "ec2_cluster_teardown_placement_group": False}

    # The wrong region: nothing of the cluster there; its files say it lives in us-east-1.
    wrong = playbook(PLAYBOOKS / "teardown.yml", {**teardown_vars, "ec2_cluster_region": OTHER_REGION})
    assert wrong.returncode != 0, wrong.explain()
    output = " ".join(wrong.output.split())
    assert f"found nothing of cluster {CLUSTER} in {OTHER_REGION}, but the controller holds its files for {REGION}" in (
        output
    ), wrong.explain()
    assert "nothing was removed" in output
    assert f"-e ec2_cluster_region={REGION}" in output
    assert key.is_file() and known_hosts.is_file() and mine.is_file() and notes.is_file()
    assert len(cluster_resources(ec2, CLUSTER)["instances"]) == 1

    # The right region: the cluster goes, and with it only the files the collection recorded.
    right = playbook(PLAYBOOKS / "teardown.yml", {**teardown_vars, "ec2_cluster_region": REGION})
    assert right.returncode == 0, right.explain()
    left = cluster_resources(ec2, CLUSTER)
    assert left == {name: [] for name in left}, left
    assert not key.exists() and not known_hosts.exists()
    assert not (cluster_dir / REGION / ".amx-cluster-files.json").exists()
    assert mine.read_text() == "the user's own file\n"
    assert notes.read_text() == "the user's own notes\n"
    assert "mine.txt: not written by the collection" in " ".join(right.output.split()), right.explain()


@pytest.mark.slow
def test_the_private_key_stays_while_the_cluster_has_instances(ec2, playbook, provisioned, moto):
    """The removal step alone, with the master still running (a teardown terminates it first): the key stays."""
    cluster_dir, key = provisioned
    known_hosts = cluster_dir / REGION / "known_hosts"
    known_hosts.write_text("master ssh-ed25519 AAAA\n")
    extra = {"state_dir": str(cluster_dir), "cluster_name": CLUSTER, "region": REGION, "endpoint_url": moto.url}
    run = playbook(HERE_PLAYBOOKS / "state_remove.yml", extra)
    assert run.returncode == 0, run.explain()
    assert key.is_file()
    assert not known_hosts.exists()
    manifest = json.loads((cluster_dir / REGION / ".amx-cluster-files.json").read_text())
    assert manifest["files"] == {"amx-keep.pem": "private_key"}
