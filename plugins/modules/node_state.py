#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_state
short_description: A node's live fingerprint, and the stamp that lets a node role skip work that cannot have changed
version_added: 0.2.0
description:
  - In one call, reads the stamp that a node role (M(amx.cluster.node_state) with O(write=true)) left after its
    checks passed, takes the live fingerprint of what that stamp's probe names and says whether the role may skip
    its steps (RV(skip)) and why (RV(reason)).
  - "The fingerprint is the collection's one node probe (module_utils C(node_probe), which the launch check takes
    too): the kernel release always, and what the probe asks for: the versions of distro packages
    (one C(dpkg-query) or C(rpm) call), a virtualenv (the names of its C(*.dist-info) folders, and its C(pyvenv.cfg)),
    the hash, mode and owner of files and of the manifest (a symlink by its target, never followed), and the AMX probe
    (the facts of M(amx.cluster.cpu_facts) that say whether AMX is usable, from C(/proc/cpuinfo), the kernel release,
    the CPU affinity and the C(arch_prctl) probe)."
  - What cannot be read (a FIFO, a device or a folder where a file is expected, a path that gives an error, no
    package manager) is never opened nor taken as unchanged; the role runs in full.
  - A role keeps one stamp per inputs hash (O(stamp_dir)/O(role).<16 hex digits>.json, the newest 4), so that two
    checkouts or controllers with other inputs do not replace each other's.
  - The role may skip only when the stamp is a regular file owned by root with mode 0600, intact (its digest
    matches), of the same role and inputs hash, written during this boot (C(/proc/sys/kernel/random/boot_id)), and
    its fingerprint equals the live one, whatever its age. Anything else is the full path.
  - With O(write=true), takes the fingerprint of O(probe) and writes the stamp of O(role) and O(inputs_hash) (JSON,
    root-owned, 0600, replaced atomically) under O(stamp_dir), and removes that role's stamps past the newest 4.
    It reports C(changed) when the record (inputs, probe, fingerprint, boot id, facts) differs from the stamp
    already there; a stamp renewed with only a new time is not a change.
author:
  - amx.cluster developers (@amx-cluster)
extends_documentation_fragment:
  - amx.cluster.node_record
options:
  role:
    description: The role whose stamp is read or written (the file is O(stamp_dir)/O(role).<hash>.json, its name
      from O(inputs_hash)).
    type: str
    required: true
  inputs_hash:
    description:
      - The hash of the role's inputs (collection version, the collection's plugin code, role files, resolved
        variables), from M(amx.cluster.node_record). It names the stamp read or written; a stamp
        of other inputs never lets the role skip.
    type: str
    required: true
attributes:
  check_mode:
    support: full
    description: Reading changes nothing; in check mode a write reports whether it would change the stamp and
      writes nothing.
  diff_mode:
    support: none
    description: The stamp is bookkeeping of the collection; there is no diff to show.
notes:
  - Run it with become (root), as the stamps are root's. A stamp that is not root's with mode 0600 is not trusted.
seealso:
  - module: amx.cluster.cpu_facts
"""

EXAMPLES = r"""
- name: Decide whether tcmalloc must run again
  amx.cluster.node_state:
    role: tcmalloc
    inputs_hash: "{{ tcmalloc_inputs_hash }}"
  become: true
  register: tcmalloc_state

- name: Stamp the node after the checks passed
  amx.cluster.node_state:
    role: tcmalloc
    inputs_hash: "{{ tcmalloc_inputs_hash }}"
    write: true
    probe:
      packages: [libgoogle-perftools-dev]
      files: ["{{ tcmalloc_library_realpath }}"]
    facts:
      tcmalloc_library_path: "{{ tcmalloc_library_path }}"
  become: true
  when: not tcmalloc_state.skip
"""

RETURN = r"""
written:
  description: With O(write=true), whether the stamp was written (false when a stamp of O(probe.stamps) does not hold).
  returned: always
  type: bool
  sample: true
skip:
  description: True when the stamp holds and the role may skip its steps; always false with O(write=true).
  returned: always
  type: bool
  sample: true
reason:
  description: Why the role runs in full (no stamp, an edited one, a reboot, its age, the inputs, what changed) or
    how old the stamp it trusts is.
  returned: always
  type: str
  sample: "the node changed since the stamp: packages: libgoogle-perftools-dev"
boot_id:
  description: The node's boot id.
  returned: always
  type: str
  sample: 0f6c2d2e-3c1b-4a57-9a4e-8e2f5b8f7b10
fingerprint:
  description: The live fingerprint of the probe (of the stamp when reading, of O(probe) when writing); empty when
    there is no usable stamp to take the probe from.
  returned: always
  type: dict
  sample: {"packages": {"libgoogle-perftools-dev": "2.10-1"}}
facts:
  description: The facts kept in the stamp when RV(skip) is true; empty otherwise.
  returned: always
  type: dict
  sample: {"tcmalloc_library_path": "/lib/x86_64-linux-gnu/libtcmalloc.so.4"}
stamp_path:
  description: The stamp's file (of O(role) and O(inputs_hash)).
  returned: always
  type: str
  sample: /var/lib/amx-cluster/stamps/tcmalloc.3f1c0a9b2d4e5f60.json
"""

# Ansible modules import after their documentation (validate-modules checks it).
from ansible.module_utils.basic import AnsibleModule
from ansible_collections.amx.cluster.plugins.module_utils.node_state import ARGUMENT_SPEC, NodeStateError, run


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = run(module.params, module.check_mode)
    except NodeStateError as exc:
        module.fail_json(msg=f"node_state: {exc}")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
