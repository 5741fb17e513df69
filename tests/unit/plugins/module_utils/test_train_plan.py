# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The train role's plan (module_utils/train_plan.py): one plan from every node's facts, or every problem at once."""

from __future__ import annotations

import base64
import json

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.amx.cluster.plugins.action.train_plan import ARGUMENT_SPEC
from ansible_collections.amx.cluster.plugins.module_utils.cluster_shape import cluster_shape
from ansible_collections.amx.cluster.plugins.module_utils.train_plan import (
    fingerprint_again,
    passing_ranks,
    plan,
    record,
    run_state,
)

TOPOLOGY = {"physical_cores": 8, "sockets": 1, "logical_cpus": 8}
HOME = "/home/u"
RUN_DIR = f"{HOME}/amx-cluster-runs/r1"
TINY = f"{HOME}/amx-cluster-runs/datasets/tiny-qa-KEY"


def settings(**given):
    """The action's settings as its argument spec fills them, with the role's defaults where they matter."""
    values = {
        "user": "u",
        "tiny_key": "KEY",
        "run_id": "r1",
        "extra_env": {},
        "secret_env": {},
        "extra_args": [],
        "launcher_options": [],
        "ssh_options": ["-o", "BatchMode=yes"],
        "bf16": True,
        "prepend_rank": True,
        "rerun": False,
        "resume": True,
        "preload_tcmalloc": True,
        "fetch_results": True,
        "kmp_hw_subset": "1T",
        "logging_steps": 10,
        "checkpoint_steps": 500,
        "checkpoint_keep": 2,
        "scaling_steps": 20,
        "single_node_steps": 20,
        "smoke_timeout": 120,
        "smoke_test_max_age": 86400,
        "timeout": 0,
        "poll_interval": 5,
        "scaling_nodes": [],
        "layout_mode": "shared",
        "processes_per_node": 1,
        "results_dir": "/ctl/runs",
        "fast_launch": True,
        "launch_inputs": "a" * 64,
    }
    values.update(given)
    result = ArgumentSpecValidator(ARGUMENT_SPEC).validate({"settings": values})
    assert not result.error_messages, result.error_messages
    return result.validated_parameters["settings"]


def node(**given):
    found = {
        "amx_check_topology": TOPOLOGY,
        "amx_check_amx_usable": True,
        "torch_stack_manifest_hash": "m1",
        "torch_stack_packages": {"torch": "2.5.0"},
        "torch_stack_versions": {"transformers": "4.46.0"},
        "torch_stack_venv_python": "/opt/venv/bin/python",
        "torch_stack_has_oneccl": False,
        "torch_stack_has_ipex": False,
        "tcmalloc_library_path": "/usr/lib/libtcmalloc.so.4",
        "kernel": "6.8.0",
        "user": ["u", "1000", "1000", "", HOME, "/bin/bash"],
        "folders": [folder(f"{HOME}/amx-cluster-runs")],
        "checksums": "",
    }
    found.update(given)
    return found


def folder(path, exists=False, isdir=True, link=None, writable=True):
    """One entry of amx.cluster.folder_info's answer."""
    if not exists:
        return {"path": path, "exists": False, "isdir": False, "islnk": False, "lnk_source": None, "writable": None}
    return {"path": path, "exists": True, "isdir": isdir, "islnk": bool(link), "lnk_source": link, "writable": writable}


def slurp(text):
    return {"content": base64.b64encode(text.encode()).decode()}


def compute(names=("m",), nodes=None, master=None, play=None, **given):
    groups = {"all": list(names), "cluster": list(names), "master": [names[0]], "workers": list(names[1:])}
    hostvars = {name: {"ssh_mesh_address": f"10.0.0.{index + 1}"} for index, name in enumerate(names)}
    hostfile = "".join(f"{alias}\n" for alias in ["localhost"] + [f"node{i}" for i in range(1, len(names))])
    reads = {"hostfile": slurp(hostfile), **(master or {})}
    context = {
        "shape": cluster_shape(groups, hostvars),
        "play_hosts_all": list(names),
        "play_hosts": list(play if play is not None else names),
        "run_id": given.pop("run_id", "r1"),
        "now": 1000.0,
        "mpich_launcher": "mpirun",
        "role_files": {},
    }
    return plan(settings(**given), {name: (nodes or {}).get(name, node()) for name in names}, reads, context)


def test_a_new_run_on_one_node_is_planned_with_the_roles_arguments():
    # The case of the removed script_args.yml test: the role's defaults (tiny data) give the recipe's order.
    found = compute()
    assert found["problems"] == []
    assert (found["state"], found["pending"], found["resumes"]) == ("new", True, False)
    assert " ".join(found["job_args"]) == (
        f"--model_name_or_path {TINY}/model --train_file {TINY}/data/train.json --validation_file"
        f" {TINY}/data/validation.json --do_train --do_eval --per_device_train_batch_size 16 --num_train_epochs 8"
        f" --logging_steps 10 --output_dir {RUN_DIR}/output --overwrite_output_dir --learning_rate 0.003"
        " --max_seq_length 96 --doc_stride 32 --save_strategy steps --save_steps 500 --save_total_limit 2"
        f" --save_on_each_node --metrics_file {RUN_DIR}/metrics.json --progress_file {RUN_DIR}/progress.jsonl"
    )
    assert found["launch"]["script"].startswith("#!")
    assert found["hosts"]["m"]["absent_folders"] == [f"{HOME}/amx-cluster-runs"]
    assert found["smoke"]["run"] and found["smoke"]["reason"] == "no record of an earlier smoke test"
    assert found["keep_plan"], found["keep_plan_reason"]
    assert found["record"]["nodes"][0]["name"] == "m" and found["record"]["data"] == "tiny"


ROOT = f"{HOME}/amx-cluster-runs"


@pytest.mark.parametrize(
    ("folders", "expected"),
    [
        ([folder(ROOT, True), folder(RUN_DIR)], []),
        (
            [folder(ROOT, True, writable=False), folder(RUN_DIR)],
            [f"m: {ROOT} exists and is not writable by u. The role uses an existing folder as it is"],
        ),
        (
            [folder(ROOT, True), folder(RUN_DIR, True, isdir=False, writable=True)],
            [f"m: {RUN_DIR} exists but is not a folder. Set train_run_root to a folder of its own"],
        ),
        (
            [folder(ROOT, True, link="/usr", writable=False)],
            [
                f"m: train_run_root is '{ROOT}', a link to '/usr', a system folder. Set train_run_root",
                f"m: {ROOT} exists and is not writable by u",
            ],
        ),
        # A link that leads to a folder of its own is used as that folder.
        ([folder(ROOT, True, link="/data/runs")], []),
    ],
    ids=["existing and writable", "not writable", "a file", "a link to a system folder", "a link to a folder"],
)
def test_existing_run_folders_are_used_as_they_are_or_refused(folders, expected):
    found = compute(nodes={"m": node(folders=folders)})
    assert len(found["problems"]) == len(expected), found["problems"]
    for problem, start in zip(found["problems"], expected):
        assert problem.startswith(start), problem
    assert found["hosts"]["m"]["absent_folders"] == [item["path"] for item in folders if not item["exists"]]


def test_every_problem_of_every_host_comes_at_once():
    nodes = {
        "m": node(amx_check_amx_usable=False, amx_check_amx_reason="no amx_tile flag"),
        "w": node(torch_stack_manifest_hash="m2", user=None),
    }
    found = compute(
        names=("m", "w"),
        nodes=nodes,
        master={
            "hostfile": slurp("localhost\nlocalhost\n"),
            "ssh": [{"item": {"alias": "node1", "name": "w"}, "rc": 255, "stderr": "refused"}],
        },
        run_id="../x",
        extra_env={"A;B": "1"},
        require_amx=True,
        smoke_timeout=5,
    )
    text = " | ".join(found["problems"])
    for piece in (
        "m: AMX is not usable (no amx_tile flag)",
        "w: user 'u' does not exist",
        "The nodes differ. Their training stacks differ",
        "m: the MPI hostfile /home/u/hosts: it lists localhost, localhost",
        "m cannot reach over SSH as u without a password: node1 (w): refused",
        "train_run_id '../x' cannot name a folder",
        "train_extra_env has 'A;B', which is not an environment variable name",
        "m: the limits need train_smoke_timeout must be at least 10 s; got 5",
    ):
        assert piece in text, piece
    assert "launch" not in found


def test_a_node_that_dropped_out_and_a_layout_that_does_not_fit_are_named():
    found = compute(names=("m", "w"), play=("m",), processes_per_node=64)
    text = " | ".join(found["problems"])
    assert "w dropped out of the play" in text
    assert "m (8 physical cores): the training layout cannot run there" in text
    assert "train_processes_per_node (64)" in text


@pytest.mark.parametrize(
    ("result", "cmdline", "state"),
    [
        ('{"rc": 0}', None, "finished"),
        ('{"rc": 0, "timed_out": true}', None, "failed"),
        ('{"rc": 1}', None, "failed"),
        ("not json", None, "failed"),
        (None, "python3\0/run/state/job/train_agent.py\0", "running"),
        (None, "bash\0", "new"),
        (None, None, "new"),
    ],
)
def test_the_runs_state_from_the_masters_files(result, cmdline, state):
    assert run_state(result, cmdline) == state


def launched_before(**given):
    first = compute(**given)
    return {"result": slurp('{"rc": 1}'), "earlier_launch": slurp(first["launch"]["script"])}


def checkpoint(step, weights=True):
    names = ["trainer_state.json", "optimizer.pt", "scheduler.pt", "rng_state.pth"]
    names += ["model.safetensors", "config.json"] if weights else []
    return [{"path": f"{RUN_DIR}/output/checkpoint-{step}/{name}"} for name in names]


def test_a_failed_run_resumes_from_the_newest_checkpoint_every_node_holds():
    nodes = {"m": node(checkpoints=checkpoint(10) + checkpoint(20)), "w": node(checkpoints=checkpoint(10, False))}
    master = launched_before(names=("m", "w"))
    found = compute(names=("m", "w"), nodes=nodes, master=master)
    assert found["problems"] == []
    assert (found["state"], found["pending"], found["resumes"]) == ("failed", True, True)
    assert found["resume"]["step"] == 10
    assert found["resume"]["missing"] == {"w": ["config.json", "model.safetensors"]}
    assert not found["keep_plan"] and "a resumed run" in found["keep_plan_reason"]


def test_a_failed_run_without_a_common_checkpoint_is_refused_before_any_change():
    nodes = {"m": node(checkpoints=checkpoint(20)), "w": node(checkpoints=checkpoint(10))}
    found = compute(names=("m", "w"), nodes=nodes, master=launched_before(names=("m", "w")))
    assert len(found["problems"]) == 1
    assert "m: run r1 failed and cannot resume on these nodes" in found["problems"][0]
    assert "set train_rerun: true" in found["problems"][0]


def test_a_run_that_ended_is_not_rewritten_with_other_settings():
    master = {"result": slurp('{"rc": 0}'), "earlier_launch": slurp(compute()["launch"]["script"])}
    assert compute(master=master)["state"] == "finished" and compute(master=master)["pending"] is False
    found = compute(master=master, extra_args=["--seed", "7"])
    assert found["problems"] and "run r1 finished before with other settings" in found["problems"][0]
    assert compute(master=master, extra_args=["--seed", "7"], rerun=True)["problems"] == []


def test_the_smoke_test_is_skipped_only_while_its_record_holds():
    first = compute()
    record = {**first["smoke"]["record"], "time": 900.0, "figures": {"run_id": "r0"}}
    again = compute(master={"smoke_record": slurp(json.dumps(record))})
    assert again["smoke"]["run"] is False and again["smoke"]["figures"] == {"run_id": "r0"}
    # Another node state (a file of the mesh changed), a forced check or a stale record: it runs.
    changed = compute(
        master={"smoke_record": slurp(json.dumps(record))}, nodes={"m": node(checksums="a" * 64 + "  /f\n")}
    )
    assert changed["smoke"]["run"] and "another fingerprint" in changed["smoke"]["reason"]
    assert compute(master={"smoke_record": slurp(json.dumps(record))}, smoke_test_force=True)["smoke"]["run"]
    assert compute(master={"smoke_record": slurp(json.dumps(record))}, smoke_test_max_age=10)["smoke"]["run"]


def test_the_scaling_sweep_and_the_single_node_check_are_rendered():
    found = compute(names=("m", "w"), scaling_nodes="1,2", single_node_check=True, single_node_steps=0)
    assert [run["count"] for run in found["scaling"]] == [1, 2]
    assert "--max_steps 20" in found["scaling"][0]["script"]
    assert "OMP_NUM_THREADS" not in found["single"]["launch"]["env"]  # the post's variant leaves it to torch
    assert not found["keep_plan"]
    assert "a single-node check" in found["keep_plan_reason"] and "a scaling sweep" in found["keep_plan_reason"]


def test_flags_given_as_text_are_read_as_ansible_reads_them():
    assert compute(rerun="false", resume="no")["state"] == "new"
    found = compute(master=launched_before(), resume="false")
    assert (found["pending"], found["resumes"]) == (False, False)


def test_the_runs_record_takes_the_smoke_tests_probe_and_the_metrics():
    planned = compute()
    probe = {"ok": True, "rank": 0, "local_rank": 0, "host": "m", "backend": "gloo", "onednn": []}
    smoke = {"rc": 0, "duration": 3.5, "rank_lines": {"m": [json.dumps(probe), '{"ok": false, "rank": 1}', "noise"]}}
    job = {"rc": 0, "job_failed": False, "duration": 60.0}
    made = record(planned, job, smoke, None, '{"world_size": 1, "train": {"epoch_seconds": [50.0]}}')
    assert made["succeeded"] is True and made["run_id"] == "r1" and made["run_dir"] == RUN_DIR
    assert made["smoke"] == {"rc": 0, "seconds": 3.5}
    assert made["epoch_seconds"] == [50.0] and made["metrics"]["world_size"] == 1
    assert made["launch"]["command"] == planned["launch"]["command"]
    assert passing_ranks(smoke) == [probe]


def test_a_skipped_smoke_test_and_unreadable_metrics_still_make_a_record():
    first = compute()
    kept = {**first["smoke"]["record"], "time": 900.0, "figures": {"run_id": "r0", "onednn": []}}
    planned = compute(master={"smoke_record": slurp(json.dumps(kept))}, single_node_check=True)
    made = record(planned, {}, None, {"rc": 0, "duration": 9.0}, "not json")
    assert made["smoke"]["skipped"].startswith("the cluster is as it was")
    assert made["single_node"]["variant"] == "post" and made["single_node"]["rc"] == 0
    assert made["succeeded"] is False and made["metrics"]["train"] is None


def test_the_record_keeps_the_fingerprint_of_the_launcher_installed_after_the_plan():
    # MPICH absent at the plan (its -info read failed), installed by prepare.yml: the record keeps the fingerprint
    # that the next launch, which reads the installed launcher, computes.
    before = compute()
    after = compute(master={"launcher_info": "HYDRA build details: 4.0"})
    assert before["smoke"]["fingerprint"] != after["smoke"]["fingerprint"]
    assert fingerprint_again(before, "HYDRA build details: 4.0") == after["smoke"]["fingerprint"]
    assert fingerprint_again(compute(smoke_test=False, master=launched_before()), "x") is None
