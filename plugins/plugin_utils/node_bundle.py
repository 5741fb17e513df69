# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A function of the collection's module_utils run on a node without Ansible's module wrapper, in one round trip.

For the one-step launch's check, whose time is the user's wait: Ansible's wrapper (building the module's payload on
the controller, sending it, importing Ansible's own module code on the node) took about 0.3 s of it. Here the
controller sends the sources of one module_utils file and of every module_utils file it imports, with the call's
arguments, as one zlib-compressed JSON document on standard input to ``PYTHON -I -c BOOTSTRAP``; the bootstrap
imports them from memory, calls the function and prints its answer as one JSON line. The function takes one dict and
returns one. The node records' reads and writes (amx.cluster.node_record, amx.cluster.provision_stamp) go the same
way: about 25 kB a call instead of a module's 200 kB.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import zlib
from typing import Any, Dict, List, Mapping, Tuple

from ansible import constants as C
from ansible.executor.interpreter_discovery import discover_interpreter

PACKAGE = "ansible_collections.amx.cluster.plugins.module_utils"
# ``from PACKAGE.name import ...`` or ``from PACKAGE import name, ...`` (in parentheses over several lines, too).
IMPORT = re.compile(rf"^[ \t]*from {re.escape(PACKAGE)}(?:\.(\w+))? import (\([^)]*\)|[^\n]*)", re.MULTILINE)
MODULE_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")

# The oldest Python a bundle's sources run on (Ansible's own oldest for a managed node).
OLDEST_PYTHON = (3, 8)
# Runs on the node: the sources come in on standard input, never from the node's disk. It reads as far as the
# version check on any Python 3, so an older one (an EL 8 node's python3 is 3.6) says so instead of a SyntaxError.
BOOTSTRAP = """
import importlib, importlib.abc, importlib.util, json, sys, zlib
call = json.loads(zlib.decompress(sys.stdin.buffer.read()))
if sys.version_info < tuple(call["oldest_python"]):
    sys.stdout.write("\\n" + json.dumps({"python_too_old": "%d.%d" % sys.version_info[:2]}) + "\\n")
    sys.exit(0)
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
    call.update(arguments=arguments, oldest_python=OLDEST_PYTHON)
    return f"{shlex.quote(python)} -I -c {shlex.quote(BOOTSTRAP)}", zlib.compress(json.dumps(call).encode("utf-8"))


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


class BundleError(Exception):
    """A bundle that gave no answer: its exit code, and the end of its standard error in the message; or a Python
    older than OLDEST_PYTHON (``too_old``)."""

    def __init__(self, message: str, rc: Any, too_old: bool = False) -> None:
        super().__init__(message)
        self.rc = rc
        self.too_old = too_old


def can_send(connection: Any) -> bool:
    """Whether the connection takes a command's standard input (ssh, local, docker do; paramiko does not)."""
    become = getattr(connection, "become", None)
    return bool(getattr(connection, "has_pipelining", False)) and (become is None or become.pipelining)


def host_python(action: Any, task_vars: Mapping[str, Any], discover: bool) -> Tuple[str, Dict[str, str]]:
    """(the Python for a bundle on the action's host, the facts to return when it was discovered just now): the
    configured interpreter, the one discovered earlier in the run, then Ansible's discovery (a round trip) or, without
    ``discover``, python3."""
    mode = str(action._templar.template(C.config.get_config_value("INTERPRETER_PYTHON", variables=task_vars)))
    if not mode.startswith("auto"):
        return mode, {}
    discovered = (task_vars.get("ansible_facts") or {}).get("discovered_interpreter_python")
    if discovered:
        return str(discovered), {}
    if not discover:
        return "python3", {}
    found = discover_interpreter(action=action, interpreter_name="python", discovery_mode=mode, task_vars=task_vars)
    return found, {"discovered_interpreter_python": found}


def run(
    action: Any,
    task_vars: Mapping[str, Any],
    name: str,
    function: str,
    arguments: Mapping[str, Any],
    discover: bool = True,
) -> Dict[str, Any]:
    """``name.function(arguments)``'s answer from the action's host, become as the task says, with
    ``ansible_facts`` when the host's Python was discovered for it; BundleError when it gives none."""
    python, facts = host_python(action, task_vars, discover)
    line, stdin = command(python, name, function, arguments)
    done = action._low_level_execute_command(line, sudoable=True, in_data=stdin)
    try:
        found = answer(done.get("stdout", ""))
    except ValueError as exc:
        stderr = (done.get("stderr") or "").strip()[-600:]
        raise BundleError(f"{exc} from {python}, rc {done.get('rc')}: {stderr}", done.get("rc")) from None
    if "python_too_old" in found:
        oldest = ".".join(map(str, OLDEST_PYTHON))
        message = f"{python} is Python {found['python_too_old']}, older than {oldest}: set ansible_python_interpreter"
        raise BundleError(message, done.get("rc"), too_old=True)
    if facts:
        found.setdefault("ansible_facts", {}).update(facts)
    return found
