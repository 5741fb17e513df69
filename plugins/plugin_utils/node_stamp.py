# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller's side of the node record (the actions amx.cluster.node_record and amx.cluster.provision_stamp):
the inputs hash of a node role, from its files, its collection's version and plugin code and its resolved options;
and the one way they read or write a record on the node."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List, Mapping, Tuple

import yaml
from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.amx.cluster.plugins.module_utils.node_state import (
    ARGUMENT_SPEC,
    StampError,
    inputs_hash,
    version_from_galaxy,
)
from ansible_collections.amx.cluster.plugins.plugin_utils import node_bundle

# Files of a role that do not change what it does.
LEFT_OUT = ("README.md",)
# Options that say how this run works, not what the role makes of the node: node_setup.yml sets
# <role>_preflight_done (it checked the input already) and <role>_os_packages_done (it installed the packages in
# one call) where a user's playbook does not. The fingerprint still holds the packages' versions.
RUN_OPTION_SUFFIXES = ("_preflight_done", "_os_packages_done")
# The collection's code that a node role's run uses (its modules and what they ship, its actions and filters): a
# checkout at the same version with other code is other inputs.
PLUGIN_FOLDERS = ("action", "filter", "module_utils", "modules", "plugin_utils")


def collection_version(role_path: str) -> str:
    """The version of the collection a role belongs to: MANIFEST.json once installed, galaxy.yml in a checkout."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(role_path)))
    manifest = os.path.join(root, "MANIFEST.json")
    if os.path.isfile(manifest):
        with open(manifest, encoding="utf-8") as handle:
            version = str((json.load(handle).get("collection_info") or {}).get("version") or "")
        if version:
            return version
    galaxy = os.path.join(root, "galaxy.yml")
    if os.path.isfile(galaxy):
        with open(galaxy, encoding="utf-8") as handle:
            return version_from_galaxy(handle.read())
    raise StampError(f"no MANIFEST.json or galaxy.yml two folders above the role {role_path}")


# {path: ((inode, size, mtime), sha256)}: every task hashes the same collection files again; a file is read again
# only when its inode, size or time changed.
_HASHED: Dict[str, Tuple[Tuple[int, int, int], str]] = {}


def file_sha256(path: str) -> str:
    """The sha256 of a collection file's bytes, kept for the life of the process while the file stays as it was."""
    info = os.stat(path)
    key = (info.st_ino, info.st_size, info.st_mtime_ns)
    known = _HASHED.get(path)
    if known is not None and known[0] == key:
        return known[1]
    with open(path, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    _HASHED[path] = (key, digest)
    return digest


def folder_file_hashes(folder: str, label: str) -> Dict[str, str]:
    """{label/relative path: sha256} of every file beneath `folder` (compiled Python left out); {} when absent."""
    hashes: Dict[str, str] = {}
    for current, subfolders, files in os.walk(folder):
        subfolders[:] = sorted(sub for sub in subfolders if sub != "__pycache__")
        for file_name in sorted(files):
            if file_name.endswith(".pyc"):
                continue
            path = os.path.join(current, file_name)
            hashes[f"{label}/{os.path.relpath(path, folder)}"] = file_sha256(path)
    return hashes


def plugin_file_hashes(role_path: str) -> Dict[str, str]:
    """{plugins/<folder>/<relative path>: sha256} of the code of the collection a role belongs to (PLUGIN_FOLDERS)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(role_path)))
    hashes: Dict[str, str] = {}
    for folder in PLUGIN_FOLDERS:
        hashes.update(folder_file_hashes(os.path.join(root, "plugins", folder), f"plugins/{folder}"))
    return hashes


def role_file_hashes(role_path: str) -> Dict[str, str]:
    """{role/relative path: sha256} of every file of a role (its README and compiled Python left out)."""
    if not os.path.isdir(role_path):
        raise StampError(f"{role_path} is not a role folder")
    name = os.path.basename(os.path.abspath(role_path))
    hashes: Dict[str, str] = {}
    for folder, subfolders, files in os.walk(role_path):
        subfolders[:] = sorted(sub for sub in subfolders if sub != "__pycache__")
        for file_name in sorted(files):
            relative = os.path.relpath(os.path.join(folder, file_name), role_path)
            if relative in LEFT_OUT or file_name.endswith(".pyc"):
                continue
            hashes[f"{name}/{relative}"] = file_sha256(os.path.join(folder, file_name))
    return hashes


def node_stamp_inputs(variables: Mapping[str, Any], role_paths: List[str]) -> str:
    """The inputs hash of a node role: the collection version, its plugin code (PLUGIN_FOLDERS), the files of
    `role_paths`, the `variables`."""
    if isinstance(role_paths, str):
        role_paths = [role_paths]
    if not isinstance(role_paths, list) or not role_paths:
        raise StampError("give the role folders to hash as a list (the role's own first)")
    files: Dict[str, str] = plugin_file_hashes(role_paths[0])
    for path in role_paths:
        files.update(role_file_hashes(path))
    return inputs_hash(collection_version(role_paths[0]), files, variables)


def node_stamp_option_names(role_path: str, entry_point: str = "main") -> List[str]:
    """The option names of a role's entry point, from its meta/argument_specs.yml, sorted, without the options that
    only say how this run checks the node (RUN_OPTION_SUFFIXES)."""
    spec_file = os.path.join(role_path, "meta", "argument_specs.yml")
    if not os.path.isfile(spec_file):
        raise StampError(f"{role_path} has no meta/argument_specs.yml")
    with open(spec_file, encoding="utf-8") as handle:
        specs = (yaml.safe_load(handle) or {}).get("argument_specs") or {}
    if entry_point not in specs:
        raise StampError(f"{spec_file} has no entry point '{entry_point}'")
    options = (specs[entry_point] or {}).get("options") or {}
    return sorted(name for name in options if not name.endswith(RUN_OPTION_SUFFIXES))


def text_paths(spec: Mapping[str, Any]) -> Dict[str, Any]:
    """An argument spec whose path options are checked as strings: the node expands them (node_state.node_paths)."""
    copied: Dict[str, Any] = {}
    for name, option in spec.items():
        option = dict(option)
        if option["type"] == "path":
            option["type"] = "str"
        if option.get("elements") == "path":
            option["elements"] = "str"
        if "options" in option:
            option["options"] = text_paths(option["options"])
        copied[name] = option
    return copied


CONTROLLER_SPEC = text_paths(ARGUMENT_SPEC)


def node_state(action: Any, task_vars: Mapping[str, Any], params: Mapping[str, Any]) -> Dict[str, Any]:
    """A read or a write of a record on the action's host (module_utils.node_state.run, as root when the task
    says become): sent by node_bundle in one round trip, or as the amx.cluster.node_state module where the connection
    cannot take a command's standard input. The parameters are checked here, before anything is sent."""
    host = task_vars.get("inventory_hostname")
    checked = ArgumentSpecValidator(CONTROLLER_SPEC).validate(dict(params))
    if checked.error_messages:
        raise AnsibleActionFail(f"{host}: the record's parameters are wrong: {'; '.join(checked.error_messages)}")
    if node_bundle.can_send(action._connection):
        call = {"params": checked.validated_parameters, "check_mode": bool(action._task.check_mode)}
        try:
            found = node_bundle.run(action, task_vars, "node_state", "answer", call)
        except node_bundle.BundleError as exc:
            raise AnsibleActionFail(f"{host}: the node record could not be read or written: {exc}") from None
    else:
        module_args = dict(params)
        found = action._execute_module(
            module_name="amx.cluster.node_state", module_args=module_args, task_vars=task_vars
        )
        found.pop("invocation", None)
    if found.get("failed"):
        raise AnsibleActionFail(f"{host}: {found.get('msg') or 'amx.cluster.node_state failed'}")
    return found
