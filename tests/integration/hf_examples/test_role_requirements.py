# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hf_examples role itself installs the examples' requirements for a node whose Python is not the controller's:
ansible-playbook runs the role on this machine (connection local) for a virtualenv of CPython 3.8 (pyenv's), the
recipe-2022 node's Python, that already holds the profile's torch (1.13.0+cpu), with the profile's indexes as
torch_stack publishes them (torch_stack_indexes).

Stand-ins: the examples' repository is a local git repository with a tag, whose question-answering folder holds the
real requirements text; the indexes are the local stand-in indexes of test_resolution_standins.py (no index but the
package index is reachable here, and this test asks none). Wheelhouse mode: the controller resolves with the node's
marker values, the node installs with --no-index; direct mode: the node's pip asks the indexes itself, under the
constraints of its virtualenv. Each mode runs twice: the second run must change nothing.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from ansible_env import ansible_env
from conftest import QA_REQUIREMENTS, REPO, pip_env
from standin_index import SimpleIndex
from test_resolution_standins import build_standins, local_python

from ansible_collections.amx.cluster.plugins.module_utils import stack_profile as sp

VENV_BIN = REPO / ".venv" / "bin"


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    python = local_python("3.8")
    if python is None:
        pytest.skip("no CPython 3.8 on this machine (pyenv's): the test needs a node Python other than 3.11")
    top = tmp_path_factory.mktemp("hf-role")
    folders = build_standins(top / "standins")
    served = {name: SimpleIndex(folder) for name, folder in folders.items()}
    repo = top / "transformers-src"
    example = repo / "examples" / "pytorch" / "question-answering"
    example.mkdir(parents=True)
    (example / "requirements.txt").write_text(QA_REQUIREMENTS)
    (example / "run_qa.py").write_text("print('run_qa stand-in')\n")
    git_env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e.invalid"}
    git_env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e.invalid")
    for argv in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "examples"], ["tag", "v4.24.0"]):
        subprocess.run(["git", "-C", str(repo), *argv], check=True, env=git_env)
    yield {"python": python, "top": top, "repo": repo, "indexes": {k: v.url for k, v in served.items()}, **folders}
    for index in served.values():
        index.close()


def node_venv(setting, name: str) -> pathlib.Path:
    """A virtualenv of the node's Python holding the profile's torch, as torch_stack leaves it."""
    venv = setting["top"] / name
    subprocess.run([str(setting["python"]), "-m", "venv", str(venv)], check=True, capture_output=True)
    links = ["--find-links", str(setting["pytorch"]), "--find-links", str(setting["pypi"])]
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index", *links, "torch==1.13.0+cpu"],
        check=True,
        capture_output=True,
        env=pip_env(setting["top"]),
    )
    return venv


def host_vars(setting, venv: pathlib.Path, mode: str) -> dict:
    folder = setting["top"] / f"{venv.name}-paths"
    return {
        "ansible_connection": "local",
        "ansible_python_interpreter": str(VENV_BIN / "python"),
        "hf_examples_repo_url": f"file://{setting['repo']}",
        "hf_examples_transformers_version": "4.24.0",
        "hf_examples_venv_python": str(venv / "bin" / "python"),
        "hf_examples_dir": str(folder / "transformers"),
        "hf_examples_user": "root",
        "hf_examples_install_os_packages": False,
        "hf_examples_install_mode": mode,
        # A quote and a space in the controller's path: the download passes it to pip as an argument, never to a shell.
        "hf_examples_controller_cache": str(folder / "controller's cache"),
        "hf_examples_node_wheelhouse": str(folder / "node-wheelhouse"),
        # Each node's own stamps (amx.cluster.node_stamp), not this machine's /var/lib/amx-cluster.
        "node_stamp_dir": str(folder / "stamps"),
        # What torch_stack publishes for recipe-2022 with its indexes pointed at the stand-ins: the virtualenv is
        # torch_stack's, so its profile's lock (a part of it) pins what the requirements add: evaluate 0.3.0, not
        # the newest stand-in (0.4.6).
        "torch_stack_venv_python": str(venv / "bin" / "python"),
        "torch_stack_constraints": ["evaluate==0.3.0", "torch==1.13.0"],
        "torch_stack_indexes": {
            "index_url": setting["indexes"]["pypi"],
            "extra_index_urls": [setting["indexes"]["pytorch"]],
            "find_links": [],
        },
    }


def run_role(setting, hosts: dict) -> subprocess.CompletedProcess:
    folder = setting["top"]
    playbook = folder / "play.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  roles:\n    - role: amx.cluster.hf_examples\n")
    inventory = folder / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": hosts}}))
    pip_settings = {key: value for key, value in pip_env(folder).items() if key.startswith("PIP_")}
    env = ansible_env(folder, drop=("PIP_",), **pip_settings)
    return subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(playbook)],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=600,
        check=False,
    )


def installed(venv: pathlib.Path, env: dict) -> dict:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "freeze"], capture_output=True, text=True, env=env, check=True
    )
    return sp.parse_freeze(out.stdout)


@pytest.fixture(scope="module")
def runs(setting):
    """One node per install mode (both this machine), the role run twice on both."""
    venvs = {mode: node_venv(setting, f"venv-{mode}") for mode in MODES}
    hosts = {f"node-{mode}": host_vars(setting, venv, mode) for mode, venv in venvs.items()}
    return venvs, run_role(setting, hosts), run_role(setting, hosts)


MODES = ["wheelhouse", "direct"]


@pytest.mark.parametrize("mode", MODES)
def test_the_role_installs_the_requirements_for_the_nodes_python(setting, runs, mode):
    venvs, first, second = runs
    assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-2000:]
    packages = installed(venvs[mode], pip_env(setting["top"]))
    assert packages["torch"] == "1.13.0+cpu", "the install moved the stack's torch"
    assert packages["accelerate"] == "0.15.0", "not the newest accelerate that takes torch 1.13"
    # The node (Python 3.8) needs these through markers the controller (Python 3.11) does not match.
    assert packages.get("importlib-metadata") == "6.7.0", packages
    assert packages.get("tomli") == "2.0.1", packages
    assert {"datasets", "numpy"} <= set(packages)
    assert packages["evaluate"] == "0.3.0", "not the release of the profile's lock"
    assert second.returncode == 0, second.stdout[-6000:]
    recap = [line for line in second.stdout.splitlines() if line.startswith(f"node-{mode} ")]
    assert recap and "changed=0" in recap[-1], second.stdout[-3000:]
    assert sys.version_info[:2] != (3, 8), "the controller must not be the node's Python for this test to mean much"


def test_the_controller_keeps_one_complete_download_under_a_path_with_a_quote(setting, runs):
    venvs, first = runs[:2]
    assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-2000:]
    cache = setting["top"] / f"{venvs['wheelhouse'].name}-paths" / "controller's cache"
    downloads = sorted(cache.iterdir())
    assert [p.suffix for p in downloads] == [""], downloads  # one download, no .partial left
    names = {p.name for p in downloads[0].iterdir()}
    assert {"requirements.in", "constraints.txt", "markers.json"} <= names
    assert any(name.startswith("importlib_metadata-6.7.0-") for name in names), names
