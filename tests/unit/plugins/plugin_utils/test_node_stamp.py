# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller's side of the node record (amx.cluster.node_record): a role's inputs hash follows its files, its
variables, the collection version and the collection's plugin code; its option names come from its argument_specs;
a record is read and written on the node through the bundle, or the module where the connection takes no input."""

from __future__ import annotations

import json
import os
import pathlib
import shutil

import pytest
from ad_hoc import NODE_PYTHON, run_here
from ansible.errors import AnsibleActionFail

from ansible_collections.amx.cluster.plugins.module_utils import node_state
from ansible_collections.amx.cluster.plugins.module_utils.node_state import StampError
from ansible_collections.amx.cluster.plugins.plugin_utils import node_bundle
from ansible_collections.amx.cluster.plugins.plugin_utils.node_stamp import CONTROLLER_SPEC
from ansible_collections.amx.cluster.plugins.plugin_utils.node_stamp import node_stamp_inputs as inputs
from ansible_collections.amx.cluster.plugins.plugin_utils.node_stamp import node_stamp_option_names as option_names
from ansible_collections.amx.cluster.plugins.plugin_utils.node_stamp import node_state as record_call

REPO = pathlib.Path(__file__).resolve().parents[4]


@pytest.fixture
def collection(tmp_path):
    """A copy of the collection's galaxy.yml, its plugins and two roles, to edit."""
    shutil.copy(REPO / "galaxy.yml", tmp_path / "galaxy.yml")
    for role in ("tcmalloc", "node_stamp"):
        shutil.copytree(REPO / "roles" / role, tmp_path / "roles" / role)
    shutil.copytree(REPO / "plugins", tmp_path / "plugins", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def roles(root):
    return [str(root / "roles" / "tcmalloc"), str(root / "roles" / "node_stamp")]


def test_the_hash_follows_each_input(collection):
    base = inputs({"tcmalloc_install": True}, roles(collection))
    assert base == inputs({"tcmalloc_install": True}, roles(collection))
    assert base != inputs({"tcmalloc_install": False}, roles(collection))
    # A task file of the role, then one of the shared stamp tasks.
    verify = collection / "roles" / "tcmalloc" / "tasks" / "verify.yml"
    verify.write_text(verify.read_text() + "\n")
    edited = inputs({"tcmalloc_install": True}, roles(collection))
    assert edited != base
    check = collection / "roles" / "node_stamp" / "tasks" / "check.yml"
    check.write_text(check.read_text() + "\n")
    assert inputs({"tcmalloc_install": True}, roles(collection)) != edited


@pytest.mark.parametrize("folder", ["action", "filter", "module_utils", "modules", "plugin_utils"])
def test_a_new_checkout_at_the_same_version_with_other_plugin_code_is_other_inputs(collection, folder):
    base = inputs({}, roles(collection))
    code = sorted((collection / "plugins" / folder).glob("*.py"))[0]
    code.write_text(code.read_text() + "\n# patched\n")
    assert inputs({}, roles(collection)) != base
    # Python's caches are not the collection's code.
    (collection / "plugins" / folder / "__pycache__").mkdir(exist_ok=True)
    patched = inputs({}, roles(collection))
    (collection / "plugins" / folder / "__pycache__" / "x.pyc").write_bytes(b"x")
    assert inputs({}, roles(collection)) == patched


def test_the_readme_does_not_count(collection):
    base = inputs({}, roles(collection))
    (collection / "roles" / "tcmalloc" / "README.md").write_text("# other words\n")
    assert inputs({}, roles(collection)) == base


def test_the_collection_version_counts_and_an_installed_manifest_wins(collection):
    base = inputs({}, roles(collection))
    galaxy = collection / "galaxy.yml"
    galaxy.write_text(galaxy.read_text().replace("\nversion: ", "\nversion: 9", 1))
    bumped = inputs({}, roles(collection))
    assert bumped != base
    (collection / "MANIFEST.json").write_text(json.dumps({"collection_info": {"version": "7.7.7"}}))
    assert inputs({}, roles(collection)) not in (base, bumped)


def test_no_collection_around_the_role_is_an_error(tmp_path):
    shutil.copytree(REPO / "roles" / "tcmalloc", tmp_path / "x" / "tcmalloc")
    with pytest.raises(StampError, match=r"no MANIFEST\.json or galaxy\.yml"):
        inputs({}, [str(tmp_path / "x" / "tcmalloc")])
    with pytest.raises(StampError, match="is not a role folder"):
        inputs({}, [str(tmp_path / "nothing")])


def test_option_names_are_the_argument_specs():
    names = option_names(str(REPO / "roles" / "tcmalloc"))
    assert names == sorted(names)
    assert "tcmalloc_install" in names
    # How a run checks the node is not an input: node_setup.yml sets tcmalloc_preflight_done, train.yml does not.
    assert "tcmalloc_preflight_done" not in names
    # Nor how it installs the OS packages: node_setup.yml installs them in one call, a user's playbook per role.
    assert "tcmalloc_os_packages_done" not in names
    # Facts the role sets are not options: a fact set in an earlier play does not change the inputs.
    assert "tcmalloc_library_path" not in names
    with pytest.raises(StampError, match="has no entry point 'nope'"):
        option_names(str(REPO / "roles" / "tcmalloc"), "nope")


class Action:
    """What node_stamp.node_state uses of an action plugin: commands run here with this machine's system Python,
    which has no Ansible (as a node's), and a module call that is only recorded (the module itself runs through
    `ansible` in tests/unit/plugins/modules/test_node_state_module.py)."""

    def __init__(self, pipelining: bool, check_mode: bool = False, env=None):
        self.env = env
        self._connection = type("Connection", (), {"has_pipelining": pipelining, "become": None})()
        self._task = type("Task", (), {"check_mode": check_mode})()
        self._templar = type("Templar", (), {"template": staticmethod(lambda value: value)})()
        self.commands = []
        self.modules = []

    def _low_level_execute_command(self, command, sudoable=True, in_data=None):
        self.commands.append(command)
        return run_here(command, in_data, self.env)

    def _execute_module(self, module_name, module_args, task_vars):
        self.modules.append((module_name, module_args))
        return {"skip": False, "reason": "from the module", "invocation": {}}


def test_a_record_is_written_and_read_through_the_bundle_without_ansible_on_the_node(tmp_path):
    (tmp_path / "hosts").write_text("node1\n")
    task_vars = {"inventory_hostname": "node1", "ansible_python_interpreter": NODE_PYTHON}
    record = {"role": "tcmalloc", "inputs_hash": "b" * 64, "stamp_dir": str(tmp_path / "stamps")}
    action = Action(pipelining=True)
    probe = {"files": [str(tmp_path / "hosts")]}
    written = record_call(action, task_vars, dict(record, write=True, probe=probe, facts={"fact": 1}))
    assert written["written"] is True and written["changed"] is True, written
    read = record_call(action, task_vars, record)
    assert read["skip"] is True and read["facts"] == {"fact": 1}, read["reason"]
    (tmp_path / "hosts").write_text("node1\nnode2\n")
    read = record_call(action, task_vars, record)
    assert read["skip"] is False and "files" in read["reason"], read["reason"]
    assert len(action.commands) == 3 and all(NODE_PYTHON in command for command in action.commands)
    assert action.modules == []
    # In check mode a write says what it would do and writes nothing.
    checked = record_call(Action(pipelining=True, check_mode=True), task_vars, dict(record, write=True, probe=probe))
    assert checked["written"] is False and checked["changed"] is True


def test_a_wrong_record_call_fails_on_the_controller_or_with_the_nodes_reason(tmp_path, monkeypatch):
    task_vars = {"inventory_hostname": "node1", "ansible_python_interpreter": NODE_PYTHON}
    action = Action(pipelining=True)
    with pytest.raises(AnsibleActionFail, match=r"node1: the record's parameters are wrong: .*inputs_hash"):
        record_call(action, task_vars, {"role": "tcmalloc"})
    assert action.commands == []
    with pytest.raises(AnsibleActionFail, match=r"node1: node_state: role '\.\./x' is not a role name"):
        record_call(action, task_vars, {"role": "../x", "inputs_hash": "b" * 64, "stamp_dir": str(tmp_path)})
    with monkeypatch.context() as patch:
        patch.setattr(node_bundle, "OLDEST_PYTHON", (99, 0))
        with pytest.raises(
            AnsibleActionFail, match=r"is Python 3\.\d+, older than 99\.0: set ansible_python_interpreter"
        ):
            record_call(action, task_vars, {"role": "tcmalloc", "inputs_hash": "b" * 64, "stamp_dir": str(tmp_path)})
    broken = {"inventory_hostname": "node1", "ansible_python_interpreter": "/nonexistent/python3"}
    with pytest.raises(
        AnsibleActionFail, match="could not be read or written: no answer from /nonexistent/python3, rc 127"
    ):
        record_call(action, broken, {"role": "tcmalloc", "inputs_hash": "b" * 64, "stamp_dir": str(tmp_path)})


def test_a_connection_without_standard_input_reads_the_record_with_the_module(tmp_path):
    action = Action(pipelining=False)
    record = {"role": "tcmalloc", "inputs_hash": "b" * 64, "stamp_dir": str(tmp_path)}
    found = record_call(action, {"inventory_hostname": "node1"}, record)
    assert found == {"skip": False, "reason": "from the module"}
    assert action.modules == [("amx.cluster.node_state", record)] and action.commands == []


def test_a_call_leaves_the_shared_argument_spec_as_it_was(tmp_path):
    specs = (node_state.ARGUMENT_SPEC, CONTROLLER_SPEC)
    before = json.dumps(specs, sort_keys=True)
    task_vars = {"inventory_hostname": "node1", "ansible_python_interpreter": NODE_PYTHON}
    record_call(Action(pipelining=True), task_vars, {"role": "r", "inputs_hash": "b" * 64, "stamp_dir": str(tmp_path)})
    assert json.dumps(specs, sort_keys=True) == before


def test_a_home_in_a_record_path_is_the_nodes_not_the_controllers(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "controller"))
    node_home = tmp_path / "node"
    node_home.mkdir()
    (node_home / "hosts").write_text("node1\n")
    task_vars = {"inventory_hostname": "node1", "ansible_python_interpreter": NODE_PYTHON}
    record = {"role": "tcmalloc", "inputs_hash": "b" * 64, "stamp_dir": "~/stamps"}
    probe = {"files": ["~/hosts"]}
    node = Action(pipelining=True, env=dict(os.environ, HOME=str(node_home)))
    written = record_call(node, task_vars, dict(record, write=True, probe=probe))
    assert written["written"] is True, written
    assert [path.name for path in (node_home / "stamps").iterdir()] and not (tmp_path / "controller").exists()
    assert record_call(node, task_vars, record)["skip"] is True
