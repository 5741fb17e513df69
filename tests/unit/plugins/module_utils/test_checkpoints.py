# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a failed job resumes (module_utils/checkpoints.py)."""

import os

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.checkpoints import (
    CheckpointError,
    checkpoint_lacks,
    complete_steps,
    resume_point,
)

OUT = "/home/amx/amx-cluster-runs/r1/output"
# A checkpoint as transformers' Trainer saves it with --save_on_each_node: the master's folder (every version) and
# another node's under transformers 5.x (no weights: they come from the master).
MASTER_FILES = (
    "config.json",
    "model.safetensors",
    "training_args.bin",
    "optimizer.pt",
    "scheduler.pt",
    "rng_state_0.pth",
    "rng_state_1.pth",
    "trainer_state.json",
)
WORKER_FILES = ("optimizer.pt", "scheduler.pt", "rng_state_2.pth", "rng_state_3.pth", "trainer_state.json")


def checkpoint(step, names=MASTER_FILES, out=OUT):
    return [f"{out}/checkpoint-{step}/{name}" for name in names]


def worker(step, out=OUT):
    return checkpoint(step, WORKER_FILES, out)


def test_complete_steps_takes_only_complete_checkpoint_folders_of_the_output_dir():
    found = [
        *checkpoint(40),
        *[{"path": path} for path in checkpoint(20)],
        OUT + "/trainer_state.json",  # the final model's own
        OUT + "/model.safetensors",
        *checkpoint(60, ("model.safetensors", "optimizer.pt")),  # a save cut short: no trainer_state.json
        *checkpoint(80, out="/elsewhere/output"),
        *[path.replace("checkpoint-40", "checkpoint-x") for path in checkpoint(40)],
        *[path.replace("checkpoint-40", "checkpoint-100/nested") for path in checkpoint(40)],
    ]
    assert complete_steps(OUT + "/", found) == [20, 40]
    assert complete_steps(OUT, worker(20) + worker(40), weights=False) == [20, 40]
    # A folder without a file that the node's other checkpoints hold (a rank's random state) is not complete.
    assert complete_steps(OUT, worker(20) + worker(40)[1:], weights=False) == [20]
    assert complete_steps(OUT, worker(20)) == []


@pytest.mark.parametrize(
    ("names", "weights", "lacking"),
    [
        (MASTER_FILES, True, []),
        (WORKER_FILES, False, []),
        (
            WORKER_FILES,
            True,
            ["the model's weights (model.safetensors or pytorch_model.bin)"],
        ),
        # What a rotation (shutil.rmtree, one file after another) leaves when it stops halfway.
        (("trainer_state.json", "rng_state_0.pth", "config.json"), False, ["optimizer.pt", "scheduler.pt"]),
        (("model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state_0.pth"), True, ["trainer_state.json"]),
        (("trainer_state.json", "optimizer.pt", "scheduler.pt", "model.safetensors"), True, ["rng_state*.pth"]),
        (("trainer_state.json", "optimizer.pt", "scheduler.pt", "rng_state.pth", "pytorch_model.bin"), True, []),
        # Sharded weights: the index and every shard it is split into.
        (
            (
                *WORKER_FILES,
                "model.safetensors.index.json",
                *[f"model-0000{n}-of-00003.safetensors" for n in (1, 2, 3)],
            ),
            True,
            [],
        ),
        (
            (*WORKER_FILES, "model.safetensors.index.json", "model-00001-of-00003.safetensors"),
            True,
            ["model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"],
        ),
        ((*WORKER_FILES, "pytorch_model.bin.index.json"), True, ["pytorch_model-*-of-*.bin"]),
        ((*WORKER_FILES, "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"), True, None),
    ],
)
def test_what_a_checkpoint_folder_lacks(names, weights, lacking):
    if lacking is None:  # shards without their index: the weights cannot be loaded
        assert checkpoint_lacks(names, weights) == ["the model's weights (model.safetensors or pytorch_model.bin)"]
    else:
        assert checkpoint_lacks(names, weights) == lacking


def test_the_newest_checkpoint_on_every_node_wins():
    held = {
        "master": checkpoint(20) + checkpoint(40) + checkpoint(60),
        "worker-a": worker(40) + worker(20),
        "worker-b": worker(60) + worker(40),
    }
    point = resume_point(held, OUT)
    assert (point["step"], point["checkpoint"]) == (40, OUT + "/checkpoint-40")
    assert point["steps"] == {"master": [20, 40, 60], "worker-a": [20, 40], "worker-b": [40, 60]}
    assert point["problems"] == []
    assert point["incomplete"] == []


def test_no_checkpoint_anywhere_starts_from_step_zero():
    point = resume_point({"master": [], "worker-a": None}, OUT)
    assert (point["step"], point["checkpoint"], point["problems"]) == (None, None, [])


def test_a_node_without_the_checkpoints_of_the_others_is_named():
    held = {"master": checkpoint(20) + checkpoint(40), "new-node": [], "worker-b": worker(40)}
    point = resume_point(held, OUT)
    assert point["step"] is None
    assert point["problems"] == [
        "no checkpoint of the job is on every node: checkpoint-40 is on master, worker-b but not on new-node "
        "(a node new to the cluster, or one whose disk was replaced)"
    ]


def test_a_half_deleted_checkpoint_is_passed_over_and_named():
    # worker-a's rotation of checkpoint-40 stopped after the optimizer: its trainer_state.json is still there.
    held = {
        "master": checkpoint(20) + checkpoint(40),
        "worker-a": worker(20) + checkpoint(40, ("trainer_state.json", "rng_state_2.pth", "scheduler.pt")),
    }
    point = resume_point(held, OUT)
    assert point["step"] == 20
    assert point["incomplete"] == ["worker-a: checkpoint-40 is incomplete (missing: optimizer.pt)"]


def test_a_node_with_only_a_half_deleted_checkpoint_is_a_problem_that_says_so():
    held = {"master": checkpoint(40), "worker-a": checkpoint(40, ("trainer_state.json", "rng_state_2.pth"))}
    point = resume_point(held, OUT)
    assert point["step"] is None
    assert point["problems"] == [
        "no checkpoint of the job is on every node: checkpoint-40 is on master but not on worker-a (a node new to "
        "the cluster, or one whose disk was replaced); worker-a: checkpoint-40 is incomplete (missing: optimizer.pt, "
        "scheduler.pt)"
    ]


@pytest.mark.parametrize("held", [{}, [], "master"])
def test_bad_input(held):
    with pytest.raises(CheckpointError):
        resume_point(held, OUT)


def test_the_masters_files_a_node_lacks_are_copied_but_no_ranks_random_state():
    # transformers 5.x writes the weights on the master only; each node keeps its ranks' random states.
    full = [path.replace("rng_state_0", "rng_state_4").replace("rng_state_1", "rng_state_5") for path in checkpoint(20)]
    point = resume_point({"master": checkpoint(20), "worker-a": worker(20), "worker-b": full}, OUT)
    assert point["step"] == 20
    assert point["missing"] == {"worker-a": ["config.json", "model.safetensors", "training_args.bin"]}
    assert point["steps"]["worker-b"] == [20]


def test_a_master_whose_weights_are_gone_is_not_resumed_from_even_if_the_workers_are_whole():
    master = checkpoint(20) + [path for path in checkpoint(40) if not path.endswith("model.safetensors")]
    point = resume_point({"master": master, "worker-a": worker(20) + worker(40)}, OUT)
    assert point["step"] == 20
    assert point["incomplete"] == [
        "master: checkpoint-40 is incomplete (missing: the model's weights (model.safetensors or pytorch_model.bin))"
    ]


def found_files(output):
    """What ansible.builtin.find (recurse, depth 2) returns for a node's output folder, as if the folder were OUT on
    that node (each node of the test has its own folder)."""
    return [
        {"path": OUT + "/" + os.path.relpath(os.path.join(folder, name), output)}
        for folder, _dirs, names in os.walk(output)
        for name in names
    ]


def save(output, step, names):
    folder = output / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_bytes(b"x")
    return folder


WRITTEN = list(dict.fromkeys(MASTER_FILES + WORKER_FILES))


@pytest.mark.parametrize("order", [WRITTEN, WRITTEN[::-1], sorted(WRITTEN)], ids=["written", "reversed", "by-name"])
@pytest.mark.parametrize("rotated", ["master", "worker-a"])
def test_a_rotation_stopped_after_any_file_never_gives_a_half_deleted_checkpoint(tmp_path, order, rotated):
    """Real folders: the master and a worker each hold checkpoint-20 and -40 whole; the removal of checkpoint-40
    on one of them (shutil.rmtree, one file after another, in any order) stops after each file in turn. The job
    resumes from checkpoint-20, which both hold whole, until the folder is gone."""
    outputs = {"master": tmp_path / "master", "worker-a": tmp_path / "worker"}
    for step in (20, 40):
        save(outputs["master"], step, MASTER_FILES)
        save(outputs["worker-a"], step, WORKER_FILES)
    doomed = outputs[rotated] / "checkpoint-40"
    for name in [name for name in order if (doomed / name).exists()]:
        (doomed / name).unlink()
        point = resume_point({node: found_files(output) for node, output in outputs.items()}, OUT)
        assert (point["step"], point["problems"]) == (20, []), (name, point)
        left = sorted(path.name for path in doomed.iterdir())
        if left:
            assert point["incomplete"] and point["incomplete"][0].startswith(f"{rotated}: checkpoint-40 is incomplete")
    doomed.rmdir()
    point = resume_point({node: found_files(output) for node, output in outputs.items()}, OUT)
    assert (point["step"], point["incomplete"]) == (20, [])
