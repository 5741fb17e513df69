# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
import pytest

from ansible_collections.amx.cluster.plugins.module_utils.layout import LayoutError, cpulist, rank_layout


def test_recipe_node_gives_the_recipes_numbers():
    """32 physical cores, 2 ranks per node, 2 oneCCL workers, 6 cores to the OS, 4 nodes (the recipe)."""
    layout = rank_layout(32, nodes=4, processes_per_node=2, ccl_workers=2, os_reserved_cores=6)
    assert layout["env"] == {
        "OMP_NUM_THREADS": "24",
        "NUM_PROCESSES": "8",
        "NUM_PROCESSES_PER_NODE": "2",
        "CCL_WORKER_COUNT": "2",
        "CCL_WORKER_AFFINITY": "auto",
    }
    assert layout["omp_num_threads"] == 24
    assert layout["num_processes"] == 8
    assert layout["os_cores"] == "0-5"
    # 2 ranks * (24 OpenMP + 2 oneCCL threads) on the 26 cores left by the OS
    assert layout["threads_per_node"] == 52
    assert layout["oversubscription"] == 2.0
    assert [(r["rank"], r["node"], r["local_rank"]) for r in layout["ranks"]] == [
        (rank, rank // 2, rank % 2) for rank in range(8)
    ]
    assert {(r["omp_cores"], r["ccl_cores"]) for r in layout["ranks"]} == {("6-29", "30-31")}


def test_recipe_node_partitioned_gives_each_rank_its_own_cores():
    layout = rank_layout(32, nodes=1, processes_per_node=2, ccl_workers=2, os_reserved_cores=6, mode="partitioned")
    assert layout["omp_num_threads"] == 11  # (32 - 6) // 2 = 13 cores per rank, 2 of them for oneCCL
    assert layout["ccl_worker_affinity"] == "17,18,30,31"
    assert [(r["omp_cores"], r["ccl_cores"]) for r in layout["ranks"]] == [("6-16", "17-18"), ("19-29", "30-31")]
    assert layout["threads_per_node"] == 26
    assert layout["oversubscription"] == 1.0
    assert layout["unused_cores"] == 0


@pytest.mark.parametrize(
    ("args", "kwargs", "omp", "world", "affinity"),
    [
        ((2, 1, 2), {"mode": "partitioned"}, 1, 2, None),  # this machine: 2 cores, 2 ranks, gloo
        ((2, 1, 2), {}, 2, 2, None),
        ((1,), {}, 1, 1, None),
        ((64, 2, 4, 1, 0), {"mode": "partitioned"}, 15, 8, "15,31,47,63"),
        ((33, 1, 2, 1, 4), {"mode": "partitioned"}, 13, 2, "17,31"),  # 29 // 2 = 14, one core unused
        ((32, 4, 2, 2, 6), {"omp_num_threads": 12}, 12, 8, "auto"),
        ((32, 4, 2, 2, 6), {"omp_num_threads": "16", "num_processes": 7}, 16, 7, "auto"),
        ((32, 1, 2, 2, 6), {"ccl_worker_affinity": "explicit"}, 24, 2, "30,31,30,31"),
        ((32, 1, 2, 2, 6), {"ccl_worker_affinity": [0, 1, 16, 17]}, 24, 2, "0,1,16,17"),
        ((32, 1, 2, 2, 6), {"ccl_worker_affinity": "0, 1,16,17"}, 24, 2, "0,1,16,17"),
        (("32", "4", "2", "2", "6"), {}, 24, 8, "auto"),
    ],
)
def test_layouts(args, kwargs, omp, world, affinity):
    layout = rank_layout(*args, **kwargs)
    assert layout["omp_num_threads"] == omp
    assert layout["env"]["OMP_NUM_THREADS"] == str(omp)
    assert layout["num_processes"] == world
    assert len(layout["ranks"]) == world
    assert layout["ccl_worker_affinity"] == affinity
    assert ("CCL_WORKER_COUNT" in layout["env"]) == (layout["ccl_worker_count"] > 0)


def test_explicit_affinity_list_assigns_cores_to_local_ranks():
    layout = rank_layout(32, 1, 2, 2, 6, ccl_worker_affinity=[0, 1, 16, 17])
    assert [r["ccl_cores"] for r in layout["ranks"]] == ["0-1", "16-17"]


def test_partial_last_node():
    layout = rank_layout(8, nodes=3, processes_per_node=2, num_processes=5)
    assert [(r["node"], r["local_rank"]) for r in layout["ranks"]] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0,), {}, "physical_cores must be >= 1, got 0"),
        ((32, 0), {}, "nodes must be >= 1"),
        ((32, 1, 0), {}, "processes_per_node must be >= 1"),
        ((32, 1, 1, -1), {}, "ccl_workers must be >= 0"),
        ((True,), {}, "physical_cores must be an integer"),
        (("many",), {}, "physical_cores must be an integer"),
        ((2.5,), {}, "physical_cores must be an integer"),
        ((32, 1, 1, 0, 32), {}, "os_reserved_cores=32 leaves no core for training on a node with 32 physical cores"),
        ((4, 1, 8), {}, "processes_per_node=8 is more than the 4 cores available for training"),
        ((32, 1, 40, 0, 0), {}, "lower processes_per_node to at most 32"),
        ((8, 1, 2, 2, 6), {}, "8 physical cores - 6 for the OS - 2 oneCCL workers = 0"),
        ((32, 1, 2, 13, 6), {"mode": "partitioned"}, "= 13 cores per rank, all taken by 13 oneCCL workers"),
        ((32,), {"mode": "spread"}, "mode must be one of shared, partitioned"),
        ((32,), {"omp_num_threads": 0}, "omp_num_threads must be >= 1"),
        ((32,), {"omp_num_threads": 64}, "omp_num_threads=64 is more than the node's 32 physical cores"),
        ((32, 2, 2), {"num_processes": 5}, "num_processes=5 is more than nodes * processes_per_node = 2 * 2 = 4"),
        ((32, 3, 2), {"num_processes": 4}, "num_processes=4 leaves node 2 without a rank"),
        ((32, 1, 2, 2), {"ccl_worker_affinity": [1, 2, 3]}, "lists 3 cores but oneCCL needs one per local worker"),
        ((32, 1, 2, 2), {"ccl_worker_affinity": "1,x,3,4"}, "each core in ccl_worker_affinity must be an integer"),
        ((32, 1, 2, 0), {"ccl_worker_affinity": [1, 2]}, "but ccl_workers is 0"),
    ],
)
def test_impossible_layouts_are_refused(args, kwargs, message):
    with pytest.raises(LayoutError) as error:
        rank_layout(*args, **kwargs)
    assert message in str(error.value)
    assert isinstance(error.value, ValueError)


@pytest.mark.parametrize(
    ("cores", "text"),
    [([], ""), ([3], "3"), ([0, 1, 2, 5, 7, 8], "0-2,5,7-8"), ([9, 8, 8, 1], "1,8-9")],
)
def test_cpulist(cores, text):
    assert cpulist(cores) == text
