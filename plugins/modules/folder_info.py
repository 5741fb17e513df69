#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: folder_info
short_description: Whether folders exist, what they are, and whether a user may write to them
version_added: 0.2.0
description:
  - Looks at each path of O(paths) on the node and reports whether it exists, whether it is a folder or a symbolic
    link (and where the link leads), and whether O(user) may write to it, as that user's own process would find
    (the user's ids and groups, as C(test -w) run by that user answers).
  - The roles read the folders they would use as they are this way, in one call for all of them, before they
    change anything.
  - To answer for another user than the one it runs as, the module needs root (C(become)); it then asks in a
    short-lived child process that takes the user's ids. Nothing on the node changes.
author:
  - amx.cluster developers (@amx-cluster)
options:
  paths:
    description: The absolute paths to look at, reported in this order.
    type: list
    elements: str
    required: true
  user:
    description:
      - The account whose right to write is asked.
      - An account the node does not have gives C(null) for RV(folders[].writable) rather than an error, so that
        the caller reports it with its other problems.
    type: str
    required: true
attributes:
  check_mode:
    support: full
    description: It only reads, in check mode too.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to show.
"""

EXAMPLES = r"""
- name: Look at the run's folders, and whether the training user may write to them
  amx.cluster.folder_info:
    paths: [/srv/runs, /srv/runs/datasets]
    user: mlops
  become: true
  register: folders

- name: Name the existing folders mlops cannot write to
  ansible.builtin.debug:
    msg: "{{ folders.folders | selectattr('writable', 'false') | map(attribute='path') | list }}"
"""

RETURN = r"""
folders:
  description: One entry per O(paths), in that order; the keys beside C(path) are those of M(ansible.builtin.stat).
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The path as given.
      type: str
      sample: /srv/runs
    exists:
      description: Whether there is anything at the path (a link that leads nowhere counts).
      type: bool
      sample: true
    isdir:
      description: Whether it is a folder, or a link that leads to one.
      type: bool
      sample: true
    islnk:
      description: Whether it is a symbolic link.
      type: bool
      sample: false
    lnk_source:
      description: Where a link leads, every link on the way resolved; C(null) for anything else.
      type: str
      sample: /data/runs
    writable:
      description: Whether O(user) may write to it; C(null) when nothing exists there or the node has no such user.
      type: bool
      sample: true
"""

import os
import pwd
import stat
from typing import Any, Dict, List, Optional, Sequence

from ansible.module_utils.basic import AnsibleModule


def folder_state(path: str) -> Dict[str, Any]:
    """What is at ``path``, the link itself not followed but for ``isdir`` and ``lnk_source``."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return {"path": path, "exists": False, "isdir": False, "islnk": False, "lnk_source": None}
    islnk = stat.S_ISLNK(mode)
    return {
        "path": path,
        "exists": True,
        "isdir": os.path.isdir(path),
        "islnk": islnk,
        "lnk_source": os.path.realpath(path) if islnk else None,
    }


def writable_by(account: pwd.struct_passwd, paths: Sequence[str]) -> List[bool]:
    """Whether ``account`` may write to each path: asked with the account's real ids and groups, in a child process
    when the module runs as root, since os.access answers for the process that calls it."""
    if os.geteuid() == account.pw_uid:
        return [os.access(path, os.W_OK) for path in paths]
    if os.geteuid() != 0:
        raise PermissionError(
            f"folder_info runs as uid {os.geteuid()} and cannot ask what {account.pw_name} may write: run it as"
            f" {account.pw_name} or with become: true"
        )
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: take the account's ids for good, answer one character a path, and leave
        status = 1
        try:
            os.close(read_end)
            os.initgroups(account.pw_name, account.pw_gid)
            os.setgid(account.pw_gid)
            os.setuid(account.pw_uid)
            os.write(write_end, "".join("1" if os.access(path, os.W_OK) else "0" for path in paths).encode())
            status = 0
        finally:
            os._exit(status)  # pylint: disable=protected-access  # no cleanup of the parent's runs in the child
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answer_pipe:
        answer = answer_pipe.read().decode()
    status = os.waitpid(pid, 0)[1]
    if status != 0 or len(answer) != len(paths):
        raise RuntimeError(f"the check as {account.pw_name} ended with status {status} before it answered")
    return [flag == "1" for flag in answer]


def folder_facts(paths: Sequence[str], user: str) -> List[Dict[str, Any]]:
    """Each path's state and whether ``user`` may write to it (null where nothing exists or there is no such user)."""
    states = [folder_state(path) for path in paths]
    try:
        account: Optional[pwd.struct_passwd] = pwd.getpwnam(user)
    except KeyError:
        account = None
    existing = [state["path"] for state in states if state["exists"]]
    answers = dict(zip(existing, writable_by(account, existing))) if account and existing else {}
    return [dict(state, writable=answers.get(state["path"])) for state in states]


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "paths": {"type": "list", "elements": "str", "required": True},
            "user": {"type": "str", "required": True},
        },
        supports_check_mode=True,
    )
    relative = [path for path in module.params["paths"] if not os.path.isabs(path)]
    if relative:
        module.fail_json(msg=f"folder_info needs absolute paths, got {', '.join(map(repr, relative))}")
    try:
        folders = folder_facts(module.params["paths"], module.params["user"])
    except (OSError, RuntimeError) as error:
        module.fail_json(msg=str(error))
    module.exit_json(changed=False, folders=folders)


if __name__ == "__main__":
    main()
