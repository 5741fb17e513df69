# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.launch_command: a thin wrapper over module_utils.launch.launch_command."""

from __future__ import annotations

DOCUMENTATION = r"""
name: launch_command
short_description: The exact mpirun command, environment and launch script of a training run
version_added: 0.1.0
author: amx.cluster contributors
description:
  - Renders what the recipe types on the master, from a layout (P(amx.cluster.rank_layout#filter)) and a flag dialect
    (P(amx.cluster.flag_dialect#filter)).
  - C(mpirun -f HOSTFILE -n NUM_PROCESSES -ppn NUM_PROCESSES_PER_NODE [LAUNCHER_OPTIONS] -genv OMP_NUM_THREADS=T
    -genv LD_PRELOAD=... PYTHON SCRIPT SCRIPT_ARGS... DIALECT_FLAGS... [--bf16]), with C(MASTER_ADDR), C(NUM_PROCESSES),
    C(NUM_PROCESSES_PER_NODE), the C(CCL_*) variables (backend ccl) and C(KMP_HW_SUBSET) exported before it, and
    oneCCL's C(setvars.sh) sourced when the binding is installed.
  - Fails when the layout and the dialect disagree on the world size, when ccl has no worker, when C(MASTER_ADDR)
    is missing for a multi-node or ccl run, or when O(script_args) repeat a flag the launch adds itself.
positional: dialect, script, script_args
options:
  _input:
    description: The layout, as returned by P(amx.cluster.rank_layout#filter).
    type: dict
    required: true
  dialect:
    description: The dialect, as returned by P(amx.cluster.flag_dialect#filter) for the same world size.
    type: dict
    required: true
  script:
    description: The training script, for example V(run_qa.py).
    type: str
    required: true
  script_args:
    description: The script's own arguments, without the dialect flags and without C(--bf16).
    type: list
    elements: str
    default: []
  hostfile:
    description: The MPI hostfile; a leading C(~/) stays unquoted so the shell expands it.
    type: str
    default: ~/hosts
  python:
    description: The Python interpreter that runs the script on every node.
    type: str
    default: python3
  launcher:
    description: The MPI launcher; null renders a plain one-process run.
    type: str
    default: mpirun
  master_addr:
    description: C(MASTER_ADDR), the master's private address; required across nodes and for ccl.
    type: str
  master_port:
    description: C(MASTER_PORT); transformers uses 29500 when unset.
    type: int
  ld_preload:
    description: The node's tcmalloc, passed as C(LD_PRELOAD).
    type: str
  kmp_hw_subset:
    description: C(KMP_HW_SUBSET); V(1T) uses one hardware thread per core (acts with Intel OpenMP). Null leaves it out.
    type: str
    default: 1T
  bf16:
    description: Append C(--bf16).
    type: bool
    default: false
  setvars:
    description: Path of oneCCL's C(setvars.sh); when unset and the binding is installed, it is found at run time.
    type: str
  extra_env:
    description: More variables to export (names must be valid shell names).
    type: dict
  genv_names:
    description: Which variables go on the command line as C(-genv) instead of being exported.
    type: list
    elements: str
    default: [OMP_NUM_THREADS, LD_PRELOAD]
  launcher_options:
    description:
      - Options of the launcher, right after C(-ppn), such as C(-prepend-rank) and C(-localhost ADDR) (MPICH's and
        Intel MPI's Hydra take both on the command line).
    type: list
    elements: str
  path_env:
    description:
      - Variables whose current value gets a folder in front (C(export LD_LIBRARY_PATH=DIR${LD_LIBRARY_PATH:+:...})),
        for Intel MPI's libraries (the train role's plan, M(amx.cluster.train_plan), sets them).
    type: dict
  leave_unset:
    description:
      - Variables of the layout not to set (C(OMP_NUM_THREADS), C(KMP_HW_SUBSET), C(AMX_CLUSTER_RANK_CPUS),
        C(AMX_CLUSTER_RANK_OMP_CPUS)), so that the program picks its own; O(extra_env) still sets any of them.
      - The post's single-node run leaves C(OMP_NUM_THREADS) unset, so torch uses every physical core.
    type: list
    elements: str
    default: []
  source_setvars:
    description: Source oneCCL's C(setvars.sh) where the binding is installed; false never does (the post's run).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Render the launch
  ansible.builtin.set_fact:
    train_launch: >-
      {{ train_layout | amx.cluster.launch_command(train_dialect, 'run_qa.py', train_script_args,
         master_addr=(groups | amx.cluster.cluster_shape(hostvars)).master_address,
         ld_preload=tcmalloc_library, bf16=true) }}

- name: Write the launch script
  ansible.builtin.copy:
    content: "{{ train_launch.script }}"
    dest: "{{ ansible_env.HOME }}/launch.sh"
    mode: "0755"
"""

RETURN = r"""
_value:
  description:
    - C(argv), the command as a list; C(command), the same shell-quoted on one line.
    - C(env), the variables exported before the launcher; C(genv), those passed with C(-genv).
    - C(setvars), the C(setvars.sh) expression sourced first (or null); C(path_env), the prepended folders;
      C(script), a bash script doing all of it.
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.amx.cluster.plugins.module_utils.launch import LaunchError, launch_command  # noqa: E402


def launch_command_filter(layout, *args, **kwargs):
    try:
        return launch_command(layout, *args, **kwargs)
    except (LaunchError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"amx.cluster.launch_command: {error}") from error


class FilterModule:
    def filters(self):
        return {"launch_command": launch_command_filter}
