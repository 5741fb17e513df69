# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test probe: records the arguments every task ran with, for checks of requests a local EC2 API cannot serve."""

from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_args"
    CALLBACK_NEEDS_ENABLED = True

    def _record(self, result, status):
        path = os.environ.get("AMX_TEST_TASK_ARGS")
        if not path:
            return
        task = result._task
        entry = {"task": task.get_name(), "action": task.action, "status": status, "args": task.args}
        with open(path, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(entry, default=str) + "\n")

    def v2_runner_on_ok(self, result):
        self._record(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "failed")
