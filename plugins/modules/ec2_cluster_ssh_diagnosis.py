#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ec2_cluster_ssh_diagnosis
short_description: Fail with the likely causes when new nodes of an amx.cluster EC2 cluster do not answer SSH
version_added: 0.2.0
description:
  - Called by the C(ec2_cluster) role after its wait for SSH on new instances failed. Fails with a message that
    names each node that did not answer, its error, and the likely causes, the likeliest first.
  - The causes it weighs, on the controller it runs on, are a local EC2 API (O(endpoint_url), else the
    E(AWS_ENDPOINT_URL_EC2) or E(AWS_ENDPOINT_URL) variable, not an C(amazonaws.com) host), whose instances never
    answer; the controller's source address toward the first node against O(admin_cidr) (behind NAT the address
    AWS sees cannot be known here, and the message says so); the security group's SSH rule as AWS holds it
    (O(ip_permissions)); a firewall; and O(timeout).
  - Reads nothing remote and changes nothing.
author:
  - amx.cluster developers (@amx-cluster)
options:
  cluster_name:
    description: The cluster's name, for the message.
    type: str
    required: true
  wait_results:
    description:
      - The results of the failed wait, one per node (a looped task's C(results)), each with the node as C(item)
        (C(name), and C(hostvars.ansible_host) as the role's node list has them).
    type: list
    elements: dict
    required: true
  admin_cidr:
    description: The range the security group lets reach port 22 (C(ec2_cluster_admin_cidr)).
    type: str
    required: true
  security_group_name:
    description: The cluster's security group, for the message.
    type: str
    required: true
  ip_permissions:
    description: The security group's ingress rules as AWS returned them; leave out when unknown.
    type: list
    elements: dict
  endpoint_url:
    description: The EC2 endpoint the role used; empty for AWS's own (or the environment's).
    type: str
    default: ""
  timeout:
    description: The seconds the wait lasted (C(ec2_cluster_ssh_timeout)).
    type: int
    required: true
notes:
  - Supports check mode (it changes nothing in any mode).
"""

EXAMPLES = r"""
- name: Wait for SSH, and say why it failed
  block:
    - name: Wait until SSH answers on every node
      ansible.builtin.wait_for:
        host: "{{ item.hostvars.ansible_host }}"
        port: 22
        timeout: 900
      loop: "{{ nodes }}"
  rescue:
    - name: Fail with the likely causes
      amx.cluster.ec2_cluster_ssh_diagnosis:
        cluster_name: demo
        wait_results: "{{ ansible_failed_result.results }}"
        admin_cidr: 203.0.113.7/32
        security_group_name: amx-demo
        timeout: 900
"""

RETURN = r"""
controller_address:
  description: The controller's source address toward the first node that did not answer, or null.
  returned: always
  type: str
  sample: 192.168.1.20
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_ssh import (
    controller_address_toward,
    failed_waits,
    unreachable_message,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            cluster_name=dict(type="str", required=True),
            wait_results=dict(type="list", elements="dict", required=True),
            admin_cidr=dict(type="str", required=True),
            security_group_name=dict(type="str", required=True),
            ip_permissions=dict(type="list", elements="dict"),
            endpoint_url=dict(type="str", default=""),
            timeout=dict(type="int", required=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    failures = failed_waits(params["wait_results"])
    if not failures:
        module.fail_json(msg="ec2_cluster_ssh_diagnosis: wait_results holds no failed wait")
    controller = controller_address_toward(failures[0]["address"]) if failures[0]["address"] else None
    endpoint = (
        params["endpoint_url"] or os.environ.get("AWS_ENDPOINT_URL_EC2") or os.environ.get("AWS_ENDPOINT_URL") or ""
    )
    message = unreachable_message(
        params["cluster_name"],
        failures,
        params["admin_cidr"],
        params["security_group_name"],
        params["ip_permissions"],
        controller,
        endpoint,
        params["timeout"],
    )
    module.fail_json(msg=message, controller_address=controller)


if __name__ == "__main__":
    main()
