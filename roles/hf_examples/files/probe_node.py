# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Run on the node by the virtualenv's Python (python -c, standard library only, Python 3.6+): prints one JSON line
# with the node's PEP 508 marker values (what pip compares a "; python_version < '3.10'" marker with) and its C
# library, for the controller's download of the example's requirements.
import json
import os
import platform
import sys


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
print(json.dumps({"markers": markers, "libc": list(platform.libc_ver())}))
