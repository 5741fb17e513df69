# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one-step launch's inputs hash: every value of the user's changes it, Ansible's own variables and the run id
do not, and a changed collection file does."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ansible_collections.amx.cluster.plugins.plugin_utils.launch_inputs import (
    collection_files_hash,
    forced,
    launch_inputs,
    user_variables,
)

GROUPS = {
    "master": ["spr-a01"],
    "workers": ["spr-a02"],
    "cluster": ["spr-a01", "spr-a02"],
    "all": ["spr-a01", "spr-a02"],
}
CONTEXT = {"limit": None, "playbook_dir": "/src/playbooks", "pwd": "/src", "home": "/root"}


def hosts(**master):
    return {
        "spr-a01": dict({"ansible_host": "10.0.0.5", "train_epochs": 2, "inventory_hostname": "spr-a01"}, **master),
        "spr-a02": {"ansible_host": "10.0.0.6", "ansible_port": 2222},
    }


def inputs(hosts_=None, groups=None, context=None, collection="c" * 64):
    return launch_inputs(hosts_ or hosts(), groups or GROUPS, context or CONTEXT, collection)


@pytest.mark.parametrize(
    "name, value",
    [
        ("train_run_id", "squad-2"),
        ("inventory_hostname_short", "x"),
        ("ansible_facts", {"kernel": "6.1"}),
        ("ansible_check_mode", True),
        ("groups", {"x": []}),
        ("playbook_dir", "/elsewhere"),
        ("omit", "__omit_place_holder__x"),
    ],
)
def test_what_is_not_the_users_does_not_change_the_hash(name, value):
    assert inputs(hosts(**{name: value})) == inputs()


@pytest.mark.parametrize(
    "name, value",
    [
        ("train_epochs", 3),
        ("train_extra_env", {"GLOO_SOCKET_IFNAME": "eth1"}),
        ("ssh_mesh_address", "{{ ansible_facts['eth1']['ipv4']['address'] }}"),
        ("ansible_host", "10.0.0.9"),
        ("ansible_user", "mlops"),
        ("ansible_ssh_common_args", "-o ProxyJump=bastion"),
        ("ansible_become_user", "admin"),
        ("train_smoke_test_force", True),
    ],
)
def test_every_value_of_the_users_changes_the_hash(name, value):
    assert inputs(hosts(**{name: value})) != inputs()


def test_the_groups_the_limit_the_folders_and_the_collection_change_the_hash():
    assert inputs(groups=dict(GROUPS, workers=[], cluster=["spr-a01"])) != inputs()
    assert inputs(context=dict(CONTEXT, limit="spr-a01")) != inputs()
    assert inputs(context=dict(CONTEXT, pwd="/other")) != inputs()
    assert inputs(collection="d" * 64) != inputs()
    # Groups the launch does not read do not.
    assert inputs(groups=dict(GROUPS, all=["x"])) == inputs()


def test_user_variables_keeps_connection_settings_and_drops_facts():
    kept = user_variables({"ansible_port": 22, "ansible_distribution": "Debian", "hostvars": {}, "train_x": 1})
    assert kept == {"ansible_port": 22, "train_x": 1}


@pytest.mark.parametrize("value, on", [(True, True), ("true", True), ("yes", True), (False, False), ("false", False)])
def test_forced(value, on):
    found = forced({"a": {"node_stamp_force": value}, "b": {}}, ["train_smoke_test_force", "node_stamp_force"])
    assert found == (["node_stamp_force"] if on else [])


def copy_collection(tmp_path: Path) -> Path:
    root = Path(__file__).resolve().parents[4]
    for folder in ("roles", "plugins", "playbooks"):
        shutil.copytree(root / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "galaxy.yml", tmp_path / "galaxy.yml")
    return tmp_path


def test_a_changed_collection_file_changes_the_collection_hash(tmp_path):
    root = copy_collection(tmp_path)
    before = collection_files_hash(str(root))
    assert collection_files_hash(str(root)) == before
    template = root / "roles" / "train" / "files" / "rank_exec.sh"
    template.write_text(template.read_text() + "\n# changed\n")
    changed = collection_files_hash(str(root))
    assert changed != before
    # Python's caches are not the collection's files.
    (root / "plugins" / "module_utils" / "__pycache__").mkdir(exist_ok=True)
    (root / "plugins" / "module_utils" / "__pycache__" / "x.pyc").write_bytes(b"x")
    assert collection_files_hash(str(root)) == changed
