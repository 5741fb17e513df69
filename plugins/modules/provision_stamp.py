#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The work is done by the action plugin of the same name (plugins/action/provision_stamp.py); this file documents it.

DOCUMENTATION = r"""
module: provision_stamp
short_description: Whether a provision may end in one step on a node, and the stamp a full provision leaves for that
version_added: 0.2.0
author:
  - amx.cluster developers (@amx-cluster)
description:
  - "The first and the last node task of C(playbooks/provision.yml). With O(state=check), hashes the provision's
    inputs on the controller (the collection's files and version, the inventory's groups and C(--limit), where the
    playbook runs from, and the node's own settings as the inventory and the command line give them, templated,
    without what the run registered or set, as M(amx.cluster.train_launch) does for every host) and makes one
    M(amx.cluster.node_state) call on the node, which says whether the node is as the last full provision with these
    inputs left it (RV(skip)) and why (RV(reason)): its provision stamp is intact, root's, of this boot and of these
    inputs (whatever its age); every node role's stamp that it names (tcmalloc, torch_stack, hf_examples, amx_check)
    still holds as that role would decide, node checked again; and the files of the SSH mesh and the hostfile have the
    content, mode and owner they had. C(node_stamp_force=true) or C(ssh_mesh_rotate=true) on any cluster host (the
    command line's C(-e)) always takes the full path, also twice in a row: the first runs every role in full, the
    second makes a new cluster key."
  - With O(state=present), at the end of a full provision that passed, writes the node's provision stamp
    (C(provision.<hash>.json) under O(stamp_dir), one per inputs, the newest 4 kept) for the inputs of the run's
    check, naming the node roles' stamps that this run decided on and the files that M(amx.cluster.ssh_mesh)
    (C(ssh_mesh_files)) and M(amx.cluster.mpi_hostfile) (C(mpi_hostfile_file)) published. A role that did not run in
    full here (under C(--tags), say) or a stamp that does not hold means no stamp (RV(written=false)) and the next
    provision takes the full path.
  - Never reports a change; run it with C(become=true) (the stamps are root's).
options:
  state:
    description: C(check) at the start of a provision, C(present) at the end of a full one.
    type: str
    choices: [check, present]
    default: check
  inputs:
    description: With O(state=present), the hash that the check of this run returned (RV(inputs)).
    type: str
    default: ""
  stamp_dir:
    description: The folder of the stamps on the node.
    type: path
    default: /var/lib/amx-cluster/stamps
notes:
  - The check reads the nodes and changes nothing, in check mode too.
  - The check does not log in from the master to each worker again, as the full path's C(amx.cluster.ssh_mesh)
    verify step does; every launch of C(playbooks/train.yml) does, before it starts anything.
seealso:
  - module: amx.cluster.node_state
  - module: amx.cluster.train_launch
"""

EXAMPLES = r"""
- name: Decide whether this node needs the full provision
  amx.cluster.provision_stamp:
    state: check
  become: true
  register: provision_check

- name: Stamp the node once the full provision passed
  amx.cluster.provision_stamp:
    state: present
    inputs: "{{ provision_check.inputs }}"
  become: true
"""

RETURN = r"""
skip:
  description: With O(state=check), whether the node is as the last full provision with these inputs left it.
  returned: when state is check
  type: bool
reason:
  description: Why the node takes the full path (no stamp, other inputs, a reboot, a role's stamp that does not hold,
    a file of the mesh that changed, by name) or how old the stamp it trusts is; with O(state=present), whether the
    stamp was written and, if not, why.
  returned: always
  type: str
inputs:
  description: The hash of the provision's inputs, for O(state=present) at the end of the run.
  returned: when state is check
  type: str
written:
  description: With O(state=present), whether the stamp was written.
  returned: when state is present
  type: bool
files:
  description: With O(state=present), the files of the mesh and the hostfile that the stamp watches.
  returned: when state is present and the roles published them
  type: list
  elements: str
"""
