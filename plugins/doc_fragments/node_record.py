# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The options of a read or a write of a node record (module_utils/node_state.py's ARGUMENT_SPEC), shared by
amx.cluster.node_state and amx.cluster.node_record."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  stamp_dir:
    description: The folder of the stamps on the node (created 0700 root when a stamp is written).
    type: path
    default: /var/lib/amx-cluster/stamps
  force:
    description: Never skip (a forced full run); the stamp is still read and the fingerprint taken.
    type: bool
    default: false
  write:
    description: Write the stamp of O(role) with the fingerprint of O(probe), instead of deciding.
    type: bool
    default: false
  probe:
    description:
      - What the fingerprint covers, kept in the stamp (a later read probes what the stamp names). Used with
        O(write=true).
    type: dict
    suboptions:
      packages:
        description: Distro packages whose installed versions are compared.
        type: list
        elements: str
        default: []
      venv:
        description: A virtualenv whose distributions and C(pyvenv.cfg) are compared.
        type: path
      manifest:
        description: A file whose sha256 is compared (the stack manifest).
        type: path
      files:
        description: Files whose sha256, mode and owner are compared (a missing file is part of the fingerprint; a
          symlink is compared by its target and not followed; a file that cannot be read means the full path).
        type: list
        elements: path
        default: []
      amx:
        description: Compare the AMX probe and the CPU facts behind it.
        type: bool
        default: false
      stamps:
        description:
          - Stamps of other roles under O(stamp_dir) that must still hold, as a dict of role name to
            C({inputs_hash}). Each is read and decided as its own role decides it (intact, root's, this boot, of
            that C(inputs_hash), and the node as its fingerprint found it); the stamp's
            digest is compared. The provision stamp names the node roles' stamps this way. With O(write=true), no
            stamp is written while one of them does not hold (RV(written) is false and RV(reason) says which).
        type: dict
        default: {}
  facts:
    description:
      - The facts the role published, kept in the stamp and returned in RV(facts) when the role skips, so that a
        later task sets them again. Used with O(write=true).
    type: dict
    default: {}
  node_facts:
    description:
      - Host facts kept in the stamp and returned as C(ansible_facts) when the role skips (amx.cluster.amx_check
        keeps C(amx_cpu)). Used with O(write=true).
    type: dict
    default: {}
"""
