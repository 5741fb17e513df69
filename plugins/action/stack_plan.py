# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin amx.cluster.stack_plan: the torch_stack role's checks and values, computed on the controller.

The work is module_utils/stack_profile.py (``plan``, ``install_state``, ``installed_stack``); this plugin checks
the options, reads the profile's lock file, fails with every problem of the host at once, and otherwise returns the
values the role's tasks use. It changes nothing, anywhere.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from ansible.plugins.action import ActionBase

from ansible_collections.amx.cluster.plugins.module_utils import stack_profile as sp

_LIST_OF_STR: Dict[str, Any] = {"type": "list", "elements": "str"}

ARGUMENT_SPEC: Dict[str, Any] = {
    "settings": {
        "type": "dict",
        "required": True,
        "options": {
            "profile": {"type": "str", "required": True},
            "custom_profiles": {"type": "dict", "default": {}},
            "overrides": {"type": "dict", "default": {}},
            "extra_packages": {**_LIST_OF_STR, "default": []},
            "allow_yanked": {"type": "bool", "default": False},
            "lock": {"type": "bool", "default": True},
            "index_url": {"type": "str"},
            "extra_index_urls": _LIST_OF_STR,
            "find_links": _LIST_OF_STR,
            "index_check_timeout": {"type": "int", "default": 10},
            "unreachable_indexes": {"type": "str", "default": "fail"},
            "venv": {"type": "str", "required": True},
            "user": {"type": "str", "required": True},
            "group": {"type": "str"},
            "base_python": {"type": "str", "default": "python3"},
            "install_mode": {"type": "str", "default": "wheelhouse"},
            "controller_pip": _LIST_OF_STR,
            "controller_pip_extra_args": {**_LIST_OF_STR, "default": []},
            "controller_cache": {"type": "str"},
            "node_wheelhouse": {"type": "str"},
            "import_every_run": {"type": "bool", "default": False},
        },
    },
    "profiles": {"type": "dict", "default": {}},
    "yanked": {"type": "dict", "default": {}},
    "locks": {"type": "path"},
    "node": {"type": "dict", "default": {}},
    "index_answers": {"type": "list", "elements": "dict", "default": []},
    "resolved": {"type": "dict"},
    "venv": {
        "type": "dict",
        "options": {
            "manifest": {"type": "str"},
            "freeze": {"type": "str"},
            "report": {"type": "dict"},
            "earlier": {"type": "dict"},
        },
    },
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: Optional[str] = None, task_vars: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        host = (task_vars or {}).get("inventory_hostname") or self._host.get_name()
        settings = args["settings"]
        try:
            computed = self._compute(args, settings, host)
        except (sp.StackProfileError, KeyError, TypeError) as error:
            computed = {"problems": [str(error)]}
        result.update(computed, changed=False)
        if computed.get("problems"):
            result.update(failed=True, msg=f"{host}: {' | '.join(computed['problems'])}")
        return result

    @staticmethod
    def _compute(args: Dict[str, Any], settings: Dict[str, Any], host: str) -> Dict[str, Any]:
        venv = args["venv"]
        if venv is not None:
            if args["resolved"] is None:
                raise sp.StackProfileError("the venv step needs resolved, the plan's resolved profile")
            if venv.get("earlier") is None:
                return sp.install_state(
                    settings["profile"],
                    args["resolved"],
                    venv.get("manifest"),
                    venv.get("freeze"),
                    settings["import_every_run"],
                )
            return sp.installed_stack(
                settings["profile"],
                args["resolved"],
                venv.get("freeze") or "",
                venv.get("report"),
                venv["earlier"],
                settings["venv"],
            )
        node = dict(args["node"], name=host)
        python = node.get("python")
        lock_text = None
        if isinstance(python, dict) and args["locks"] and sp.uses_lock(settings):
            path = os.path.join(args["locks"], settings["profile"], f"py{sp.major_minor(python['version'])}.txt")
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as handle:
                    lock_text = handle.read()
        return sp.plan(
            settings,
            args["profiles"],
            args["yanked"],
            node,
            lock_text,
            args["index_answers"],
            os.environ.get("HOME"),
        )
