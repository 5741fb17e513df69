# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The train role's plan: every gate, the run's state, the layout, the launch and the smoke test's due, at once.

``plan(settings, nodes, master, context)`` is a pure function of what the nodes reported (``nodes``: inventory
name -> that node's facts and reads, see :data:`NODE_KEYS`), what the master read (``master``: the run's earlier
result, the hostfile, the SSH probes, ...) and the role's settings (``settings``: the ``train_*`` variables without
their prefix). It returns the plan, whose ``problems`` lists every problem found, each naming its host and the fix:
the role fails with all of them before any change, or goes on with the rest of the plan.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import posixpath
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.amx.cluster.plugins.module_utils.checkpoints import resume_point
from ansible_collections.amx.cluster.plugins.module_utils.dialect import flag_dialect
from ansible_collections.amx.cluster.plugins.module_utils.inputs import folder_problems, launch_problems, system_folder
from ansible_collections.amx.cluster.plugins.module_utils.launch import launch_command, mpi_launcher, script_args
from ansible_collections.amx.cluster.plugins.module_utils.launch_plan import run_record
from ansible_collections.amx.cluster.plugins.module_utils.layout import rank_layout
from ansible_collections.amx.cluster.plugins.module_utils.smoke_record import (
    RECORD_VERSION,
    smoke_fingerprint,
    smoke_test_due,
)
from ansible_collections.amx.cluster.plugins.module_utils.train_gates import (
    hostfile_read_problems,
    scaling_problems,
    script_problems,
    ssh_problems,
    stack_problems,
)

__all__ = ["LAUNCH_INPUTS", "RUN_ID", "fingerprint_again", "passing_ranks", "plan", "record", "run_state"]

# The role's variables that amx.cluster.train's launch checks by its own rules (module_utils/inputs.py).
LAUNCH_INPUTS = (
    "extra_env",
    "secret_env",
    "extra_args",
    "script_args",
    "launcher_options",
    "ssh_options",
    "bf16",
    "prepend_rank",
    "rerun",
    "resume",
    "preload_tcmalloc",
    "fetch_results",
    "kmp_hw_subset",
    "master_addr",
    "launcher",
    "python",
    "script_path",
    "epochs",
    "learning_rate",
    "batch_size",
    "logging_steps",
    "doc_stride",
    "scaling_steps",
    "single_node_steps",
    "checkpoint_steps",
    "checkpoint_keep",
    "max_steps",
    "max_seq_length",
    "run_id",
)
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
# A smoke test rank's answer when its all_reduce was right (smoke_allreduce.py prints one JSON line).
PASSING_LINE = re.compile(r'^\{.*"ok": true')
# The facts of the node roles the training reads (amx_check, torch_stack, tcmalloc).
NODE_FACTS = (
    "amx_check_topology",
    "amx_check_amx_usable",
    "torch_stack_manifest_hash",
    "torch_stack_packages",
    "torch_stack_versions",
    "torch_stack_venv_python",
)
# Defaults of the training knobs for each kind of data.
DATA_DEFAULTS = {
    "hub": {"epochs": 1, "batch_size": 32},
    "files": {"epochs": 1, "batch_size": 32},
    "tiny": {"epochs": 8, "batch_size": 16, "learning_rate": 3.0e-3, "max_seq_length": 96, "doc_stride": 32},
}
HUB_MODEL = "distilbert-base-uncased"
BASE_ENV = {"PYTHONFAULTHANDLER": "1", "TOKENIZERS_PARALLELISM": "false"}
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
# What the post's single-node run leaves to torch: the OpenMP threads and their placement.
SINGLE_POST_UNSET = ["OMP_NUM_THREADS", "KMP_HW_SUBSET", "AMX_CLUSTER_RANK_CPUS", "AMX_CLUSTER_RANK_OMP_CPUS"]


def _text(read: Any) -> Optional[str]:
    """The text of a registered ansible.builtin.slurp result, or None when the file was not read."""
    if not isinstance(read, Mapping) or read.get("content") is None:
        return None
    try:
        return base64.b64decode(str(read["content"])).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return None


def run_state(result: Optional[str], supervisor_cmdline: Optional[str]) -> str:
    """The run as its master's files tell it: ``finished`` (result.json says it ended well), ``failed`` (it ended
    otherwise, or its result cannot be read), ``running`` (no result, its supervisor still at work) or ``new``."""
    if result is not None:
        try:
            found = json.loads(result)
        except ValueError:
            return "failed"
        if isinstance(found, Mapping) and found.get("rc") == 0 and not found.get("timed_out"):
            return "finished"
        return "failed"
    return "running" if "train_agent.py" in (supervisor_cmdline or "") else "new"


def _flag(value: Any) -> bool:
    """A flag as Ansible reads one ('true', 'yes', 'on', '1' and true are true)."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "on", "1", "y", "t")
    return bool(value)


def _counts(value: Any) -> List[int]:
    """train_scaling_nodes as node counts, also when given on the command line as 1,3."""
    items = value.split(",") if isinstance(value, str) else list(value or [])
    return [int(str(item).strip()) for item in items if str(item).strip()]


def _plural(items: Sequence[Any], one: str, many: str) -> str:
    return one if len(items) == 1 else many


def _node_problems(name: str, node: Mapping[str, Any], settings: Mapping[str, Any]) -> List[str]:
    """The node roles' facts and the node's own gates (the user, AMX)."""
    problems = []
    missing = [fact for fact in NODE_FACTS if node.get(fact) is None]
    versions = node.get("torch_stack_versions") or {}
    tcmalloc_missing = settings["preload_tcmalloc"] and not node.get("tcmalloc_library_path")
    if missing or not versions.get("transformers") or tcmalloc_missing:
        problems.append(
            f"{name}: the training needs the facts of amx.cluster.amx_check (missing: "
            f"{', '.join(fact for fact in missing if fact.startswith('amx')) or 'none'}), amx.cluster.torch_stack"
            f" (torch_stack_versions with transformers: {bool(versions.get('transformers'))}) and amx.cluster.tcmalloc"
            f" (tcmalloc_library_path: {not tcmalloc_missing}). Run those roles before this one in the same play"
            " (playbooks/train.yml does), or set train_preload_tcmalloc: false to run without tcmalloc"
        )
    if node.get("amx_check_amx_usable") is not None and not node["amx_check_amx_usable"] and settings["require_amx"]:
        problems.append(
            f"{name}: AMX is not usable ({node.get('amx_check_amx_reason') or 'unknown reason'}), and train_require_amx"
            " is true: no training process was started. Run on nodes with AMX (Sapphire Rapids or later, a kernel"
            " >= 5.16; see amx.cluster.amx_check), or set train_require_amx: false to train without it"
        )
    if not node.get("user"):
        problems.append(
            f"{name}: user '{settings['user']}' does not exist. Create it on every node (the same account as"
            " ssh_mesh_user), or set train_user to it"
        )
    return problems


def _settings_problems(settings: Mapping[str, Any], example_dir: Optional[str]) -> List[str]:
    problems = []
    found = script_problems(
        settings["script"],
        settings["data"],
        script_path=settings["script_path"],
        script_args=settings["script_args"],
        model=settings["model"],
        train_file=settings["train_file"],
        validation_file=settings["validation_file"],
        example_dir=example_dir,
    )
    if found:
        problems.append(
            f"the script settings do not make a run: train_script {settings['script']} with train_data"
            f" {settings['data']}. {'. '.join(found)}"
        )
    limits = [
        ("smoke_timeout", 10, "must be at least 10 s"),
        ("smoke_test_max_age", 0, ">= 0 (0: the smoke test on every launch)"),
        ("timeout", 0, ">= 0 (0: none)"),
        ("single_node_steps", 0, ">= 0 (0: the whole run)"),
    ]
    for key, low, rule in limits:
        try:
            bad = int(settings[key]) < low
        except (TypeError, ValueError):
            bad = True
        if bad:
            problems.append(f"the limits need train_{key} {rule}; got {settings[key]}")
    try:
        interval = float(settings["poll_interval"])
        bad = math.isnan(interval) or interval <= 0
    except (TypeError, ValueError):
        bad = True
    if bad:
        problems.append(f"the limits need train_poll_interval > 0; got {settings['poll_interval']}")
    return problems


def _layouts(
    settings: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]], count: int, backend: Optional[str]
) -> Dict[str, Any]:
    """Each node's rank layout, or the sentence that says why it cannot run there."""
    ccl = settings["ccl_workers"]
    ccl = ccl if ccl is not None else (2 if backend == "ccl" else 0)
    layouts: Dict[str, Any] = {}
    for name, node in nodes.items():
        topology = node.get("amx_check_topology")
        if not isinstance(topology, Mapping):
            continue
        cores = int(topology.get("physical_cores") or 0)
        os_cores = settings["os_cores"] if settings["os_cores"] is not None else cores * 6 // 32
        try:
            layouts[name] = rank_layout(
                cores,
                nodes=count,
                processes_per_node=settings["processes_per_node"],
                ccl_workers=ccl,
                os_reserved_cores=os_cores,
                mode=settings["layout_mode"],
                omp_num_threads=settings["omp_threads"],
                ccl_worker_affinity=settings["ccl_worker_affinity"],
                num_processes=settings["num_processes"],
                topology=topology,
                pin=settings["pin_ranks"],
                oversubscribe=settings["layout_oversubscribe"],
            )
        except (TypeError, ValueError) as error:
            layouts[name] = (
                f"{name} ({cores} physical cores): the training layout cannot run there: {error}. The layout comes"
                f" from train_processes_per_node ({settings['processes_per_node']}), train_os_cores"
                f" ({settings['os_cores'] if settings['os_cores'] is not None else 'null: 6 of every 32 cores'}),"
                f" train_ccl_workers ({ccl}), train_omp_threads"
                f" ({settings['omp_threads'] if settings['omp_threads'] is not None else 'null'}), train_layout_mode"
                f" ({settings['layout_mode']}) and the node's {topology.get('sockets') or 1} socket(s): change them so"
                " that they fit this node"
            )
    return layouts


def _folders(
    name: str, node: Mapping[str, Any], run_root: str, home: str, settings: Mapping[str, Any]
) -> Dict[str, Any]:
    """The node's run folders as amx.cluster.folder_info found them: the absent ones, and the problems."""
    folders = [item for item in node.get("folders") or [] if isinstance(item, Mapping) and "path" in item]
    problems: List[str] = []
    not_dirs = [item["path"] for item in folders if item.get("exists") and not item.get("isdir")]
    link = folders[0].get("lnk_source") if folders else None
    what = system_folder(link, home) if isinstance(link, str) and link else None
    links = [f"train_run_root is {run_root!r}, a link to {link!r}, {what}"] if what else []
    if not_dirs or links:
        text = f"{name}: "
        if not_dirs:
            text += (
                f"{', '.join(not_dirs)} exist{_plural(not_dirs, 's', '')} but {_plural(not_dirs, 'is', 'are')} not a"
                " folder. "
            )
        if links:
            text += "; ".join(links) + ". "
        problems.append(text + "Set train_run_root to a folder of its own (nothing was changed)")
    unwritable = [item["path"] for item in folders if item.get("writable") is False]
    if unwritable:
        problems.append(
            f"{name}: {', '.join(unwritable)} exist{_plural(unwritable, 's', '')} and"
            f" {_plural(unwritable, 'is', 'are')} not writable by {settings['user']}. The role uses an existing"
            f" folder as it is and never changes its owner or mode: make it writable by {settings['user']} yourself,"
            f" or set train_run_root to another folder (an absent one is created for {settings['user']})"
        )
    absent = [item["path"] for item in folders if not item.get("exists")]
    return {"absent": absent, "problems": problems}


def _args(settings: Mapping[str, Any], paths: Mapping[str, Any], out_dir: str, **bounds: Any) -> List[str]:
    """The training script's arguments for a run whose output goes to ``out_dir`` (launch.script_args)."""
    qa = settings["script"] == "qa_finetune"
    return script_args(
        settings["script"],
        out_dir,
        data=settings["data"],
        data_defaults=DATA_DEFAULTS,
        model=(settings["model"] or HUB_MODEL) if settings["script"] == "run_qa" else paths["model_dir"],
        dataset_name=settings["dataset_name"],
        train_file=paths["train_file"] if qa else None,
        validation_file=paths["validation_file"] if qa else None,
        epochs=settings["epochs"],
        batch_size=settings["batch_size"],
        learning_rate=settings["learning_rate"],
        max_seq_length=settings["max_seq_length"],
        doc_stride=settings["doc_stride"],
        max_steps=bounds.get("max_steps") if bounds.get("max_steps") is not None else settings["max_steps"],
        max_eval_samples=bounds.get("max_eval"),
        logging_steps=settings["logging_steps"],
        measure_only=bounds.get("measure_only", False),
        custom_args=settings["script_args"],
        extra_args=settings["extra_args"],
        checkpoint_steps=settings["checkpoint_steps"] if bounds.get("checkpoints") else 0,
        checkpoint_keep=settings["checkpoint_keep"],
    )


def _paths(settings: Mapping[str, Any], run_root: str, run_dir: str, example_dir: Optional[str]) -> Dict[str, Any]:
    tiny = f"{run_root}/datasets/tiny-qa-{settings['tiny_key']}"
    is_tiny = settings["data"] == "tiny"
    return {
        "tiny_dir": tiny,
        "model_dir": f"{tiny}/model" if is_tiny else settings["model"],
        "train_file": f"{tiny}/data/train.json" if is_tiny else settings["train_file"],
        "validation_file": f"{tiny}/data/validation.json" if is_tiny else settings["validation_file"],
        "script_file": {
            "qa_finetune": f"{run_dir}/qa_finetune.py",
            "run_qa": f"{example_dir or ''}/run_qa.py",
            "custom": settings["script_path"] or "",
        }.get(settings["script"], ""),
    }


def plan(
    settings: Mapping[str, Any],
    nodes: Mapping[str, Mapping[str, Any]],
    master: Mapping[str, Any],
    context: Mapping[str, Any],
) -> Dict[str, Any]:
    """The whole launch, or every problem.

    ``context``: ``shape`` (module_utils/cluster_shape.py's answer with the nodes' addresses), ``play_hosts_all``
    and ``play_hosts`` (the play's hosts, and those still in it), ``run_id`` (the master's), ``now`` (seconds),
    ``example_dir`` (hf_examples_example_dir or None), ``mpich_launcher`` (MPICH's launcher on the master's OS),
    ``role_files`` (name -> sha256 of the role's smoke_allreduce.py and rank_exec.sh)."""
    settings = dict(settings)
    for key in ("bf16", "prepend_rank", "rerun", "resume", "preload_tcmalloc", "fetch_results"):
        settings[key] = _flag(settings[key])
    shape = context["shape"]
    problems: List[str] = [f"{shape['master'] or '?'}: {problem}" for problem in shape["problems"]]
    master_name = shape["master"]
    every = [master_name, *list(shape["workers"])]
    missing = [name for name in every if name not in context["play_hosts_all"]]
    if missing:
        problems.append(
            f"{master_name}: amx.cluster.train must run on the master and every worker in one play. Missing from the"
            f" play: {', '.join(missing)}. Run it with `hosts: cluster`, and leave --limit out"
        )
    dropped = [name for name in every if name in context["play_hosts_all"] and name not in context["play_hosts"]]
    if dropped:
        them = _plural(dropped, "it", "them")
        problems.append(
            f"{', '.join(dropped)} dropped out of the play (unreachable, or failed in an earlier task: see above);"
            f" nothing was started. Bring {them} back (a stopped instance, sshd, the network) or take {them} out of"
            " the inventory, then run the play again"
        )
    names = [node["name"] for node in shape["nodes"] if node["name"] in nodes]
    facts = {name: nodes[name] for name in names}
    if master_name not in facts:
        return {"problems": problems or [f"{master_name}: the master's facts were not read"]}
    master_node = facts[master_name]

    problems += [f"{master_name}: {problem}" for problem in _settings_problems(settings, context.get("example_dir"))]
    try:
        counts = _counts(settings["scaling_nodes"])
    except ValueError:
        counts = []
        problems.append(
            f"{master_name}: train_scaling_nodes {settings['scaling_nodes']!r} is not a list of node counts"
        )
    if counts:
        found = scaling_problems(
            counts,
            names,
            scaling_nodes=settings["scaling_nodes"],
            steps=settings["scaling_steps"],
            script=settings["script"],
            script_args=settings["script_args"],
        )
        if found:
            example = json.dumps(list(dict.fromkeys([1, len(names)])))
            problems.append(
                f"{master_name}: the scaling sweep cannot run as set. {'. '.join(found)}. Change train_scaling_nodes"
                f" (for example {example}) and train_scaling_steps, or set train_scaling_nodes: [] for no sweep"
            )
    inputs = launch_problems({f"train_{key}": settings[key] for key in LAUNCH_INPUTS})
    if inputs:
        problems.append(
            f"{master_name}: the run cannot be launched as set: {'; '.join(inputs)}. Fix"
            f" {_plural(inputs, 'that variable', 'those variables')}; nothing was written"
        )
    run_id = context["run_id"]
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        problems.append(
            f"{master_name}: train_run_id '{run_id}' cannot name a folder: use letters, digits, '.', '_' and '-'"
        )
    for name in names:
        problems += _node_problems(name, facts[name], settings)

    hosts: Dict[str, Dict[str, Any]] = {}
    for name in names:
        user = facts[name].get("user")
        if user:
            home = str(user[4])
            root = settings["run_root"] or f"{home}/amx-cluster-runs"
            hosts[name] = {"home": home, "uid": int(user[1]), "gid": int(user[2]), "run_root": root}
    own = folder_problems(
        {"train_run_root": settings["run_root"]}, home=(hosts.get(master_name) or {}).get("home")
    ) + folder_problems(
        {"train_results_dir": settings["results_dir"], "train_controller_cache": settings["controller_cache"]},
        home=context.get("controller_home"),
        absolute=False,
    )
    if own:
        problems.append(
            f"{master_name}: {'; '.join(own)}. The role creates its folders with {settings['user']} as owner and mode"
            " 0700, which must never happen to a folder of the system or of the user: set"
            f" {_plural(own, 'it', 'them')} to a folder of their own, such as"
            f" {(hosts.get(master_name) or {}).get('home', '~')}/amx-cluster-runs (or leave train_run_root empty for"
            " that)"
        )
    roots = {hosts[name]["run_root"] for name in hosts}
    if len(roots) > 1:
        listing = ", ".join(f"{name}: {host['run_root']}" for name, host in hosts.items())
        problems.append(
            f"The run folder differs between nodes ({listing}):"
            f" the launch names one path for every rank. Give {settings['user']} the same home on every node, or set"
            " train_run_root"
        )
    stack = stack_problems(
        {name: facts[name].get("torch_stack_manifest_hash") for name in names},
        {name: facts[name].get("torch_stack_packages") or {} for name in names},
        {name: facts[name].get("torch_stack_venv_python") for name in names},
        python=settings["python"] or None,
        require_same=settings["require_same_stack"],
    )
    if stack:
        problems.append(f"The nodes differ. {'. '.join(stack)}")
    if settings["preload_tcmalloc"]:
        paths = list(dict.fromkeys(str(facts[name].get("tcmalloc_library_path")) for name in names))
        if len(paths) > 1:
            problems.append(
                f"tcmalloc is at different paths on the nodes ({', '.join(paths)}): mpirun preloads one path into"
                " every rank (-genv LD_PRELOAD). Install the same OS on every node, or set"
                " train_preload_tcmalloc: false"
            )

    run_root = (hosts.get(master_name) or {}).get("run_root") or ""
    run_dir = f"{run_root}/{run_id}"
    for name in hosts:
        found = _folders(name, facts[name], run_root, hosts[name]["home"], settings)
        hosts[name]["absent_folders"] = found["absent"]
        problems += found["problems"]

    # The run's state (new, running, finished, failed) from the master's files.
    state = run_state(_text(master.get("result")), _text(master.get("supervisor_cmdline")))
    pending = (
        state == "new"
        or (state == "failed" and settings["resume"])
        or (state in ("finished", "failed") and settings["rerun"])
    )
    try:
        checkpoints = int(settings["checkpoint_steps"] or 0) > 0
    except (TypeError, ValueError):
        checkpoints = False
    resume_flag = "--resume_from_checkpoint" if settings["script"] != "custom" and checkpoints else None
    resumes = state == "failed" and settings["resume"] and not settings["rerun"] and resume_flag is not None

    # The backend, each node's layout (the job takes the smallest node's) and the flags of the stack.
    versions = master_node.get("torch_stack_versions") or {}
    transformers = versions.get("transformers")
    world = settings["num_processes"] or len(names) * int(settings["processes_per_node"])
    backend = None
    backend_known = False
    if not transformers:
        problems.append(f"{master_name}: torch_stack_versions has no transformers version: run amx.cluster.torch_stack")
    else:
        try:
            backend = flag_dialect(
                transformers,
                world_size=world,
                backend=settings["backend"],
                oneccl_installed=bool(master_node.get("torch_stack_has_oneccl")),
                ipex_installed=bool(master_node.get("torch_stack_has_ipex")),
            )["backend"]
            backend_known = True
        except (TypeError, ValueError) as error:
            problems.append(
                f"{master_name}: transformers {transformers} (oneCCL binding:"
                f" {bool(master_node.get('torch_stack_has_oneccl'))})"
                f" cannot run backend {settings['backend']}: {error}. Set train_backend (auto, gloo, ccl) or change the"
                " torch_stack profile"
            )
    layouts = _layouts(settings, facts, len(names), backend)
    problems += [layout for layout in layouts.values() if isinstance(layout, str)]
    good = {name: layout for name, layout in layouts.items() if not isinstance(layout, str)}
    layout = dialect = None
    if good and len(good) == len(names) and backend_known:
        smallest = min(names, key=lambda name: int(facts[name]["amx_check_topology"]["physical_cores"]))
        layout = good[smallest]
        dialect = flag_dialect(
            transformers,
            world_size=layout["num_processes"],
            backend=settings["backend"],
            oneccl_installed=bool(master_node.get("torch_stack_has_oneccl")),
            ipex_installed=bool(master_node.get("torch_stack_has_ipex")),
        )
        shapes = {name: good[name].get("rank_cpus") for name in names}
        if layout.get("pin") and len({json.dumps(value) for value in shapes.values()}) > 1:
            problems.append(
                f"{master_name}: the ranks are pinned (train_layout_mode {settings['layout_mode']}, train_pin_ranks"
                f" {settings['pin_ranks'] if settings['pin_ranks'] is not None else 'null'}) but the nodes' layouts"
                f" differ ({json.dumps(shapes)}, one cpulist per local rank): every node pins its ranks to the same"
                " cpulists, those of the smallest node, which would put ranks on the wrong sockets of the others. Use"
                " nodes of one shape, or set train_pin_ranks: false"
            )

    # MASTER_ADDR: train_master_addr, else the master's ssh_mesh_address, else its default route's.
    master_addr = settings["master_addr"] or shape.get("master_address") or ""
    if not master_addr:
        why = (shape["nodes"][0].get("address_problem") if shape["nodes"] else "") or ""
        problems.append(
            f"{master_name}: no private address for MASTER_ADDR: {why}. Set ssh_mesh_address (or train_master_addr)"
            " to the address the workers reach the master on"
        )

    # What the master read: its hostfile, its SSH logins to the workers.
    hostfile = settings["hostfile"]
    home = (hosts.get(master_name) or {}).get("home", "~")
    hostfile_path = re.sub(r"^~(?=/)", home, hostfile)
    if master.get("hostfile") is not None:
        found = hostfile_read_problems(master["hostfile"], shape["hostfile"], settings["user"])
        if found:
            problems.append(
                f"{master_name}: the MPI hostfile {hostfile_path}: {'; '.join(found)}, but the cluster is"
                f" {', '.join(shape['hostfile'])}. Write it with amx.cluster.mpi_hostfile (playbooks/provision.yml),"
                " or point train_hostfile at the right file"
            )
    found = ssh_problems(master.get("ssh") or [])
    if found:
        problems.append(
            f"{master_name} cannot reach over SSH as {settings['user']} without a password: {'; '.join(found)};"
            " mpirun starts the ranks through these logins. Run playbooks/provision.yml (amx.cluster.ssh_mesh), and"
            " check that the workers are up and reachable from the master"
        )

    # The launcher.
    venv_python = master_node.get("torch_stack_venv_python") or ""
    python = settings["python"] or venv_python
    mpi = None
    try:
        mpi = mpi_launcher(
            settings["mpi"],
            oneccl_installed=bool(master_node.get("torch_stack_has_oneccl")),
            venv=posixpath.dirname(posixpath.dirname(venv_python)),
            packages=master_node.get("torch_stack_packages"),
            launcher=settings["launcher"] or None,
            mpich_launcher=context["mpich_launcher"],
        )
    except (TypeError, ValueError) as error:
        problems.append(f"{master_name}: train_mpi {settings['mpi']} cannot launch the job: {error}")

    answer: Dict[str, Any] = {
        "problems": problems,
        "master": master_name,
        "workers": list(shape["workers"]),
        "nodes": [{"name": node["name"], "alias": node["alias"]} for node in shape["nodes"]],
        "hosts": hosts,
        "run_id": run_id,
        "run_root": run_root,
        "run_dir": run_dir,
        "state": state,
        "pending": pending,
        "resumes": resumes,
        "resume_flag": resume_flag,
        "master_addr": master_addr,
    }
    if problems or layout is None or dialect is None or mpi is None:
        return answer

    # The launch: the script's arguments, the launcher's, the environment, rendered for the job and the smoke test.
    paths = _paths(settings, run_root, run_dir, context.get("example_dir"))
    try:
        job_args = _args(settings, paths, run_dir, checkpoints=True)
    except (TypeError, ValueError) as error:
        answer["problems"] = [f"{master_name}: the training script's arguments cannot be built: {error}"]
        return answer
    env = {"AMX_CLUSTER_RUN_ID": run_id, **BASE_ENV}
    base_env = {**env, **(OFFLINE_ENV if settings["script"] != "run_qa" else {})}
    hydra = (
        (["-prepend-rank"] if settings["prepend_rank"] else [])
        + (["-localhost", master_addr] if shape["workers"] else [])
        + list(settings["launcher_options"])
    )
    setvars = master.get("setvars") or None
    ld_preload = master_node.get("tcmalloc_library_path") if settings["preload_tcmalloc"] else None
    launch_args = {
        "hostfile": hostfile,
        "python": f"{run_dir}/rank_exec.sh",
        "launcher": mpi["launcher"],
        "launcher_options": hydra,
        "path_env": mpi["path_env"],
        "master_addr": master_addr,
        "master_port": settings["master_port"],
        "ld_preload": ld_preload,
        "kmp_hw_subset": settings["kmp_hw_subset"] or None,
        "bf16": bool(settings["bf16"]),
        "setvars": setvars,
        "extra_env": {**base_env, **mpi["env"], **settings["extra_env"]},
    }
    script = [paths["script_file"], *job_args]
    launch = launch_command(layout, dialect, python, script, resume_flag=resume_flag, **launch_args)
    smoke_script = [
        f"{run_dir}/smoke_allreduce.py",
        "--expect_world",
        str(layout["num_processes"]),
        "--timeout",
        str(max(int(settings["smoke_timeout"]) - 15, 10)),
    ]
    smoke_launch = launch_command(layout, dialect, python, smoke_script, **launch_args)

    # A run that ended is never rewritten with other settings (its launch.sh stays what ran).
    earlier = _text(master.get("earlier_launch"))
    if (
        state in ("finished", "failed")
        and not settings["rerun"]
        and earlier is not None
        and earlier != launch["script"]
    ):
        answer["problems"] = [
            f"{master_name}: run {run_id} {state} before with other settings (its launch.sh differs from what these"
            " settings give); nothing was written, its folder and record stay as they were. "
            + (
                "A failed run resumes from its checkpoints only with the settings and the node count it ran with"
                " (another count would change the global batch). "
                if state == "failed"
                else ""
            )
            + f"Give a new train_run_id for these settings, leave them as they were, or set train_rerun: true to run"
            f" {run_id} again with them from the start"
        ]
        return answer

    # A failed job goes on from the newest checkpoint every node holds.
    resume = None
    if resumes:
        output_dir = f"{run_dir}/output"
        resume = resume_point({name: facts[name].get("checkpoints") or [] for name in names}, output_dir)
        if resume["problems"]:
            answer["problems"] = [
                f"{master_name}: run {run_id} failed and cannot resume on these nodes: {'; '.join(resume['problems'])}."
                " Copy that checkpoint folder to the other nodes (the same path), or set train_rerun: true to train"
                f" run {run_id} again from step 0 (the failed attempt's files are kept under state/job/attempts/)"
            ]
            return answer

    # The smoke test: skipped only while the cluster's fingerprint is the last passing one's, and it is young.
    smoke: Dict[str, Any] = {"run": True, "reason": "the job does not run", "fingerprint": None}
    sums = {name: facts[name].get("checksums") for name in names}
    fingerprint: Optional[str] = None
    inputs: Dict[str, Any] = {}
    if pending and settings["smoke_test"] and all(isinstance(value, str) for value in sums.values()):
        inputs = {
            "nodes": {
                name: {
                    "stack": facts[name].get("torch_stack_manifest_hash"),
                    "python": python,
                    "kernel": facts[name].get("kernel") or "",
                    "tcmalloc": facts[name].get("tcmalloc_library_path"),
                    "layout": good[name],
                    "checksums": sums[name],
                }
                for name in names
            },
            "launch": {
                "script": smoke_launch["script"],
                "role_files": dict(context.get("role_files") or {}),
                "launcher_info": master.get("launcher_info") or "",
            },
        }
        try:
            fingerprint = smoke_fingerprint(inputs["nodes"], inputs["launch"], run_dir=run_dir, run_id=run_id)
        except (TypeError, ValueError) as error:
            # What cannot be fingerprinted takes the full path.
            smoke = {"run": True, "reason": f"the cluster cannot be fingerprinted ({error})", "fingerprint": None}
    if fingerprint is not None:
        due = smoke_test_due(
            _text(master.get("smoke_record")) or "",
            fingerprint,
            float(context["now"]),
            max_age=float(settings["smoke_test_max_age"]),
            force=bool(settings["smoke_test_force"]),
            guarded=settings["script"] == "qa_finetune",
        )
        smoke = {
            **due,
            "fingerprint": fingerprint,
            "record": {"version": RECORD_VERSION, "fingerprint": fingerprint},
            "inputs": inputs,
        }

    single = None
    if settings["single_node_check"]:
        steps = int(settings["single_node_steps"])
        single_layout = rank_layout(
            int(master_node["amx_check_topology"]["physical_cores"]),
            nodes=1,
            processes_per_node=1,
            ccl_workers=0,
            os_reserved_cores=good[master_name]["os_reserved_cores"],
            mode=settings["layout_mode"],
            omp_num_threads=settings["omp_threads"],
            topology=master_node["amx_check_topology"],
            pin=settings["pin_ranks"],
            oversubscribe=settings["layout_oversubscribe"],
        )
        single_dialect = flag_dialect(
            transformers,
            world_size=1,
            oneccl_installed=bool(master_node.get("torch_stack_has_oneccl")),
            ipex_installed=bool(master_node.get("torch_stack_has_ipex")),
            use_ipex=bool(settings["single_node_use_ipex"]),
        )
        post = settings["single_node_variant"] == "post"
        single_args = _args(
            settings,
            paths,
            f"{run_dir}/single",
            max_steps=steps if steps > 0 else None,
            max_eval=64 if steps > 0 else None,
        )
        single = {
            "variant": settings["single_node_variant"],
            "layout": single_layout,
            "dialect": single_dialect,
            "launch": launch_command(
                single_layout,
                single_dialect,
                python,
                [paths["script_file"], *single_args],
                python=f"{run_dir}/rank_exec.sh",
                launcher=None,
                ld_preload=ld_preload,
                kmp_hw_subset=settings["kmp_hw_subset"] or None,
                bf16=bool(settings["bf16"]),
                setvars=setvars,
                extra_env={**base_env, **settings["extra_env"]},
                leave_unset=SINGLE_POST_UNSET if post else [],
                source_setvars=not post,
            ),
        }

    scaling = []
    for count in sorted(counts):
        folder = f"{run_dir}/scaling/{count}nodes"
        sweep_layout = rank_layout(
            layout["physical_cores"],
            nodes=count,
            processes_per_node=layout["processes_per_node"],
            ccl_workers=layout["ccl_worker_count"],
            os_reserved_cores=layout["os_reserved_cores"],
            mode=layout["mode"],
            omp_num_threads=settings["omp_threads"],
            ccl_worker_affinity=settings["ccl_worker_affinity"],
            topology=layout["topology"],
            pin=layout["pin"],
            oversubscribe=settings["layout_oversubscribe"],
        )
        sweep_dialect = flag_dialect(
            transformers,
            world_size=sweep_layout["num_processes"],
            backend=settings["backend"],
            oneccl_installed=bool(master_node.get("torch_stack_has_oneccl")),
            ipex_installed=bool(master_node.get("torch_stack_has_ipex")),
        )
        sweep_args = _args(settings, paths, folder, max_steps=settings["scaling_steps"], measure_only=True)
        scaling.append(
            {
                "count": count,
                "name": f"scaling-{count}nodes",
                "dir": folder,
                "script": launch_command(
                    sweep_layout, sweep_dialect, python, [paths["script_file"], *sweep_args], **launch_args
                )["script"],
            }
        )

    # The one-step launch keeps a plan only for the everyday kind of launch (plan.yml, after a job that passed).
    keep = {
        "no inputs hash": bool(settings["launch_inputs"]),
        "train_fast_launch is false": settings["fast_launch"],
        "not qa_finetune": settings["script"] == "qa_finetune",
        "no smoke test": settings["smoke_test"] and smoke["fingerprint"] is not None,
        "a resumed run": not resumes,
        "a single-node check": not single,
        "a scaling sweep": not scaling,
        "secret variables": not settings["secret_env"],
        "no results fetched": settings["fetch_results"],
        "the model fetched": not settings["fetch_model"],
    }
    pinned = f"ranks pinned to {layout['rank_cpus']} (per local rank)" if layout["pin"] else "ranks not pinned"
    answer.update(
        paths,
        keep_plan=all(keep.values()),
        keep_plan_reason=", ".join(reason for reason, ok in keep.items() if not ok),
        python=python,
        hostfile_path=hostfile_path,
        layout=layout,
        layouts=good,
        dialect=dialect,
        mpi=mpi,
        job_args=job_args,
        launch_args=launch_args,
        launch=launch,
        smoke_launch=smoke_launch,
        smoke=smoke,
        resume=resume,
        single=single,
        scaling=scaling,
        record={
            "master": master_name,
            "nodes": [
                {
                    "name": node["name"],
                    "alias": node["alias"],
                    "physical_cores": facts[node["name"]]["amx_check_topology"]["physical_cores"],
                    "topology": facts[node["name"]]["amx_check_topology"],
                    "amx_usable": facts[node["name"]]["amx_check_amx_usable"],
                    "amx_reason": facts[node["name"]].get("amx_check_amx_reason") or "",
                    "versions": facts[node["name"]]["torch_stack_versions"],
                    "stack_manifest_sha256": facts[node["name"]]["torch_stack_manifest_hash"],
                    "tcmalloc": facts[node["name"]].get("tcmalloc_library_path"),
                    "layout": good[node["name"]],
                }
                for node in shape["nodes"]
            ],
            "layout": layout,
            "dialect": dialect,
            "hostfile": hostfile_path,
            "master_addr": master_addr,
            "script": settings["script"],
            "script_file": paths["script_file"],
            "script_args": job_args,
            "data": "hub"
            if settings["script"] == "run_qa"
            else ("custom" if settings["script"] == "custom" else settings["data"]),
        },
        summary=(
            f"run {run_id}: {layout['num_processes']} ranks on {layout['nodes']} node(s),"
            f" {layout['processes_per_node']} per node, OMP_NUM_THREADS={layout['omp_num_threads']}, oneCCL workers"
            f" {layout['ccl_worker_count']}, {layout['os_reserved_cores']} core(s) for the OS"
            f" ({layout['physical_cores']} physical cores, {layout['mode']} mode, oversubscription"
            f" {layout['oversubscription']}); transformers {dialect['transformers_version']} flags"
            f" {' '.join(dialect['flags'])}{' (' + '; '.join(dialect['notes']) + ')' if dialect['notes'] else ''};"
            f" {pinned};"
            f" MASTER_ADDR {master_addr}; a {state} run"
        ),
    )
    return answer


def passing_ranks(job: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The JSON lines of the smoke test's ranks whose all_reduce was right, from amx.cluster.train_job's result."""
    found = []
    for lines in ((job or {}).get("rank_lines") or {}).values():
        for line in lines if isinstance(lines, list) else [lines]:
            if isinstance(line, str) and PASSING_LINE.match(line):
                try:
                    found.append(json.loads(line))
                except ValueError:
                    continue
    return found


def record(
    planned: Mapping[str, Any],
    job: Optional[Mapping[str, Any]],
    smoke: Optional[Mapping[str, Any]],
    single_node: Optional[Mapping[str, Any]],
    metrics: Optional[str],
) -> Dict[str, Any]:
    """The run's record (run.json): the plan's static part with what the job, the smoke test (train_job's results,
    or None when they did not run) and the single-node check gave, and the run's metrics.json text."""
    figures: Optional[Dict[str, Any]] = None
    if smoke and smoke.get("rc") is not None:
        # The bf16 probe (local rank 0 of each node) says which kernels did the matrix work.
        probes = [line for line in passing_ranks(smoke) if line.get("local_rank") == 0]
        figures = {"rc": smoke["rc"], "seconds": smoke.get("duration"), "onednn": probes}
    elif not planned["smoke"].get("run", True):
        # A skipped smoke test's record still holds what the last one measured on this cluster, and in which run.
        kept = planned["smoke"].get("figures") or {}
        figures = {
            "skipped": planned["smoke"]["reason"],
            "onednn": kept.get("onednn"),
            "onednn_run": kept.get("run_id"),
        }
    single = None
    if single_node and single_node.get("rc") is not None:
        launch = planned["single"]["launch"]
        dialect = planned["single"]["dialect"]
        single = {
            "rc": single_node["rc"],
            "seconds": single_node.get("duration"),
            "variant": planned["single"]["variant"],
            "omp_num_threads": launch["env"].get("OMP_NUM_THREADS"),
            "flags": dialect["flags"],
            "notes": dialect["notes"],
        }
    try:
        found = json.loads(metrics) if metrics else {}
    except ValueError:
        found = {}
    return run_record(
        planned["record"],
        planned["run_id"],
        planned["run_dir"],
        planned["launch"],
        figures,
        single,
        dict(job or {}),
        found if isinstance(found, Mapping) else {},
    )


def fingerprint_again(planned: Mapping[str, Any], launcher_info: str) -> Optional[str]:
    """The plan's smoke test fingerprint with the launcher's ``-info`` as read after prepare.yml installed it (the
    plan's own read came before the install): the fingerprint the smoke test's record keeps."""
    inputs = (planned.get("smoke") or {}).get("inputs")
    if not inputs:
        return None
    launch = {**inputs["launch"], "launcher_info": launcher_info or ""}
    return smoke_fingerprint(inputs["nodes"], launch, run_dir=planned["run_dir"], run_id=planned["run_id"])
