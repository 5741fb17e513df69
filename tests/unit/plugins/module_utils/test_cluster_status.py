# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster status put together from what the nodes and the inventory said: rows, the job, the cost, the lines."""

from __future__ import annotations

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.cluster_status import cluster_status, node_row
from ansible_collections.amx.cluster.plugins.module_utils.scaling import DEFAULT_PRICES

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
TWO_HOURS_AGO = "2027-01-15T06:00:00.000000Z"


def report(idle_seconds=600.0, due=NOW + 3000, busy=(), jobs=(), lifetime=None):
    return {
        "settings": {"idle_minutes": 60, "action": "stop", "shutdown_command": ["shutdown", "-h", "now"]},
        "now": {"idle_seconds": idle_seconds, "shutdown_due_wall": due, "busy": list(busy)},
        "busy": list(busy),
        "uptime_seconds": 7300.0,
        "lifetime_deadline_wall": lifetime,
        "jobs": list(jobs),
        "timer_active": True,
    }


def node(name="master", state="running", autostop=None, reached=True, **extra):
    return {
        "name": name,
        "state": state,
        "instance_type": "r7iz.metal-16xl",
        "instance_id": "i-1",
        "launch_time": TWO_HOURS_AGO,
        "reached": reached,
        "asked": reached,
        "autostop": autostop if autostop is not None else report(),
        **extra,
    }


def test_an_idle_running_node_with_its_uptime_idle_time_autostop_and_cost():
    row = node_row(node(), DEFAULT_PRICES, NOW)
    assert row["uptime"] == "2:00:00" and row["idle_minutes"] == 10.0
    assert (row["acts_at"], row["acts_because"], row["acts_in_minutes"]) == ("2027-01-15T08:50:00Z", "idle", 50.0)
    assert row["price_per_hour"] == 5.952 and row["cost_so_far"] == 11.9


def test_the_lifetime_acts_first_when_it_comes_first():
    row = node_row(node(autostop=report(lifetime=NOW + 600)), DEFAULT_PRICES, NOW)
    assert (row["acts_because"], row["acts_in_minutes"]) == ("maximum lifetime", 10.0)


def test_a_stopped_node_costs_nothing_and_has_no_uptime():
    row = node_row(node(state="stopped", reached=False, autostop={}), DEFAULT_PRICES, NOW)
    assert row["uptime"] is None and row["price_per_hour"] is None and row["cost_so_far"] is None
    assert row["acts_at"] is None


def test_outside_ec2_the_node_uptime_counts_and_there_is_no_price():
    plain = {"name": "box", "state": "", "reached": True, "autostop": report()}
    row = node_row(plain, DEFAULT_PRICES, NOW)
    assert row["state"] == "running" and row["uptime_seconds"] == 7300.0 and row["price_per_hour"] is None


def test_the_whole_status_with_a_job_and_a_stopped_node():
    job = {"job": "run-1/job", "run_dir": "/r", "progress": {"line": "step 4/8 (50%) | ETA 0:00:10", "eta_seconds": 10}}
    status = cluster_status(
        [
            node(autostop=report(busy=["job run-1/job"], jobs=[job], due=None)),
            node("node1", state="stopped", reached=False, autostop={}),
            node("node2", instance_type="x9.odd"),
        ],
        DEFAULT_PRICES,
        NOW,
        "demo",
    )
    assert status["job"] == dict(job, node="master")
    assert status["cost"] == {"per_hour": 5.952, "so_far": 11.9, "unpriced_nodes": ["node2"], "currency": "USD"}
    assert status["lines"] == [
        "master | running | r7iz.metal-16xl | i-1 | up 2:00:00 | busy: job run-1/job | $5.952/h, $11.9 so far",
        "node1 | stopped | r7iz.metal-16xl | i-1",
        "node2 | running | x9.odd | i-1 | up 2:00:00 | idle 10.0 min"
        " | stop at 2027-01-15T08:50:00Z (idle, in 50.0 min)",
        "job run-1/job on master: step 4/8 (50%) | ETA 0:00:10",
        "cost: $5.952/h for the running nodes, $11.9 since their last start (on-demand list price)",
        "no price for the instance type of: node2",
    ]


@pytest.mark.parametrize("launch_time", ["", "yesterday", None, 5])
def test_a_launch_time_that_is_not_one_falls_back_to_the_node_uptime(launch_time):
    row = node_row(node(launch_time=launch_time), DEFAULT_PRICES, NOW)
    assert row["uptime_seconds"] == 7300.0
