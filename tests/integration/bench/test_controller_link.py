# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench/bringup/controller_link.py: the controller's paced link to each node, on an echo server of this machine and
through a real ssh into a node container (tests/cluster/)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
import time
import uuid

import pytest
from bringup.controller_link import ControllerLinks

ROOT = pathlib.Path(__file__).resolve().parents[3]
TOOLS = ROOT / "tests" / "cluster"
RATE = 1_000_000
SIZE = 600_000
BURST = 64 * 1024


class Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while chunk := self.request.recv(65536):
            self.request.sendall(chunk)


@pytest.fixture
def echo():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def talk(conn: socket.socket, data: bytes) -> bytes:
    sender = threading.Thread(target=conn.sendall, args=(data,))
    sender.start()
    got = b""
    while len(got) < len(data):
        got += conn.recv(65536)
    sender.join()
    return got


def test_both_directions_are_paced_and_counted(echo):
    data = os.urandom(SIZE)
    with ControllerLinks({"node1": "127.0.0.1"}, RATE, ssh_port=echo) as links:
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", links.ports["node1"])) as conn:
            assert talk(conn, data) == data
        seconds = time.monotonic() - started
        assert links.sent == {"node1": SIZE}
        assert links.received == {"node1": SIZE}
    assert seconds >= (SIZE - BURST) / RATE * 0.95  # 0.51 s at least; unpaced, it takes milliseconds


def test_the_proxy_command_hands_its_socket_to_the_caller(echo):
    # What ssh does with ProxyUseFdpass: stdout is a socket, and the ProxyCommand sends the connected socket over it.
    with ControllerLinks({"node1": "127.0.0.1"}, RATE, ssh_port=echo) as links:
        ours, theirs = socket.socketpair()
        port = str(links.ports["node1"])
        done = subprocess.run(
            [sys.executable, str(ROOT / "bench/bringup/controller_link.py"), "connect", port], stdout=theirs, check=True
        )
        assert done.returncode == 0
        fds = socket.recv_fds(ours, 1, 1)[1]
        with socket.socket(fileno=fds[0]) as conn:
            assert talk(conn, b"hello") == b"hello"
        assert links.sent == {"node1": 5}


def test_ssh_reaches_a_node_through_it(tmp_path):
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "info"], capture_output=True, check=False).returncode != 0:
        pytest.skip("no Docker engine answers here (`make docker` starts one): the test needs an sshd container")
    image = subprocess.run(
        ["bash", str(TOOLS / "node-image.sh")], capture_output=True, text=True, check=True, timeout=900
    ).stdout.split()[-1]
    name = f"amx-link-{uuid.uuid4().hex[:8]}"
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    subprocess.run(["docker", "network", "create", "--label", "amx-cluster-test=link", name], check=True)
    try:
        out = subprocess.run(
            ["bash", str(TOOLS / "start-node.sh"), name, name, image, "link", f"{key}.pub"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        node = json.loads(out.strip().splitlines()[-1])
        known = tmp_path / "known_hosts"
        known.write_text(f"{node['address']} {node['host_key']}\n")
        with ControllerLinks({name: node["address"]}, RATE) as links:
            argv = ["ssh", "-i", str(key), "-o", f"UserKnownHostsFile={known}", "-o", "StrictHostKeyChecking=yes"]
            argv += ["-o", "BatchMode=yes", *links.ssh_args(name), f"amx@{node['address']}", "wc -c"]
            done = subprocess.run(argv, input=os.urandom(SIZE), capture_output=True, check=True, timeout=120)
            assert done.stdout.decode().strip() == str(SIZE)
            # The payload and the SSH handshake went through the relay, paced, and nothing went around it.
            assert links.sent[name] > SIZE
            assert links.received[name] > 0
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)
        subprocess.run(["docker", "network", "rm", name], capture_output=True, check=False)
