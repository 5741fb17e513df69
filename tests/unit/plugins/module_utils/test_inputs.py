# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
import pytest

from ansible_collections.amx.cluster.plugins.module_utils.inputs import (
    SYSTEM_FOLDERS,
    existing_folder_problem,
    folder_problems,
    hostfile_problems,
    launch_problems,
    normalize_folder,
    role_folders_problem,
    system_folder,
)

HOME = "/home/alice"


@pytest.mark.parametrize(
    ("path", "normal"),
    [("/tmp/", "/tmp"), ("//tmp", "/tmp"), ("/usr/../tmp/.", "/tmp"), ("/", "/"), ("///", "/"), ("/a//b/", "/a/b")],
)
def test_normalize_folder(path, normal):
    assert normalize_folder(path) == normal


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/tmp",
        "/tmp/",
        "//tmp",
        "/usr",
        "/usr/local",
        "/etc",
        "/home",
        "/var",
        "/opt",
        "/root",
        "/var/tmp",
        "/usr/../etc",
        HOME,
        HOME + "/",
        HOME + "/.ssh",
        "/home/bob",
    ],
)
def test_system_folders_are_refused(path):
    assert system_folder(path, HOME), path
    problems = folder_problems({"train_run_root": path}, home=HOME)
    assert len(problems) == 1 and problems[0].startswith(f"train_run_root is {path!r}, "), problems


@pytest.mark.parametrize(
    "path", ["/tmp/runs", "/opt/amx-cluster/venv", HOME + "/amx-cluster-runs", "/var/cache/amx-cluster/wheelhouse"]
)
def test_folders_of_their_own_pass(path):
    assert folder_problems({"x": path}, home=HOME) == []


def test_the_list_is_normalised_and_holds_the_usual_folders():
    assert all(normalize_folder(p) == p for p in SYSTEM_FOLDERS)
    assert {"/", "/tmp", "/usr", "/etc", "/home", "/var", "/opt"} <= set(SYSTEM_FOLDERS)


def test_relative_empty_and_linked_folders():
    assert folder_problems({"a": "runs"}) == ["a is 'runs', not an absolute path"]
    assert folder_problems({"a": "runs"}, absolute=False) == []
    assert folder_problems({"a": "", "b": None}) == []
    assert folder_problems({"a": ["/x"]}) == ["a must be a path (a string), got a list"]
    assert folder_problems({"a": "/data/runs"}, resolved={"a": "/tmp"}) == [
        "a is '/data/runs', a link to '/tmp', a system folder"
    ]
    assert folder_problems({"a": "/data/runs"}, resolved={"a": "/data/real"}) == []


def test_a_home_of_root_is_not_the_whole_tree():
    # root's home is / on some systems: that must not make every folder "the user's home".
    assert folder_problems({"a": "/srv/x"}, home="/") == []


GOOD = {
    "train_extra_env": {"GLOO_SOCKET_IFNAME": "eth0", "N": 1},
    "train_secret_env": {"HF_TOKEN": "hf_x"},
    "train_extra_args": ["--seed", 1],
    "train_script_args": None,
    "train_launcher_options": [],
    "train_ssh_options": ["-o", "BatchMode=yes"],
    "train_bf16": True,
    "train_epochs": 0.5,
    "train_batch_size": 16,
    "train_max_steps": -1,
    "train_max_seq_length": 96,
    "train_learning_rate": "3e-3",
    "train_run_id": "squad-1.b_2",
}


def test_good_launch_inputs_pass():
    assert launch_problems(GOOD) == []
    assert launch_problems({}) == []


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ({"train_extra_env": {"A;B": "x"}}, "train_extra_env has 'A;B', which is not an environment variable name"),
        ({"train_extra_env": {"1A": "x"}}, "which is not an environment variable name"),
        ({"train_extra_env": {"A": ["x"]}}, "train_extra_env's A must be a string or a number, got a list"),
        ({"train_extra_env": "A=1"}, "train_extra_env must be a mapping"),
        ({"train_secret_env": "HF_TOKEN"}, "train_secret_env must be a mapping of variable names to values, got a str"),
        ({"train_secret_env": {"HF TOKEN": "x"}}, "train_secret_env has 'HF TOKEN'"),
        ({"train_secret_env": {"T": ["hidden"]}}, "train_secret_env's T must be a string, got a list"),
        (
            {"train_secret_env": {"N": "x"}, "train_extra_env": {"N": 1}},
            "N is in both train_extra_env and train_secret_env",
        ),
        ({"train_extra_args": "--seed 1"}, "train_extra_args must be a list of strings (one item per argument), got a"),
        ({"train_extra_args": [["--seed"]]}, "train_extra_args must hold strings, but item 0 is a list"),
        ({"train_script_args": "--x"}, "train_script_args must be a list of strings"),
        ({"train_launcher_options": "-iface eth1"}, "train_launcher_options must be a list of strings"),
        ({"train_bf16": [True]}, "train_bf16 must be true or false, got a list"),
        ({"train_kmp_hw_subset": ["1T"]}, "train_kmp_hw_subset must be a string, got a list"),
        ({"train_epochs": 0}, "train_epochs must be at least"),
        ({"train_epochs": -1}, "train_epochs must be at least"),
        ({"train_epochs": "many"}, "train_epochs must be a number, got 'many'"),
        ({"train_batch_size": 0}, "train_batch_size must be at least 1, got 0"),
        ({"train_batch_size": 2.5}, "train_batch_size must be a whole number, got 2.5"),
        ({"train_max_steps": 0}, "train_max_steps must be at least 1, got 0"),
        ({"train_max_steps": -2}, "train_max_steps must be at least 1, got -2"),
        ({"train_logging_steps": -1}, "train_logging_steps must be at least 1"),
        ({"train_max_seq_length": 4}, "train_max_seq_length must be at least 8"),
        ({"train_learning_rate": 0}, "train_learning_rate must be at least"),
        ({"train_run_id": "run\n"}, "train_run_id 'run\\n' cannot name a folder"),
        ({"train_run_id": "../escape"}, "train_run_id '../escape' cannot name a folder"),
        ({"train_run_id": "a b"}, "cannot name a folder"),
    ],
)
def test_bad_launch_inputs_are_named(bad, expected):
    problems = launch_problems(bad)
    assert len(problems) == 1 and expected in problems[0], problems


def test_the_env_names_follow_the_launch_rule():
    # The same check as the launch's (module_utils.launch._check_name): what passes here renders there.
    from ansible_collections.amx.cluster.plugins.module_utils.launch import LaunchError, _check_name

    for name in ("A", "_a1", "A;B", "1A", "A-B", ""):
        try:
            _check_name(name)
            launch_ok = True
        except LaunchError:
            launch_ok = False
        assert (launch_problems({"train_extra_env": {name: "x"}}) == []) == launch_ok, name


ALIASES = ["localhost", "node1", "node2"]


@pytest.mark.parametrize(
    ("text", "ok", "hosts", "problem"),
    [
        ("localhost\nnode1\nnode2\n", True, ALIASES, None),
        ("# the cluster\nlocalhost:2\n\nnode1 # first worker\nnode2:2\n", True, ALIASES, None),
        ("localhost\nlocalhost\nnode2\n", False, ["localhost", "localhost", "node2"], "it lists localhost, localhost"),
        ("", False, [], "it lists nothing"),
        ("localhost\nnode1\nnode7\n", False, [], "line 3 names a host outside the cluster"),
    ],
)
def test_hostfile(text, ok, hosts, problem):
    found = hostfile_problems(text, ALIASES)
    assert found["ok"] is ok and found["hosts"] == hosts
    assert (problem in " ".join(found["problems"])) if problem else found["problems"] == []


def test_a_file_that_is_no_hostfile_is_never_quoted():
    key = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "QyNTUxOQAAACDxSecretMarker+/xyz\n"
        "-----END OPENSSH PRIVATE KEY-----\n"
    )
    found = hostfile_problems(key, ALIASES)
    text = " ".join(found["problems"])
    assert not found["ok"] and found["hosts"] == []
    assert "lines 1, 3, 4 are not a hostfile line" in text
    assert "line 2 names a host outside the cluster" in text
    for piece in ("BEGIN", "b3Blbn", "SecretMarker", "QyNTUx"):
        assert piece not in text


def test_the_former_filters_cases():
    assert folder_problems({"a": "/tmp"}) == ["a is '/tmp', a system folder"]
    assert launch_problems({"train_batch_size": 0}) == ["train_batch_size must be at least 1, got 0"]
    assert hostfile_problems("localhost\n", ["localhost"])["ok"]


def test_ansible_subclasses_are_named_as_yaml_kinds():
    class LazyList(list):
        pass

    class LazyDict(dict):
        pass

    problems = launch_problems({"train_extra_env": {"A": LazyList(["x"])}, "train_extra_args": LazyDict()})
    assert problems == [
        "train_extra_env's A must be a string or a number, got a list",
        "train_extra_args must be a list of strings (one item per argument), got a mapping",
    ]


def test_the_role_folders_message_names_each_refusal_once():
    assert role_folders_problem([], "/opt/x") == []
    (text,) = role_folders_problem(["a is '/tmp', a system folder", "b is '/etc', a system folder"], "/opt/x")
    assert text.startswith("a is '/tmp', a system folder; b is '/etc', a system folder. The role creates")
    assert "set them to a folder of its own, such as /opt/x." in text


@pytest.mark.parametrize(
    ("stat", "writable", "expected"),
    [
        ({"exists": True, "isdir": True}, True, None),
        ({"exists": True, "islnk": True, "lnk_source": "/srv/venv"}, True, None),
        ({"exists": True, "isdir": False}, True, "d /srv/d exists but is not a folder. Set d to a folder"),
        ({"exists": True, "islnk": True, "lnk_source": "/tmp"}, True, "d is '/srv/d', a link to '/tmp'"),
        ({"exists": True, "isdir": True}, False, "d /srv/d exists and is not writable by me."),
    ],
)
def test_an_existing_folder_is_a_folder_of_its_own_the_user_can_write(stat, writable, expected):
    found = existing_folder_problem("d", "/srv/d", stat, writable, "me", HOME)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith(expected)
