# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The amx.cluster.train_launch action after its job: a job that failed removes the one-step launch's plan."""

import pytest

from ansible_collections.amx.cluster.plugins.action.train_launch import ActionModule

INPUTS = "e" * 64


class Recorder(ActionModule):
    """The action without a connection: module calls are recorded, and answer as launch_plan would."""

    def __init__(self, answer=None):  # pylint: disable=super-init-not-called
        self._host = "spr-a01"
        self.calls = []
        self.answer = answer or {"removed": True, "changed": True}

    def _execute_module(self, module_name=None, module_args=None, task_vars=None, **_kwargs):
        self.calls.append((module_name, module_args))
        return self.answer


@pytest.mark.parametrize(
    "done",
    [
        {"rc": 1, "job_failed": True, "failed": True, "msg": "rank 3 died"},
        {"rc": None, "job_failed": True, "failed": True, "msg": "the supervisor of the run is gone"},
        {"rc": 0, "job_failed": True, "failed": True, "msg": "processes still run"},
        {"rc": 0},
        None,
    ],
)
def test_a_failed_job_removes_the_plan(done):
    action = Recorder()
    assert action._settle_plan(done, INPUTS, "/var/lib/amx-cluster/launch", {}) is False
    assert action.calls == [
        ("amx.cluster.launch_plan", {"state": "absent", "inputs": INPUTS, "plan_dir": "/var/lib/amx-cluster/launch"})
    ]


def test_a_job_that_passed_keeps_the_plan():
    action = Recorder()
    assert action._settle_plan({"rc": 0, "job_failed": False}, INPUTS, "/plans", {}) is True
    assert action.calls == []


def test_a_plan_that_cannot_be_removed_is_a_warning_not_a_second_failure():
    action = Recorder({"failed": True, "msg": "launch_plan: permission denied"})
    assert action._settle_plan({"rc": 2, "job_failed": True}, INPUTS, "/plans", {}) is False
    assert len(action.calls) == 1
