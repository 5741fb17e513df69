# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bring-up, re-run, launch overhead and scaling of the collection on container clusters made by the test harness.

Each run builds fresh Debian containers with tests/cluster/ (the scripts molecule/shared/create.yml calls), on a
network and label of this benchmark's own (amx-bench-<id>), and measures:

1. bring-up of N nodes by playbooks/provision.yml, against a plain sequential baseline on other fresh containers:
   node by node over SSH, apt-get install the tcmalloc package, python3 -m venv, pip install the native profile's
   pins from the package index (PIP_CERT = the host's CA bundle copied in) and the same torch wheel the controller's
   pip finds on local disk, copied to each node first (nodes cannot see the host's wheel folder);
2. what the controller downloads for the wheelhouse, on 1 and N nodes (read from pip's log and the wheel sizes);
3. a second provision.yml run: wall time and changed count;
4. train.yml's launch overhead: its wall time minus the training job's own time (run.json);
5. training throughput on 1..N nodes with the same global work, put through amx.cluster.scaling_report.

Baseline and provision alternate in order from run to run; medians and ratios go to bench/results/<date>/ as
bringup.json and bringup.md (plus scaling.json, scaling.md, scaling.png). Every container and network is removed
at the end, also after a failure or Ctrl-C.

    .venv/bin/python bench/bringup_bench.py                    # 3 nodes, 3 runs
    .venv/bin/python bench/bringup_bench.py --nodes 2 --runs 1 --skip-baseline
    .venv/bin/python bench/bringup_bench.py --smoke --out /tmp/x   # 1 node, 1 run: provision twice, nothing else
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import glob
import json
import math
import os
import pathlib
import platform
import re
import secrets
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
from typing import Any, Dict, Iterator, List, Optional, Sequence

import yaml

REPO = pathlib.Path(__file__).resolve().parents[1]
VENV_BIN = pathlib.Path(sys.executable).parent
TOOLS = REPO / "tests" / "cluster"
PROFILES = REPO / "roles" / "torch_stack" / "vars" / "profiles.yml"
PROFILE = "native"
NODE_USER = "amx"  # the sudo user of the node image (tests/cluster/node-image.sh)
HOST_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
TCMALLOC_PACKAGE = "libgoogle-perftools-dev"  # what the recipe installs (roles/tcmalloc/vars/Debian.yml)
PROCESSES_PER_NODE = 2  # train_processes_per_node's default
TRAIN_EPOCHS = 2
MIN_GLOBAL_BATCH = 48

TARGET_PROVISION_RATIO = 0.5  # provision.yml at most half the baseline's time
TARGET_RERUN_SHARE = 0.10  # a second run under 10% of the first, with 0 changed
TARGET_LAUNCH_OVERHEAD = 15.0  # seconds

# The group_vars a container cluster needs (molecule/cluster/molecule.yml).
CLUSTER_VARS: Dict[str, Any] = {
    "amx_check_required": False,
    "torch_stack_profile": PROFILE,
    "torch_stack_extra_index_urls": [],
    "hf_examples_enabled": False,
    "train_require_amx": False,
    "train_epochs": TRAIN_EPOCHS,
}

RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)
PROFILE_TASK = re.compile(r"^(.+?) -+ (\d+\.\d+)s$", re.MULTILINE)
PIP_ADDED = re.compile(r"Added .*? from ((?:https?|file):\S+?)(?:#\S*)?(?: \(from .*\))? to build tracker")
PIP_DOWNLOADING = re.compile(r"Downloading (\S+) \(([\d.]+) (kB|MB|GB|bytes)\)")
UNITS = {"bytes": 1, "kB": 1000, "MB": 1000**2, "GB": 1000**3}


def log(message: str) -> None:
    print(f"[{datetime.datetime.now(datetime.timezone.utc):%H:%M:%S}] {message}", flush=True)


def run(argv: Sequence[str], timeout: float = 3600, **kwargs: Any) -> subprocess.CompletedProcess:
    """A command that must work; its output in the error when it does not."""
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False, **kwargs)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed (rc {proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc


# ------------------------------------------------------------------------------------------------ containers


class Harness:
    """Containers of this benchmark: one network and one label (amx-cluster-test=<prefix>), removed at the end."""

    def __init__(self, prefix: str, workdir: pathlib.Path) -> None:
        self.prefix = prefix
        self.workdir = workdir
        self.key = workdir / "id_ed25519"
        self.image = ""

    def setup(self) -> None:
        run(["bash", str(TOOLS / "docker-engine.sh")], timeout=600)
        self.image = run(["bash", str(TOOLS / "node-image.sh")], timeout=900).stdout.strip().splitlines()[-1]
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", self.prefix, "-f", str(self.key)])
        run(["docker", "network", "create", "--label", f"amx-cluster-test={self.prefix}", self.prefix])

    def cluster(self, name: str, size: int) -> Cluster:
        nodes = []
        for index in range(size):
            node = f"{self.prefix}-{name}-{'master' if index == 0 else f'node{index}'}"
            started = run(
                ["bash", str(TOOLS / "start-node.sh"), node, self.prefix, self.image, self.prefix, f"{self.key}.pub"],
                timeout=300,
            )
            nodes.append(json.loads(started.stdout.strip().splitlines()[-1]))
        cluster = Cluster(name, nodes, self)
        cluster.wait_for_ssh()
        return cluster

    def containers(self) -> List[str]:
        """Ids of every container of this benchmark, running or not."""
        return subprocess.run(
            ["docker", "ps", "-aq", "--filter", f"label=amx-cluster-test={self.prefix}"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()

    def remove(self, names: Optional[Sequence[str]] = None) -> None:
        """The named containers, or (no names) every container and the network of this benchmark."""
        found = self.containers() if names is None else list(names)
        if found:
            subprocess.run(["docker", "rm", "-f", *found], capture_output=True, check=False)
        if names is None:
            subprocess.run(["docker", "network", "rm", self.prefix], capture_output=True, check=False)


class Cluster:
    """N running nodes (master first), an inventory of them, and SSH options that pin their host keys."""

    def __init__(self, name: str, nodes: List[Dict[str, Any]], harness: Harness) -> None:
        self.name = name
        self.nodes = nodes
        self.harness = harness
        self.dir = harness.workdir / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.known_hosts = self.dir / "known_hosts"
        self.known_hosts.write_text("".join(f"{n['address']} {n['host_key']}\n" for n in nodes))
        self.ssh_options = [
            "-i",
            str(harness.key),
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "BatchMode=yes",
        ]

    def inventory(self, size: Optional[int] = None, extra: Optional[Dict[str, Any]] = None) -> pathlib.Path:
        """An inventory of the first `size` nodes (all by default) with the container cluster's group_vars."""
        nodes = self.nodes[: size or len(self.nodes)]
        host = {n["name"]: {"ansible_host": n["address"]} for n in nodes}
        data = {
            "cluster": {
                "children": {
                    "master": {"hosts": {nodes[0]["name"]: host[nodes[0]["name"]]}},
                    "workers": {"hosts": {n["name"]: host[n["name"]] for n in nodes[1:]}},
                },
                "vars": {
                    "ansible_user": NODE_USER,
                    "ansible_ssh_private_key_file": str(self.harness.key),
                    "ansible_ssh_common_args": shlex.join(self.ssh_options[2:]),
                    **CLUSTER_VARS,
                    "train_results_dir": str(self.dir / "runs"),
                    **(extra or {}),
                },
            }
        }
        path = self.dir / f"inventory-{len(nodes)}.yml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def ssh(self, node: Dict[str, Any], command: str, timeout: float = 3600) -> subprocess.CompletedProcess:
        return run(["ssh", *self.ssh_options, f"{NODE_USER}@{node['address']}", command], timeout=timeout)

    def scp(self, node: Dict[str, Any], source: str, dest: str) -> None:
        run(["scp", "-q", *self.ssh_options, source, f"{NODE_USER}@{node['address']}:{dest}"], timeout=900)

    def wait_for_ssh(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            while True:
                try:
                    self.ssh(node, "true", timeout=15)
                    break
                except (RuntimeError, subprocess.TimeoutExpired):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)

    def remove(self) -> None:
        self.harness.remove([n["name"] for n in self.nodes])


# ------------------------------------------------------------------------------------------------ playbooks


def ansible_env(workdir: pathlib.Path, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_HOST_KEY_CHECKING="True",
        # Control sockets of this benchmark only: a container's address can come back in the next cluster.
        ANSIBLE_SSH_CONTROL_PATH_DIR=str(workdir / "cp"),
        ANSIBLE_CALLBACKS_ENABLED="ansible.posix.profile_tasks",
        PROFILE_TASKS_TASK_OUTPUT_LIMIT="8",
    )
    env.update(extra or {})
    return env


def playbook(
    path: pathlib.Path,
    inventory: pathlib.Path,
    logfile: pathlib.Path,
    env: Dict[str, str],
    extra_vars: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """Run ansible-playbook; wall seconds, changed count (all hosts), the slowest tasks. Fails loudly."""
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", str(inventory), str(path)]
    if extra_vars:
        argv += ["-e", json.dumps(extra_vars)]
    # The output goes to the log as it comes (tail -f it to follow a run); stderr follows stdout there.
    with open(logfile, "w") as handle:
        started = time.monotonic()
        rc = subprocess.run(
            argv, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT, timeout=7200, check=False
        ).returncode
        seconds = time.monotonic() - started
    output = logfile.read_text()
    recap = {m[0]: {"ok": int(m[1]), "changed": int(m[2]), "unreachable": int(m[3]), "failed": int(m[4])}
             for m in RECAP.findall(output)}  # fmt: skip
    if rc != 0 or not recap:
        raise RuntimeError(f"{path.name} failed (rc {rc}, log {logfile}):\n{output[-4000:].strip()}")
    slowest = [{"task": t.strip(), "seconds": float(s)} for t, s in PROFILE_TASK.findall(output)]
    return {
        "seconds": round(seconds, 2),
        "changed": sum(h["changed"] for h in recap.values()),
        "recap": recap,
        "slowest_tasks": slowest,
        "log": str(logfile),
    }


# ------------------------------------------------------------------------------------------------ pip


def native_profile() -> Dict[str, Any]:
    return yaml.safe_load(PROFILES.read_text())["__torch_stack_profiles"][PROFILE]


def find_torch_wheel(version: str) -> pathlib.Path:
    """The torch wheel the controller's pip takes from local disk: in a find-links folder of its configuration."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    ).stdout
    folders: List[str] = []
    for line in listed.splitlines():
        if "find-links" in line:
            folders += line.split("=", 1)[1].strip().strip("'\"").split()
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for folder in folders:
        found = sorted(glob.glob(os.path.join(folder, f"torch-{version}*-{tag}-{tag}-*.whl")))
        if found:
            return pathlib.Path(found[0])
    raise SystemExit(
        f"no torch {version} wheel in pip's find-links folders ({', '.join(folders) or 'none configured'}): "
        "give one with --torch-wheel"
    )


def wheelhouse_bytes(cache: pathlib.Path, pip_log: pathlib.Path) -> Dict[str, Any]:
    """What the controller fetched for the wheelhouse: each wheel's size (from the tar) by where pip took it from."""
    tars = sorted(cache.glob("*/wheels.tar"))
    if len(tars) != 1 or not pip_log.exists():
        raise RuntimeError(f"expected one wheelhouse under {cache} and pip's log {pip_log}")
    with tarfile.open(tars[0]) as tar:
        sizes = {pathlib.PurePosixPath(m.name).name: m.size for m in tar.getmembers() if m.isfile()}
    return {**classify_wheels(sizes, pip_log.read_text()), "tar_bytes": tars[0].stat().st_size}


def classify_wheels(sizes: Dict[str, int], pip_log: str) -> Dict[str, Any]:
    """Wheel sizes by source, from pip's `Added <requirement> from <url> ... to build tracker` lines (https: the
    package index; file: a folder on this machine)."""
    sources = {urllib.parse.unquote(url.rsplit("/", 1)[-1]): url for url in PIP_ADDED.findall(pip_log)}
    by_source = {"index": 0, "local_disk": 0, "unknown": 0}
    files = []
    for wheel, size in sorted(sizes.items()):
        url = sources.get(wheel, "")
        kind = "index" if url.startswith("https://") else "local_disk" if url.startswith("file:") else "unknown"
        by_source[kind] += size
        files.append({"wheel": wheel, "bytes": size, "source": kind})
    return {
        "wheels": len(sizes),
        "wheelhouse_bytes": sum(sizes.values()),
        "from_index_bytes": by_source["index"],
        "from_local_disk_bytes": by_source["local_disk"],
        "unknown_source_bytes": by_source["unknown"],
        "index_pages_fetched": len(re.findall(r"Fetched page https://", pip_log)),
        "files": files,
    }


def baseline(cluster: Cluster, torch_wheel: pathlib.Path, profile: Dict[str, Any]) -> Dict[str, Any]:
    """The recipe's steps by hand, node after node over SSH; seconds per step and node, bytes pip downloaded."""
    pins = [f"{name}=={version}" for name, version in profile["packages"].items() if name != "torch"]
    remote_wheel = f"/tmp/{torch_wheel.name}"
    pip_env = "PIP_CERT=/tmp/host-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off"
    steps = [
        ("copy_ca_and_torch_wheel", None),
        (
            "apt_tcmalloc",
            f"sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive "
            f"apt-get install -y -qq {TCMALLOC_PACKAGE} python3-venv >/dev/null",
        ),
        ("venv", "python3 -m venv ~/bench-venv"),
        (
            "pip_install",
            f"{pip_env} ~/bench-venv/bin/pip install --log /tmp/pip.log -q {shlex.quote(remote_wheel)} "
            + " ".join(shlex.quote(p) for p in pins),
        ),
        ("import_check", "~/bench-venv/bin/python -c 'import torch, transformers, accelerate, datasets'"),
    ]
    per_node = []
    started = time.monotonic()
    for node in cluster.nodes:
        times: Dict[str, float] = {}
        for step, command in steps:
            t0 = time.monotonic()
            if command is None:
                cluster.scp(node, HOST_CA_BUNDLE, "/tmp/host-ca.crt")
                cluster.scp(node, str(torch_wheel), remote_wheel)
            else:
                cluster.ssh(node, command)
            times[step] = round(time.monotonic() - t0, 2)
        pip_log = cluster.ssh(node, "cat /tmp/pip.log").stdout
        downloaded = sum(float(n) * UNITS[u] for _w, n, u in PIP_DOWNLOADING.findall(pip_log))
        per_node.append({"node": node["name"], "steps": times, "index_bytes_approx": int(downloaded)})
        log(f"  baseline {node['name']}: " + ", ".join(f"{k} {v:.0f}s" for k, v in times.items()))
    return {"seconds": round(time.monotonic() - started, 2), "nodes": per_node}


# ------------------------------------------------------------------------------------------------ measurements


class Bench:
    def __init__(self, args: argparse.Namespace, harness: Harness, workdir: pathlib.Path) -> None:
        self.args = args
        self.harness = harness
        self.workdir = workdir
        self.profile = native_profile()
        self.torch_wheel: Optional[pathlib.Path] = None

    def provision_vars(self, cluster: Cluster) -> Dict[str, Any]:
        """Cold: a wheelhouse cache and pip cache of this cluster's own, so the controller downloads everything."""
        if self.args.wheelhouse == "shared":
            return {}
        return {
            "torch_stack_controller_cache": str(cluster.dir / "wheelhouse"),
            "torch_stack_controller_pip_extra_args": ["--log", str(cluster.dir / "pip-download.log")],
        }

    def env(self, cluster: Cluster) -> Dict[str, str]:
        extra = {"PIP_CACHE_DIR": str(cluster.dir / "pip-cache")} if self.args.wheelhouse == "cold" else {}
        return ansible_env(self.workdir, extra)

    def provision(self, cluster: Cluster, result: Dict[str, Any], twice: bool = True) -> None:
        """provision.yml (and again when `twice`) on the cluster; each figure goes into `result` as it is measured."""
        inventory = cluster.inventory(extra=self.provision_vars(cluster))
        env = self.env(cluster)
        first = playbook(REPO / "playbooks" / "provision.yml", inventory, cluster.dir / "provision-1.log", env)
        log(f"  provision.yml on {len(cluster.nodes)} node(s): {first['seconds']:.1f}s, {first['changed']} changed")
        result["first"] = first
        if self.args.wheelhouse == "cold":
            result["bytes"] = wheelhouse_bytes(cluster.dir / "wheelhouse", cluster.dir / "pip-download.log")
            log(f"  wheelhouse: {result['bytes']['from_index_bytes'] / 1e6:.1f} MB from the index")
            shutil.rmtree(cluster.dir / "wheelhouse", ignore_errors=True)
            shutil.rmtree(cluster.dir / "pip-cache", ignore_errors=True)
        if twice:
            second = playbook(REPO / "playbooks" / "provision.yml", inventory, cluster.dir / "provision-2.log", env)
            log(f"  second provision.yml: {second['seconds']:.1f}s, {second['changed']} changed")
            result["second"] = second

    def train(self, cluster: Cluster, run_index: int, results: List[Dict[str, Any]]) -> None:
        """train.yml on N, 1, .., N-1, then N nodes again, of the provisioned cluster: the same global batch and data
        each time. The first run on N nodes is the cluster's first train.yml (it installs the launcher and makes the
        data set); the last one is an everyday launch, the one the launch overhead target is judged on."""
        count = len(cluster.nodes)
        sizes = [count, *range(1, count), count]
        global_batch = PROCESSES_PER_NODE * math.lcm(*sizes)
        global_batch *= math.ceil(MIN_GLOBAL_BATCH / global_batch)
        env = ansible_env(self.workdir)
        for attempt, size in enumerate(sizes, start=1):
            inventory = cluster.inventory(size)
            extra: Dict[str, Any] = {
                "train_run_id": f"bench-r{run_index}-{attempt}-{size}n",
                "train_batch_size": global_batch // (PROCESSES_PER_NODE * size),
            }
            if size < len(cluster.nodes):
                # provision.yml wrote ~/hosts for all N nodes; a hostfile of the first `size` nodes for this run.
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
                extra["train_hostfile"] = hostfile
            played = playbook(
                REPO / "playbooks" / "train.yml", inventory, cluster.dir / f"train-{attempt}-{size}n.log", env, extra
            )
            record = json.loads((cluster.dir / "runs" / extra["train_run_id"] / "run.json").read_text())
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
                "slowest_tasks": played["slowest_tasks"],
            }
            log(
                f"  train.yml on {size} node(s): {played['seconds']:.1f}s, job {job:.1f}s, overhead "
                f"{row['launch_overhead_seconds']:.1f}s, {row['samples_per_second']} samples/s"
            )
            results.append(row)

    def one_run(self, index: int, result: Dict[str, Any]) -> None:
        nodes = self.args.nodes
        order = ["baseline", "provision"] if index % 2 else ["provision", "baseline"]
        if self.args.skip_baseline:
            order.remove("baseline")
        for part in order:
            cluster = self.harness.cluster(f"r{index}{part[0]}", nodes)
            try:
                log(f"run {index}: {part} on {nodes} fresh node(s)")
                if part == "baseline":
                    assert self.torch_wheel is not None
                    result["baseline"] = baseline(cluster, self.torch_wheel, self.profile)
                    log(f"  baseline: {result['baseline']['seconds']:.1f}s")
                else:
                    self.provision(cluster, result.setdefault("provision", {}))
                    if not self.args.skip_train:
                        self.train(cluster, index, result.setdefault("train", []))
            finally:
                cluster.remove()

    def one_node_bytes(self, result: Dict[str, Any]) -> None:
        cluster = self.harness.cluster("bytes1", 1)
        try:
            log("provision.yml on 1 fresh node (cold wheelhouse), for the bytes on 1 node")
            self.provision(cluster, result, twice=False)
        finally:
            cluster.remove()


# ------------------------------------------------------------------------------------------------ report


def median(values: Sequence[Optional[float]]) -> Optional[float]:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def summarise(args: argparse.Namespace, runs: List[Dict[str, Any]], one_node: Dict[str, Any]) -> Dict:
    """Medians, ratios and targets of whatever was measured (a run that broke half-way gives what it has)."""
    provisions = [r.get("provision", {}) for r in runs]
    first = [p["first"]["seconds"] for p in provisions if "first" in p]
    pairs = [(p["first"]["seconds"], p["second"]["seconds"]) for p in provisions if "second" in p]
    summary: Dict[str, Any] = {}
    targets: Dict[str, Any] = {}
    if first:
        summary["provision_seconds"] = {"runs": first, "median": median(first)}
        summary["first_run_changed"] = [p["first"]["changed"] for p in provisions if "first" in p]
    if pairs:
        second = [b for _a, b in pairs]
        summary["second_run_seconds"] = {"runs": second, "median": median(second)}
        summary["second_run_changed"] = [p["second"]["changed"] for p in provisions if "second" in p]
        summary["second_to_first"] = median([b / a for a, b in pairs])
        targets["second_run_share"] = {
            "target": f"<= {TARGET_RERUN_SHARE:.0%} of the first run, 0 changed",
            "measured": summary["second_to_first"],
            "met": summary["second_to_first"] < TARGET_RERUN_SHARE and max(summary["second_run_changed"]) == 0,
        }
    base_pairs = [(r["provision"]["first"]["seconds"], r["baseline"]["seconds"]) for r in runs
                  if "baseline" in r and "first" in r.get("provision", {})]  # fmt: skip
    base = [r["baseline"]["seconds"] for r in runs if "baseline" in r]
    if base:
        summary["baseline_seconds"] = {"runs": base, "median": median(base)}
        summary["baseline_index_bytes_approx"] = [
            sum(n["index_bytes_approx"] for n in r["baseline"]["nodes"]) for r in runs if "baseline" in r
        ]
    if base_pairs:
        ratio = round(median([a for a, _b in base_pairs]) / median([b for _a, b in base_pairs]), 3)
        summary["provision_to_baseline"] = {"runs": [round(a / b, 3) for a, b in base_pairs], "of_medians": ratio}
        targets["provision_vs_baseline"] = {
            "target": f"<= {TARGET_PROVISION_RATIO}x the baseline's time",
            "measured": ratio,
            "met": ratio <= TARGET_PROVISION_RATIO,
        }
    measured_bytes = {str(args.nodes): p["bytes"] for p in provisions if "bytes" in p}
    if "bytes" in one_node:
        measured_bytes["1"] = one_node["bytes"]
        summary["provision_1_node_seconds"] = one_node["first"]["seconds"]
    if measured_bytes:
        summary["bytes"] = {k: _bytes_row(v) for k, v in measured_bytes.items()}
        if len(summary["bytes"]) > 1:
            summary["bytes_equal"] = len({b["from_index_bytes"] for b in summary["bytes"].values()}) == 1
    rows = [row for r in runs for row in r.get("train", [])]
    full = [row for row in rows if row["nodes"] == args.nodes and not row.get("first_on_cluster")]
    cold = [row["launch_overhead_seconds"] for row in rows if row.get("first_on_cluster")]
    if cold:
        summary["first_launch_overhead_seconds"] = {"runs": cold, "median": median(cold)}
    if full:
        overhead = [row["launch_overhead_seconds"] for row in full]
        summary["launch_overhead_seconds"] = {"runs": overhead, "median": median(overhead)}
        targets["launch_overhead"] = {
            "target": f"< {TARGET_LAUNCH_OVERHEAD:.0f} s on {plural(args.nodes)}",
            "measured": median(overhead),
            "met": median(overhead) < TARGET_LAUNCH_OVERHEAD,
        }
    if rows:
        scaling = []
        for size in sorted({row["nodes"] for row in rows}):
            sized = [row for row in rows if row["nodes"] == size]
            epochs = [statistics.fmean(row["epoch_seconds"]) for row in sized if row["epoch_seconds"]]
            scaling.append(
                {
                    "nodes": size,
                    "samples_per_second": median([row["samples_per_second"] for row in sized]),
                    "steps": sized[0]["steps"],
                    "epoch_seconds": median(epochs),
                    "label": f"median of {len(sized)}",
                    "samples_per_second_runs": [row["samples_per_second"] for row in sized],
                    "launch_overhead_runs": [row["launch_overhead_seconds"] for row in sized],
                }
            )
        summary["scaling"] = scaling
    summary["targets"] = targets
    return summary


def _bytes_row(data: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in data.items() if k != "files"}


def scaling_report(workdir: pathlib.Path, rows: List[Dict[str, Any]], dest: pathlib.Path, title: str) -> Dict:
    """Feed the medians to amx.cluster.scaling_report (scaling.json, .md, .png in dest); its report comes back."""
    runs = [
        {k: row[k] for k in ("nodes", "samples_per_second", "steps", "epoch_seconds", "label") if row[k] is not None}
        for row in rows
    ]
    play = workdir / "scaling.yml"
    play.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Write the scaling report",
                    "hosts": "localhost",
                    "connection": "local",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "name": "Write scaling.json, scaling.md and scaling.png",
                            "amx.cluster.scaling_report": {"dest": str(dest), "title": title, "runs": runs},
                        }
                    ],
                }
            ],
            sort_keys=False,
        )
    )
    inventory = workdir / "localhost.yml"
    inventory.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    playbook(play, inventory, workdir / "scaling.log", ansible_env(workdir))
    return json.loads((dest / "scaling.json").read_text())


def plural(nodes: int) -> str:
    return f"{nodes} node{'s' if nodes != 1 else ''}"


def mb(value: Optional[float]) -> str:
    return "-" if value is None else f"{value / 1e6:.1f} MB"


def secs(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f} s"


def markdown(report: Dict[str, Any]) -> str:
    s = report["summary"]
    n = report["nodes"]
    lines = [
        f"# Bring-up benchmark, {report['date']}",
        "",
        f"Command: `{report['command']}`  ",
        f"{report['runs']} run(s) on {n} container node(s) made by tests/cluster/ (fresh containers for every "
        f"measurement), wheelhouse: {report['wheelhouse']}. Medians; every run's figure in bringup.json.",
        "",
        "| measurement | median | runs | target | met |",
        "| --- | ---: | --- | --- | --- |",
    ]

    def row(name: str, value: str, runs: Sequence[Any], target: str = "", met: Optional[bool] = None) -> None:
        shown = ", ".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in runs)
        lines.append(f"| {name} | {value} | {shown} | {target} | {'' if met is None else 'yes' if met else 'NO'} |")

    t = s["targets"]
    if "provision_seconds" in s:
        row(f"provision.yml, {plural(n)}", secs(s["provision_seconds"]["median"]), s["provision_seconds"]["runs"])
    if "baseline_seconds" in s:
        row(f"sequential baseline, {plural(n)}", secs(s["baseline_seconds"]["median"]), s["baseline_seconds"]["runs"])
    if "provision_to_baseline" in s:
        target = t["provision_vs_baseline"]
        ratio = s["provision_to_baseline"]
        row("provision / baseline", f"{ratio['of_medians']:.2f}x", ratio["runs"], target["target"], target["met"])
    if "first_run_changed" in s:
        row("changed, first provision.yml", str(s["first_run_changed"][0]), s["first_run_changed"])
    if "second_run_seconds" in s:
        row("second provision.yml", secs(s["second_run_seconds"]["median"]), s["second_run_seconds"]["runs"])
        target = t["second_run_share"]
        row("second / first", f"{s['second_to_first']:.1%}", [], target["target"], target["met"])
        row("changed, second provision.yml", str(max(s["second_run_changed"])), s["second_run_changed"])
    if "launch_overhead_seconds" in s:
        target = t["launch_overhead"]
        overhead = s["launch_overhead_seconds"]
        row(f"train.yml launch overhead, {plural(n)}", secs(overhead["median"]), overhead["runs"], target["target"],
            target["met"])  # fmt: skip
    if "first_launch_overhead_seconds" in s:
        first_launch = s["first_launch_overhead_seconds"]
        row("first train.yml on a fresh cluster, overhead", secs(first_launch["median"]), first_launch["runs"])
    if "provision_1_node_seconds" in s:
        row("provision.yml, 1 node", secs(s["provision_1_node_seconds"]), [])
    if "bytes" in s:
        lines += [
            "",
            "## Bytes the controller fetched for the wheelhouse",
            "",
            "| nodes | wheels | from the package index | from local disk | pages of the index read | tar copied "
            "to each node |",
            "| ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for nodes, b in sorted(s["bytes"].items(), key=lambda kv: int(kv[0])):
            lines.append(
                f"| {nodes} | {b['wheels']} | {mb(b['from_index_bytes'])} | {mb(b['from_local_disk_bytes'])} | "
                f"{b['index_pages_fetched']} | {mb(b['tar_bytes'])} |"
            )
        lines += [
            "",
            "Measured from the controller's pip log (`Added <wheel> from <url>`: https = the package index, file: = "
            "folders on this machine, i.e. pip's find-links and the file:// indexes of its configuration) and the "
            "sizes of the wheels in the wheelhouse tar, with an empty pip cache (PIP_CACHE_DIR) and an empty "
            "wheelhouse cache of the run's own (torch_stack_controller_cache). Index pages are counted, not weighed.",
        ]
        if "baseline_index_bytes_approx" in s:
            lines.append(
                f"The baseline's nodes downloaded {mb(median(s['baseline_index_bytes_approx']))} from the package "
                f"index in all ({plural(n)}, median over the runs, from pip's rounded `Downloading ... (size)` "
                "figures), besides the torch wheel copied to each."
            )
    if "scaling" in s:
        lines += [
            "",
            "## Training throughput, same global work",
            "",
            f"qa_finetune on the tiny data set, {TRAIN_EPOCHS} epochs, {PROCESSES_PER_NODE} ranks per node, the same "
            "global batch on every node count (per-rank batch = global / ranks). The report of "
            "amx.cluster.scaling_report is in scaling.md / scaling.json / scaling.png.",
            "",
            "| nodes | samples/s (median) | runs | steps | efficiency | train.yml overhead (runs) |",
            "| ---: | ---: | --- | ---: | ---: | --- |",
        ]
        eff = {r["nodes"]: r.get("efficiency") for r in report.get("scaling_report", {}).get("runs", [])}
        for r in s["scaling"]:
            e = eff.get(r["nodes"])
            lines.append(
                f"| {r['nodes']} | {r['samples_per_second']} | {', '.join(map(str, r['samples_per_second_runs']))} "
                f"| {r['steps']} | {'-' if e is None else f'{e:.0%}'} | "
                f"{', '.join(f'{v:.1f}' for v in r['launch_overhead_runs'])} |"
            )
        lines += [
            "",
            "All containers share this machine's CPUs: more nodes do not bring more cores, so the efficiency here "
            "measures the cost of distributing the job, not the speed-up real nodes give.",
        ]
    first_run = report["measurements"][0]
    provision = first_run.get("provision", {})
    slow = [(f"{which} provision.yml", provision[which]) for which in ("first", "second") if which in provision]
    slow += [
        (f"{'first' if r.get('first_on_cluster') else 'last'} train.yml on {r['nodes']} node(s)", r)
        for r in first_run.get("train", [])
        if r["nodes"] == n
    ]
    lines += ["", "## Where the time goes (run 1, slowest tasks by ansible.posix.profile_tasks)", ""]
    for name, played in slow:
        tasks = "; ".join(f"{task['task']} {task['seconds']:.1f} s" for task in played["slowest_tasks"][:6])
        lines.append(f"- {name}: {tasks or '-'}")
    lines += ["", "## How it is measured", "", *[f"- {note}" for note in report["notes"]]]
    if report.get("error"):
        lines += ["", f"**The run broke before it finished**; the figures above are what it measured. Error: "
                  f"`{report['error'][:500]}`"]  # fmt: skip
    if report["skipped"]:
        lines += ["", "Skipped in this run: " + "; ".join(report["skipped"]) + "."]
    m = report["machine"]
    lines += [
        "",
        f"Machine: {m['cpus']} CPUs, load average {m['load_before']} before and {m['load_after']} after, Python "
        f"{m['python']}, ansible-core {m['ansible_core']}, {m['docker']}.",
    ]
    return "\n".join(lines) + "\n"


NOTES = [
    "Every measurement starts on fresh containers (Debian bookworm, sshd, the image of tests/cluster/node-image.sh); "
    "baseline and provision alternate which goes first from run to run.",
    "provision.yml: `ansible-playbook -i <inventory> playbooks/provision.yml` with molecule/cluster's group_vars "
    "(native profile, no PyTorch index, AMX not required), wall time of the command. With a cold wheelhouse the "
    "controller downloads every wheel (an empty pip cache and wheelhouse folder of the run's own), as the baseline's "
    "nodes do; the torch wheel comes from this machine's wheel folder, as the profile's torch==2.13.0 does for the "
    "controller's pip.",
    "Baseline: one node after the other over SSH as the sudo user: scp the host's CA bundle and the same torch wheel "
    "(nodes cannot see the host's wheel folder; the role copies its wheelhouse to every node too), `apt-get update` "
    "and `apt-get install libgoogle-perftools-dev python3-venv`, `python3 -m venv`, `pip install <torch wheel> "
    "<the native profile's other pins>` from the package index with PIP_CERT, then one import of the stack. It does "
    "less than the role (no manifest, no verification beyond the import, no SSH mesh or hostfile).",
    "All containers share this machine's CPUs (and whatever else runs on it: see the load average below). "
    "provision.yml installs on all nodes at once, which on separate machines is where its lead over a node-by-node "
    "baseline comes from; here the parallel installs compete for the same cores, so the ratio shows the work each "
    "approach does rather than the wall time separate machines would see.",
    "Second run: provision.yml again on the same nodes; changed = sum over hosts of the PLAY RECAP.",
    "Launch overhead: train.yml's wall time minus the training job's own time (run.json job.seconds: mpirun start "
    "to end on the master, each rank's Python start and import included). It includes the node roles' read-only "
    "pass, the gates, the collective smoke test (run.json smoke.seconds) and fetching the results. The target is "
    "judged on the last train.yml on N nodes (an everyday launch); the first one on a fresh cluster also installs "
    "MPICH and makes the tiny data set, and is shown apart.",
    "Scaling: train.yml on N, 1, .., N-1, then N nodes again of the provisioned cluster (for fewer than N, an MPI "
    "hostfile of the first nodes written by amx.cluster.mpi_hostfile, passed as train_hostfile), the same global "
    "batch and data every time; samples/s = the Trainer's train_samples_per_second (metrics.json), the median per "
    "node count goes to amx.cluster.scaling_report.",
]


# ------------------------------------------------------------------------------------------------ main


def machine(load_before: str) -> Dict[str, Any]:
    from ansible import release

    docker = subprocess.run(["docker", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "ansible_core": release.__version__,
        "docker": docker or "docker ?",
    }


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=3, help="nodes of the cluster (default: 3)")
    parser.add_argument("--runs", type=int, default=3, help="runs of every measurement (default: 3)")
    parser.add_argument("--skip-baseline", action="store_true", help="no sequential baseline (no ratio)")
    parser.add_argument("--skip-train", action="store_true", help="no train.yml (no launch overhead, no scaling)")
    parser.add_argument(
        "--wheelhouse",
        choices=["cold", "shared"],
        default=None,
        help="cold: every provision downloads into a wheelhouse and pip cache of its own (bytes measured; default); "
        "shared: the user's controller wheelhouse (~/.cache/amx.cluster/wheelhouse) as the role uses it by default",
    )
    parser.add_argument("--torch-wheel", type=pathlib.Path, help="torch wheel for the baseline (default: pip's)")
    parser.add_argument("--out", type=pathlib.Path, default=REPO / "bench" / "results", help="results folder")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest end-to-end check: 1 node, 1 run, provision.yml twice on the shared wheelhouse; no "
        "baseline, no bytes, no train.yml, no scaling report",
    )
    parser.add_argument("--keep-workdir", action="store_true", help="keep the logs and inventories (path printed)")
    args = parser.parse_args()
    if args.smoke:
        args.nodes, args.runs, args.skip_baseline, args.skip_train = 1, 1, True, True
        args.wheelhouse = args.wheelhouse or "shared"
    args.wheelhouse = args.wheelhouse or "cold"
    if args.nodes < 1 or args.runs < 1:
        parser.error("--nodes and --runs must be 1 or more")
    if not (VENV_BIN / "ansible-playbook").exists():
        raise SystemExit(f"ansible-playbook is not next to {sys.executable}: run this with the project's .venv")

    skipped = []
    if args.skip_baseline:
        skipped.append("the sequential baseline (no provision/baseline ratio)")
    if args.skip_train:
        skipped.append("train.yml (no launch overhead, no throughput, no scaling report)")
    if args.wheelhouse == "shared":
        skipped.append("the bytes fetched (the shared wheelhouse may already hold the wheels: nothing is downloaded)")
    elif args.nodes == 1:
        skipped.append("the separate 1-node bytes run (the cluster has 1 node)")

    prefix = f"amx-bench-{secrets.token_hex(3)}"
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="bringup-bench-"))
    (workdir / "cp").mkdir()
    harness = Harness(prefix, workdir)
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    command = "python bench/bringup_bench.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    log(f"{prefix}: {args.nodes} node(s), {args.runs} run(s), wheelhouse {args.wheelhouse}, work folder {workdir}")
    runs: List[Dict[str, Any]] = []
    one_node: Dict[str, Any] = {}
    error = ""
    bench = Bench(args, harness, workdir)
    try:
        with terminated_as_interrupt():
            if not args.skip_baseline:
                bench.torch_wheel = args.torch_wheel or find_torch_wheel(bench.profile["packages"]["torch"])
            harness.setup()
            for index in range(1, args.runs + 1):
                runs.append({"run": index})
                bench.one_run(index, runs[-1])
            if args.wheelhouse == "cold" and args.nodes > 1:
                bench.one_node_bytes(one_node)
    except (RuntimeError, subprocess.TimeoutExpired, KeyboardInterrupt) as exc:
        error = str(exc) or type(exc).__name__
        print(f"bringup_bench: stopped: {error}", file=sys.stderr)
    finally:
        harness.remove()
        left = harness.containers()
        if left:
            print(f"bringup_bench: containers left behind: {' '.join(left)}", file=sys.stderr)
    if error:
        print(f"bringup_bench: logs in {workdir}", file=sys.stderr)
    if not runs or "first" not in runs[0].get("provision", {}):
        return 2

    today = datetime.date.today().isoformat()
    out = args.out / today
    out.mkdir(parents=True, exist_ok=True)
    report: Dict[str, Any] = {
        "date": today,
        "command": command,
        "nodes": args.nodes,
        "runs": args.runs,
        "smoke": args.smoke,
        "wheelhouse": args.wheelhouse,
        "profile": {"name": PROFILE, "packages": bench.profile["packages"]},
        "torch_wheel": str(bench.torch_wheel) if bench.torch_wheel else None,
        "summary": summarise(args, runs, one_node),
        "skipped": skipped,
        "notes": NOTES,
        "machine": machine(load_before),
        "measurements": runs,
        "one_node_provision": one_node or None,
        "error": error or None,
    }
    if "scaling" in report["summary"] and not error:
        title = f"qa_finetune (tiny), {args.nodes} containers sharing {os.cpu_count()} CPUs"
        report["scaling_report"] = scaling_report(workdir, report["summary"]["scaling"], out, title)
    (out / "bringup.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "bringup.md").write_text(markdown(report))
    print(f"results: {out / 'bringup.json'} and {out / 'bringup.md'}")
    for name, target in report["summary"]["targets"].items():
        print(f"{'meets' if target['met'] else 'misses'} {name}: {target['measured']} (target {target['target']})")
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
