# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What ssh_mesh checks before it changes anything: the values that reach the SSH files it writes (addresses, ports,
user names, key names), and whether the key pair at ~/.ssh/<ssh_mesh_key_name> is one it made; and what it writes for
each node: the ~/.ssh/config entry (HostName, Port, User) and the name its host key is pinned under in known_hosts.

The SSH configuration is a line-based file: a value with a space, a newline or a '#' would add directives (a
ProxyCommand, say) to every connection of the mesh user. Each value is checked against the narrow form it must
have; nothing is quoted or rewritten.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Dict, List, Mapping, Optional

# The comment ssh-keygen writes into the public key the role makes: the mark of a key the collection owns.
KEY_MARK = "amx.cluster-ssh_mesh:"

_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
_USER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
_KEY_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")
# Files of ~/.ssh that are no key: a key named after one would overwrite or shadow it.
_RESERVED = {"authorized_keys", "authorized_keys2", "config", "known_hosts", "known_hosts.old", "environment", "rc"}


def key_comment(key_name: str, master: str) -> str:
    """The comment of the public key the role makes."""
    return f"{KEY_MARK}{key_name}@{master}"


def address_problem(value: Any) -> Optional[str]:
    """None for an IPv4 or IPv6 address or a DNS host name, else what is wrong."""
    if not isinstance(value, str) or not value:
        return "is empty or not a string"
    try:
        ipaddress.ip_address(value)
        return None
    except ValueError:
        pass
    name = value[:-1] if value.endswith(".") else value
    labels = name.split(".")
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        return "is neither an IPv4 or IPv6 address nor a DNS host name (letters, digits, '-' and '.')"
    if labels[-1].isdigit():
        return "looks like an IPv4 address but is not one"
    return None


def user_problem(value: Any) -> Optional[str]:
    if not isinstance(value, str) or not _USER.fullmatch(value):
        return "is not a user name (a letter or '_', then letters, digits, '_', '.' or '-', at most 32)"
    return None


def port_problem(value: Any) -> Optional[str]:
    """None for a TCP port, 1 to 65535: a whole number, or a string of digits (as an inventory may give it)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return "is not a port number (a whole number from 1 to 65535)"
    if isinstance(value, str) and not (value.isascii() and value.isdigit()):
        return "is not a port number (a whole number from 1 to 65535)"
    if not 1 <= int(value) <= 65535:
        return "is out of range (a port is a whole number from 1 to 65535)"
    return None


def key_name_problem(value: Any) -> Optional[str]:
    if not isinstance(value, str) or not _KEY_NAME.fullmatch(value) or value in (".", ".."):
        return "is not a file name (letters, digits, '_', '.' and '-', not starting with '.' or '-', at most 64)"
    if value.endswith(".pub") or value in _RESERVED:
        return f"names a file of ~/.ssh that is no private key ({value})"
    return None


def mesh_input_problems(nodes: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """Every problem with the values that reach the master's SSH files, for every node of the mesh: ``nodes`` maps
    an inventory name to its ``ssh_mesh_address``, ``ssh_mesh_port``, ``ssh_mesh_user`` and ``ssh_mesh_key_name``.
    Each message names the host, the variable, the value (as a Python literal: a newline shows as \\n) and what to
    write."""
    problems = []
    checks = (
        ("ssh_mesh_address", address_problem, "set it to the address the other nodes reach this node on"),
        (
            "ssh_mesh_port",
            port_problem,
            "set it (or ansible_port, its default) to the port this node's sshd listens on for the other nodes",
        ),
        ("ssh_mesh_user", user_problem, "set it to the account that runs MPI"),
        ("ssh_mesh_key_name", key_name_problem, "set it to a plain file name such as cluster (the default)"),
    )
    for node, values in nodes.items():
        for variable, check, fix in checks:
            if not isinstance(values, Mapping) or variable not in values:
                continue
            problem = check(values[variable])
            if problem:
                problems.append(f"{variable} of {node} {values[variable]!r} {problem}: {fix}")
    return problems


def key_owner(private_exists: bool, public_text: Optional[str], key_name: str, master: str) -> Dict[str, Optional[str]]:
    """Whether ~/.ssh/<key_name> on the master is absent, a key pair the collection made (``ours``) or any other
    file (``foreign``), with the reason. The role made the pair when its public key carries the role's comment
    (KEY_MARK, or ``<key_name>@<master>``, the comment of the keys earlier versions made)."""
    if not private_exists and public_text is None:
        return {"owner": "absent", "reason": None}
    if public_text is None:
        return {"owner": "foreign", "reason": "it has no public key beside it, which would say who made it"}
    if not private_exists:
        return {"owner": "foreign", "reason": "only its public key is there"}
    fields = public_text.strip().split(None, 2)
    comment = fields[2] if len(fields) > 2 else ""
    if comment.startswith(KEY_MARK) or comment == f"{key_name}@{master}":
        return {"owner": "ours", "reason": None}
    reason = "its public key does not carry the comment amx.cluster gives the keys it makes"
    return {"owner": "foreign", "reason": reason}


def known_host_conflict(found: str, key: str) -> bool:
    """Whether the lines ``ssh-keygen -F <address>`` printed from known_hosts pin an ed25519 host key for that
    address other than ``key`` (the node's own, base64). ansible.builtin.known_hosts would then remove every line of
    that address, whoever wrote them, to pin the new key."""
    for line in found.splitlines():
        fields = line.split()
        if len(fields) >= 3 and not line.startswith("#"):
            if fields[0].startswith("@"):  # @cert-authority or @revoked: no pin of this role's kind
                continue
            if fields[1] == "ssh-ed25519" and fields[2] != key.strip():
                return True
    return False


def known_host_name(address: str, port: int) -> str:
    """The name ssh looks a node's host key up under in known_hosts: the address (lower case, as ssh compares it) on
    port 22, ``[address]:port`` on any other port."""
    name = address.lower()
    return name if int(port) == 22 else f"[{name}]:{int(port)}"


def mesh_entries(
    master: str, aliases: Mapping[str, str], nodes: Mapping[str, Mapping[str, Any]]
) -> Dict[str, Dict[str, Any]]:
    """What the master writes for each node of the mesh, the master first, then the workers in the order of
    ``aliases`` (inventory name -> node1..N, as worker_aliases names them). ``nodes`` maps an inventory name to its
    ``address``, ``port`` and ``user`` (the node's ssh_mesh_address, ssh_mesh_port and ssh_mesh_user, checked by
    mesh_input_problems). Each entry: ``name``, ``alias`` (None for the master, which gets no Host entry),
    ``address``, ``port`` (int), ``user`` (the account on that node whose authorized_keys holds the cluster key) and
    ``known_host`` (see known_host_name). Raises ValueError for a node without its values or with a bad one."""
    entries: Dict[str, Dict[str, Any]] = {}
    for name, alias in [(master, None), *aliases.items()]:
        values = nodes.get(name)
        if not isinstance(values, Mapping) or not all(key in values for key in ("address", "port", "user")):
            raise ValueError(f"{name}: no address, port and user for this node")
        for key, check in (("address", address_problem), ("port", port_problem), ("user", user_problem)):
            problem = check(values[key])
            if problem:
                raise ValueError(f"{name}: the {key} {values[key]!r} {problem}")
        port = int(values["port"])
        entries[name] = {
            "name": name,
            "alias": alias,
            "address": values["address"],
            "port": port,
            "user": values["user"],
            "known_host": known_host_name(values["address"], port),
        }
    return entries
