# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A local EC2 API for the EC2 tests: a moto server on 127.0.0.1, started once, reset before every test.

Every subprocess the tests start (ansible-playbook, ansible-inventory) gets a clean environment: no AWS_* variable
from the caller, a temporary HOME (so no ~/.aws files and no SSH keys of the user), dummy credentials, the
instance-metadata lookup switched off, and AWS_ENDPOINT_URL pointing at moto, so that even a call that forgot its
endpoint goes to 127.0.0.1 and never to AWS.
"""

from __future__ import annotations

import base64
import json
import pathlib
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Optional

import moto_server
import pytest
from ansible_env import ansible_env
from ec2_helpers import ACCESS_KEY_ID, AMIS, REGION, REPO, SECRET_ACCESS_KEY, VENV_BIN, Run, parse_recap


def plain(value: Any) -> Any:
    """ansible-inventory marks untrusted strings as {"__ansible_unsafe": "..."}: unwrap them."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


class Moto:
    """The running moto server and the few moto-api calls the tests use."""

    def __init__(self, url: str, recording: pathlib.Path):
        self.url = url
        self.recording = recording

    def reset(self) -> None:
        moto_server.reset(self.url)

    def start_recording(self) -> None:
        moto_server.post(self.url, "/moto-api/recorder/reset-recording")
        moto_server.post(self.url, "/moto-api/recorder/start-recording")

    def stop_recording(self) -> None:
        moto_server.post(self.url, "/moto-api/recorder/stop-recording")

    def recorded(self, action: str) -> List[Dict[str, List[str]]]:
        """The form parameters of every recorded EC2 Query API request with this Action."""
        with urllib.request.urlopen(self.url + "/moto-api/recorder/download-recording", timeout=10) as response:
            lines = response.read().decode().splitlines()
        requests = []
        for line in lines:
            entry = json.loads(line)
            body = entry.get("body") or ""
            if entry.get("body_encoded"):
                body = base64.b64decode(body).decode()
            params = urllib.parse.parse_qs(body)
            if params.get("Action") == [action]:
                requests.append(params)
        return requests


@pytest.fixture(scope="session")
def moto(tmp_path_factory) -> Moto:
    for tool in ("ansible-playbook", "ansible-inventory", "moto_server"):
        if not (VENV_BIN / tool).exists():
            pytest.skip(f"{tool} is not in {VENV_BIN}: run `make setup` first")
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed (openssh-client), needed to make the key pair to import")
    workdir = tmp_path_factory.mktemp("moto")
    amis = workdir / "amis.json"
    amis.write_text(json.dumps(AMIS))
    recording = workdir / "recording.jsonl"
    try:
        with moto_server.running(workdir, MOTO_AMIS_PATH=str(amis), MOTO_RECORDER_FILEPATH=str(recording)) as url:
            yield Moto(url, recording)
    except RuntimeError as error:
        pytest.fail(str(error))


@pytest.fixture
def ec2(moto):
    """A boto3 EC2 client on moto, with explicit dummy credentials (for the tests' own checks)."""
    import boto3

    return boto3.client(
        "ec2",
        region_name=REGION,
        endpoint_url=moto.url,
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
    )


@pytest.fixture
def home(tmp_path) -> pathlib.Path:
    """A HOME of its own, with an SSH key pair to import."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    subprocess.run(
        [
            "ssh-keygen",
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "test@controller",
            "-f",
            str(home / ".ssh" / "id_ed25519"),
        ],
        check=True,
    )
    return home


@pytest.fixture
def aws_env(moto, home) -> Dict[str, str]:
    """The environment of every Ansible subprocess: clean, local, with dummy credentials."""
    env = ansible_env(
        home,
        drop=("AWS_", "BOTO"),
        AWS_ACCESS_KEY_ID=ACCESS_KEY_ID,
        AWS_SECRET_ACCESS_KEY=SECRET_ACCESS_KEY,
        AWS_REGION=REGION,
        AWS_DEFAULT_REGION=REGION,
        AWS_ENDPOINT_URL=moto.url,
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=str(home / ".aws" / "config"),
        AWS_SHARED_CREDENTIALS_FILE=str(home / ".aws" / "credentials"),
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        env.pop(proxy, None)
    return env


@pytest.fixture(autouse=True)
def clean_moto(moto):
    moto.reset()
    yield


@pytest.fixture
def inventory_file(tmp_path, moto):
    """Write an amx.cluster.ec2_cluster inventory configuration pointing at moto."""

    def write(cluster: str, extra: str = "", name: str = "ec2_cluster.yml") -> pathlib.Path:
        path = tmp_path / f"{cluster}.{name}"
        path.write_text(
            "plugin: amx.cluster.ec2_cluster\n"
            f"cluster_name: {cluster}\nregions: [{REGION}]\nendpoint_url: {moto.url}\n{extra}"
        )
        return path

    return write


@pytest.fixture
def playbook(aws_env, tmp_path):
    """Run ansible-playbook with the clean environment; returns a Run.

    Without an inventory of the test's own, an empty one: never the project's default (inventory/local.yml).
    """
    empty = tmp_path / "empty-inventory.yml"
    empty.write_text("all: {}\n")

    def run(
        path: pathlib.Path,
        extra_vars: Optional[Dict[str, Any]] = None,
        inventory: Optional[pathlib.Path] = None,
        env: Optional[Dict[str, str]] = None,
        timeout: int = 600,
    ) -> Run:
        args = [str(VENV_BIN / "ansible-playbook"), str(path), "-i", str(inventory or empty)]
        if extra_vars:
            args += ["-e", json.dumps(extra_vars)]
        started = time.monotonic()
        proc = subprocess.run(
            args,
            cwd=REPO,
            env=env if env is not None else aws_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
        return Run(args, proc.returncode, proc.stdout, parse_recap(proc.stdout), time.monotonic() - started)

    return run


@pytest.fixture
def inventory_list(aws_env):
    """ansible-inventory --list on an inventory source; returns (Run, parsed JSON or None)."""

    def run(path: pathlib.Path, env: Optional[Dict[str, str]] = None, extra: Optional[List[str]] = None):
        args = [str(VENV_BIN / "ansible-inventory"), "-i", str(path), "--list"] + (extra or [])
        started = time.monotonic()
        proc = subprocess.run(
            args,
            cwd=REPO,
            env=env if env is not None else aws_env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        result = Run(args, proc.returncode, proc.stdout + proc.stderr, {}, time.monotonic() - started)
        data = plain(json.loads(proc.stdout)) if proc.returncode == 0 else None
        return result, data

    return run
