#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The work is done by the action plugin of the same name (plugins/action/node_record.py); this file documents it.

DOCUMENTATION = r"""
module: node_record
short_description: Whether a node role may skip its steps, from its record and the node's live fingerprint; the record
version_added: 0.2.0
author:
  - amx.cluster developers (@amx-cluster)
extends_documentation_fragment:
  - amx.cluster.node_record
description:
  - Internal to C(amx.cluster.node_stamp)'s C(check) entry point, which the node roles (tcmalloc, torch_stack,
    hf_examples, amx_check) include before their steps.
  - On the controller, hashes the including role's inputs - the collection's version and plugin code
    (C(plugins/action), C(filter), C(module_utils), C(modules), C(plugin_utils)), the files of the role and of
    C(amx.cluster.node_stamp) but their READMEs, and the role's options (its C(meta/argument_specs.yml) but
    C(<role>_preflight_done) and C(<role>_os_packages_done)) templated for this host.
  - On the node, one call reads the role's record of these inputs and decides, as M(amx.cluster.node_state) does
    (see there for what the fingerprint covers). The call is sent without a module's wrapper (about 25 kB and one
    round trip, with the host's configured or discovered Python); where the connection cannot take a command's
    standard input (paramiko), it runs as the M(amx.cluster.node_state) module.
  - With O(write=true), C(amx.cluster.node_stamp)'s C(write) entry point writes the role's record for O(inputs_hash)
    (the read's RV(inputs_hash)) the same way, after the role's checks passed.
options:
  role:
    description: The including role's short name.
    type: str
    required: true
  inputs_hash:
    description: With O(write=true), the inputs hash of the read (RV(inputs_hash)); a read computes its own.
    type: str
    default: ""
notes:
  - Run it with C(become=true) (the records are root's). A read changes nothing.
seealso:
  - module: amx.cluster.node_state
"""

EXAMPLES = r"""
- name: Read the role's record and take the node's live fingerprint
  amx.cluster.node_record:
    role: tcmalloc
  become: true
  register: tcmalloc_record
"""

RETURN = r"""
skip:
  description: Whether the role may skip its steps.
  returned: always
  type: bool
reason:
  description: Why the role runs in full, or how old the record it trusts is.
  returned: always
  type: str
inputs_hash:
  description: The hash of the role's inputs, which names its record.
  returned: always
  type: str
facts:
  description: The facts the role published, from its record.
  returned: when skip is true
  type: dict
fingerprint:
  description: The live fingerprint of what the record's probe names.
  returned: always
  type: dict
written:
  description: With O(write=true), whether the record was written (see M(amx.cluster.node_state)).
  returned: always
  type: bool
"""
