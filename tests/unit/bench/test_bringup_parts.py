# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bring-up benchmark's pure parts: its command line, what it reads from ansible-playbook's and pip's output,
the order and sizes of its measurements, the baseline's steps."""

from __future__ import annotations

import pathlib

import bringup_bench
import pytest
from bringup import baseline, measure, playbooks, wheels

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
    assert bringup_bench.skipped_parts(args) == [
        "the sequential baseline (no provision/baseline ratio)",
        "train.yml (no launch overhead, no throughput, no scaling report)",
        "the bytes fetched (the shared wheelhouse may already hold the wheels: nothing is downloaded)",
    ]


@pytest.mark.parametrize("argv", [["--nodes", "0"], ["--runs", "0"], ["--wheelhouse", "warm"]])
def test_the_command_line_refuses(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        bringup_bench.parse_args(argv)
    assert stopped.value.code == 2
    assert "bringup_bench.py: error:" in capsys.readouterr().err
