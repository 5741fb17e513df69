#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The work is done by the action plugin of the same name (plugins/action/train_plan.py); this file documents it.

DOCUMENTATION = r"""
module: train_plan
short_description: Check every gate of the train role and compute the whole launch, once, on the controller
version_added: 0.2.0
author:
  - amx.cluster developers (@amx-cluster)
description:
  - The amx.cluster.train role's plan (plugins/module_utils/train_plan.py). It reads every node's facts from hostvars
    (those of amx_check, torch_stack and tcmalloc, and what the role's preflight read on the nodes) and changes
    nothing.
  - Fails with every problem of every host at once, each naming the host and the fix; otherwise returns the run's
    state, the layout, the flag dialect, the launcher, the launch scripts, whether the smoke test is due and the
    run's record.
  - Given O(results) instead of O(settings), returns the run's record (run.json), or the smoke test's fingerprint
    with the launcher as installed after the plan.
  - Run it once (C(run_once)) after the node reads; it is the role's own step, not meant for other playbooks.
options:
  results:
    description: The plan and what the run gave; mutually exclusive with O(settings).
    type: dict
    suboptions:
      plan: {description: This action's answer for the run., type: dict, required: true}
      launcher_info:
        description: The launcher's C(-info) once installed; returns the smoke test's C(fingerprint).
        type: str
      job: {description: M(amx.cluster.train_job)'s result for the job; returns the C(record)., type: dict}
      smoke: {description: "M(amx.cluster.train_job)'s result for the smoke test, when it ran.", type: dict}
      single_node:
        description: "M(amx.cluster.train_job)'s result for the single-node check, when it ran."
        type: dict
      metrics: {description: The run's metrics.json text., type: str}
      stale_folder:
        description:
          - The tiny data set's folder; returns C(stale_workers), the workers whose copy differs from the master's
            (each node's C(__train_tiny_files), its M(ansible.builtin.find) with checksums).
        type: str
      fetch:
        description: The run's files on the master and on the controller; returns C(to_copy), the paths to fetch.
        type: dict
        suboptions:
          there:
            description: The run folder's files (M(ansible.builtin.find) with checksums).
            type: list
            elements: dict
            required: true
          here: {description: The controller's copy's files., type: list, elements: dict, default: []}
          here_root: {description: The controller's copy of the run folder., type: str, required: true}
          skip: {description: A regular expression of relative paths never fetched., type: str, default: ""}
  settings:
    description: The role's variables, without their C(train_) prefix; one of O(settings) and O(results) is required.
    type: dict
    suboptions:
      backend: {description: C(train_backend)., type: str, default: "auto"}
      batch_size: {description: C(train_batch_size)., type: raw}
      bf16: {description: C(train_bf16)., type: raw}
      ccl_worker_affinity: {description: C(train_ccl_worker_affinity)., type: raw}
      ccl_workers: {description: C(train_ccl_workers)., type: int}
      checkpoint_keep: {description: C(train_checkpoint_keep)., type: raw}
      checkpoint_steps: {description: C(train_checkpoint_steps)., type: raw}
      controller_cache: {description: C(train_controller_cache)., type: str}
      data: {description: C(train_data)., type: str, default: "tiny"}
      dataset_name: {description: C(train_dataset_name)., type: str, default: "squad"}
      doc_stride: {description: C(train_doc_stride)., type: raw}
      epochs: {description: C(train_epochs)., type: raw}
      extra_args: {description: C(train_extra_args)., type: raw}
      extra_env: {description: C(train_extra_env)., type: raw}
      fast_launch: {description: C(train_fast_launch)., type: bool, default: false}
      fetch_model: {description: C(train_fetch_model)., type: bool, default: false}
      fetch_results: {description: C(train_fetch_results)., type: raw}
      hostfile: {description: C(train_hostfile)., type: str, default: "~/hosts"}
      kmp_hw_subset: {description: C(train_kmp_hw_subset)., type: raw}
      launch_inputs: {description: C(train_launch_inputs)., type: str, default: ""}
      launcher: {description: C(train_launcher)., type: raw}
      launcher_options: {description: C(train_launcher_options)., type: raw}
      layout_mode: {description: C(train_layout_mode)., type: str, default: "socket"}
      layout_oversubscribe: {description: C(train_layout_oversubscribe)., type: bool, default: false}
      learning_rate: {description: C(train_learning_rate)., type: raw}
      logging_steps: {description: C(train_logging_steps)., type: raw}
      master_addr: {description: C(train_master_addr)., type: raw}
      master_port: {description: C(train_master_port)., type: int, default: 29500}
      max_seq_length: {description: C(train_max_seq_length)., type: raw}
      max_steps: {description: C(train_max_steps)., type: raw}
      model: {description: C(train_model)., type: str}
      mpi: {description: C(train_mpi)., type: str, default: "mpich"}
      num_processes: {description: C(train_num_processes)., type: int}
      omp_threads: {description: C(train_omp_threads)., type: int}
      os_cores: {description: C(train_os_cores)., type: int}
      pin_ranks: {description: C(train_pin_ranks)., type: bool}
      poll_interval: {description: C(train_poll_interval)., type: raw}
      preload_tcmalloc: {description: C(train_preload_tcmalloc)., type: raw}
      prepend_rank: {description: C(train_prepend_rank)., type: raw}
      processes_per_node: {description: C(train_processes_per_node)., type: int, default: 2}
      python: {description: C(train_python)., type: raw}
      require_amx: {description: C(train_require_amx)., type: bool, default: true}
      require_same_stack: {description: C(train_require_same_stack)., type: bool, default: true}
      rerun: {description: C(train_rerun)., type: raw}
      results_dir: {description: C(train_results_dir)., type: str}
      resume: {description: C(train_resume)., type: raw}
      run_id: {description: C(train_run_id)., type: raw}
      run_root: {description: C(train_run_root)., type: str, default: ""}
      scaling_nodes: {description: C(train_scaling_nodes)., type: raw}
      scaling_steps: {description: C(train_scaling_steps)., type: raw}
      script: {description: C(train_script)., type: str, default: "qa_finetune"}
      script_args: {description: C(train_script_args)., type: raw}
      script_path: {description: C(train_script_path)., type: raw}
      secret_env: {description: C(train_secret_env)., type: raw}
      single_node_check: {description: C(train_single_node_check)., type: bool, default: false}
      single_node_steps: {description: C(train_single_node_steps)., type: raw}
      single_node_use_ipex: {description: C(train_single_node_use_ipex)., type: bool, default: true}
      single_node_variant: {description: C(train_single_node_variant)., type: str, default: "post"}
      smoke_test: {description: C(train_smoke_test)., type: bool, default: true}
      smoke_test_force: {description: C(train_smoke_test_force)., type: bool, default: false}
      smoke_test_max_age: {description: C(train_smoke_test_max_age)., type: raw}
      smoke_timeout: {description: C(train_smoke_timeout)., type: raw}
      ssh_options: {description: C(train_ssh_options)., type: raw}
      timeout: {description: C(train_timeout)., type: raw}
      tiny_key: {description: The tiny data set's key (vars/main.yml)., type: str, required: true}
      train_file: {description: C(train_train_file)., type: str}
      user: {description: C(train_user)., type: str, required: true}
      validation_file: {description: C(train_validation_file)., type: str}
extends_documentation_fragment:
  - amx.cluster.controller_plan
"""

EXAMPLES = r"""
- name: Check every gate and compute the run's plan
  amx.cluster.train_plan:
    settings:
      user: "{{ train_user }}"
      tiny_key: "{{ __train_tiny_key }}"
  register: __train_plan
  run_once: true
"""

RETURN = r"""
problems:
  description: Every problem found, one sentence each naming the host and the fix (the task fails when there is one).
  returned: always
  type: list
  elements: str
state:
  description: The run as the master's files tell it, C(new), C(running), C(finished) or C(failed).
  returned: success
  type: str
pending:
  description: Whether the job runs (a new run, a failed one resumed, or one run again).
  returned: success
  type: bool
layout:
  description: The job's rank layout (the smallest node's, amx.cluster.rank_layout's answer).
  returned: success
  type: dict
dialect:
  description: The flag dialect of the stack (amx.cluster.flag_dialect's answer).
  returned: success
  type: dict
launch:
  description: The job's rendered launch (amx.cluster.launch_command's answer); C(smoke_launch) the smoke test's.
  returned: success
  type: dict
smoke:
  description: Whether the smoke test runs (C(run), C(reason)), the live C(fingerprint) and the C(record) to write.
  returned: success
  type: dict
record:
  description: The run's record (run.json) with O(results); with O(settings), what it holds that does not change
    from run to run.
  returned: success
  type: dict
"""
