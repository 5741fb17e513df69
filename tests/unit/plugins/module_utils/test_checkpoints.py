# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a failed job resumes (module_utils/checkpoints.py)."""

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.checkpoints import (
    CheckpointError,
    complete_steps,
    resume_point,
)

OUT = "/home/amx/amx-cluster-runs/r1/output"


def state(step, out=OUT):
    return f"{out}/checkpoint-{step}/trainer_state.json"


def test_complete_steps_takes_only_checkpoint_folders_of_the_output_dir():
    found = [
        state(40),
        {"path": state(20)},
        OUT + "/trainer_state.json",  # the final model's own
        OUT + "/checkpoint-60/optimizer.pt",  # a checkpoint cut short: no trainer_state.json
        state(80, out="/elsewhere/output"),
        OUT + "/checkpoint-x/trainer_state.json",
        OUT + "/checkpoint-100/nested/trainer_state.json",
    ]
    assert complete_steps(OUT + "/", found) == [20, 40]


def test_the_newest_checkpoint_on_every_node_wins():
    held = {
        "master": [state(20), state(40), state(60)],
        "worker-a": [state(40), state(20)],
        "worker-b": [state(60), state(40)],
    }
    point = resume_point(held, OUT)
    assert (point["step"], point["checkpoint"]) == (40, OUT + "/checkpoint-40")
    assert point["steps"] == {"master": [20, 40, 60], "worker-a": [20, 40], "worker-b": [40, 60]}
    assert point["problems"] == []


def test_no_checkpoint_anywhere_starts_from_step_zero():
    point = resume_point({"master": [], "worker-a": None}, OUT)
    assert (point["step"], point["checkpoint"], point["problems"]) == (None, None, [])


def test_a_node_without_the_checkpoints_of_the_others_is_named():
    point = resume_point({"master": [state(20), state(40)], "new-node": [], "worker-b": [state(40)]}, OUT)
    assert point["step"] is None
    assert point["problems"] == [
        "no checkpoint of the job is on every node: checkpoint-40 is on master, worker-b but not on new-node "
        "(a node new to the cluster, or one whose disk was replaced)"
    ]


@pytest.mark.parametrize("held", [{}, [], "master"])
def test_bad_input(held):
    with pytest.raises(CheckpointError):
        resume_point(held, OUT)


def test_the_masters_files_a_node_lacks_are_copied_but_no_ranks_random_state():
    # transformers 5.x writes the weights on the master only; each node keeps its ranks' random states.
    master = [
        f"{OUT}/checkpoint-20/{name}"
        for name in (
            "model.safetensors",
            "config.json",
            "optimizer.pt",
            "rng_state_0.pth",
            "rng_state_1.pth",
            "trainer_state.json",
        )
    ]
    worker = [
        f"{OUT}/checkpoint-20/{name}"
        for name in ("optimizer.pt", "rng_state_2.pth", "rng_state_3.pth", "trainer_state.json")
    ]
    full = [path.replace("rng_state_0", "rng_state_4").replace("rng_state_1", "rng_state_5") for path in master]
    point = resume_point({"master": master, "worker-a": worker, "worker-b": full}, OUT)
    assert point["step"] == 20
    assert point["missing"] == {"worker-a": ["config.json", "model.safetensors"]}
