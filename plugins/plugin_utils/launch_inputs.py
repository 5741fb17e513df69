# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one-step launch's inputs, on the controller: what train.yml's first play sees before any role has run.

The hash covers the collection (its version and every file of its roles, plugins and playbooks), the inventory's
groups and the --limit, where the playbook runs from, and each cluster host's variables as the inventory and the
command line give them, templated (a lookup by its value; a variable that refers to a fact not gathered yet is
compared as written, the fact itself is in the nodes' fingerprints). Ansible's own variables, what the run made
(registered results, set facts: they depend on the forks and the order of the hosts) and the roles' internal __
values are left out, and so is train_run_id, which names the next run. Another value anywhere is another plan:
the full path runs and writes a plan for it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from typing import Any, Callable, Dict, Iterable, List, Mapping, Set

from ansible.errors import AnsibleError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.amx.cluster.plugins.plugin_utils.node_stamp import collection_version, file_sha256

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
                digest.update(bytes.fromhex(file_sha256(path)))
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


# Roles' internal values (their decisions, registered steps): what a run makes, never the user's settings.
INTERNAL_PREFIX = "__"


def run_made(hostvars: Any, host: str) -> Set[str]:
    """The names a run set on `host` (register, set_fact, include_vars, gathered facts): they depend on the order of
    the hosts and the forks, and on what the run did, never on the user's settings."""
    manager = getattr(hostvars, "_variable_manager", None)
    made: Set[str] = set()
    for cache in ("_nonpersistent_fact_cache", "_vars_cache"):
        made.update((getattr(manager, cache, None) or {}).get(host) or {})
    # A cache plugin: a host it has nothing of is a KeyError.
    with contextlib.suppress(AttributeError, KeyError):
        made.update(getattr(manager, "_fact_cache", None).get(host) or {})
    return made


def plain(value: Any, omit: str = "") -> Any:
    """A templated value as plain JSON types; Ansible's per-run omit token is replaced by "<omit>" (it is random)
    and anything JSON does not know by its type's name (an object's repr may hold its address)."""
    if isinstance(value, Mapping):
        return {str(key): plain(item, omit) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item, omit) for item in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return str(value).replace(omit, "<omit>") if omit else str(value)
    return f"<{type(value).__name__}>"


def settled(variables: Mapping[str, Any], made: Set[str], template: Callable[[Any], Any]) -> Dict[str, Any]:
    """A host's settings for an inputs hash: its user variables (user_variables) less what the run made (`made`, and
    every internal __ name), each templated by `template` (a lookup's value, not its text). A value that cannot be
    templated yet (it names a fact not gathered so far, a lookup fails) is kept as written, marked so."""
    omit = variables.get("omit") if isinstance(variables.get("omit"), str) else ""
    kept: Dict[str, Any] = {}
    for name, value in sorted(user_variables(variables).items()):
        if name in made or name.startswith(INTERNAL_PREFIX):
            continue
        try:
            kept[name] = plain(template(value), omit)
        except AnsibleError:
            kept[name] = {"as written": plain(value, omit)}
    return kept


def cluster_settings(task_vars: Mapping[str, Any], templar: Any, only_self: bool = False) -> Dict[str, Dict[str, Any]]:
    """{host: settled variables} of every cluster host (or, with `only_self`, of the running host alone), each
    templated in its own host's context. The running host's come from its task variables, which also hold the play's
    (vars given to import_playbook, which every play of the playbook gets) that the inventory alone would not see."""
    hostvars = task_vars["hostvars"]
    running = str(task_vars.get("inventory_hostname"))
    names = [running] if only_self else [str(name) for name in (task_vars.get("groups") or {}).get("cluster") or []]
    settings: Dict[str, Dict[str, Any]] = {}
    for name in names:
        variables = dict(task_vars) if name == running else dict(hostvars.raw_get(name))
        host_templar = templar.copy_with_new_env(available_variables=variables)
        settings[name] = settled(variables, run_made(hostvars, name), host_templar.template)
    return settings


def play_inputs(task_vars: Mapping[str, Any], hosts: Mapping[str, Mapping[str, Any]], collection_root: str) -> str:
    """launch_inputs for a task: the hosts of cluster_settings, the inventory's groups, the --limit, where the playbook
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
    """The names of the full-check switches set on any of `hosts` (values read as Ansible booleans)."""
    on: List[str] = []
    for name in names:
        for variables in hosts.values():
            if boolean(variables.get(name, False), strict=False):
                on.append(name)
                break
    return on
