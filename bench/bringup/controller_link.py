# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller's link to each node, paced like the package index's: a bring-up as separate machines see it.

On one machine the controller reaches every container over the loopback bridge, so pushing a wheelhouse to a node
costs nothing but CPU. Over a real network the controller has a link to each node, no faster than its link to the
package index. `ControllerLinks` puts a relay on 127.0.0.1 in front of every node's sshd: a port per node, each
direction paced by its own bucket (benchlib.rate_limit, one per node and direction), the bytes counted. Ansible
reaches the relay through `ssh_args(node)`: a ProxyCommand that connects to the node's port and hands the socket
to ssh (ProxyUseFdpass), so no process copies the bytes twice and the host keys stay the nodes' own.

    python3 controller_link.py connect PORT     # the ProxyCommand (standard library only)
"""

from __future__ import annotations

import contextlib
import shlex
import socket
import sys
import threading
import time
from typing import Dict, List

CHUNK = 64 * 1024


def connect_and_pass(port: int) -> None:
    """ProxyCommand with ProxyUseFdpass: connect to the relay's port and hand the socket to ssh on stdout."""
    conn = socket.create_connection(("127.0.0.1", port))
    to_ssh = socket.socket(fileno=sys.stdout.fileno())
    socket.send_fds(to_ssh, [b"\0"], [conn.fileno()])


class ControllerLinks:
    """A relay port on 127.0.0.1 per node (name -> address), `rate` bytes per second each way per node.
    `sent[name]` counts the bytes the controller sent to the node, `received[name]` those it got back."""

    def __init__(self, nodes: Dict[str, str], rate: float, ssh_port: int = 22) -> None:
        from benchlib.rate_limit import PerClientLimit  # the bench's package; the ProxyCommand does not need it

        self.limits = {"sent": PerClientLimit(rate), "received": PerClientLimit(rate)}
        self.ports: Dict[str, int] = {}
        self.listeners: List[socket.socket] = []
        self.closed = threading.Event()
        for name, address in nodes.items():
            listener = socket.create_server(("127.0.0.1", 0))
            self.listeners.append(listener)
            self.ports[name] = listener.getsockname()[1]
            threading.Thread(target=self.accept, args=(listener, name, (address, ssh_port)), daemon=True).start()

    @property
    def sent(self) -> Dict[str, int]:
        return dict(self.limits["sent"].sent)

    @property
    def received(self) -> Dict[str, int]:
        return dict(self.limits["received"].sent)

    def ssh_args(self, name: str) -> List[str]:
        proxy = shlex.join([sys.executable, __file__, "connect", str(self.ports[name])])
        return ["-o", f"ProxyCommand={proxy}", "-o", "ProxyUseFdpass=yes"]

    def accept(self, listener: socket.socket, name: str, target: tuple) -> None:
        while not self.closed.is_set():
            try:
                client = listener.accept()[0]
            except OSError:
                return
            try:
                node = socket.create_connection(target, timeout=30)
            except OSError:
                client.close()
                continue
            node.settimeout(None)
            for source, sink, direction in ((client, node, "sent"), (node, client, "received")):
                threading.Thread(target=self.pump, args=(source, sink, name, direction), daemon=True).start()

    def pump(self, source: socket.socket, sink: socket.socket, name: str, direction: str) -> None:
        """Copy one direction, each chunk paced by the node's bucket for that direction."""
        limit = self.limits[direction]
        with contextlib.suppress(OSError):
            while True:
                chunk = source.recv(CHUNK)
                if not chunk:
                    break
                wait = limit.take(name, len(chunk))
                if wait:
                    time.sleep(wait)
                sink.sendall(chunk)
        # The other direction may still be talking: end this one only.
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.closed.set()
        for listener in self.listeners:
            listener.close()

    def __enter__(self) -> ControllerLinks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: List[str]) -> int:
    if len(argv) != 2 or argv[0] != "connect" or not argv[1].isdigit():
        print("usage: controller_link.py connect PORT", file=sys.stderr)
        return 2
    connect_and_pass(int(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
