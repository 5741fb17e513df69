# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.mpi_launcher: a thin wrapper over module_utils.launch.mpi_launcher."""

from __future__ import annotations

DOCUMENTATION = r"""
name: mpi_launcher
short_description: Which MPI launches the job, and the environment its mpirun needs
version_added: 0.1.0
author: amx.cluster contributors
description:
  - With the oneCCL binding installed, its Intel MPI (C(mpirun) once oneCCL's C(setvars.sh) is sourced), as in the
    recipe.
  - Otherwise O(_input) picks V(mpich) (the distribution's package) or V(intel) (the C(impi-rt) package in the
    training virtualenv, its C(mpiexec.hydra) with C(I_MPI_ROOT), C(FI_PROVIDER_PATH) and C(LD_LIBRARY_PATH) set to
    the virtualenv).
  - Fails for V(intel) when the virtualenv lacks C(impi-rt), naming the fix.
options:
  _input:
    description: The MPI implementation when the stack has no oneCCL binding.
    type: str
    choices: [mpich, intel]
    required: true
  oneccl_installed:
    description: Whether oneccl_bindings_for_pytorch is installed.
    type: bool
    default: false
  venv:
    description: The training virtualenv (absolute path); needed for V(intel).
    type: str
  packages:
    description: The virtualenv's packages (name to version), as torch_stack_packages.
    type: dict
  launcher:
    description: A launcher path that overrides the chosen one.
    type: str
  mpich_launcher:
    description: MPICH's launcher on this OS.
    type: str
    default: mpirun
"""

EXAMPLES = r"""
- name: Pick the launcher
  ansible.builtin.set_fact:
    train_mpi: >-
      {{ 'intel' | amx.cluster.mpi_launcher(oneccl_installed=false, venv='/opt/amx-cluster/venv',
         packages=torch_stack_packages) }}
  # launcher: /opt/amx-cluster/venv/bin/mpiexec.hydra, env: {I_MPI_ROOT: ..., FI_PROVIDER_PATH: ...}
"""

RETURN = r"""
_value:
  description:
    - C(implementation) (V(intel) or V(mpich)), C(source) (V(oneccl), V(impi-rt) or V(os)), C(launcher).
    - C(env) and C(path_env) for P(amx.cluster.launch_command#filter); C(install_mpich), whether MPICH is needed.
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.amx.cluster.plugins.module_utils.launch import LaunchError, mpi_launcher  # noqa: E402


def mpi_launcher_filter(implementation, *args, **kwargs):
    try:
        return mpi_launcher(implementation, *args, **kwargs)
    except (LaunchError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"amx.cluster.mpi_launcher: {error}") from error


class FilterModule:
    def filters(self):
        return {"mpi_launcher": mpi_launcher_filter}
