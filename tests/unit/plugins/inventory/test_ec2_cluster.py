# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the amx.cluster.ec2_cluster inventory plugin.

The EC2 API is a real botocore client with botocore's Stubber in front of it: the requests the plugin sends are
checked against the API model and the expected parameters, and no request leaves the process. The same plugin
runs against a local EC2 API (moto) in tests/integration/ec2/test_inventory_plugin.py.
"""

from __future__ import annotations

import datetime
import sys
import textwrap

import boto3
import botocore.exceptions
import pytest
from ansible.errors import AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import inventory_loader
from botocore.stub import Stubber

PLUGIN = "ec2_cluster"  # loaded from plugins/inventory (see conftest.py); its NAME is amx.cluster.ec2_cluster
T0 = datetime.datetime(2026, 1, 1, 10, 0, tzinfo=datetime.timezone.utc)
T1 = datetime.datetime(2026, 1, 1, 10, 5, tzinfo=datetime.timezone.utc)


def instance(instance_id, role, index=None, launch_time=T0, launch_index=0, public="", private="10.0.0.1", **tags):
    all_tags = {"amx.cluster/cluster": "demo", "amx.cluster/role": role, **tags}
    if index is not None:
        all_tags["amx.cluster/node-index"] = str(index)
    return {
        "InstanceId": instance_id,
        "InstanceType": "r7iz.metal-16xl",
        "ImageId": "ami-12345678",
        "State": {"Code": 16, "Name": "running"},
        "LaunchTime": launch_time,
        "AmiLaunchIndex": launch_index,
        "PrivateIpAddress": private,
        **({"PublicIpAddress": public} if public else {}),
        "Placement": {"AvailabilityZone": "eu-west-1a"},
        "Tags": [{"Key": key, "Value": value} for key, value in all_tags.items()],
    }


def page(*instances, token=None):
    response = {"Reservations": [{"ReservationId": "r-1", "OwnerId": "123456789012", "Instances": list(instances)}]}
    if token:
        response["NextToken"] = token
    return response


def expected_params(states=("running", "stopping", "stopped"), page_size=1000, token=None):
    params = {
        "Filters": [
            {"Name": "tag:amx.cluster/cluster", "Values": ["demo"]},
            {"Name": "instance-state-name", "Values": list(states)},
        ],
        "MaxResults": page_size,
    }
    if token:
        params["NextToken"] = token
    return params


class Ec2Stub:
    """Stands in for the plugin's client factory: hands out stubbed EC2 clients and records what was asked."""

    def __init__(self):
        self.regions = []
        self.clients = {}

    def prepare(self, region="eu-west-1"):
        """A stubbed client for the region; the returned Stubber takes the expected requests."""
        ec2 = boto3.client(
            "ec2",
            region_name=region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            endpoint_url="http://127.0.0.1:9",  # never reached: the Stubber answers first
        )
        self.clients[region] = ec2
        return Stubber(ec2)

    def __call__(self, aws_session, region, endpoint_url=None, max_attempts=5):
        self.regions.append((region, endpoint_url))
        return self.clients.pop(region or "eu-west-1")


def load_plugin():
    plugin = inventory_loader.get(PLUGIN)
    assert plugin is not None, "the plugin does not load from plugins/inventory"
    # Loaded by file name, the plugin would only accept "plugin: ec2_cluster"; accept its FQCN, as it does when the
    # collection loader finds it.
    plugin._redirected_names = [plugin.NAME]
    return plugin


def test_plugin_name():
    assert load_plugin().NAME == "amx.cluster.ec2_cluster"


@pytest.fixture
def ec2_stub(monkeypatch):
    plugin = load_plugin()
    stub = Ec2Stub()
    monkeypatch.setattr(sys.modules[type(plugin).__module__], "ec2_client", stub)
    return stub


def run_plugin(tmp_path, config, cache=True, name="demo.ec2_cluster.yml"):
    """Parse as ansible's InventoryManager does, cache update included."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(config))
    inventory = InventoryData()
    plugin = load_plugin()
    plugin.parse(inventory, DataLoader(), str(path), cache=cache)
    if getattr(plugin, "_cache", None) is not None:
        plugin.update_cache_if_changed()
    return inventory


def hosts(inventory, group):
    return [host.name for host in inventory.groups[group].get_hosts()]


BASIC = """\
plugin: amx.cluster.ec2_cluster
cluster_name: demo
regions: [eu-west-1]
"""


def test_groups_and_names(tmp_path, ec2_stub):
    stubber = ec2_stub.prepare()
    stubber.add_response(
        "describe_instances",
        page(
            instance("i-w3", "worker", launch_index=2),
            instance("i-m", "master", index=0, public="203.0.113.10", private="10.0.0.10"),
            instance("i-w1", "worker", launch_index=0),
            instance("i-w2", "worker", launch_index=1),
        ),
        expected_params(),
    )
    with stubber:
        inventory = run_plugin(tmp_path, BASIC)
    stubber.assert_no_pending_responses()
    assert hosts(inventory, "master") == ["master"]
    assert hosts(inventory, "workers") == ["node1", "node2", "node3"]
    assert hosts(inventory, "cluster") == ["master", "node1", "node2", "node3"]
    master = inventory.get_host("master").vars
    # the host, not the group of the same name, carries the host's variables
    assert not [key for key in inventory.groups["master"].vars if key.startswith(("ec2_", "ansible_host"))]
    assert master["ansible_host"] == "203.0.113.10"
    assert master["ec2_instance_id"] == "i-m"
    assert master["ec2_private_ip_address"] == "10.0.0.10"
    assert master["ec2_tags"]["amx.cluster/role"] == "master"
    assert inventory.get_host("node3").vars["ec2_instance_id"] == "i-w3"
    assert inventory.get_host("node1").vars["ansible_host"] == "10.0.0.1"  # no public address
    assert ec2_stub.regions == [("eu-west-1", None)]


def test_settings_exported_to_all(tmp_path, ec2_stub, monkeypatch):
    aws_config = tmp_path / "aws-config"
    aws_config.write_text("[profile lab]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(aws_config))
    stubber = ec2_stub.prepare()
    stubber.add_response("describe_instances", {"Reservations": []}, expected_params())
    config = BASIC + "endpoint_url: http://127.0.0.1:5000\nprofile: lab\n"
    with stubber:
        inventory = run_plugin(tmp_path, config)
    assert inventory.groups["all"].vars == {
        "ec2_cluster_name": "demo",
        "ec2_cluster_region": "eu-west-1",
        "ec2_cluster_endpoint_url": "http://127.0.0.1:5000",
        "ec2_cluster_aws_profile": "lab",
    }
    assert ec2_stub.regions == [("eu-west-1", "http://127.0.0.1:5000")]
    # an empty cluster still has its groups, so plays on them match nothing instead of failing
    assert hosts(inventory, "cluster") == []
    assert hosts(inventory, "master") == []


def test_settings_not_exported_when_off(tmp_path, ec2_stub):
    stubber = ec2_stub.prepare()
    stubber.add_response("describe_instances", {"Reservations": []}, expected_params())
    with stubber:
        inventory = run_plugin(tmp_path, BASIC + "export_settings: false\n")
    assert inventory.groups["all"].vars == {}


def test_pages_and_options(tmp_path, ec2_stub):
    stubber = ec2_stub.prepare()
    first = expected_params(states=("running", "pending", "stopping", "stopped"), page_size=5)
    stubber.add_response("describe_instances", page(instance("i-m", "master"), token="t1"), first)
    stubber.add_response(
        "describe_instances",
        page(instance("i-w", "worker", public="203.0.113.7", private="10.0.0.7")),
        expected_params(states=("running", "pending", "stopping", "stopped"), page_size=5, token="t1"),
    )
    config = BASIC + textwrap.dedent(
        """\
        page_size: 5
        instance_states: [running, pending]
        use_private_address: true
        master_group: head
        workers_group: compute
        cluster_group: everyone
        """
    )
    with stubber:
        inventory = run_plugin(tmp_path, config)
    stubber.assert_no_pending_responses()
    assert hosts(inventory, "head") == ["master"]
    assert hosts(inventory, "compute") == ["node1"]
    assert hosts(inventory, "everyone") == ["master", "node1"]
    assert inventory.get_host("node1").vars["ansible_host"] == "10.0.0.7"


def stopped(item, state="stopped"):
    return dict(item, State={"Code": 80, "Name": state})


def test_stopped_nodes_are_named_in_their_own_group_and_a_warning(tmp_path, ec2_stub, capsys):
    stubber = ec2_stub.prepare()
    stubber.add_response(
        "describe_instances",
        page(
            stopped(instance("i-m", "master", index=0)),
            instance("i-w1", "worker", index=1),
            stopped(instance("i-w2", "worker", index=2), "stopping"),
        ),
        expected_params(),
    )
    with stubber:
        inventory = run_plugin(tmp_path, BASIC)
    assert hosts(inventory, "stopped") == ["master", "node2"]
    assert hosts(inventory, "master") == []
    assert hosts(inventory, "cluster") == ["node1"]
    assert inventory.get_host("master").vars["ec2_state"] == "stopped"
    assert inventory.get_host("node2").vars["ec2_state"] == "stopping"
    words = " ".join(capsys.readouterr().err.split())
    assert "cluster 'demo': master, node2 are not running (master i-m stopped, node2 i-w2 stopping)" in words
    assert "Start them again with playbooks/provision.yml" in words


def test_stopped_states_empty_leaves_stopped_nodes_out(tmp_path, ec2_stub, capsys):
    stubber = ec2_stub.prepare()
    stubber.add_response("describe_instances", page(instance("i-m", "master")), expected_params(states=("running",)))
    with stubber:
        inventory = run_plugin(tmp_path, BASIC + "stopped_states: []\n")
    stubber.assert_no_pending_responses()
    assert hosts(inventory, "cluster") == ["master"] and "stopped" not in inventory.groups
    assert "not running" not in capsys.readouterr().err


def test_constructed_options(tmp_path, ec2_stub):
    stubber = ec2_stub.prepare()
    stubber.add_response(
        "describe_instances",
        page(instance("i-m", "master", team="ml"), instance("i-w", "worker", index=4)),
        expected_params(),
    )
    config = BASIC + textwrap.dedent(
        """\
        compose:
          ansible_user: "'ubuntu'"
          rank_hint: ec2_node_index * 2
        groups:
          high_index: ec2_node_index > 2
        keyed_groups:
          - key: ec2_instance_type
            prefix: type
          - key: ec2_tags.team | default('none')
            prefix: team
        """
    )
    with stubber:
        inventory = run_plugin(tmp_path, config)
    assert hosts(inventory, "workers") == ["node4"]
    # A number where core templates natively (2.19), its text before.
    assert str(inventory.get_host("node4").vars["rank_hint"]) == "8"
    assert inventory.get_host("master").vars["ansible_user"] == "ubuntu"
    assert hosts(inventory, "high_index") == ["node4"]
    assert hosts(inventory, "type_r7iz_metal_16xl") == ["master", "node4"]
    assert hosts(inventory, "team_ml") == ["master"]
    assert hosts(inventory, "team_none") == ["node4"]


def test_several_regions(tmp_path, ec2_stub):
    west = ec2_stub.prepare("eu-west-1")
    west.add_response("describe_instances", page(instance("i-m", "master")), expected_params())
    east = ec2_stub.prepare("us-east-1")
    east.add_response("describe_instances", page(instance("i-w", "worker", launch_time=T1)), expected_params())
    with west, east:
        inventory = run_plugin(tmp_path, BASIC.replace("[eu-west-1]", "[eu-west-1, us-east-1]"))
    assert [asked[0] for asked in ec2_stub.regions] == ["eu-west-1", "us-east-1"]
    assert inventory.get_host("node1").vars["ec2_region"] == "us-east-1"
    assert "ec2_cluster_region" not in inventory.groups["all"].vars


def test_two_masters_is_an_error(tmp_path, ec2_stub):
    stubber = ec2_stub.prepare()
    stubber.add_response(
        "describe_instances", page(instance("i-m1", "master"), instance("i-m2", "master")), expected_params()
    )
    with stubber, pytest.raises(AnsibleParserError, match="cluster 'demo': 2 instances are tagged"):
        run_plugin(tmp_path, BASIC)


def test_other_roles_are_ignored_with_a_warning(tmp_path, ec2_stub, capsys):
    stubber = ec2_stub.prepare()
    stubber.add_response(
        "describe_instances", page(instance("i-x", "bastion"), instance("i-w", "worker")), expected_params()
    )
    with stubber:
        inventory = run_plugin(tmp_path, BASIC)
    assert hosts(inventory, "cluster") == ["node1"]
    said = " ".join(capsys.readouterr().err.split())  # older cores wrap a warning at the terminal's width
    assert "ignoring instances tagged with cluster 'demo' but neither master nor worker: i-x" in said


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("AuthFailure", "AWS refused the credentials"),
        ("UnauthorizedOperation", "grant ec2:DescribeInstances"),
        ("RequestLimitExceeded", "RequestLimitExceeded: "),
    ],
)
def test_client_errors_are_explained(tmp_path, ec2_stub, code, message):
    stubber = ec2_stub.prepare()
    stubber.add_client_error("describe_instances", service_error_code=code, service_message="nope")
    with stubber, pytest.raises(AnsibleParserError) as error:
        run_plugin(tmp_path, BASIC)
    assert message in str(error.value)
    assert "listing the instances of cluster 'demo'" in str(error.value)


def test_missing_credentials_are_explained(tmp_path, monkeypatch):
    plugin = load_plugin()
    module = sys.modules[type(plugin).__module__]

    def no_credentials(*args, **kwargs):
        raise botocore.exceptions.NoCredentialsError()

    monkeypatch.setattr(module, "ec2_client", no_credentials)
    with pytest.raises(AnsibleParserError, match=r"no AWS credentials found.*AWS_PROFILE"):
        run_plugin(tmp_path, BASIC)


def test_unknown_profile_is_explained(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    with pytest.raises(AnsibleParserError, match="AWS profile 'nosuch' is not in the AWS config"):
        run_plugin(tmp_path, BASIC + "profile: nosuch\n")


@pytest.mark.parametrize(
    ("extra", "message"),
    [("page_size: 2000\n", "page_size must be between 5 and 1000"), ("instance_states: [runing]\n", "runing")],
)
def test_bad_options(tmp_path, ec2_stub, extra, message):
    ec2_stub.prepare()
    with pytest.raises(AnsibleParserError, match=message):
        run_plugin(tmp_path, BASIC + extra)


def test_cache_is_used_and_refreshed(tmp_path, ec2_stub):
    cache_dir = tmp_path / "cache"
    config = BASIC + f"cache: true\ncache_plugin: jsonfile\ncache_connection: {cache_dir}\n"
    stubber = ec2_stub.prepare()
    stubber.add_response("describe_instances", page(instance("i-m", "master")), expected_params())
    with stubber:
        inventory = run_plugin(tmp_path, config, cache=False)  # refresh: ask AWS, write the cache
    assert hosts(inventory, "cluster") == ["master"]
    assert list(cache_dir.iterdir()), "the cache was not written"

    # Reading with the cache: no request at all (a stubbed client with no responses would fail the parse).
    ec2_stub.prepare()
    inventory = run_plugin(tmp_path, config, cache=True)
    assert hosts(inventory, "cluster") == ["master"]
    assert inventory.get_host("master").vars["ec2_instance_id"] == "i-m"


def test_the_cache_key_covers_every_option_that_shapes_the_answer(tmp_path, ec2_stub):
    """One configuration file, another cluster name (or region, endpoint, states): never the first one's hosts."""
    cache_dir = tmp_path / "cache"
    cached = BASIC + f"cache: true\ncache_plugin: jsonfile\ncache_connection: {cache_dir}\n"
    stubber = ec2_stub.prepare()
    stubber.add_response("describe_instances", page(instance("i-m", "master")), expected_params())
    with stubber:
        run_plugin(tmp_path, cached, cache=False)
    other = cached.replace("cluster_name: demo", "cluster_name: other")
    stubber = ec2_stub.prepare()
    params = expected_params()
    params["Filters"][0]["Values"] = ["other"]
    stubber.add_response(
        "describe_instances",
        page(
            dict(
                instance("i-o", "master"),
                Tags=[{"Key": "amx.cluster/cluster", "Value": "other"}, {"Key": "amx.cluster/role", "Value": "master"}],
            )
        ),
        params,
    )
    with stubber:
        inventory = run_plugin(tmp_path, other, cache=True)  # the cache holds demo's answer: it must not be used
        stubber.assert_no_pending_responses()
    assert inventory.get_host("master").vars["ec2_instance_id"] == "i-o"


def test_instances_of_another_cluster_in_the_answer_are_dropped(tmp_path, ec2_stub):
    """Whatever the API matched, only an exact cluster tag makes a node."""
    stranger = instance("i-s", "worker")
    stranger["Tags"][0]["Value"] = "demo-staging"
    stubber = ec2_stub.prepare()
    stubber.add_response("describe_instances", page(instance("i-m", "master"), stranger), expected_params())
    with stubber:
        inventory = run_plugin(tmp_path, BASIC)
    assert hosts(inventory, "cluster") == ["master"]


@pytest.mark.parametrize("name", ["'demo*'", "'de?o'", "'*'", "demo_1", "''"])
def test_a_cluster_name_the_role_refuses_is_refused(tmp_path, ec2_stub, name):
    ec2_stub.prepare()  # no response: a request would fail the test with another message
    with pytest.raises(AnsibleParserError, match=r"option cluster_name: the cluster name .* is not valid"):
        run_plugin(tmp_path, BASIC.replace("cluster_name: demo", f"cluster_name: {name}"))


def test_a_bad_node_index_tag_is_a_warning_naming_the_instance(tmp_path, ec2_stub, capsys):
    stubber = ec2_stub.prepare()
    stubber.add_response(
        "describe_instances",
        page(instance("i-m", "master"), instance("i-w", "worker", index="\u00b2")),
        expected_params(),
    )
    with stubber:
        inventory = run_plugin(tmp_path, BASIC)
    assert hosts(inventory, "workers") == ["node1"]
    said = " ".join(capsys.readouterr().err.split())
    assert "instance i-w: tag amx.cluster/node-index ignored" in said
    assert "named node1 by launch order" in said


@pytest.mark.parametrize(
    ("name", "accepted"),
    [
        ("demo.ec2_cluster.yml", True),
        ("ec2_cluster.yaml", True),
        ("aws_ec2.yml", False),
        ("ec2_cluster.json", False),
        ("hosts", False),
    ],
)
def test_verify_file(tmp_path, name, accepted):
    path = tmp_path / name
    path.write_text(BASIC)
    assert load_plugin().verify_file(str(path)) is accepted
