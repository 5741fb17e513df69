# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every conditional in the collection's YAML is a string (or a boolean).

A ': ' inside a plain YAML scalar turns the condition into a mapping. yamllint and ansible-lint accept that, and
Ansible refuses it ("Conditional expressions must be strings") only when the task runs, which for a molecule
verify step can be half an hour into a test run.
"""

import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
PATTERNS = [
    "playbooks/*.yml",
    "roles/*/tasks/*.yml",
    "roles/*/handlers/*.yml",
    "molecule/*/*.yml",
    "molecule/*/tasks/*.yml",
    "tests/integration/**/*.yml",
]
CONDITIONALS = {"that", "when", "failed_when", "changed_when", "until"}
FILES = sorted({path for pattern in PATTERNS for path in ROOT.glob(pattern)})


def not_strings(node):
    """(key, value) of every conditional entry in a loaded YAML tree that is neither a string nor a boolean."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CONDITIONALS:
                for entry in value if isinstance(value, list) else [value]:
                    if not isinstance(entry, (str, bool)):
                        yield key, entry
            yield from not_strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from not_strings(item)


@pytest.mark.parametrize("path", FILES, ids=[str(path.relative_to(ROOT)) for path in FILES])
def test_conditionals_are_strings(path):
    assert list(not_strings(yaml.safe_load(path.read_text()))) == []


def test_a_colon_in_a_plain_condition_is_caught():
    tasks = yaml.safe_load(
        "- assert:\n    that:\n      - out is search('a')\n      - out is search(pattern ~ 'x: y')\n"
    )
    assert list(not_strings(tasks)) == [("that", {"out is search(pattern ~ 'x": "y')"})]
