# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test probe: writes each play's start and every task result as JSON lines to $AMX_TEST_EVENTS, so that a test
that runs several plays in one ansible-playbook can tell which play each result belongs to."""

from __future__ import annotations

import json
import os

from ansible.plugins.callback import CallbackBase

KEPT = ("msg", "argument_errors", "changed")


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "play_events"
    CALLBACK_NEEDS_ENABLED = True

    def _write(self, entry):
        path = os.environ.get("AMX_TEST_EVENTS")
        if path:
            with open(path, "a", encoding="utf-8") as stream:
                stream.write(json.dumps(entry, default=str) + "\n")

    def v2_playbook_on_play_start(self, play):
        self._write({"event": "play", "name": play.get_name()})

    def _record(self, result, status):
        task = result._task
        data = result._result
        self._write(
            {
                "event": "result",
                "status": status,
                "host": result._host.get_name(),
                "task": task.get_name(),
                "action": task.action,
                "role": task._role.get_name(include_role_fqcn=False) if task._role else None,
                "result": {key: data[key] for key in KEPT if key in data},
            }
        )

    def v2_runner_on_ok(self, result):
        self._record(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "ignored" if ignore_errors else "failed")

    def v2_runner_on_unreachable(self, result):
        self._record(result, "unreachable")

    def v2_runner_on_skipped(self, result):
        self._record(result, "skipped")
