# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.launch_env: a thin wrapper over module_utils.launch.launch_env."""

from __future__ import annotations

DOCUMENTATION = r"""
name: launch_env
short_description: Every environment variable of a training run, as one dictionary
version_added: 0.1.0
author: amx.cluster contributors
description:
  - The variables P(amx.cluster.launch_command#filter) exports or passes with C(-genv), merged, in the recipe's order
    (C(MASTER_ADDR), C(MASTER_PORT), C(NUM_PROCESSES), C(NUM_PROCESSES_PER_NODE), C(CCL_WORKER_COUNT),
    C(CCL_WORKER_AFFINITY), C(KMP_HW_SUBSET), C(OMP_NUM_THREADS), C(LD_PRELOAD)), for an C(environment:) keyword or
    a record of the run.
  - Fails on the same inconsistencies as P(amx.cluster.launch_command#filter).
positional: dialect
options:
  _input:
    description: The layout, as returned by P(amx.cluster.rank_layout#filter).
    type: dict
    required: true
  dialect:
    description: The dialect, as returned by P(amx.cluster.flag_dialect#filter) for the same world size.
    type: dict
    required: true
  master_addr:
    description: C(MASTER_ADDR); required across nodes and for ccl.
    type: str
  master_port:
    description: C(MASTER_PORT).
    type: int
  ld_preload:
    description: The node's tcmalloc, as C(LD_PRELOAD).
    type: str
  kmp_hw_subset:
    description: C(KMP_HW_SUBSET); null leaves it out.
    type: str
    default: 1T
  extra_env:
    description: More variables.
    type: dict
  leave_unset:
    description:
      - Variables of the layout not to set (C(OMP_NUM_THREADS), C(KMP_HW_SUBSET), C(AMX_CLUSTER_RANK_CPUS),
        C(AMX_CLUSTER_RANK_OMP_CPUS)), so that the program picks its own; O(extra_env) still sets any of them.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Run the smoke test with the job's environment
  ansible.builtin.command:
    cmd: "{{ train_launch.argv }}"
  environment: "{{ train_layout | amx.cluster.launch_env(train_dialect, master_addr=train_master_addr) }}"
  changed_when: false
"""

RETURN = r"""
_value:
  description: Variable names to string values.
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.amx.cluster.plugins.module_utils.launch import LaunchError, launch_env  # noqa: E402


def launch_env_filter(layout, *args, **kwargs):
    try:
        return launch_env(layout, *args, **kwargs)
    except (LaunchError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"amx.cluster.launch_env: {error}") from error


class FilterModule:
    def filters(self):
        return {"launch_env": launch_env_filter}
