# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a failed training job resumes: the newest checkpoint that every node of the cluster holds complete.

The job saves its checkpoints on every node (``--save_on_each_node``: each rank reads its checkpoint from
its own disk when it resumes) as ``OUTPUT_DIR/checkpoint-STEP/``. A folder is complete only when every file of a
complete checkpoint is in it: transformers' Trainer writes ``trainer_state.json`` last, but its rotation
(``save_total_limit``) removes an old checkpoint's files one by one, so a job stopped during a rotation can leave
``trainer_state.json`` without the optimizer or the weights (or the reverse), and the Trainer resumes from a folder
without ``optimizer.pt`` with a new optimizer and no word about it. On every node: ``trainer_state.json``,
``optimizer.pt``, ``scheduler.pt`` and a random state; on the master also the model's weights (a single file, or an
index and every shard it names). Some versions (5.x) write the weights on the master only, and every other node's
folder holds its optimizer, scheduler and random states: before a resume, the master's files a node lacks (the
ranks share the weights; the random states are each rank's own) are copied to it.

:func:`resume_point` takes what each node holds and answers with the step to resume from, or with the
reason why the job cannot resume on these nodes. Standard library only.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, List, Mapping, Sequence

STATE_FILE = "trainer_state.json"
# What every node's folder of a complete checkpoint holds (its own, written by the node's first process).
NODE_FILES = (STATE_FILE, "optimizer.pt", "scheduler.pt")
# Each rank's own random state (rng_state_<rank>.pth, rng_state.pth for one process): it stays with the node of
# that rank.
RANK_STATE = "rng_state"
# The model's weights in one file (a PEFT adapter's among them); sharded weights come as an index and its shards.
WEIGHTS = ("model.safetensors", "pytorch_model.bin", "adapter_model.safetensors", "adapter_model.bin")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
_CHECKPOINT = re.compile(r"^checkpoint-([0-9]+)$")
_SHARD = re.compile(r"^(model|pytorch_model)-([0-9]+)-of-([0-9]+)\.(safetensors|bin)$")


class CheckpointError(ValueError):
    """The inputs are not what the role gives; the message says which."""


def _path(item: Any) -> str:
    return posixpath.normpath(str(item.get("path") if isinstance(item, Mapping) else item))


def _weights_lack(names: set) -> List[str]:
    """What the weights of a checkpoint folder lack: nothing for a whole single file, the missing shards of an
    index (named from the shards that are there), or the weights themselves."""
    if any(name in names for name in WEIGHTS):
        return []
    shards = [match.groups() for match in map(_SHARD.match, sorted(names)) if match]
    for index in WEIGHT_INDEXES:
        if index not in names:
            continue
        stem, suffix = index[: -len(".safetensors.index.json")], "safetensors"
        if index.endswith(".bin.index.json"):
            stem, suffix = index[: -len(".bin.index.json")], "bin"
        totals = {total for name, _part, total, ext in shards if name == stem and ext == suffix}
        if len(totals) != 1:
            # No shard left, or shards of two different splits: the index's shards cannot be told apart.
            return [f"{stem}-*-of-*.{suffix}"]
        total = totals.pop()
        width = len(total)
        wanted = [f"{stem}-{part:0{width}d}-of-{total}.{suffix}" for part in range(1, int(total) + 1)]
        return [name for name in wanted if name not in names]
    return ["the model's weights (" + " or ".join(WEIGHTS[:2]) + ")"]


def checkpoint_lacks(names: Any, weights: bool = True) -> List[str]:
    """What a checkpoint folder holding the files ``names`` lacks to be complete (empty: complete). ``weights``:
    whether this node must hold the model's weights itself (the master does; other nodes get them from it)."""
    names = set(names)
    lacking = [name for name in NODE_FILES if name not in names]
    if not any(name.startswith(RANK_STATE) and name.endswith(".pth") for name in names):
        lacking.append(RANK_STATE + "*.pth")
    if weights:
        lacking.extend(_weights_lack(names))
    return lacking


def checkpoint_folders(output_dir: str, files: Sequence[Any]) -> Dict[int, set]:
    """{step: the names of the files in ``output_dir/checkpoint-STEP/``} from a list of paths (anything else, such
    as the final model's own files or a file of another folder or deeper down, is left out)."""
    base = posixpath.normpath(str(output_dir))
    folders: Dict[int, set] = {}
    for item in files:
        folder, name = posixpath.split(_path(item))
        parent, checkpoint = posixpath.split(folder)
        match = _CHECKPOINT.match(checkpoint)
        if parent == base and match:
            folders.setdefault(int(match.group(1)), set()).add(name)
    return folders


def folders_lack(folders: Mapping[int, Any], weights: bool = True) -> Dict[int, List[str]]:
    """{step: what that checkpoint folder of one node lacks} (empty list: complete). A folder lacks what
    checkpoint_lacks says, and every file that another folder of the same node holds when that one has all of
    checkpoint_lacks's files: the checkpoints of one job are saved alike, so a folder without one of the others'
    files (a rank's random state, config.json) is one whose removal stopped halfway."""
    lacks = {step: checkpoint_lacks(names, weights) for step, names in folders.items()}
    whole = set().union(*(set(folders[step]) for step, lacking in lacks.items() if not lacking))
    return {step: lacking or sorted(whole - set(folders[step])) for step, lacking in lacks.items()}


def complete_steps(output_dir: str, files: Sequence[Any], weights: bool = True) -> List[int]:
    """The steps of the complete checkpoints in ``output_dir`` on one node, oldest first, from the paths of the
    files found there (folders_lack says what complete is)."""
    return sorted(
        step for step, lacking in folders_lack(checkpoint_folders(output_dir, files), weights).items() if not lacking
    )


def resume_point(held: Mapping[str, Sequence[Any]], output_dir: str) -> Dict[str, Any]:
    """The checkpoint a new attempt of the job starts from.

    ``held`` maps each node of the job (its inventory name, in hostfile order: the master first) to the files
    found under ``output_dir`` on it (paths, or the ``files`` of ansible.builtin.find). The answer: ``step`` and
    ``checkpoint`` (the folder) of the newest checkpoint complete on every node (folders_lack; the weights on the
    master only), or None for both when no node holds one (the job starts again from step 0); ``steps`` by node,
    the complete ones; ``incomplete``, a sentence for each checkpoint folder of a node that lacks files, never
    resumed from (a save cut short or a rotation stopped halfway); ``missing``, by node, the names of the files of
    that checkpoint that the master holds and the node lacks (never a rank's random state); ``problems``, one
    sentence each, when some nodes hold checkpoints and others hold none in common with them: resuming there
    would start those ranks from other weights than the rest.
    """
    if not isinstance(held, Mapping) or not held:
        raise CheckpointError("held must map each node of the job to the files found in its output folder")
    master = next(iter(held))
    folders = {str(node): checkpoint_folders(output_dir, files or []) for node, files in held.items()}
    steps: Dict[str, List[int]] = {}
    incomplete: List[str] = []
    for node, found in folders.items():
        steps[node] = []
        for step, lacking in sorted(folders_lack(found, weights=node == str(master)).items()):
            if lacking:
                incomplete.append(f"{node}: checkpoint-{step} is incomplete (missing: {', '.join(lacking)})")
            else:
                steps[node].append(step)
    common = set.intersection(*(set(found) for found in steps.values()))
    answer: Dict[str, Any] = {
        "step": None,
        "checkpoint": None,
        "steps": steps,
        "incomplete": incomplete,
        "missing": {},
        "problems": [],
    }
    if common:
        step = max(common)
        folder = posixpath.join(posixpath.normpath(output_dir), f"checkpoint-{step}")
        names = {str(node): folders[str(node)][step] for node in held}
        for node in list(names)[1:]:
            lacking = sorted(name for name in names[str(master)] - names[node] if not name.startswith(RANK_STATE))
            if lacking:
                answer["missing"][node] = lacking
        answer.update(step=step, checkpoint=folder)
        return answer
    found_anywhere = sorted({step for found in steps.values() for step in found})
    if found_anywhere:
        newest = found_anywhere[-1]
        answer["problems"].append(
            "no checkpoint of the job is on every node: checkpoint-{} is on {} but not on {} (a node new to the "
            "cluster, or one whose disk was replaced)".format(
                newest,
                ", ".join(node for node, found in steps.items() if newest in found),
                ", ".join(node for node, found in steps.items() if newest not in found),
            )
            + "".join(f"; {told}" for told in incomplete)
        )
    return answer
