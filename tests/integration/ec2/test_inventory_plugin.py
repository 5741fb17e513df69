# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The amx.cluster.ec2_cluster inventory plugin, run by ansible-inventory against the local EC2 API (moto)."""

from __future__ import annotations

import json
import subprocess
import time

import ec2_helpers
import pytest
from ec2_helpers import REPO, VENV_BIN

CLUSTER = "inv"


def launch(ec2, count, role, cluster=CLUSTER, **tags):
    return ec2_helpers.launch(ec2, count, role, cluster, **tags)


def test_names_groups_and_hostvars(ec2, inventory_file, inventory_list):
    master = launch(ec2, 1, "master")[0]
    first = launch(ec2, 2, "worker")  # one request: ordered by launch index
    tagged = launch(ec2, 1, "worker", **{"amx.cluster/node-index": "5"})[0]
    time.sleep(1.1)  # launch times have one-second resolution, in moto as in EC2
    second = launch(ec2, 2, "worker")  # a later request: after the first one
    odd = launch(ec2, 1, "bastion")[0]
    launch(ec2, 1, "master", cluster="other")
    launch(ec2, 1, None, cluster="inv-untagged-role")
    time.sleep(1.1)  # the stopped worker is named among the others: launched last, it is node6
    stopped = launch(ec2, 1, "worker")[0]
    ec2.stop_instances(InstanceIds=[stopped["InstanceId"]])

    run, data = inventory_list(inventory_file(CLUSTER))
    assert run.returncode == 0, run.explain()
    expected = {
        "master": master,
        "node1": first[0],
        "node2": first[1],
        "node3": second[0],
        "node4": second[1],
        "node5": tagged,
    }
    assert data["master"]["hosts"] == ["master"]
    assert data["workers"]["hosts"] == ["node1", "node2", "node3", "node4", "node5"]
    assert data["cluster"]["hosts"] == ["master", "node1", "node2", "node3", "node4", "node5"]
    # The stopped worker: named among the others (launched last: node6), in group stopped only, with its state.
    assert data["stopped"]["hosts"] == ["node6"]
    hostvars = data["_meta"]["hostvars"]
    assert sorted(hostvars) == sorted([*expected, "node6"])
    assert hostvars["node6"]["ec2_state"] == "stopped"
    assert f"node6 {stopped['InstanceId']} stopped" in " ".join(run.output.split())
    for name, instance in expected.items():
        assert hostvars[name]["ec2_instance_id"] == instance["InstanceId"], name
        assert hostvars[name]["ansible_host"] == instance["PublicIpAddress"]
        assert hostvars[name]["ec2_private_ip_address"] == instance["PrivateIpAddress"]
        assert hostvars[name]["ec2_tags"]["amx.cluster/cluster"] == CLUSTER
        assert "tags" not in hostvars[name]
    assert [hostvars[f"node{n}"]["ec2_node_index"] for n in range(1, 6)] == [1, 2, 3, 4, 5]
    assert odd["InstanceId"] in run.output  # named in the warning about the role it does not know
    assert "neither master nor worker" in " ".join(run.output.split())


def test_private_addresses_and_constructed_groups(ec2, inventory_file, inventory_list):
    launch(ec2, 1, "master")
    launch(ec2, 1, "worker")
    extra = (
        "use_private_address: true\n"
        "keyed_groups:\n  - key: ec2_instance_type\n    prefix: type\n"
        "groups:\n  head: ec2_node_role == 'master'\n"
        "compose:\n  ansible_user: \"'ubuntu'\"\n"
    )
    run, data = inventory_list(inventory_file(CLUSTER, extra))
    assert run.returncode == 0, run.explain()
    hostvars = data["_meta"]["hostvars"]
    for name in ("master", "node1"):
        assert hostvars[name]["ansible_host"] == hostvars[name]["ec2_private_ip_address"]
        assert hostvars[name]["ansible_user"] == "ubuntu"
    assert data["type_m7i_large"]["hosts"] == ["master", "node1"]
    assert data["head"]["hosts"] == ["master"]


def test_server_side_filters_and_large_pages(ec2, moto, inventory_file, inventory_list):
    launch(ec2, 1, "master")
    launch(ec2, 11, "worker")
    launch(ec2, 3, "worker", cluster="someone-else")
    moto.start_recording()
    try:
        run, data = inventory_list(inventory_file(CLUSTER, "page_size: 5\n"))
        default_run, default_data = inventory_list(inventory_file(CLUSTER, "", name="defaults.ec2_cluster.yml"))
    finally:
        moto.stop_recording()
    assert run.returncode == 0, run.explain()
    assert default_run.returncode == 0, default_run.explain()
    assert data["workers"]["hosts"] == [f"node{n}" for n in range(1, 12)]
    assert default_data["workers"]["hosts"] == data["workers"]["hosts"]
    requests = moto.recorded("DescribeInstances")
    for request in requests:
        filters = {request[f"Filter.{n}.Name"][0]: request[f"Filter.{n}.Value.1"][0] for n in (1, 2)}
        assert filters == {"tag:amx.cluster/cluster": CLUSTER, "instance-state-name": "running"}
    sizes = [request["MaxResults"][0] for request in requests]
    # 12 instances in pages of 5 take 3 calls (moto pages by reservation: 2 reservations here); with the
    # default page size, one call of up to 1000.
    assert sizes[:-1] == ["5"] * (len(sizes) - 1) and len(sizes) >= 2
    assert sizes[-1] == "1000"


def test_cache_serves_until_flushed(ec2, tmp_path, inventory_file, inventory_list):
    launch(ec2, 1, "master")
    workers = launch(ec2, 2, "worker")
    cache = tmp_path / "inventory-cache"
    config = inventory_file(
        CLUSTER,
        f"cache: true\ncache_plugin: ansible.builtin.jsonfile\ncache_connection: {cache}\ncache_timeout: 3600\n",
    )
    run, data = inventory_list(config)
    assert run.returncode == 0, run.explain()
    assert data["workers"]["hosts"] == ["node1", "node2"]
    ec2.terminate_instances(InstanceIds=[workers[1]["InstanceId"]])

    cached_run, cached = inventory_list(config)
    assert cached_run.returncode == 0, cached_run.explain()
    assert cached["workers"]["hosts"] == ["node1", "node2"]  # from the cache: AWS was not asked

    fresh_run, fresh = inventory_list(config, extra=["--flush-cache"])
    assert fresh_run.returncode == 0, fresh_run.explain()
    assert fresh["workers"]["hosts"] == ["node1"]


@pytest.mark.parametrize(
    ("extra", "env_change", "message"),
    [
        pytest.param(
            "",
            lambda env: {k: v for k, v in env.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")},
            "no AWS credentials found",
            id="no-credentials",
        ),
        pytest.param(
            "regions: [eu-nowhere-9]\n", None, "the EC2 endpoint of region 'eu-nowhere-9' failed", id="region"
        ),
        pytest.param("profile: nosuch\n", None, "AWS profile 'nosuch' is not in the AWS config", id="profile"),
    ],
)
def test_errors_are_explained(aws_env, inventory_file, inventory_list, tmp_path, extra, env_change, message):
    # No ANSIBLE_INVENTORY_* variable: the checkout's ansible.cfg (any_unparsed_is_failed) makes the error fatal.
    env = dict(env_change(aws_env) if env_change else aws_env)
    config = inventory_file(CLUSTER, extra)
    if "regions:" in extra:
        config.write_text(config.read_text().replace("regions: [us-east-1]\n", ""))
    run = inventory_list(config, env=dict(env, AWS_MAX_ATTEMPTS="1"))[0]
    assert run.returncode != 0, run.explain()
    assert message in " ".join(run.output.split()), run.explain()


@pytest.mark.parametrize("name", ["inv*", "in?", "inv prod", "-inv"])
def test_a_cluster_name_with_wildcards_is_refused_not_matched(ec2, inventory_file, inventory_list, name):
    launch(ec2, 1, "master")
    launch(ec2, 1, "master", cluster="inv2")
    config = inventory_file("wild")
    config.write_text(config.read_text().replace("cluster_name: wild", f"cluster_name: {json.dumps(name)}"))
    run, _data = inventory_list(config)
    assert run.returncode != 0, run.explain()
    assert "option cluster_name: the cluster name" in " ".join(run.output.split()), run.explain()
    assert "1-40 letters, digits or hyphens" in " ".join(run.output.split()), run.explain()


def test_a_bad_node_index_tag_is_named_not_a_crash(ec2, inventory_file, inventory_list):
    launch(ec2, 1, "master")
    odd = launch(ec2, 1, "worker", **{"amx.cluster/node-index": "\u00b2"})[0]  # a superscript two
    run, data = inventory_list(inventory_file(CLUSTER))
    assert run.returncode == 0, run.explain()
    assert data["workers"]["hosts"] == ["node1"]
    assert data["_meta"]["hostvars"]["node1"]["ec2_instance_id"] == odd["InstanceId"]
    said = " ".join(run.output.split())
    assert f"instance {odd['InstanceId']}: tag amx.cluster/node-index ignored" in said, run.explain()


def test_a_plugin_error_stops_a_playbook_with_its_cause(aws_env, inventory_file):
    config = inventory_file(CLUSTER, "page_size: 2000\n")
    args = [str(VENV_BIN / "ansible-playbook"), "-i", str(config), "playbooks/train.yml"]
    proc = subprocess.run(args, cwd=REPO, env=aws_env, capture_output=True, text=True, timeout=300, check=False)
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0, said
    assert "page_size must be between 5 and 1000" in said
    assert "has 0 host(s)" not in said  # check_inventory.yml never ran on an empty inventory
