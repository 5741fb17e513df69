# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The AWS connection options of the collection's modules against the local EC2 API: module_defaults through the
action group, the amazon.aws aliases and environment variables, refusals, and certificate checks over TLS.

Every run starts from an environment without a region, an endpoint or a key (AWS_ENDPOINT_URL points at a closed
port of 127.0.0.1, so a call the options miss is refused locally and never leaves the machine): what reaches moto
came through the option under test.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import pathlib

import moto_server
import pytest
from ec2_helpers import ACCESS_KEY_ID, HERE, REGION, SECRET_ACCESS_KEY, ad_hoc, launch
from net import free_port


@pytest.fixture
def bare_env(aws_env):
    """The tests' clean environment less every AWS setting that could stand in for the option under test."""
    env = {key: value for key, value in aws_env.items() if not key.startswith("AWS_")}
    env.update(
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=aws_env["AWS_CONFIG_FILE"],
        AWS_SHARED_CREDENTIALS_FILE=aws_env["AWS_SHARED_CREDENTIALS_FILE"],
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}",
    )
    return env


def run_nodes(env, tmp_path, args):
    """ansible localhost -m amx.cluster.ec2_cluster_nodes -a ARGS -v; (process, result as JSON)."""
    return ad_hoc(env, tmp_path, "ec2_cluster_nodes", json.dumps(args), "-v")


def test_module_defaults_of_the_group_reach_both_collections(ec2, moto, playbook, bare_env, tmp_path):
    master = launch(ec2, 1, "master", "grp")[0]
    result_file = tmp_path / "seen.json"
    extra = dict(
        cluster_name="grp",
        region=REGION,
        endpoint_url=moto.url,
        access_key=ACCESS_KEY_ID,
        secret_key=SECRET_ACCESS_KEY,
        result_file=str(result_file),
    )
    run = playbook(HERE / "playbooks" / "connection_defaults.yml", extra, env=bare_env)
    assert run.returncode == 0, run.explain()
    seen = json.loads(result_file.read_text())
    assert seen == {"nodes": [master["InstanceId"]], "vcpus_per_node": 2, "instances": [master["InstanceId"]]}
    assert SECRET_ACCESS_KEY not in run.output


def test_without_the_defaults_the_module_finds_no_region(ec2, bare_env, tmp_path):
    """The control case of the test above: the same environment, no option, no region."""
    proc, result = run_nodes(bare_env, tmp_path, {"cluster_name": "grp"})
    assert proc.returncode != 0, proc.stdout
    assert "module requires a region" in result["msg"]


@pytest.mark.parametrize(
    "variables",
    [
        # The names boto3 does not read itself: only the module's fallback can carry them.
        {
            "AWS_REGION": REGION,
            "AWS_URL": "{url}",
            "AWS_ACCESS_KEY": ACCESS_KEY_ID,
            "AWS_SECRET_KEY": SECRET_ACCESS_KEY,
        },
        {
            "AWS_DEFAULT_REGION": REGION,
            "AWS_URL": "{url}",
            "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
            "AWS_SESSION_TOKEN": "token-of-the-test",
        },
    ],
    ids=["second-names", "first-names"],
)
def test_environment_fallbacks(ec2, moto, bare_env, tmp_path, variables):
    master = launch(ec2, 1, "master", "envs")[0]
    env = dict(bare_env, **{key: value.format(url=moto.url) for key, value in variables.items()})
    proc, result = run_nodes(env, tmp_path, {"cluster_name": "envs", "tag_nodes": False})
    assert proc.returncode == 0, proc.stdout + json.dumps(result)
    assert [node["instance_id"] for node in result["nodes"]] == [master["InstanceId"]]
    assert SECRET_ACCESS_KEY not in proc.stdout + proc.stderr


def test_amazon_aws_aliases(ec2, moto, bare_env, tmp_path):
    master = launch(ec2, 1, "master", "alias")[0]
    args = {
        "cluster_name": "alias",
        "aws_region": REGION,
        "aws_endpoint_url": moto.url,
        "aws_access_key_id": ACCESS_KEY_ID,
        "aws_secret_access_key": SECRET_ACCESS_KEY,
        "tag_nodes": False,
    }
    proc, result = run_nodes(bare_env, tmp_path, args)
    assert proc.returncode == 0, proc.stdout + json.dumps(result)
    assert [node["instance_id"] for node in result["nodes"]] == [master["InstanceId"]]
    # -v prints the module's arguments: the secret is masked there.
    assert SECRET_ACCESS_KEY not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        # amazon.aws's own refusals (AnsibleAWSModule), the words its modules earlier in the play use too.
        ({"profile": "lab", "access_key": ACCESS_KEY_ID, "secret_key": SECRET_ACCESS_KEY}, "both a profile and access"),
        ({"access_key": ACCESS_KEY_ID}, "missing: aws_secret_access_key"),
        ({"aws_config": {"conect_timeout": 5}}, "aws_config has a key that botocore.config.Config does not take"),
    ],
    ids=["profile-and-keys", "key-without-secret", "unknown-botocore-setting"],
)
def test_refusals_name_the_options(moto, bare_env, tmp_path, args, message):
    proc, result = run_nodes(bare_env, tmp_path, {"cluster_name": "refused", "region": REGION, **args})
    assert proc.returncode != 0, proc.stdout
    assert message in result["msg"]
    assert SECRET_ACCESS_KEY not in result["msg"]


def write_certificates(folder: pathlib.Path):
    """A CA and a server certificate for 127.0.0.1 signed by it; returns (ca, cert, key) paths."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def name(text):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("amx.cluster test CA"))
        .issuer_name(name("amx.cluster test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


@pytest.fixture(scope="module")
def tls_moto(tmp_path_factory):
    """A second moto server, over TLS with a certificate of a CA of the test's own; (https URL, CA path)."""
    workdir = tmp_path_factory.mktemp("moto-tls")
    ca, cert, key = write_certificates(workdir)
    with moto_server.running(workdir, tls=(cert, key, ca)) as url:
        yield url, ca


@pytest.mark.parametrize(
    "args, ok",
    [
        ({}, False),
        ({"aws_ca_bundle": "{ca}"}, True),
        ({"validate_certs": False}, True),
    ],
    ids=["default-refuses-an-unknown-ca", "ca-bundle", "validate-certs-false"],
)
def test_certificate_checks(tls_moto, bare_env, tmp_path, args, ok):
    url, ca = tls_moto
    module_args = {
        "cluster_name": "tls",
        "region": REGION,
        "endpoint_url": url,
        "access_key": ACCESS_KEY_ID,
        "secret_key": SECRET_ACCESS_KEY,
        **{key: value.format(ca=ca) if isinstance(value, str) else value for key, value in args.items()},
    }
    proc, result = run_nodes(bare_env, tmp_path, module_args)
    if ok:
        assert proc.returncode == 0, proc.stdout + json.dumps(result)
        assert result["nodes"] == []
    else:
        assert proc.returncode != 0, proc.stdout
        assert "could not be verified" in result["msg"] and "aws_ca_bundle" in result["msg"]


def test_ca_bundle_from_the_environment(tls_moto, bare_env, tmp_path):
    url, ca = tls_moto
    env = dict(bare_env, AWS_CA_BUNDLE=str(ca))
    args = {"cluster_name": "tls", "region": REGION, "endpoint_url": url}
    proc, result = run_nodes(env, tmp_path, dict(args, access_key=ACCESS_KEY_ID, secret_key=SECRET_ACCESS_KEY))
    assert proc.returncode == 0, proc.stdout + json.dumps(result)
