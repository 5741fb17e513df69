# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster's shape: the master, the workers in order, the names the master uses for them, the address each node
is reached on, and every problem found. check_inventory.yml, ssh_mesh, mpi_hostfile and train all read it from here.

The rules:

* one master: the role's master variable when set, else the one host of group ``master``;
* the workers: the role's workers variable when set (a list), else group ``workers``, in the inventory's order (the
  ec2_cluster inventory lists them by node index); each machine once, never the master, every one an inventory host;
* the names the master uses (``~/.ssh/config`` ``Host`` entries, the MPI hostfile, train's SSH checks): the master
  is ``localhost``; a worker whose inventory name is already ``node<K>`` (K from 1, no leading zero; the ec2_cluster
  inventory names its workers so, after their node-index tag) keeps that name; every other worker takes the lowest
  ``node<K>`` left free, in the workers' order. A master named ``node<K>`` keeps that name free, so ``ssh node<K>`` on
  the master never reaches another machine than the inventory's ``node<K>``. A fleet whose names are not of that
  form gets ``node1..N`` in order; an ec2_cluster inventory with a gap (``node1``, ``node3``) keeps it.
* the address each node is reached on (``HostName`` in ``~/.ssh/config``, the known_hosts pin, ``MASTER_ADDR``): its
  ``ssh_mesh_address`` when set, else the address of its default route (``ansible_facts.default_ipv4.address``). A
  node with neither is a problem that names the host and ``ssh_mesh_address``; a node with a second network used
  for the cluster sets ``ssh_mesh_address`` to its address there.

Standard library only (Python 3.8+).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.amx.cluster.plugins.module_utils.ssh_mesh import address_problem

LOCALHOST = "localhost"
ALIAS_PREFIX = "node"
ALIAS = re.compile(r"node([1-9][0-9]*)")
ADDRESS_VARIABLE = "ssh_mesh_address"
REACHED_ON = "set it to the address the other nodes reach this node on"
LAYOUT_HINT = (
    "Put the node that launches mpirun in group master and the others in group workers, both under group cluster "
    "(see inventory/local.yml)"
)


class ShapeError(ValueError):
    """Input that is not a cluster's groups at all (a programming error of the caller, not a user's mistake)."""


def _names(value: Any, what: str) -> List[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ShapeError(f"{what} must be a list of inventory host names, got {type(value).__name__}")
    return [str(item) for item in value]


def _listing(names: Sequence[str]) -> str:
    return ", ".join(names)


def alias_index(name: str) -> Optional[int]:
    """K when ``name`` is ``node<K>`` (K from 1, no leading zero), else None."""
    found = ALIAS.fullmatch(name)
    return int(found.group(1)) if found else None


def worker_aliases(workers: Sequence[str], master: Optional[str] = None) -> Dict[str, str]:
    """Each worker's name on the master, in the workers' order (see the module's rules). The workers must be
    distinct and not the master: :func:`cluster_shape` reports that, this function assumes it."""
    indexes = [alias_index(name) for name in workers]
    taken = {index for index in indexes if index is not None}
    if master:
        master_index = alias_index(master)
        if master_index is not None:
            taken.add(master_index)
    aliases: Dict[str, str] = {}
    free = 1
    for worker, index in zip(workers, indexes):
        if index is None:
            while free in taken:
                free += 1
            index = free
            taken.add(index)
        aliases[worker] = f"{ALIAS_PREFIX}{index}"
    return aliases


def _variable(hostvars: Mapping[str, Any], node: str, path: Sequence[str]) -> Any:
    """hostvars[node][path...], None when a level is missing. Ansible's hostvars template each value on access: an
    expression that fails there (an undefined fact, say) raises, and is reported by the caller."""
    value: Any = hostvars.get(node)
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def node_address(hostvars: Mapping[str, Any], node: str, variable: str = ADDRESS_VARIABLE) -> Dict[str, Any]:
    """The address ``node`` is reached on: ``address`` (``''`` when there is none), ``source`` (``variable``, the
    default route, or None) and ``problem`` (a sentence naming the host and ``ssh_mesh_address``, or None)."""
    fix = f"set {ADDRESS_VARIABLE} for {node} (a host variable) to the address the other nodes reach it on"
    try:
        given = _variable(hostvars, node, [variable])
        # Ansible hands an expression that failed (an undefined fact) over as a marker that raises when used.
        if given is not None and not isinstance(given, str):
            given = str(given)
    except Exception as exc:  # Ansible's templating errors share no base class here
        problem = f"{ADDRESS_VARIABLE} of {node} cannot be read ({str(exc).splitlines()[0][:200]}): {fix}"
        return {"address": "", "source": None, "problem": problem}
    if given is not None and given != "":
        problem = address_problem(given)
        if problem:
            problem = f"{ADDRESS_VARIABLE} of {node} {given!r} {problem}: {REACHED_ON}"
        return {"address": "" if problem else str(given), "source": ADDRESS_VARIABLE, "problem": problem}
    try:
        facts = _variable(hostvars, node, ["ansible_facts"])
    except Exception:  # as above
        facts = None
    if not isinstance(facts, Mapping) or not facts:
        why = "no facts were gathered there"
        default = None
    else:
        route = facts.get("default_ipv4")
        default = route.get("address") if isinstance(route, Mapping) else None
        why = "it has no default route (ansible_facts.default_ipv4 has no address)"
    if default in (None, ""):
        problem = f"{node} has no address for the other nodes: {ADDRESS_VARIABLE} is not set and {why}: {fix}"
        return {"address": "", "source": None, "problem": problem}
    problem = address_problem(default)
    if problem:
        problem = f"the default route's address of {node} {default!r} {problem}: {fix}"
        return {"address": "", "source": "default_ipv4", "problem": problem}
    return {"address": str(default), "source": "default_ipv4", "problem": None}


def worker_problems(workers: Sequence[str], master: Optional[str], every: Sequence[str], what: str) -> List[str]:
    """What is wrong with a list of workers: the master among them, a machine listed twice, a name that is not a host
    of the inventory (``every``; empty, not checked). ``what`` names the list in the messages."""
    problems: List[str] = []
    listed = list(workers)
    chosen = master
    if chosen is not None and chosen in listed:
        problems.append(
            f"the master {chosen} is also in {what}: keep it in master only (the hostfile lists it first as localhost)"
        )
    counts = Counter(listed)
    twice = sorted(worker for worker, count in counts.items() if count > 1)
    if twice:
        problems.append(
            f"{what} lists {_listing(twice)} more than once, which would put the same machine twice in the hostfile: "
            "list each machine once"
        )
    known = set(every)
    unknown = [worker for worker in counts if known and worker not in known]
    if unknown:
        problems.append(
            f"{what} names {_listing(unknown)}, not hosts of the inventory: use inventory names (as in group workers)"
        )
    return problems


def cluster_shape(
    groups: Mapping[str, Any],
    hostvars: Optional[Mapping[str, Any]] = None,
    master: Optional[str] = None,
    workers: Optional[Sequence[str]] = None,
    prefix: Optional[str] = None,
    cluster: bool = False,
    address_variable: str = ADDRESS_VARIABLE,
) -> Dict[str, Any]:
    """The cluster's shape from the inventory's ``groups`` (``all``, ``master``, ``workers``, ``cluster``; absent
    groups are empty) and, when ``hostvars`` is given, the nodes' addresses.

    ``master`` and ``workers`` are a role's own variables (empty or None: from the groups); ``prefix`` names that
    role (``ssh_mesh``: messages then cite ``ssh_mesh_master`` and ``ssh_mesh_workers``). ``cluster`` also checks that
    group ``cluster`` holds exactly the master and the workers. ``address_variable`` is the node variable read for
    the address (a role may share each node's ``ssh_mesh_address`` under a fact of its own); messages always cite
    ``ssh_mesh_address``.

    Returns ``master`` (None when there is none), ``workers``, ``aliases`` (worker -> its name on the master),
    ``nodes`` (hostfile order: the master as ``localhost``, then the workers, each ``{'name', 'alias'}`` and, with
    ``hostvars``, ``address`` and ``address_problem``), ``hostfile`` (the aliases in that order), ``problems``
    (sentences that name what is wrong and what to change; empty when the shape is good), and with ``hostvars``:
    ``addresses`` (node -> address, ``''`` when it has none), ``master_address`` (the master's; ``127.0.0.1`` for a
    one-node cluster without one) and ``address_problems``."""
    if not isinstance(groups, Mapping):
        raise ShapeError(f"the inventory's groups must be a mapping of group names to host lists, got {groups!r}")
    every = _names(groups.get("all"), "group all")
    group_master = _names(groups.get("master"), "group master")
    group_workers = _names(groups.get("workers"), "group workers")
    master_var = f"{prefix}_master" if prefix else None
    workers_var = f"{prefix}_workers" if prefix else None
    problems: List[str] = []

    if len(group_master) > 1:
        problems.append(
            f"group master has {len(group_master)} hosts ({_listing(group_master)}), but a cluster has one master, "
            "the node that launches mpirun: keep it in master and move the others to workers"
        )
    chosen: Optional[str] = str(master) if master not in (None, "") else None
    if chosen is None:
        if group_master:
            chosen = group_master[0]
        else:
            problems.append(
                f"the inventory has no host in group master. {LAYOUT_HINT}"
                + (f", or set {master_var}" if master_var else "")
            )
    elif every and chosen not in every:
        problems.append(f"{master_var or 'the master'} {chosen!r} is not a host of the inventory")

    if workers is None:
        listed = group_workers
    elif isinstance(workers, str) or not isinstance(workers, (list, tuple)):
        problems.append(
            f"{workers_var or 'the workers'} must be a list of inventory host names, got a "
            f"{'string' if isinstance(workers, str) else type(workers).__name__}: write it as a YAML list, "
            "such as ['worker-1', 'worker-2']"
        )
        listed = []
    else:
        listed = [str(worker) for worker in workers]
    if not workers_var or workers is None:
        what = "group workers"
    else:
        what = f"{workers_var} (group workers)" if listed == group_workers else workers_var
    problems += worker_problems(listed, chosen, every, what)
    if cluster:
        members = set(_names(groups.get("cluster"), "group cluster"))
        wanted = set(group_master) | set(listed)
        if members != wanted:
            extra, missing = sorted(members - wanted), sorted(wanted - members)
            problems.append(
                "group cluster must hold the master and the workers and nothing else, but "
                + "; ".join(
                    part
                    for part in (
                        f"{_listing(extra)} {'is' if len(extra) == 1 else 'are'} in it and in neither" if extra else "",
                        f"{_listing(missing)} {'is' if len(missing) == 1 else 'are'} missing from it"
                        if missing
                        else "",
                    )
                    if part
                )
            )

    workers_out = [worker for worker in dict.fromkeys(listed) if worker != chosen]
    aliases = worker_aliases(workers_out, chosen)
    nodes: List[Dict[str, Any]] = ([{"name": chosen, "alias": LOCALHOST}] if chosen is not None else []) + [
        {"name": worker, "alias": alias} for worker, alias in aliases.items()
    ]
    shape: Dict[str, Any] = {
        "master": chosen,
        "workers": workers_out,
        "aliases": aliases,
        "nodes": nodes,
        "hostfile": [node["alias"] for node in nodes],
        "problems": problems,
    }
    if hostvars is not None:
        addresses: Dict[str, str] = {}
        address_problems: List[str] = []
        for node in nodes:
            found = node_address(hostvars, node["name"], address_variable)
            node["address"] = addresses[node["name"]] = found["address"]
            node["address_problem"] = found["problem"]
            # A one-node cluster is reached by nobody: its MASTER_ADDR is the loopback address.
            if found["problem"] and workers_out:
                address_problems.append(found["problem"])
        shared: Dict[str, List[str]] = {}
        for name, address in addresses.items():
            if address:
                shared.setdefault(address, []).append(name)
        clashes = [names for names in shared.values() if len(names) > 1]
        if clashes:
            listing = ", ".join(
                f"{name} has {address!r}" for names in clashes for name in names for address in [addresses[name]]
            )
            address_problems.append(
                f"the nodes' addresses ({ADDRESS_VARIABLE}, else the default route's) must differ, but {listing}, so "
                "the workers would not be distinct machines (two inventory names for one machine put it twice in the "
                f"hostfile): list each machine once, or set {ADDRESS_VARIABLE} per host to the address the other nodes "
                "reach it on"
            )
        master_address = addresses.get(chosen, "") if chosen is not None else ""
        shape.update(
            addresses=addresses,
            master_address=master_address or ("127.0.0.1" if chosen is not None and not workers_out else ""),
            address_problems=address_problems,
        )
    return shape
