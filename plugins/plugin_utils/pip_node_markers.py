# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run pip on the controller as if its environment markers were a node's.

    python pip_node_markers.py MARKERS.json [pip arguments ...]

pip download picks wheels for --python-version / --platform / --implementation, but evaluates environment markers
(``pkg; python_version < "3.10"``, in requirement files and in every dependency's metadata) with the interpreter that
runs it. This runner replaces the function pip reads those values from (its vendored packaging's
``markers.default_environment``) with the node's values from MARKERS.json (a JSON object of the PEP 508 variables,
written by the amx.cluster.wheelhouse_fetch action from the node's amx.cluster.node_info answer), then runs pip's own
command line with the remaining arguments. It changes nothing else in pip. It runs as a script, by the Python of the
controller's pip (torch_stack_controller_pip, hf_examples_controller_pip), which need not be the one of Ansible.

That Python cannot import the collection, so the runner names no marker variable itself: the action has checked the
file against module_utils.python_facts.MARKER_KEYS (examples.marker_environment) before writing it, and the runner
takes the variables the file holds.
"""

import json
import sys


def fail(message):
    sys.stderr.write("pip_node_markers: " + message + "\n")
    return 2


def main(argv):
    if len(argv) < 2:
        return fail("usage: pip_node_markers.py MARKERS.json PIP-ARGUMENT...")
    try:
        with open(argv[0], encoding="utf-8") as handle:
            values = json.load(handle)
    except (OSError, ValueError) as exc:
        return fail("cannot read the marker values from " + argv[0] + ": " + str(exc))
    if not isinstance(values, dict) or not values or any(not isinstance(value, str) for value in values.values()):
        return fail(argv[0] + " must map the PEP 508 marker variables to strings")
    try:
        from pip._internal.cli.main import main as pip_main
        from pip._vendor.packaging import markers
    except ImportError as exc:
        return fail("this Python has no pip to run (" + str(exc) + "): set the role's controller_pip to another Python")
    if not callable(getattr(markers, "default_environment", None)):
        return fail("this pip's packaging has no markers.default_environment: use another pip version")
    node = {str(key): value for key, value in values.items()}
    markers.default_environment = lambda: dict(node)
    return pip_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
