# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ssh_mesh for real on a worker whose sshd listens on another port and that is reached as another user.

Two containers of the tests' node image (tests/cluster/node-image.sh, start-node.sh) on a network of their own: the
master (sshd on 22, user amx) and a worker whose sshd listens on 2222 only and whose account is `runner`, as
Ansible reaches it (ansible_port: 2222, ansible_user: runner). The role runs twice (the second run changes nothing),
then the master reaches the worker by its alias the ways the collection does: the role's own check, the train
preflight's ssh options, and the training agent's sweep through the mesh (module_utils/train_agent.py `remote`),
host keys checked against the pins. mpirun reaches a node by the same alias through the same ~/.ssh/config: Hydra
starts its proxy with `ssh -x node1 ...`, no port or user of its own. The node image has no MPI, so the launcher does
not run here (installing mpich in both containers takes minutes); done once by hand on this fleet, `mpirun -localhost
MASTER_ADDR -f ~/hosts -n 2 -ppn 1` as amx ran its second rank on the worker, as runner.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import uuid
from typing import Dict, List

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[3]
TOOLS = REPO / "tests" / "cluster"
VENV_BIN = REPO / ".venv" / "bin"
PORT = 2222
USER = "runner"  # the worker's account, not the master's (amx)

pytestmark = pytest.mark.slow


def run(
    argv: List[str], timeout: int = 300, check: bool = True, env: Dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    environment = {**os.environ, **env} if env else None
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, env=environment)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def on(container: str, script: str, user: str = "root", check: bool = True) -> subprocess.CompletedProcess:
    return run(["docker", "exec", "-u", user, container, "sh", "-c", script], check=check)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The two nodes, the key Ansible logs in with and their pinned host keys; removed afterwards."""
    if shutil.which("docker") is None or run(["docker", "info"], check=False).returncode != 0:
        pytest.skip("no Docker engine answers here (`make docker` starts one): the test needs two sshd containers")
    if not (VENV_BIN / "ansible-playbook").exists():
        pytest.skip(f"ansible-playbook is not in {VENV_BIN}: run `make setup` first")
    folder = tmp_path_factory.mktemp("fleet")
    image = run(["bash", str(TOOLS / "node-image.sh")], timeout=900).stdout.strip().splitlines()[-1]
    prefix = f"amx-port-{uuid.uuid4().hex[:8]}"
    key = folder / "id_ed25519"
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", prefix, "-f", str(key)])
    run(["docker", "network", "create", "--label", "amx-cluster-test=ssh-mesh-port", prefix])
    names = [f"{prefix}-master", f"{prefix}-worker"]
    try:
        nodes = {}
        # The worker: an account of its own that Ansible logs in as, and sshd on PORT only.
        accounts = {names[0]: {}, names[1]: {"NODE_USER": USER, "NODE_SSH_PORT": str(PORT)}}
        for name in names:
            argv = ["bash", str(TOOLS / "start-node.sh"), name, prefix, image, prefix, f"{key}.pub"]
            out = run(argv, env=accounts[name]).stdout
            nodes[name] = json.loads(out.strip().splitlines()[-1])
        worker = names[1]
        on(worker, f"ss -ltn | grep -q ':{PORT} ' && ! ss -ltn | grep -q ':22 '")
        master_ip, worker_ip = nodes[names[0]]["address"], nodes[worker]["address"]
        known = folder / "known_hosts"
        known.write_text(
            f"{master_ip} {nodes[names[0]]['host_key']}\n[{worker_ip}]:{PORT} {nodes[worker]['host_key']}\n"
        )
        common = {
            "ansible_ssh_private_key_file": str(key),
            "ansible_ssh_common_args": f"-o UserKnownHostsFile={known} -o StrictHostKeyChecking=yes"
            " -o IdentitiesOnly=yes",
            "ansible_python_interpreter": "/usr/bin/python3",
        }
        inventory = {
            "cluster": {
                "children": {
                    "master": {"hosts": {"head": {**common, "ansible_host": master_ip, "ansible_user": "amx"}}},
                    "workers": {
                        "hosts": {
                            "compute-a": {
                                **common,
                                "ansible_host": worker_ip,
                                "ansible_port": PORT,
                                "ansible_user": USER,
                            }
                        }
                    },
                }
            }
        }
        (folder / "inventory.yml").write_text(json.dumps(inventory, indent=1) + "\n")
        (folder / "mesh.yml").write_text(
            "- name: Wire the mesh\n  hosts: cluster\n  gather_facts: true\n  gather_subset: [min, network]\n"
            "  roles:\n    - amx.cluster.ssh_mesh\n"
        )
        yield {"folder": folder, "master": names[0], "worker": worker, "worker_ip": worker_ip}
    finally:
        run(["docker", "rm", "-f", *names], check=False)
        run(["docker", "network", "rm", prefix], check=False)


def playbook(fleet: Dict) -> subprocess.CompletedProcess:
    folder = fleet["folder"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        HOME=str(folder),
        PATH=f"{VENV_BIN}:{env.get('PATH', '/usr/bin:/bin')}",
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_HOST_KEY_CHECKING="true",
    )
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", str(folder / "inventory.yml"), str(folder / "mesh.yml")]
    return subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=900, check=False)


def recap(output: str) -> Dict[str, Dict[str, int]]:
    counts = {}
    for host, stats in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", output, re.MULTILINE):
        counts[host] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", stats)}
    return counts


@pytest.fixture(scope="module")
def wired(fleet):
    first = playbook(fleet)
    assert first.returncode == 0, first.stdout[-8000:] + first.stderr[-3000:]
    second = playbook(fleet)
    assert second.returncode == 0, second.stdout[-8000:] + second.stderr[-3000:]
    return fleet, recap(second.stdout)


def test_the_second_run_changes_nothing(wired):
    _fleet, counts = wired
    assert set(counts) == {"head", "compute-a"}, counts
    assert all(c["changed"] == 0 and c["failed"] == 0 for c in counts.values()), counts


def test_the_config_carries_the_workers_port_and_user(wired):
    fleet = wired[0]
    config = on(fleet["master"], "cat ~/.ssh/config", user="amx").stdout
    entry = config[config.index("Host node1") :].splitlines()
    assert entry[1:4] == [f"    HostName {fleet['worker_ip']}", f"    Port {PORT}", f"    User {USER}"], config


def test_the_workers_host_key_is_pinned_under_address_and_port(wired):
    fleet = wired[0]
    ip = fleet["worker_ip"]
    found = on(fleet["master"], f"ssh-keygen -F '[{ip}]:{PORT}'", user="amx", check=False)
    assert found.returncode == 0 and " ssh-ed25519 " in found.stdout, found.stdout + found.stderr
    assert "|1|" in found.stdout  # hashed
    # Not under the bare address, which ssh looks up for port 22 only.
    assert on(fleet["master"], f"ssh-keygen -F {ip}", user="amx", check=False).returncode == 1


def test_the_master_reaches_the_worker_by_alias_as_its_user_host_key_checked(wired):
    fleet = wired[0]
    answer = on(fleet["master"], "ssh -o BatchMode=yes -o StrictHostKeyChecking=yes node1 whoami", user="amx")
    assert answer.stdout.strip() == USER


def test_the_train_preflight_ssh_check_reaches_the_worker(wired):
    fleet = wired[0]
    defaults = yaml.safe_load((REPO / "roles" / "train" / "defaults" / "main.yml").read_text())
    options = " ".join(defaults["train_ssh_options"])
    assert on(fleet["master"], f"ssh {options} node1 true", user="amx", check=False).returncode == 0


def test_the_agents_sweep_reaches_the_worker_through_the_mesh(wired):
    """train_agent.remote, as the supervisor calls it on the master: `ssh node1 python3 - scan {...}`."""
    fleet = wired[0]
    master = fleet["master"]
    run(["docker", "cp", str(REPO / "plugins" / "module_utils" / "train_agent.py"), f"{master}:/tmp/train_agent.py"])
    code = (
        "import json, sys; sys.path.insert(0, '/tmp'); import train_agent; "
        "print(json.dumps(train_agent.remote('node1', 'scan', {'ssh_options': ['-o', 'BatchMode=yes'],"
        " 'python': 'python3'}, {'job': 'amx-port-test'})))"
    )
    answer = json.loads(on(master, f'python3 -c "{code}"', user="amx").stdout.strip().splitlines()[-1])
    assert answer == {"processes": []}, answer


def test_the_master_shares_one_connection_per_node(wired):
    """ControlMaster: the first ssh to node1 leaves a master behind for ssh_mesh_control_persist seconds, and a
    caller that reads ssh's output to its end (train_agent.remote, launch_plan's probe) is not held by it."""
    fleet = wired[0]
    master = fleet["master"]
    timed = (
        "import subprocess, time; t = time.monotonic(); "
        "subprocess.run(['ssh', '-o', 'BatchMode=yes', 'node1', 'true'], capture_output=True, check=True, timeout=20); "
        "print(round(time.monotonic() - t, 3))"
    )
    on(master, "ssh -O exit node1 2>/dev/null; true", user="amx")
    first = float(on(master, f'python3 -c "{timed}"', user="amx").stdout)
    assert first < 10, f"ssh's output was held open {first} s: the persisting master keeps the caller's pipes"
    assert on(master, "ssh -O check node1", user="amx", check=False).returncode == 0
    assert on(master, "ls ~/.ssh/cm-*", user="amx").stdout.strip()
    # What Hydra needs of the shared connection: sessions at once, each with the remote command's exit status.
    together = "; ".join(f"ssh -x node1 'sleep 1; exit {n}' & p{n}=$!" for n in (1, 2, 3))
    statuses = on(master, together + "; for p in $p1 $p2 $p3; do wait $p; echo $?; done", user="amx").stdout.split()
    assert statuses == ["1", "2", "3"], statuses
    loop = "t=$(date +%s%N); for i in 1 2 3 4 5; do ssh {} node1 true; done; echo $(( ($(date +%s%N) - t) / 5000000 ))"
    fresh = int(on(master, loop.format("-o ControlPath=none"), user="amx").stdout)
    shared = int(on(master, loop.format(""), user="amx").stdout)
    print(f"ssh node1 true: {fresh} ms a new connection, {shared} ms through the master's")
    assert shared < fresh, (shared, fresh)


def test_a_stale_socket_does_not_stop_the_next_ssh(wired):
    """A master that died (killed, the node rebooted) leaves its socket: ssh removes it and connects anew."""
    fleet = wired[0]
    master = fleet["master"]
    on(master, "ssh node1 true", user="amx")
    pid = re.search(r"pid=(\d+)", on(master, "ssh -O check node1 2>&1", user="amx").stdout).group(1)
    on(master, f'kill -9 {pid}; sleep 0.2; test -S "$(ls ~/.ssh/cm-*)"', user="amx")
    assert on(master, "ssh -o BatchMode=yes node1 whoami", user="amx").stdout.strip() == USER
    assert on(master, "ssh -O check node1", user="amx", check=False).returncode == 0
