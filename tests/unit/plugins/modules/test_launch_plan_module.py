# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one-step launch's plan for real on this machine, a cluster of one node (the master, alias localhost) in a
temporary folder: the launch_plan module (through `ansible localhost`) writes a plan after a run and removes it, and
the check runs as amx.cluster.train_launch runs it on the master, without a module's wrapper
(plugin_utils/node_bundle.py: the same command and standard input, here with this machine's shell and its system
Python, which has no Ansible): the next run prepared from the plan, and every difference or doubt handing over to
the full path. The workers' side (the same probe over SSH) runs in the molecule fleet scenario
(extensions/molecule/fleet/one_step.yml)."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import time

import ad_hoc
import pytest

from ansible_collections.amx.cluster.plugins.module_utils.dialect import flag_dialect
from ansible_collections.amx.cluster.plugins.module_utils.launch import launch_command
from ansible_collections.amx.cluster.plugins.module_utils.launch_plan import parse_plan, plan_text
from ansible_collections.amx.cluster.plugins.module_utils.layout import rank_layout
from ansible_collections.amx.cluster.plugins.module_utils.smoke_record import smoke_record
from ansible_collections.amx.cluster.plugins.plugin_utils import node_bundle

INPUTS = "e" * 64
SMOKE = "f" * 64

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the plan is root's: the module is tested as root")


def run_module(args: dict, check: bool = False) -> dict:
    return ad_hoc.run_module("launch_plan", json.dumps(args), check=check)


def run_check(args: dict) -> dict:
    """launch_plan's check as train_launch sends it to the master."""
    command, stdin = node_bundle.command(ad_hoc.NODE_PYTHON, "launch_check", "check", args)
    done = subprocess.run(command, shell=True, input=stdin, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return node_bundle.answer(done.stdout.decode())


@pytest.fixture
def cluster(tmp_path):
    """A run root with a finished run (its launch.sh, a role script, a data folder), a smoke record, and the plan
    arguments the role gives."""
    root = tmp_path / "runs"
    run_dir = root / "first"
    run_dir.mkdir(parents=True)
    (run_dir / "qa_finetune.py").write_text("print('train')\n")
    (root / "datasets" / "tiny").mkdir(parents=True)
    (root / "datasets" / "tiny" / "train.json").write_text("{}\n")
    hostfile = tmp_path / "hosts"
    hostfile.write_text("localhost\n")
    launch = {
        "layout": rank_layout(2, processes_per_node=2, mode="partitioned"),
        "dialect": flag_dialect("5.24.0", world_size=2),
        "script": ad_hoc.NODE_PYTHON,
        "script_args": [f"{run_dir}/qa_finetune.py", "--output_dir", f"{run_dir}/output"],
        "hostfile": str(hostfile),
        "master_addr": "127.0.0.1",
        "extra_env": {"AMX_CLUSTER_RUN_ID": "first"},
    }
    (run_dir / "launch.sh").write_text(launch_command(**launch)["script"])
    record = tmp_path / "smoke-test.json"
    record.write_text(json.dumps(smoke_record(SMOKE, time.time())))
    os.chmod(record, 0o600)
    root_user = pwd.getpwuid(0)
    plan = {
        "user": {"name": root_user.pw_name, "uid": 0, "gid": 0, "home": root_user.pw_dir},
        "run_root": str(root),
        "run_files": ["qa_finetune.py"],
        "nodes": [
            {
                "alias": "localhost",
                "name": "spr-a01",
                "python": ad_hoc.NODE_PYTHON,
                "spec": {
                    "files": [str(hostfile), f"{run_dir}/qa_finetune.py"],
                    "trees": [str(root / "datasets" / "tiny")],
                    "disk": str(root),
                },
            }
        ],
        "smoke": {"record": str(record), "fingerprint": SMOKE, "max_age": 3600},
        "launch": launch,
        "job": {"args": {"run_dir": str(run_dir), "run_id": "first", "name": "job"}, "results_dir": "/tmp/runs"},
        "record": {"script_file": f"{run_dir}/qa_finetune.py", "master": "spr-a01"},
    }
    common = {"inputs": INPUTS, "plan_dir": str(tmp_path / "plans")}

    class Cluster:
        path = tmp_path
        plan_file = tmp_path / "plans" / f"{INPUTS}.json"

        @staticmethod
        def write(check=False, **changes):
            args = dict(common, state="present", plan=plan, run_dir=str(run_dir), run_id="first", **changes)
            return run_module(args, check=check)

        @staticmethod
        def check(run_id, **changes):
            return run_check(dict(common, run_id=run_id, **changes))

        @staticmethod
        def remove(check=False):
            return run_module(dict(common, state="absent"), check=check)

    Cluster.root, Cluster.hostfile, Cluster.record = root, hostfile, record
    return Cluster


def test_a_plan_is_written_and_the_next_run_prepared_from_it(cluster):
    written = cluster.write()
    assert written["written"] is True, written
    info = os.stat(cluster.plan_file)
    assert (info.st_uid, info.st_mode & 0o777) == (0, 0o600)

    ready = cluster.check("second")
    assert ready["ready"] is True, ready
    second = cluster.root / "second"
    assert ready["run_dir"] == str(second)
    assert (second / "qa_finetune.py").read_text() == "print('train')\n"
    assert os.stat(second).st_mode & 0o777 == 0o700
    script = (second / "launch.sh").read_text()
    assert f"{second}/qa_finetune.py" in script and "/first/" not in script
    assert "AMX_CLUSTER_RUN_ID=second" in script
    assert ready["job"]["args"]["run_dir"] == str(second)
    assert ready["record"]["script_file"] == f"{second}/qa_finetune.py"
    assert "the cluster is as it was" in ready["smoke_reason"]

    # The same run id again: its folder is there, and the full path follows, resumes or refuses it.
    again = cluster.check("second")
    assert again["ready"] is False
    assert f"spr-a01: {second} is there already" in again["reason"]


@pytest.mark.parametrize(
    "change, reason",
    [
        (lambda c: c.hostfile.write_text("localhost\nnode1\n"), "hosts changed"),
        (lambda c: os.utime(c.root / "datasets" / "tiny" / "train.json", (1, 1)), "trees: "),
        (lambda c: (c.root / "first" / "qa_finetune.py").unlink(), "qa_finetune.py is gone"),
        (lambda c: c.record.unlink(), "the smoke test is due (no record of an earlier smoke test)"),
        (lambda c: c.plan_file.write_text(c.plan_file.read_text().replace("3600", "7200", 1)), "digest"),
        (lambda c: os.chmod(c.plan_file, 0o644), "not a file of root's with mode 0600"),
        (lambda c: c.plan_file.unlink(), "no full launch with these settings has passed on this master yet"),
    ],
)
def test_a_difference_or_a_doubt_hands_over(cluster, change, reason):
    assert cluster.write()["written"] is True
    change(cluster)
    answer = cluster.check("second")
    assert answer["ready"] is False
    assert reason in answer["reason"]
    assert not (cluster.root / "second").exists()


def test_other_inputs_hand_over(cluster):
    assert cluster.write()["written"] is True
    other = run_check({"inputs": "0" * 64, "plan_dir": str(cluster.path / "plans")})
    assert other["ready"] is False and "no full launch" in other["reason"]
    assert not (cluster.root / "second").exists()


def test_check_mode_writes_no_plan(cluster):
    assert cluster.write(check=True) == {**cluster.write(check=True), "written": False, "changed": False}
    assert not cluster.plan_file.exists()


def test_a_launch_that_cannot_be_rendered_for_another_run_is_not_planned(cluster):
    (cluster.root / "first" / "launch.sh").write_text("#!/bin/bash\nmpirun something else\n")
    written = cluster.write()
    assert written["written"] is False
    assert "not the launch.sh this run ran" in written["reason"]
    assert not cluster.plan_file.exists()


def test_bad_inputs_are_refused():
    checked = run_check({"inputs": "not-a-hash"})
    assert checked.get("failed") and "sha256" in checked["msg"]
    removed = run_module({"inputs": "not-a-hash", "state": "absent"})
    assert removed.get("failed") and "sha256" in removed["msg"]


def test_a_plan_of_two_days_ago_still_starts_the_next_run_in_one_step(cluster):
    """No clock decides alone: the plan holds as long as its fingerprints do (the smoke test keeps its own age)."""
    assert cluster.write()["written"] is True
    plan = parse_plan(cluster.plan_file.read_text())
    plan["written"] -= 2 * 86400
    cluster.plan_file.write_text(plan_text(plan))
    ready = cluster.check("second")
    assert ready["ready"] is True, ready
    assert "passed 1728" in ready["reason"]  # 172800 s and the seconds the test took


def test_the_next_day_with_an_old_smoke_record_still_starts_in_one_step(cluster):
    """The clock two days ahead on an unchanged cluster: the plan and the smoke record hold while their fingerprints
    do; the one-step launch repeats no smoke test (its maximum age, 3600 s here, counts on the full path only)."""
    cluster.record.write_text(json.dumps(smoke_record(SMOKE, time.time() - 2 * 86400)))
    assert cluster.write()["written"] is True
    plan = parse_plan(cluster.plan_file.read_text())
    plan["written"] -= 2 * 86400
    cluster.plan_file.write_text(plan_text(plan))
    ready = cluster.check("second")
    assert ready["ready"] is True, ready
    assert "smoke test passed 1728" in ready["smoke_reason"]
    # Another fingerprint still makes it due.
    cluster.record.write_text(json.dumps(smoke_record("0" * 64, time.time())))
    assert cluster.check("third")["reason"].startswith("the smoke test is due (the cluster changed")


def test_a_removed_plan_sends_the_next_launch_down_the_full_path(cluster):
    assert cluster.write()["written"] is True
    assert cluster.remove(check=True) == {**cluster.remove(check=True), "removed": True, "changed": True}
    assert cluster.plan_file.exists()
    removed = cluster.remove()
    assert (removed["removed"], removed["changed"]) == (True, True)
    assert not cluster.plan_file.exists()
    answer = cluster.check("second")
    assert answer["ready"] is False and "no full launch with these settings" in answer["reason"]
    again = cluster.remove()
    assert (again["removed"], again["changed"]) == (False, False)


def test_the_folder_keeps_the_newest_plans_whatever_their_age(cluster):
    plans = cluster.path / "plans"
    plans.mkdir()
    for number in range(20):
        old = plans / f"{number:064x}.json"
        old.write_text("{}")
        # Plan 0 is the newest of the others, however long ago that was.
        os.utime(old, (1000 - number, 1000 - number))
    assert cluster.write()["written"] is True
    left = sorted(path.name for path in plans.iterdir())
    assert len(left) == 16
    assert cluster.plan_file.name in left
    assert f"{0:064x}.json" in left and f"{14:064x}.json" in left and f"{15:064x}.json" not in left
