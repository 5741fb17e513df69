# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin amx.cluster.wheelhouse_fetch: one download of wheels into the controller cache.

The work is plugins/plugin_utils/wheelhouse.py; this plugin checks the options and turns its errors into the task's
failure. It always acts on the controller, whichever host the task runs for.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.amx.cluster.plugins.plugin_utils.wheelhouse import DownloadFailed, fetch, start_fetch

ARGUMENT_SPEC: Dict[str, Any] = {
    "dest": {"type": "path", "required": True},
    "pip": {"type": "list", "elements": "str", "required": True},
    "pip_variable": {"type": "str", "default": "controller_pip"},
    "args": {"type": "list", "elements": "str", "required": True},
    "files": {"type": "dict", "default": {}},
    "markers": {"type": "dict"},
    "pack": {"type": "bool", "default": False},
    "background": {"type": "bool", "default": False},
    "description": {"type": "str", "default": "pip download"},
    "hint": {"type": "str", "default": ""},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: Optional[str] = None, task_vars: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        hint = f" {args['hint']}" if args["hint"] else ""
        try:
            done = (start_fetch if args["background"] else fetch)(
                args["dest"],
                args["pip"],
                args["args"],
                files=args["files"],
                markers=args["markers"],
                pack=args["pack"],
                check_mode=bool(self._task.check_mode),
                variable=args["pip_variable"],
            )
        except DownloadFailed as error:
            raise AnsibleActionFail(
                f"controller: {args['description']} failed (rc {error.rc}): {' / '.join(error.stderr_tail)}.{hint}"
            ) from error
        except (ValueError, OSError) as error:
            raise AnsibleActionFail(f"controller: {args['description']}: {error}.{hint}") from error
        result.update(done)
        return result
