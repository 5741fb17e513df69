# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""boto3 access shared by the ec2_cluster inventory plugin and the ec2_cluster_* modules.

The modules are amazon.aws's AnsibleAWSModule (its connection options, credentials and client); this file adds
what that base leaves out: the retry setting, a check of aws_config, messages for failed calls that say what to
do, and the lean DescribeInstances reader. The inventory plugin takes only a profile and an endpoint and builds its
client here. Nothing here stores a credential or puts one in a message.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple
from xml.etree import ElementTree

try:
    import boto3
    import botocore.exceptions
    from botocore.config import Config
    from botocore.parsers import ResponseParserError

    HAS_BOTO3 = True
    # ResponseParserError: an endpoint that answered with something other than the EC2 API (a proxy page, a local
    # stand-in failing on an unknown region).
    AWS_ERRORS: tuple = (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError, ResponseParserError)
except ImportError:  # pragma: no cover - exercised only where boto3 is missing
    HAS_BOTO3 = False
    AWS_ERRORS = ()

from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_nodes import cluster_filters, of_cluster

MISSING_BOTO3 = (
    "boto3 and botocore are required on the controller for the EC2 cluster; install them into the "
    "Python that runs Ansible (pip install boto3)"
)
AUTH_ERRORS = (
    "AuthFailure",
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
)
DENIED_ERRORS = ("UnauthorizedOperation", "AccessDenied", "AccessDeniedException")
MAX_PAGE_SIZE = 1000
MIN_PAGE_SIZE = 5
# botocore's standard retry mode (throttling and transient errors, with backoff), under the user's aws_config.
RETRIES = {"max_attempts": 5, "mode": "standard"}


class AwsAccessError(Exception):
    """A call to AWS failed; the message is meant for a person."""


def session(profile: Optional[str] = None) -> Any:
    """A boto3 session for a profile, or the default chain (the inventory plugin's)."""
    if not HAS_BOTO3:
        raise AwsAccessError(MISSING_BOTO3)
    try:
        return boto3.session.Session(profile_name=profile or None)
    except botocore.exceptions.ProfileNotFound as exc:
        raise AwsAccessError(
            f"AWS profile {profile!r} is not in the AWS config or credentials files: fix the profile name or "
            f"create it with `aws configure --profile {profile}`"
        ) from exc


def ec2_client(aws_session: Any, region: Optional[str], endpoint_url: Optional[str] = None) -> Any:
    """An EC2 client for one region (endpoint_url points at a local EC2 API such as moto)."""
    region = region or aws_session.region_name
    if not region:
        raise AwsAccessError(
            "no AWS region: set the region option (or AWS_REGION / AWS_DEFAULT_REGION, or a region in the profile)"
        )
    return aws_session.client(
        "ec2", region_name=region, endpoint_url=endpoint_url or None, config=Config(retries=dict(RETRIES))
    )


def aws_config_problem(aws_config: Optional[Mapping[str, Any]]) -> Optional[str]:
    """Why aws_config cannot be a botocore Config, or None (amazon.aws lets the TypeError end the module)."""
    try:
        Config(**dict(aws_config or {}))
    except TypeError as exc:
        return (
            f"aws_config has a key that botocore.config.Config does not take ({exc}): use only its keyword "
            "arguments (connect_timeout, read_timeout, retries, max_pool_connections, ...)"
        )
    return None


def module_client(module: Any, service: str = "ec2") -> Any:
    """The client of an AnsibleAWSModule with the retry setting; the user's aws_config takes precedence."""
    problem = aws_config_problem(module.params.get("aws_config"))
    if problem:
        module.fail_json(msg=problem)
    return module.client(service, config=Config(retries=dict(RETRIES)))


def explain(
    exc: BaseException, region: Optional[str], action: str, grant: str = "ec2:DescribeInstances and ec2:CreateTags"
) -> str:
    """A message for a failed call: what happened, and what to change (``grant``: the permissions it needs)."""
    if HAS_BOTO3:
        if isinstance(exc, botocore.exceptions.NoCredentialsError):
            return (
                f"{action}: no AWS credentials found. Export AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, set "
                "AWS_PROFILE (or the profile option), or run `aws configure`"
            )
        if isinstance(exc, botocore.exceptions.SSLError):
            return (
                f"{action}: the certificate of the AWS endpoint could not be verified ({exc}). Set aws_ca_bundle "
                "(or AWS_CA_BUNDLE) to the CA bundle that signed it; validate_certs false only for a test endpoint"
            )
        if isinstance(exc, botocore.exceptions.EndpointConnectionError):
            return (
                f"{action}: cannot reach the EC2 endpoint for region {region!r} ({exc}). Check the region name "
                "(it must be one `aws ec2 describe-regions` lists) and the network"
            )
        if isinstance(exc, botocore.exceptions.ClientError):
            error = exc.response.get("Error", {})
            code = error.get("Code", "")
            if code in AUTH_ERRORS:
                return f"{action}: AWS refused the credentials ({code}). Check the access key, secret and profile"
            if code in DENIED_ERRORS:
                return f"{action}: the credentials may not call this ({code}): grant {grant}"
            return f"{action}: {code}: {error.get('Message', '')}"
        if isinstance(exc, (botocore.exceptions.BotoCoreError, ResponseParserError)):
            first_line = str(exc).splitlines()[0]
            return (
                f"{action}: the EC2 endpoint of region {region!r} failed ({first_line}). "
                "Check the region name and the endpoint URL"
            )
    return f"{action}: {exc}"


# The DescribeInstances fields the cluster needs: (XML element under an instance, key in boto3's answer).
_INSTANCE_FIELDS = (
    ("instanceId", "InstanceId"),
    ("instanceType", "InstanceType"),
    ("imageId", "ImageId"),
    ("launchTime", "LaunchTime"),
    ("privateIpAddress", "PrivateIpAddress"),
    ("ipAddress", "PublicIpAddress"),
    ("privateDnsName", "PrivateDnsName"),
    ("dnsName", "PublicDnsName"),
    ("subnetId", "SubnetId"),
    ("vpcId", "VpcId"),
    ("instanceLifecycle", "InstanceLifecycle"),
)
FAST_PAGE_KEY = "AmxClusterInstances"


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(element: Any) -> Dict[str, Any]:
    return {_local(child.tag): child for child in element}


def parse_describe_instances(body: bytes) -> Tuple[List[Dict[str, Any]], Optional[str]]:
    """Read one DescribeInstances XML page: the fields the cluster needs, in boto3's shape, and the next token.

    botocore's generic parser turns every field of every instance into Python objects, which takes seconds for a
    thousand instances; this reads only what simplify_instance() uses. LaunchTime stays a string.
    """
    root = ElementTree.fromstring(body)
    top = _children(root)
    instances: List[Dict[str, Any]] = []
    for reservation in top.get("reservationSet", ()):
        instance_set = _children(reservation).get("instancesSet")
        for element in instance_set if instance_set is not None else ():
            fields = _children(element)
            instance: Dict[str, Any] = {
                key: fields[tag].text or "" for tag, key in _INSTANCE_FIELDS if tag in fields and fields[tag].text
            }
            if "amiLaunchIndex" in fields:
                instance["AmiLaunchIndex"] = int(fields["amiLaunchIndex"].text or 0)
            if "instanceState" in fields:
                state = _children(fields["instanceState"])
                instance["State"] = {"Name": state["name"].text if "name" in state else ""}
            if "placement" in fields:
                placement = _children(fields["placement"])
                instance["Placement"] = {
                    key: placement[tag].text or ""
                    for tag, key in (("availabilityZone", "AvailabilityZone"), ("groupName", "GroupName"))
                    if tag in placement
                }
            tags = []
            for item in fields.get("tagSet", ()):
                pair = _children(item)
                tags.append(
                    {
                        "Key": pair["key"].text or "" if "key" in pair else "",
                        "Value": pair["value"].text or "" if "value" in pair else "",
                    }
                )
            instance["Tags"] = tags
            instances.append(instance)
    token = top["nextToken"].text if "nextToken" in top else None
    return instances, token or None


def _lean_describe_instances(response_dict: Dict[str, Any], customized_response_dict: Dict[str, Any], **_kw) -> None:
    """botocore before-parse hook: read a successful DescribeInstances page ourselves, hand botocore only its token.

    Errors and anything unexpected go to botocore's own parser untouched.
    """
    if response_dict.get("status_code") != 200 or not response_dict.get("body"):
        return
    try:
        instances, token = parse_describe_instances(response_dict["body"])
    except (ElementTree.ParseError, KeyError, ValueError):
        return
    customized_response_dict[FAST_PAGE_KEY] = instances
    token_xml = f"<nextToken>{_escape(token)}</nextToken>" if token else ""
    response_dict["body"] = (
        f'<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        f"<reservationSet/>{token_xml}</DescribeInstancesResponse>"
    ).encode()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def describe_cluster_instances(
    client: Any, cluster_name: str, states: Sequence[str], page_size: int = MAX_PAGE_SIZE
) -> List[Dict[str, Any]]:
    """Every instance of the cluster in the given states, filtered server-side, in large pages.

    The instances come in boto3's shape, reduced to the fields simplify_instance() reads, and only those whose
    cluster tag is exactly ``cluster_name``.
    """
    if not MIN_PAGE_SIZE <= page_size <= MAX_PAGE_SIZE:
        raise AwsAccessError(f"page_size must be between {MIN_PAGE_SIZE} and {MAX_PAGE_SIZE}, got {page_size}")
    event = "before-parse.ec2.DescribeInstances"
    client.meta.events.register(event, _lean_describe_instances, unique_id="amx-cluster-lean-describe")
    try:
        paginator = client.get_paginator("describe_instances")
        pages = paginator.paginate(
            Filters=cluster_filters(cluster_name, states),
            PaginationConfig={"PageSize": page_size},
        )
        instances: List[Dict[str, Any]] = []
        for page in pages:
            if FAST_PAGE_KEY in page:
                instances.extend(page[FAST_PAGE_KEY])
            for reservation in page.get("Reservations", []):
                instances.extend(reservation.get("Instances", []))
    finally:
        client.meta.events.unregister(event, unique_id="amx-cluster-lean-describe")
    return of_cluster(instances, cluster_name)
