# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Each role's README lists every variable its argument_specs accept, as tools/role_variables.py writes it, and that
generated table is its one table of variables."""

import importlib.util
import pathlib
from typing import List

import pytest

TOOL = pathlib.Path(__file__).resolve().parents[2] / "tools" / "role_variables.py"
spec = importlib.util.spec_from_file_location("role_variables", TOOL)
role_variables = importlib.util.module_from_spec(spec)
spec.loader.exec_module(role_variables)

ROLES = sorted(path for path in role_variables.ROLES.iterdir() if (path / "meta" / "argument_specs.yml").exists())


def variable_tables_outside_the_section(readme: str) -> List[str]:
    """Header rows of the Markdown tables whose first cell is `variable`, outside the generated section."""
    if role_variables.BEGIN in readme:
        head, rest = readme.split(role_variables.BEGIN, 1)
        readme = head + (rest.split(role_variables.END, 1)[1] if role_variables.END in rest else "")
    rows = []
    for line in readme.splitlines():
        cells = line.strip().split("|")
        if line.lstrip().startswith("|") and len(cells) > 2 and cells[1].strip().strip("`").lower() == "variable":
            rows.append(line.strip())
    return rows


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


@pytest.mark.parametrize("role", ROLES, ids=[role.name for role in ROLES])
def test_the_generated_table_is_the_one_variable_table(role):
    # A hand-written table beside the generated one drifts from the specs: what it says goes into the
    # descriptions in meta/argument_specs.yml instead.
    readme = (role / "README.md").read_text()
    assert variable_tables_outside_the_section(readme) == [], (
        f"{role.name}: README.md has a variable table outside 'Every variable'; move what it says into the"
        " descriptions of meta/argument_specs.yml and run: python tools/role_variables.py"
    )


def test_a_second_variable_table_is_found():
    generated = role_variables.BEGIN + "\n| variable | type | default | description |\n" + role_variables.END + "\n"
    assert variable_tables_outside_the_section("# r\n\n" + generated) == []
    hand_written = "## Variables\n\n| variable | default | meaning |\n| --- | --- | --- |\n| `r_x` | `1` | x |\n"
    assert variable_tables_outside_the_section("# r\n\n" + hand_written + "\n" + generated) == [
        "| variable | default | meaning |"
    ]
    assert variable_tables_outside_the_section(generated + "\n|  `Variable` | default |\n") == [
        "|  `Variable` | default |"
    ]
    # Tables of facts, profiles or tags are not variable tables.
    assert variable_tables_outside_the_section("| fact | type | content |\n| --- | --- | --- |\n") == []
