# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Run by torch_stack's preflight with the node's base Python (any version from 3.6 on): prints one JSON line.
import json
import platform

libc = platform.libc_ver()
try:
    import importlib.util

    has_venv = importlib.util.find_spec("venv") is not None and importlib.util.find_spec("ensurepip") is not None
except ImportError:
    has_venv = False
print(
    json.dumps(
        {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "machine": platform.machine(),
            "libc": libc[0],
            "libc_version": libc[1],
            "has_venv": has_venv,
        }
    )
)
