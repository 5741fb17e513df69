# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.script_args: a thin wrapper over module_utils.launch.script_args."""

from __future__ import annotations

DOCUMENTATION = r"""
name: script_args
short_description: The training script's own arguments, from the training knobs
version_added: 0.1.0
author: amx.cluster contributors
description:
  - Builds the arguments of V(run_qa) (transformers' example), V(qa_finetune) (the collection's script) or V(custom)
    in the recipe's order, without the flag dialect's flags and C(--bf16), which
    P(amx.cluster.launch_command#filter) adds.
  - A knob left at null takes O(data_defaults) for the kind of data (V(hub) for run_qa), then 1 epoch and batch 32.
  - Fails on an unknown script, a missing model or data file, or a knob that is not a number.
positional: run_dir
options:
  _input:
    description: The script, V(run_qa), V(qa_finetune) or V(custom).
    type: str
    required: true
  run_dir:
    description: Folder of the run's output (C(RUN_DIR/output)), metrics and progress file.
    type: str
    required: true
  data:
    description: The kind of data of qa_finetune, V(tiny) or V(files).
    type: str
    default: tiny
  data_defaults:
    description: Knob defaults by kind of data (V(hub), V(tiny), V(files)), as C(epochs), C(batch_size), ...
    type: dict
  model:
    description: The model, a Hub name (run_qa) or a local folder (qa_finetune).
    type: str
  dataset_name:
    description: The Hub data set of run_qa.
    type: str
    default: squad
  train_file:
    description: SQuAD-format training file of qa_finetune.
    type: str
  validation_file:
    description: SQuAD-format validation file of qa_finetune.
    type: str
  epochs:
    description: C(--num_train_epochs).
    type: raw
  batch_size:
    description: C(--per_device_train_batch_size).
    type: int
  learning_rate:
    description: C(--learning_rate).
    type: raw
  max_seq_length:
    description: C(--max_seq_length).
    type: int
  doc_stride:
    description: C(--doc_stride).
    type: int
  max_steps:
    description: C(--max_steps); null for the whole run.
    type: int
  max_eval_samples:
    description: C(--max_eval_samples); null for the whole validation set.
    type: int
  logging_steps:
    description: C(--logging_steps); V(0) or null leaves it out (the script's default).
    type: int
    default: 10
  measure_only:
    description: Leave out the evaluation (and qa_finetune's saving of the model).
    type: bool
    default: false
  custom_args:
    description: The arguments as given (train_script_args); the knobs are then ignored.
    type: list
    elements: str
  extra_args:
    description: Arguments appended at the end.
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: The recipe's arguments
  ansible.builtin.debug:
    msg: >-
      {{ 'run_qa' | amx.cluster.script_args('/tmp/debug_squad', model='distilbert-base-uncased',
         logging_steps=none) }}
  # --model_name_or_path distilbert-base-uncased --dataset_name squad --do_train --do_eval
  # --per_device_train_batch_size 32 --num_train_epochs 1 --output_dir /tmp/debug_squad/output --overwrite_output_dir
"""

RETURN = r"""
_value:
  description: The arguments, as strings.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.amx.cluster.plugins.module_utils.launch import LaunchError, script_args  # noqa: E402


def script_args_filter(script, *args, **kwargs):
    try:
        return script_args(script, *args, **kwargs)
    except (LaunchError, TypeError, ValueError) as error:
        raise AnsibleFilterError(f"amx.cluster.script_args: {error}") from error


class FilterModule:
    def filters(self):
        return {"script_args": script_args_filter}
