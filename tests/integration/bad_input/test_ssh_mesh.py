# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ssh_mesh and the files of ~/.ssh it did not write, and --check on a fresh node.

ssh_mesh has no path variable: it manages the real ~/.ssh of its user (here the user running the tests, whose home
getent reports, not the tests' temporary HOME). These runs are in check mode, like the other ssh_mesh cases, so that
a check that goes missing cannot write there; the files a case puts into that ~/.ssh have a name of their own and
are removed afterwards, as is the folder when the case made it.
"""

from __future__ import annotations

import os
import pathlib
import pwd
import subprocess
import uuid

import pytest
from bad_input_helpers import LOCAL, TEST_PLAYBOOKS, assert_refused, cluster, node_paths, run_in_folder, snapshot

SSH = pathlib.Path(pwd.getpwuid(os.getuid()).pw_dir) / ".ssh"
# This machine may run no sshd, and then has no host key to pin: the playbooks then give the hosts a made-up one.
HAS_HOST_KEY = pathlib.Path("/etc/ssh/ssh_host_ed25519_key.pub").exists()
MADE_UP_HOST_KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIHN0YW5kLWluIGZvciBhIGhvc3Qga2V5IG9mIHRoZSB0ZXN0cw"
OTHER_HOST_KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIGFub3RoZXIgbWFjaGluZSdzIGtleSBhdCB0aGF0IGFkZHJlc3M"
LINKER_CACHE = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
HAS_TCMALLOC = "libtcmalloc.so" in LINKER_CACHE


def mesh_inventory(folder: pathlib.Path, role: str = "ssh_mesh") -> dict:
    """A master and a worker, both this machine (connection local), told apart by their addresses."""
    master = {**LOCAL, **node_paths(folder / "master"), "bad_input_role": role, "ssh_mesh_address": "127.0.0.1"}
    worker = {**LOCAL, **node_paths(folder / "worker"), "bad_input_role": role, "ssh_mesh_address": "127.0.0.2"}
    for host in (master, worker):
        host["bad_input_tcmalloc"] = HAS_TCMALLOC
        if not HAS_HOST_KEY:
            host["bad_input_host_key"] = MADE_UP_HOST_KEY
    return cluster({"localhost": master}, {"node-b": worker})


@pytest.fixture
def foreign_key():
    """A key pair in the mesh user's ~/.ssh that ssh_mesh did not make (a name of its own, removed afterwards)."""
    made_folder = not SSH.exists()
    SSH.mkdir(mode=0o700, exist_ok=True)
    name = f"amx-test-own-key-{uuid.uuid4().hex[:8]}"
    private, public = SSH / name, SSH / f"{name}.pub"
    private.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nthe user's own key\n-----END OPENSSH PRIVATE KEY-----\n")
    public.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwnOwnOwnOwnOwnOwnOwnOwnOwnOwnOwnOwnOwnOwn alice@laptop\n")
    private.chmod(0o600)
    try:
        yield name
    finally:
        private.unlink(missing_ok=True)
        public.unlink(missing_ok=True)
        if made_folder and not any(SSH.iterdir()):
            SSH.rmdir()


@pytest.mark.parametrize("rotate", [True, False], ids=["rotation", "first-run"])
def test_a_key_the_mesh_did_not_make_is_neither_used_nor_deleted(tmp_path, foreign_key, rotate):
    before = snapshot(SSH)
    extra = {"ssh_mesh_key_name": foreign_key, "ssh_mesh_rotate": rotate}
    run, touched = run_in_folder(tmp_path, TEST_PLAYBOOKS / "mesh.yml", mesh_inventory(tmp_path), extra, check=True)
    expect = (
        f"localhost: the master localhost already has {SSH}/{foreign_key} (ssh_mesh_key_name), a key amx.cluster did "
        "not make: its public key does not carry the comment amx.cluster gives the keys it makes",
        "delete it to rotate it" if rotate else "hand it to every node",
        "Set ssh_mesh_key_name to another name",
    )
    assert_refused(run, "localhost", "ssh_mesh", expect, touched)
    # The worker stops at the same check, before its first change.
    assert_refused(run, "node-b", "ssh_mesh", ("node-b: the master localhost already has",), touched)
    assert snapshot(SSH) == before


@pytest.fixture(params=[22, 2222], ids=["port-22", "port-2222"])
def pinned_elsewhere(request):
    """A line of the user's own in the mesh user's known_hosts that pins another ed25519 key for the worker's
    address (127.0.0.2, or [127.0.0.2]:2222 for a worker whose sshd listens there); the file is put back as it was
    afterwards. Yields the file and the worker's port."""
    made_folder = not SSH.exists()
    SSH.mkdir(mode=0o700, exist_ok=True)
    known = SSH / "known_hosts"
    before = known.read_bytes() if known.exists() else None
    name = "127.0.0.2" if request.param == 22 else f"[127.0.0.2]:{request.param}"
    with known.open("a") as out:
        out.write(f"{name} ssh-ed25519 {OTHER_HOST_KEY}\n")
    try:
        yield known, request.param
    finally:
        if before is None:
            known.unlink(missing_ok=True)
        else:
            known.write_bytes(before)
        if made_folder and not any(SSH.iterdir()):
            SSH.rmdir()


def test_a_known_hosts_line_the_mesh_did_not_write_is_not_replaced(tmp_path, pinned_elsewhere):
    """ansible.builtin.known_hosts would remove every line of the address to pin the node's key; off port 22 the
    address is looked up as [address]:port, the name ssh and the pin use."""
    known, port = pinned_elsewhere
    before = known.read_bytes()
    inventory = mesh_inventory(tmp_path)
    inventory["cluster"]["children"]["workers"]["hosts"]["node-b"]["ssh_mesh_port"] = port
    name = "127.0.0.2" if port == 22 else f"[127.0.0.2]:{port}"
    run, touched = run_in_folder(tmp_path, TEST_PLAYBOOKS / "mesh.yml", inventory, {}, check=True)
    expect = (
        f"localhost: {SSH}/known_hosts on the master localhost pins another ed25519 host key for {name} (node-b)",
        "remove the old lines yourself (ssh-keygen -R ADDRESS -f that file, as the mesh user)",
        "Nothing was changed on any node",
    )
    assert_refused(run, "localhost", "ssh_mesh", expect, touched)
    assert_refused(run, "node-b", "ssh_mesh", ("node-b:", "pins another ed25519 host key"), touched)
    assert known.read_bytes() == before


def test_check_mode_runs_clean_on_a_fresh_node(tmp_path):
    """provision.yml's node roles and the mesh in --check, with no virtualenv, no key and no SSH file of the
    collection: the run ends with rc 0, shows the changes it would make, and writes nothing."""
    ssh_before = snapshot(SSH) if SSH.exists() else None
    key = f"amx-test-fresh-{uuid.uuid4().hex[:8]}"  # no such key: the run is the first one
    run, touched = run_in_folder(
        tmp_path, TEST_PLAYBOOKS / "fresh_check.yml", mesh_inventory(tmp_path), {"ssh_mesh_key_name": key}, check=True
    )
    assert run.returncode == 0, run.explain()
    assert set(run.stats) == {"localhost", "node-b"}, run.explain()
    assert all(counts["failures"] == 0 for counts in run.stats.values()), run.explain()
    # Not a run that skipped everything: the virtualenv and the key are changes it would make.
    assert run.stats["localhost"]["changed"] > 0, run.explain()
    would = " | ".join(e["task"] for e in run.results("localhost") if e["result"].get("changed"))
    assert "Create the virtualenv" in would, would
    # Without ~/.ssh the folder is the change that says a key pair would be made in it (the key module needs it).
    key_change = "Make the cluster key pair" if ssh_before is not None else "Make the master's .ssh folder"
    assert key_change in would, would
    assert touched == [], touched
    assert not (tmp_path / "master" / "venv").exists()
    assert (snapshot(SSH) if SSH.exists() else None) == ssh_before


def test_a_node_whose_cluster_network_is_not_its_default_route(tmp_path):
    """Two networks: the worker has no default route at all (its facts say so, as setup's do there), the cluster
    network is given per host (ssh_mesh_address). The mesh takes that address for ~/.ssh/config and the known_hosts
    pin, in --check: rc 0, nothing written, and the block it would write shows the per-host address."""
    ssh_before = snapshot(SSH) if SSH.exists() else None
    inventory = mesh_inventory(tmp_path)
    worker = inventory["cluster"]["children"]["workers"]["hosts"]["node-b"]
    worker.update(bad_input_no_default_route=True, ssh_mesh_address="127.0.0.3")
    key = f"amx-test-two-networks-{uuid.uuid4().hex[:8]}"
    extra = {"ssh_mesh_key_name": key, "bad_input_diff": True}
    run, touched = run_in_folder(tmp_path, TEST_PLAYBOOKS / "mesh.yml", inventory, extra, check=True)
    assert run.returncode == 0, run.explain()
    assert all(counts["failures"] == 0 for counts in run.stats.values()), run.explain()
    said = run.output
    assert "Host node1\n" in said and "HostName 127.0.0.3\n" in said, run.explain()
    assert "HostName 127.0.0.2" not in said, run.explain()
    assert touched == [], touched
    assert (snapshot(SSH) if SSH.exists() else None) == ssh_before
