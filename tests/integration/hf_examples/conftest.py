# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared pieces of the hf_examples resolution tests: each profile's node, the example's requirements and the stand-in
wheels of the packages that only the profile's own indexes (PyTorch's CPU index, Intel's pages) serve."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Dict, List

import pytest
import yaml

from ansible_collections.amx.cluster.plugins.module_utils import examples as ex
from ansible_collections.amx.cluster.plugins.module_utils import stack_profile as sp

REPO = pathlib.Path(__file__).resolve().parents[3]
PROFILES = yaml.safe_load((REPO / "roles" / "torch_stack" / "vars" / "profiles.yml").read_text())[
    "__torch_stack_profiles"
]
RUNNER = REPO / "plugins" / "plugin_utils" / "pip_node_markers.py"

# examples/pytorch/question-answering/requirements.txt of transformers (run_qa.py's folder), as the tags carry it.
QA_REQUIREMENTS = "accelerate >= 0.12.0\ndatasets >= 1.8.0\ntorch >= 1.3.0\nevaluate\n"

# The node each profile is meant for: its Python and its glibc (the distribution's). Every one differs from the
# controller's Python (3.11 here), so a marker evaluated for the controller picks other packages than the node needs.
NODES = {
    "recipe-2022": ("3.8.10", "2.31"),  # Ubuntu 20.04, the recipe's image
    "ipex-2.7-ccl": ("3.10.12", "2.35"),  # Ubuntu 22.04
    "ipex-2.8": ("3.12.3", "2.39"),  # Ubuntu 24.04
    "native": ("3.12.3", "2.39"),  # Ubuntu 24.04
}


def node_markers(python: str) -> Dict[str, str]:
    """The PEP 508 marker values of an x86_64 Linux node with this CPython (as amx.cluster.node_info reports them)."""
    return {
        "implementation_name": "cpython",
        "implementation_version": python,
        "os_name": "posix",
        "platform_machine": "x86_64",
        "platform_python_implementation": "CPython",
        "platform_release": "5.15.0-1051-aws",
        "platform_system": "Linux",
        "platform_version": "#56~20.04.1-Ubuntu SMP",
        "python_full_version": python,
        "python_version": sp.major_minor(python),
        "sys_platform": "linux",
    }


def resolved(profile: str) -> dict:
    return sp.resolve_profile(PROFILES, profile)


def stack_freeze(profile: str) -> str:
    """A pip freeze of the profile's virtualenv as torch_stack leaves it: the pins, with the local version label of
    the CPU builds (``torch==1.13.0`` installs ``1.13.0+cpu`` from PyPI's CPU index)."""
    lines = []
    for name, version in resolved(profile)["pins"].items():
        local = "+cpu" if name in (sp.TORCH, sp.ONECCL) and "+" not in version else ""
        lines.append(f"{name}=={version}{local}")
    return "\n".join(lines) + "\n"


def pip_env(tmp: pathlib.Path) -> Dict[str, str]:
    """pip without the machine's configuration (its local indexes, find-links and constraints), a fresh cache, and
    the CA bundle kept (the network tests reach the package index through it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_CACHE_DIR=str(tmp / "pip-cache"),
        PIP_NO_INPUT="1",
    )
    if os.environ.get("PIP_CERT"):
        env["PIP_CERT"] = os.environ["PIP_CERT"]
    return env


def run_pip(spec: dict, folder: pathlib.Path, args: List[str], env: Dict[str, str], markers: bool = True):
    """Run the controller's pip on ``args`` as the role does: through the runner with the spec's marker values
    (markers=False: plain ``python -m pip``, as the role did before, for the tests that show what that misses)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "requirements.in").write_text(spec["requirements"])
    (folder / "constraints.txt").write_text(spec["constraints"])
    (folder / "markers.json").write_text(json.dumps(spec["markers"]))
    head = ex.controller_command([sys.executable, "-m", "pip"], str(RUNNER), str(folder / "markers.json"))
    if not markers:
        head = [sys.executable, "-m", "pip"]
    return subprocess.run(head + args, capture_output=True, text=True, env=env, timeout=300, check=False)


@pytest.fixture
def env(tmp_path):
    return pip_env(tmp_path)
