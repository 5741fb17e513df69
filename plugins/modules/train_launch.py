#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The work is done by the action plugin of the same name (plugins/action/train_launch.py); this file documents it.

DOCUMENTATION = r"""
module: train_launch
short_description: Start a training job in one step on a cluster unchanged since its last full launch
version_added: 0.2.0
author:
  - amx.cluster developers (@amx-cluster)
description:
  - The first play of C(playbooks/train.yml), on the master. On the controller, hashes the launch's inputs (the
    collection's files and version, the inventory's groups and C(--limit), where the playbook runs from, and every
    cluster host's own settings as the inventory and the command line give them, templated in its context, without
    what the run registered or set and without C(train_run_id)).
  - On the master, one call (the C(launch_check) module_utils file, run without a module's wrapper) reads the plan
    that the last full launch with these inputs left (M(amx.cluster.launch_plan) keeps one after a job that passed),
    checks that the smoke test's record still holds (its fingerprint, whatever its age), and probes every node in
    parallel over the cluster's SSH mesh. When every node
    gives the plan's fingerprint, it makes the new run's folder on every node; the job then starts and is followed as
    M(amx.cluster.train_job) does (a long poll, progress lines on standard error), and the run's files come back in
    the job's last answer to the controller's results folder with C(run.json).
  - Any difference (another setting, a changed package, file, SSH key or data set, a reboot, a plan edited, a run
    folder already there, processes of an earlier run, a forced full check through C(train_smoke_test_force) or
    C(node_stamp_force)) hands over to the full path, which runs every role and gate with their own messages; the task
    then reports RV(launched=false) and the reason, and changes nothing.
  - The task fails only when the job it started fails, with M(amx.cluster.train_job)'s message.
  - Run it with C(become=true) (the plan is root's); the job runs as the plan's training user.
options:
  enabled:
    description: Try the one-step launch (C(train_fast_launch)); false always hands over.
    type: bool
    default: true
  plan_dir:
    description: The folder of the plans on the master.
    type: str
    default: /var/lib/amx-cluster/launch
  run_id:
    description: The new run's id (C(train_run_id)); empty gives a UTC time stamp.
    type: str
    default: ""
notes:
  - Check mode hands over to the full path, which shows what a launch would do.
seealso:
  - module: amx.cluster.launch_plan
  - module: amx.cluster.train_job
"""

EXAMPLES = r"""
- name: Start the job in one step, or hand over to the full path
  amx.cluster.train_launch:
    run_id: squad-2
  become: true
  register: one_step
"""

RETURN = r"""
launched:
  description: Whether the job ran in one step (false hands over to the full path).
  returned: always
  type: bool
reason:
  description: Why it did or did not (the first differences found, by node and by name).
  returned: always
  type: str
inputs:
  description: The hash of the launch's inputs, for the full path's plan.
  returned: always
  type: str
run_id:
  description: The run's id.
  returned: when launched
  type: str
run_dir:
  description: The run's folder on the nodes.
  returned: when launched
  type: str
results_dir:
  description: The run's folder on the controller (run.json, metrics.json, logs/job/rank-N.log, launch.sh).
  returned: when launched
  type: str
job:
  description: The job's C(rc), C(duration), C(duration_human), C(last_progress) and C(job_failed).
  returned: when launched
  type: dict
"""
