#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The work is done by the action plugin of the same name (plugins/action/mesh_plan.py); this file documents it.

DOCUMENTATION = r"""
module: mesh_plan
short_description: Check the SSH mesh's input on every node at once and plan the master's SSH files
version_added: 0.2.0
author:
  - amx.cluster developers (@amx-cluster)
description:
  - The preflight of the M(amx.cluster.ssh_mesh) role, run once for the play (C(run_once), delegated to the master).
  - On the controller, reads what every host of the play shared before it (the role's C(__ssh_mesh_given_address),
    C(__ssh_mesh_node_port), C(__ssh_mesh_node_user), C(__ssh_mesh_node_key_name)) and its facts (the mesh user's
    C(getent_passwd) entry, C(ssh_host_key_ed25519_public)), and checks the cluster's shape (as
    C(amx.cluster.cluster_shape) finds it), that the play holds exactly the master and the workers and lost none of
    them, every value that reaches the master's SSH files, the mesh user's account on every node and, when host keys
    are pinned, every node's ed25519 host key.
  - When all of that is right and the cluster has workers, reads on the master (over the task's connection, as the
    become user) the key pair under the master's C(ssh_mesh_key_name) and what C(ssh-keygen -F) finds in its
    C(known_hosts) for each node; a key the role did not make, or another host key pinned for a node's address, is a
    problem too. Nothing is written on any host.
  - Returns every problem found, each a sentence that names the host, what is wrong and what to change; the task
    itself does not fail for them, so that each node can stop with them all.
options:
  master:
    description: The master's inventory name (C(ssh_mesh_master)); empty, the host of group C(master).
    type: str
    default: ""
  workers:
    description:
      - The workers' inventory names, in the order that names them node1..N (C(ssh_mesh_workers)); unset, group
        C(workers).
      - Anything but a list is a problem, reported with the others.
    type: raw
  rotate:
    description: Whether the key pair is to be rotated (C(ssh_mesh_rotate)); only says so in the key's problem.
    type: bool
    default: false
  strict_host_key_checking:
    description: Whether host keys are pinned (C(ssh_mesh_strict_host_key_checking)); false skips their checks.
    type: bool
    default: true
extends_documentation_fragment:
  - amx.cluster.controller_plan
notes:
  - Supports check mode; it reads only.
"""

EXAMPLES = r"""
- name: Check the mesh's input on every node and plan its SSH files
  amx.cluster.mesh_plan:
    master: "{{ ssh_mesh_master | default('') }}"
    workers: "{{ ssh_mesh_workers }}"
  register: mesh
  run_once: true
  delegate_to: "{{ ssh_mesh_master }}"
  become: true

- name: Check that nothing stops the mesh on any node
  ansible.builtin.assert:
    that: mesh.problems | length == 0
    fail_msg: "{{ inventory_hostname }}: {{ mesh.problems | join(' ') }}"
"""

RETURN = r"""
problems:
  description: Every problem found, on any node; empty when the mesh can be wired.
  returned: always
  type: list
  elements: str
master:
  description: The master's inventory name (null when there is none).
  returned: always
  type: str
workers:
  description: The workers' inventory names, in order.
  returned: always
  type: list
  elements: str
aliases:
  description: Each worker's name on the master (node1..N), by the rule of C(amx.cluster.cluster_shape).
  returned: always
  type: dict
entries:
  description:
    - What the master writes for each node, the master first, each with C(name), C(alias) (null for the
      master), C(address), C(port), C(user) (that node's mesh user) and C(known_host) (the name its host key is
      pinned under, the address on port 22, C([address]:port) on any other).
    - Empty for a one-node cluster or when a value is wrong.
  returned: always
  type: dict
key_name:
  description: The master's C(ssh_mesh_key_name), null when it is not a plain file name.
  returned: always
  type: str
key_comment:
  description: The comment of the public key the role makes, its mark (C(amx.cluster-ssh_mesh:NAME@MASTER)).
  returned: always
  type: str
key:
  description:
    - The key pair under C(key_name) on the master, null unless the master's files were read.
    - C(owner) (C(absent), C(ours) or C(foreign)), C(reason) (why foreign), C(path) and C(rotate).
  returned: always
  type: dict
"""
