# Copyright: amx.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Rank layout: how the training processes of a cluster share the cores of a node.

One pure function, :func:`rank_layout`, turns facts about a node (physical cores) and the
wanted shape of the job (nodes, processes per node, oneCCL workers per rank, cores left to the
OS) into the numbers the launch needs: ``OMP_NUM_THREADS``, ``CCL_WORKER_COUNT``,
``CCL_WORKER_AFFINITY``, ``NUM_PROCESSES``, ``NUM_PROCESSES_PER_NODE`` and a core map per rank.
It runs on the controller (filter) and on targets (Python 3.8+), so it uses the standard
library only.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

MODES = ("shared", "partitioned")


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
) -> Dict[str, Any]:
    """Compute the thread and core layout of a CPU training job.

    Inputs: ``physical_cores`` per node (physical, not logical CPUs), ``nodes``,
    ``processes_per_node`` (ranks per node), ``ccl_workers`` (oneCCL worker threads per rank,
    0 when the backend is not ccl), ``os_reserved_cores`` (cores kept free for the kernel and
    other processes). Optional pins: ``omp_num_threads``, ``ccl_worker_affinity`` (``"auto"``,
    ``"explicit"`` or a list of core numbers, one per local oneCCL worker) and ``num_processes``
    (fewer ranks than ``nodes * processes_per_node``, the last node then runs fewer).

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

    Raises :class:`LayoutError` (a ``ValueError``) for a layout that cannot run.
    """
    cores = _as_int("physical_cores", physical_cores, 1)
    node_count = _as_int("nodes", nodes, 1)
    ppn = _as_int("processes_per_node", processes_per_node, 1)
    workers = _as_int("ccl_workers", ccl_workers, 0)
    reserved = _as_int("os_reserved_cores", os_reserved_cores, 0)
    if mode not in MODES:
        raise LayoutError("mode must be one of {}, got {!r}".format(", ".join(MODES), mode))

    usable = cores - reserved
    if usable < 1:
        raise LayoutError(
            f"os_reserved_cores={reserved} leaves no core for training on a node with {cores} physical cores: "
            f"reserve at most {cores - 1} cores for the OS"
        )
    if ppn > usable:
        raise LayoutError(
            f"processes_per_node={ppn} is more than the {usable} cores available for training "
            f"({cores} physical cores - {reserved} for the OS): lower processes_per_node to at most {usable} "
            "or os_reserved_cores"
        )

    os_cores = list(range(reserved))
    ranks_cores: List[Dict[str, List[int]]] = []
    if mode == "shared":
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
        "ranks": ranks,
        "env": env,
    }
