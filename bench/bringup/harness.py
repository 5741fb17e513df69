# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The benchmark's containers, made by the test harness's scripts (tests/cluster/), and SSH to them."""

from __future__ import annotations

import datetime
import json
import pathlib
import shlex
import subprocess
import time
from typing import Any, Dict, List, Optional, Sequence

import yaml

from .controller_link import ControllerLinks
from .settings import CLUSTER_VARS, NODE_USER, TOOLS


def log(message: str) -> None:
    print(f"[{datetime.datetime.now(datetime.timezone.utc):%H:%M:%S}] {message}", flush=True)


def run(argv: Sequence[str], timeout: float = 3600, **kwargs: Any) -> subprocess.CompletedProcess:
    """A command that must work; its output in the error when it does not."""
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False, **kwargs)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed (rc {proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc


class Harness:
    """Containers of this benchmark: one network and one label (amx-cluster-test=<prefix>), removed at the end."""

    def __init__(
        self,
        prefix: str,
        workdir: pathlib.Path,
        node_options: Sequence[str] = (),
        controller_rate: Optional[float] = None,
    ) -> None:
        self.prefix = prefix
        self.workdir = workdir
        self.node_options = list(node_options)  # extra `docker run` options of every node (node_resources)
        # Bytes per second each way between the controller and each node (controller_link); None: unpaced.
        self.controller_rate = controller_rate
        self.clusters: List[Cluster] = []
        self.key = workdir / "id_ed25519"
        self.image = ""

    def setup(self) -> None:
        run(["bash", str(TOOLS / "docker-engine.sh")], timeout=600)
        self.image = run(["bash", str(TOOLS / "node-image.sh")], timeout=900).stdout.strip().splitlines()[-1]
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", self.prefix, "-f", str(self.key)])
        run(["docker", "network", "create", "--label", f"amx-cluster-test={self.prefix}", self.prefix])

    def gateway(self) -> str:
        """This machine's address on the benchmark's network: where the nodes reach a service of the controller's."""
        inspect = ["docker", "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}}{{end}}", self.prefix]
        return run(inspect).stdout.strip()

    def cluster(self, name: str, size: int, image: Optional[str] = None) -> Cluster:
        """`size` fresh nodes (master first) from the node image, or from `image` (one made by commit())."""
        nodes = []
        for index in range(size):
            node = f"{self.prefix}-{name}-{'master' if index == 0 else f'node{index}'}"
            script = ["bash", str(TOOLS / "start-node.sh")]
            argv = [*script, node, self.prefix, image or self.image, self.prefix, f"{self.key}.pub", *self.node_options]
            started = run(argv, timeout=300)
            nodes.append(json.loads(started.stdout.strip().splitlines()[-1]))
        cluster = Cluster(name, nodes, self)
        self.clusters.append(cluster)
        cluster.wait_for_ssh()
        return cluster

    def commit(self, node: Dict[str, Any], tag: str) -> str:
        """An image of the node as it is now (its packages, venv and files), labelled as this benchmark's; without its
        SSH host keys, which every container of the image makes anew at its start (node-image.sh's entrypoint)."""
        run(["docker", "exec", node["name"], "sh", "-c", "rm -f /etc/ssh/ssh_host_*"])
        run(["docker", "commit", "--change", f"LABEL amx-cluster-test={self.prefix}", node["name"], tag], timeout=900)
        return tag

    def labelled(self, listing: Sequence[str]) -> List[str]:
        """Ids that a docker listing (`ps -a`, `images`) gives for this benchmark's label."""
        argv = ["docker", *listing, "-q", "--filter", f"label=amx-cluster-test={self.prefix}"]
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.split()

    def images(self) -> List[str]:
        """Ids of the images this benchmark committed."""
        return self.labelled(["images"])

    def containers(self) -> List[str]:
        """Ids of every container of this benchmark, running or not."""
        return self.labelled(["ps", "-a"])

    def remove(self, names: Optional[Sequence[str]] = None) -> None:
        """The named containers, or (no names) every container and the network of this benchmark."""
        found = self.containers() if names is None else list(names)
        if names is None:
            for cluster in self.clusters:
                if cluster.links:
                    cluster.links.close()
        if found:
            subprocess.run(["docker", "rm", "-f", *found], capture_output=True, check=False)
        if names is None:
            subprocess.run(["docker", "network", "rm", self.prefix], capture_output=True, check=False)
            images = self.images()
            if images:
                subprocess.run(["docker", "rmi", "-f", *images], capture_output=True, check=False)


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
        # Everything the controller sends a node, Ansible's and the baseline's alike, through the node's paced link.
        self.links = (
            ControllerLinks({n["name"]: n["address"] for n in nodes}, harness.controller_rate)
            if harness.controller_rate
            else None
        )
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
        # Each host's own SSH options (its link), without the key: ansible_ssh_private_key_file gives that.
        host = {
            node["name"]: {"ansible_host": node["address"], "ansible_ssh_common_args": self.common_args(node)}
            for node in nodes
        }
        data = {
            "cluster": {
                "children": {
                    "master": {"hosts": {nodes[0]["name"]: host[nodes[0]["name"]]}},
                    "workers": {"hosts": {n["name"]: host[n["name"]] for n in nodes[1:]}},
                },
                "vars": {
                    "ansible_user": NODE_USER,
                    "ansible_ssh_private_key_file": str(self.harness.key),
                    **CLUSTER_VARS,
                    "train_results_dir": str(self.dir / "runs"),
                    **(extra or {}),
                },
            }
        }
        path = self.dir / f"inventory-{len(nodes)}.yml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def node_ssh_options(self, node: Dict[str, Any]) -> List[str]:
        """ssh's options for one node: the pinned host keys, and the node's paced link when there is one."""
        return [*self.ssh_options, *(self.links.ssh_args(node["name"]) if self.links else [])]

    def common_args(self, node: Dict[str, Any]) -> str:
        return shlex.join(self.node_ssh_options(node)[2:])

    def controller_sent(self) -> Dict[str, int]:
        """Bytes the controller has sent each node through its link so far (empty when the links are unpaced)."""
        return self.links.sent if self.links else {}

    def ssh(self, node: Dict[str, Any], command: str, timeout: float = 3600) -> subprocess.CompletedProcess:
        return run(["ssh", *self.node_ssh_options(node), f"{NODE_USER}@{node['address']}", command], timeout=timeout)

    def scp(self, node: Dict[str, Any], source: str, dest: str) -> None:
        argv = ["scp", "-q", *self.node_ssh_options(node), source, f"{NODE_USER}@{node['address']}:{dest}"]
        run(argv, timeout=900)

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
