# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the "Every variable" section of each role's README from the role's meta/argument_specs.yml (type,
description, choices) and defaults/main.yml (the default as written there), so the README cannot drift from
what the role accepts.

    python tools/role_variables.py           # rewrite the sections
    python tools/role_variables.py --check   # exit 1 and name the READMEs that are out of date
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
from typing import Any, Dict, List

import yaml

ROLES = pathlib.Path(__file__).resolve().parent.parent / "roles"
BEGIN = "<!-- every-variable: generated from meta/argument_specs.yml by tools/role_variables.py, do not edit -->"
END = "<!-- every-variable: end -->"
MARKUP = re.compile(r"\b([OCVIE])\(([^)]*)\)")


def plain(text: str) -> str:
    """Ansible doc markup (O(), C(), V(), E(), I()) as Markdown, on one table-safe line."""
    text = MARKUP.sub(lambda m: f"*{m.group(2)}*" if m.group(1) == "I" else f"`{m.group(2)}`", text)
    return " ".join(text.split()).replace("|", "\\|")


def default_cell(name: str, spec: Dict[str, Any], defaults: Dict[str, Any]) -> str:
    if name in defaults:
        value = defaults[name]
    elif "default" in spec:
        value = spec["default"]
    else:
        return "required" if spec.get("required") else "`null`"
    shown = " ".join(value.split()) if isinstance(value, str) and value else json.dumps(value, sort_keys=True)
    if len(shown) > 80:  # a long expression: the description says what it computes
        return "computed in `defaults/main.yml`"
    return "`" + shown.replace("|", "\\|") + "`"


def type_cell(spec: Dict[str, Any]) -> str:
    kind = spec.get("type", "str")
    return f"{kind} of {spec['elements']}" if spec.get("elements") else kind


def table(options: Dict[str, Any], defaults: Dict[str, Any]) -> List[str]:
    lines = ["| variable | type | default | description |", "| --- | --- | --- | --- |"]
    for name in sorted(options):
        spec = options[name] or {}
        description = spec.get("description", "")
        text = plain(" ".join(description) if isinstance(description, list) else description)
        if spec.get("choices"):
            text += " One of " + ", ".join(f"`{choice}`" for choice in spec["choices"]) + "."
        lines.append(f"| `{name}` | {type_cell(spec)} | {default_cell(name, spec, defaults)} | {text} |")
    return lines


def section(role: pathlib.Path) -> str:
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    defaults_file = role / "defaults" / "main.yml"
    defaults = (yaml.safe_load(defaults_file.read_text()) or {}) if defaults_file.exists() else {}
    lines = [BEGIN, "", "## Every variable", ""]
    rendered: Dict[str, str] = {}
    for entry, spec in specs.items():
        options = spec.get("options") or {}
        same_as = next((name for name, seen in rendered.items() if seen == json.dumps(options, sort_keys=True)), None)
        if len(specs) > 1:
            lines.append(f"Entry point `{entry}`" + (f": the same variables as `{same_as}`." if same_as else ":"))
            lines.append("")
        if same_as is None:
            lines += [*table(options, defaults), ""]
            rendered[entry] = json.dumps(options, sort_keys=True)
    lines.append(END)
    return "\n".join(lines) + "\n"


def updated(readme: str, generated: str) -> str:
    if BEGIN in readme:
        head, rest = readme.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        return head + generated + (("\n" + tail) if tail else "")
    return readme.rstrip("\n") + "\n\n" + generated


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report READMEs that are out of date")
    args = parser.parse_args()
    stale = []
    for role in sorted(path for path in ROLES.iterdir() if (path / "meta" / "argument_specs.yml").exists()):
        readme_path = role / "README.md"
        readme = readme_path.read_text()
        new = updated(readme, section(role))
        if new != readme:
            stale.append(str(readme_path))
            if not args.check:
                readme_path.write_text(new)
    if args.check and stale:
        print("out of date (run python tools/role_variables.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
