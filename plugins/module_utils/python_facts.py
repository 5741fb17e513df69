# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a node's Python says about itself: version, C library, PEP 508 marker values, and the versions of the
modules a virtualenv imports. The one place the marker variables are named (MARKER_KEYS).

The facts must come from a given interpreter (the node's base Python, a virtualenv's), which need not be the one
Ansible runs the module with, so they are read by a short program (``probe_source``) that the module runs with that
interpreter. The program is built here from MARKER_EXPRESSIONS and uses the standard library only; it runs on any
Python from 3.6 on. Runs on the target's Python (3.8+).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Sequence

# The PEP 508 marker variables (the ``extra`` marker is pip's own business), each with the expression the probe
# evaluates for it: what pip's packaging.markers.default_environment() computes.
MARKER_EXPRESSIONS = (
    ("implementation_name", "sys.implementation.name"),
    ("implementation_version", "version_text(sys.implementation.version)"),
    ("os_name", "os.name"),
    ("platform_machine", "platform.machine()"),
    ("platform_python_implementation", "platform.python_implementation()"),
    ("platform_release", "platform.release()"),
    ("platform_system", "platform.system()"),
    ("platform_version", "platform.version()"),
    ("python_full_version", "platform.python_version()"),
    ("python_version", "'.'.join(platform.python_version_tuple()[:2])"),
    ("sys_platform", "sys.platform"),
)
MARKER_KEYS = tuple(key for key, _expression in MARKER_EXPRESSIONS)

# The probe's report: facts of the interpreter, then, for each requested import, its version or its error.
# The last line of stdout is the JSON report (an imported module may print before it). An import's failure, even
# IPEX's exit(127) on a torch mismatch, is reported, not raised.
_PROBE_HEAD = """\
import json, os, platform, sys

def version_text(info):
    text = "%d.%d.%d" % (info.major, info.minor, info.micro)
    if info.releaselevel != "final":
        text += info.releaselevel[0] + str(info.serial)
    return text

def has_module(name):
    try:
        import importlib.util
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False

def dist_version(name):
    try:
        from importlib import metadata
        return metadata.version(name)
    except ImportError:  # Python 3.6 and 3.7
        import pkg_resources
        return pkg_resources.get_distribution(name).version

def import_version(module, package):
    import importlib
    imported = importlib.import_module(module)
    return str(getattr(imported, "__version__", None) or dist_version(package))

libc = platform.libc_ver()
report = {
    "python": {
        "executable": sys.executable,
        "prefix": sys.prefix,
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "libc": libc[0],
        "libc_version": libc[1],
        "has_venv": has_module("venv") and has_module("ensurepip"),
    },
"""

_PROBE_TAIL = """\
    "versions": {},
    "import_errors": {},
}
imports = json.loads(sys.argv[1]) if len(sys.argv) > 1 else []
for entry in imports:
    try:
        report["versions"][entry["key"]] = import_version(entry["module"], entry["package"])
    except BaseException as exc:
        report["versions"][entry["key"]] = None
        report["import_errors"][entry["key"]] = "%s: %s" % (type(exc).__name__, exc)
sys.stdout.flush()
print("\\n" + json.dumps(report, sort_keys=True))
"""


class PythonFactsError(ValueError):
    """The probe's input or answer is unusable."""


def probe_source() -> str:
    """The probe program: run as ``PYTHON -c SOURCE [IMPORTS-JSON]``, it prints the report as its last line."""
    markers = "".join(f"        {key!r}: {expression},\n" for key, expression in MARKER_EXPRESSIONS)
    return _PROBE_HEAD + '    "markers": {\n' + markers + "    },\n" + _PROBE_TAIL


def imports_argument(imports: Sequence[Mapping[str, Any]], packages: Optional[Sequence[str]] = None) -> str:
    """The probe's argument: the imports to try, as JSON. With ``packages``, only the entries whose distribution is
    among them (the others are reported as not installed, ``None``, without importing)."""
    chosen = []
    for entry in imports:
        missing = [name for name in ("key", "module", "package") if not isinstance(entry.get(name), str)]
        if missing:
            raise PythonFactsError(f"every import needs key, module and package as strings; {entry!r} lacks {missing}")
        if packages is None or entry["package"] in packages:
            chosen.append({name: entry[name] for name in ("key", "module", "package")})
    return json.dumps(chosen)


def parse_report(stdout: str, imports: Sequence[Mapping[str, Any]] = ()) -> Dict[str, Any]:
    """The probe's report from its output (the last non-empty line). Every import key is in ``versions``, ``None``
    when it was not imported or failed to import (``import_errors`` then says why)."""
    lines = [line for line in (stdout or "").splitlines() if line.strip()]
    if not lines:
        raise PythonFactsError("the probe printed nothing")
    try:
        report = json.loads(lines[-1])
    except ValueError as exc:
        raise PythonFactsError(f"the probe's last line is not JSON ({exc}): {lines[-1][:200]}") from exc
    if not isinstance(report, dict) or not all(isinstance(report.get(name), dict) for name in _REPORT_PARTS):
        raise PythonFactsError(f"the probe's report lacks one of {', '.join(_REPORT_PARTS)}")
    missing = [key for key in MARKER_KEYS if not isinstance(report["markers"].get(key), str)]
    if missing:
        raise PythonFactsError(f"the probe's report lacks the marker values {', '.join(missing)}")
    versions = {str(entry["key"]): None for entry in imports}
    versions.update(report["versions"])
    report["versions"] = versions
    return report


_REPORT_PARTS = ("python", "markers", "versions", "import_errors")
