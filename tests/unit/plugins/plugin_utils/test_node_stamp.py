# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller's side of the node record (amx.cluster.node_record): a role's inputs hash follows its files, its
variables, the collection version and the collection's plugin code; its option names come from its argument_specs."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.node_state import StampError
from ansible_collections.amx.cluster.plugins.plugin_utils.node_stamp import node_stamp_inputs as inputs
from ansible_collections.amx.cluster.plugins.plugin_utils.node_stamp import node_stamp_option_names as option_names

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
