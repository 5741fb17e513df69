# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How the everyday launch's overhead grows with the cluster: train.yml on 1, 3, 4 and 16 (--sizes) container nodes.

Light nodes with a pre-built stack: one node is provisioned and trained on once (the stack, MPICH, the tiny data
set), committed to an image, and the largest cluster is started from that image and provisioned (so every node
has its own SSH mesh, hostfile and stamps). Then for each size, on the first N nodes of that cluster: a full
train.yml (the master's one-step plans removed first), then --runs everyday launches with its settings and a new run
id. The overhead is train.yml's wall time minus the job's own (run.json). Reports: bench/results/<date>/launch.json,
launch.md and launch.png, with each everyday launch's phases (run.json timing); the targets (<= 2.0 s on 3 nodes,
<= 3.5 s on 16, medians) are judged in them, and in the exit status.

    .venv/bin/python bench/launch_bench.py                         # sizes 1,3,4,16, 3 everyday launches each
    .venv/bin/python bench/launch_bench.py --sizes 1,3 --runs 1    # the smallest that says something
"""

from __future__ import annotations

import argparse
import os
import pathlib
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

from benchlib.machine import load_average
from benchlib.paths import REPO, RESULTS, require_venv_tools
from benchlib.results import dated_folder, write_report
from bringup.harness import Harness, log
from bringup.measure import Bench, everyday_vars
from bringup.playbooks import ansible_env, playbook
from bringup.report import machine
from bringup.sweep import parse_sizes, plot, summarise_sweep, sweep_markdown
from bringup_bench import terminated_as_interrupt

PROCESSES_PER_NODE = 1  # one rank per node: 16 nodes are 16 ranks on this machine's cores
SWEEP_VARS = {"train_processes_per_node": PROCESSES_PER_NODE, "train_epochs": 1, "train_max_steps": 4}
NOTES = [
    "Nodes: containers of tests/cluster/ (Debian bookworm, sshd, the sudo user amx, real SSH with pinned host keys), "
    "all from one image committed after a provision.yml and a train.yml on a single node: the native profile's "
    "stack, MPICH and the tiny data set are in it. The cluster of the largest size is started from it and "
    "provisioned; each smaller size is its first N nodes, with an MPI hostfile of those (amx.cluster.mpi_hostfile, "
    "train_hostfile).",
    "For every size: a full train.yml (the master's one-step plans removed before it, so it runs every role, gate and "
    "the collective smoke test), then the everyday launches: train.yml with the same inventory and extra vars and a "
    "new train_run_id each, as a user starts the next job; the one-step launch when the full launch's plan holds. "
    "The path comes from train.yml's standard error.",
    "Overhead: train.yml's wall time minus run.json's job.seconds (mpirun's start to its end on the master). The "
    "everyday targets are judged on the median at each size.",
    "ansible-playbook runs with as many forks as the largest cluster has nodes (ANSIBLE_FORKS), as a user of such a "
    "cluster sets it; the one-step launch is one task on the master, which checks the workers itself.",
    "All containers share this machine's CPUs: the job's time grows with the ranks, and the launch's own work on "
    "the nodes competes with it for the same cores; separate machines would not.",
]


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="launch_bench.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1,3,4,16", help="node counts, comma-separated (default: 1,3,4,16)")
    parser.add_argument("--runs", type=int, default=3, help="everyday launches per size (default: 3)")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS, help="results folder")
    parser.add_argument("--keep-workdir", action="store_true", help="keep the logs and inventories (path printed)")
    args = parser.parse_args(argv)
    try:
        args.size_list = parse_sizes(args.sizes)
    except ValueError as error:
        parser.error(str(error))
    if args.runs < 1:
        parser.error("--runs must be 1 or more")
    # What Bench reads of a bring-up benchmark's options: the user's shared wheelhouse, as an everyday run has it.
    args.wheelhouse, args.everyday_runs = "shared", args.runs
    return args


def stack_image(harness: Harness, setup: Dict[str, Any]) -> str:
    """One node provisioned and trained on once, committed: the image every node of the sweep starts from."""
    cluster = harness.cluster("stack", 1)
    try:
        env = ansible_env(harness.workdir)
        inventory = cluster.inventory(extra=SWEEP_VARS)
        log("stack image: provision.yml and train.yml on one node")
        provisioned = playbook(REPO / "playbooks" / "provision.yml", inventory, cluster.dir / "provision.log", env)
        trained = playbook(
            REPO / "playbooks" / "train.yml", inventory, cluster.dir / "train.log", env, {"train_run_id": "stack"}
        )
        setup["image_seconds"] = round(provisioned["seconds"] + trained["seconds"], 2)
        return harness.commit(cluster.nodes[0], f"{harness.prefix}-stack")
    finally:
        cluster.remove()


def sweep(harness: Harness, bench: Bench, args: argparse.Namespace, rows: List[Dict[str, Any]], setup: Dict) -> None:
    largest = args.size_list[-1]
    image = stack_image(harness, setup)
    cluster = harness.cluster("sweep", largest, image=image)
    env = ansible_env(harness.workdir, {"ANSIBLE_FORKS": str(largest)})
    log(f"provision.yml on {largest} node(s) from the stack image")
    provisioned = playbook(
        REPO / "playbooks" / "provision.yml", cluster.inventory(extra=SWEEP_VARS), cluster.dir / "provision.log", env
    )
    setup.update(provision_seconds=provisioned["seconds"], provision_changed=provisioned["changed"])
    for size in args.size_list:
        inventory = cluster.inventory(size, extra=SWEEP_VARS)
        extra: Dict[str, Any] = {"train_run_id": f"sweep-{size}n-full"}
        if size < largest:
            extra["train_hostfile"] = bench.hostfile_of_first(cluster, size, inventory, env)
        bench.forget_launch_plans(cluster)
        launches = [("full", extra)] + [
            ("everyday", everyday_vars(extra, f"sweep-{size}n-e{attempt}")) for attempt in range(1, args.runs + 1)
        ]
        for number, (kind, settings) in enumerate(launches):
            ran = bench.train_once(cluster, inventory, settings, settings["train_run_id"], env)
            job = float(ran["record"]["job"]["seconds"])
            row = {
                "nodes": size,
                "kind": kind,
                "first_of_kind": number <= 1,
                "run_id": settings["train_run_id"],
                "one_step": ran["path"]["one_step"],
                "launch_reason": ran["path"]["reason"],
                "playbook_seconds": ran["played"]["seconds"],
                "job_seconds": job,
                "launch_overhead_seconds": round(ran["played"]["seconds"] - job, 2),
                "phases": (ran["record"].get("timing") or {}).get("phases"),
                "changed": ran["played"]["changed"],
                "slowest_tasks": ran["played"]["slowest_tasks"],
            }
            rows.append(row)
            log(
                f"  {kind} train.yml on {size} node(s): {row['playbook_seconds']:.1f}s, job {job:.1f}s, overhead "
                f"{row['launch_overhead_seconds']:.1f}s, {'one step' if row['one_step'] else 'full path'}"
            )


def main() -> int:
    args = parse_args(sys.argv[1:])
    require_venv_tools(["ansible-playbook"])
    prefix = f"amx-bench-{secrets.token_hex(3)}"
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="launch-bench-"))
    (workdir / "cp").mkdir()
    harness = Harness(prefix, workdir)
    bench = Bench(args, harness, workdir)
    load_before = load_average()
    command = "python bench/launch_bench.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    log(f"{prefix}: sizes {args.size_list}, {args.runs} everyday launch(es) each, work folder {workdir}")
    rows: List[Dict[str, Any]] = []
    setup: Dict[str, Any] = {}
    error = ""
    try:
        with terminated_as_interrupt():
            harness.setup()
            sweep(harness, bench, args, rows, setup)
    except (RuntimeError, subprocess.TimeoutExpired, KeyboardInterrupt) as exc:
        error = str(exc) or type(exc).__name__
        print(f"launch_bench: stopped: {error}", file=sys.stderr)
    finally:
        harness.remove()
    if not rows:
        print(f"launch_bench: nothing measured; logs in {workdir}", file=sys.stderr)
        return 2
    today, out = dated_folder(args.out)
    summary = summarise_sweep(rows)
    report: Dict[str, Any] = {
        "date": today,
        "command": command,
        "sizes": args.size_list,
        "everyday_runs": args.runs,
        "processes_per_node": PROCESSES_PER_NODE,
        "node_image": "the test harness's containers, each from one image with the stack pre-built",
        "settings": SWEEP_VARS,
        "summary": summary,
        "setup": setup,
        "notes": NOTES,
        "machine": machine(load_before),
        "measurements": rows,
        "error": error or None,
    }
    plot(summary, str(out / "launch.png"), f"train.yml overhead by cluster size, {os.cpu_count()} shared CPUs")
    write_report(out, "launch", report, sweep_markdown(report))
    for name, target in summary["targets"].items():
        print(f"{'meets' if target['met'] else 'misses'} {name}: {target['measured']} (target {target['target']})")
    if error:
        print(f"launch_bench: logs in {workdir}", file=sys.stderr)
        return 2
    if args.keep_workdir:
        print(f"work folder kept: {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(t["met"] for t in summary["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
