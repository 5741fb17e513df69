# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the boto3 helpers of the EC2 cluster: the lean DescribeInstances reader and the error messages.

The lean reader is checked against botocore's own parser on the same XML page: whatever botocore makes of a page,
the cluster must see the same instances.
"""

from __future__ import annotations

import pathlib

import botocore.exceptions
import botocore.parsers
import botocore.session
import pytest

from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_aws import (
    FAST_PAGE_KEY,
    _lean_describe_instances,
    describe_cluster_instances,
    explain,
    parse_describe_instances,
)
from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_nodes import simplify_instance

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "ec2_describe_instances.xml"


def botocore_parse(body: bytes):
    model = botocore.session.get_session().get_service_model("ec2")
    operation = model.operation_model("DescribeInstances")
    parser = botocore.parsers.create_parser("ec2")
    return parser.parse({"body": body, "headers": {}, "status_code": 200}, operation.output_shape)


def test_lean_reader_agrees_with_botocore():
    body = FIXTURE.read_bytes()
    reference = botocore_parse(body)
    expected = [
        simplify_instance(instance, "eu-west-1")
        for reservation in reference["Reservations"]
        for instance in reservation["Instances"]
    ]
    instances, token = parse_describe_instances(body)
    assert [simplify_instance(instance, "eu-west-1") for instance in instances] == expected
    assert token == reference["NextToken"]


def test_lean_reader_reads_only_the_instance_level_fields():
    instances = parse_describe_instances(FIXTURE.read_bytes())[0]
    master, spot, pending = instances
    assert master["PrivateIpAddress"] == "172.31.0.10"  # not the interface's 172.31.0.99
    assert master["PublicIpAddress"] == "203.0.113.10"
    assert master["Placement"] == {"AvailabilityZone": "eu-west-1a", "GroupName": "amx-demo"}
    assert {"Key": "empty", "Value": ""} in master["Tags"]
    assert spot["InstanceLifecycle"] == "spot"
    assert "PublicIpAddress" not in spot
    assert simplify_instance(spot, "eu-west-1")["launch_time"] == "2026-01-01T10:30:00.000000Z"  # +01:00 to UTC
    assert pending["State"] == {"Name": "pending"}
    assert pending["Tags"] == []


def test_lean_hook_hands_botocore_only_the_token():
    response = {"status_code": 200, "body": FIXTURE.read_bytes(), "headers": {}}
    extra = {}
    _lean_describe_instances(response_dict=response, customized_response_dict=extra)
    assert [i["InstanceId"] for i in extra[FAST_PAGE_KEY]] == [
        "i-0123456789abcdef0",
        "i-0fedcba9876543210",
        "i-0aaaabbbbccccdddd",
    ]
    rest = botocore_parse(response["body"])
    assert rest["Reservations"] == []
    assert rest["NextToken"] == "eyJ2IjoiMiIsImMiOiJ0b2tlbiZsdDsifQ=="


@pytest.mark.parametrize(
    "response",
    [
        {"status_code": 400, "body": b"<Response><Errors><Error><Code>AuthFailure</Code></Error></Errors></Response>"},
        {"status_code": 200, "body": b"<not xml"},
        {"status_code": 200, "body": b""},
    ],
    ids=["error", "garbage", "empty"],
)
def test_lean_hook_leaves_errors_and_oddities_to_botocore(response):
    original = dict(response)
    extra = {}
    _lean_describe_instances(response_dict=response, customized_response_dict=extra)
    assert extra == {}
    assert response == original


class FakePages:
    """A paginator stand-in that returns pages in either form botocore may produce."""

    def __init__(self, pages):
        self.pages = pages
        self.kwargs = None

    def paginate(self, **kwargs):
        self.kwargs = kwargs
        return iter(self.pages)


class FakeEvents:
    def __init__(self):
        self.registered = []

    def register(self, event, handler, unique_id=None):
        self.registered.append((event, unique_id))

    def unregister(self, event, unique_id=None):
        self.registered.remove((event, unique_id))


class FakeClient:
    def __init__(self, pages):
        self.paginator = FakePages(pages)
        self.meta = type("Meta", (), {"events": FakeEvents()})()

    def get_paginator(self, name):
        assert name == "describe_instances"
        return self.paginator


def test_describe_cluster_instances_collects_both_page_forms_and_unhooks():
    def tagged(instance_id, cluster="demo"):
        return {"InstanceId": instance_id, "Tags": [{"Key": "amx.cluster/cluster", "Value": cluster}]}

    client = FakeClient(
        [
            {FAST_PAGE_KEY: [tagged("i-1"), tagged("i-x", "demo2")], "Reservations": []},
            {"Reservations": [{"Instances": [tagged("i-2"), {"InstanceId": "i-untagged"}]}]},
        ]
    )
    found = describe_cluster_instances(client, "demo", ["running"], page_size=50)
    assert [i["InstanceId"] for i in found] == ["i-1", "i-2"]  # exact tag matches only
    assert client.paginator.kwargs["PaginationConfig"] == {"PageSize": 50}
    assert client.paginator.kwargs["Filters"][0] == {"Name": "tag:amx.cluster/cluster", "Values": ["demo"]}
    assert client.meta.events.registered == []


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (botocore.exceptions.NoCredentialsError(), "no AWS credentials found"),
        (
            botocore.exceptions.EndpointConnectionError(endpoint_url="https://ec2.eu-nowhere-9.amazonaws.com"),
            "cannot reach the EC2 endpoint for region 'eu-nowhere-9'",
        ),
        (
            botocore.exceptions.ClientError({"Error": {"Code": "AuthFailure", "Message": "x"}}, "DescribeInstances"),
            "AWS refused the credentials (AuthFailure)",
        ),
        (
            botocore.exceptions.ClientError({"Error": {"Code": "ExpiredToken", "Message": "x"}}, "DescribeRegions"),
            "AWS refused the credentials (ExpiredToken)",
        ),
        (
            botocore.exceptions.ClientError({"Error": {"Code": "UnauthorizedOperation"}}, "DescribeInstances"),
            "grant ec2:DescribeInstances",
        ),
        (botocore.parsers.ResponseParserError("Unable to parse\nmore"), "the EC2 endpoint of region 'eu-nowhere-9'"),
        (ValueError("odd"), "listing: odd"),
    ],
)
def test_explain(error, expected):
    assert expected in explain(error, "eu-nowhere-9", "listing")


def test_a_denied_call_names_the_permission_its_caller_needs():
    denied = botocore.exceptions.ClientError({"Error": {"Code": "UnauthorizedOperation"}}, "DescribeImages")
    assert explain(denied, "eu-west-1", "looking up the base image", "ec2:DescribeImages") == (
        "looking up the base image: the credentials may not call this (UnauthorizedOperation): grant ec2:DescribeImages"
    )


def aws_module(**params):
    """An AnsibleAWSModule (amazon.aws's base of the collection's AWS modules) with these parameters."""
    from ansible.module_utils.testing import patch_module_args
    from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

    with patch_module_args(params):
        return AnsibleAWSModule(argument_spec={})


class Failed(Exception):
    pass


def test_client_takes_botocore_settings_over_the_default_retries():
    from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_aws import module_client

    params = dict(
        region="eu-west-1",
        endpoint_url="http://127.0.0.1:9",
        access_key="AKIA1",
        secret_key="s",
        aws_config={"connect_timeout": 7, "retries": {"max_attempts": 2}},
    )
    client = module_client(aws_module(**params))
    assert client.meta.config.connect_timeout == 7
    # botocore counts the first call too: max_attempts 2 (retries) is 3 calls in all.
    assert client.meta.config.retries["total_max_attempts"] == 3
    assert client.meta.region_name == "eu-west-1"
    assert client.meta.endpoint_url == "http://127.0.0.1:9"
    params["aws_config"] = None
    default = module_client(aws_module(**params))
    assert default.meta.config.retries == {"total_max_attempts": 6, "mode": "standard"}


def test_unknown_botocore_setting_is_refused(monkeypatch):
    """amazon.aws builds Config(**aws_config) outside its error handling: the module would end in a traceback."""
    from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_aws import module_client

    module = aws_module(region="eu-west-1", access_key="a", secret_key="s", aws_config={"conect_timeout": 5})

    def fail_json(msg, **_kw):
        raise Failed(msg)

    monkeypatch.setattr(module, "fail_json", fail_json)
    with pytest.raises(Failed, match=r"aws_config has a key that botocore\.config\.Config does not take"):
        module_client(module)
