# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one-step launch's plan: the run's folder and id go out of the launch and come back for the next run, a plan
edited by hand or of other inputs or too old is not trusted, and each node's difference is named."""

from __future__ import annotations

import json

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.dialect import flag_dialect
from ansible_collections.amx.cluster.plugins.module_utils.launch import launch_command
from ansible_collections.amx.cluster.plugins.module_utils.launch_plan import (
    PlanError,
    fill_run,
    launch_problems,
    node_changes,
    parse_plan,
    plan_fresh,
    plan_survives,
    plan_text,
    run_record,
    template_run,
)
from ansible_collections.amx.cluster.plugins.module_utils.layout import rank_layout

RUN_ID = "squad-1"
RUN_DIR = f"/home/mlops/amx-cluster-runs/{RUN_ID}"
INPUTS = "a" * 64


def launch_inputs(run_dir: str, run_id: str) -> dict:
    """The arguments of a launch as the role renders it: paths in the run's folder, the run id in its variable."""
    return {
        "layout": rank_layout(2, nodes=2, processes_per_node=2, mode="partitioned"),
        "dialect": flag_dialect("5.24.0", world_size=4),
        "script": f"{run_dir}/rank_exec.sh",
        "script_args": [
            "/opt/venv/bin/python",
            f"{run_dir}/qa_finetune.py",
            "--output_dir",
            f"{run_dir}/output",
            "--epochs",
            "1",
            "--run_name",
            "squad-1-notes",
        ],
        "hostfile": "/home/mlops/hosts",
        "master_addr": "10.0.0.1",
        "extra_env": {"AMX_CLUSTER_RUN_ID": run_id, "OTHER": run_id, "PYTHONFAULTHANDLER": "1"},
    }


def plan(**changes) -> dict:
    base = {
        "version": 3,
        "inputs": INPUTS,
        "written": 1000.0,
        "user": {"name": "mlops", "uid": 1001, "gid": 1001, "home": "/home/mlops"},
        "run_root": "/home/mlops/amx-cluster-runs",
        "source_run_dir": RUN_DIR,
        "run_files": ["qa_finetune.py"],
        "nodes": [
            {"alias": "localhost", "name": "spr-a01", "python": "/opt/venv/bin/python", "spec": {}, "fingerprint": {}}
        ],
        "smoke": {"record": "/x/.smoke-test.json", "fingerprint": "b" * 64, "max_age": 86400},
        "launch": {},
        "job": {"args": {}, "results_dir": "/tmp/runs"},
        "record": {},
    }
    base.update(changes)
    return base


def test_the_run_goes_out_and_another_comes_back():
    template = template_run(launch_inputs(RUN_DIR, RUN_ID), RUN_DIR, RUN_ID)
    assert RUN_DIR not in json.dumps(template)
    other = "/home/mlops/amx-cluster-runs/squad-2"
    assert fill_run(template, other, "squad-2") == dict(
        launch_inputs(other, "squad-2"),
        extra_env={"AMX_CLUSTER_RUN_ID": "squad-2", "OTHER": RUN_ID, "PYTHONFAULTHANDLER": "1"},
    )


@pytest.mark.parametrize(
    "value",
    [
        RUN_DIR + "-older/file",  # another folder that starts with the same text
        "prefix" + RUN_DIR,  # the folder inside other text
        "--output_dir=" + RUN_DIR + "/output",
    ],
)
def test_only_whole_paths_of_the_run_are_replaced(value):
    assert template_run({"a": [value]}, RUN_DIR, RUN_ID) == {"a": [value]}


def test_the_run_id_is_replaced_only_in_its_own_variable():
    template = template_run({"extra_env": {"AMX_CLUSTER_RUN_ID": RUN_ID}, "epochs": RUN_ID}, RUN_DIR, RUN_ID)
    assert template == {"extra_env": {"AMX_CLUSTER_RUN_ID": "<run_id>"}, "epochs": RUN_ID}


@pytest.mark.parametrize("run_dir", ["relative/run", "/runs/run/", ""])
def test_a_run_folder_must_be_absolute(run_dir):
    with pytest.raises(PlanError, match="absolute"):
        template_run({}, run_dir, RUN_ID)


def render(arguments: dict) -> str:
    return launch_command(**arguments)["script"]


def test_a_real_launch_renders_again_and_elsewhere():
    now = render(launch_inputs(RUN_DIR, RUN_ID))
    template = template_run(launch_inputs(RUN_DIR, RUN_ID), RUN_DIR, RUN_ID)
    again = render(fill_run(template, RUN_DIR, RUN_ID))
    elsewhere = render(fill_run(template, "/elsewhere", "x"))
    assert launch_problems(now, again, elsewhere, RUN_DIR) == []
    assert "/elsewhere/qa_finetune.py" in elsewhere


def test_a_launch_that_names_the_run_inside_other_text_is_refused():
    arguments = launch_inputs(RUN_DIR, RUN_ID)
    arguments["script_args"] = arguments["script_args"] + [f"--logging_dir={RUN_DIR}/tb"]
    now = render(arguments)
    template = template_run(arguments, RUN_DIR, RUN_ID)
    problems = launch_problems(
        now, render(fill_run(template, RUN_DIR, RUN_ID)), render(fill_run(template, "/e", "x")), RUN_DIR
    )
    assert problems == [f"the launch names the run's folder {RUN_DIR} in a way the plan cannot replace"]


def test_a_launch_that_does_not_render_back_is_refused():
    assert launch_problems("a", "b", "c", RUN_DIR) == [
        "the launch rendered from the plan is not the launch.sh this run ran"
    ]


def test_a_plan_reads_back():
    assert parse_plan(plan_text(plan()))["inputs"] == INPUTS


@pytest.mark.parametrize(
    "edit, reason",
    [
        (lambda text: text.replace('"written": 1000.0', '"written": 999999.0', 1), "digest"),
        # A plan of 0.1.0 (version 1, with a maximum age) is not read: the full path writes a new one.
        (lambda text: text.replace('"version": 3', '"version": 2'), "another version"),
        (lambda text: text[:-10], "not JSON"),
        (lambda text: "[]", "not a JSON object"),
    ],
)
def test_an_edited_or_damaged_plan_is_not_trusted(edit, reason):
    with pytest.raises(PlanError, match=reason):
        parse_plan(edit(plan_text(plan())))


def test_a_plan_needs_every_part():
    broken = plan()
    del broken["nodes"]
    with pytest.raises(PlanError, match="lacks nodes"):
        plan_text(broken)


@pytest.mark.parametrize(
    "changes, now, usable, reason",
    [
        ({}, 1500.0, True, "passed 500 s ago"),
        ({"inputs": "c" * 64}, 1500.0, False, "other inputs"),
        # No clock decides alone: two days later, or with the clock moved back, the plan holds while the nodes'
        # fingerprints and the smoke record do (check_plan asks them next).
        ({}, 1000.0 + 2 * 86400, True, f"passed {2 * 86400} s ago"),
        ({}, 1000.0 + 400 * 86400, True, "passed"),
        ({}, 900.0, True, "passed 0 s ago"),
        # A plan of 0.1.0's kind: its maximum age is not read.
        ({"max_age": 0}, 1500.0, True, "passed 500 s ago"),
        ({"written": "yesterday"}, 1500.0, False, "written is not a number"),
        ({"written": float("nan")}, 1500.0, False, "written is not a number"),
    ],
)
def test_plan_fresh(changes, now, usable, reason):
    found, why = plan_fresh(plan(**changes), INPUTS, now)
    assert found is usable
    assert reason in why


@pytest.mark.parametrize(
    "job, keep, reason",
    [
        ({"rc": 0, "job_failed": False}, True, "the job passed"),
        ({"rc": 1, "job_failed": True, "failed": True}, False, "the job failed (exit code 1)"),
        ({"rc": 0, "job_failed": True, "failed": True}, False, "the job failed"),  # processes left running
        ({"rc": None, "job_failed": True}, False, "the job failed"),  # the supervisor was lost
        ({"rc": 0, "job_failed": False, "failed": True}, False, "the job failed"),
        ({"rc": 0}, False, "the job failed"),  # no word on the job: not a job that passed
        ({"rc": 137, "job_failed": False}, False, "exit code 137"),
        ({"job_failed": False}, False, "exit code None"),
        (None, False, "no answer"),
    ],
)
def test_plan_survives_only_a_job_that_passed(job, keep, reason):
    kept, why = plan_survives(job)
    assert kept is keep
    assert reason in why


FINGERPRINT = {"boot_id": "1", "kernel": "6.8.0", "python": "3.11.2", "files": {}, "trees": {}, "venv": None}
PLAN = {
    "inputs": "e" * 64,
    "nodes": [
        {"alias": "localhost", "name": "spr-a01", "fingerprint": {**FINGERPRINT, "packages": {}}},
        {"alias": "node1", "name": "spr-b17", "fingerprint": {**FINGERPRINT, "boot_id": "2", "packages": {}}},
    ],
}


def answer(**result):
    return {"ok": True, "result": {**FINGERPRINT, "packages": {}, "present": [], "processes": [], **result}}


def test_nodes_as_they_were_have_no_changes():
    answers = {"spr-a01": answer(), "spr-b17": answer(boot_id="2")}
    assert node_changes(PLAN, answers) == []


def test_every_kind_of_change_is_named_with_its_node():
    answers = {
        "spr-a01": answer(present=[RUN_DIR], processes=["1 a", "2 b", "3 c", "4 d"], kernel="6.9.0"),
        "spr-b17": answer(boot_id="9"),
    }
    assert node_changes(PLAN, answers) == [
        "spr-a01: the node changed since the stamp: kernel: 6.8.0 -> 6.9.0",
        f"spr-a01: {RUN_DIR} is there already (the full path follows, resumes or refuses that run)",
        "spr-a01: processes of an earlier run are running (1 a | 2 b | 3 c and 1 more)",
        "spr-b17: the node rebooted since the stamp was written",
    ]


def test_a_node_that_does_not_answer_or_cannot_be_read_is_named():
    answers = {"spr-a01": answer(), "spr-b17": {"ok": False, "error": "rc 255: Connection refused"}}
    assert node_changes(PLAN, answers) == ["spr-b17: the probe failed (rc 255: Connection refused)"]
    assert node_changes(PLAN, {"spr-a01": answer()}) == ["spr-b17: the probe failed (no answer)"]
    unread = {"spr-a01": answer(boot_id=""), "spr-b17": answer(boot_id="2", files={"/x": {"unreadable": "EACCES"}})}
    assert node_changes(PLAN, unread) == [
        "spr-a01: the node's boot id cannot be read",
        "spr-b17: the node could not be fingerprinted: files: /x (EACCES)",
    ]


def test_run_record_has_the_full_paths_shape():
    static = {
        "master": "spr-a01",
        "nodes": [],
        "layout": {},
        "dialect": {},
        "hostfile": "~/hosts",
        "master_addr": "10.0.0.1",
        "script": "qa_finetune",
        "script_file": "/r/qa_finetune.py",
        "script_args": ["--x"],
        "data": "tiny",
    }
    job = {"rc": 0, "duration": 3.5, "job_failed": False, "attempts": [{"rc": 0}]}
    metrics = {"train": {"epoch_seconds": [1.0]}, "world_size": 4}
    record = run_record(
        static,
        RUN_ID,
        RUN_DIR,
        {"command": "mpirun", "argv": [], "env": {}, "genv": {}, "setvars": None, "script": "x"},
        {"skipped": "same"},
        None,
        job,
        metrics,
    )
    assert record["succeeded"] is True
    assert record["launch"] == {
        "command": "mpirun",
        "argv": [],
        "env": {},
        "genv": {},
        "setvars": None,
        "hostfile": "~/hosts",
        "master_addr": "10.0.0.1",
    }
    assert record["job"] == {
        "rc": 0,
        "seconds": 3.5,
        "started": None,
        "ended": None,
        "last_progress": None,
        "failure": None,
    }
    assert record["epoch_seconds"] == [1.0]
    assert record["metrics"]["world_size"] == 4 and record["metrics"]["eval_after"] is None
    assert record["smoke"] == {"skipped": "same"} and record["single_node"] is None
    assert record["amx"] == {
        "used": "unknown (no oneDNN record: the smoke test did not run)",
        "nodes": {},
        "measured_in": None,
    }
    assert run_record(static, RUN_ID, RUN_DIR, {}, None, None, {}, None)["succeeded"] is False
    # The full path: the job's phases only, no wall time of its own.
    assert record["timing"] == {"phases": {}, "wall": None}


@pytest.mark.parametrize(
    ("timing", "expected"),
    [
        (None, {"phases": {"job_start": 0.2, "job": 3.5, "sweep": 0.1, "results": 0.05}, "wall": None}),
        (
            {"phases": {"plan": 0.3, "probe": 0.2, "prepare": 0.1}, "wall": 4.8},
            {
                "phases": {
                    "plan": 0.3,
                    "probe": 0.2,
                    "prepare": 0.1,
                    "job_start": 0.2,
                    "job": 3.5,
                    "sweep": 0.1,
                    "results": 0.05,
                },
                "wall": 4.8,
            },
        ),
    ],
    ids=["full-path", "one-step"],
)
def test_run_record_keeps_each_phases_seconds(timing, expected):
    job = {"rc": 0, "job_failed": False, "phases": {"job_start": 0.2, "job": 3.5, "sweep": 0.1, "results": 0.05}}
    record = run_record({}, RUN_ID, RUN_DIR, {}, None, None, job, None, timing)
    assert record["timing"] == expected


@pytest.mark.parametrize(
    ("smoke", "measured_in"),
    [
        # The smoke test ran in this run.
        ({"rc": 0, "seconds": 2.0}, RUN_ID),
        # Skipped: its record is an earlier run's, and says which.
        ({"skipped": "same fingerprint", "onednn_run": "run-0"}, "run-0"),
    ],
)
def test_run_record_says_which_kernels_did_the_bf16_work(smoke, measured_in):
    line = (
        "onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx512_core_amx,undef,src:bf16::blocked:ab::f0 "
        "wei:bf16::blocked:ba::f0 dst:bf16::blocked:ab::f0,,,64x256:256x256,0.02"
    )
    probes = [{"host": "spr-a01", "rank": 0, "local_rank": 0, "ok": True, "onednn": [line]}]
    record = run_record({}, RUN_ID, RUN_DIR, {}, dict(smoke, onednn=probes), None, {}, None)
    assert record["amx"]["used"] == "yes" and record["amx"]["measured_in"] == measured_in
    assert record["amx"]["nodes"]["spr-a01"]["isa"] == "avx512_core_amx"
    # The probe's lines move to amx; the smoke test's own figures stay.
    assert "onednn" not in record["smoke"] and "onednn_run" not in record["smoke"]
