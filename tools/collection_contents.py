# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the README's "Included content" section from what ansible-doc reports of the collection (modules, filters,
the inventory plugin, roles and their entry points), so the list cannot drift from the plugins and roles that ship.

    python tools/collection_contents.py           # rewrite the section
    python tools/collection_contents.py --check   # exit 1 when the README is out of date

Run it with the controller's virtualenv active (ansible-doc on PATH) from the checkout (its ansible.cfg finds the
collection).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
from typing import Dict, List

REPO = pathlib.Path(__file__).resolve().parent.parent
README = REPO / "README.md"
BEGIN = "<!-- included-content: generated from ansible-doc by tools/collection_contents.py, do not edit -->"
END = "<!-- included-content: end -->"
PLUGIN_TYPES = [("module", "Modules"), ("filter", "Filters"), ("inventory", "Inventory plugins")]


def ansible_doc_list(plugin_type: str) -> Dict[str, object]:
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    done = subprocess.run(
        ["ansible-doc", "-t", plugin_type, "-l", "amx.cluster", "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def section() -> str:
    lines = [BEGIN, "", "## Included content", ""]
    for plugin_type, title in PLUGIN_TYPES:
        listed = ansible_doc_list(plugin_type)
        lines += [f"### {title}", "", "| name | what it does |", "| --- | --- |"]
        lines += [f"| `{name}` | {cell(listed[name])} |" for name in sorted(listed)]
        lines.append("")
    roles = ansible_doc_list("role")
    lines += ["### Roles", "", "Each role works alone in a fleet of your own: its README in `roles/<name>/`, or", ""]
    lines += ["`ansible-doc -t role amx.cluster.<name>`.", ""]
    lines += ["| role | entry point | what it does |", "| --- | --- | --- |"]
    for name in sorted(roles):
        entry_points = roles[name]["entry_points"]  # type: ignore[index]
        lines += [f"| `{name}` | `{entry}` | {cell(entry_points[entry])} |" for entry in sorted(entry_points)]
    lines += ["", "The playbooks are in [What the playbooks do](#what-the-playbooks-do).", "", END]
    return "\n".join(lines) + "\n"


def updated(readme: str, generated: str) -> str:
    """The README with its section replaced, or added at the end when it has none."""
    if BEGIN in readme:
        head, rest = readme.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        return head + generated + ("\n" + tail if tail else "")
    return readme.rstrip("\n") + "\n\n" + generated


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the README's section is out of date")
    args = parser.parse_args(argv)
    readme = README.read_text()
    new = updated(readme, section())
    if args.check:
        if new != readme:
            print("README.md: the included content is out of date: run python tools/collection_contents.py")
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
