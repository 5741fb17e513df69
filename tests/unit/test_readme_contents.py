# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The README's collection sections say what ships and what is tested: its included content is what ansible-doc
reports of the collection (tools/collection_contents.py), and the ansible-core versions it names are the ones CI
installs."""

import importlib.util
import pathlib
import re
import shutil

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "collection_contents.py"
spec = importlib.util.spec_from_file_location("collection_contents", TOOL)
collection_contents = importlib.util.module_from_spec(spec)
spec.loader.exec_module(collection_contents)
README = (REPO / "README.md").read_text()


def pin(requirements: pathlib.Path, name: str) -> str:
    return re.search(rf"^{re.escape(name)}==(\S+)$", requirements.read_text(), re.M).group(1)


@pytest.mark.skipif(shutil.which("ansible-doc") is None, reason="needs ansible-doc on PATH (make setup)")
def test_the_included_content_is_what_ships():
    assert collection_contents.section() in README, "run: python tools/collection_contents.py"


@pytest.mark.skipif(shutil.which("ansible-doc") is None, reason="needs ansible-doc on PATH (make setup)")
def test_every_plugin_and_role_entry_point_has_a_row():
    section = collection_contents.section()
    for plugin_type, _title in collection_contents.PLUGIN_TYPES:
        for name in collection_contents.ansible_doc_list(plugin_type):
            assert f"| `{name}` |" in section, name
    for name, role in collection_contents.ansible_doc_list("role").items():
        for entry in role["entry_points"]:
            assert f"| `{name}` | `{entry}` |" in section, (name, entry)


def test_a_section_is_replaced_not_added_twice():
    generated = collection_contents.BEGIN + "\nnew\n" + collection_contents.END + "\n"
    readme = "# r\n\n" + collection_contents.BEGIN + "\nold\n" + collection_contents.END + "\n\n## After\n"
    assert collection_contents.updated(readme, generated) == "# r\n\n" + generated + "\n## After\n"


def test_the_tested_core_versions_are_the_ones_ci_installs():
    tested = pin(REPO / "requirements-dev.txt", "ansible-core")
    claim = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())["requires_ansible"]
    assert claim == ">=" + ".".join(tested.split(".")[:2]) + ".0", "meta/runtime.yml admits only what CI tests"
    newest = pin(REPO / "tests" / "core-newest.txt", "ansible-core")
    text = " ".join(README.split())
    assert f"as community.crypto and amazon.aws do: {tested} (requirements-dev.txt's, with every check) and" in text
    assert f"and {newest} (`tests/core-newest.txt`" in text
