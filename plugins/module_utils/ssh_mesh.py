# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What ssh_mesh checks before it changes anything: the values that reach the SSH files it writes (addresses, ports,
user names, key names), the play and its nodes, the accounts and host keys, the master's known_hosts, and whether the
key pair at ~/.ssh/<ssh_mesh_key_name> is one it made; and what it writes for each node: the ~/.ssh/config entry
(HostName, Port, User) and the name its host key is pinned under in known_hosts. The action amx.cluster.mesh_plan
calls these once for the play, with every node's values, and reports every problem at once.

The SSH configuration is a line-based file: a value with a space, a newline or a '#' would add directives (a
ProxyCommand, say) to every connection of the mesh user. Each value is checked against the narrow form it must
have; nothing is quoted or rewritten.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

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
    ``aliases`` (inventory name -> node1..N, as cluster_shape names them). ``nodes`` maps an inventory name to its
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


def known_host_conflicts(found: Mapping[str, str], keys: Mapping[str, Optional[str]]) -> List[str]:
    """The nodes whose address the master's known_hosts pins to another ed25519 key than their own: ``found`` maps a
    node to what ``ssh-keygen -F <its known_hosts name>`` printed (nodes it found nothing for left out), ``keys`` a
    node to its own host key (see known_host_conflict). In the order of ``found``."""
    return [node for node, text in found.items() if known_host_conflict(str(text), str(keys.get(node) or ""))]


def _them(names: Sequence[str]) -> Dict[str, str]:
    one = len(names) == 1
    return {"was": "was" if one else "were", "it": "it" if one else "them"}


def play_problems(nodes: Sequence[str], play_hosts_all: Sequence[str], play_hosts: Sequence[str]) -> List[str]:
    """The mesh runs on exactly its nodes (the master and the workers) in one play, and needs every one of them:
    what is missing from the play or extra in it, and the nodes that failed or were unreachable earlier."""
    problems = []
    missing = [node for node in nodes if node not in play_hosts_all]
    extra = [host for host in play_hosts_all if host not in nodes]
    if missing or extra:
        problems.append(
            "ssh_mesh must run on the master and every worker in one play, and on no other host. "
            + (f"Missing from the play: {', '.join(missing)}. " if missing else "")
            + (f"In the play but neither the master nor a worker: {', '.join(extra)}. " if extra else "")
            + "Run it with `hosts: cluster` where group cluster holds exactly master and workers, or set "
            "ssh_mesh_master / ssh_mesh_workers."
        )
    lost = [node for node in nodes if node in play_hosts_all and node not in play_hosts]
    if lost:
        words = _them(lost)
        problems.append(
            f"the mesh needs every node, but {', '.join(lost)} {words['was']} unreachable or failed earlier in this "
            f"play (see the error above): bring {words['it']} up or fix the connection variables (ansible_host, "
            f"ansible_port, ansible_user), or take {words['it']} out of the inventory's workers group. The mesh was "
            "left untouched on every node."
        )
    return problems


def account_problems(users: Mapping[str, Any], accounts: Mapping[str, Any]) -> List[str]:
    """The nodes whose mesh user (``users``: node -> ssh_mesh_user) has no account there (``accounts``: node -> its
    passwd entry as ansible.builtin.getent gives it, None when there is none; nodes not looked up left out)."""
    return [
        f"user {users.get(node)!r} does not exist on {node}: create it on every node first, or set ssh_mesh_user to "
        "an existing account."
        for node, account in accounts.items()
        if account is None
    ]


def host_key_problem(keys: Mapping[str, Optional[str]]) -> Optional[str]:
    """The nodes without an ed25519 host key in their facts (``keys``: node -> the key, None when there is none),
    which the master could not pin."""
    keyless = [node for node, key in keys.items() if not key]
    if not keyless:
        return None
    return (
        f"{', '.join(keyless)} reported no ed25519 host key in {'its' if len(keyless) == 1 else 'their'} facts, so "
        "the master could not pin it: start sshd there (it makes its host keys), gather facts before the role, or "
        "set ssh_mesh_strict_host_key_checking: false on a trusted network."
    )


def known_hosts_problem(
    master: str, known_hosts: str, conflicts: Sequence[str], entries: Mapping[str, Mapping[str, Any]]
) -> Optional[str]:
    """The nodes whose address the master's known_hosts (the file ``known_hosts``) pins to another key: the role
    would delete those lines to pin the new key, so it stops and says how to clear them."""
    if not conflicts:
        return None
    names = ", ".join(str(entries[node]["known_host"]) for node in conflicts)
    return (
        f"{known_hosts} on the master {master} pins another ed25519 host key for {names} ({', '.join(conflicts)}) "
        "than the node reports now. The role would delete those lines to pin the new key, so it stops: if the node "
        "was rebuilt, remove the old lines yourself (ssh-keygen -R ADDRESS -f that file, as the mesh user); "
        "otherwise find out who answers at that address."
    )


def key_problem(master: str, key: Mapping[str, Any]) -> Optional[str]:
    """A key pair under ssh_mesh_key_name on the master that the role did not make (``key``: key_owner's answer with
    its ``path`` and ``rotate``, ssh_mesh_rotate): never used, replaced or deleted."""
    if key.get("owner") != "foreign":
        return None
    would = "delete it to rotate it" if key.get("rotate") else "hand it to every node"
    return (
        f"the master {master} already has {key.get('path')} (ssh_mesh_key_name), a key amx.cluster did not make: "
        f"{key.get('reason')}. The mesh would {would}. Set ssh_mesh_key_name to another name (the default is "
        "cluster), or move that key away yourself."
    )


SHAPE_FIX = "The master launches mpirun and the workers are node1..N, each machine once."


def mesh_plan(
    shape: Mapping[str, Any],
    play_hosts_all: Sequence[str],
    play_hosts: Sequence[str],
    nodes: Mapping[str, Mapping[str, Any]],
    strict: bool,
) -> Dict[str, Any]:
    """What the play's nodes tell before the master's files are read. ``shape`` is cluster_shape's answer (with the
    nodes' addresses), ``nodes`` maps each node that ran the role's first steps to its ``port``, ``user`` and
    ``key_name`` (its ssh_mesh_port, ssh_mesh_user and ssh_mesh_key_name), ``account`` (the user's passwd entry,
    None when there is none) and ``host_key`` (its ed25519 host key, None when its facts have none).

    Returns ``problems`` (every one found, each a sentence naming the host and the fix), ``master``, ``workers``,
    ``aliases``, ``entries`` (mesh_entries; empty for a one-node cluster or when the values are wrong),
    ``key_name`` and ``key_comment`` (the master's). A problem with the cluster's shape or the play stops there: the
    other checks read the nodes it names."""
    plan: Dict[str, Any] = {
        "problems": [],
        "master": shape.get("master"),
        "workers": list(shape.get("workers", [])),
        "aliases": dict(shape.get("aliases", {})),
        "entries": {},
        "key_name": None,
        "key_comment": None,
    }
    problems: List[str] = plan["problems"]
    if shape.get("problems"):
        problems.append(". ".join(shape["problems"]) + ". " + SHAPE_FIX)
        return plan
    names = [node["name"] for node in shape["nodes"]]
    problems += play_problems(names, play_hosts_all, play_hosts)
    if problems:
        return plan
    master = plan["master"]
    values = {name: nodes.get(name, {}) for name in names}
    if plan["workers"]:
        problems += list(shape.get("address_problems", []))
        problems += mesh_input_problems(
            {
                name: {
                    f"ssh_mesh_{key}": value[key]
                    for key in ("port", "user", "key_name")
                    if isinstance(value, Mapping) and key in value
                }
                for name, value in values.items()
            }
        )
    # Each problem a sentence of its own: the messages join them.
    problems[:] = [problem if problem.endswith(".") else f"{problem}." for problem in problems]
    valid = not problems
    problems += account_problems(
        {name: value.get("user") for name, value in values.items()},
        {name: value["account"] for name, value in values.items() if "account" in value},
    )
    if plan["workers"] and strict:
        keyless = host_key_problem({name: value.get("host_key") for name, value in values.items()})
        if keyless:
            problems.append(keyless)
    key_name = values[master].get("key_name")
    if key_name_problem(key_name) is None:
        plan["key_name"] = key_name
        plan["key_comment"] = key_comment(key_name, master)
    if plan["workers"] and valid:
        plan["entries"] = mesh_entries(
            master,
            plan["aliases"],
            {
                name: {"address": shape["addresses"][name], "port": value.get("port"), "user": value.get("user")}
                for name, value in values.items()
            },
        )
    return plan


def master_problems(
    plan: Mapping[str, Any],
    home: str,
    found: Mapping[str, str],
    keys: Mapping[str, Optional[str]],
    private_exists: bool,
    public_text: Optional[str],
    rotate: bool,
) -> Dict[str, Any]:
    """What the master's files tell, for a plan without problems on a cluster with workers: ``home`` is the mesh
    user's home there, ``found`` what ``ssh-keygen -F`` printed from its known_hosts for each node's known_hosts name
    (nodes it found nothing for, or every node when host keys are not pinned, left out), ``keys`` the nodes' own host
    keys, ``private_exists`` and ``public_text`` the key pair under ssh_mesh_key_name (the public key's text, None
    when there is none). Returns ``problems`` and ``key`` (key_owner's answer with the key's ``path`` and
    ``rotate``)."""
    master = str(plan["master"])
    path = f"{home}/.ssh/{plan['key_name']}"
    key: Dict[str, Any] = {**key_owner(private_exists, public_text, str(plan["key_name"]), master)}
    key.update(path=path, rotate=bool(rotate))
    problems = [
        problem
        for problem in (
            known_hosts_problem(master, f"{home}/.ssh/known_hosts", known_host_conflicts(found, keys), plan["entries"]),
            key_problem(master, key),
        )
        if problem
    ]
    return {"problems": problems, "key": key}
