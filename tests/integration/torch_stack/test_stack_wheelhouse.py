# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""torch_stack's wheelhouse path, run by ansible-playbook on this machine (connection local): the controller's
download under a cache path that holds a quote and a space, with the marker values that the role's probe
(amx.cluster.node_info) reads from the node's Python, packed into one tar, unpacked on the node and installed with
--no-index; a second run downloads nothing.

The node's Python is CPython 3.8 (pyenv's), the controller's 3.11: the stand-in package alpha needs beta only on
Pythons older than 3.9, as many packages declare a backport, so beta reaches the node only when pip judges the
markers for the node. The profile is a stand-in too (alpha from a local find-links folder): the real stacks need
indexes this machine cannot reach. The test enters at the role's install_wheelhouse tasks with the facts its
preflight would have set; the preflight itself is covered by the bad-input tests and the molecule scenario.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import threading

import pytest
from ansible_env import ansible_env
from node_python import node_python
from standin_index import wheel

from ansible_collections.amx.cluster.plugins.module_utils import python_facts as pf
from ansible_collections.amx.cluster.plugins.module_utils import stack_profile as sp

REPO = pathlib.Path(__file__).resolve().parents[3]
VENV_BIN = REPO / ".venv" / "bin"

PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: Install through the controller wheelhouse
      ansible.builtin.include_role:
        name: amx.cluster.torch_stack
        tasks_from: install_wheelhouse
"""

# As preflight.yml starts it for bare nodes: the download in the background, then the install, which waits for it.
PLAY_BACKGROUND = """
- hosts: all
  gather_facts: false
  tasks:
    - name: Start the controller's download
      ansible.builtin.include_role:
        name: amx.cluster.torch_stack
        tasks_from: wheelhouse_download
      vars:
        __torch_stack_wh_for: "{{ ansible_play_hosts | map('extract', hostvars) | list }}"
        __torch_stack_wh_background: true
""" + PLAY.split("  tasks:\n", 1)[1]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    python = node_python()
    if python is None:
        pytest.skip("no CPython 3.8 on this machine (pyenv's): the test needs a node Python older than 3.9")
    top = tmp_path_factory.mktemp("torch-stack-wheelhouse")
    links = top / "links"
    wheel(links, "alpha", "1.0", requires=["gamma", 'beta; python_version < "3.9"'])
    wheel(links, "beta", "1.0")
    wheel(links, "gamma", "1.0")
    # The wheelhouse carries a pip for the node's virtualenv too: the one Python 3.8 bundles (offline, and the
    # release the virtualenv already has, so the role's upgrade step finds nothing to do).
    bundled = sorted((python.parent.parent / "lib" / "python3.8" / "ensurepip" / "_bundled").glob("pip-*.whl"))
    shutil.copy(bundled[-1], links)
    venv = top / "venv"
    subprocess.run([str(python), "-m", "venv", str(venv)], check=True, capture_output=True)
    probe = subprocess.run([str(python), "-c", pf.probe_source()], check=True, capture_output=True, text=True)
    return {"top": top, "links": links, "venv": venv, "probe": pf.parse_report(probe.stdout)}


def host_vars(node, cache_name="controller's cache") -> dict:
    probe, top = node["probe"], node["top"]
    resolved = {
        "name": "stand-in",
        "requirements": ["alpha==1.0"],
        "constraints": [],
        "index_url": None,
        "extra_index_urls": [],
        "find_links": [str(node["links"])],
    }
    python = probe["python"]
    platforms = sp.platform_tags(python["machine"], python["libc_version"])
    cache = str(top / cache_name)
    spec = sp.wheelhouse_spec(resolved, python, probe["markers"], platforms, cache, ["--no-index"])
    # Where the role's install step wrote them (its vars/main.yml derives the path from torch_stack_venv).
    (node["venv"] / "torch-stack-requirements.txt").write_text("alpha==1.0\n")
    (node["venv"] / "torch-stack-constraints.txt").write_text("# profile stand-in has no lock here\n")
    return {
        "ansible_connection": "local",
        "ansible_python_interpreter": str(VENV_BIN / "python"),
        "torch_stack_user": "root",
        "torch_stack_venv": str(node["venv"]),
        "torch_stack_controller_cache": cache,
        "torch_stack_node_wheelhouse": str(top / "node-wheelhouse"),
        "__torch_stack_state": {"install_needed": True},
        "__torch_stack_plan": {"wheelhouse": spec, "group": "root"},
    }


def run(node, inventory=None, play=PLAY) -> subprocess.CompletedProcess:
    top = node["top"]
    (top / "play.yml").write_text(play)
    (top / "inventory.json").write_text(json.dumps(inventory or {"all": {"hosts": {"node": host_vars(node)}}}))
    env = ansible_env(top / "home")
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_CACHE_DIR=str(top / "pip-cache"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", str(top / "inventory.json"), str(top / "play.yml")]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=top, timeout=600, check=False)


@pytest.fixture(scope="module")
def runs(node):
    return run(node), run(node)


def test_the_wheelhouse_is_made_for_the_nodes_markers_under_a_path_with_a_quote(node, runs):
    first = runs[0]
    assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-2000:]
    freeze = subprocess.run(
        [str(node["venv"] / "bin" / "python"), "-m", "pip", "freeze"], capture_output=True, text=True, check=True
    ).stdout
    assert sp.parse_freeze(freeze) == {"alpha": "1.0", "beta": "1.0", "gamma": "1.0"}
    site = next((node["venv"] / "lib").glob("python3.*")) / "site-packages"
    assert not (site / "alpha" / "__pycache__").exists(), "torch_stack_byte_compile false: pip --no-compile"
    cache = node["top"] / "controller's cache"
    downloads = sorted(cache.iterdir())
    assert [p.suffix for p in downloads] == [""], downloads  # one download, no .partial left
    assert sorted(p.name for p in downloads[0].iterdir()) == [
        "constraints.txt",
        "markers.json",
        "requirements.txt",
        "wheels.tar",
    ]
    with tarfile.open(downloads[0] / "wheels.tar") as archive:
        assert [name.split("-")[0] for name in archive.getnames()] == ["alpha", "beta", "gamma", "pip"]
    task = first.stdout.split("TASK [amx.cluster.torch_stack : Upgrade the virtualenv's pip from the wheelhouse]")[1]
    assert "ok: [node]" in task.split("TASK [")[0], "a pip already at the wheelhouse's release is left as it is"
    assert list((node["top"] / "node-wheelhouse").iterdir()) == [], "the node's copy is removed after the install"
    assert sys.version_info[:2] >= (3, 9), "the controller must not judge the markers as the node for this to mean much"


def test_a_second_run_downloads_nothing(runs):
    second = runs[1]
    assert second.returncode == 0, second.stdout[-6000:] + second.stderr[-2000:]
    task = second.stdout.split("TASK [amx.cluster.torch_stack : Download the wheelhouses on the controller]")[1]
    task = task.split("TASK [")[0]
    assert "changed:" not in task and "ok: [node]" in task, task


def test_the_download_started_in_the_background_is_awaited_not_made_again(node, runs):
    """On a cold cache: the background task starts the download and returns, the install's download task waits for
    it and finds it complete (ok, not changed), and the node installs from it (byte-compiled, as asked)."""
    # Byte-compiled this time, reinstalled: pip's own default, the role's other setting.
    settings = {"torch_stack_byte_compile": True, "torch_stack_pip_extra_args": ["--force-reinstall"]}
    inventory = {"all": {"hosts": {"node": {**host_vars(node, "background cache"), **settings}}}}
    result = run(node, inventory, PLAY_BACKGROUND)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]

    def task(name):
        return result.stdout.split(f"TASK [amx.cluster.torch_stack : {name}]")[1].split("TASK [")[0]

    started = task("Download the wheelhouses on the controller (in the background)")
    assert "changed: [node]" in started, started
    awaited = task("Download the wheelhouses on the controller")
    assert "ok: [node]" in awaited and "changed:" not in awaited, awaited
    assert "changed: [node]" in task("Install the stack from the wheelhouse")
    site = next((node["venv"] / "lib").glob("python3.*")) / "site-packages"
    assert (site / "alpha" / "__pycache__").is_dir(), "torch_stack_byte_compile true: pip compiles as it installs"
    downloads = sorted(p.name for p in (node["top"] / "background cache").iterdir())
    assert len(downloads) == 1 and not downloads[0].endswith(".partial"), downloads


def test_the_master_serves_the_wheelhouse_to_a_worker_and_stops(node, runs):
    """Two nodes on one wheelhouse: the controller copies it to the master alone, the worker fetches it from the
    master's short-lived server (checked by SHA-256) and installs; the server is gone after the run."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    relay = {"torch_stack_wheelhouse_relay_address": "127.0.0.1", "torch_stack_wheelhouse_relay_port": port}
    hosts = {
        name: {**host_vars(node), **relay, "torch_stack_node_wheelhouse": str(node["top"] / f"{name}-wheelhouse")}
        for name in ("worker", "master")
    }
    inventory = {"all": {"hosts": hosts, "children": {"master": {"hosts": {"master": {}}}}}}
    result = run(node, inventory)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]

    def task(name):
        return result.stdout.split(f"TASK [amx.cluster.torch_stack : {name}]")[1].split("TASK [")[0]

    copied = task("Copy the wheelhouse from the controller (to the seed node alone)")
    assert "changed: [master]" in copied and "skipping: [worker]" in copied, copied
    fetched = task("Fetch the wheelhouse from the seed node over the cluster's network")
    assert "changed: [worker]" in fetched and "skipping: [master]" in fetched, fetched
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0, "the master's server still listens after the run"


def test_a_worker_that_cannot_fetch_from_the_master_gets_the_controllers_copy(node, runs):
    """The relay's port is taken on the master by another server (one that answers 404): the master's own server
    cannot bind it, the worker's fetch fails, and the worker gets the tar from the controller instead and installs;
    the run succeeds and its recap counts the rescue."""
    empty = node["top"] / "empty"
    empty.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(empty))
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    port = other.server_address[1]
    relay = {"torch_stack_wheelhouse_relay_address": "127.0.0.1", "torch_stack_wheelhouse_relay_port": port}
    hosts = {
        name: {**host_vars(node), **relay, "torch_stack_node_wheelhouse": str(node["top"] / f"{name}-taken-wheelhouse")}
        for name in ("worker", "master")
    }
    inventory = {"all": {"hosts": hosts, "children": {"master": {"hosts": {"master": {}}}}}}
    try:
        result = run(node, inventory)
    finally:
        other.shutdown()
        other.server_close()
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    instead = result.stdout.split("TASK [amx.cluster.torch_stack : Copy the wheelhouse from the controller instead")[1]
    assert "changed: [worker]" in instead.split("TASK [")[0], instead
    recap = result.stdout.split("PLAY RECAP")[1]
    assert re.search(r"worker\s*:.*failed=0.*rescued=1", recap), recap
    assert re.search(r"master\s*:.*failed=0.*rescued=0", recap), recap
