# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bring-up, re-run, launch overhead and scaling of the collection on container clusters made by the test harness.

Each run builds fresh Debian containers with tests/cluster/ (the scripts of extensions/molecule/shared/create.yml), on a
network and label of this benchmark's own (amx-bench-<id>), and measures:

1. bring-up of N nodes by playbooks/provision.yml, against a plain sequential baseline on other fresh containers:
   node by node over SSH, apt-get install the tcmalloc package, python3 -m venv, pip install the native profile's
   pins from the package index (PIP_CERT = the host's CA bundle copied in) and the same torch wheel the controller's
   pip finds on local disk, copied to each node first (nodes cannot see the host's wheel folder);
2. what the controller downloads for the wheelhouse, on 1 and N nodes (read from pip's log and the wheel sizes);
3. a second provision.yml run: wall time and changed count;
4. train.yml's launch overhead: its wall time minus the training job's own time (run.json), for a full launch and
   for the everyday launch (the same settings again with a new run id: the one-step launch), --everyday-runs times;
5. training throughput on 1..N nodes with the same global work, put through amx.cluster.scaling_report.

With --index-rate RATE, every wheel, torch included, comes instead from a package index of the benchmark's own on
this machine, RATE bytes per second per client (bringup/package_index.py), for the controller and the baseline's
nodes alike; with --node-cpus, every node is capped at that many CPUs. Together they model separate machines.

Baseline and provision alternate in order from run to run; medians and ratios go to bench/results/<date>/ as
bringup.json and bringup.md (plus scaling.json, scaling.md, scaling.png). Every container and network is removed
at the end, also after a failure or Ctrl-C.

    .venv/bin/python bench/bringup_bench.py                    # 3 nodes, 3 runs
    .venv/bin/python bench/bringup_bench.py --nodes 2 --runs 1 --skip-baseline
    .venv/bin/python bench/bringup_bench.py --smoke --out /tmp/x   # 1 node, 1 run: provision twice, nothing else
"""
# The command line only: the parts live in bench/bringup/ (one module per concern, listed in its __init__.py) and
# bench/benchlib/ (what every benchmark here shares).

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Any, Dict, Iterator, List

from benchlib.machine import load_average
from benchlib.paths import RESULTS, require_venv_tools
from benchlib.rate_limit import parse_rate
from benchlib.results import dated_folder, write_report
from bringup.harness import Harness, log
from bringup.measure import Bench
from bringup.node_resources import cpu_cap_options
from bringup.package_index import PackageIndex
from bringup.report import machine, markdown, notes, scaling_report
from bringup.settings import EVERYDAY_RUNS, INDEX_CACHE, PROFILE
from bringup.summary import summarise
from bringup.wheels import find_torch_wheel, index_folder


@contextlib.contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM (a CI time-out, kill) unwinds like Ctrl-C, so the containers are removed."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def parse_args(argv: List[str]) -> argparse.Namespace:
    """The command line (bench/README.md lists it); --smoke's settings applied, the wheelhouse mode resolved."""
    parser = argparse.ArgumentParser(
        prog="bringup_bench.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, help="nodes of the cluster (default: 3; 1 with --smoke)")
    parser.add_argument("--runs", type=int, default=5, help="runs of every measurement (default: 5)")
    parser.add_argument("--skip-baseline", action="store_true", help="no sequential baseline (no ratio)")
    parser.add_argument("--skip-train", action="store_true", help="no train.yml (no launch overhead, no scaling)")
    parser.add_argument(
        "--everyday-runs",
        type=int,
        default=EVERYDAY_RUNS,
        metavar="K",
        help="everyday launches per run after the scaling sequence: train.yml on N nodes with the settings of its "
        f"last full launch and a new run id (the one-step launch); 0 skips them (default: {EVERYDAY_RUNS})",
    )
    parser.add_argument(
        "--wheelhouse",
        choices=["cold", "shared"],
        default=None,
        help="cold: every provision downloads into a wheelhouse and pip cache of its own (bytes measured; default); "
        "shared: the user's controller wheelhouse (~/.cache/amx.cluster/wheelhouse) as the role uses it by default",
    )
    parser.add_argument("--torch-wheel", type=pathlib.Path, help="torch wheel for the baseline (default: pip's)")
    parser.add_argument("--out", type=pathlib.Path, default=RESULTS, help="results folder")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest end-to-end check: 1 node (or --nodes), 1 run, provision.yml twice on the shared "
        "wheelhouse; no baseline, no bytes, no train.yml, no scaling report",
    )
    parser.add_argument(
        "--node-cpus",
        type=float,
        help="cap every container node at this many CPUs (docker run --cpus; default: no cap, all share one pool)",
    )
    parser.add_argument(
        "--index-rate",
        metavar="RATE",
        help="serve every wheel, torch included, from a package index of the benchmark's own on this machine at RATE "
        "per client (e.g. 25MB: each node and the controller get a link of their own), to the controller and to "
        "the baseline's nodes alike; needs the cold wheelhouse (default: the machine's pip sources)",
    )
    parser.add_argument(
        "--controller-rate",
        metavar="RATE",
        help="pace everything the controller sends each node, and gets back, at RATE each way per node (SSH through "
        "a relay of the benchmark's own), as a controller on a link of its own would (default: --index-rate's)",
    )
    parser.add_argument("--keep-workdir", action="store_true", help="keep the logs and inventories (path printed)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.nodes = 1 if args.nodes is None else args.nodes
        args.runs, args.skip_baseline, args.skip_train = 1, True, True
        args.wheelhouse = args.wheelhouse or "shared"
    args.wheelhouse = args.wheelhouse or "cold"
    args.nodes = 3 if args.nodes is None else args.nodes
    if args.nodes < 1 or args.runs < 1:
        parser.error("--nodes and --runs must be 1 or more")
    if args.everyday_runs < 0:
        parser.error("--everyday-runs must be 0 or more (0 skips the everyday launches)")
    try:
        args.node_options = cpu_cap_options(args.node_cpus)
        args.index_rate_bytes = parse_rate(args.index_rate) if args.index_rate else None
        controller_rate = args.controller_rate or args.index_rate
        args.controller_rate_bytes = parse_rate(controller_rate) if controller_rate else None
    except ValueError as error:
        parser.error(str(error))
    if args.index_rate and args.wheelhouse != "cold":
        parser.error(
            "--index-rate measures downloads: it needs --wheelhouse cold (a shared wheelhouse downloads nothing)"
        )
    return args


def skipped_parts(args: argparse.Namespace) -> List[str]:
    """What this run leaves out, as the report says it."""
    skipped = []
    if args.skip_baseline:
        skipped.append("the sequential baseline (no provision/baseline ratio)")
    if args.skip_train:
        skipped.append("train.yml (no launch overhead, no throughput, no scaling report)")
    elif args.everyday_runs == 0:
        skipped.append("the everyday launches (--everyday-runs 0: no everyday launch overhead)")
    if args.wheelhouse == "shared":
        skipped.append("the bytes fetched (the shared wheelhouse may already hold the wheels: nothing is downloaded)")
    elif args.nodes == 1:
        skipped.append("the separate 1-node bytes run (the cluster has 1 node)")
    return skipped


def main() -> int:
    args = parse_args(sys.argv[1:])
    require_venv_tools(["ansible-playbook"])
    skipped = skipped_parts(args)

    prefix = f"amx-bench-{secrets.token_hex(3)}"
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="bringup-bench-"))
    (workdir / "cp").mkdir()
    harness = Harness(prefix, workdir, args.node_options, args.controller_rate_bytes)
    load_before = load_average()
    command = "python bench/bringup_bench.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    log(f"{prefix}: {args.nodes} node(s), {args.runs} run(s), wheelhouse {args.wheelhouse}, work folder {workdir}")
    runs: List[Dict[str, Any]] = []
    one_node: Dict[str, Any] = {}
    error = ""
    bench = Bench(args, harness, workdir)
    index_info: Dict[str, Any] = {}
    try:
        with terminated_as_interrupt():
            if not args.skip_baseline or args.index_rate:
                bench.torch_wheel = args.torch_wheel or find_torch_wheel(bench.profile["packages"]["torch"])
            harness.setup()
            if args.index_rate:
                assert bench.torch_wheel is not None
                folder = index_folder(bench.profile, bench.torch_wheel, INDEX_CACHE)
                bench.index = PackageIndex(folder, args.index_rate_bytes, host=harness.gateway())
                wheels = sorted(folder.glob("*.whl"))
                index_info = {
                    "rate_bytes_per_second": args.index_rate_bytes,
                    "wheels": len(wheels),
                    "wheel_bytes": sum(w.stat().st_size for w in wheels),
                }
                log(f"package index {bench.index.url}: {len(wheels)} wheels, {args.index_rate} per client")
            for index in range(1, args.runs + 1):
                runs.append({"run": index})
                bench.one_run(index, runs[-1])
            if args.wheelhouse == "cold" and args.nodes > 1:
                bench.one_node_bytes(one_node)
    except (RuntimeError, subprocess.TimeoutExpired, KeyboardInterrupt) as exc:
        error = str(exc) or type(exc).__name__
        print(f"bringup_bench: stopped: {error}", file=sys.stderr)
    finally:
        if bench.index:
            bench.index.close()
        harness.remove()
        left = harness.containers()
        if left:
            print(f"bringup_bench: containers left behind: {' '.join(left)}", file=sys.stderr)
    if error:
        print(f"bringup_bench: logs in {workdir}", file=sys.stderr)
    if not runs or "first" not in runs[0].get("provision", {}):
        return 2

    today, out = dated_folder(args.out)
    report: Dict[str, Any] = {
        "date": today,
        "command": command,
        "nodes": args.nodes,
        "runs": args.runs,
        "smoke": args.smoke,
        "wheelhouse": args.wheelhouse,
        "node_cpus": args.node_cpus,
        "index": index_info or None,
        "controller_rate_bytes_per_second": args.controller_rate_bytes,
        "everyday_runs": 0 if args.skip_train else args.everyday_runs,
        "profile": {"name": PROFILE, "packages": bench.profile["packages"]},
        "torch_wheel": str(bench.torch_wheel) if bench.torch_wheel else None,
        "summary": summarise(args.nodes, runs, one_node),
        "skipped": skipped,
        "notes": notes(bool(index_info)),
        "machine": machine(load_before),
        "measurements": runs,
        "one_node_provision": one_node or None,
        "error": error or None,
    }
    if "scaling" in report["summary"] and not error:
        title = f"qa_finetune (tiny), {args.nodes} containers sharing {os.cpu_count()} CPUs"
        report["scaling_report"] = scaling_report(workdir, report["summary"]["scaling"], out, title)
    write_report(out, "bringup", report, markdown(report))
    for name, target in report["summary"]["targets"].items():
        print(f"{'meets' if target['met'] else 'misses'} {name}: {target['measured']} (target {target['target']})")
    one_step = report["summary"].get("everyday_one_step")
    if one_step:
        print(f"everyday launches in one step: {one_step['one_step']} of {one_step['runs']}")
        for run in one_step["full_path"]:
            print(f"  {run['run_id']} took the full path: {run['reason'] or 'the output names no path'}")
    if error:
        return 2
    if args.keep_workdir:
        print(f"work folder kept: {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.smoke:
        return 0
    return 0 if all(t["met"] for t in report["summary"]["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
