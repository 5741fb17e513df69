# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin amx.cluster.train_plan: the train role's whole launch, computed once on the controller.

It reads every node's facts and reads from hostvars (the node roles' facts, and what the role's preflight.yml read
on the nodes), checks its settings, and calls module_utils/train_plan.py's ``plan``. It fails with every problem of
every host at once, or returns the plan. Given ``results`` instead (the plan and what the run gave), it returns the
run's record. It changes nothing, anywhere.
"""

from __future__ import annotations

import hashlib
import os
import time
from typing import Any, Dict, Mapping, Optional

from ansible.plugins.action import ActionBase

from ansible_collections.amx.cluster.plugins.module_utils.cluster_shape import ShapeError, cluster_shape
from ansible_collections.amx.cluster.plugins.module_utils.run_files import files_to_copy
from ansible_collections.amx.cluster.plugins.module_utils.train_gates import stale_workers
from ansible_collections.amx.cluster.plugins.module_utils.train_plan import (
    LAUNCH_INPUTS,
    NODE_FACTS,
    fingerprint_again,
    plan,
    record,
)
from ansible_collections.amx.cluster.plugins.plugin_utils.hostvars import hostvar

_RAW: Dict[str, Any] = {"type": "raw"}
_STR: Dict[str, Any] = {"type": "str"}
_INT: Dict[str, Any] = {"type": "int"}
_BOOL: Dict[str, Any] = {"type": "bool", "default": False}
SETTINGS: Dict[str, Any] = {
    **{key: dict(_RAW) for key in LAUNCH_INPUTS},
    "secret_env": {"type": "raw", "no_log": True},
    "require_amx": {"type": "bool", "default": True},
    "require_same_stack": {"type": "bool", "default": True},
    "processes_per_node": {"type": "int", "default": 2},
    "num_processes": _INT,
    "ccl_workers": _INT,
    "os_cores": _INT,
    "layout_mode": {"type": "str", "default": "socket"},
    "pin_ranks": {"type": "bool"},
    "layout_oversubscribe": _BOOL,
    "omp_threads": _INT,
    "ccl_worker_affinity": _RAW,
    "backend": {"type": "str", "default": "auto"},
    "user": {"type": "str", "required": True},
    "hostfile": {"type": "str", "default": "~/hosts"},
    "mpi": {"type": "str", "default": "mpich"},
    "master_port": {"type": "int", "default": 29500},
    "script": {"type": "str", "default": "qa_finetune"},
    "data": {"type": "str", "default": "tiny"},
    "model": _STR,
    "train_file": _STR,
    "validation_file": _STR,
    "dataset_name": {"type": "str", "default": "squad"},
    "run_root": {"type": "str", "default": ""},
    "tiny_key": {"type": "str", "required": True},
    "results_dir": _STR,
    "controller_cache": _STR,
    "fetch_model": _BOOL,
    "smoke_test": {"type": "bool", "default": True},
    "smoke_timeout": _RAW,
    "smoke_test_max_age": _RAW,
    "smoke_test_force": _BOOL,
    "timeout": _RAW,
    "poll_interval": _RAW,
    "single_node_check": _BOOL,
    "single_node_use_ipex": {"type": "bool", "default": True},
    "single_node_variant": {"type": "str", "default": "post"},
    "scaling_nodes": _RAW,
    "fast_launch": _BOOL,
    "launch_inputs": {"type": "str", "default": ""},
}
ARGUMENT_SPEC: Dict[str, Any] = {
    "settings": {"type": "dict", "options": SETTINGS},
    "results": {
        "type": "dict",
        "options": {
            "plan": {"type": "dict", "required": True},
            "launcher_info": {"type": "str"},
            "job": {"type": "dict"},
            "smoke": {"type": "dict"},
            "single_node": {"type": "dict"},
            "metrics": {"type": "str"},
            "stale_folder": {"type": "str"},
            "fetch": {
                "type": "dict",
                "options": {
                    "there": {"type": "list", "elements": "dict", "required": True},
                    "here": {"type": "list", "elements": "dict", "default": []},
                    "here_root": {"type": "str", "required": True},
                    "skip": {"type": "str", "default": ""},
                },
            },
        },
    },
}
# What the node reads of preflight.yml left on each node (registered results), and on the master.
NODE_READS = {
    "folders": ("__train_folders", "folders"),
    "checkpoints": ("__train_checkpoint_files", "files"),
    "checksums": ("__train_smoke_sums", "stdout"),
}
MASTER_READS = {
    "result": ("__train_earlier",),
    "supervisor_cmdline": ("__train_supervisor_cmdline",),
    "earlier_launch": ("__train_earlier_launch",),
    "hostfile": ("__train_hostfile_read",),
    "ssh": ("__train_ssh", "results"),
    "setvars": ("__train_setvars", "stdout"),
    "launcher_info": ("__train_launcher_info", "stdout"),
    "smoke_record": ("__train_smoke_record_read",),
}
# The role's scripts the smoke test runs: their digests are part of its fingerprint.
SMOKE_FILES = ("smoke_allreduce.py", "rank_exec.sh")


def node_facts(hostvars: Mapping[str, Any], host: str, user: str) -> Dict[str, Any]:
    """What the plan reads of one node: the node roles' facts and the role's own reads there."""
    names = (*NODE_FACTS, "amx_check_amx_reason", "torch_stack_has_oneccl", "torch_stack_has_ipex")
    found: Dict[str, Any] = {name: hostvar(hostvars, host, name) for name in (*names, "tcmalloc_library_path")}
    found.update({key: hostvar(hostvars, host, *path) for key, path in NODE_READS.items()})
    found["kernel"] = hostvar(hostvars, host, "ansible_facts", "kernel")
    found["user"] = hostvar(hostvars, host, "__train_getent", "ansible_facts", "getent_passwd", user)
    return found


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: Optional[str] = None, task_vars: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(
            argument_spec=ARGUMENT_SPEC,
            mutually_exclusive=[("settings", "results")],
            required_one_of=[("settings", "results")],
        )[1]
        if args["results"]:
            given = args["results"]
            result["changed"] = False
            if given["launcher_info"] is not None:
                result["fingerprint"] = fingerprint_again(given["plan"], given["launcher_info"])
            if given["stale_folder"]:
                # What each node's find of that folder registered (preflight's node reads' way: from hostvars).
                hostvars = (task_vars or {}).get("hostvars", {})
                workers = {name: hostvar(hostvars, name, "__train_tiny_files") for name in given["plan"]["workers"]}
                master_files = hostvar(hostvars, given["plan"]["master"], "__train_tiny_files")
                result["stale_workers"] = stale_workers(master_files, workers, given["stale_folder"])
            if given["fetch"]:
                fetch = given["fetch"]
                result["to_copy"] = files_to_copy(
                    fetch["there"], given["plan"]["run_dir"], fetch["here"], fetch["here_root"], skip=fetch["skip"]
                )
            if given["job"] is not None:
                result["record"] = record(
                    given["plan"], given["job"], given["smoke"], given["single_node"], given["metrics"]
                )
            return result
        settings = args["settings"]
        task_vars = task_vars or {}
        hostvars = task_vars.get("hostvars", {})
        try:
            shape = cluster_shape(task_vars.get("groups", {}), hostvars)
        except ShapeError as error:
            return {**result, "failed": True, "msg": str(error)}
        master = shape["master"]
        # A node that left the play (unreachable, failed) is named by the plan; its facts are not read.
        names = [node["name"] for node in shape["nodes"] if node["name"] in task_vars.get("ansible_play_hosts", [])]
        role_path = task_vars.get("role_path") or ""
        context = {
            "shape": shape,
            "play_hosts_all": list(task_vars.get("ansible_play_hosts_all", [])),
            "play_hosts": list(task_vars.get("ansible_play_hosts", [])),
            "run_id": hostvar(hostvars, master, "__train_run_id_fact") if master else None,
            "now": time.time(),
            "example_dir": hostvar(hostvars, master, "hf_examples_example_dir") if master else None,
            "mpich_launcher": (hostvar(hostvars, master, "__train_mpich_launcher") if master else None) or "mpirun",
            "controller_home": os.environ.get("HOME"),
            "role_files": {name: self._digest(os.path.join(role_path, "files", name)) for name in SMOKE_FILES},
        }
        nodes = {name: node_facts(hostvars, name, settings["user"]) for name in names}
        reads = {key: hostvar(hostvars, master, *path) for key, path in MASTER_READS.items()} if master else {}
        computed = plan(settings, nodes, reads, context)
        result.update(computed, changed=False)
        if computed["problems"]:
            result.update(
                failed=True,
                msg="The training cannot start as set (nothing was changed on any node): "
                + " | ".join(computed["problems"])
                + ".",
            )
        return result

    @staticmethod
    def _digest(path: str) -> Optional[str]:
        try:
            with open(path, "rb") as handle:
                return hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            return None
