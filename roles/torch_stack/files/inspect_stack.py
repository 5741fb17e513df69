# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Run by torch_stack with the virtualenv's Python. argv[1]: JSON {"keys": [...], "wanted": [{package, module,
# key}, ...]}. Imports each wanted module (a failing import, even IPEX's exit(127) on a torch mismatch, is
# reported, not raised) and prints one JSON line last:
# {"python": "3.11.2", "versions": {key: version or null, ..., "python": ...}, "errors": {key: message}}.
import importlib
import json
import platform
import sys

try:
    from importlib import metadata as _metadata

    def dist_version(name):
        return _metadata.version(name)

except ImportError:  # Python 3.7
    import pkg_resources

    def dist_version(name):
        return pkg_resources.get_distribution(name).version


request = json.loads(sys.argv[1])
result = {"python": platform.python_version(), "versions": {}, "errors": {}}
for key in request["keys"]:
    result["versions"][key] = None
for entry in request["wanted"]:
    try:
        imported = importlib.import_module(entry["module"])
        version = getattr(imported, "__version__", None) or dist_version(entry["package"])
        result["versions"][entry["key"]] = str(version)
    except BaseException as exc:  # SystemExit from IPEX included on purpose
        result["errors"][entry["key"]] = f"{type(exc).__name__}: {exc}"
result["versions"]["python"] = result["python"]
sys.stdout.flush()
print("\n" + json.dumps(result, sort_keys=True))
