# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every conditional in the collection's YAML is a string (or a boolean), and none ends in a list.

A ': ' inside a plain YAML scalar turns the condition into a mapping. yamllint and ansible-lint accept that, and
Ansible refuses it ("Conditional expressions must be strings") only when the task runs, which for a molecule
verify step can be half an hour into a test run. The same holds for a condition whose value is a list
(`... | select(...) | list`): ansible-core 2.19 wants a boolean ("Conditionals must have a boolean result").
"""

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
PATTERNS = [
    "playbooks/*.yml",
    "roles/*/tasks/*.yml",
    "roles/*/handlers/*.yml",
    "extensions/molecule/*/*.yml",
    "extensions/molecule/*/tasks/*.yml",
    "tests/integration/**/*.yml",
]
CONDITIONALS = {"that", "when", "failed_when", "changed_when", "until"}
FILES = sorted({path for pattern in PATTERNS for path in ROOT.glob(pattern)})


# A condition whose last step makes a list, with no comparison after it.
LIST_RESULT = re.compile(r"\|\s*list\s*\)*\s*$")


def not_strings(node):
    """(key, value) of every conditional entry in a loaded YAML tree that is neither a string nor a boolean."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CONDITIONALS:
                for entry in value if isinstance(value, list) else [value]:
                    if not isinstance(entry, (str, bool)) or (isinstance(entry, str) and LIST_RESULT.search(entry)):
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


def test_a_condition_that_ends_in_a_list_is_caught():
    tasks = yaml.safe_load(
        "- assert:\n    that:\n      - files | select('match', 'six-') | list\n"
        "      - files | select('match', 'six-') | list | length > 0\n"
    )
    assert list(not_strings(tasks)) == [("that", "files | select('match', 'six-') | list")]
