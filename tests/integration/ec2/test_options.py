# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Spot nodes, placement groups, a created key pair and the parallel strategy, against the local EC2 API.

moto does not do everything EC2 does, so part of these tests checks the requests we send rather than moto's state:

* moto stores a launch template's InstanceMarketOptions but does not apply them to instances launched from it
  (their lifecycle stays on-demand), so spot is checked in the CreateLaunchTemplate request and the stored template;
* moto has no placement groups at all: every placement-group call answers HTTP 500, and RunInstances ignores
  Placement.GroupName. An existing group is checked in the RunInstances requests (moto's request recorder), a
  created one in the arguments the amazon.aws.ec2_placement_group module was called with.
"""

from __future__ import annotations

import base64
import json
import pathlib
import stat

import pytest
from ec2_helpers import (
    ACCESS_KEY_ID,
    BASE_IMAGE,
    PLAYBOOKS,
    REGION,
    SECRET_ACCESS_KEY,
    anything_created,
    base_vars,
    cluster_resources,
)

HERE = pathlib.Path(__file__).resolve().parent


def first(params, key):
    values = params.get(key)
    assert values, f"{key} missing from the request: {sorted(params)}"
    return values[0]


@pytest.mark.slow
def test_spot_existing_placement_group_created_key_parallel(ec2, moto, playbook, home):
    cluster = "opts"
    extra = base_vars(
        cluster,
        ec2_cluster_spot=True,
        ec2_cluster_spot_max_price="0.75",
        ec2_cluster_placement_group="existing",
        ec2_cluster_placement_group_name="shared-pg",
        ec2_cluster_image_strategy="parallel",
        ec2_cluster_worker_count=1,
        ec2_cluster_key_mode="create",
        ec2_cluster_max_lifetime_minutes=0,
        # A one-time spot node cannot be stopped: its autostop terminates it.
        ec2_cluster_idle_action="terminate",
        ec2_cluster_instance_type="m7i.2xlarge",
    )
    moto.start_recording()
    try:
        run = playbook(PLAYBOOKS / "cloud.yml", extra)
    finally:
        moto.stop_recording()
    assert run.returncode == 0, run.explain()

    # Spot: the launch template carries the market options, as sent and as moto stored them.
    (template_request,) = moto.recorded("CreateLaunchTemplate")
    assert first(template_request, "LaunchTemplateName") == "amx-opts"
    market = "LaunchTemplateData.InstanceMarketOptions."
    assert first(template_request, market + "MarketType") == "spot"
    assert first(template_request, market + "SpotOptions.MaxPrice") == "0.75"
    assert first(template_request, market + "SpotOptions.SpotInstanceType") == "one-time"
    assert first(template_request, market + "SpotOptions.InstanceInterruptionBehavior") == "terminate"
    stored = ec2.describe_launch_template_versions(LaunchTemplateName="amx-opts")["LaunchTemplateVersions"]
    assert stored[-1]["LaunchTemplateData"]["InstanceMarketOptions"] == {
        "MarketType": "spot",
        "SpotOptions": {
            "MaxPrice": "0.75",
            "SpotInstanceType": "one-time",
            "InstanceInterruptionBehavior": "terminate",
        },
    }

    # Every launch request names the template and the existing placement group; no group was created.
    launches = moto.recorded("RunInstances")
    assert len(launches) == 2  # the master, then the worker (parallel strategy: both from the base image)
    # Nothing sent for the nodes (the template, the launches, their user data) carries the controller's credentials.
    for request in [template_request, *launches]:
        user_data = [request.get(key, []) for key in ("UserData", "LaunchTemplateData.UserData")]
        sent = json.dumps(request) + "".join(
            base64.b64decode(value).decode() for values in user_data for value in values
        )
        assert ACCESS_KEY_ID not in sent and SECRET_ACCESS_KEY not in sent
    for launch in launches:
        assert first(launch, "LaunchTemplate.LaunchTemplateName") == "amx-opts"
        assert first(launch, "Placement.GroupName") == "shared-pg"
        assert first(launch, "ImageId") == BASE_IMAGE
        assert first(launch, "InstanceType") == "m7i.2xlarge"
        assert first(launch, "MetadataOptions.HttpTokens") == "required"
        assert first(launch, "InstanceInitiatedShutdownBehavior") == "terminate"
    assert moto.recorded("CreatePlacementGroup") == []
    assert moto.recorded("CreateImage") == []

    resources = cluster_resources(ec2, cluster)
    assert len(resources["instances"]) == 2
    assert resources["images"] == []  # parallel: nothing baked
    assert resources["launch_templates"] != []

    # The created key pair: its private key is on the controller, 0600, and never in Ansible's output.
    key_file = home / ".ansible" / "amx_cluster" / cluster / REGION / "amx-opts.pem"
    assert key_file.read_text().startswith("-----BEGIN")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert "PRIVATE KEY" not in run.output
    key_body = key_file.read_text().splitlines()[1]
    assert key_body not in run.output
    assert resources["key_pairs"] == ["amx-opts"]

    # A second run finds the template, the key pair and its saved private key: nothing changes.
    again = playbook(PLAYBOOKS / "cloud.yml", extra)
    assert again.returncode == 0, again.explain()
    assert again.recap["changed"] == 0, again.explain()


def test_created_placement_group_request(ec2, moto, playbook, aws_env, tmp_path):
    """moto cannot create placement groups (HTTP 500): check what the module was asked, and that nothing else exists.

    The arguments come from a callback of the tests (callback_plugins/task_args.py) that records each task's
    arguments as the module received them (templated, module_defaults applied).
    """
    recorded = tmp_path / "task-args.jsonl"
    env = dict(
        aws_env,
        AWS_MAX_ATTEMPTS="1",  # moto's HTTP 500 is final; do not let botocore retry it
        ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback_plugins"),
        ANSIBLE_CALLBACKS_ENABLED="task_args",
        AMX_TEST_TASK_ARGS=str(recorded),
    )
    moto.start_recording()
    try:
        run = playbook(PLAYBOOKS / "cloud.yml", base_vars("pgc", ec2_cluster_placement_group="create"), env=env)
    finally:
        moto.stop_recording()
    assert run.returncode != 0, run.explain()
    tasks = [json.loads(line) for line in recorded.read_text().splitlines()]
    failed = [task for task in tasks if task["status"] == "failed"]
    assert [(task["task"].split(" : ")[-1], task["action"]) for task in failed] == [
        ("Create the cluster placement group", "amazon.aws.ec2_placement_group")
    ], run.explain()
    args = failed[0]["args"]
    assert args["name"] == "amx-pgc"
    assert args["strategy"] == "cluster"
    assert args["state"] == "present"
    assert args["tags"] == {"amx.cluster/cluster": "pgc"}
    assert args["region"] == "us-east-1"
    # moto was asked about the group (and answered HTTP 500). The group is the first resource made, so nothing
    # else exists.
    (describe,) = moto.recorded("DescribePlacementGroups")
    assert describe["Filter.1.Value.1"] == ["amx-pgc"]
    assert moto.recorded("RunInstances") == []
    created = anything_created(ec2)
    assert created == {key: [] for key in created}
