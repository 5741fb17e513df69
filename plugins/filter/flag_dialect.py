# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.flag_dialect: a thin wrapper over module_utils.dialect.flag_dialect."""

from __future__ import annotations

DOCUMENTATION = r"""
name: flag_dialect
short_description: The transformers command-line flags for a CPU run, by installed version
version_added: 0.1.0
author: amx.cluster contributors
description:
  - Maps the installed transformers version to the flags a CPU training run must pass.
  - C(--no_cuda) before 4.32, C(--use_cpu) from 4.32; C(--xpu_backend) before 4.29, C(--ddp_backend) from 4.29
    (C(ccl) accepted before 5.1 only); C(--use_ipex) before 4.57.
  - A one-process run gets no backend flag (a backend without a process group fails).
  - Versions older than 4.20 (no mpirun support) and impossible requests (C(ccl) without the oneCCL binding) fail.
positional: world_size
options:
  _input:
    description: The installed transformers version, for example V(4.24.0).
    type: str
    required: true
  world_size:
    description: Total number of ranks of the run.
    type: int
    default: 1
  backend:
    description:
      - The collective backend.
      - V(auto) picks V(ccl) when the oneCCL binding is installed and accepted, else V(gloo).
    type: str
    default: auto
    choices: [auto, ccl, gloo, mpi]
  oneccl_installed:
    description: Whether oneccl_bindings_for_pytorch is installed.
    type: bool
    default: false
  ipex_installed:
    description: Whether intel_extension_for_pytorch is installed.
    type: bool
    default: false
  use_ipex:
    description: Ask for C(--use_ipex); it is passed only when the version has it and IPEX is installed.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: The recipe's dialect
  ansible.builtin.set_fact:
    train_dialect: "{{ '4.24.0' | amx.cluster.flag_dialect(world_size=8, oneccl_installed=true) }}"
  # train_dialect.flags == ['--no_cuda', '--xpu_backend', 'ccl']

- name: Today's stack
  ansible.builtin.debug:
    msg: "{{ '5.24.0' | amx.cluster.flag_dialect(world_size=2) }}"
  # flags: ['--use_cpu', '--ddp_backend', 'gloo']
"""

RETURN = r"""
_value:
  description:
    - C(flags), the arguments to append (CPU flag, backend flag and value, C(--use_ipex)).
    - C(cpu_flag), C(backend_flag) (null for one process), C(backend), C(use_ipex), C(supports_use_ipex),
      C(transformers_version), C(world_size), C(oneccl_installed), C(ipex_installed).
    - C(training_args), the same choices as C(TrainingArguments) fields; C(notes), why a flag was left out.
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.amx.cluster.plugins.module_utils.dialect import DialectError, flag_dialect  # noqa: E402


def flag_dialect_filter(transformers_version, *args, **kwargs):
    try:
        return flag_dialect(transformers_version, *args, **kwargs)
    except (DialectError, TypeError) as error:
        raise AnsibleFilterError(f"amx.cluster.flag_dialect: {error}") from error


class FilterModule:
    def filters(self):
        return {"flag_dialect": flag_dialect_filter}
