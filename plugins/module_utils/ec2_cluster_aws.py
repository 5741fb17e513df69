# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""boto3 access shared by the ec2_cluster inventory plugin and the ec2_cluster_* modules.

The modules take the usual AWS connection options (connection_argument_spec(): region, endpoint, keys, profile,
certificate checks, botocore settings, with the aliases and environment variables AWS users know); what they
leave unset comes from boto3's own chain (environment, shared files, instance roles). Nothing here stores a
credential or puts one in a message. Errors are turned into messages that say what to do.
"""

from __future__ import annotations

import copy
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
AUTH_ERRORS = ("AuthFailure", "UnrecognizedClientException", "InvalidClientTokenId", "SignatureDoesNotMatch")
DENIED_ERRORS = ("UnauthorizedOperation", "AccessDenied", "AccessDeniedException")
MAX_PAGE_SIZE = 1000
MIN_PAGE_SIZE = 5


class AwsAccessError(Exception):
    """A call to AWS failed; the message is meant for a person."""


# The connection options of the collection's AWS modules: the names, aliases and environment variables of the
# amazon.aws modules, so that one module_defaults entry (group/amx.cluster.aws) serves both collections' modules.
_CONNECTION_SPEC: Dict[str, Dict[str, Any]] = {
    "region": {"type": "str", "aliases": ["aws_region"], "env": ["AWS_REGION", "AWS_DEFAULT_REGION"]},
    "endpoint_url": {"type": "str", "aliases": ["aws_endpoint_url"], "env": ["AWS_URL"]},
    "access_key": {
        "type": "str",
        "aliases": ["aws_access_key_id", "aws_access_key"],
        "env": ["AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY"],
        "no_log": False,
    },
    "secret_key": {
        "type": "str",
        "aliases": ["aws_secret_access_key", "aws_secret_key"],
        "env": ["AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY"],
        "no_log": True,
    },
    "session_token": {
        "type": "str",
        "aliases": ["aws_session_token"],
        "env": ["AWS_SESSION_TOKEN"],
        "no_log": True,
    },
    "profile": {"type": "str", "aliases": ["aws_profile"], "env": ["AWS_PROFILE", "AWS_DEFAULT_PROFILE"]},
    "validate_certs": {"type": "bool", "default": True},
    "aws_ca_bundle": {"type": "path", "env": ["AWS_CA_BUNDLE"]},
    "aws_config": {"type": "dict"},
}
CONNECTION_OPTIONS = tuple(_CONNECTION_SPEC)


def connection_argument_spec(env_fallback: Any, required_region: bool = False) -> Dict[str, Dict[str, Any]]:
    """The argument_spec entries of the AWS connection options, for AnsibleModule.

    env_fallback is ansible.module_utils.basic.env_fallback (passed in, so this file imports nothing of Ansible's).
    """
    spec: Dict[str, Dict[str, Any]] = {}
    for name, entry in _CONNECTION_SPEC.items():
        option = copy.deepcopy(entry)
        env = option.pop("env", None)
        if env:
            option["fallback"] = (env_fallback, env)
        spec[name] = option
    if required_region:
        spec["region"]["required"] = True
    return spec


def session(
    profile: Optional[str] = None,
    access_key: Optional[str] = None,
    secret_key: Optional[str] = None,
    session_token: Optional[str] = None,
) -> Any:
    """A boto3 session for explicit keys, a profile, or the default chain (never keys and a profile at once)."""
    if not HAS_BOTO3:
        raise AwsAccessError(MISSING_BOTO3)
    if profile and (access_key or secret_key or session_token):
        raise AwsAccessError(
            f"both the profile {profile!r} and access keys are set (as options or through AWS_PROFILE and "
            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN): give one or the other"
        )
    if bool(access_key) != bool(secret_key):
        given, missing = ("access_key", "secret_key") if access_key else ("secret_key", "access_key")
        raise AwsAccessError(f"{given} is set without {missing}: give both (or neither, for the default chain)")
    try:
        return boto3.session.Session(
            profile_name=profile or None,
            aws_access_key_id=access_key or None,
            aws_secret_access_key=secret_key or None,
            aws_session_token=session_token or None,
        )
    except botocore.exceptions.ProfileNotFound as exc:
        raise AwsAccessError(
            f"AWS profile {profile!r} is not in the AWS config or credentials files: fix the profile name or "
            f"create it with `aws configure --profile {profile}`"
        ) from exc


def _client_config(max_attempts: int, aws_config: Optional[Mapping[str, Any]]) -> Any:
    config = Config(retries={"max_attempts": max_attempts, "mode": "standard"})
    if not aws_config:
        return config
    try:
        return config.merge(Config(**dict(aws_config)))
    except TypeError as exc:
        raise AwsAccessError(
            f"aws_config has a key that botocore.config.Config does not take ({exc}): use only its keyword "
            "arguments (connect_timeout, read_timeout, retries, max_pool_connections, ...)"
        ) from exc


def ec2_client(
    aws_session: Any,
    region: Optional[str],
    endpoint_url: Optional[str] = None,
    max_attempts: int = 5,
    verify: Any = None,
    aws_config: Optional[Mapping[str, Any]] = None,
    service: str = "ec2",
) -> Any:
    """A client for one region (endpoint_url points at a local EC2 API such as moto).

    verify is botocore's: None for its default, False for no certificate check, or a CA bundle's path.
    """
    region = region or aws_session.region_name
    if not region:
        raise AwsAccessError(
            "no AWS region: set the region option (or AWS_REGION / AWS_DEFAULT_REGION, or a region in the profile)"
        )
    return aws_session.client(
        service,
        region_name=region,
        endpoint_url=endpoint_url or None,
        config=_client_config(max_attempts, aws_config),
        verify=verify,
    )


def verify_setting(validate_certs: bool, aws_ca_bundle: Optional[str]) -> Any:
    """botocore's verify from the modules' validate_certs and aws_ca_bundle options."""
    if not validate_certs:
        return False
    return aws_ca_bundle or None


def module_client(params: Mapping[str, Any], service: str = "ec2", aws_session: Any = None) -> Tuple[Any, Any]:
    """(session, client) from a module's connection options (see connection_argument_spec())."""
    if aws_session is None:
        aws_session = session(
            params.get("profile"), params.get("access_key"), params.get("secret_key"), params.get("session_token")
        )
    client = ec2_client(
        aws_session,
        params.get("region"),
        params.get("endpoint_url"),
        verify=verify_setting(params.get("validate_certs", True), params.get("aws_ca_bundle")),
        aws_config=params.get("aws_config"),
        service=service,
    )
    return aws_session, client


def explain(exc: BaseException, region: Optional[str], action: str) -> str:
    """A message for a failed call: what happened, and what to change."""
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
                return (
                    f"{action}: the credentials may not call this ({code}): "
                    "grant ec2:DescribeInstances and ec2:CreateTags"
                )
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
