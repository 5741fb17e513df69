# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The amx.cluster.train_launch action: a master without a Python for the one-step launch's check hands over to the
full path; after its job, a job that failed removes the one-step launch's plan."""

import pytest
from ad_hoc import NODE_PYTHON, run_here

from ansible_collections.amx.cluster.plugins.action.train_launch import ActionModule
from ansible_collections.amx.cluster.plugins.plugin_utils import node_bundle

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


class Master(Recorder):
    """The action whose master is this machine: the check runs with the given Python, as train_launch sends it."""

    def __init__(self):
        super().__init__()
        self._templar = type("Templar", (), {"template": staticmethod(lambda value: value)})()

    def _low_level_execute_command(self, command, sudoable=True, in_data=None):
        return run_here(command, in_data)


def test_a_master_without_a_python_for_the_check_hands_over(tmp_path, monkeypatch):
    params = {"inputs": INPUTS, "plan_dir": str(tmp_path)}
    found = Master()._check_plan(params, {"ansible_python_interpreter": "/nonexistent/python3"})
    assert found["ready"] is False and found["reason"].startswith("no such Python on spr-a01"), found
    assert "set ansible_python_interpreter" in found["reason"]
    # An older Python than the check's (an EL 8 node's python3 is 3.6): this machine's, with the oldest raised.
    monkeypatch.setattr(node_bundle, "OLDEST_PYTHON", (99, 0))
    found = Master()._check_plan(params, {"ansible_python_interpreter": NODE_PYTHON})
    assert found["ready"] is False, found
    assert f"on spr-a01, {NODE_PYTHON} is Python 3." in found["reason"]
    assert found["reason"].endswith("older than 99.0: set ansible_python_interpreter")
    monkeypatch.undo()
    found = Master()._check_plan(params, {"ansible_python_interpreter": NODE_PYTHON})
    assert found["ready"] is False and "no full launch" in found["reason"], found
