# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.rank_layout: a thin wrapper over module_utils.layout.rank_layout."""

from __future__ import annotations

DOCUMENTATION = r"""
name: rank_layout
short_description: Thread and core layout of a distributed CPU training job
version_added: 0.1.0
author: amx.cluster contributors
description:
  - Computes C(OMP_NUM_THREADS), C(CCL_WORKER_COUNT), C(CCL_WORKER_AFFINITY), C(NUM_PROCESSES) and
    C(NUM_PROCESSES_PER_NODE), plus the cores of every rank, from the physical cores of a node and the shape of the job.
  - The node is laid out as OS cores first, then the OpenMP cores, then the oneCCL cores (where
    C(CCL_WORKER_AFFINITY=auto) puts the workers).
  - With O(mode=shared) (the recipe's arithmetic) every rank of a node uses the same pool of
    O(_input) - O(os_reserved_cores) - O(ccl_workers) OpenMP threads; the recipe's node (32 cores, 2 ranks, 2 oneCCL
    workers, 6 cores for the OS) gets C(OMP_NUM_THREADS=24).
  - With O(mode=partitioned) each rank gets its own (O(_input) - O(os_reserved_cores)) // O(processes_per_node) cores,
    the last O(ccl_workers) of them for oneCCL.
  - With O(mode=socket) the ranks are placed per socket from O(topology) (cpu_facts' topology, its C(socket_cores));
    O(processes_per_node) must be a multiple of the sockets (each socket's cores, less its share of the OS reserve,
    are split among its ranks) or divide them (a rank takes whole sockets); each rank's oneCCL cores are the last
    O(ccl_workers) cores of its slice, its OpenMP threads the rest. With sub-NUMA clustering the ranks align to NUMA
    nodes when the ranks per socket are a multiple of the NUMA nodes per socket. See the module_utils docstring for
    the full rule and how it compares with IPEX's launcher.
  - With O(pin) (default in O(mode=socket)) every rank's cores go to C(env.AMX_CLUSTER_RANK_CPUS), one cpulist per
    local rank, which the train role's rank wrapper pins the rank to with C(taskset).
  - A layout that cannot run fails with a message naming the numbers and what to change.
positional: nodes, processes_per_node, ccl_workers, os_reserved_cores
options:
  _input:
    description: Physical cores per node (not logical CPUs).
    type: int
    required: true
  nodes:
    description: Number of nodes.
    type: int
    default: 1
  processes_per_node:
    description: Training processes (ranks) per node.
    type: int
    default: 1
  ccl_workers:
    description: oneCCL worker threads per rank; 0 when the backend is not ccl.
    type: int
    default: 0
  os_reserved_cores:
    description: Cores kept free for the kernel and other processes.
    type: int
    default: 0
  mode:
    description: V(shared) (the recipe), V(partitioned) (no oversubscription) or V(socket) (per socket, pinned).
    type: str
    default: shared
    choices: [shared, partitioned, socket]
  omp_num_threads:
    description: Pin C(OMP_NUM_THREADS) instead of computing it (1 to O(_input)).
    type: int
  ccl_worker_affinity:
    description:
      - V(auto), V(explicit) (the computed oneCCL cores), or a list of core numbers, one per local oneCCL worker
        (O(ccl_workers) * O(processes_per_node)).
      - Defaults to V(auto) in O(mode=shared) and V(explicit) in O(mode=partitioned).
    type: raw
  num_processes:
    description: Pin the total number of ranks (the last node then runs fewer).
    type: int
  topology:
    description:
      - The node's topology as cpu_facts reports it; O(mode=socket) reads C(socket_cores) (a list, one
        C({socket, numa_nodes, cores}) per socket) and C(numa_nodes) (C({node, cpus})).
      - Without C(socket_cores) the node is one socket of cores 0 to O(_input) - 1.
      - C(socket_cores) that list more cores than O(_input) (cpu_facts' fallback without per-CPU core ids, which
        counts every logical CPU) are refused in O(mode=socket), naming why.
    type: dict
  pin:
    description: Pin every rank to its cores (C(AMX_CLUSTER_RANK_CPUS)); default true in O(mode=socket), else false.
    type: bool
  oversubscribe:
    description: In O(mode=socket), allow O(omp_num_threads) above the OpenMP cores of a rank.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Compute the recipe's layout
  ansible.builtin.set_fact:
    train_layout: >-
      {{ 32 | amx.cluster.rank_layout(nodes=4, processes_per_node=2, ccl_workers=2, os_reserved_cores=6) }}
  # train_layout.omp_num_threads == 24, train_layout.num_processes == 8

- name: One rank per socket, pinned (r7iz.metal-16xl, 2 x 16 cores)
  ansible.builtin.set_fact:
    train_layout: >-
      {{ amx_check_topology.physical_cores | amx.cluster.rank_layout(nodes=4, processes_per_node=2, ccl_workers=2,
         os_reserved_cores=6, mode='socket', topology=amx_check_topology) }}
  # train_layout.omp_num_threads == 11, train_layout.rank_cpus == '3-15;19-31'

- name: One rank per core on a small machine
  ansible.builtin.debug:
    msg: "{{ ansible_processor_cores | amx.cluster.rank_layout(processes_per_node=2, mode='partitioned') }}"
"""

RETURN = r"""
_value:
  description:
    - The layout. Keys C(mode), C(physical_cores), C(nodes), C(processes_per_node), C(num_processes),
      C(omp_num_threads), C(ccl_worker_count), C(ccl_worker_affinity), C(os_reserved_cores), C(os_cores),
      C(unused_cores), C(threads_per_node), C(oversubscription), C(pin), C(rank_cpus) (the cpulists of the local
      ranks joined by C(;), or null unpinned), C(sockets), C(numa_aligned), C(topology) (in O(mode=socket), the
      sockets it used, in the input's shape).
    - C(ranks), one item per rank with C(rank), C(node), C(local_rank), C(omp_cores), C(ccl_cores), C(cpus) (cpulist
      strings; C(cpus) null unpinned), C(socket) and C(numa_node) (O(mode=socket)).
    - C(env), the variables as strings (C(OMP_NUM_THREADS), C(NUM_PROCESSES), C(NUM_PROCESSES_PER_NODE), the
      C(CCL_WORKER_*) pair when O(ccl_workers) > 0, and C(AMX_CLUSTER_RANK_CPUS) and C(AMX_CLUSTER_RANK_OMP_CPUS)
      when pinned).
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.amx.cluster.plugins.module_utils.layout import LayoutError, rank_layout  # noqa: E402


def rank_layout_filter(physical_cores, *args, **kwargs):
    try:
        return rank_layout(physical_cores, *args, **kwargs)
    except (LayoutError, TypeError) as error:
        raise AnsibleFilterError(f"amx.cluster.rank_layout: {error}") from error


class FilterModule:
    def filters(self):
        return {"rank_layout": rank_layout_filter}
