# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One run of every measurement, each on fresh containers: the baseline, provision.yml (twice), train.yml (the
scaling sequence, then the everyday launches)."""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import shlex
import shutil
import urllib.parse
from typing import Any, Dict, List, Optional

import yaml
from benchlib.paths import REPO

from .baseline import baseline
from .harness import Cluster, Harness, log
from .package_index import PackageIndex
from .playbooks import ansible_env, launch_path, plan_kept, playbook
from .settings import LAUNCH_PLAN_DIR, MIN_GLOBAL_BATCH, NODE_USER, PROCESSES_PER_NODE
from .wheels import native_profile, wheelhouse_bytes


def train_sizes(nodes: int) -> List[int]:
    """The node counts train.yml runs on, in order: N (the cluster's first train.yml), 1, .., N-1, N again."""
    return [nodes, *range(1, nodes), nodes]


def global_batch(sizes: List[int]) -> int:
    """One global batch every node count divides evenly among its ranks, at least MIN_GLOBAL_BATCH."""
    batch = PROCESSES_PER_NODE * math.lcm(*sizes)
    return batch * math.ceil(MIN_GLOBAL_BATCH / batch)


def measurement_order(run_index: int, skip_baseline: bool) -> List[str]:
    """Baseline and provision alternate which goes first from run to run (run 1: the baseline)."""
    order = ["baseline", "provision"] if run_index % 2 else ["provision", "baseline"]
    return [part for part in order if not (skip_baseline and part == "baseline")]


def everyday_vars(full: Dict[str, Any], run_id: str) -> Dict[str, Any]:
    """The extra vars of an everyday launch: those of the full launch it follows, with a run id of its own."""
    return {**full, "train_run_id": run_id}


def path_said(one_step: Optional[bool], reason: Optional[str]) -> str:
    """The path a train.yml took, as the log says it."""
    if one_step is None:
        return "path not said"
    return "one step" if one_step else f"full path ({reason})"


# pip's settings (environment variables) that choose where packages come from.
PIP_SOURCES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_CONSTRAINT")


def sent_since(now: Dict[str, int], before: Dict[str, int], client: str) -> int:
    """Bytes the package index sent `client` between two readings of its counters."""
    return now.get(client, 0) - before.get(client, 0)


def provision_index_bytes(now: Dict[str, int], before: Dict[str, int], nodes: List[str]) -> Dict[str, int]:
    """What the index sent during a provision.yml: to the nodes (their index check), and to the controller, which
    reaches the index from whichever address of this machine the kernel picks (not always the network's gateway):
    every client that is not one of the nodes."""
    to_nodes = sum(sent_since(now, before, address) for address in nodes)
    return {"controller": sum(now.values()) - sum(before.values()) - to_nodes, "nodes": to_nodes}


class Bench:
    def __init__(self, args: argparse.Namespace, harness: Harness, workdir: pathlib.Path) -> None:
        self.args = args
        self.harness = harness
        self.workdir = workdir
        self.profile = native_profile()
        self.torch_wheel: Optional[pathlib.Path] = None
        # The benchmark's own rate-limited package index (--index-rate), or None: the machine's pip sources.
        self.index: Optional[PackageIndex] = None

    def provision_vars(self, cluster: Cluster) -> Dict[str, Any]:
        """Cold: a wheelhouse cache and pip cache of this cluster's own, so the controller downloads everything;
        with the benchmark's index, from there only."""
        if self.args.wheelhouse == "shared":
            return {}
        pip_args = ["--log", str(cluster.dir / "pip-download.log")]
        index_vars: Dict[str, Any] = {}
        if self.index:
            pip_args += ["--trusted-host", urllib.parse.urlsplit(self.index.url).hostname]
            index_vars = {"torch_stack_index_url": self.index.url}
        return {
            "torch_stack_controller_cache": str(cluster.dir / "wheelhouse"),
            "torch_stack_controller_pip_extra_args": pip_args,
            **index_vars,
        }

    def env(self, cluster: Cluster) -> Dict[str, str]:
        extra = {"PIP_CACHE_DIR": str(cluster.dir / "pip-cache")} if self.args.wheelhouse == "cold" else {}
        env = ansible_env(self.workdir, extra)
        if self.index:
            # The controller's pip reads neither this machine's pip configuration nor its wheel folders: every
            # wheel comes through the index, as it does for the baseline's nodes.
            for name in PIP_SOURCES:
                env.pop(name, None)
            env["PIP_CONFIG_FILE"] = os.devnull
        return env

    def index_sent(self) -> Dict[str, int]:
        return self.index.sent if self.index else {}

    def provision(self, cluster: Cluster, result: Dict[str, Any], twice: bool = True) -> None:
        """provision.yml (and again when `twice`) on the cluster; each figure goes into `result` as it is measured."""
        inventory = cluster.inventory(extra=self.provision_vars(cluster))
        env = self.env(cluster)
        before = self.index_sent()
        pushed_before = cluster.controller_sent()
        first = playbook(REPO / "playbooks" / "provision.yml", inventory, cluster.dir / "provision-1.log", env)
        log(f"  provision.yml on {len(cluster.nodes)} node(s): {first['seconds']:.1f}s, {first['changed']} changed")
        result["first"] = first
        if cluster.links:
            # Bytes out of the controller to each node over SSH: the wheelhouse's copies, the modules, the files.
            pushed = cluster.controller_sent()
            result["controller_sent"] = {n["name"]: sent_since(pushed, pushed_before, n["name"]) for n in cluster.nodes}
            log(f"  out of the controller over SSH: {sum(result['controller_sent'].values()) / 1e6:.1f} MB")
        if self.index:
            addresses = [node["address"] for node in cluster.nodes]
            result["index_sent"] = provision_index_bytes(self.index_sent(), before, addresses)
        if self.args.wheelhouse == "cold":
            result["bytes"] = wheelhouse_bytes(cluster.dir / "wheelhouse", cluster.dir / "pip-download.log")
            log(f"  wheelhouse: {result['bytes']['from_index_bytes'] / 1e6:.1f} MB from the index")
            shutil.rmtree(cluster.dir / "wheelhouse", ignore_errors=True)
            shutil.rmtree(cluster.dir / "pip-cache", ignore_errors=True)
        if twice:
            second = playbook(REPO / "playbooks" / "provision.yml", inventory, cluster.dir / "provision-2.log", env)
            log(f"  second provision.yml: {second['seconds']:.1f}s, {second['changed']} changed")
            result["second"] = second

    def hostfile_of_first(self, cluster: Cluster, size: int, inventory: pathlib.Path, env: Dict[str, str]) -> str:
        """provision.yml wrote ~/hosts for all N nodes; a hostfile of the first `size` nodes (written once)."""
        hostfile = f"/home/{NODE_USER}/hosts-{size}"
        play = cluster.dir / f"hostfile-{size}.yml"
        play.write_text(
            yaml.safe_dump(
                [
                    {
                        "name": f"Write the hostfile of the first {size} node(s)",
                        "hosts": "cluster",
                        "roles": [{"role": "amx.cluster.mpi_hostfile", "mpi_hostfile_path": hostfile}],
                    }
                ],
                sort_keys=False,
            )
        )
        if not (cluster.dir / f"hostfile-{size}.log").exists():
            playbook(play, inventory, cluster.dir / f"hostfile-{size}.log", env)
        return hostfile

    def train_once(
        self, cluster: Cluster, inventory: pathlib.Path, extra: Dict[str, Any], name: str, env: Dict[str, str]
    ) -> Dict[str, Any]:
        """One train.yml: the playbook's figures, the run's run.json, the path it took and whether it kept a plan."""
        played = playbook(REPO / "playbooks" / "train.yml", inventory, cluster.dir / f"{name}.log", env, extra)
        output = pathlib.Path(played["log"]).read_text()
        record = json.loads((cluster.dir / "runs" / extra["train_run_id"] / "run.json").read_text())
        return {
            "played": played,
            "record": record,
            "path": launch_path(output, extra["train_run_id"]),
            "plan": plan_kept(output),
        }

    def forget_launch_plans(self, cluster: Cluster) -> None:
        """Remove the master's one-step launch plans, so that the next train.yml takes the full path whatever ran
        before (the module makes the folder again when it keeps a plan)."""
        cluster.ssh(cluster.nodes[0], f"sudo -n rm -rf -- {shlex.quote(LAUNCH_PLAN_DIR)}", timeout=60)

    def train(self, cluster: Cluster, run_index: int, results: List[Dict[str, Any]]) -> Dict[str, Any]:
        """train.yml on N, 1, .., N-1, then N nodes again, of the provisioned cluster: the same global batch and data
        each time. The first run on N nodes is the cluster's first train.yml (it installs the launcher and makes the
        data set); the last one is a full launch on the unchanged cluster (the master's one-step plans are removed
        before it: the first run on N nodes left one with the same settings). Returns the last run's settings, for
        the everyday launches after it."""
        sizes = train_sizes(len(cluster.nodes))
        batch = global_batch(sizes)
        env = ansible_env(self.workdir)
        settings: Dict[str, Any] = {}
        for attempt, size in enumerate(sizes, start=1):
            inventory = cluster.inventory(size)
            extra: Dict[str, Any] = {
                "train_run_id": f"bench-r{run_index}-{attempt}-{size}n",
                "train_batch_size": batch // (PROCESSES_PER_NODE * size),
            }
            if size < len(cluster.nodes):
                extra["train_hostfile"] = self.hostfile_of_first(cluster, size, inventory, env)
            if attempt == len(sizes):
                self.forget_launch_plans(cluster)
            ran = self.train_once(cluster, inventory, extra, f"train-{attempt}-{size}n", env)
            played, record = ran["played"], ran["record"]
            metrics = json.loads((cluster.dir / "runs" / extra["train_run_id"] / "metrics.json").read_text())
            job = float(record["job"]["seconds"])
            row = {
                "nodes": size,
                "first_on_cluster": attempt == 1,
                "run_id": extra["train_run_id"],
                "world_size": metrics["world_size"],
                "per_device_batch": extra["train_batch_size"],
                "global_batch": metrics["train"]["global_batch_size"],
                "steps": metrics["train"]["steps"],
                "samples_per_second": metrics["train"]["samples_per_second"],
                "epoch_seconds": metrics["train"]["epoch_seconds"],
                "playbook_seconds": played["seconds"],
                "job_seconds": job,
                "script_wall_seconds": metrics.get("wall_seconds"),
                "smoke_seconds": (record.get("smoke") or {}).get("seconds"),
                "launch_overhead_seconds": round(played["seconds"] - job, 2),
                "changed": played["changed"],
                "one_step": ran["path"]["one_step"],
                "launch_reason": ran["path"]["reason"],
                "plan_kept": ran["plan"]["kept"],
                "plan_reason": ran["plan"]["reason"],
                "slowest_tasks": played["slowest_tasks"],
            }
            log(
                f"  train.yml on {size} node(s): {played['seconds']:.1f}s, job {job:.1f}s, overhead "
                f"{row['launch_overhead_seconds']:.1f}s, {row['samples_per_second']} samples/s, "
                f"{path_said(row['one_step'], row['launch_reason'])}"
            )
            results.append(row)
            settings = {"inventory": inventory, "extra": extra}
        return settings

    def everyday(self, cluster: Cluster, run_index: int, full: Dict[str, Any], results: List[Dict[str, Any]]) -> None:
        """train.yml `--everyday-runs` times on the N-node cluster with the settings of the full launch just before
        (the same inventory file and extra vars, a new train_run_id each time), as a user starts the next job: the
        one-step launch, when the plan that full launch kept holds."""
        env = ansible_env(self.workdir)
        nodes = len(cluster.nodes)
        runs = self.args.everyday_runs
        for attempt in range(1, runs + 1):
            extra = everyday_vars(full["extra"], f"bench-r{run_index}-e{attempt}-{nodes}n")
            ran = self.train_once(cluster, full["inventory"], extra, f"everyday-{attempt}-{nodes}n", env)
            played, record = ran["played"], ran["record"]
            job = float(record["job"]["seconds"])
            row = {
                "nodes": nodes,
                "run_id": extra["train_run_id"],
                "settings_of": full["extra"]["train_run_id"],
                "one_step": ran["path"]["one_step"],
                "launch_reason": ran["path"]["reason"],
                "playbook_seconds": played["seconds"],
                "job_seconds": job,
                "smoke_seconds": (record.get("smoke") or {}).get("seconds"),
                "launch_overhead_seconds": round(played["seconds"] - job, 2),
                "changed": played["changed"],
                "slowest_tasks": played["slowest_tasks"],
            }
            log(
                f"  everyday train.yml {attempt}/{runs} on {nodes} node(s): {played['seconds']:.1f}s, job {job:.1f}s, "
                f"overhead {row['launch_overhead_seconds']:.1f}s, {path_said(row['one_step'], row['launch_reason'])}"
            )
            results.append(row)

    def one_run(self, index: int, result: Dict[str, Any]) -> None:
        nodes = self.args.nodes
        for part in measurement_order(index, self.args.skip_baseline):
            cluster = self.harness.cluster(f"r{index}{part[0]}", nodes)
            try:
                log(f"run {index}: {part} on {nodes} fresh node(s)")
                if part == "baseline":
                    assert self.torch_wheel is not None
                    before = self.index_sent()
                    index_url = self.index.url if self.index else None
                    result["baseline"] = baseline(cluster, self.torch_wheel, self.profile, index_url)
                    if self.index:
                        now = self.index_sent()
                        for node in result["baseline"]["nodes"]:
                            address = next(n["address"] for n in cluster.nodes if n["name"] == node["node"])
                            node["index_sent"] = sent_since(now, before, address)
                    log(f"  baseline: {result['baseline']['seconds']:.1f}s")
                else:
                    self.provision(cluster, result.setdefault("provision", {}))
                    if not self.args.skip_train:
                        full = self.train(cluster, index, result.setdefault("train", []))
                        if self.args.everyday_runs:
                            self.everyday(cluster, index, full, result.setdefault("everyday", []))
            finally:
                cluster.remove()

    def one_node_bytes(self, result: Dict[str, Any]) -> None:
        cluster = self.harness.cluster("bytes1", 1)
        try:
            log("provision.yml on 1 fresh node (cold wheelhouse), for the bytes on 1 node")
            self.provision(cluster, result, twice=False)
        finally:
            cluster.remove()
