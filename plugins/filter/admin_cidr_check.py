# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.admin_cidr_check: a thin wrapper over module_utils.admin_cidr.check_admin_cidr."""

from __future__ import annotations

DOCUMENTATION = r"""
name: admin_cidr_check
short_description: Check the admin CIDR that may reach the cluster's nodes over SSH
version_added: 0.1.0
author: amx.cluster contributors
description:
  - Parses an IPv4 or IPv6 CIDR and says what is wrong with it, if anything.
  - A malformed value, an address without a prefix length, a network with host bits set (C(10.0.0.1/24)) or a
    value not in its canonical form (C(2001:DB8::/32)) is refused with the form to write; it is never rewritten.
  - Without O(allow_open_world), a public range with an IPv4 prefix shorter than C(/16) or an IPv6 prefix shorter
    than C(/48) is refused. Ranges wholly inside a private, shared or loopback block (10.0.0.0/8, 172.16.0.0/12,
    192.168.0.0/16, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16, fc00::/7, fe80::/10, ::1/128) are not the internet
    and may be wider.
positional: allow_open_world
options:
  _input:
    description: The CIDR (C(ec2_cluster_admin_cidr)).
    type: str
    required: true
  allow_open_world:
    description: Accept a wide public range (C(ec2_cluster_allow_open_world)).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Check the admin CIDR
  ansible.builtin.assert:
    that: __check.problem is none
    fail_msg: "{{ inventory_hostname }}: {{ __check.problem }}"
  vars:
    __check: "{{ ec2_cluster_admin_cidr | amx.cluster.admin_cidr_check(ec2_cluster_allow_open_world) }}"
"""

RETURN = r"""
_value:
  description: C(cidr), the canonical form (or null when malformed), and C(problem), null or what to change.
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402
from ansible.module_utils.parsing.convert_bool import boolean  # noqa: E402

from ansible_collections.amx.cluster.plugins.module_utils.admin_cidr import check_admin_cidr  # noqa: E402


def admin_cidr_check(value, allow_open_world=False):
    try:
        return check_admin_cidr(value, boolean(allow_open_world, strict=True))
    except TypeError as error:
        raise AnsibleFilterError(f"amx.cluster.admin_cidr_check: {error}") from error


class FilterModule:
    def filters(self):
        return {"admin_cidr_check": admin_cidr_check}
