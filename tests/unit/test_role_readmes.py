# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Each role's README lists every variable its argument_specs accept, as tools/role_variables.py writes it."""

import importlib.util
import pathlib

import pytest

TOOL = pathlib.Path(__file__).resolve().parents[2] / "tools" / "role_variables.py"
spec = importlib.util.spec_from_file_location("role_variables", TOOL)
role_variables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(role_variables)

ROLES = sorted(path for path in role_variables.ROLES.iterdir() if (path / "meta" / "argument_specs.yml").exists())


@pytest.mark.parametrize("role", ROLES, ids=[role.name for role in ROLES])
def test_readme_lists_every_variable(role):
    readme = (role / "README.md").read_text()
    assert role_variables.section(role) in readme, f"run: python tools/role_variables.py ({role.name})"


def test_every_option_is_in_the_section():
    # The section really comes from the specs: each option of each entry point has a row.
    for role in ROLES:
        section = role_variables.section(role)
        specs = role_variables.yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
        for entry in specs.values():
            for name in entry.get("options") or {}:
                assert f"| `{name}` |" in section, (role.name, name)


def test_markup_and_pipes_become_markdown():
    assert role_variables.plain("Set O(a_b) to C(x|y),\n  see I(z) and E(HOME).") == (
        "Set `a_b` to `x\\|y`, see *z* and `HOME`."
    )


def test_a_section_is_replaced_not_added_twice():
    generated = role_variables.BEGIN + "\nnew\n" + role_variables.END + "\n"
    readme = "# r\n\n" + role_variables.BEGIN + "\nold\n" + role_variables.END + "\n\n## After\n"
    assert role_variables.updated(readme, generated) == "# r\n\n" + generated + "\n## After\n"
    assert role_variables.updated("# r\n", generated) == "# r\n\n" + generated
