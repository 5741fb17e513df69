# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fixtures of the bad-input tests.

``stack``: one good run of amx_check, tcmalloc and torch_stack on this machine, once per session, into a scratch
folder: a virtualenv whose stack (torch, transformers) comes from the training tests' cached venv through a .pth file
(the same real packages, without installing 1 GB again), and the facts the roles published, for the training cases.
``source_repo``: a local git repository with a tag v1.0.0, standing in for huggingface/transformers.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import pytest
from bad_input_helpers import LOCAL, REPO, TEST_PLAYBOOKS, VENV_BIN, cluster, node_paths, run_in_folder
from net import free_port


@pytest.fixture(scope="session", autouse=True)
def tools():
    if not (VENV_BIN / "ansible-playbook").exists():
        pytest.skip(f"ansible-playbook is not in {VENV_BIN}: run `make setup` first")
    if shutil.which("git") is None:
        pytest.skip("git is not installed here (apt-get install -y git): the hf_examples cases need a repository")


def stack_site_packages() -> pathlib.Path:
    """site-packages of a venv with the training stack: AMX_CLUSTER_TRAIN_PYTHON, else the training tests' cached
    venv (built on first use, ~3 minutes once)."""
    given = os.environ.get("AMX_CLUSTER_TRAIN_PYTHON")
    if given:
        python = pathlib.Path(given)
    else:
        sys.path.insert(0, str(REPO / "tests" / "integration" / "train"))
        from train_helpers import build_venv

        python = build_venv()
    code = "import sys, sysconfig; print(sys.version_info[:2]); print(sysconfig.get_paths()['purelib'])"
    version, purelib = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True
    ).stdout.split("\n")[:2]
    if version != str(sys.version_info[:2]):
        pytest.fail(
            f"{python} is Python {version}, the tests' Python is {sys.version_info[:2]}: the scratch venv "
            "can only borrow packages built for the same Python (set AMX_CLUSTER_TRAIN_PYTHON to one)"
        )
    return pathlib.Path(purelib)


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    """The good run: amx_check, tcmalloc and torch_stack with the tests' settings on a one-node cluster; returns the
    file of the facts they published. An extra index that does not answer is in the profile, with
    torch_stack_unreachable_indexes: skip: the run must leave it out, say so, and go on."""
    folder = tmp_path_factory.mktemp("stack")
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = pathlib.Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    (purelib / "amx-cluster-test-stack.pth").write_text(f"{stack_site_packages()}\n")
    facts = folder / "stack-facts.json"
    inventory = cluster({"localhost": {**LOCAL, **node_paths(folder)}}, {})
    closed = f"http://127.0.0.1:{free_port()}/simple/"
    extra = {
        "bad_input_facts": str(facts),
        "torch_stack_extra_index_urls": [closed],
        "torch_stack_unreachable_indexes": "skip",
    }
    run, _touched = run_in_folder(folder, TEST_PLAYBOOKS / "setup.yml", inventory, extra)
    if run.returncode != 0:
        pytest.fail(f"the good node-role run failed, so no training case would mean anything:\n{run.explain()}")
    if f"leaving out {closed}, which did not answer" not in " ".join(run.output.split()):
        pytest.fail(f"torch_stack_unreachable_indexes: skip did not say it left {closed} out:\n{run.explain()}")
    return facts


@pytest.fixture(scope="session")
def source_repo(tmp_path_factory) -> pathlib.Path:
    """A git repository with a tag v1.0.0 and an examples/pytorch/question-answering folder."""
    repo = tmp_path_factory.mktemp("transformers-src")
    example = repo / "examples" / "pytorch" / "question-answering"
    example.mkdir(parents=True)
    (example / "requirements.txt").write_text("packaging\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    for argv in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "examples"], ["tag", "v1.0.0"]):
        subprocess.run(["git", "-C", str(repo), *argv], check=True, env=env)
    return repo
