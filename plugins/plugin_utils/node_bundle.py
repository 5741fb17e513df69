# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A function of the collection's module_utils run on a node without Ansible's module wrapper, in one round trip.

For the one-step launch's check, whose time is the user's wait: Ansible's wrapper (building the module's payload on
the controller, sending it, importing Ansible's own module code on the node) took about 0.3 s of it. Here the
controller sends the sources of one module_utils file and of every module_utils file it imports, with the call's
arguments, as one JSON document on standard input to ``PYTHON -I -c BOOTSTRAP``; the bootstrap imports them from
memory, calls the function and prints its answer as one JSON line. The function takes one dict and returns one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from typing import Any, Dict, List, Mapping, Tuple

PACKAGE = "ansible_collections.amx.cluster.plugins.module_utils"
# ``from PACKAGE.name import ...`` or ``from PACKAGE import name, ...`` (in parentheses over several lines, too).
IMPORT = re.compile(rf"^[ \t]*from {re.escape(PACKAGE)}(?:\.(\w+))? import (\([^)]*\)|[^\n]*)", re.MULTILINE)
MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")

# Runs on the node (Python 3.8+): the sources come in on standard input, never from the node's disk.
BOOTSTRAP = """
import importlib, importlib.abc, importlib.util, json, sys
call = json.loads(sys.stdin.buffer.read())
sources = call["sources"]

class Bundle(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name in sources or any(key.startswith(name + ".") for key in sources):
            return importlib.util.spec_from_loader(name, self, is_package=name not in sources)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        if module.__name__ in sources:
            module.__file__ = "<bundle>/" + module.__name__.replace(".", "/") + ".py"
            exec(compile(sources[module.__name__], module.__file__, "exec"), module.__dict__)

    def get_source(self, name):
        return sources.get(name)

sys.meta_path.insert(0, Bundle())
answer = getattr(importlib.import_module(call["module"]), call["function"])(call["arguments"])
sys.stdout.write("\\n" + json.dumps(answer) + "\\n")
"""


def imported_names(source: str) -> List[str]:
    """The collection's module_utils that a source imports (by module name). A pattern, not a parse: parsing the
    bundle's files took 40 ms of every launch; the unit tests hold the two equal for every module_utils file."""
    names: List[str] = []
    for module, imported in IMPORT.findall(source):
        if module:
            names.append(module)
        else:
            names += [part.split()[0] for part in imported.strip("()").replace("\n", " ").split(",") if part.strip()]
    return names


def sources(name: str, folder: str = MODULE_UTILS) -> Dict[str, str]:
    """{full module name: source} of module_utils ``name`` and of everything it imports from module_utils."""
    found: Dict[str, str] = {}
    pending = [name]
    while pending:
        current = pending.pop()
        full = f"{PACKAGE}.{current}"
        if full in found:
            continue
        with open(os.path.join(folder, current + ".py"), encoding="utf-8") as handle:
            found[full] = handle.read()
        pending += imported_names(found[full])
    return found


def command(
    python: str, name: str, function: str, arguments: Mapping[str, Any], folder: str = MODULE_UTILS
) -> Tuple[str, bytes]:
    """(the shell command, its standard input) that runs ``name.function(arguments)`` with ``python``."""
    call = {"sources": sources(name, folder), "module": f"{PACKAGE}.{name}", "function": function}
    call["arguments"] = arguments
    return f"{shlex.quote(python)} -I -c {shlex.quote(BOOTSTRAP)}", json.dumps(call).encode("utf-8")


def answer(stdout: str) -> Dict[str, Any]:
    """The answer of a command that prints one JSON object as its last such line (a bundle, the run's agent), or
    ValueError."""
    lines = [line for line in (stdout or "").splitlines() if line.startswith("{")]
    if not lines:
        raise ValueError("no answer")
    found = json.loads(lines[-1])
    if not isinstance(found, dict):
        raise ValueError("the answer is not a JSON object")
    return found
