# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The AWS connection options of the collection's modules (plugins/module_utils/ec2_cluster_aws.py's spec)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  region:
    description:
      - The AWS region to talk to.
      - When not given, E(AWS_REGION) or E(AWS_DEFAULT_REGION), else the region of the profile.
    type: str
    aliases: [aws_region]
  endpoint_url:
    description:
      - The URL of the AWS API to use instead of AWS's own endpoints, for a local stand-in such as moto.
      - When not given, E(AWS_URL); else boto3 decides (E(AWS_ENDPOINT_URL_EC2), E(AWS_ENDPOINT_URL), or AWS).
    type: str
    aliases: [aws_endpoint_url]
  access_key:
    description:
      - The access key id of the AWS credentials; needs O(secret_key).
      - When not given, E(AWS_ACCESS_KEY_ID) or E(AWS_ACCESS_KEY); else boto3's credential chain (the shared
        files, an instance role).
      - Cannot be used with O(profile).
    type: str
    aliases: [aws_access_key_id, aws_access_key]
  secret_key:
    description:
      - The secret access key that goes with O(access_key).
      - When not given, E(AWS_SECRET_ACCESS_KEY) or E(AWS_SECRET_KEY).
    type: str
    aliases: [aws_secret_access_key, aws_secret_key]
  session_token:
    description:
      - The session token of temporary credentials (AWS STS).
      - When not given, E(AWS_SESSION_TOKEN).
    type: str
    aliases: [aws_session_token]
  profile:
    description:
      - A named profile of the AWS config and credentials files.
      - When not given, E(AWS_PROFILE) or E(AWS_DEFAULT_PROFILE); else the default chain.
      - Cannot be used with O(access_key), O(secret_key) or O(session_token).
    type: str
    aliases: [aws_profile]
  validate_certs:
    description:
      - Check the TLS certificate of the AWS endpoint.
      - V(false) only for a test endpoint; for a private CA, set O(aws_ca_bundle) instead.
    type: bool
    default: true
  aws_ca_bundle:
    description:
      - A CA bundle to check the endpoint's certificate with, instead of botocore's.
      - When not given, E(AWS_CA_BUNDLE).
    type: path
  aws_config:
    description:
      - Settings for botocore's client configuration (the keyword arguments of C(botocore.config.Config), for
        example C(connect_timeout), C(read_timeout) or C(retries)); they take precedence over the module's retry
        setting (5 attempts, standard mode).
    type: dict
notes:
  - The connection options have the names, aliases and environment variables of the amazon.aws modules. This
    collection's modules are in the action group C(amx.cluster.aws), which also holds every module of the
    C(amazon.aws.aws) group, so C(module_defaults) for C(group/amx.cluster.aws) reach both collections' modules.
    The groups C(group/aws) and C(group/amazon.aws.aws) are amazon.aws's own and do not reach this collection's
    modules.
  - The module runs where the task runs (the controller for C(localhost)); the environment variables and AWS
    files are read there.
"""
