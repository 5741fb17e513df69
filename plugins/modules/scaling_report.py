#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The work is done by the action plugin of the same name (plugins/action/scaling_report.py); this file documents it.

DOCUMENTATION = r"""
module: scaling_report
short_description: Write the scaling report of a training job measured on several node counts
version_added: 0.1.0
author:
  - amx.cluster developers (@amx-cluster)
description:
  - Takes the measured runs of the same training job on different node counts and writes C(scaling.json),
    C(scaling.md) and C(scaling.png) into the folder O(dest) on the controller, whichever host the task runs for.
  - Per node count the report gives the samples per second, the time per epoch (measured, or projected from
    O(runs[].samples_per_epoch) when not measured, and marked so), the speed-up over the smallest node count, the
    efficiency against linear scaling (speed-up divided by the node ratio), the ideal time per epoch and the cost of an
    epoch (nodes x on-demand price per hour x hours per epoch).
  - Speed-up and efficiency compare samples per second.
  - The original recipe's figures (DistilBERT on SQuAD, 1 epoch, bf16 on r7iz.metal-16xl; 26 min on one node,
    7 min 30 s on four, 86.7% efficiency) are put through the same computation and shown beside the measured runs in
    the Markdown and in the plot.
  - The plot has two panels, samples per second against nodes with the linear ideal as a dashed line, and efficiency
    against nodes with the recipe's points. It needs matplotlib on the controller; without it the task writes the JSON
    and the Markdown and warns.
  - A file is written only when its content differs from the file already there, so a second run with the same runs
    reports no change. The plot is drawn the same way every time and saved without a software stamp, so the same
    report with the same matplotlib gives the same PNG bytes.
options:
  runs:
    description: The measurements, one per node count, of the same job.
    type: list
    elements: dict
    required: true
    suboptions:
      nodes:
        description: Number of nodes of the run.
        type: int
        required: true
      samples_per_second:
        description: Training samples per second of the whole job (the Trainer's C(train_samples_per_second)).
        type: float
        required: true
      steps:
        description: Optimiser steps of the run.
        type: int
        required: true
      epoch_seconds:
        description:
          - Measured wall time of an epoch in seconds, or a list of them (one per epoch; the report uses their mean).
          - When not given, the time is projected from O(runs[].samples_per_epoch).
        type: raw
      samples_per_epoch:
        description: Training samples in an epoch, to project the time of an epoch that was not measured.
        type: int
      instance_type:
        description: The nodes' instance type, to price the run; without a price for it the cost is left out.
        type: str
      label:
        description: A name for the run in the Markdown table, such as its run id.
        type: str
  dest:
    description: Folder on the controller for the three files; created when missing.
    type: path
    required: true
  prices:
    description:
      - On-demand prices in USD per hour by instance type, merged over the defaults.
      - The defaults are list prices (Linux, us-east-1) for C(r7iz.metal-16xl), C(r7iz.16xlarge), C(m7i.48xlarge),
        C(c7i.48xlarge), C(m8i.48xlarge) and C(c6i.16xlarge); check them for your region and account.
    type: dict
    default: {}
  amx:
    description:
      - Which kernels did the bf16 matrix work on the nodes, as the run's record (C(run.json)) keeps it under
        C(amx) (C(used), C(nodes), C(measured_in)); the report says it under its table. Empty leaves it out.
    type: dict
    default: {}
    version_added: 0.2.0
  title:
    description: Title of the Markdown document and of the plot.
    type: str
    default: Scaling of the training job
attributes:
  action:
    support: full
    description: Runs as the action plugin of the same name, on the controller; nothing runs on the host.
  check_mode:
    support: full
    description: In check mode nothing is written; the task reports which files would change.
  diff_mode:
    support: none
    description: The files are the result; the task lists the ones it wrote.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller.
requirements:
  - matplotlib on the controller, for C(scaling.png) (optional).
notes:
  - The files are written on the controller with mode C(0644), also when the task runs for a remote host; use
    C(run_once) in a play over several hosts.
"""

EXAMPLES = r"""
- name: Write the scaling report of the runs on 1, 2 and 4 nodes
  amx.cluster.scaling_report:
    title: DistilBERT on SQuAD, r7iz.metal-16xl
    dest: "{{ playbook_dir }}/../runs/scaling-squad"
    runs:
      - {nodes: 1, samples_per_second: 56.2, steps: 2738, epoch_seconds: 1559.0, instance_type: r7iz.metal-16xl}
      - {nodes: 2, samples_per_second: 106.9, steps: 1369, epoch_seconds: 819.5, instance_type: r7iz.metal-16xl}
      - {nodes: 4, samples_per_second: 194.7, steps: 685, samples_per_epoch: 87599, instance_type: r7iz.metal-16xl}
  run_once: true

- name: Price the runs with the prices of your account
  amx.cluster.scaling_report:
    dest: /srv/reports/scaling
    prices:
      r7iz.metal-16xl: 4.20
    runs: "{{ measured_runs }}"
  register: scaling
"""

RETURN = r"""
report:
  description:
    - The report as written to C(scaling.json). C(title), C(base_nodes), C(speedup_basis), C(runs) (per node count,
      sorted by nodes - C(nodes), C(label), C(instance_type), C(steps), C(samples_per_second),
      C(ideal_samples_per_second), C(samples_per_epoch), C(epoch_seconds), C(epoch_source) (V(measured),
      V(projected) or null), C(epochs_measured), C(ideal_epoch_seconds), C(speedup), C(efficiency) (a fraction),
      C(price_per_hour), C(cost_per_epoch), C(cost_note)), C(reference) (the recipe's figures), C(prices) (the prices
      of the instance types shown) and C(notes).
  returned: always
  type: dict
dest:
  description: The folder of the files, as an absolute path.
  returned: always
  type: str
files:
  description: Path of each file the report consists of, by name (C(scaling.png) only when matplotlib is there).
  returned: always
  type: dict
written:
  description: The files written because their content changed (in check mode, the ones that would be).
  returned: always
  type: list
  elements: str
plotted:
  description: Whether the plot was drawn (false without matplotlib).
  returned: always
  type: bool
"""
