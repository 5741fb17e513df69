# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input through the playbooks themselves (playbooks/provision.yml and playbooks/train.yml), on this machine as
the cluster (connection local), with every path variable of the roles under the test's folder.

test_node_roles.py runs the roles one by one; here the same preflight is reached the way a user reaches it, and
the playbooks' own promise is checked: every role's input on every node is checked before any role acts anywhere.
"""

from __future__ import annotations

import re

import pytest
from bad_input_helpers import LOCAL, PLAYBOOKS, assert_refused, cluster, in_preflight, node_paths, run_in_folder


@pytest.fixture(scope="module")
def unknown_profile(tmp_path_factory):
    """provision.yml on a one-node cluster whose torch_stack_profile does not exist."""
    folder = tmp_path_factory.mktemp("provision-unknown-profile")
    host = {**LOCAL, **node_paths(folder), "torch_stack_profile": "ipex-3.0"}
    return run_in_folder(folder, PLAYBOOKS / "provision.yml", cluster({"localhost": host}, {}))


def test_provision_refuses_an_unknown_profile_before_any_change(unknown_profile):
    run, touched = unknown_profile
    expect = ("localhost: unknown torch_stack_profile 'ipex-3.0'", "Choose one of", "torch_stack_custom_profiles")
    assert_refused(run, "localhost", "torch_stack", expect, touched)


def test_provision_checks_every_role_before_any_role_acts(unknown_profile):
    run, _touched = unknown_profile
    failure = run.failure("localhost")
    assert failure is not None and in_preflight(failure, "torch_stack"), run.explain()
    assert acted_past_preflight(run, "localhost") == [], "tasks past a role's preflight ran before the refusal"


# The node roles' stamp check reads the node and changes nothing (roles/node_stamp/tasks/check.yml).
STAMP_CHECK = re.compile(r"/roles/node_stamp/tasks/check\.yml:\d+$")


def acted_past_preflight(run, host: str):
    return [
        f"{event['role']}: {event['task']}"
        for event in run.results(host)
        if event["role"] not in (None, "amx_check")  # amx_check is a read-only gate
        and "include" not in event["action"]
        and event["status"] != "skipped"
        and not in_preflight(event, event["role"])
        and not STAMP_CHECK.search(event.get("path") or "")
    ]


def test_one_refused_node_stops_the_others_before_they_change(tmp_path):
    """Two nodes (both this machine, each with its own paths): the worker's profile is unknown. The master's own
    input is good, yet it must not start installing while the worker is refused."""
    good = {**LOCAL, **node_paths(tmp_path / "master")}
    bad = {**LOCAL, **node_paths(tmp_path / "worker"), "torch_stack_profile": "ipex-3.0"}
    run, touched = run_in_folder(tmp_path, PLAYBOOKS / "provision.yml", cluster({"master-a": good}, {"worker-b": bad}))
    assert run.returncode != 0, run.explain()
    assert "worker-b: unknown torch_stack_profile 'ipex-3.0'" in run.output, run.explain()
    assert acted_past_preflight(run, "master-a") == [], run.explain()
    assert acted_past_preflight(run, "worker-b") == [], run.explain()
    assert touched == [], touched


@pytest.mark.parametrize("playbook", ["provision.yml", "train.yml"])
def test_an_empty_cluster_is_refused(tmp_path, playbook):
    empty = {"cluster": {"children": {"master": {"hosts": {}}, "workers": {"hosts": {}}}}}
    run, touched = run_in_folder(tmp_path, PLAYBOOKS / playbook, empty)
    assert touched == [], touched
    assert run.returncode != 0, run.explain()
    assert "group master" in run.output, run.explain()
