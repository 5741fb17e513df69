#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cluster_status
short_description: Put together the status of a cluster from what its nodes and the inventory said
version_added: 0.2.0
description:
  - For C(playbooks/status.yml), on the controller. Takes, for every node, its EC2 state, instance type and launch
    time (the M(amx.cluster.ec2_cluster) inventory's C(ec2_*) variables) and the result of
    M(amx.cluster.autostop) with O(amx.cluster.autostop#module:state=status) on it, and returns one row per node
    (state, type, uptime, idle minutes, when the autostop or the maximum lifetime acts, price per hour, cost since
    the last start), the training job running with its progress, the cluster's cost, and the same as lines of text.
  - Prices are the on-demand list prices the scaling report uses (module_utils/scaling.py) with O(prices) merged
    over them; a type without a price gets no cost.
  - Changes nothing.
author:
  - amx.cluster developers (@amx-cluster)
options:
  nodes:
    description: One entry per node, with keys C(name), C(state), C(instance_type), C(instance_id),
      C(launch_time), C(asked), C(reached) and C(autostop).
    type: list
    elements: dict
    required: true
  prices:
    description: On-demand prices in USD per hour by instance type, merged over the defaults.
    type: dict
    default: {}
  cluster_name:
    description: The cluster's name, shown in the result.
    type: str
    default: ""
  now:
    description: The time, in seconds since the epoch (tests); the controller's clock when not set.
    type: float
notes:
  - Supports check mode (it changes nothing in any mode).
"""

EXAMPLES = r"""
- name: Put the status together
  amx.cluster.cluster_status:
    nodes: "{{ groups['cluster'] | map('extract', hostvars, 'status_node') | list }}"
  register: status
"""

RETURN = r"""
nodes:
  description: One row per node (name, instance_id, state, instance_type, reached, asked, uptime, uptime_seconds,
    idle_minutes, busy, autostop, timer_active, acts_at, acts_because, acts_in_minutes, price_per_hour,
    cost_so_far, jobs).
  returned: success
  type: list
  elements: dict
job:
  description: The training job running (job, node, run_dir, progress with line, step, total_steps, eta_seconds);
    null when none.
  returned: success
  type: dict
cost:
  description: per_hour (USD, the running nodes), so_far (USD since their last start), unpriced_nodes, currency.
  returned: success
  type: dict
lines:
  description: The status as lines of text.
  returned: success
  type: list
  elements: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.amx.cluster.plugins.module_utils.cluster_status import cluster_status
from ansible_collections.amx.cluster.plugins.module_utils.scaling import merge_prices


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nodes=dict(type="list", elements="dict", required=True),
            prices=dict(type="dict", default={}),
            cluster_name=dict(type="str", default=""),
            now=dict(type="float"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        prices = merge_prices(params["prices"])
    except ValueError as exc:
        module.fail_json(msg=f"cluster_status: {exc}")
    now = params["now"] if params["now"] is not None else time.time()
    module.exit_json(changed=False, **cluster_status(params["nodes"], prices, now, params["cluster_name"]))


if __name__ == "__main__":
    main()
