#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The work is done by the action plugin of the same name (plugins/action/examples_plan.py); this file documents it.

DOCUMENTATION = r"""
module: examples_plan
short_description: Check the settings of the hf_examples role and compute the values of its install
version_added: 0.2.0
author:
  - amx.cluster developers (@amx-cluster)
description:
  - The amx.cluster.hf_examples role's checks and computed values, in one place. It runs on the controller and changes
    nothing; the role calls it with what it knows at each step.
  - Checks every setting at once and fails with all the problems of the host, each with the variable and the fix, in
    one message that starts with the host's name. The repository URL and the ref are checked before git sees them (a
    value that starts with C(-) or names a transport such as C(ext::) would run a command); the transformers version
    and the virtualenv must be known; when the virtualenv is torch_stack's, its packages must hold what the example's
    script imports; the install mode, the controller's pip (in wheelhouse mode), the clone depth, the paths and the
    indexes are checked too.
  - Otherwise returns the indexes and the profile's lock of the example's requirements; given O(freeze), the
    constraints of the install; given O(requirements) and O(node) as well, the download the controller makes for the
    node, with its key, its folder and its pip arguments.
options:
  settings:
    description: The role's variables, without their C(hf_examples_) prefix.
    type: dict
    required: true
    suboptions:
      repo_url:
        description: Git URL of the transformers repository (C(hf_examples_repo_url)).
        type: str
        required: true
      version:
        description: Ref to check out (C(hf_examples_version)).
        type: str
        required: true
      transformers_version:
        description: transformers version the ref comes from; null (or C(None)) is unknown, a problem.
        type: str
      example:
        description: Folder under C(examples/pytorch) whose requirements are installed.
        type: str
        required: true
      venv_python:
        description: Python of the virtualenv that receives the requirements.
        type: str
      install_requirements:
        description: Whether the requirements are installed (the virtualenv, the pip and the wheelhouse paths are then
          checked).
        type: bool
        default: true
      install_mode:
        description: V(wheelhouse) or V(direct); anything else is a problem.
        type: str
        default: wheelhouse
      controller_pip:
        description: Command of pip on the controller, C([PYTHON, -m, pip]) with optional global options.
        type: list
        elements: str
      controller_pip_extra_args:
        description: Extra arguments for pip download on the controller.
        type: list
        elements: str
        default: []
      depth:
        description: Clone depth, 0 or more.
        type: int
        default: 1
      dir:
        description: Folder of the checkout on the node, an absolute path.
        type: str
        required: true
      user:
        description: User that owns the checkout (C(hf_examples_user)), named in the problems of O(checkout).
        type: str
      node_wheelhouse:
        description: Folder of the copied wheels on the node, an absolute path (wheelhouse mode).
        type: str
      controller_cache:
        description: Folder of the downloads on the controller, an absolute path (wheelhouse mode).
        type: str
      index_url:
        description: Primary index of the requirements; null is torch_stack's, an empty string pip's default.
        type: str
      extra_index_urls:
        description: Extra indexes of the requirements; null is torch_stack's.
        type: list
        elements: str
      find_links:
        description: Find-links pages or folders of the requirements; null is torch_stack's.
        type: list
        elements: str
  stack:
    description: What amx.cluster.torch_stack published for the node; null or absent where it did not run.
    type: dict
    default: {}
    suboptions:
      venv_python:
        description: torch_stack's virtualenv Python (C(torch_stack_venv_python)).
        type: str
      packages:
        description: Name to version of what the virtualenv holds (C(torch_stack_packages)).
        type: dict
      profile:
        description: The stack profile (C(torch_stack_profile)), named in the script check's message.
        type: str
      indexes:
        description: The indexes of the profile (C(torch_stack_indexes)).
        type: dict
      constraints:
        description: The profile's lock, C(name==version) lines (C(torch_stack_constraints)).
        type: list
        elements: str
  freeze:
    description: The virtualenv's C(pip freeze); gives RV(constraints).
    type: str
  requirements:
    description: The text of the example's C(requirements.txt); with O(freeze) and O(node) gives RV(download).
    type: str
  node:
    description: The node's Python, as the role's probe prints it.
    type: dict
    suboptions:
      markers:
        description: The node's PEP 508 marker values.
        type: dict
        required: true
      libc:
        description: The node's C library, name and version (C(platform.libc_ver())).
        type: list
        elements: str
        required: true
  checkout:
    description: What the role's probes found on the node; gives the checks of the user and the folders.
    type: dict
    suboptions:
      home:
        description: The home folder of O(settings.user); null when there is no such user.
        type: str
      stat:
        description:
          M(amx.cluster.folder_info)'s entry for the checkout folder (C(exists), C(isdir), C(islnk), C(lnk_source)).
        type: dict
        default: {}
      writable:
        description: Whether the user can write to the existing checkout folder.
        type: bool
  downloaded:
    description: The folder of the node's download on the controller; with O(freeze), gives RV(wheels_missing).
    type: path
extends_documentation_fragment:
  - amx.cluster.controller_plan
notes:
  - A task of the hf_examples role; its interface may change with the role.
"""

EXAMPLES = r"""
- name: Check the settings and plan the install
  amx.cluster.examples_plan:
    settings:
      repo_url: https://github.com/huggingface/transformers.git
      version: v4.57.1
      transformers_version: "4.57.1"
      example: question-answering
      venv_python: /opt/amx-cluster/venv/bin/python
      install_mode: direct
      dir: /opt/amx-cluster/transformers
    stack:
      venv_python: "{{ torch_stack_venv_python | default(none) }}"
      packages: "{{ torch_stack_packages | default(none) }}"
  register: examples

- name: Show the indexes of the requirements
  ansible.builtin.debug:
    var: examples.indexes
"""

RETURN = r"""
problems:
  description: Every problem of the settings, one message each with the fix (the task fails when there is one).
  returned: always
  type: list
  elements: str
indexes:
  description: The indexes of the requirements, C(index_url) (null is pip's default), C(extra_index_urls) and
    C(find_links), each the setting's where given, else torch_stack's.
  returned: success
  type: dict
index_args:
  description: pip's options that name RV(indexes).
  returned: success
  type: list
  elements: str
dir_absent:
  description: Whether the checkout folder is absent (the role then creates it).
  returned: when O(checkout) is given
  type: bool
wheels_missing:
  description: The wheel files of O(downloaded) that the virtualenv does not hold at their version.
  returned: when O(downloaded) and O(freeze) are given
  type: list
  elements: str
lock:
  description: The profile's lock when the virtualenv is torch_stack's, else empty.
  returned: success
  type: list
  elements: str
constraints:
  description: C(name==version) lines that keep the virtualenv as it is, and pin what it lacks at the lock's release.
  returned: when O(freeze) is given
  type: str
download:
  description:
    - The node's download. C(requirements), C(constraints), C(python) (major.minor), C(implementation) (C(cp) or
      C(pp)), C(platforms) (pip's platform tags), C(indexes), C(markers); C(key), a hash of all that but the kernel's
      marker values (nodes with the same key share one download); C(dest), the folder of the download on the
      controller (O(settings.controller_cache)/C(key)); C(args), the pip arguments that download it into
      C(dest).partial.
  returned: when O(freeze), O(requirements) and O(node) are given
  type: dict
"""
