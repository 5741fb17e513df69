# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The baseline provision.yml is compared with: the recipe's steps by hand, one node after the other over SSH."""

from __future__ import annotations

import pathlib
import shlex
import time
import urllib.parse
from typing import Any, Dict, List, Optional, Tuple

from .harness import Cluster, log
from .settings import HOST_CA_BUNDLE, TCMALLOC_PACKAGE
from .wheels import downloaded_bytes, profile_requirements

REMOTE_CA_BUNDLE = "/tmp/host-ca.crt"


def baseline_steps(
    torch_wheel: pathlib.Path, profile: Dict[str, Any], index_url: Optional[str] = None
) -> List[Tuple[str, Optional[str]]]:
    """(step name, shell command on the node) in order; None: the copy of the CA bundle and torch wheel. With
    `index_url` (the benchmark's own http index, torch on it) every pin comes from there and nothing is copied."""
    if index_url:
        requirements = profile_requirements(profile)
        source = ["--index-url", index_url, "--trusted-host", urllib.parse.urlsplit(index_url).hostname or ""]
        pip_env = "PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off"
        copy: List[Tuple[str, Optional[str]]] = []
    else:
        requirements, source = [f"/tmp/{torch_wheel.name}", *profile_requirements(profile, with_torch=False)], []
        pip_env = f"PIP_CERT={REMOTE_CA_BUNDLE} PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off"
        copy = [("copy_ca_and_torch_wheel", None)]
    return [
        *copy,
        (
            "apt_tcmalloc",
            f"sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive "
            f"apt-get install -y -qq {TCMALLOC_PACKAGE} python3-venv >/dev/null",
        ),
        ("venv", "python3 -m venv ~/bench-venv"),
        (
            "pip_install",
            f"{pip_env} ~/bench-venv/bin/pip install --log /tmp/pip.log -q "
            + " ".join(shlex.quote(arg) for arg in [*source, *requirements]),
        ),
        ("import_check", "~/bench-venv/bin/python -c 'import torch, transformers, accelerate, datasets'"),
    ]


def baseline(
    cluster: Cluster, torch_wheel: pathlib.Path, profile: Dict[str, Any], index_url: Optional[str] = None
) -> Dict[str, Any]:
    """The recipe's steps by hand, node after node over SSH; seconds per step and node, bytes pip downloaded."""
    steps = baseline_steps(torch_wheel, profile, index_url)
    per_node = []
    started = time.monotonic()
    for node in cluster.nodes:
        times: Dict[str, float] = {}
        for step, command in steps:
            t0 = time.monotonic()
            if command is None:
                cluster.scp(node, HOST_CA_BUNDLE, REMOTE_CA_BUNDLE)
                cluster.scp(node, str(torch_wheel), f"/tmp/{torch_wheel.name}")
            else:
                cluster.ssh(node, command)
            times[step] = round(time.monotonic() - t0, 2)
        pip_log = cluster.ssh(node, "cat /tmp/pip.log").stdout
        per_node.append({"node": node["name"], "steps": times, "index_bytes_approx": downloaded_bytes(pip_log)})
        log(f"  baseline {node['name']}: " + ", ".join(f"{k} {v:.0f}s" for k, v in times.items()))
    return {"seconds": round(time.monotonic() - started, 2), "nodes": per_node}
