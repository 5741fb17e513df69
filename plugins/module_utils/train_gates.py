# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The decisions of the train role's gates, as plain functions of the nodes' facts and the role's variables.

Each gate is ``function(inputs) -> list of problems``: empty when the gate passes, else one sentence per problem
(no final period), naming the variable or the node and the fix. The role's preflight asserts that the list is
empty and prints it after a line naming the host; anything that runs the same gates elsewhere (a launch from the
master that checks every worker at once) calls these functions with the same facts and gets the same messages.
Standard library only: this runs on the controller and on the nodes' Python (3.8+).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.amx.cluster.plugins.module_utils.inputs import hostfile_problems, kind
from ansible_collections.amx.cluster.plugins.module_utils.run_files import files_to_copy
from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import stack_differences

# The scripts the scaling sweep can run: it builds their arguments itself (max_steps, the output folder).
SWEEP_SCRIPTS = ("qa_finetune", "run_qa")
# The kinds of data qa_finetune reads.
QA_DATA = ("tiny", "files")


def _found_files(found: Any) -> List[Mapping[str, Any]]:
    """The files of a registered ansible.builtin.find result (none when the task was skipped), or a list of them."""
    if found is None:
        return []
    files = (found.get("files") or []) if isinstance(found, Mapping) else found
    if not isinstance(files, (list, tuple)):
        raise TypeError(f"expected the files of ansible.builtin.find (a list), got {kind(files)}")
    return list(files)


def stale_workers(master_found: Any, workers_found: Mapping[str, Any], folder: str) -> List[str]:
    """The workers whose copy of ``folder`` lacks a file of the master's or holds another version of it (by
    checksum), in the order of ``workers_found``. Each value is a registered ansible.builtin.find result with
    ``get_checksum: true`` (or its ``files``); the same ``folder`` is at the same path on every node."""
    if not isinstance(workers_found, Mapping):
        raise TypeError(f"expected a dict of worker to its files, got {kind(workers_found)}")
    source = _found_files(master_found)
    return [
        str(worker)
        for worker, found in workers_found.items()
        if files_to_copy(source, folder, _found_files(found), folder)
    ]


def stack_groups(manifest_hashes: Mapping[str, Any]) -> Dict[str, List[str]]:
    """Manifest hash -> the hosts whose training stack has it, by hash, each list in the order of the input."""
    if not isinstance(manifest_hashes, Mapping):
        raise TypeError(f"expected a dict of host to its manifest hash, got {kind(manifest_hashes)}")
    groups: Dict[str, List[str]] = {}
    for host, digest in manifest_hashes.items():
        groups.setdefault(str(digest), []).append(str(host))
    return dict(sorted(groups.items()))


def stack_problems(
    manifest_hashes: Mapping[str, Any],
    packages: Mapping[str, Mapping[str, str]],
    pythons: Mapping[str, Any],
    python: Optional[str] = None,
    require_same: bool = True,
) -> List[str]:
    """Whether every node runs the same training stack and the same training Python.

    ``manifest_hashes``, ``packages`` and ``pythons`` map each host to its torch_stack_manifest_hash,
    torch_stack_packages ({package: version}) and torch_stack_venv_python. ``python`` (train_python) names one
    interpreter for every node instead; ``require_same`` (train_require_same_stack) false accepts differing stacks.
    """
    if not isinstance(packages, Mapping) or not isinstance(pythons, Mapping):
        raise TypeError("expected dicts of host to its packages and to its training Python")
    problems = []
    groups = stack_groups(manifest_hashes)
    if require_same and len(groups) > 1:
        found = "; ".join(f"manifest {digest[:12]} on {', '.join(hosts)}" for digest, hosts in groups.items())
        differences = stack_differences({str(host): dict(found or {}) for host, found in packages.items()})
        what = (
            f"what differs: {'; '.join(differences)}"
            if differences
            else "the same packages, but another profile, Python or requirement list (see torch-stack-manifest.json"
            " in each node's virtualenv)"
        )
        problems.append(
            f"Their training stacks differ: {found}; {what}. Run amx.cluster.torch_stack with the same profile on every"
            " node (it does not remove packages installed by hand: remove them, or make the virtualenv again), or set"
            " train_require_same_stack: false"
        )
    paths = [python] if python else list(dict.fromkeys(str(path) for path in pythons.values()))
    if len(paths) > 1:
        problems.append(
            f"The training Python differs between nodes ({', '.join(paths)}): mpirun starts the same path everywhere;"
            " use the same torch_stack_venv on every node"
        )
    return problems


def script_problems(
    script: str,
    data: str,
    script_path: Optional[str] = None,
    script_args: Any = None,
    model: Optional[str] = None,
    train_file: Optional[str] = None,
    validation_file: Optional[str] = None,
    example_dir: Optional[str] = None,
) -> List[str]:
    """Whether train_script and train_data make a run: the variables each script needs (``script_path``,
    ``script_args``, ``model``, ``train_file``, ``validation_file`` are train_*; ``example_dir`` is
    hf_examples_example_dir, set by amx.cluster.hf_examples)."""
    problems = []
    if script == "custom" and (not script_path or script_args is None):
        problems.append("train_script: custom needs train_script_path and train_script_args")
    if script == "qa_finetune" and data not in QA_DATA:
        problems.append("train_data is tiny or files for qa_finetune")
    if script == "qa_finetune" and data == "files" and not (model and train_file and validation_file):
        problems.append(
            "train_data: files needs train_model, train_train_file and train_validation_file (on every node)"
        )
    if script == "run_qa" and not example_dir:
        problems.append("run_qa needs the transformers examples: run amx.cluster.hf_examples before this role")
    if script_args is not None and not isinstance(script_args, (list, tuple)):
        problems.append(f"train_script_args must be a list (one item per argument) or null, got a {kind(script_args)}")
    return problems


def scaling_problems(
    counts: Sequence[int],
    nodes: Sequence[str],
    scaling_nodes: Any = None,
    steps: Any = 1,
    script: str = "qa_finetune",
    script_args: Any = None,
) -> List[str]:
    """Whether the scaling sweep can run: ``counts`` are the node counts asked for (train_scaling_nodes as ints,
    ``scaling_nodes`` as it was given, for the message), ``nodes`` the play's nodes in hostfile order, ``steps``
    train_scaling_steps, ``script`` and ``script_args`` train_script and train_script_args."""
    shown = json.dumps(scaling_nodes if scaling_nodes is not None else list(counts))
    problems = []
    outside = list(dict.fromkeys(count for count in counts if not 1 <= count <= len(nodes)))
    if outside:
        problems.append(
            f"train_scaling_nodes {shown} has node counts outside 1..{len(nodes)}"
            f" ({', '.join(str(count) for count in outside)}); the play has {len(nodes)} node(s): {', '.join(nodes)}"
        )
    if len(set(counts)) != len(counts):
        problems.append(f"train_scaling_nodes {shown} lists a node count more than once")
    try:
        too_few = int(steps) < 1
    except (TypeError, ValueError):
        too_few = True
    if too_few:
        problems.append(f"train_scaling_steps must be at least 1 (got {steps})")
    if script not in SWEEP_SCRIPTS or script_args is not None:
        problems.append(
            "The sweep builds the script's arguments itself (max_steps, output folder): it runs train_script"
            f" {' or '.join(SWEEP_SCRIPTS)} (got {script}) without train_script_args"
        )
    return problems


def hostfile_read_problems(read: Mapping[str, Any], aliases: Sequence[str], user: str) -> List[str]:
    """What is wrong with the MPI hostfile as ansible.builtin.slurp read it (``read``, its registered result: the
    file's text in ``content``, base64, or the reason in ``msg``) against the cluster's aliases in hostfile order.
    The file is never quoted: it may be something else entirely, such as a key."""
    if not isinstance(read, Mapping):
        raise TypeError(f"expected the registered result of ansible.builtin.slurp, got {kind(read)}")
    if read.get("content") is None:
        return [f"cannot be read by {user} ({read.get('msg') or ''})"]
    try:
        text = base64.b64decode(str(read["content"]), validate=True).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return ["is not what ansible.builtin.slurp returns (its content is not base64)"]
    return list(hostfile_problems(text, aliases)["problems"])


def ssh_problems(results: Sequence[Mapping[str, Any]]) -> List[str]:
    """The workers the master could not reach, from the registered results of ``ssh <alias> true`` looped over the
    workers (each ``item`` a node with ``name`` and ``alias``): ``alias (name): the error``. Skipped results and
    those that returned 0 pass."""
    if not isinstance(results, (list, tuple)):
        raise TypeError(f"expected the registered results of the SSH check (a list), got {kind(results)}")
    problems = []
    for result in results:
        if not isinstance(result, Mapping) or "skipped" in result or result.get("rc") == 0:
            continue
        item = result.get("item") or {}
        error = result.get("stderr") if result.get("stderr") is not None else result.get("msg")
        problems.append(f"{item.get('alias')} ({item.get('name')}): {str(error or '').strip()}")
    return problems
