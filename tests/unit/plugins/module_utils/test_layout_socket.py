# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""mode=socket of rank_layout on the node shapes of the recipe and beyond, built by hand in cpu_facts' shape."""

from __future__ import annotations

import pathlib

import pytest

from ansible_collections.amx.cluster.plugins.module_utils import cpu_info
from ansible_collections.amx.cluster.plugins.module_utils.launch import launch_env
from ansible_collections.amx.cluster.plugins.module_utils.layout import LayoutError, rank_layout


def expand(text):
    """A cpulist back to core numbers ("3-5,9" -> [3, 4, 5, 9])."""
    cores = []
    for part in filter(None, (text or "").split(",")):
        first, _sep, last = part.partition("-")
        cores.extend(range(int(first), int(last or first) + 1))
    return cores


def topology(sockets, cores, smt=2, numa_per_socket=1, interleaved=False):
    """cpu_facts' topology of a node: socket_cores (first logical CPU of each core) and numa_nodes (all CPUs).

    Linux numbering of the usual 2-socket server: the first threads of socket 0's cores, then socket 1's, then
    the second threads in the same order (r7iz.metal-16xl: socket 0 has CPUs 0-15 and 32-47). ``interleaved``:
    the BIOSes that alternate sockets (socket 0 even CPUs, socket 1 odd ones).
    """
    total = sockets * cores
    socket_cores, numa_nodes = [], []
    for socket in range(sockets):
        if interleaved:
            first = [socket + sockets * i for i in range(cores)]
        else:
            first = list(range(socket * cores, (socket + 1) * cores))
        nodes = list(range(socket * numa_per_socket, (socket + 1) * numa_per_socket))
        socket_cores.append({"socket": socket, "numa_nodes": nodes, "cores": first})
        per = cores // numa_per_socket
        for index, node in enumerate(nodes):
            part = first[index * per : (index + 1) * per]
            numa_nodes.append({"node": node, "cpus": part + ([c + total for c in part] if smt == 2 else [])})
    return {
        "sockets": sockets,
        "cores_per_socket": cores,
        "threads_per_core": smt,
        "physical_cores": total,
        "logical_cpus": total * smt,
        "socket_cores": socket_cores,
        "numa_nodes": numa_nodes,
    }


SHAPES = {
    "r7iz.metal-16xl": topology(2, 16),
    "r7iz.metal-32xl": topology(2, 32),
    "c7i.metal-48xl": topology(2, 48),
    "one socket, 56 cores": topology(1, 56),
    "2 x 16, SMT off": topology(2, 16, smt=1),
    "2 x 48, sub-NUMA clustering": topology(2, 48, numa_per_socket=2),
    "2 x 16, sockets interleaved": topology(2, 16, interleaved=True),
}


def socket_layout(topo, ppn, workers=2, reserved=None, **kwargs):
    cores = topo["physical_cores"]
    reserved = cores * 6 // 32 if reserved is None else reserved  # the train role's default reserve
    return rank_layout(
        cores,
        nodes=2,
        processes_per_node=ppn,
        ccl_workers=workers,
        os_reserved_cores=reserved,
        mode="socket",
        topology=topo,
        **kwargs,
    )


@pytest.mark.parametrize("ppn", [1, 2, 4])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_rank_keeps_to_its_socket_and_its_own_cores(shape, ppn):
    topo = SHAPES[shape]
    layout = socket_layout(topo, ppn)
    socket_of = {core: s["socket"] for s in topo["socket_cores"] for core in s["cores"]}
    local = [r for r in layout["ranks"] if r["node"] == 0]
    assert len(local) == ppn and len(layout["ranks"]) == 2 * ppn
    os_cores = set(expand(layout["os_cores"]))
    given = []
    for rank in local:
        omp, ccl, cpus = expand(rank["omp_cores"]), expand(rank["ccl_cores"]), expand(rank["cpus"])
        assert len(omp) == layout["omp_num_threads"] and len(ccl) == 2
        assert sorted(omp + ccl) == sorted(cpus)  # OpenMP + oneCCL = the rank's slice, which it is pinned to
        assert all(c in socket_of for c in cpus)  # first threads of cores only: no SMT sibling, no foreign CPU
        assert not os_cores & set(cpus)
        sockets = {socket_of[c] for c in cpus}
        if ppn >= topo["sockets"]:
            assert sockets == {rank["socket"]}  # every core of the rank on one socket
        else:
            assert sockets == set(rank["socket"])
        # oneCCL takes the last cores of the slice, on the rank's (last) socket
        slice_in_order = [c for s in topo["socket_cores"] for c in s["cores"] if c in cpus]
        assert slice_in_order[-2:] == ccl
        given.extend(cpus)
    assert len(given) == len(set(given))  # no core given twice
    # every core is the OS's, a rank's or counted unused; no oversubscription
    assert len(os_cores) + len(given) + layout["unused_cores"] == topo["physical_cores"]
    assert layout["oversubscription"] <= 1.0
    assert layout["pin"] is True
    assert layout["env"]["AMX_CLUSTER_RANK_CPUS"] == ";".join(r["cpus"] for r in local)
    assert layout["env"]["CCL_WORKER_AFFINITY"] == ",".join(r["ccl_cores"].replace("-", ",") for r in local)
    # the reserve, spread evenly over the sockets (or NUMA nodes), at least what was asked
    assert len(os_cores) >= topo["physical_cores"] * 6 // 32
    per_socket = [len([c for c in os_cores if socket_of[c] == s["socket"]]) for s in topo["socket_cores"]]
    assert len(set(per_socket)) == 1


# The six node shapes at 2 ranks per node, 2 oneCCL workers, the role's default OS reserve (cores * 6 // 32).
@pytest.mark.parametrize(
    ("shape", "omp", "os_cores", "rank_cpus", "affinity", "unused"),
    [
        ("r7iz.metal-16xl", 11, "0-2,16-18", "3-15;19-31", "14,15,30,31", 0),
        ("r7iz.metal-32xl", 24, "0-5,32-37", "6-31;38-63", "30,31,62,63", 0),
        ("c7i.metal-48xl", 37, "0-8,48-56", "9-47;57-95", "46,47,94,95", 0),
        ("one socket, 56 cores", 21, "0-9", "10-32;33-55", "31,32,54,55", 0),
        ("2 x 16, SMT off", 11, "0-2,16-18", "3-15;19-31", "14,15,30,31", 0),
        ("2 x 48, sub-NUMA clustering", 37, "0-8,48-56", "9-47;57-95", "46,47,94,95", 0),
    ],
)
def test_two_ranks_per_node(shape, omp, os_cores, rank_cpus, affinity, unused):
    layout = socket_layout(SHAPES[shape], 2)
    assert layout["omp_num_threads"] == omp
    assert layout["os_cores"] == os_cores
    assert layout["rank_cpus"] == rank_cpus
    assert layout["ccl_worker_affinity"] == affinity
    assert layout["unused_cores"] == unused
    assert layout["env"]["OMP_NUM_THREADS"] == str(omp)


def test_interleaved_numbering_keeps_each_rank_on_its_socket():
    layout = socket_layout(SHAPES["2 x 16, sockets interleaved"], 2)
    assert layout["os_cores"] == "0-5"  # 0, 2, 4 on socket 0 and 1, 3, 5 on socket 1
    assert layout["rank_cpus"] == "6,8,10,12,14,16,18,20,22,24,26,28,30;7,9,11,13,15,17,19,21,23,25,27,29,31"


def test_sub_numa_clustering_aligns_ranks_with_numa_nodes_when_they_match():
    topo = SHAPES["2 x 48, sub-NUMA clustering"]
    four = socket_layout(topo, 4)
    assert four["numa_aligned"] is True
    # 18 for the OS rounded up to 5 per NUMA node (4 NUMA nodes of 24 cores): 19 cores per rank
    assert four["os_cores"] == "0-4,24-28,48-52,72-76" and four["os_reserved_cores"] == 20
    assert four["rank_cpus"] == "5-23;29-47;53-71;77-95"
    assert [r["numa_node"] for r in four["ranks"][:4]] == [0, 1, 2, 3]
    numa_of = {c: n["node"] for n in topo["numa_nodes"] for c in n["cpus"]}
    for rank in four["ranks"][:4]:
        assert {numa_of[c] for c in expand(rank["cpus"])} == {rank["numa_node"]}
    # 1 rank per socket on 2 NUMA nodes per socket: the rank takes its whole socket, both NUMA nodes
    two = socket_layout(topo, 2)
    assert two["numa_aligned"] is False
    assert [r["numa_node"] for r in two["ranks"]] == [None] * 4
    assert {numa_of[c] for c in expand(two["ranks"][0]["cpus"])} == {0, 1}


def test_without_numa_cpus_the_socket_is_the_domain():
    topo = dict(SHAPES["2 x 48, sub-NUMA clustering"])
    del topo["numa_nodes"]
    layout = socket_layout(topo, 4)
    assert layout["numa_aligned"] is False
    assert layout["os_cores"] == "0-8,48-56"  # 9 per socket
    assert layout["rank_cpus"] == "9-27;28-46;57-75;76-94" and layout["unused_cores"] == 2


def test_one_rank_takes_both_sockets():
    layout = socket_layout(SHAPES["r7iz.metal-16xl"], 1)
    assert layout["omp_num_threads"] == 24  # 32 - 6 for the OS - 2 oneCCL: the shared arithmetic's one rank
    assert layout["ranks"][0]["cpus"] == "3-15,19-31"
    assert layout["ranks"][0]["ccl_cores"] == "30-31"
    assert layout["ranks"][0]["socket"] == [0, 1]


def test_older_facts_without_socket_cores_are_one_socket():
    old = {"sockets": 2, "physical_cores": 32}
    layout = rank_layout(32, processes_per_node=2, ccl_workers=2, os_reserved_cores=6, mode="socket", topology=old)
    assert layout["sockets"] == 1
    assert layout["rank_cpus"] == "6-18;19-31"  # as partitioned: (32 - 6) // 2 = 13 cores per rank
    assert layout["omp_num_threads"] == 11
    assert rank_layout(32, processes_per_node=2, mode="socket")["rank_cpus"] == "0-15;16-31"


def test_this_machine_two_cores_two_ranks_gloo():
    layout = rank_layout(2, processes_per_node=2, mode="socket", topology={"physical_cores": 2})
    assert layout["omp_num_threads"] == 1
    assert layout["rank_cpus"] == "0;1"
    assert layout["env"]["AMX_CLUSTER_RANK_OMP_CPUS"] == "0;1"
    assert "CCL_WORKER_COUNT" not in layout["env"]


def test_the_layout_computed_again_from_its_own_record_is_the_same():
    """The scaling sweep lays the job out again on fewer nodes from __train_layout's topology and reserve."""
    for shape in ("c7i.metal-48xl", "2 x 48, sub-NUMA clustering"):
        first = socket_layout(SHAPES[shape], 4, reserved=7)
        again = rank_layout(
            first["physical_cores"],
            nodes=1,
            processes_per_node=4,
            ccl_workers=2,
            os_reserved_cores=first["os_reserved_cores"],
            mode="socket",
            topology=first["topology"],
        )
        assert again["rank_cpus"] == first["rank_cpus"]
        assert again["os_cores"] == first["os_cores"]


def test_recipe_preset_keeps_the_shared_arithmetic_unpinned():
    layout = rank_layout(32, nodes=4, processes_per_node=2, ccl_workers=2, os_reserved_cores=6, mode="shared")
    assert (layout["omp_num_threads"], layout["ccl_worker_affinity"], layout["oversubscription"]) == (24, "auto", 2.0)
    assert layout["pin"] is False and layout["rank_cpus"] is None
    assert "AMX_CLUSTER_RANK_CPUS" not in layout["env"]
    pinned = rank_layout(32, 1, 2, 2, 6, mode="shared", pin=True)
    assert pinned["omp_num_threads"] == 24 and pinned["rank_cpus"] == "6-31;6-31"


def test_shared_does_not_divide_by_ranks_and_says_so():
    """4 ranks on a 96-core node: the recipe's arithmetic gives each rank the whole pool, 4x oversubscribed."""
    layout = rank_layout(96, processes_per_node=4, ccl_workers=2, os_reserved_cores=18, mode="shared")
    assert layout["omp_num_threads"] == 76
    assert layout["oversubscription"] == 4.0
    assert socket_layout(SHAPES["c7i.metal-48xl"], 4)["oversubscription"] <= 1.0


def test_oversubscription_only_when_asked():
    topo = SHAPES["r7iz.metal-16xl"]
    with pytest.raises(LayoutError, match="omp_num_threads=12 is more than the 11 OpenMP cores of each rank"):
        socket_layout(topo, 2, omp_num_threads=12)
    layout = socket_layout(topo, 2, omp_num_threads=12, oversubscribe=True)
    assert layout["omp_num_threads"] == 12 and layout["oversubscription"] > 1.0
    assert socket_layout(topo, 2, omp_num_threads=8)["omp_num_threads"] == 8


def test_pinning_can_be_turned_off():
    layout = socket_layout(SHAPES["r7iz.metal-16xl"], 2, pin=False)
    assert layout["pin"] is False and layout["rank_cpus"] is None
    assert {r["cpus"] for r in layout["ranks"]} == {None}
    assert "AMX_CLUSTER_RANK_CPUS" not in layout["env"] and "AMX_CLUSTER_RANK_OMP_CPUS" not in layout["env"]
    assert layout["ranks"][0]["omp_cores"] == "3-13"  # the cores are still computed


def test_the_launch_exports_the_cpulists_of_a_pinned_layout():
    dialect = {"backend": "ccl", "world_size": 4, "flags": []}
    pinned = launch_env(socket_layout(SHAPES["r7iz.metal-16xl"], 2), dialect, master_addr="10.0.0.1")
    assert pinned["AMX_CLUSTER_RANK_CPUS"] == "3-15;19-31"
    assert pinned["AMX_CLUSTER_RANK_OMP_CPUS"] == "3-13;19-29"
    assert pinned["CCL_WORKER_AFFINITY"] == "14,15,30,31"
    loose = launch_env(socket_layout(SHAPES["r7iz.metal-16xl"], 2, pin=False), dialect, master_addr="10.0.0.1")
    assert "AMX_CLUSTER_RANK_CPUS" not in loose


def with_sockets(entries, **extra):
    return dict({"socket_cores": entries}, **extra)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"processes_per_node": 3},
            "processes_per_node=3 does not split the node's 2 sockets evenly: mode=socket needs a multiple of 2 "
            "ranks per node (each socket gets the same number, e.g. 2 or 4) or a divisor of 2",
        ),
        ({"processes_per_node": 5}, "e.g. 4 or 6"),
        (
            {"processes_per_node": 32},
            "processes_per_node=32 is more than the 26 cores available for training (16 ranks on each socket, which "
            "keeps 13 cores after 3 for the OS): lower processes_per_node to at most 26",
        ),
        ({"os_reserved_cores": 31}, "os_reserved_cores=31 is 16 per socket, which leaves no core for training"),
        ({"ccl_workers": 13}, "each rank gets 13 cores"),
        ({"topology": with_sockets("0-15")}, "topology.socket_cores must be a list, one entry per socket, got str"),
        ({"topology": with_sockets([{"socket": 0}])}, "topology.socket_cores[0] must be a mapping with socket"),
        ({"topology": with_sockets([{"socket": 0, "cores": []}])}, "topology.socket_cores[0].cores is empty"),
        (
            {"topology": with_sockets([{"socket": 0, "cores": [0, 1]}, {"socket": 1, "cores": [1, 2]}])},
            "core 1 is listed on socket 0 and on socket 1",
        ),
        (
            {"topology": with_sockets([{"socket": 0, "cores": [0, 1]}, {"socket": 0, "cores": [2, 3]}])},
            "topology.socket_cores lists a socket twice: [0, 0]",
        ),
        ({"topology": with_sockets([{"socket": 0, "cores": [0, "x"]}])}, "each core in topology.socket_cores[0]"),
        ({"topology": with_sockets([{"socket": 0, "cores": "0-3"}])}, "topology.socket_cores[0].cores must be a list"),
        ({"topology": "2 sockets"}, "topology must be a mapping"),
        ({"pin": "maybe"}, "pin must be true or false, got 'maybe'"),
        ({"oversubscribe": 2}, "oversubscribe must be true or false"),
    ],
)
def test_bad_inputs_are_refused_with_the_numbers_and_the_fix(kwargs, message):
    arguments = {
        "processes_per_node": 2,
        "ccl_workers": 2,
        "os_reserved_cores": 6,
        "topology": SHAPES["r7iz.metal-16xl"],
    }
    arguments.update(kwargs)
    with pytest.raises(LayoutError) as error:
        rank_layout(32, mode="socket", **arguments)
    assert message in str(error.value)


# tests/unit/fixtures/cpu/spr_8468: a 2 x 48-core Xeon 8468 (192 CPUs) known only from its plain lscpu text, so its
# facts have no per-CPU socket and core ids and socket_cores falls back to one socket of 192 "cores".
SPR_8468_LSCPU = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "cpu" / "spr_8468" / "lscpu.txt"


def test_socket_mode_refuses_facts_without_per_cpu_core_ids():
    topology = cpu_info.topology([], cpu_info.parse_lscpu_text(SPR_8468_LSCPU.read_text()))
    assert topology["physical_cores"] == 96 and sum(len(s["cores"]) for s in topology["socket_cores"]) == 192
    with pytest.raises(LayoutError) as error:
        # The recipe's shape on it: without the refusal, OMP_NUM_THREADS 172 (192 CPUs - 18 for the OS - 2 oneCCL).
        rank_layout(96, processes_per_node=1, ccl_workers=2, os_reserved_cores=18, mode="socket", topology=topology)
    assert "socket mode needs each CPU's socket and core id" in str(error.value)
    assert "lists 192 CPUs as cores on a node of 96 physical cores" in str(error.value)
    assert "use train_layout_mode shared or partitioned" in str(error.value)
    # The modes that do not read per-CPU ids lay the node out from its 96 physical cores.
    shared = rank_layout(
        96, processes_per_node=1, ccl_workers=2, os_reserved_cores=18, mode="shared", topology=topology
    )
    assert shared["omp_num_threads"] == 96 - 18 - 2
