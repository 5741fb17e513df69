# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The train role's gates as functions: each returns its problems, empty when the gate passes."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.amx.cluster.plugins.module_utils import train_gates as tg

DIR = "/home/u/amx-cluster-runs/datasets/tiny-qa-abc"


def found(*files):
    """A registered ansible.builtin.find result for (relative path, checksum) pairs under DIR."""
    return {"files": [{"path": f"{DIR}/{name}", "checksum": checksum} for name, checksum in files]}


# --- stale_workers


def test_stale_workers_are_those_lacking_a_file_or_holding_another_version():
    master = found(("model/config.json", "1"), ("data/train.json", "2"))
    workers = {
        "node-b": found(("model/config.json", "1"), ("data/train.json", "2")),
        "node-c": found(("model/config.json", "1")),
        "node-d": found(("model/config.json", "1"), ("data/train.json", "3")),
        "node-e": {"skipped": True, "changed": False},
        "node-f": {},
    }
    assert tg.stale_workers(master, workers, DIR) == ["node-c", "node-d", "node-e", "node-f"]


def test_a_worker_with_extra_files_is_not_stale():
    master = found(("a", "1"))
    assert tg.stale_workers(master, {"node-b": found(("a", "1"), ("b", "2"))}, DIR) == []


def test_stale_workers_take_file_lists_and_a_skipped_master():
    workers = {"node-b": [{"path": f"{DIR}/a", "checksum": "1"}]}
    assert tg.stale_workers(found(("a", "1"))["files"], workers, DIR) == []
    # The find was skipped everywhere (no workers): nothing to copy, however the workers look.
    assert tg.stale_workers({"skipped": True}, {"node-b": {}}, DIR) == []
    assert tg.stale_workers(None, {}, DIR) == []


@pytest.mark.parametrize("workers", [["node-b"], "node-b", None])
def test_stale_workers_want_a_dict_of_workers(workers):
    with pytest.raises(TypeError, match="dict of worker"):
        tg.stale_workers(found(("a", "1")), workers, DIR)


def test_stale_workers_refuse_files_that_are_not_a_list():
    with pytest.raises(TypeError, match="got str"):
        tg.stale_workers({"files": "a"}, {}, DIR)


# --- stack_groups and stack_problems

HASHES = {"master": "a" * 64, "node1": "b" * 64, "node2": "a" * 64}
PACKAGES = {
    "master": {"torch": "2.8.0", "transformers": "4.56.0"},
    "node1": {"torch": "2.8.0", "transformers": "4.55.0", "by-hand": "1.0"},
    "node2": {"torch": "2.8.0", "transformers": "4.56.0"},
}
SAME_PYTHON = dict.fromkeys(HASHES, "/opt/venv/bin/python")


def test_stack_groups_by_hash_in_host_order():
    assert tg.stack_groups(HASHES) == {"a" * 64: ["master", "node2"], "b" * 64: ["node1"]}
    assert list(tg.stack_groups({"x": "2", "y": "1"})) == ["1", "2"]


def test_one_stack_and_one_python_pass():
    assert tg.stack_problems(dict.fromkeys(HASHES, "c" * 64), PACKAGES, SAME_PYTHON) == []


def test_differing_stacks_name_each_group_and_what_differs():
    (problem,) = tg.stack_problems(HASHES, PACKAGES, SAME_PYTHON)
    assert problem.startswith(
        f"Their training stacks differ: manifest {'a' * 12} on master, node2; manifest {'b' * 12} on node1; what"
        " differs: by-hand: absent on master, node2; 1.0 on node1; transformers: 4.56.0 on master, node2; 4.55.0 on"
        " node1. Run amx.cluster.torch_stack with the same profile on every node"
    )
    assert problem.endswith("or set train_require_same_stack: false")


def test_differing_hashes_with_the_same_packages_point_at_the_manifest():
    same = {host: {"torch": "2.8.0"} for host in HASHES}
    (problem,) = tg.stack_problems(HASHES, same, SAME_PYTHON)
    assert (
        "the same packages, but another profile, Python or requirement list (see torch-stack-manifest.json" in problem
    )


def test_differing_stacks_pass_when_not_required_the_same():
    assert tg.stack_problems(HASHES, PACKAGES, SAME_PYTHON, require_same=False) == []


def test_differing_pythons_are_a_problem_unless_train_python_names_one():
    pythons = {"master": "/opt/a/bin/python", "node1": "/opt/b/bin/python", "node2": "/opt/a/bin/python"}
    same = dict.fromkeys(HASHES, "c" * 64)
    assert tg.stack_problems(same, PACKAGES, pythons) == [
        "The training Python differs between nodes (/opt/a/bin/python, /opt/b/bin/python): mpirun starts the same"
        " path everywhere; use the same torch_stack_venv on every node"
    ]
    assert tg.stack_problems(same, PACKAGES, pythons, python="/usr/bin/python3") == []


def test_both_stack_problems_are_given_together():
    pythons = {"master": "/a", "node1": "/b", "node2": "/a"}
    problems = tg.stack_problems(HASHES, PACKAGES, pythons)
    assert [p.split(":")[0] for p in problems] == [
        "Their training stacks differ",
        "The training Python differs between nodes (/a, /b)",
    ]


def test_stack_problems_want_dicts():
    with pytest.raises(TypeError):
        tg.stack_problems(["master"], PACKAGES, SAME_PYTHON)
    with pytest.raises(TypeError):
        tg.stack_problems(HASHES, [], SAME_PYTHON)


# --- script_problems


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("qa_finetune", "tiny"), {}),
        (("qa_finetune", "files"), {"model": "/m", "train_file": "/t", "validation_file": "/v"}),
        (("run_qa", "hub"), {"example_dir": "/opt/examples/question-answering"}),
        (("custom", "hub"), {"script_path": "/opt/job.py", "script_args": []}),
        (("qa_finetune", "tiny"), {"script_args": ["--seed", "1"]}),
    ],
)
def test_script_settings_that_make_a_run(args, kwargs):
    assert tg.script_problems(*args, **kwargs) == []


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        (
            ("custom", "hub"),
            {"script_args": []},
            ["train_script: custom needs train_script_path and train_script_args"],
        ),
        (
            ("custom", "hub"),
            {"script_path": "/j.py"},
            ["train_script: custom needs train_script_path and train_script_args"],
        ),
        (("qa_finetune", "hub"), {}, ["train_data is tiny or files for qa_finetune"]),
        (
            ("qa_finetune", "files"),
            {"model": "/m", "train_file": "/t"},
            ["train_data: files needs train_model, train_train_file and train_validation_file (on every node)"],
        ),
        (
            ("run_qa", "hub"),
            {},
            ["run_qa needs the transformers examples: run amx.cluster.hf_examples before this role"],
        ),
        (
            ("qa_finetune", "tiny"),
            {"script_args": "--seed 1"},
            ["train_script_args must be a list (one item per argument) or null, got a str"],
        ),
    ],
)
def test_script_settings_that_do_not(args, kwargs, expected):
    assert tg.script_problems(*args, **kwargs) == expected


# --- scaling_problems

NODES = ["master", "node-b", "node-c"]


def test_a_sweep_inside_the_cluster_passes():
    assert tg.scaling_problems([1, 3], NODES, [1, 3], steps=20, script="run_qa") == []


def test_counts_outside_the_cluster_name_them_and_the_nodes():
    assert tg.scaling_problems([0, 1, 4, 4], NODES, [0, 1, 4, 4]) == [
        "train_scaling_nodes [0, 1, 4, 4] has node counts outside 1..3 (0, 4); the play has 3 node(s): master,"
        " node-b, node-c",
        "train_scaling_nodes [0, 1, 4, 4] lists a node count more than once",
    ]


def test_counts_given_as_a_string_are_shown_as_given():
    assert tg.scaling_problems([1, 2], ["master"], "1,2") == [
        'train_scaling_nodes "1,2" has node counts outside 1..1 (2); the play has 1 node(s): master'
    ]


@pytest.mark.parametrize("steps", [0, "0", "many", None])
def test_too_few_steps(steps):
    assert tg.scaling_problems([1], NODES, steps=steps) == [f"train_scaling_steps must be at least 1 (got {steps})"]


@pytest.mark.parametrize(("script", "args"), [("custom", None), ("qa_finetune", ["--seed", "1"])])
def test_a_sweep_builds_the_arguments_itself(script, args):
    assert tg.scaling_problems([1], NODES, script=script, script_args=args) == [
        "The sweep builds the script's arguments itself (max_steps, output folder): it runs train_script qa_finetune"
        f" or run_qa (got {script}) without train_script_args"
    ]


# --- hostfile_read_problems

ALIASES = ["localhost", "node1"]


def read(text):
    return {"content": base64.b64encode(text.encode()).decode(), "encoding": "base64"}


def test_the_right_hostfile_passes():
    assert tg.hostfile_read_problems(read("localhost\nnode1:4\n# a comment\n"), ALIASES, "u") == []


def test_a_hostfile_in_another_order_says_what_it_lists():
    assert tg.hostfile_read_problems(read("node1\nlocalhost\n"), ALIASES, "u") == ["it lists node1, localhost"]


def test_a_key_is_never_quoted():
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nnode1\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
    problems = tg.hostfile_read_problems(read(key), ALIASES, "u")
    assert problems == [
        "lines 1, 4 are not a hostfile line (host or host:slots)",
        "line 3 names a host outside the cluster",
    ]
    assert "BEGIN" not in " ".join(problems) and "b3Blbn" not in " ".join(problems)


def test_a_hostfile_that_could_not_be_read_names_the_user_and_the_reason():
    failed = {"failed": True, "msg": "file not found: /home/u/hostfile"}
    assert tg.hostfile_read_problems(failed, ALIASES, "u") == ["cannot be read by u (file not found: /home/u/hostfile)"]
    assert tg.hostfile_read_problems({}, ALIASES, "u") == ["cannot be read by u ()"]


def test_content_that_is_not_base64():
    assert tg.hostfile_read_problems({"content": "not base64!"}, ALIASES, "u") == [
        "is not what ansible.builtin.slurp returns (its content is not base64)"
    ]


def test_hostfile_read_problems_want_the_registered_result():
    with pytest.raises(TypeError, match="slurp"):
        tg.hostfile_read_problems("localhost\n", ALIASES, "u")


# --- ssh_problems


def ssh(alias, name, **result):
    return {"item": {"alias": alias, "name": name}, **result}


def test_every_worker_answered():
    results = [ssh("node1", "b", rc=0, stderr=""), {"skipped": True, "item": {"alias": "node2", "name": "c"}}]
    assert tg.ssh_problems(results) == []


def test_the_workers_that_did_not_answer_with_their_error():
    results = [
        ssh("node1", "b", rc=0, stderr=""),
        ssh("node2", "c", rc=255, stderr="ssh: connect to host node2 port 22: Connection refused\n"),
        ssh("node3", "d", failed=True, msg="[Errno 2] No such file or directory: b'ssh'"),
        ssh("node4", "e", rc=255, stderr=""),
    ]
    assert tg.ssh_problems(results) == [
        "node2 (c): ssh: connect to host node2 port 22: Connection refused",
        "node3 (d): [Errno 2] No such file or directory: b'ssh'",
        "node4 (e): ",
    ]


def test_ssh_problems_want_a_list():
    with pytest.raises(TypeError, match="a list"):
        tg.ssh_problems({"results": []})


@pytest.mark.parametrize(
    ("gate", "args"),
    [
        (tg.stack_problems, (["master"], {}, {})),
        (tg.hostfile_read_problems, ("localhost\n", ["localhost"], "u")),
    ],
)
def test_gates_refuse_input_of_another_kind(gate, args):
    # The cases of the removed filters train_stack_problems and train_hostfile_problems.
    with pytest.raises(TypeError, match=r"^expected"):
        gate(*args)
