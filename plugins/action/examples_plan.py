# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin amx.cluster.examples_plan: the hf_examples role's checks and values, computed on the controller.

The work is module_utils/examples.py (``plan``); this plugin checks the options, fails with every problem of the
host at once, and otherwise returns the values the role's tasks use. It changes nothing, anywhere.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from ansible.plugins.action import ActionBase

from ansible_collections.amx.cluster.plugins.module_utils.examples import plan

_LIST_OF_STR: Dict[str, Any] = {"type": "list", "elements": "str"}

ARGUMENT_SPEC: Dict[str, Any] = {
    "settings": {
        "type": "dict",
        "required": True,
        "options": {
            "repo_url": {"type": "str", "required": True},
            "version": {"type": "str", "required": True},
            "transformers_version": {"type": "str"},
            "example": {"type": "str", "required": True},
            "venv_python": {"type": "str"},
            "install_requirements": {"type": "bool", "default": True},
            "install_mode": {"type": "str", "default": "wheelhouse"},
            "controller_pip": _LIST_OF_STR,
            "controller_pip_extra_args": {**_LIST_OF_STR, "default": []},
            "depth": {"type": "int", "default": 1},
            "dir": {"type": "str", "required": True},
            "user": {"type": "str"},
            "node_wheelhouse": {"type": "str"},
            "controller_cache": {"type": "str"},
            "index_url": {"type": "str"},
            "extra_index_urls": _LIST_OF_STR,
            "find_links": _LIST_OF_STR,
        },
    },
    "stack": {
        "type": "dict",
        "default": {},
        "options": {
            "venv_python": {"type": "str"},
            "packages": {"type": "dict"},
            "profile": {"type": "str"},
            "indexes": {"type": "dict"},
            "constraints": _LIST_OF_STR,
        },
    },
    "freeze": {"type": "str"},
    "requirements": {"type": "str"},
    "node": {
        "type": "dict",
        "options": {
            "markers": {"type": "dict", "required": True},
            "libc": {**_LIST_OF_STR, "required": True},
        },
    },
    "checkout": {
        "type": "dict",
        "options": {
            "home": {"type": "str"},
            "stat": {"type": "dict", "default": {}},
            "writable": {"type": "bool"},
        },
    },
    "downloaded": {"type": "path"},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: Optional[str] = None, task_vars: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        # The wheels of a download on the controller (its folder), against what the node's virtualenv holds.
        wheels = None
        if args["downloaded"]:
            folder = args["downloaded"]
            names = os.listdir(folder) if os.path.isdir(folder) else []  # --check downloads nothing
            wheels = sorted(os.path.join(folder, name) for name in names if name.endswith(".whl"))
        computed = plan(
            args["settings"],
            args["stack"],
            args["freeze"],
            args["requirements"],
            args["node"],
            args["checkout"],
            os.environ.get("HOME"),
            wheels,
        )
        result.update(computed, changed=False)
        if computed["problems"]:
            host = (task_vars or {}).get("inventory_hostname") or self._host.get_name()
            result.update(failed=True, msg=f"{host}: {' | '.join(computed['problems'])}")
        return result
