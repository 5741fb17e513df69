# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.files_to_copy: a thin wrapper over module_utils.run_files.files_to_copy."""

from __future__ import annotations

DOCUMENTATION = r"""
name: files_to_copy
short_description: The files of one folder that another folder lacks or holds in another version
version_added: 0.1.0
author: amx.cluster contributors
description:
  - Compares the C(files) that M(ansible.builtin.find) returns with C(get_checksum=true) for two folders, by path
    relative to each folder, and returns the relative paths to copy, sorted.
positional: source_root, target, target_root
options:
  _input:
    description: The source folder's files (each with C(path) and C(checksum)).
    type: list
    elements: dict
    required: true
  source_root:
    description: The folder the source paths are relative to.
    type: str
    required: true
  target:
    description: The target folder's files (each with C(path) and C(checksum)).
    type: list
    elements: dict
    required: true
  target_root:
    description: The folder the target paths are relative to.
    type: str
    required: true
  skip:
    description: A regular expression; relative paths it matches are never copied.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Pack the files the controller lacks
  ansible.builtin.command:
    argv: "{{ ['tar', '-czf', archive, '-C', run_dir, '--'] + (found_there.files
             | amx.cluster.files_to_copy(run_dir, found_here.files, results_dir, skip='^output/')) }}"
  changed_when: false
"""

RETURN = r"""
_value:
  description: Relative paths, sorted.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.amx.cluster.plugins.module_utils.run_files import files_to_copy  # noqa: E402


def files_to_copy_filter(source, *args, **kwargs):
    try:
        return files_to_copy(source, *args, **kwargs)
    except (TypeError, ValueError, AttributeError) as error:
        raise AnsibleFilterError(f"amx.cluster.files_to_copy: {error}") from error


class FilterModule:
    def filters(self):
        return {"files_to_copy": files_to_copy_filter}
