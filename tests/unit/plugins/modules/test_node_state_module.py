# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A record's read and write on this machine, against stamps, files and a virtualenv folder in a temporary folder (the
boot id, the package query and the AMX probe are this machine's own): module_utils.node_state.run in this process,
and the node_state module through `ansible` for what only a real call shows (the facts it sets, check mode, the
package query). The actions' way to it, the bundle, is tested in test_node_record_action.py."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess

import ad_hoc
import pytest

from ansible_collections.amx.cluster.plugins.module_utils import node_state

REPO = pathlib.Path(__file__).resolve().parents[4]
INPUTS = "a" * 64
DEFAULTS = {
    "stamp_dir": "/var/lib/amx-cluster/stamps",
    "force": False,
    "write": False,
    "probe": {},
    "facts": {},
    "node_facts": {},
}

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the stamps are root's: the module is tested as root")


def run_module(args: dict, check: bool = False) -> dict:
    return ad_hoc.run_module("node_state", json.dumps(args), check=check)


@pytest.fixture
def node(tmp_path):
    """A hostfile, a key, a virtualenv folder with two distributions, and the module's calls on them."""
    (tmp_path / "hosts").write_text("localhost\nnode1\n")
    (tmp_path / "id_ed25519").write_text("key one\n")
    os.chmod(tmp_path / "id_ed25519", 0o600)
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    for name in ("torch-2.13.0+cpu.dist-info", "transformers-5.24.0.dist-info"):
        (site / name).mkdir(parents=True)
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    probe = {
        "files": [str(tmp_path / "hosts"), str(tmp_path / "id_ed25519")],
        "venv": str(tmp_path / "venv"),
        "amx": True,
    }
    common = {"role": "ssh_mesh", "inputs_hash": INPUTS, "stamp_dir": str(tmp_path / "stamps")}

    class Node:
        path = tmp_path
        stamp = tmp_path / "stamps" / node_state.record_name("ssh_mesh", INPUTS)
        site_packages = site

        # In this process; the probe names no package, so no module object is needed for a package query.
        @staticmethod
        def write(check=False, **extra):
            return node_state.run({**DEFAULTS, **common, "write": True, "probe": probe, **extra}, check)

        @staticmethod
        def read(**extra):
            return node_state.run({**DEFAULTS, **common, **extra}, False)

        # Through ansible.
        @staticmethod
        def ansible_write(check=False, **extra):
            return run_module({**common, "write": True, "probe": probe, **extra}, check=check)

        @staticmethod
        def ansible_read(**extra):
            return run_module({**common, **extra})

    return Node


def test_a_fresh_stamp_lets_the_role_skip_and_gives_back_its_facts(node):
    assert node.ansible_write(check=True)["changed"] is True
    assert not node.stamp.exists()  # check mode writes nothing
    written = node.ansible_write(facts={"ssh_mesh_key": "/root/.ssh/id"}, node_facts={"amx_cpu": {"amx_usable": False}})
    assert written["changed"] is True, written
    info = node.stamp.stat()
    assert (oct(info.st_mode & 0o777), info.st_uid) == ("0o600", 0)
    assert oct((node.path / "stamps").stat().st_mode & 0o777) == "0o700"
    result = node.ansible_read()
    assert result["skip"] is True, result["reason"]
    assert result["changed"] is False
    assert result["facts"] == {"ssh_mesh_key": "/root/.ssh/id"}
    assert result["ansible_facts"] == {"amx_cpu": {"amx_usable": False}}
    assert result["boot_id"] == pathlib.Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    # Renewed with the same record: a new time, no change.
    assert (
        node.write(facts={"ssh_mesh_key": "/root/.ssh/id"}, node_facts={"amx_cpu": {"amx_usable": False}})["changed"]
        is False
    )


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda n: (n.path / "hosts").write_text("localhost\nnode1\nnode2\n"), "hosts"),
        (lambda n: (n.path / "id_ed25519").write_text("key two\n"), "id_ed25519"),
        (lambda n: os.chmod(n.path / "id_ed25519", 0o644), "id_ed25519"),
        (lambda n: (n.path / "hosts").unlink(), "hosts"),
        (lambda n: (n.site_packages / "scikit_learn-1.5.2.dist-info").mkdir(), "added scikit-learn 1.5.2"),
        (
            lambda n: (n.site_packages / "transformers-5.24.0.dist-info").rename(
                n.site_packages / "transformers-5.25.0.dist-info"
            ),
            "transformers 5.24.0 -> 5.25.0",
        ),
    ],
    ids=["hostfile", "ssh-key", "key-mode", "hostfile-gone", "venv-added", "venv-upgraded"],
)
def test_a_change_on_the_node_takes_the_full_path(node, change, named):
    node.write()
    change(node)
    result = node.read()
    assert result["skip"] is False
    reason = result["reason"]
    assert reason.startswith("the node changed since the stamp: ") and named in reason, reason


@pytest.mark.parametrize(
    ("plant", "said"),
    [
        (os.mkfifo, "not a regular file"),
        (pathlib.Path.mkdir, "not a regular file"),
    ],
    ids=["fifo", "folder"],
)
def test_what_cannot_be_fingerprinted_is_the_full_path_then_and_now(node, plant, said):
    """A FIFO (never opened: it would wait for a writer) or a folder where a file was probed cannot be compared:
    unreadable then and now is no proof that nothing changed. Through ansible, with its time limit."""
    (node.path / "hosts").unlink()
    plant(node.path / "hosts")
    assert node.ansible_write()["written"] is True
    result = node.ansible_read()
    assert result["skip"] is False
    assert result["reason"].startswith("the node could not be fingerprinted: files: ") and said in result["reason"]


def test_a_link_is_fingerprinted_by_its_target_path_never_by_the_file_behind_it(node):
    """A link to a file only root may read: its target's name goes into the record, never that file's hash."""
    secret = node.path / "root-only"
    secret.write_text("secret\n")
    os.chmod(secret, 0o600)
    (node.path / "hosts").unlink()
    (node.path / "hosts").symlink_to(secret)
    written = node.write()
    assert written["fingerprint"]["files"][str(node.path / "hosts")] == {"link": str(secret)}
    assert node.read()["skip"] is True
    (node.path / "hosts").unlink()
    (node.path / "hosts").symlink_to(node.path / "id_ed25519")
    assert node.read()["reason"].startswith("the node changed since the stamp: files:")


def test_a_fifo_in_the_records_place_is_not_read_and_does_not_wait(node):
    node.stamp.parent.mkdir(mode=0o700)
    os.mkfifo(node.stamp, 0o600)
    result = node.ansible_read()
    assert result["skip"] is False and "not trusted" in result["reason"], result["reason"]


@pytest.mark.parametrize(
    "spoil",
    [
        lambda n: os.chmod(n.stamp, 0o644),
        lambda n: n.stamp.write_text("{not json"),
        lambda n: n.stamp.write_text(n.stamp.read_text().replace('"time": ', '"time": 1')),
        lambda n: (n.stamp.rename(n.path / "elsewhere.json"), n.stamp.symlink_to(n.path / "elsewhere.json")),
    ],
    ids=["group-readable", "unparseable", "edited", "symlink"],
)
def test_a_stamp_that_cannot_be_trusted_takes_the_full_path(node, spoil):
    node.write()
    spoil(node)
    result = node.read()
    assert result["skip"] is False
    assert "not trusted" in result["reason"] or "symlink" in result["reason"], result["reason"]


def test_other_inputs_a_forced_run_and_no_stamp(node):
    assert node.read()["reason"] == "no stamp of an earlier run"
    node.write()
    assert node.read(inputs_hash="b" * 64)["reason"].startswith("the role's inputs changed")
    assert node.read(force=True)["skip"] is False


def test_check_mode_writes_nothing(node):
    result = node.write(check=True)
    assert result["changed"] is True
    assert not node.stamp.exists()
    node.write()
    before = node.stamp.read_text()
    (node.path / "hosts").write_text("changed\n")
    assert node.write(check=True)["changed"] is True
    assert node.stamp.read_text() == before


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="no dpkg-query: not a Debian-family machine")
def test_package_versions_are_dpkg_querys():
    version = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "libc6"], capture_output=True, text=True, check=True
    ).stdout
    result = run_module(
        {
            "role": "r",
            "inputs_hash": INPUTS,
            "stamp_dir": "/nonexistent",
            "write": True,
            "probe": {"packages": ["libc6", "amx-cluster-no-such-package"]},
        },
        check=True,
    )
    assert result["fingerprint"]["packages"] == {"libc6": version, "amx-cluster-no-such-package": None}


def test_a_bad_role_name_or_probe_fails_before_anything_is_written(tmp_path):
    params = {**DEFAULTS, "inputs_hash": INPUTS, "stamp_dir": str(tmp_path), "write": True}
    with pytest.raises(node_state.NodeStateError, match="is not a role name"):
        node_state.run({**params, "role": "../etc"}, False)
    with pytest.raises(node_state.NodeStateError, match="the probe of role r is wrong: probe path 'hosts' is not"):
        node_state.run({**params, "role": "r", "probe": {"files": ["hosts"]}}, False)
    assert list(tmp_path.iterdir()) == []


# --- a stamp that names other stamps (the provision stamp) -----------------------------------------------------


@pytest.fixture
def provisioned(node):
    """The node's role stamp (ssh_mesh, from the fixture above) and a provision stamp that names it."""
    hosts = str(node.path / "hosts")
    names = {"ssh_mesh": {"inputs_hash": INPUTS}}
    common = {**DEFAULTS, "role": "provision", "inputs_hash": "c" * 64, "stamp_dir": str(node.path / "stamps")}

    class Provisioned:
        @staticmethod
        def write(stamps=None):
            probe = {"files": [hosts], "stamps": names if stamps is None else stamps}
            return node_state.run({**common, "write": True, "probe": probe}, False)

        @staticmethod
        def read(**extra):
            return node_state.run({**common, **extra}, False)

    node.write()
    return Provisioned


def test_a_stamp_that_names_stamps_holds_while_they_hold(node, provisioned):
    written = provisioned.write()
    assert written["written"] is True and written["reason"] == "stamp written"
    assert written["fingerprint"]["stamps"]["ssh_mesh"]["holds"] is True
    result = provisioned.read()
    assert result["skip"] is True, result["reason"]
    # Through ansible, as provision.yml's check calls it.
    assert node.ansible_read(role="provision", inputs_hash="c" * 64)["skip"] is True


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda n: (n.path / "id_ed25519").write_text("key two\n"), "the node changed since the stamp: files:"),
        (lambda n: n.stamp.unlink(), "no stamp of an earlier run"),
        (lambda n: os.chmod(n.stamp, 0o644), "not trusted"),
    ],
    ids=["role-file", "role-stamp-gone", "role-stamp-untrusted"],
)
def test_a_named_stamp_that_no_longer_holds_takes_the_full_path(node, provisioned, change, said):
    provisioned.write()
    change(node)
    result = provisioned.read()
    assert result["skip"] is False
    assert "the stamp of ssh_mesh does not hold (" in result["reason"] and said in result["reason"], result["reason"]


def test_records_of_other_inputs_do_not_evict_each_other(node, provisioned):
    """Two checkouts (or controllers) alternating: each keeps its own record, both hit."""
    provisioned.write()
    for _round in range(2):
        node.write(inputs_hash="b" * 64)
        assert node.read(inputs_hash="b" * 64)["skip"] is True
        assert node.read()["skip"] is True
        assert provisioned.read()["skip"] is True
    names = sorted(path.name for path in (node.path / "stamps").iterdir())
    assert node_state.record_name("ssh_mesh", INPUTS) in names
    assert node_state.record_name("ssh_mesh", "b" * 64) in names


def test_a_renewed_named_stamp_or_a_changed_own_file_takes_the_full_path(node, provisioned, monkeypatch):
    provisioned.write()
    # The same record at a later time: the role ran in full since, so the provision record no longer speaks for it.
    later = node_state.time.time() + 5
    monkeypatch.setattr(node_state.time, "time", lambda: later)
    assert node.write()["reason"] == "stamp renewed (the same record, a new time)"
    result = provisioned.read()
    assert (result["skip"], result["reason"]) == (False, "the node changed since the stamp: stamps: ssh_mesh")
    provisioned.write()
    (node.path / "hosts").write_text("localhost\n")
    result = provisioned.read()
    assert result["skip"] is False and result["reason"].startswith("the node changed since the stamp: files:")


def test_the_next_day_an_unchanged_node_still_takes_one_step(node, provisioned, monkeypatch):
    """The clock two days ahead: the provision record and the role record it names hold while their fingerprints do."""
    provisioned.write()
    later = node_state.time.time() + 2 * 86400
    monkeypatch.setattr(node_state.time, "time", lambda: later)
    result = provisioned.read()
    assert result["skip"] is True, result["reason"]
    assert node.read()["skip"] is True


def test_no_stamp_is_written_on_stamps_that_do_not_hold(node, provisioned):
    node.stamp.unlink()
    result = provisioned.write()
    assert (result["written"], result["changed"]) == (False, False)
    assert result["reason"] == "no stamp written: the stamp of ssh_mesh does not hold (no stamp of an earlier run)"
    assert not (node.path / "stamps" / node_state.record_name("provision", "c" * 64)).exists()
    # A stamp that names stamps of its own is not one to rest on (one level only).
    node.write()
    provisioned.write()
    nested = provisioned.write(stamps={"provision": {"inputs_hash": "c" * 64}})
    assert nested["reason"] == "no stamp written: the stamp of provision does not hold (it names stamps of its own)"


def test_a_reboot_takes_the_full_path(node, provisioned, monkeypatch, tmp_path):
    provisioned.write()
    # Another boot id (the kernel's, read from a file the test writes): as after a reboot.
    other_boot = tmp_path / "boot_id"
    other_boot.write_text("0f6c2d2e-3c1b-4a57-9a4e-8e2f5b8f7b10\n")
    monkeypatch.setattr(node_state.node_probe, "BOOT_ID", str(other_boot))
    result = provisioned.read()
    assert (result["skip"], result["reason"]) == (False, "the node rebooted since the stamp was written")
