# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The amx.cluster.provision_stamp action plugin, run by ansible-playbook on this machine (a one-node cluster over
the local connection, stamps in a temporary folder): the check, the stamp a full provision writes, and what makes the
next check take the full path. The node roles are stood in for by the stamps and facts they leave (written here
with the real amx.cluster.node_state); playbooks/provision.yml runs the real roles in the fleet scenario."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.amx.cluster.plugins.action.provision_stamp import mesh_files, named_stamps

REPO = Path(__file__).resolve().parents[4]
PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
INPUTS = "a" * 64

# The node roles' part (their stamps and decisions, the mesh's and the hostfile's facts), then the check and, when
# asked, the stamp.
PLAY = """
- hosts: cluster
  gather_facts: false
  tasks:
    - name: Check the node
      amx.cluster.provision_stamp:
        state: check
        stamp_dir: "{{ stamp_dir }}"
      register: check

    - name: Stand in for the node roles' stamps
      amx.cluster.node_state:
        role: "{{ item }}"
        inputs_hash: "@INPUTS@"
        stamp_dir: "{{ stamp_dir }}"
        write: true
        probe: {files: ["{{ hostfile }}"]}
      loop: "{{ roles_run }}"
      when: lookup('ansible.builtin.env', 'WRITE_ROLES') == 'yes'

    - name: Stand in for the facts the node roles and the mesh publish
      ansible.builtin.set_fact:
        __tcmalloc_stamp: {skip: false, reason: x, inputs_hash: "@INPUTS@"}
        __torch_stack_stamp: >-
          {{ {'inputs_hash': '@INPUTS@'} if 'torch_stack' in roles_run else {} }}
        __amx_check_stamp: {inputs_hash: "@INPUTS@"}
        ssh_mesh_files: []
        mpi_hostfile_file: "{{ hostfile }}"
      when: lookup('ansible.builtin.env', 'WRITE_ROLES') == 'yes'

    - name: Stamp the node
      amx.cluster.provision_stamp:
        state: present
        inputs: "{{ check.inputs }}"
        stamp_dir: "{{ stamp_dir }}"
      register: stamped
      when: lookup('ansible.builtin.env', 'WRITE_ROLES') == 'yes'

    - name: Keep the results
      ansible.builtin.copy:
        content: "{{ {'check': check, 'stamped': stamped} | to_json }}"
        dest: "{{ result_file }}"
        mode: "0644"
""".replace("@INPUTS@", INPUTS)

needs_playbook = pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not next to this Python")
pytestmark = [needs_playbook, pytest.mark.skipif(os.geteuid() != 0, reason="the stamps are root's: run as root")]


@pytest.fixture
def cluster(tmp_path):
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "hosts").write_text("localhost\n")
    inventory = {
        "all": {
            "children": {"cluster": {"children": {"master": {"hosts": {"localhost": None}}, "workers": {"hosts": {}}}}},
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        }
    }
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))

    # Whether the play stands in for the roles comes from the environment: every variable is one of the inputs.
    def play(write_roles=False, **extra):
        result_file = tmp_path / "result.json"
        variables = {
            "stamp_dir": str(tmp_path / "stamps"),
            "hostfile": str(tmp_path / "hosts"),
            "result_file": str(result_file),
            "roles_run": ["tcmalloc", "torch_stack", "amx_check"],
            **extra,
        }
        (tmp_path / "vars.json").write_text(json.dumps(variables))
        argv = [str(PLAYBOOK), "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml")]
        argv += ["-e", f"@{tmp_path / 'vars.json'}"]
        env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
        env["WRITE_ROLES"] = "yes" if write_roles else "no"
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(result_file.read_text())

    play.path = tmp_path
    return play


def test_a_full_provision_stamps_the_node_and_the_next_check_skips_until_something_changes(cluster):
    first = cluster(write_roles=True)
    assert (first["check"]["skip"], first["check"]["reason"]) == (False, "no stamp of an earlier run")
    assert first["check"]["changed"] is False and len(first["check"]["inputs"]) == 64
    assert first["stamped"]["written"] is True and first["stamped"]["changed"] is False
    assert first["stamped"]["files"] == [str(cluster.path / "hosts")]

    again = cluster()
    assert again["check"]["skip"] is True, again["check"]["reason"]
    assert again["check"]["inputs"] == first["check"]["inputs"]

    # Another variable anywhere: other inputs.
    other = cluster(train_epochs=3)
    assert other["check"]["skip"] is False
    assert other["check"]["reason"].startswith("the role's inputs changed")

    # The hostfile, which the stamp watches and a node role's stamp too.
    (cluster.path / "hosts").write_text("localhost\nnode1\n")
    changed = cluster()
    assert changed["check"]["skip"] is False
    said = changed["check"]["reason"]
    assert "the stamp of amx_check does not hold (the node changed since the stamp: files:" in said


@pytest.mark.parametrize("switch", ["ssh_mesh_rotate", "node_stamp_force"])
def test_a_full_run_asked_for_twice_in_a_row_runs_twice(cluster, switch):
    # The first run with the switch stamps the node for inputs that hold the switch; the same command again must
    # still take the full path (a new key, every role in full), not find the node as that run left it.
    first = cluster(write_roles=True, **{switch: True})
    assert first["stamped"]["written"] is True
    again = cluster(**{switch: "yes"})
    assert (again["check"]["skip"], again["check"]["reason"]) == (False, f"a full run was asked for ({switch})")
    assert cluster(**{switch: False})["check"]["reason"].startswith("the role's inputs changed")


def test_no_stamp_when_a_node_role_did_not_decide_in_this_run(cluster):
    result = cluster(write_roles=True, roles_run=["tcmalloc", "amx_check"])
    assert result["stamped"]["written"] is False
    assert result["stamped"]["reason"] == "no provision stamp: torch_stack did not run in full here"
    assert not list((cluster.path / "stamps").glob("provision.*"))


def test_the_named_stamps_and_files_come_from_the_runs_facts():
    facts = {
        "__tcmalloc_stamp": {"skip": True, "reason": "r", "inputs_hash": INPUTS},
        "__torch_stack_stamp": {"inputs_hash": INPUTS},
        "__amx_check_stamp": {"inputs_hash": INPUTS},
        "ssh_mesh_files": ["/home/u/.ssh/config", "/home/u/.ssh/authorized_keys"],
        "mpi_hostfile_file": "",
    }
    stamps, missing = named_stamps(facts)
    assert missing == [] and sorted(stamps) == ["amx_check", "tcmalloc", "torch_stack"]
    assert stamps["tcmalloc"] == {"inputs_hash": INPUTS}
    assert named_stamps({**facts, "__hf_examples_stamp": {"inputs_hash": INPUTS}})[0]["hf_examples"]
    assert named_stamps({})[1] == ["tcmalloc", "torch_stack", "amx_check"]
    assert mesh_files(facts) == (["/home/u/.ssh/authorized_keys", "/home/u/.ssh/config"], [])
    assert mesh_files({"mpi_hostfile_file": "/home/u/hosts"}) == (["/home/u/hosts"], ["ssh_mesh"])


# More hosts than forks: each host's check (and the master's launch check) runs after other hosts registered
# results, in this task and the ones before; none of them may be in the inputs.
FORKS_PLAY = """
- hosts: cluster
  gather_facts: false
  tasks:
    - name: Register what differs on every run
      ansible.builtin.command: date +%s%N
      register: clock
      changed_when: false

    - name: Set a fact that differs on every run
      ansible.builtin.set_fact:
        started: "{{ now() }}"

    - name: Check the node
      amx.cluster.provision_stamp:
        state: check
        stamp_dir: "{{ stamp_dir }}"
      register: check

    - name: Check the launch
      amx.cluster.train_launch:
        enabled: false
      register: launch
      when: inventory_hostname == 'h1'

    - name: Keep the inputs
      ansible.builtin.copy:
        content: "{{ {'check': check.inputs, 'launch': launch.inputs | default('')} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
"""


def test_the_inputs_do_not_depend_on_the_forks_nor_on_what_the_run_registered(tmp_path):
    (tmp_path / "play.yml").write_text(FORKS_PLAY)
    hosts = {f"h{number}": None for number in range(1, 5)}
    inventory = {
        "all": {
            "children": {
                "cluster": {"children": {"master": {"hosts": {"h1": None}}, "workers": {"hosts": dict(hosts)}}}
            },
            "vars": {
                "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable,
                "stamp_dir": str(tmp_path / "stamps"),
                "out": str(tmp_path),
                # A lookup counts by its value, not its text.
                "train_note": "{{ lookup('ansible.builtin.env', 'AMX_NOTE') }}",
            },
        }
    }
    del inventory["all"]["children"]["cluster"]["children"]["workers"]["hosts"]["h1"]
    (tmp_path / "inventory.json").write_text(json.dumps(inventory))

    def run(note="one"):
        argv = [str(PLAYBOOK), "-f", "1", "-i", str(tmp_path / "inventory.json"), str(tmp_path / "play.yml")]
        env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", AMX_NOTE=note)
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return {host: json.loads((tmp_path / f"{host}.json").read_text()) for host in hosts}

    first, second = run(), run()
    assert first == second
    assert len({found["check"] for found in first.values()}) == 4  # each host's own settings
    assert first["h1"]["launch"]
    other = run(note="two")
    assert all(other[host]["check"] != first[host]["check"] for host in hosts)
    assert other["h1"]["launch"] != first["h1"]["launch"]
