#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_info
short_description: A node's Python, its PEP 508 marker values and the versions of the modules it imports
version_added: 0.2.0
description:
  - Runs a short probe with a Python of the node and returns what that interpreter says about itself - its
    version, executable, implementation, machine and C library - and its PEP 508 marker values (what pip compares
    a C(; python_version < "3.10") marker with), as the controller needs them to download wheels for the node.
  - With O(imports), the same interpreter imports each module and reports its version, or why it cannot be
    imported; an import that fails does not fail the module.
  - The probe runs with O(python) (a base Python, a virtualenv's C(bin/python)), which need not be the Python
    Ansible runs modules with; without it, with the module's own interpreter.
  - Importing a module runs its code in the probe's own short-lived process. Nothing else on the node changes, but
    for the bytecode that Python writes as it imports (which O(write_bytecode) asks for even where the node's
    environment turns it off).
author:
  - amx.cluster developers (@amx-cluster)
options:
  python:
    description:
      - The interpreter to describe, a path or a command name looked up on the node's C(PATH).
      - Defaults to the Python that runs the module (C(ansible_python_interpreter)).
    type: str
  imports:
    description:
      - Modules to import with O(python), each reported under its O(imports[].key) in RV(versions).
    type: list
    elements: dict
    default: []
    suboptions:
      key:
        description: The name the version is reported under.
        type: str
        required: true
      module:
        description: The module to import.
        type: str
        required: true
      package:
        description:
          - The distribution that provides O(imports[].module), whose installed version is reported when the
            module has no C(__version__); O(packages) selects imports by it.
        type: str
        required: true
  packages:
    description:
      - When given, only the O(imports) whose O(imports[].package) is in this list are imported; the others are
        reported as C(null) in RV(versions) without importing them.
    type: list
    elements: str
  write_bytecode:
    description:
      - Have the imports write their bytecode even where C(PYTHONDONTWRITEBYTECODE) is set on the node, so that
        a later user of the same packages (one who may not write there) reads it instead of compiling at every
        start.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: It returns the same facts in check mode, where O(write_bytecode) is left out.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to show.
notes:
  - The probe uses the standard library only and runs on any Python from 3.6 on.
seealso:
  - name: PEP 508 environment markers
    description: The marker variables RV(markers) holds.
    link: https://peps.python.org/pep-0508/#environment-markers
"""

EXAMPLES = r"""
- name: Describe the node's base Python
  amx.cluster.node_info:
    python: python3
  register: node

- name: Show its version and C library
  ansible.builtin.debug:
    msg: "{{ node.python.version }} with {{ node.python.libc }} {{ node.python.libc_version }}"

- name: Import the stack with a virtualenv's Python
  amx.cluster.node_info:
    python: /opt/venv/bin/python
    imports:
      - {key: torch, module: torch, package: torch}
      - {key: ipex, module: intel_extension_for_pytorch, package: intel-extension-for-pytorch}
    packages: [torch]
  register: stack
"""

RETURN = r"""
python:
  description: The interpreter the probe ran with.
  returned: always
  type: dict
  contains:
    executable:
      description: Its C(sys.executable); a virtualenv's own C(bin/python) when O(python) is one.
      type: str
      sample: /opt/venv/bin/python
    prefix:
      description: Its C(sys.prefix), the virtualenv's folder for a virtualenv.
      type: str
      sample: /opt/venv
    version:
      description: Its full version.
      type: str
      sample: 3.10.12
    implementation:
      description: C(CPython), C(PyPy) ...
      type: str
      sample: CPython
    machine:
      description: The machine architecture.
      type: str
      sample: x86_64
    libc:
      description: The C library it is linked against (C(glibc)), empty when Python cannot tell.
      type: str
      sample: glibc
    libc_version:
      description: The version of that C library, empty when Python cannot tell.
      type: str
      sample: "2.35"
    has_venv:
      description: Whether it has the C(venv) and C(ensurepip) modules, so C(python -m venv) can create a virtualenv.
      type: bool
      sample: true
markers:
  description: Its PEP 508 marker values, one string per marker variable (C(extra) aside).
  returned: always
  type: dict
  sample: {"implementation_name": "cpython", "implementation_version": "3.10.12", "os_name": "posix",
           "platform_machine": "x86_64", "platform_python_implementation": "CPython",
           "platform_release": "6.8.0-1021-aws", "platform_system": "Linux",
           "platform_version": "#23-Ubuntu SMP Mon Dec  9 23:59:34 UTC 2024", "python_full_version": "3.10.12",
           "python_version": "3.10", "sys_platform": "linux"}
versions:
  description:
    - One entry per O(imports[].key), the imported version, or C(null) when the module was not imported (left
      out by O(packages)) or failed to import.
  returned: always
  type: dict
  sample: {"torch": "2.7.0+cpu", "ipex": null}
import_errors:
  description: For each import that failed, the exception's type and message.
  returned: always
  type: dict
  sample: {"ipex": "ImportError: libtorch_cpu.so: cannot open shared object file"}
"""

import os
import sys

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.amx.cluster.plugins.module_utils.python_facts import (
    PythonFactsError,
    imports_argument,
    parse_report,
    probe_source,
)

# ``key`` names a result entry, not a secret (validate-modules guesses from the name).
IMPORT_OPTIONS = {
    "key": {"type": "str", "required": True, "no_log": False},
    "module": {"type": "str", "required": True},
    "package": {"type": "str", "required": True},
}


def interpreter(module, name):
    """The path of the Python to probe: the module's own by default, a command name looked up on PATH."""
    if not name:
        return sys.executable
    if os.sep not in name:
        found = module.get_bin_path(name)
        if not found:
            module.fail_json(msg=f"cannot run the Python '{name}': there is no such command on the node's PATH")
        return found
    if not (os.path.isfile(name) and os.access(name, os.X_OK)):
        module.fail_json(msg=f"cannot run the Python '{name}': no executable file there on the node")
    return name


def main():
    module = AnsibleModule(
        argument_spec={
            "python": {"type": "str"},
            "imports": {"type": "list", "elements": "dict", "default": [], "options": IMPORT_OPTIONS},
            "packages": {"type": "list", "elements": "str"},
            "write_bytecode": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    python = interpreter(module, module.params["python"])
    imports = module.params["imports"]
    try:
        argument = imports_argument(imports, module.params["packages"])
    except PythonFactsError as exc:
        module.fail_json(msg=str(exc))
    # Python writes bytecode unless the variable is set to a non-empty string.
    environ = {"PYTHONDONTWRITEBYTECODE": ""} if module.params["write_bytecode"] and not module.check_mode else {}
    rc, out, err = module.run_command([python, "-c", probe_source(), argument], environ_update=environ)
    if rc != 0:
        module.fail_json(msg=f"cannot run the Python '{python}' (exit {rc}): {err.strip()[-2000:]}", rc=rc)
    try:
        report = parse_report(out, imports)
    except PythonFactsError as exc:
        module.fail_json(msg=f"the Python '{python}' gave no usable answer: {exc}", stdout=out[-2000:])
    module.exit_json(changed=False, **report)


if __name__ == "__main__":
    main()
