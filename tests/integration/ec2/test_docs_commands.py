# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The shell commands of README.md, docs/EC2.md and docs/REPRODUCE.md, run as written.

Every command of every shell block (```sh, ```bash, ```console, ```shell) is accounted for here, by the first line
of its text: it runs here as written (RUN_HERE, in the order of test_cloud_commands; RUN_BLOCKS, whole blocks), or
it is an ansible-playbook command that needs machines this test does not have and runs with --syntax-check added
(SYNTAX_ONLY), or it cannot run here at all (NOT_HERE). Each list says why. A command in no list, or an entry that
no longer matches a command, fails test_every_command_is_accounted_for, so the docs and this test move together.
What runs is the docs' own text, read from the files at test time.

The commands run in a copy of the checkout (its tracked files; .venv linked to the real one, .collections linked as
`make setup` does), so that `cp ...` steps and files the playbooks write land there. Only the environment is set:
the local EC2 API (AWS_ENDPOINT_URL, the shared moto server of conftest.py, which serves Canonical-named images),
dummy credentials, a temporary HOME with an SSH key (the key step of EC2.md's "Before the first run"). moto's
instances run nothing, so the copy in which the real-account commands run holds the two settings a local API needs,
as group_vars of its own (LOCAL_API_VARS): nodes are not configured over SSH (their addresses are not this machine's)
and teardown does not look for a placement group (moto answers that call with HTTP 500). EC2.md's walk-through of
the local API runs in a copy without them, whole and as written: it passes both itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Dict, List, Mapping, Tuple

import pytest
import yaml
from ec2_helpers import FOCAL_IMAGE, REPO

DOCS = ("README.md", "docs/EC2.md", "docs/REPRODUCE.md")
SHELL_LANGUAGES = {"sh", "bash", "console", "shell"}
WALKTHROUGH_PORT = 5077  # as written in EC2.md

# Run as written against the shared moto server by test_cloud_commands (in the order a reader would: provision
# before the inventory, teardown last), in the copy with LOCAL_API_VARS: first line -> the docs that hold the
# command (with the same text in each).
RUN_HERE: Dict[str, Tuple[str, ...]] = {
    "make setup && . .venv/bin/activate   # or call .venv/bin/ansible-playbook": ("README.md",),
    "ansible-inventory -i inventory/ec2_cluster.yml --graph": ("docs/EC2.md",),
    "ansible-playbook -i inventory/ec2_cluster.yml playbooks/provision.yml -e ec2_cluster_admin_cidr=203.0.113.7/32": (
        "README.md",
        "docs/EC2.md",
    ),
    "ansible-playbook -i inventory/ec2_cluster.yml playbooks/provision.yml -e ec2_cluster_admin_cidr=203.0.113.7/32 "
    "\\": ("docs/EC2.md",),
    "ansible-playbook -i inventory/ec2_cluster.yml playbooks/status.yml": ("docs/EC2.md",),
    "ansible-playbook -i inventory/ec2_cluster.yml playbooks/teardown.yml": ("README.md", "docs/EC2.md"),
    "ansible-playbook playbooks/teardown.yml -e ec2_cluster_name=amx-demo -e ec2_cluster_region=eu-west-1": (
        "docs/EC2.md",
    ),
    "cp inventory/ec2_cluster.yml blog.ec2_cluster.yml": ("docs/REPRODUCE.md",),
    "ansible-playbook -i blog.ec2_cluster.yml playbooks/provision.yml -e @playbooks/vars/blog-recipe.yml \\": (
        "docs/REPRODUCE.md",
    ),
    "ansible-playbook -i blog.ec2_cluster.yml playbooks/teardown.yml": ("docs/REPRODUCE.md",),
    "cp inventory/fleet.example.yml my-fleet.yml                # then put your machines in it": ("README.md",),
}

# Whole blocks run as one script (first line of the block's first command -> doc); every command in them runs.
RUN_BLOCKS: Dict[str, str] = {
    ". .venv/bin/activate": "docs/EC2.md",  # the local EC2 API walk-through: its own moto server on port 5077
}

# ansible-playbook commands run as written with --syntax-check added: the inventory parses (the file name the plugin
# accepts, a file that exists), the playbook and every -e @file exist, the plays parse.
SYNTAX_ONLY: Dict[str, str] = {
    "ansible-playbook playbooks/provision.yml": "the local demo's provision installs the training stack on this "
    "machine (minutes, and it changes the machine); `make demo` runs it",
    "ansible-playbook -i inventory/ec2_cluster.yml playbooks/train.yml": "needs nodes that answer SSH: a real EC2 "
    "cluster (moto's instances run nothing)",
    "ansible-playbook -i my-fleet.yml playbooks/provision.yml   # node set-up, SSH mesh, ~/hosts": "needs machines of "
    "your own; the molecule fleet scenario runs provision.yml on containers",
    "ansible-playbook -i my-fleet.yml playbooks/train.yml       # preflight, launch, progress, results": "needs "
    "machines of your own; the molecule fleet scenario runs train.yml on containers",
    "ansible-playbook -i blog.ec2_cluster.yml playbooks/train.yml -e @playbooks/vars/blog-recipe.yml -e train_run_id="
    "blog-1": "needs the four configured r7iz.metal-16xl nodes, the Hugging Face Hub (model, data set) and about an "
    "hour of training",
}

# Commands that cannot run here at all.
NOT_HERE: Dict[str, str] = {
    "make demo   # this machine as a one-node cluster: provision, then train a tiny QA model; no cloud, no hub": "it "
    "installs the training stack on this machine and trains a model (minutes, and it changes the machine); its "
    "parts run in tests/integration/train and the molecule scenarios",
    "make test   # every check: lint, ansible-test sanity, unit, integration, molecule on containers": "the whole "
    "suite (about 50 minutes), of which this test is a part",
    "python3 -m pip install 'ansible>=11'": "installs from the package index into the system's Python; the "
    "controller virtualenv has the `ansible` package already",
    "ansible-galaxy collection install --offline amx-cluster-0.2.0.tar.gz": "tests/build-install.sh builds the "
    "tarball and runs this install (--offline, the dependencies from the `ansible` package) in a folder of its own",
    "ansible-galaxy collection download -p offline/ 'amazon.aws:>=9.0.0' 'ansible.posix:>=1.5.0' "
    "'community.crypto:>=2.0.0'": "needs Galaxy, which is not reachable here",
    "ansible-galaxy collection install --offline offline/*.tar.gz amx-cluster-0.2.0.tar.gz": "needs the tarballs "
    "that the Galaxy download above makes",
    ".venv/bin/pytest tests/integration/ec2            # all of it": "the EC2 suite itself, which holds this test "
    "(`make integration` runs it)",
    ".venv/bin/pytest tests/integration/ec2 -m 'not slow'": "the EC2 suite itself, which holds this test",
    "mpirun -f ~/hosts -n 8 -ppn 2 -genv OMP_NUM_THREADS=24 -genv LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc.so "
    "\\": "the post's launch line, shown to compare: it runs on the master of a configured cluster "
    "(tests/unit/test_blog_recipe.py compares it with the preset's, flag by flag)",
    "mpirun -f ~/hosts -n 8 -ppn 2 -prepend-rank -localhost 172.31.3.190 -genv OMP_NUM_THREADS=24 \\": "the preset's "
    "launch line as train.yml writes it on the master of a configured cluster, shown to compare",
    '-e train_mpi=intel -e \'{"torch_stack_extra_packages": ["impi-rt"]}\'': "options to add to train.yml, not a "
    "command of their own",
    "pip download --no-deps --only-binary=:all: --python-version 3.8 --platform linux_x86_64 -d ~/amx-wheels \\": (
        "needs PyTorch's CPU index and Intel's wheel page, which cannot be reached here; test_stack_sources.py "
        "serves the same wheels from a folder through torch_stack_find_links"
    ),
}

# The two settings a local EC2 API needs in the copy where the real-account commands run (see the module's text).
LOCAL_API_VARS = {"ec2_cluster_configure_nodes": False, "ec2_cluster_teardown_placement_group": False}


@dataclasses.dataclass
class Command:
    doc: str
    text: str  # as written: continuation lines and inline comments kept

    @property
    def first_line(self) -> str:
        return self.text.splitlines()[0].strip()


@dataclasses.dataclass
class Block:
    doc: str
    language: str
    commands: List[Command]


_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


def doc_blocks(doc: str) -> List[Block]:
    """Every fenced block of the doc, its text dedented by the fence's indentation."""
    blocks = []
    lines = (REPO / doc).read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        index += 1
        if not opening:
            continue
        indent, language = opening.group(1), opening.group(2)
        body = []
        while index < len(lines) and lines[index].strip() != "```":
            body.append(lines[index][len(indent) :] if lines[index].startswith(indent) else lines[index])
            index += 1
        index += 1
        blocks.append(Block(doc, language, split_commands(doc, body) if language in SHELL_LANGUAGES else []))
    return blocks


def split_commands(doc: str, lines: List[str]) -> List[Command]:
    """The block's commands: a line, plus the lines that a trailing backslash or an open quote carries on to.
    Lines that are only a comment are not commands."""
    commands, pending = [], []
    for line in lines:
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending.append(line)
        text = "\n".join(pending)
        if line.rstrip().endswith("\\"):
            continue
        try:
            shlex.split(text, comments=True)
        except ValueError:  # an open quote: the command goes on
            continue
        commands.append(Command(doc, text))
        pending = []
    assert not pending, f"{doc}: a shell block ends inside a command: {pending[0]!r}"
    return commands


def all_commands() -> List[Command]:
    return [command for doc in DOCS for block in doc_blocks(doc) for command in block.commands]


def the_command(first_line: str, docs: Tuple[str, ...]) -> str:
    """The text of the command that starts so, the same in each of docs."""
    texts = {c.doc: c.text for c in all_commands() if c.first_line == first_line}
    assert set(texts) == set(docs), f"{first_line!r} is in {sorted(texts)}, expected in {sorted(docs)}"
    assert len(set(texts.values())) == 1, f"{first_line!r} differs between {docs}: {texts}"
    return next(iter(texts.values()))


def the_block(first_line: str, doc: str) -> Block:
    matches = [b for b in doc_blocks(doc) if b.commands and b.commands[0].first_line == first_line]
    assert len(matches) == 1, f"{doc}: {len(matches)} shell blocks start with {first_line!r}"
    return matches[0]


def test_every_command_is_accounted_for():
    commands = all_commands()
    assert len(commands) > 20, "the docs' shell blocks were not found"
    in_run_blocks = {c.first_line for first, doc in RUN_BLOCKS.items() for c in the_block(first, doc).commands}
    listed = [set(RUN_HERE), in_run_blocks, set(SYNTAX_ONLY), set(NOT_HERE)]
    for one, other in [(a, b) for i, a in enumerate(listed) for b in listed[i + 1 :]]:
        assert not one & other, f"listed twice: {sorted(one & other)}"
    accounted = set().union(*listed)
    unaccounted = sorted({f"{c.doc}: {c.first_line}" for c in commands if c.first_line not in accounted})
    assert not unaccounted, (
        "shell commands of the docs that this test neither runs nor lists with the reason it cannot (add each to "
        f"RUN_HERE, SYNTAX_ONLY or NOT_HERE): {unaccounted}"
    )
    stale = sorted(accounted - {c.first_line for c in commands})
    assert not stale, f"listed here but in no doc's shell block any more: {stale}"
    for first_line, docs in RUN_HERE.items():
        the_command(first_line, docs)


def test_every_fence_names_its_language():
    """A block without a language would escape the accounting above: each says what it is (sh, text ...)."""
    bare = [f"{b.doc}: block {i + 1}" for doc in DOCS for i, b in enumerate(doc_blocks(doc)) if not b.language]
    assert not bare, f"fenced blocks without a language: {bare}"


def test_the_tarball_named_in_the_docs_is_this_version():
    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    named = {m for c in all_commands() for m in re.findall(r"amx-cluster-([0-9][^ ]*)\.tar\.gz", c.text)}
    assert named == {version}, f"the docs install amx-cluster-{named}.tar.gz; galaxy.yml is at {version}"


# -- running them -----------------------------------------------------------------------------------------------


def checkout_copy(target: pathlib.Path) -> pathlib.Path:
    """The tracked files of the checkout, with their times (so that `make setup` finds the virtualenv up to date),
    .venv linked to the real one and .collections linked as `make setup` links it."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, text=True
    ).stdout.split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name, follow_symlinks=False)
    (target / ".venv").symlink_to((REPO / ".venv").resolve())
    link = target / ".collections" / "ansible_collections" / "amx" / "cluster"
    link.parent.mkdir(parents=True)
    link.symlink_to("../../..")
    return target


def shell(script: str, cwd: pathlib.Path, env: Mapping[str, str], timeout: int = 600) -> Tuple[int, str]:
    """Run the text with bash, as a user would type it, in a process group of its own: a server it started in the
    background is stopped when bash ends, also when the script fails before its own `kill`. The output goes to a
    file, which such a server cannot hold open."""
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            ["bash", "-c", script],
            cwd=cwd,
            env=dict(env),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            process.wait(timeout=timeout)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            if process.poll() is None:
                process.kill()
                process.wait()
        log.seek(0)
        return process.returncode, log.read()


def plain_env(home: pathlib.Path, **extra: str) -> Dict[str, str]:
    """This process's environment without Ansible, AWS, boto or proxy settings and without the virtualenv on PATH
    (the docs activate it), with a HOME of its own; extra added last."""
    drop = ("ANSIBLE_", "AWS_", "BOTO", "VIRTUAL_ENV", "MOTO_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop) and k.lower() not in PROXIES}
    venv = str((REPO / ".venv" / "bin").resolve())
    env["PATH"] = ":".join(p for p in env.get("PATH", "/usr/bin:/bin").split(":") if p and venv not in p)
    env.update(HOME=str(home), ANSIBLE_NOCOLOR="1", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    env.update(extra)
    return env


PROXIES = {"http_proxy", "https_proxy", "all_proxy"}


def cluster_instances(client, cluster: str) -> Dict[str, List[str]]:
    """The cluster's instances in moto by state: {state: [instance type and image of each]}."""
    answer = client.describe_instances(Filters=[{"Name": "tag:amx.cluster/cluster", "Values": [cluster]}])
    states: Dict[str, List[str]] = {}
    for reservation in answer["Reservations"]:
        for instance in reservation["Instances"]:
            states.setdefault(instance["State"]["Name"], []).append(instance["InstanceType"])
    return states


@pytest.fixture
def doc_env(aws_env, home) -> Dict[str, str]:
    """The real-account commands' environment: the tests' (local API, dummy credentials, HOME with a key) less
    ANSIBLE_CONFIG (the copy's own ansible.cfg applies, as in a checkout) and less the virtualenv on PATH."""
    env = plain_env(home)
    env.update({k: v for k, v in aws_env.items() if k.startswith("AWS_")})
    return env


def test_cloud_commands(moto, doc_env, tmp_path):
    """README.md's, EC2.md's and REPRODUCE.md's commands for a real account, against the local EC2 API."""
    import boto3

    copy = checkout_copy(tmp_path / "checkout")
    local_api = copy / "playbooks" / "group_vars" / "all"
    local_api.mkdir(parents=True)
    (local_api / "local_api.yml").write_text(yaml.safe_dump(LOCAL_API_VARS))
    # The shell of a reader who followed the README: the virtualenv active (`. .venv/bin/activate`, run below too).
    env = dict(doc_env, VIRTUAL_ENV=str(copy / ".venv"), PATH=f"{copy / '.venv' / 'bin'}:{doc_env['PATH']}")
    ran = set()

    def run(first_line: str) -> str:
        text = the_command(first_line, RUN_HERE[first_line])
        started = time.monotonic()
        code, output = shell(text, copy, env)
        assert code == 0, f"{text}\nexit {code} after {time.monotonic() - started:.0f} s\n{output[-6000:]}"
        ran.add(first_line)
        return output

    def ec2(region):
        return boto3.client(
            "ec2",
            region_name=region,
            endpoint_url=moto.url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    run("make setup && . .venv/bin/activate   # or call .venv/bin/ansible-playbook")

    # README "On EC2" and EC2.md: the sample inventory's cluster amx-demo in eu-west-1.
    run(
        "ansible-playbook -i inventory/ec2_cluster.yml playbooks/provision.yml -e ec2_cluster_admin_cidr=203.0.113.7/32"
    )
    states = cluster_instances(ec2("eu-west-1"), "amx-demo")
    assert set(states) == {"running"} and len(states["running"]) == 4, states
    graph = run("ansible-inventory -i inventory/ec2_cluster.yml --graph")
    for name in ("master", "node1", "node2", "node3"):
        assert f"|--{name}\n" in graph, graph
    # EC2.md "Autostop and status": the idle time changed on the running cluster, then its status.
    provision = "ansible-playbook -i inventory/ec2_cluster.yml playbooks/provision.yml"
    run(f"{provision} -e ec2_cluster_admin_cidr=203.0.113.7/32 \\")
    status = run("ansible-playbook -i inventory/ec2_cluster.yml playbooks/status.yml")
    for name in ("master", "node1", "node2", "node3"):
        assert name in status, status[-3000:]
    run("ansible-playbook -i inventory/ec2_cluster.yml playbooks/teardown.yml")
    assert set(cluster_instances(ec2("eu-west-1"), "amx-demo")) == {"terminated"}
    # The other teardown of EC2.md, without the inventory file: finds nothing left, changes nothing.
    output = run("ansible-playbook playbooks/teardown.yml -e ec2_cluster_name=amx-demo -e ec2_cluster_region=eu-west-1")
    assert re.search(r"localhost\s+: ok=\d+\s+changed=0 ", output), output[-3000:]

    # REPRODUCE.md: the inventory under the name the plugin reads, then the preset's four r7iz nodes on Ubuntu 20.04.
    run("cp inventory/ec2_cluster.yml blog.ec2_cluster.yml")
    run("ansible-playbook -i blog.ec2_cluster.yml playbooks/provision.yml -e @playbooks/vars/blog-recipe.yml \\")
    client = ec2("eu-west-1")
    nodes = [
        i
        for r in client.describe_instances(
            Filters=[
                {"Name": "tag:amx.cluster/cluster", "Values": ["amx-demo"]},
                {"Name": "instance-state-name", "Values": ["running"]},
            ]
        )["Reservations"]
        for i in r["Instances"]
    ]
    assert [i["InstanceType"] for i in nodes] == ["r7iz.metal-16xl"] * 4
    # The master from the Ubuntu 20.04 image the preset asks for (the workers from the master's image).
    masters = [i for i in nodes if {"Key": "amx.cluster/role", "Value": "master"} in i["Tags"]]
    assert [i["ImageId"] for i in masters] == [FOCAL_IMAGE]
    run("ansible-playbook -i blog.ec2_cluster.yml playbooks/teardown.yml")
    assert set(cluster_instances(client, "amx-demo")) == {"terminated"}

    run("cp inventory/fleet.example.yml my-fleet.yml                # then put your machines in it")

    # The commands that need real machines: as written, with --syntax-check added.
    syntax_only = 'ansible-playbook() { command ansible-playbook "$@" --syntax-check; }\n'
    for first_line in SYNTAX_ONLY:
        texts = {c.text for c in all_commands() if c.first_line == first_line}
        for text in texts:
            code, output = shell(syntax_only + text, copy, env, timeout=120)
            assert code == 0 and "playbook: " in output, f"{text} --syntax-check\nexit {code}\n{output[-4000:]}"

    assert ran == set(RUN_HERE)


def test_the_local_api_walkthrough(home, tmp_path):
    """EC2.md's walk-through, whole and as written, in a copy without the local-API group_vars: its own moto
    server on port 5077, its own credentials."""
    block = the_block(next(iter(RUN_BLOCKS)), RUN_BLOCKS[next(iter(RUN_BLOCKS))])
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", WALKTHROUGH_PORT)) == 0:
            pytest.fail(f"port {WALKTHROUGH_PORT} of 127.0.0.1, which EC2.md's walk-through uses, is taken")
    copy = checkout_copy(tmp_path / "checkout")
    script = "set -e\n" + "\n".join(c.text for c in block.commands) + "\n"
    code, output = shell(script, copy, plain_env(home, AWS_EC2_METADATA_DISABLED="true"))
    assert code == 0, f"{script}\nexit {code}\n{output[-6000:]}"
    graph = output[output.index("@all:") :]
    for name in ("master", "node1", "node2"):
        assert f"|--{name}\n" in graph, output[-4000:]
    recaps = re.findall(r"localhost\s+: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0", output)
    assert len(recaps) == 2 and all(int(changed) > 0 for changed in recaps), output[-4000:]
