# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bring-up benchmark's pure parts: its command line, what it reads from ansible-playbook's and pip's output,
the order and sizes of its measurements, the baseline's steps."""

from __future__ import annotations

import pathlib

import bringup_bench
import pytest
from bringup import baseline, measure, playbooks, settings, wheels

PLAYBOOK_OUTPUT = """\
PLAY RECAP *********************************************************************
amx-bench-1-r1p-master     : ok=120  changed=33   unreachable=0    failed=0    skipped=40   rescued=0    ignored=0
amx-bench-1-r1p-node1      : ok=98   changed=31   unreachable=0    failed=0    skipped=41   rescued=0    ignored=0

Wednesday 02 December 2026  01:02:03 +0000 (0:00:01.234)       0:07:37.100 *****
===============================================================================
amx.cluster.torch_stack : Install the wheelhouse into the venv -------- 120.50s
amx.cluster.tcmalloc : Install the allocator ------------------------------ 30.25s
"""


def test_play_recap_and_slowest_tasks():
    assert playbooks.play_recap(PLAYBOOK_OUTPUT) == {
        "amx-bench-1-r1p-master": {"ok": 120, "changed": 33, "unreachable": 0, "failed": 0},
        "amx-bench-1-r1p-node1": {"ok": 98, "changed": 31, "unreachable": 0, "failed": 0},
    }
    assert playbooks.slowest_tasks(PLAYBOOK_OUTPUT) == [
        {"task": "amx.cluster.torch_stack : Install the wheelhouse into the venv", "seconds": 120.5},
        {"task": "amx.cluster.tcmalloc : Install the allocator", "seconds": 30.25},
    ]
    assert playbooks.play_recap("ERROR! the playbook could not be found") == {}


def test_the_playbook_environment_is_the_benchmarks_own(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSIBLE_STDOUT_CALLBACK", "json")  # a user's setting would change the output parsed
    env = playbooks.ansible_env(tmp_path, {"PIP_CACHE_DIR": "/x"})
    assert "ANSIBLE_STDOUT_CALLBACK" not in env
    assert env["ANSIBLE_SSH_CONTROL_PATH_DIR"] == str(tmp_path / "cp")
    assert env["ANSIBLE_CONFIG"].endswith("ansible.cfg")
    assert env["PIP_CACHE_DIR"] == "/x"


PIP_LOG = "\n".join(
    [
        "10:00:00,1 Added torch==2.13.0 from file:///wheels/torch-2.13.0-cp311-cp311-linux_x86_64.whl to build "
        "tracker '/tmp/t'",
        "10:00:01,2 Fetched page https://pypi.org/simple/transformers/ as application/vnd.pypi.simple.v1+json",
        "10:00:02,3 Added transformers==4.57.1 from https://files.example/transformers-4.57.1-py3-none-any.whl"
        "#sha256=ab (from -r r.txt (line 2)) to build tracker '/tmp/t'",
        "10:00:03,4 Downloading transformers-4.57.1-py3-none-any.whl (12.0 MB)",
        "10:00:04,5 Downloading tqdm-4.67.1-py3-none-any.whl (78 kB)",
        "10:00:05,6 Downloading tiny-1.0-py3-none-any.whl (900 bytes)",
    ]
)


def test_wheels_by_where_pip_took_them_from():
    sizes = {
        "torch-2.13.0-cp311-cp311-linux_x86_64.whl": 200,
        "transformers-4.57.1-py3-none-any.whl": 12,
        "mystery-1.0-py3-none-any.whl": 1,
    }
    got = wheels.classify_wheels(sizes, PIP_LOG)
    assert {k: v for k, v in got.items() if k != "files"} == {
        "wheels": 3,
        "wheelhouse_bytes": 213,
        "from_index_bytes": 12,
        "from_local_disk_bytes": 200,
        "unknown_source_bytes": 1,
        "index_pages_fetched": 1,
    }
    assert [(f["wheel"].split("-")[0], f["source"]) for f in got["files"]] == [
        ("mystery", "unknown"),
        ("torch", "local_disk"),
        ("transformers", "index"),
    ]


def test_bytes_pip_downloaded():
    assert wheels.downloaded_bytes(PIP_LOG) == 12_000_000 + 78_000 + 900
    assert wheels.downloaded_bytes("") == 0


@pytest.mark.parametrize(
    ("nodes", "sizes", "batch"),
    [
        (1, [1, 1], 48),
        (2, [2, 1, 2], 48),
        (3, [3, 1, 2, 3], 48),
        (4, [4, 1, 2, 3, 4], 48),
        (5, [5, 1, 2, 3, 4, 5], 120),
    ],
)
def test_train_sizes_and_one_global_batch(nodes, sizes, batch):
    assert measure.train_sizes(nodes) == sizes
    assert measure.global_batch(sizes) == batch
    ranks = [measure.PROCESSES_PER_NODE * size for size in sizes]
    assert all(batch % r == 0 for r in ranks)  # every node count gets the same work


@pytest.mark.parametrize(
    ("run", "skip", "order"),
    [(1, False, ["baseline", "provision"]), (2, False, ["provision", "baseline"]), (3, True, ["provision"])],
)
def test_baseline_and_provision_alternate(run, skip, order):
    assert measure.measurement_order(run, skip) == order


def test_the_baselines_steps():
    profile = {"packages": {"torch": "2.13.0", "transformers": "4.57.1", "accelerate": "1.2.3"}}
    steps = baseline.baseline_steps(pathlib.Path("/wheels/torch-2.13.0-cp311-cp311-linux_x86_64.whl"), profile)
    assert [name for name, _command in steps] == [
        "copy_ca_and_torch_wheel",
        "apt_tcmalloc",
        "venv",
        "pip_install",
        "import_check",
    ]
    pip_install = dict(steps)["pip_install"]
    assert "PIP_CERT=/tmp/host-ca.crt" in pip_install
    wheel = "/tmp/torch-2.13.0-cp311-cp311-linux_x86_64.whl"
    assert pip_install.endswith(f"-q {wheel} transformers==4.57.1 accelerate==1.2.3")


def test_the_command_line_smoke_mode():
    args = bringup_bench.parse_args(["--smoke"])
    assert (args.nodes, args.runs, args.skip_baseline, args.skip_train, args.wheelhouse) == (1, 1, True, True, "shared")
    assert bringup_bench.parse_args(["--smoke", "--wheelhouse", "cold"]).wheelhouse == "cold"
    assert bringup_bench.parse_args([]).wheelhouse == "cold"
    assert bringup_bench.parse_args([]).nodes == 3
    assert bringup_bench.parse_args(["--smoke", "--nodes", "3"]).nodes == 3
    assert bringup_bench.skipped_parts(args) == [
        "the sequential baseline (no provision/baseline ratio)",
        "train.yml (no launch overhead, no throughput, no scaling report)",
        "the bytes fetched (the shared wheelhouse may already hold the wheels: nothing is downloaded)",
    ]


@pytest.mark.parametrize(
    "argv", [["--nodes", "0"], ["--runs", "0"], ["--wheelhouse", "warm"], ["--everyday-runs", "-1"]]
)
def test_the_command_line_refuses(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        bringup_bench.parse_args(argv)
    assert stopped.value.code == 2
    assert "bringup_bench.py: error:" in capsys.readouterr().err


# What train.yml prints, both streams in one log as the benchmark keeps it (stderr follows stdout there).
ONE_STEP_OUTPUT = """\
PLAY [Launch in one step on a cluster unchanged since its last full launch] ****

TASK [Start the job in one step, or hand over to the full path] ****************
one-step launch [amx-bench-1-r1p-master] run bench-r1-e2-3n: the last full launch with these settings passed 41 s \
ago; every node is as it was then; smoke test skipped: the cluster is as it was at the last smoke test (52 s ago)
one-step launch [amx-bench-1-r1p-master] Run bench-r1-e2-3n finished after 12 s (one step). Results: /w/runs/\
bench-r1-e2-3n/ (run.json, 9 files).
changed: [amx-bench-1-r1p-master]

PLAY [Train on the cluster] ****************************************************
"""
FULL_PATH_OUTPUT = """\
TASK [Start the job in one step, or hand over to the full path] ****************
one-step launch [amx-bench-1-r1p-master] the full path runs: amx-bench-1-r1p-node2: /home/amx/.ssh/known_hosts \
changed; amx-bench-1-r1p-node2: the boot id changed (a reboot)
ok: [amx-bench-1-r1p-master]

TASK [amx.cluster.train : Say whether the next launch can start in one step] ***
ok: [amx-bench-1-r1p-master] => {
    "msg": "One-step launch: the next train.yml with these settings starts in one step while the cluster stays as \
it is."
}
"""
NO_PLAN_OUTPUT = """\
one-step launch [spr-a01] the full path runs: no full launch with these settings has passed on this master yet
TASK [amx.cluster.train : Say whether the next launch can start in one step] ***
ok: [spr-a01] => {
    "msg": "One-step launch: no plan kept (the probe failed on node1: \\"python3\\" not found)."
}
"""


def test_the_one_step_path_and_its_reason():
    assert playbooks.launch_path(ONE_STEP_OUTPUT, "bench-r1-e2-3n") == {
        "one_step": True,
        "reason": "the last full launch with these settings passed 41 s ago; every node is as it was then; smoke "
        "test skipped: the cluster is as it was at the last smoke test (52 s ago)",
    }
    # Another run's marker is not this run's.
    assert playbooks.launch_path(ONE_STEP_OUTPUT, "bench-r1-e1-3n") == {"one_step": None, "reason": None}
    assert playbooks.plan_kept(ONE_STEP_OUTPUT) == {"kept": None, "reason": None}  # no plan step on the one-step path


def test_the_hand_over_to_the_full_path_and_its_reason():
    assert playbooks.launch_path(FULL_PATH_OUTPUT, "bench-r1-e1-3n") == {
        "one_step": False,
        "reason": "amx-bench-1-r1p-node2: /home/amx/.ssh/known_hosts changed; amx-bench-1-r1p-node2: the boot id "
        "changed (a reboot)",
    }
    assert playbooks.plan_kept(FULL_PATH_OUTPUT) == {"kept": True, "reason": None}
    assert playbooks.launch_path(NO_PLAN_OUTPUT, "x") == {
        "one_step": False,
        "reason": "no full launch with these settings has passed on this master yet",
    }
    assert playbooks.plan_kept(NO_PLAN_OUTPUT) == {
        "kept": False,
        "reason": 'the probe failed on node1: "python3" not found',
    }


def test_a_train_yml_without_the_one_step_launch_says_no_path():
    assert playbooks.launch_path(PLAYBOOK_OUTPUT, "bench-r1-5-3n") == {"one_step": None, "reason": None}
    assert playbooks.plan_kept(PLAYBOOK_OUTPUT) == {"kept": None, "reason": None}


def test_an_everyday_launch_repeats_the_full_launchs_settings_with_a_new_run_id():
    full = {"train_run_id": "bench-r1-5-3n", "train_batch_size": 8}
    assert measure.everyday_vars(full, "bench-r1-e1-3n") == {"train_run_id": "bench-r1-e1-3n", "train_batch_size": 8}
    assert full["train_run_id"] == "bench-r1-5-3n"  # the full launch's own vars stay as they were
    assert measure.path_said(True, "x") == "one step"
    assert measure.path_said(False, "a reboot") == "full path (a reboot)"
    assert measure.path_said(None, None) == "path not said"


def test_the_command_line_everyday_runs():
    assert bringup_bench.parse_args([]).everyday_runs == 3
    args = bringup_bench.parse_args(["--everyday-runs", "0"])
    assert args.everyday_runs == 0
    assert bringup_bench.skipped_parts(args)[-1] == (
        "the everyday launches (--everyday-runs 0: no everyday launch overhead)"
    )
    # --skip-train says it already: no train.yml at all.
    skipped = bringup_bench.skipped_parts(bringup_bench.parse_args(["--skip-train", "--everyday-runs", "0"]))
    assert skipped == ["train.yml (no launch overhead, no throughput, no scaling report)"]


def test_the_plans_the_benchmark_removes_are_where_the_one_step_launch_keeps_them():
    # Read from the sources: the benchmark's tests run without the collection on the import path.
    repo = pathlib.Path(__file__).resolve().parents[3]
    action = (repo / "plugins" / "action" / "train_launch.py").read_text()
    module = (repo / "plugins" / "modules" / "launch_plan.py").read_text()
    assert f'"plan_dir": {{"type": "str", "default": "{settings.LAUNCH_PLAN_DIR}"}}' in action
    assert f'plan_dir=dict(type="path", default="{settings.LAUNCH_PLAN_DIR}")' in module
    # train.yml's first play and the role's plan step both leave plan_dir at its default.
    for path in ("playbooks/train.yml", "roles/train/tasks/results.yml"):
        assert "plan_dir" not in (repo / path).read_text()


def test_the_package_index_serves_every_wheel_the_roles_download_asks_for():
    # What the role's `pip download` asks for beyond the profile's requirements (a pip wheel today) must be in the
    # benchmark's index, or the controller's download fails under --index-rate.
    from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import pip_download_args

    args = pip_download_args({"requirements": ["PROFILE"]}, "3.11", [], "/wheels")
    extras = args[args.index("PROFILE") + 1 :]
    assert extras
    profile = wheels.native_profile()
    served = wheels.index_requirements(profile)
    assert set(wheels.profile_requirements(profile, with_torch=False) + extras) <= set(served)
