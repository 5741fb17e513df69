# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rank layout: how the training processes of a cluster share the cores of a node.

One pure function, :func:`rank_layout`, turns facts about a node (physical cores, and in
``socket`` mode its sockets and NUMA nodes) and the wanted shape of the job (nodes, processes
per node, oneCCL workers per rank, cores left to the OS) into the numbers the launch needs:
``OMP_NUM_THREADS``, ``CCL_WORKER_COUNT``, ``CCL_WORKER_AFFINITY``, ``NUM_PROCESSES``,
``NUM_PROCESSES_PER_NODE``, a core map per rank and, when the ranks are pinned, the per-local-rank
cpulists the rank wrapper (``rank_exec.sh``) pins each rank to (``AMX_CLUSTER_RANK_CPUS``).
It runs on the controller (filter) and on targets (Python 3.8+), so it uses the standard
library only.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

MODES = ("shared", "partitioned", "socket")
# Variables the rank wrapper reads: one cpulist per local rank, separated by ";" (the whole rank, OpenMP and
# oneCCL cores), and the same for the OpenMP cores alone (its OMP_PLACES).
RANK_CPUS_VAR = "AMX_CLUSTER_RANK_CPUS"
RANK_OMP_CPUS_VAR = "AMX_CLUSTER_RANK_OMP_CPUS"


class LayoutError(ValueError):
    """A layout that cannot run; the message names the numbers and what to change."""


def cpulist(cores: Iterable[int]) -> str:
    """Render core numbers in Linux cpulist form (``0-5,8,10-11``), as taskset/numactl read it."""
    runs: List[List[int]] = []
    for core in sorted(set(cores)):
        if runs and core == runs[-1][1] + 1:
            runs[-1][1] = core
        else:
            runs.append([core, core])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _as_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or value is None:
        raise LayoutError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if isinstance(value, str):
        value = value.strip()
        if not value.lstrip("-").isdigit():
            raise LayoutError(f"{name} must be an integer >= {minimum}, got {value!r}")
        value = int(value)
    if not isinstance(value, int):
        raise LayoutError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise LayoutError(f"{name} must be >= {minimum}, got {value}")
    return value


def _parse_affinity(value: Union[str, Sequence[Any]]) -> List[int]:
    items = [part.strip() for part in value.split(",")] if isinstance(value, str) else list(value)
    cores: List[int] = []
    for item in items:
        cores.append(_as_int("each core in ccl_worker_affinity", item, 0))
    return cores


def _as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1", "false", "no", "off", "0"):
        return value.strip().lower() in ("true", "yes", "on", "1")
    raise LayoutError(f"{name} must be true or false, got {value!r}")


def _core_list(name: str, value: Any) -> List[int]:
    if not isinstance(value, (list, tuple)):
        raise LayoutError(f"{name} must be a list of core numbers, got {type(value).__name__}")
    return [_as_int(f"each core in {name}", item, 0) for item in value]


def socket_cores(topology: Optional[Mapping[str, Any]], physical_cores: int) -> List[Dict[str, Any]]:
    """The node's sockets as ``[{"socket", "numa_nodes", "cores"}]``, checked, sorted by socket id.

    From ``topology["socket_cores"]`` (cpu_facts: one entry per socket, ``cores`` the first logical CPU of
    each physical core the process may use). Without it (older facts): one socket holding cores
    ``0 .. physical_cores-1``. Each socket also gets ``numa_cores``, its cores per NUMA node (from
    ``topology["numa_nodes"]``, ``[{"node", "cpus"}]``) when every core of the socket is in one of its listed
    NUMA nodes, else ``None``.
    """
    topology = topology or {}
    if not isinstance(topology, Mapping):
        raise LayoutError(f"topology must be a mapping (cpu_facts' topology), got {type(topology).__name__}")
    raw = topology.get("socket_cores")
    if raw in (None, []):
        return [{"socket": 0, "numa_nodes": [], "cores": list(range(physical_cores)), "numa_cores": None}]
    if not isinstance(raw, (list, tuple)):
        raise LayoutError(f"topology.socket_cores must be a list, one entry per socket, got {type(raw).__name__}")
    numa_cpus: Dict[int, Set[int]] = {}
    for entry in topology.get("numa_nodes") or []:
        if isinstance(entry, Mapping) and "node" in entry and isinstance(entry.get("cpus"), (list, tuple)):
            numa_cpus[_as_int("topology.numa_nodes[].node", entry["node"], 0)] = set(
                _core_list("topology.numa_nodes[].cpus", entry["cpus"])
            )
    sockets: List[Dict[str, Any]] = []
    seen: Dict[int, int] = {}
    for index, entry in enumerate(raw):
        where = f"topology.socket_cores[{index}]"
        if not isinstance(entry, Mapping) or "socket" not in entry or "cores" not in entry:
            raise LayoutError(f"{where} must be a mapping with socket, numa_nodes and cores, got {entry!r:.80}")
        socket = _as_int(f"{where}.socket", entry["socket"], 0)
        cores = sorted(_core_list(f"{where}.cores", entry["cores"]))
        if not cores:
            raise LayoutError(f"{where}.cores is empty: socket {socket} has no core the process may use")
        if len(set(cores)) != len(cores):
            raise LayoutError(f"{where}.cores lists a core twice")
        for core in cores:
            if core in seen:
                raise LayoutError(f"core {core} is listed on socket {seen[core]} and on socket {socket}")
            seen[core] = socket
        nodes = sorted(_core_list(f"{where}.numa_nodes", entry.get("numa_nodes") or []))
        numa_cores: Optional[List[List[int]]] = None
        if len(nodes) > 1 and all(node in numa_cpus for node in nodes):
            split = [[core for core in cores if core in numa_cpus[node]] for node in nodes]
            if sum(len(part) for part in split) == len(cores) and all(split):
                numa_cores = split
        sockets.append({"socket": socket, "numa_nodes": nodes, "cores": cores, "numa_cores": numa_cores})
    ids = [s["socket"] for s in sockets]
    if len(set(ids)) != len(ids):
        raise LayoutError(f"topology.socket_cores lists a socket twice: {ids}")
    # cpu_facts' fallback when it has no per-CPU socket and core ids lists every logical CPU as a core: pinning
    # ranks to those would put threads on hyperthreads and count them as cores.
    listed = len(seen)
    if listed > physical_cores:
        raise LayoutError(
            f"socket mode needs each CPU's socket and core id, and these facts have none: topology.socket_cores "
            f"lists {listed} CPUs as cores on a node of {physical_cores} physical cores (cpu_facts without lscpu -p "
            "or /proc/cpuinfo's physical id and core id counts every logical CPU), so socket mode cannot tell a "
            "core from its hyperthread; use train_layout_mode shared or partitioned, or gather the facts where "
            "lscpu -p works"
        )
    return sorted(sockets, key=lambda s: s["socket"])


def _topology_echo(sockets: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The topology a layout was computed from, in the input's shape (to compute it again, e.g. on fewer nodes)."""
    numa = [
        {"node": node, "cpus": part}
        for s in sockets
        if s["numa_cores"]
        for node, part in zip(s["numa_nodes"], s["numa_cores"])
    ]
    echo: Dict[str, Any] = {
        "socket_cores": [{"socket": s["socket"], "numa_nodes": s["numa_nodes"], "cores": s["cores"]} for s in sockets]
    }
    if numa:
        echo["numa_nodes"] = numa
    return echo


def _socket_slices(
    sockets: List[Dict[str, Any]], ppn: int, workers: int, reserved: int
) -> Tuple[List[Dict[str, Any]], List[int], int, bool]:
    """Per-rank cores of ``mode=socket``: (ranks' cores, OS cores, cores left unused, NUMA-aligned)."""
    count = len(sockets)
    if ppn % count and count % ppn:
        lower = max(count * (ppn // count), count)
        raise LayoutError(
            f"processes_per_node={ppn} does not split the node's {count} sockets evenly: mode=socket needs a "
            f"multiple of {count} ranks per node (each socket gets the same number, e.g. {lower} or "
            f"{lower + count}) or a divisor of {count} (each rank gets whole sockets); change "
            "processes_per_node, or use mode=partitioned (ranks may then straddle sockets)"
        )
    # Domains: the units the ranks are spread over, and the OS reserve with them.
    if ppn >= count:
        per_socket = ppn // count
        aligned = all(s["numa_cores"] and per_socket % len(s["numa_cores"]) == 0 for s in sockets)
        domains = []
        for s in sockets:
            parts = s["numa_cores"] if aligned else [s["cores"]]
            nodes = s["numa_nodes"] if aligned else [None]
            domains.extend({"socket": s["socket"], "numa": node, "cores": part} for part, node in zip(parts, nodes))
        per_domain = ppn // len(domains)
        group = 1
    else:
        aligned = False
        domains = [{"socket": s["socket"], "numa": None, "cores": s["cores"]} for s in sockets]
        per_domain = 1
        group = count // ppn
    os_each = -(-reserved // len(domains))  # the reserve, rounded up to a multiple of the domains
    for d in domains:
        if os_each >= len(d["cores"]):
            where = f"socket {d['socket']}" + (f" (NUMA node {d['numa']})" if d["numa"] is not None else "")
            raise LayoutError(
                f"os_reserved_cores={reserved} is {os_each} per {'NUMA node' if aligned else 'socket'}, which "
                f"leaves no core for training on {where} ({len(d['cores'])} cores): lower os_reserved_cores"
            )
    usable = [d["cores"][os_each:] for d in domains]
    size = min(len(cores) for cores in usable) // per_domain
    unit = "NUMA node" if aligned else "socket"
    if size < 1:
        fewest = min(len(c) for c in usable)
        raise LayoutError(
            f"processes_per_node={ppn} is more than the {fewest * len(domains)} cores available for training "
            f"({per_domain} ranks on each {unit}, which keeps {fewest} cores after {os_each} for the OS): lower "
            f"processes_per_node to at most {fewest * len(domains)} or os_reserved_cores"
        )
    if size * group - workers < 1:
        raise LayoutError(
            f"no core left for OpenMP threads: each rank gets {size * group} cores ({unit} cores after "
            f"{os_each} for the OS, split among {per_domain} ranks), all taken by {workers} oneCCL workers; "
            "lower ccl_workers, processes_per_node or os_reserved_cores"
        )
    slices: List[Dict[str, Any]] = []
    if group == 1:
        for d, cores in zip(domains, usable):
            for j in range(per_domain):
                slices.append({"cores": cores[j * size : (j + 1) * size], "socket": d["socket"], "numa": d["numa"]})
    else:
        for first in range(0, count, group):
            cores = [c for d in usable[first : first + group] for c in d[:size]]
            slices.append({"cores": cores, "socket": [d["socket"] for d in domains[first : first + group]]})
    ranks_cores = []
    for piece in slices:
        cores = piece["cores"]
        omp_count = len(cores) - workers
        ranks_cores.append(
            {
                "omp": cores[:omp_count],
                "ccl": cores[omp_count:],
                "socket": piece["socket"],
                "numa_node": piece.get("numa"),
            }
        )
    os_cores = [c for d in domains for c in d["cores"][:os_each]]
    unused = sum(len(c) for c in usable) - size * per_domain * len(domains)
    return ranks_cores, os_cores, unused, aligned


def rank_layout(
    physical_cores: Any,
    nodes: Any = 1,
    processes_per_node: Any = 1,
    ccl_workers: Any = 0,
    os_reserved_cores: Any = 0,
    mode: str = "shared",
    omp_num_threads: Any = None,
    ccl_worker_affinity: Optional[Union[str, Sequence[Any]]] = None,
    num_processes: Any = None,
    topology: Optional[Mapping[str, Any]] = None,
    pin: Any = None,
    oversubscribe: Any = False,
) -> Dict[str, Any]:
    """Compute the thread and core layout of a CPU training job.

    Inputs: ``physical_cores`` per node (physical, not logical CPUs), ``nodes``,
    ``processes_per_node`` (ranks per node), ``ccl_workers`` (oneCCL worker threads per rank,
    0 when the backend is not ccl), ``os_reserved_cores`` (cores kept free for the kernel and
    other processes). Optional pins: ``omp_num_threads``, ``ccl_worker_affinity`` (``"auto"``,
    ``"explicit"`` or a list of core numbers, one per local oneCCL worker) and ``num_processes``
    (fewer ranks than ``nodes * processes_per_node``, the last node then runs fewer). ``topology``
    (cpu_facts' topology, read in ``socket`` mode), ``pin`` (pin each rank to its cores) and
    ``oversubscribe`` (allow ``omp_num_threads`` beyond a rank's cores in ``socket`` mode).

    Core numbering: cores ``0 .. physical_cores-1`` are the node's physical cores (on Linux x86
    the logical CPU numbers of each core's first hardware thread). The node is laid out as
    ``[OS cores][OpenMP cores][oneCCL cores]``: the OS keeps the first cores (where interrupts
    and housekeeping land), oneCCL gets the last ones (where ``CCL_WORKER_AFFINITY=auto`` puts
    its workers for a process that is not bound to a subset of cores).

    ``mode="shared"`` (default) is the recipe's arithmetic: all ranks of a node share one
    OpenMP pool and one set of oneCCL cores::

        training_cores  = physical_cores - os_reserved_cores - ccl_workers
        OMP_NUM_THREADS = training_cores                      (per process)
        CCL_WORKER_COUNT = ccl_workers, CCL_WORKER_AFFINITY = auto

    The recipe's node (32 cores, 2 ranks, 2 oneCCL workers, 6 to the OS): 32 - 6 - 2 = 24 =
    ``OMP_NUM_THREADS`` ("24 cores for training, 2 for CCL, the last 6 to the OS; the 24
    training threads support 2 processes"). Each process starts 24 OpenMP threads, so the
    node runs 2 * (24 + 2) = 52 threads on 26 cores: ``oversubscription`` reports that ratio
    (2.0 here).

    ``mode="partitioned"`` gives each rank its own cores, with no oversubscription::

        cores_per_rank  = (physical_cores - os_reserved_cores) // processes_per_node
        OMP_NUM_THREADS = cores_per_rank - ccl_workers
        CCL_WORKER_AFFINITY = the last ccl_workers cores of each rank's slice (explicit list)

    The recipe's node partitioned: (32 - 6) // 2 = 13 cores per rank, 11 OpenMP threads.

    ``shared`` is kept as the recipe's arithmetic on purpose: dividing its pool by the ranks per node
    would turn the recipe's 24 into 12, so it does not divide, and ``oversubscription`` says what that
    costs beyond the recipe's node (4 ranks on a 96-core node, 18 to the OS, 2 oneCCL workers: 76
    OpenMP threads per rank, 4 * 78 = 312 threads on 78 cores, oversubscription 4.0). A recipe preset
    uses it; ``socket`` is the layout for everything else (the train role's default).

    ``mode="socket"`` places ranks per socket, from ``topology`` (cpu_facts' topology:
    ``socket_cores``, one ``{"socket", "numa_nodes", "cores"}`` per socket, ``cores`` the first logical
    CPU of each physical core the process may use; see :func:`socket_cores` for the fallback to one
    socket of cores ``0 .. physical_cores-1`` when it is absent)::

        ranks per node  = k * sockets (k ranks per socket)   or  sockets = g * ranks (g whole sockets a rank)
        OS cores        = ceil(os_reserved_cores / domains) first cores of every domain (socket or NUMA node)
        cores_per_rank  = min over domains of (domain cores - its OS cores) // ranks per domain
        each rank       = a contiguous slice of its domain's remaining cores, in core order
        CCL cores       = the last ccl_workers cores of the rank's slice (so on its socket)
        OMP_NUM_THREADS = cores_per_rank - ccl_workers (the rest of the slice)

    The OS reserve is spread evenly: every domain gives up the same number of its first cores, the
    total rounded up to a multiple of the domains so that every rank gets the same slice (``OMP_NUM_THREADS``
    is one number for all ranks); ``os_reserved_cores`` in the result is what was taken (6 stays 6 on
    two sockets, 3 each; 5 becomes 6). OS cores are never in a rank's slice. Cores a domain has beyond
    the common slice size (sockets of unequal size, a split with a remainder) stay unused and are
    counted in ``unused_cores``. No rank runs more threads than it has cores: ``omp_num_threads`` above
    the slice's OpenMP cores is refused unless ``oversubscribe`` is true.

    Ranks per node that neither are a multiple of the sockets nor divide them (3 ranks on 2 sockets)
    raise :class:`LayoutError` naming both numbers and the ranks per node that work; there is no
    silent fallback (a rank straddling sockets is what this mode exists to avoid; ``partitioned``
    remains for that). One rank on a 2-socket node takes both sockets (the single-node check), its
    oneCCL cores at the end of the last socket.

    Sub-NUMA clustering: when ``topology`` also lists ``numa_nodes`` (``[{"node", "cpus"}]``, as
    cpu_facts does) and the ranks per socket are a multiple of the socket's NUMA nodes, the domains
    are the NUMA nodes: each rank's slice lies inside one NUMA node (``numa_node`` in its entry) and
    first-touch keeps its memory there. Otherwise (one rank per socket on a socket with 2 NUMA nodes,
    or NUMA cpus unknown) the domain is the socket and a rank spans its socket's NUMA nodes; with SNC
    and 1 rank per socket that is the whole socket, as on a machine without SNC.

    Compared with IPEX's launcher (``STACKS.md``, "oneCCL / thread layout"): the same per-socket
    placement and the same even split of a socket's cores among its ranks (cores per rank = physical
    cores / processes per node when nothing goes to the OS); it differs in that IPEX gives the *first*
    ``CCL_WORKER_COUNT`` cores of each rank's slice to oneCCL and leaves no core to the OS, while here
    the OS keeps the first cores of each socket and oneCCL the *last* cores of each slice, which is
    where ``CCL_WORKER_AFFINITY=auto`` puts the workers of a rank pinned to that slice, so ``auto`` and
    the explicit list (the default here) agree.

    Pinning (``pin``; default true in ``socket`` mode, false otherwise): every rank is pinned to its
    OpenMP and oneCCL cores (``cpus`` in its entry; in ``shared`` mode the node's whole pool without
    the OS cores). ``env`` then carries ``AMX_CLUSTER_RANK_CPUS`` (one cpulist per local rank, ``;``
    between them) and ``AMX_CLUSTER_RANK_OMP_CPUS`` (the OpenMP cores alone), which ``rank_exec.sh``
    reads to pin its rank with ``taskset`` and set ``OMP_PLACES``.

    Raises :class:`LayoutError` (a ``ValueError``) for a layout that cannot run.
    """
    cores = _as_int("physical_cores", physical_cores, 1)
    node_count = _as_int("nodes", nodes, 1)
    ppn = _as_int("processes_per_node", processes_per_node, 1)
    workers = _as_int("ccl_workers", ccl_workers, 0)
    reserved = _as_int("os_reserved_cores", os_reserved_cores, 0)
    if mode not in MODES:
        raise LayoutError("mode must be one of {}, got {!r}".format(", ".join(MODES), mode))
    pinned = (mode == "socket") if pin is None else _as_bool("pin", pin)
    may_oversubscribe = _as_bool("oversubscribe", oversubscribe)
    sockets = socket_cores(topology, cores) if mode == "socket" else []

    usable = cores - reserved
    if usable < 1:
        raise LayoutError(
            f"os_reserved_cores={reserved} leaves no core for training on a node with {cores} physical cores: "
            f"reserve at most {cores - 1} cores for the OS"
        )
    if mode != "socket" and ppn > usable:
        raise LayoutError(
            f"processes_per_node={ppn} is more than the {usable} cores available for training "
            f"({cores} physical cores - {reserved} for the OS): lower processes_per_node to at most {usable} "
            "or os_reserved_cores"
        )

    os_cores = list(range(reserved))
    ranks_cores: List[Dict[str, Any]] = []
    numa_aligned = False
    if mode == "socket":
        ranks_cores, os_cores, unused, numa_aligned = _socket_slices(sockets, ppn, workers, reserved)
        reserved = len(os_cores)
        usable = sum(len(s["cores"]) for s in sockets) - reserved
        computed_omp = len(ranks_cores[0]["omp"])
    elif mode == "shared":
        training = usable - workers
        if training < 1:
            raise LayoutError(
                f"no core left for OpenMP threads: {cores} physical cores - {reserved} for the OS - "
                f"{workers} oneCCL workers = {training}; lower ccl_workers or os_reserved_cores"
            )
        computed_omp = training
        omp_pool = list(range(reserved, reserved + training))
        ccl_pool = list(range(reserved + training, cores))
        ranks_cores = [{"omp": omp_pool, "ccl": ccl_pool} for _local in range(ppn)]
        unused = 0
    else:
        per_rank = usable // ppn
        computed_omp = per_rank - workers
        if computed_omp < 1:
            raise LayoutError(
                f"no core left for OpenMP threads: ({cores} physical cores - {reserved} for the OS) // {ppn} "
                f"processes per node = {per_rank} cores per rank, all taken by {workers} oneCCL workers; "
                "lower ccl_workers or processes_per_node, or use mode=shared"
            )
        for local in range(ppn):
            start = reserved + local * per_rank
            ranks_cores.append(
                {
                    "omp": list(range(start, start + computed_omp)),
                    "ccl": list(range(start + computed_omp, start + per_rank)),
                }
            )
        unused = usable - per_rank * ppn

    omp = computed_omp
    if omp_num_threads is not None:
        omp = _as_int("omp_num_threads", omp_num_threads, 1)
        if omp > cores:
            raise LayoutError(
                f"omp_num_threads={omp} is more than the node's {cores} physical cores: pin at most {cores} "
                f"(or leave it unset to get {computed_omp})"
            )
        if mode == "socket" and omp > computed_omp and not may_oversubscribe:
            raise LayoutError(
                f"omp_num_threads={omp} is more than the {computed_omp} OpenMP cores of each rank in mode=socket "
                f"(its slice of its socket less {workers} oneCCL cores): pin at most {computed_omp}, leave it unset, "
                "or set oversubscribe to run more threads than cores"
            )

    total_slots = node_count * ppn
    world = total_slots
    if num_processes is not None:
        world = _as_int("num_processes", num_processes, 1)
        if world > total_slots:
            raise LayoutError(
                f"num_processes={world} is more than nodes * processes_per_node = {node_count} * {ppn} = "
                f"{total_slots}: add nodes, raise processes_per_node or lower num_processes"
            )
        if world <= (node_count - 1) * ppn:
            raise LayoutError(
                f"num_processes={world} leaves node {node_count - 1} without a rank ({node_count} nodes * {ppn} "
                "processes per node): use fewer nodes or more processes"
            )

    affinity: Optional[str] = None
    if workers == 0:
        if ccl_worker_affinity not in (None, "auto", "explicit"):
            raise LayoutError(
                f"ccl_worker_affinity={ccl_worker_affinity!r} is set but ccl_workers is 0: "
                "set ccl_workers (oneCCL workers per rank) or drop the affinity"
            )
    else:
        wanted = ccl_worker_affinity
        if wanted is None:
            wanted = "auto" if mode == "shared" else "explicit"
        if wanted == "auto":
            affinity = "auto"
        elif wanted == "explicit":
            affinity = ",".join(str(c) for r in ranks_cores for c in r["ccl"])
        else:
            listed = _parse_affinity(wanted)
            if len(listed) != workers * ppn:
                raise LayoutError(
                    f"ccl_worker_affinity lists {len(listed)} cores but oneCCL needs one per local worker: "
                    f"{workers} workers * {ppn} processes per node = {workers * ppn} cores"
                )
            affinity = ",".join(str(c) for c in listed)
            for local, rank_cores in enumerate(ranks_cores):
                rank_cores["ccl"] = listed[local * workers : (local + 1) * workers]

    # The cores each rank is pinned to: its OpenMP and oneCCL cores (in shared mode the node's whole pool).
    rank_cpus = [cpulist(list(r["omp"]) + list(r["ccl"])) for r in ranks_cores]
    ranks: List[Dict[str, Any]] = []
    for rank in range(world):
        local = rank % ppn
        ranks.append(
            {
                "rank": rank,
                "node": rank // ppn,
                "local_rank": local,
                "omp_cores": cpulist(ranks_cores[local]["omp"]),
                "ccl_cores": cpulist(ranks_cores[local]["ccl"]),
                "cpus": rank_cpus[local] if pinned else None,
                "socket": ranks_cores[local].get("socket"),
                "numa_node": ranks_cores[local].get("numa_node"),
            }
        )

    threads_per_node = ppn * (omp + workers)
    env: Dict[str, str] = {
        "OMP_NUM_THREADS": str(omp),
        "NUM_PROCESSES": str(world),
        "NUM_PROCESSES_PER_NODE": str(ppn),
    }
    if workers:
        env["CCL_WORKER_COUNT"] = str(workers)
        env["CCL_WORKER_AFFINITY"] = str(affinity)
    if pinned:
        env[RANK_CPUS_VAR] = ";".join(rank_cpus)
        env[RANK_OMP_CPUS_VAR] = ";".join(cpulist(r["omp"]) for r in ranks_cores)

    return {
        "mode": mode,
        "physical_cores": cores,
        "nodes": node_count,
        "processes_per_node": ppn,
        "num_processes": world,
        "omp_num_threads": omp,
        "ccl_worker_count": workers,
        "ccl_worker_affinity": affinity,
        "os_reserved_cores": reserved,
        "os_cores": cpulist(os_cores),
        "unused_cores": unused,
        "threads_per_node": threads_per_node,
        "oversubscription": round(threads_per_node / float(usable), 2),
        "pin": pinned,
        "rank_cpus": ";".join(rank_cpus) if pinned else None,
        "sockets": len(sockets) if sockets else None,
        "numa_aligned": numa_aligned,
        "topology": _topology_echo(sockets) if sockets else None,
        "ranks": ranks,
        "env": env,
    }
