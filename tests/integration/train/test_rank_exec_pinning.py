# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""rank_exec.sh pins its rank for real: the child's Cpus_allowed_list, under a plain run and under mpirun."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from train_helpers import FILES, run_env

from ansible_collections.amx.cluster.plugins.module_utils.launch import launch_env
from ansible_collections.amx.cluster.plugins.module_utils.layout import rank_layout

WRAPPER = str(FILES / "rank_exec.sh")
LOG = re.compile(r"^amx\.cluster: rank (\S+) local (\d+) cpus (\S+)$", re.M)
# The child reports what the kernel lets it use, and the OpenMP places it was given, in one write: print()
# writes its pieces one by one, and under mpirun two ranks' pieces can interleave on one line.
REPORT = (
    "import os, re; status = open('/proc/self/status').read(); "
    "os.write(1, ' '.join(['child', re.search(r'Cpus_allowed_list:\\s*(\\S+)', status).group(1), "
    "os.environ.get('OMP_PLACES', '-'), os.environ.get('OMP_PROC_BIND', '-')]).encode() + b'\\n')"
)

pytestmark = pytest.mark.skipif(
    not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1 (the 2-CPU test machines have them)"
)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "MPI_", "OMP_", "GOMP_", "KMP_", "AMX_"))}
    env.update(extra)
    return env


def wrapped(env, *argv):
    return subprocess.run([WRAPPER, *argv], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_layouts_cpulists_pin_each_local_rank():
    layout = rank_layout(2, processes_per_node=2, mode="socket")
    variables = launch_env(layout, {"backend": "gloo", "world_size": 2, "flags": []})
    assert variables["AMX_CLUSTER_RANK_CPUS"] == "0;1"
    for rank in (0, 1):
        env = clean_env(PMI_RANK=str(rank), **variables)  # NUM_PROCESSES_PER_NODE=2 comes from the layout
        done = wrapped(env, sys.executable, "-c", REPORT)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["child", str(rank), f"{{{rank}}}", "true"]
        assert LOG.findall(done.stderr) == [(str(rank), str(rank), str(rank))]
        assert done.stderr.count("amx.cluster:") == 1  # logged once


def test_mpi_localrankid_wins_over_pmi_rank():
    env = clean_env(PMI_RANK="5", MPI_LOCALRANKID="0", NUM_PROCESSES_PER_NODE="2", AMX_CLUSTER_RANK_CPUS="0;1")
    done = wrapped(env, sys.executable, "-c", REPORT)
    assert done.stdout.split()[:2] == ["child", "0"]
    assert LOG.findall(done.stderr) == [("5", "0", "0")]
    assert done.stdout.split()[2] == "-"  # no OpenMP cpulist given: no places


def test_the_openmp_place_is_the_ranks_openmp_cores():
    env = clean_env(MPI_LOCALRANKID="1", AMX_CLUSTER_RANK_CPUS="0;0-1", AMX_CLUSTER_RANK_OMP_CPUS="0;0-1")
    done = wrapped(env, sys.executable, "-c", REPORT)
    assert done.stdout.split() == ["child", "0-1", "{0,1}", "true"]


def test_users_own_openmp_binding_is_kept():
    env = clean_env(
        MPI_LOCALRANKID="1", AMX_CLUSTER_RANK_CPUS="0-1;1", AMX_CLUSTER_RANK_OMP_CPUS="0;1", OMP_PLACES="cores"
    )
    done = wrapped(env, sys.executable, "-c", REPORT)
    assert done.stdout.split() == ["child", "1", "cores", "-"]


def test_unpinned_it_logs_what_the_rank_inherits():
    env = clean_env(PMI_RANK="0")
    done = subprocess.run(
        ["taskset", "-c", "1", WRAPPER, sys.executable, "-c", REPORT],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.split() == ["child", "1", "-", "-"]
    assert LOG.findall(done.stderr) == [("0", "0", "1")]


def test_a_local_rank_without_an_entry_fails_before_starting_and_is_reported():
    env = clean_env(PMI_RANK="3", MPI_LOCALRANKID="2", AMX_CLUSTER_RANK_CPUS="0;1")
    done = wrapped(env, sys.executable, "-c", "print('started')")
    assert done.returncode == 1
    assert "started" not in done.stdout
    assert "amx.cluster: rank 3 local 2 cannot be pinned: AMX_CLUSTER_RANK_CPUS has 2 entries" in done.stderr
    assert re.search(r"amx\.cluster: rank 3 ended: exit code 1, pid \d+ on ", done.stderr)


def test_cpus_the_kernel_refuses_fail_the_rank():
    env = clean_env(PMI_RANK="0", AMX_CLUSTER_RANK_CPUS="4095")
    done = wrapped(env, "true")
    assert done.returncode == 1
    assert "cannot be pinned: taskset -pc 4095" in done.stderr


def test_exit_codes_and_signals_pass_through_a_pinned_rank():
    env = clean_env(PMI_RANK="1", NUM_PROCESSES_PER_NODE="2", AMX_CLUSTER_RANK_CPUS="0;1")
    done = wrapped(env, "sh", "-c", "exit 3")
    assert done.returncode == 3
    assert re.search(r"amx\.cluster: rank 1 ended: exit code 3, pid \d+", done.stderr)
    done = wrapped(env, "sh", "-c", "kill -KILL $$")
    assert done.returncode == -9
    assert re.search(r"amx\.cluster: rank 1 ended: signal 9 \(KILL\)", done.stderr)


def test_under_mpirun_every_rank_is_pinned_as_the_layout_says(mpirun, tmp_path):
    layout = rank_layout(2, processes_per_node=2, mode="socket")
    variables = launch_env(layout, {"backend": "gloo", "world_size": 2, "flags": []})
    hostfile = tmp_path / "hosts"
    hostfile.write_text("localhost:2\n")
    done = subprocess.run(
        [mpirun, "-f", str(hostfile), "-n", "2", "-ppn", "2", WRAPPER, sys.executable, "-c", REPORT],
        env=run_env(**variables),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    logged = {int(rank): cpus for rank, _local, cpus in LOG.findall(done.stderr)}
    assert logged == {r["rank"]: r["cpus"] for r in layout["ranks"]} == {0: "0", 1: "1"}
    children = sorted(line.split()[1] for line in done.stdout.splitlines() if line.startswith("child"))
    assert children == ["0", "1"], done.stdout
