# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Run by torch_stack's preflight with the node's base Python (any version from 3.6 on): prints one JSON line, with
# the PEP 508 marker values of that Python (what pip compares a "; python_version < '3.10'" marker with), for the
# controller's download of the wheelhouse.
import json
import os
import platform
import sys

libc = platform.libc_ver()
try:
    import importlib.util

    has_venv = importlib.util.find_spec("venv") is not None and importlib.util.find_spec("ensurepip") is not None
except ImportError:
    has_venv = False


def version_text(info):
    text = f"{info.major}.{info.minor}.{info.micro}"
    if info.releaselevel != "final":
        text += info.releaselevel[0] + str(info.serial)
    return text


markers = {
    "implementation_name": sys.implementation.name,
    "implementation_version": version_text(sys.implementation.version),
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_python_implementation": platform.python_implementation(),
    "platform_release": platform.release(),
    "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_full_version": platform.python_version(),
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "sys_platform": sys.platform,
}
print(
    json.dumps(
        {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "machine": platform.machine(),
            "libc": libc[0],
            "libc_version": libc[1],
            "has_venv": has_venv,
            "markers": markers,
        }
    )
)
