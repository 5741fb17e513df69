# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The train role's last gate filter, train_stale_workers: a call of module_utils.train_gates."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_env import local_play_tasks

from ansible_collections.amx.cluster.plugins.module_utils import train_gates

REPO = Path(__file__).resolve().parents[4]
ANSIBLE = REPO / ".venv" / "bin" / "ansible-playbook"

GATES = {"train_stale_workers": train_gates.stale_workers}


def gate_filter(name):
    module = importlib.import_module(f"ansible_collections.amx.cluster.plugins.filter.{name}")
    filters = module.FilterModule().filters()
    assert list(filters) == [name]
    return filters[name]


@pytest.mark.parametrize("name", sorted(GATES))
def test_each_gate_filter_is_its_function(name):
    assert gate_filter(name).__doc__ == GATES[name].__doc__


@pytest.mark.parametrize(("name", "args"), [("train_stale_workers", ({"files": []}, ["node-b"], "/d"))])
def test_bad_input_names_the_filter(name, args):
    with pytest.raises(AnsibleFilterError, match=f"^amx.cluster.{name}: expected"):
        gate_filter(name)(*args)


STALE_PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.add_host:
        name: node-b
        __train_tiny_files: {{files: [{{path: /d/model.json, checksum: "1"}}]}}
    - ansible.builtin.add_host:
        name: node-c
        __train_tiny_files: {{files: [{{path: /d/model.json, checksum: "1"}}, {{path: /d/data.json, checksum: "2"}}]}}
    - ansible.builtin.add_host:
        name: node-d
        __train_tiny_files: {{skipped: true}}
    - ansible.builtin.set_fact:
        __train_tiny_files: {{files: [{{path: /d/model.json, checksum: "1"}}, {{path: /d/data.json, checksum: "2"}}]}}
    - ansible.builtin.include_vars:
        file: {repo}/roles/train/vars/main.yml
    - ansible.builtin.debug:
        msg: "{{{{ __train_tiny_stale_workers }}}}"
"""


def test_the_roles_stale_worker_selection_in_a_real_play(tmp_path):
    # roles/train/vars/main.yml's __train_tiny_stale_workers, as Ansible evaluates it: node-b lacks a file, node-c
    # has them all, node-d's find was skipped and node-e has no find result at all (both lack everything).
    play = tmp_path / "play.yml"
    play.write_text(STALE_PLAY.format(repo=REPO))
    extra = json.dumps(
        {
            "__train_master": "localhost",
            "__train_workers": ["node-b", "node-c", "node-d", "node-e"],
            "__train_tiny_dir": "/d",
        }
    )
    tasks = local_play_tasks(play, "-e", extra)
    assert tasks[-1]["hosts"]["localhost"]["msg"] == ["node-b", "node-d", "node-e"]
