# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.resume_point: a thin wrapper over module_utils.checkpoints.resume_point."""

from __future__ import annotations

DOCUMENTATION = r"""
name: resume_point
short_description: The checkpoint a failed training job goes on from, the newest that every node holds
version_added: 0.2.0
author: amx.cluster contributors
description:
  - The newest checkpoint (C(OUTPUT_DIR/checkpoint-STEP/)) that every node of the job holds complete. A folder is
    complete with C(trainer_state.json), C(optimizer.pt), C(scheduler.pt), a random state, the model's weights on the
    master (one file, or an index and all its shards), and every file the node's other complete checkpoints hold;
    a save cut short, or a rotation (C(save_total_limit)) stopped halfway, leaves a folder that is passed over.
  - The rules are in plugins/module_utils/checkpoints.py.
options:
  _input:
    description:
      - Each node of the job (inventory name, in hostfile order, the master first) mapped to the files found under
        O(output_dir) on it (paths, or the C(files) of M(ansible.builtin.find)).
    type: dict
    required: true
  output_dir:
    description: The job's C(--output_dir) on every node.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Look for the checkpoints on each node
  ansible.builtin.find:
    paths: /runs/r1/output
    recurse: true
    depth: 2
  register: found

- name: Choose the checkpoint the job resumes from
  ansible.builtin.set_fact:
    resume: >-
      {{ dict(groups['cluster'] | zip(groups['cluster'] | map('extract', hostvars, ['found', 'files'])))
         | amx.cluster.resume_point('/runs/r1/output') }}
  # resume.step == 40, resume.checkpoint == '/runs/r1/output/checkpoint-40' when every node holds it complete
"""

RETURN = r"""
_value:
  description:
    - V(step) and V(checkpoint) of the newest checkpoint on every node (both null when no node holds one), V(steps)
      (the complete checkpoints' steps by node), V(incomplete) (a sentence for each checkpoint folder of a node that
      lacks files, passed over), V(missing) (by node, the names of the master's files of that
      checkpoint the node lacks, never a rank's random state) and V(problems) (sentences naming the nodes when some
      hold checkpoints and others none of the same step).
  type: dict
"""

from ansible_collections.amx.cluster.plugins.module_utils.checkpoints import resume_point  # noqa: E402
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function  # noqa: E402


class FilterModule:
    def filters(self):
        return {"resume_point": filter_function("resume_point", resume_point)}
