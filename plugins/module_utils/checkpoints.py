# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a failed training job resumes: the newest checkpoint that every node of the cluster holds.

The job saves its checkpoints on every node (``--save_on_each_node``: each rank reads its checkpoint from
its own disk when it resumes) as ``OUTPUT_DIR/checkpoint-STEP/``. transformers' Trainer writes a
checkpoint's ``trainer_state.json`` last, after the model, the optimizer and the random states: a folder
without it is a checkpoint whose writing was cut short, and is never resumed from. Some versions (5.x) write
the model's weights on the master only, and every other node's folder holds its optimizer, scheduler and
random states: before a resume, the master's files a node lacks (the ranks share the weights; the random
states are each rank's own) are copied to it.

:func:`resume_point` takes what each node holds and answers with the step to resume from, or with the
reason why the job cannot resume on these nodes. Standard library only.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, List, Mapping, Sequence

STATE_FILE = "trainer_state.json"
# Each rank's own random state (rng_state_<rank>.pth): it stays with the node of that rank.
RANK_STATE = "rng_state"
_CHECKPOINT = re.compile(r"^checkpoint-([0-9]+)$")


class CheckpointError(ValueError):
    """The inputs are not what the role gives; the message says which."""


def _path(item: Any) -> str:
    return posixpath.normpath(str(item.get("path") if isinstance(item, Mapping) else item))


def files_in(folder: str, files: Sequence[Any]) -> set:
    """The names of the files directly in ``folder``, from a list of paths."""
    return {posixpath.basename(path) for path in map(_path, files) if posixpath.dirname(path) == folder}


def complete_steps(output_dir: str, state_files: Sequence[Any]) -> List[int]:
    """The steps of the complete checkpoints in ``output_dir``, oldest first, from the paths of the
    ``trainer_state.json`` files found there (anything else, such as the final model's own
    ``trainer_state.json`` or a file of another folder, is left out)."""
    base = posixpath.normpath(str(output_dir))
    steps = set()
    for item in state_files:
        path = _path(item)
        folder, name = posixpath.split(path)
        parent, checkpoint = posixpath.split(folder)
        match = _CHECKPOINT.match(checkpoint)
        if name == STATE_FILE and parent == base and match:
            steps.add(int(match.group(1)))
    return sorted(steps)


def resume_point(held: Mapping[str, Sequence[Any]], output_dir: str) -> Dict[str, Any]:
    """The checkpoint a new attempt of the job starts from.

    ``held`` maps each node of the job (its inventory name, in hostfile order: the master first) to the files
    found under ``output_dir`` on it (paths, or the ``files`` of ansible.builtin.find). The answer: ``step`` and
    ``checkpoint`` (the folder) of the newest checkpoint complete on every node, or None for both when no node
    holds one (the job starts again from step 0); ``steps`` by node; ``missing``, by node, the names of the files of
    that checkpoint that the master holds and the node lacks (never a rank's random state); ``problems``, one
    sentence each, when some nodes hold checkpoints and others hold none in common with them: resuming there
    would start those ranks from other weights than the rest.
    """
    if not isinstance(held, Mapping) or not held:
        raise CheckpointError("held must map each node of the job to the trainer_state.json files found on it")
    steps = {str(node): complete_steps(output_dir, files or []) for node, files in held.items()}
    common = set.intersection(*(set(found) for found in steps.values()))
    answer: Dict[str, Any] = {"step": None, "checkpoint": None, "steps": steps, "missing": {}, "problems": []}
    if common:
        step = max(common)
        folder = posixpath.join(posixpath.normpath(output_dir), f"checkpoint-{step}")
        names = {node: files_in(folder, files or []) for node, files in held.items()}
        master = next(iter(held))
        for node in list(held)[1:]:
            lacking = sorted(name for name in names[master] - names[node] if not name.startswith(RANK_STATE))
            if lacking:
                answer["missing"][str(node)] = lacking
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
        )
    return answer
