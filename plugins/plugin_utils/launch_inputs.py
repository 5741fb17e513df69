# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one-step launch's inputs, on the controller: what train.yml's first play sees before any role has run.

The hash covers the collection (its version and every file of its roles, plugins and playbooks), the inventory's
groups and the --limit, where the playbook runs from, and each cluster host's variables as the inventory and the
command line give them, untemplated (a variable that refers to a fact is compared as written; the fact itself is
in the nodes' fingerprints). Ansible's own variables are left out, and so is train_run_id, which names the next
run. Another value anywhere is another plan: the full path runs and writes a plan for it.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, Iterable, List, Mapping

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.amx.cluster.plugins.plugin_utils.node_stamp import collection_version

# The collection's folders whose files change what a launch does.
HASHED_FOLDERS = ("roles", "plugins", "playbooks")
# Variables Ansible sets itself (magic variables), not the user's.
MAGIC = frozenset(
    {
        "environment",
        "group_names",
        "groups",
        "hostvars",
        "inventory_dir",
        "inventory_file",
        "inventory_hostname",
        "inventory_hostname_short",
        "omit",
        "play_hosts",
        "playbook_dir",
        "role_name",
        "role_names",
        "role_path",
        "vars",
    }
)
# Of the ansible_* names, those that say how to reach and act on a host: the user's.
CONNECTION = (
    "ansible_host",
    "ansible_port",
    "ansible_user",
    "ansible_connection",
    "ansible_become",
    "ansible_ssh_",
    "ansible_python_interpreter",
    "ansible_private_key_file",
)
# The next run's name: every launch gives a new one.
VOLATILE = frozenset({"train_run_id"})


def user_variables(variables: Mapping[str, Any]) -> Dict[str, Any]:
    """The variables of a host that are the user's: no magic variable, no fact, no run id."""
    kept: Dict[str, Any] = {}
    for name, value in variables.items():
        if name in MAGIC or name in VOLATILE:
            continue
        if name.startswith("ansible_") and not name.startswith(CONNECTION):
            continue
        kept[str(name)] = value
    return kept


def collection_files_hash(root: str) -> str:
    """One sha256 over the collection's version and the path and content of every file that shapes a launch."""
    digest = hashlib.sha256(collection_version(os.path.join(root, "roles", "train")).encode("utf-8"))
    for folder in HASHED_FOLDERS:
        for current, subfolders, files in os.walk(os.path.join(root, folder)):
            subfolders[:] = sorted(sub for sub in subfolders if sub != "__pycache__")
            for name in sorted(files):
                if name.endswith(".pyc"):
                    continue
                path = os.path.join(current, name)
                digest.update(os.path.relpath(path, root).encode("utf-8") + b"\0")
                with open(path, "rb") as handle:
                    digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()


def launch_inputs(
    hosts: Mapping[str, Mapping[str, Any]],
    groups: Mapping[str, Iterable[str]],
    context: Mapping[str, Any],
    collection_hash: str,
) -> str:
    """The inputs hash: ``hosts`` maps each cluster host to its raw variables, ``groups`` the inventory's groups,
    ``context`` where and how the playbook runs (the limit, the playbook's folder, the working folder, HOME)."""
    document = {
        "collection": collection_hash,
        "groups": {name: list(groups.get(name) or []) for name in ("master", "workers", "cluster")},
        "context": dict(context),
        "hosts": {str(host): user_variables(variables) for host, variables in hosts.items()},
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cluster_hosts(task_vars: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Each cluster host's raw variables (hostvars.raw_get), with the running host's own task variables instead:
    those also hold the play's (vars given to import_playbook, which every play of the playbook gets), which the
    inventory alone would not see."""
    hostvars = task_vars["hostvars"]
    groups = task_vars.get("groups") or {}
    hosts = {str(name): dict(hostvars.raw_get(name)) for name in groups.get("cluster") or []}
    hosts[str(task_vars.get("inventory_hostname"))] = dict(task_vars)
    return hosts


def play_inputs(task_vars: Mapping[str, Any], hosts: Mapping[str, Mapping[str, Any]], collection_root: str) -> str:
    """launch_inputs for a task: the hosts of cluster_hosts, the inventory's groups, the --limit, where the playbook
    runs from (its folder, the working folder, HOME) and the collection at collection_root."""
    context = {
        "limit": task_vars.get("ansible_limit"),
        "playbook_dir": task_vars.get("playbook_dir"),
        "pwd": os.environ.get("PWD"),
        "home": os.environ.get("HOME"),
    }
    groups = task_vars.get("groups") or {}
    return launch_inputs(hosts, groups, context, collection_files_hash(collection_root))


def forced(hosts: Mapping[str, Mapping[str, Any]], names: List[str]) -> List[str]:
    """The names of the full-check switches set on any cluster host (raw values read as Ansible booleans)."""
    on: List[str] = []
    for name in names:
        for variables in hosts.values():
            if boolean(variables.get(name, False), strict=False):
                on.append(name)
                break
    return on
