#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The work is done by the action plugin of the same name (plugins/action/stack_plan.py); this file documents it.

DOCUMENTATION = r"""
module: stack_plan
short_description: Check the settings of the torch_stack role and compute the values of its install
version_added: 0.2.0
author:
  - amx.cluster developers (@amx-cluster)
description:
  - The amx.cluster.torch_stack role's checks and computed values, in one place. It runs on the controller and changes
    nothing; the role calls it with what its read-only probes found on the node.
  - Without O(venv), checks every setting and the node at once and fails with all the problems of the host, each with
    the variable and the fix, in one message that starts with the host's name - the profile and the user's overrides
    (resolved with the profile's lock for the node's Python), the Python range, IPEX and oneccl_bind_pt against torch,
    yanked pins, the paths and folders, the install mode, the controller's pip, the OS, the user, the group and the
    base Python; given O(index_answers), the indexes that did not answer. Otherwise returns the resolved profile,
    its requirement and lock files, the pip index arguments, the node's download (wheelhouse mode) and what the
    source check reads.
  - With O(venv), the install's state - whether to install and to import again (O(venv.manifest), O(venv.freeze)),
    or, given O(venv.earlier), the manifest, the facts the role publishes and the verify step's problems.
options:
  settings:
    description: The role's variables, without their C(torch_stack_) prefix (see the role's argument spec).
    type: dict
    required: true
    suboptions:
      profile: {description: "Name of the stack profile.", type: str, required: true}
      custom_profiles: {description: "Profiles of the user.", type: dict, default: {}}
      overrides: {description: "Pin overrides, package to version or null.", type: dict, default: {}}
      extra_packages: {description: "Extra requirement lines.", type: list, elements: str, default: []}
      allow_yanked: {description: "Whether yanked pins may be installed.", type: bool, default: false}
      lock: {description: "Whether the profile's lock constrains the install.", type: bool, default: true}
      index_url: {description: "Primary index; null keeps the profile's.", type: str}
      extra_index_urls: {description: "Extra indexes; null keeps the profile's.", type: list, elements: str}
      find_links: {description: "Find-links locations; null keeps the profile's.", type: list, elements: str}
      index_check_timeout: {description: "Seconds per index of the index check, 1 or more.", type: int, default: 10}
      unreachable_indexes: {description: "V(fail) or V(skip).", type: str, default: fail}
      venv: {description: "Path of the virtualenv.", type: str, required: true}
      user: {description: "User that owns the virtualenv.", type: str, required: true}
      group: {description: "Group that owns it; null is the user's primary group.", type: str}
      base_python: {description: "Interpreter the virtualenv is made from.", type: str, default: python3}
      install_mode: {description: "V(wheelhouse) or V(direct).", type: str, default: wheelhouse}
      controller_pip: {description: "pip on the controller, C([PYTHON, -m, pip]).", type: list, elements: str}
      controller_pip_extra_args:
        description: "Extra arguments of pip download."
        type: list
        elements: str
        default: []
      controller_cache: {description: "Folder of the downloads on the controller.", type: str}
      node_wheelhouse: {description: "Folder of the copied wheels on the node.", type: str}
      import_every_run: {description: "Import the stack on every run.", type: bool, default: false}
  profiles:
    description: The built-in profiles (the role's vars/profiles.yml).
    type: dict
    default: {}
  yanked:
    description: "Package to the releases withdrawn from the index: a list of versions or C({below: VERSION})."
    type: dict
    default: {}
  locks:
    description: Folder of the lock files, C(PROFILE/pyX.Y.txt), on the controller.
    type: path
  node:
    description:
      - What the role's probes found on the node - C(os_family), C(distribution), C(python) (amx.cluster.node_info's
        C(python), null when it failed) and C(python_error), C(markers), C(user) (C({home}), null when absent),
        C(group_exists), C(primary_group), C(venv_stat) (M(amx.cluster.folder_info)'s entry for the virtualenv
        folder) and C(venv_writable).
    type: dict
    default: {}
  index_answers:
    description: The results of the index check's uri and stat tasks (each with C(item)).
    type: list
    elements: dict
    default: []
  resolved:
    description: The plan's RV(resolved), for O(venv).
    type: dict
  venv:
    description: The virtualenv as the node has it.
    type: dict
    suboptions:
      manifest: {description: "The manifest of the earlier install (its text), null when there is none.", type: str}
      freeze: {description: "The virtualenv's pip freeze.", type: str}
      report: {description: "amx.cluster.node_info's import, null when the stack was not imported again.", type: dict}
      earlier: {description: "The earlier manifest, as the install step returned it.", type: dict}
extends_documentation_fragment:
  - amx.cluster.controller_plan
notes:
  - A task of the torch_stack role; its interface may change with the role.
"""

EXAMPLES = r"""
- name: Check the settings and plan the install
  amx.cluster.stack_plan:
    settings:
      profile: native
      venv: /opt/amx-cluster/venv
      user: ubuntu
      install_mode: direct
    profiles: "{{ __torch_stack_profiles }}"
    node:
      os_family: Debian
      python: "{{ base.python }}"
      markers: "{{ base.markers }}"
      user: {home: /home/ubuntu}
  register: stack
"""

RETURN = r"""
problems:
  description: Every problem, one message each with the fix (the task fails when there is one; not with O(venv)).
  returned: always
  type: list
  elements: str
resolved:
  description: The effective profile - requirements, constraints (the lock), pins, packages, indexes, backend.
  returned: success, without O(venv)
  type: dict
requirements_sha256:
  description: Digest of the requirements, their lock and their sources.
  returned: success, without O(venv)
  type: str
index_args:
  description: pip's options that name the indexes.
  returned: success, without O(venv)
  type: list
  elements: str
index_urls:
  description: The indexes the index check asks.
  returned: success, without O(venv)
  type: list
  elements: str
left_out:
  description: The indexes left out because they did not answer (C(torch_stack_unreachable_indexes=skip)).
  returned: success, without O(venv)
  type: list
  elements: str
wheelhouse:
  description: The node's download - C(key), C(dest), C(args) (after the pip command), C(files), C(markers).
  returned: success in wheelhouse mode, without O(venv)
  type: dict
install_needed:
  description: Whether the stack must be installed.
  returned: with O(venv) but not O(venv.earlier)
  type: bool
manifest:
  description: The manifest to write into the virtualenv.
  returned: with O(venv.earlier)
  type: dict
facts:
  description: The values the role publishes as C(torch_stack_*) facts.
  returned: with O(venv.earlier)
  type: dict
verify_problems:
  description: What the verify step refuses (imports that fail, versions off their pins, IPEX against torch).
  returned: with O(venv.earlier)
  type: list
  elements: str
"""
