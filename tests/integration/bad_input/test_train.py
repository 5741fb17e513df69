# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input to amx.cluster.train: a layout the node cannot run, a hostfile that lists one machine twice or is no
hostfile at all, a master with no address for MASTER_ADDR (no ssh_mesh_address, no default route), a run id that
cannot name a folder, launch inputs the launch would refuse (checked before anything
is written), a system folder as the run root, Intel MPI without impi-rt in the stack, an inventory without a master
group.

Each case is a run of playbooks/train_role.yml of its own (the training checks compare the hosts of one play) on
this machine as a one-node cluster: the facts that the real amx_check, tcmalloc and torch_stack published for this
machine in the session's good run (the `stack` fixture), then the role. Every path variable points under the test's
folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import stat
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

import pytest
from bad_input_helpers import (
    LOCAL,
    TEST_PLAYBOOKS,
    assert_refused,
    changes,
    cluster,
    message,
    node_paths,
    run_in_folder,
    snapshot,
)

# More ranks than this machine has cores of any kind, so more than its physical cores wherever the tests run.
TOO_MANY = (os.cpu_count() or 1) + 1
# A file that is no hostfile: what a train_hostfile pointing at the wrong file finds (it must never be printed).
FAKE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDSecretMarker+/abc\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)


def mode_and_owner(path: str) -> Tuple[int, int, int]:
    info = os.stat(path)
    return info.st_mode, info.st_uid, info.st_gid


@dataclass(frozen=True)
class TrainCase:
    id: str
    bad: Dict[str, Any]
    expect: Tuple[str, ...]
    hostfile: Optional[str] = "localhost\n"  # the hostfile on the master before the run (None: no file)
    inventory: Dict[str, Any] = field(default_factory=dict)  # a whole inventory instead of the one-node cluster
    absent: Tuple[str, ...] = ()  # never in the play's output (a file's contents)
    link: Optional[Tuple[str, str]] = None  # a symbolic link made in the test's folder first: (name, target)
    keeps: Optional[str] = None  # a folder outside the test's folder whose owner and mode must not change
    workers: Tuple[str, ...] = ()  # workers besides the master (this machine too, connection local, the same paths)


CASES = [
    pytest.param(
        TrainCase(
            "train-ranks-above-physical-cores",
            {"train_processes_per_node": TOO_MANY},
            (
                "localhost (",
                "physical cores): the training layout cannot run there",
                f"processes_per_node={TOO_MANY} is more than the",
                f"train_processes_per_node ({TOO_MANY})",
                "change them so that they fit this node",
            ),
        ),
        id="train-ranks-above-physical-cores",
    ),
    pytest.param(
        TrainCase(
            "train-os-cores-take-every-core",
            {"train_os_cores": 4096},
            (
                "localhost (",
                "os_reserved_cores=4096 leaves no core for training",
                "train_os_cores (4096)",
                "change them so that they fit this node",
            ),
        ),
        id="train-os-cores-take-every-core",
    ),
    pytest.param(
        TrainCase(
            "train-hostfile-lists-a-host-twice",
            {},
            (
                "localhost: the MPI hostfile",
                "it lists localhost, localhost, but the cluster is localhost",
                "Write it with amx.cluster.mpi_hostfile",
            ),
            hostfile="localhost\nlocalhost\n",
        ),
        id="train-hostfile-lists-a-host-twice",
    ),
    pytest.param(
        TrainCase(
            "train-run-id-not-a-folder-name",
            {"train_run_id": "../escape"},
            ("localhost", "train_run_id '../escape' cannot name a folder", "use letters, digits"),
        ),
        id="train-run-id-not-a-folder-name",
    ),
    pytest.param(
        TrainCase(
            "train-scaling-sweep-beyond-the-cluster",
            {"train_scaling_nodes": [1, 2]},
            (
                "localhost: the scaling sweep cannot run as set",
                "has node counts outside 1..1 (2)",
                "Change train_scaling_nodes (for example [1])",
            ),
        ),
        id="train-scaling-sweep-beyond-the-cluster",
    ),
    pytest.param(
        TrainCase(
            "train-intel-mpi-without-impi-rt",
            {"train_mpi": "intel"},
            (
                "localhost: train_mpi intel cannot launch the job",
                "comes from the impi-rt package in the training virtualenv, which it lacks",
                "add impi-rt to torch_stack_extra_packages",
            ),
        ),
        id="train-intel-mpi-without-impi-rt",
    ),
    pytest.param(
        TrainCase(
            "train-hostfile-is-a-private-key",
            {},
            (
                "localhost: the MPI hostfile",
                "lines 1, 3, 4 are not a hostfile line (host or host:slots)",
                "line 2 names a host outside the cluster",
                "point train_hostfile at the right file",
            ),
            hostfile=FAKE_KEY,
            absent=("BEGIN OPENSSH", "b3BlbnNzaC1rZXktdjE", "SecretMarker"),
        ),
        id="train-hostfile-is-a-private-key",
    ),
    pytest.param(
        TrainCase(
            "train-run-id-with-a-newline",
            {"train_run_id": "run-1\n"},
            ("localhost: the run cannot be launched as set", "train_run_id 'run-1\\n' cannot name a folder"),
        ),
        id="train-run-id-with-a-newline",
    ),
    pytest.param(
        TrainCase(
            "train-env-name-with-a-semicolon",
            {"train_extra_env": {"A;touch /tmp/x": "1"}},
            (
                "localhost: the run cannot be launched as set",
                "train_extra_env has 'A;touch /tmp/x', which is not an environment variable name",
                "nothing was written",
            ),
        ),
        id="train-env-name-with-a-semicolon",
    ),
    pytest.param(
        TrainCase(
            "train-env-value-a-list",
            {"train_extra_env": {"GLOO_SOCKET_IFNAME": ["eth0"]}},
            ("train_extra_env's GLOO_SOCKET_IFNAME must be a string or a number, got a list",),
        ),
        id="train-env-value-a-list",
    ),
    pytest.param(
        TrainCase(
            "train-extra-args-a-string",
            {"train_extra_args": "--seed 7"},
            ("train_extra_args must be a list of strings (one item per argument), got a str", "['--seed', '1']"),
        ),
        id="train-extra-args-a-string",
    ),
    pytest.param(
        TrainCase(
            "train-flag-a-list",
            {"train_kmp_hw_subset": ["1T"]},
            ("train_kmp_hw_subset must be a string, got a list",),
        ),
        id="train-flag-a-list",
    ),
    pytest.param(
        TrainCase(
            "train-knobs-out-of-bounds",
            {"train_epochs": 0, "train_batch_size": 0, "train_max_steps": 0},
            (
                "train_epochs must be at least",
                "train_batch_size must be at least 1, got 0",
                "train_max_steps must be at least 1, got 0",
            ),
        ),
        id="train-knobs-out-of-bounds",
    ),
    pytest.param(
        TrainCase(
            "train-smoke-test-max-age-negative",
            {"train_smoke_test_max_age": -1},
            ("localhost: ", "train_smoke_test_max_age >= 0", "got -1"),
        ),
        id="train-smoke-test-max-age-negative",
    ),
    pytest.param(
        TrainCase(
            "train-run-root-a-system-folder",
            {"train_run_root": "/tmp"},
            ("localhost: train_run_root is '/tmp', a system folder", "never happen to a folder of the system"),
            keeps="/tmp",
        ),
        id="train-run-root-a-system-folder",
    ),
    pytest.param(
        TrainCase(
            "train-run-root-a-link-to-a-system-folder",
            {"train_run_root": "@/runs-link"},
            ("runs-link', a link to '/tmp', a system folder", "Set train_run_root to a folder of its own"),
            link=("runs-link", "/tmp"),
            keeps="/tmp",
        ),
        id="train-run-root-a-link-to-a-system-folder",
    ),
    pytest.param(
        TrainCase(
            "train-master-without-an-address",
            {"bad_input_no_default_route": True},
            (
                "localhost: no private address for MASTER_ADDR: localhost has no address for the other nodes: "
                "ssh_mesh_address is not set and it has no default route",
                "set ssh_mesh_address for localhost (a host variable) to the address the other nodes reach it on",
            ),
            hostfile="localhost\nnode1\n",
            workers=("node-b",),
        ),
        id="train-master-without-an-address",
    ),
    pytest.param(
        TrainCase(
            "train-no-master-group",
            {},
            ("localhost", "group master", "workers"),
            inventory={"cluster": {"hosts": {"localhost": dict(LOCAL)}}},
        ),
        id="train-no-master-group",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_to_train_is_refused_before_any_training_process(tmp_path, stack, case):
    bad = {
        k: (v.replace("@", str(tmp_path), 1) if isinstance(v, str) and v.startswith("@") else v)
        for k, v in case.bad.items()
    }
    host = {**LOCAL, **node_paths(tmp_path), "bad_input_facts": str(stack), **bad}
    workers = {name: {**LOCAL, **node_paths(tmp_path), "bad_input_facts": str(stack)} for name in case.workers}
    inventory = {"cluster": {"hosts": {"localhost": host}}} if case.inventory else cluster({"localhost": host}, workers)
    if case.hostfile is not None:
        (tmp_path / "hosts").write_text(case.hostfile)
    if case.link:
        (tmp_path / case.link[0]).symlink_to(case.link[1])
    kept = mode_and_owner(case.keeps) if case.keeps else None
    run, touched = run_in_folder(tmp_path, TEST_PLAYBOOKS / "train_role.yml", inventory)
    assert_refused(run, "localhost", "train", case.expect, touched)
    leaked = [piece for piece in case.absent if piece in run.output]
    assert not leaked, f"the output quotes the file: {leaked}\n{run.explain()}"
    if case.keeps:
        assert mode_and_owner(case.keeps) == kept, f"{case.keeps} changed owner or mode"


# A job that only reports, by a digest, whether each rank sees the secret variable (no torch: the launch is the
# point here, not the training).
CHECK_SECRET = """\
import hashlib, json, os, sys
value = os.environ.get("AMX_TEST_SECRET", "")
rank = os.environ.get("PMI_RANK", "?")
with open(os.path.join(sys.argv[1], "rank-" + rank + ".json"), "w") as handle:
    json.dump({"sha256": hashlib.sha256(value.encode()).hexdigest()}, handle)
"""


def files_holding(root: pathlib.Path, marker: str) -> list:
    return [str(p) for p in root.rglob("*") if p.is_file() and not p.is_symlink() and marker.encode() in p.read_bytes()]


def test_a_run_keeps_the_users_folder_its_record_and_its_secrets(tmp_path, stack, monkeypatch):
    """A real launch (mpirun, 2 ranks) into an existing run root of the user's, with a secret variable from the
    controller's environment: the run root keeps its owner and mode, the run folder is the user's alone, every rank
    sees the secret, and no file of the run (on the node or the controller) nor the play's output holds it. The
    same run id again with other settings is refused before anything is written: the finished run stays as it ran."""
    marker = "amx-secret-" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:16]
    monkeypatch.setenv("AMX_TEST_SECRET", marker)
    root = tmp_path / "my-runs"
    root.mkdir()
    os.chmod(root, 0o751)
    os.chown(root, 65534, 65534)  # nobody: the run's user (root here) can still write to it
    seen = tmp_path / "seen"
    seen.mkdir()
    script = tmp_path / "check_secret.py"
    script.write_text(CHECK_SECRET)
    (tmp_path / "hosts").write_text("localhost\n")
    host = {
        **LOCAL,
        **node_paths(tmp_path),
        "bad_input_facts": str(stack),
        "train_run_root": str(root),
        "train_run_id": "keep-1",
        "train_script": "custom",
        "train_script_path": str(script),
        "train_script_args": [str(seen)],
        "train_secret_env": {"AMX_TEST_SECRET": "{{ lookup('ansible.builtin.env', 'AMX_TEST_SECRET') }}"},
        "train_timeout": 300,
    }
    before = mode_and_owner(str(root))
    run, _touched = run_in_folder(tmp_path, TEST_PLAYBOOKS / "train_role.yml", cluster({"localhost": host}, {}))
    assert run.returncode == 0, run.explain()
    assert mode_and_owner(str(root)) == before, "the existing run root changed owner or mode"
    run_dir = root / "keep-1"
    assert stat.S_IMODE(os.stat(run_dir).st_mode) == 0o700
    readable = [str(p) for p in run_dir.rglob("*") if p.is_file() and os.stat(p).st_mode & 0o077]
    assert not readable, f"files of the run that other users can read: {readable}"
    digest = hashlib.sha256(marker.encode()).hexdigest()
    ranks = {p.name: json.loads(p.read_text())["sha256"] for p in seen.glob("rank-*.json")}
    assert ranks == {"rank-0.json": digest, "rank-1.json": digest}, ranks
    assert files_holding(tmp_path, marker) == [], "the secret is in these files"
    assert marker not in run.output, "the secret is in the play's output"

    launch = (run_dir / "launch.sh").read_bytes()
    again = {**host, "train_extra_args": ["--another-setting"]}
    state_before = snapshot(tmp_path)
    run, touched = run_in_folder(tmp_path, TEST_PLAYBOOKS / "train_role.yml", cluster({"localhost": again}, {}))
    assert run.returncode != 0, run.explain()
    failure = run.failure("localhost")
    assert failure and "run keep-1 finished before with other settings" in message(failure), run.explain()
    assert "set train_rerun: true" in message(failure)
    assert (run_dir / "launch.sh").read_bytes() == launch
    # The test's own inventory is written again for the second run; nothing else may change.
    rewritten = [
        p for p in changes(state_before, snapshot(tmp_path)) if p != "inventory.yml" and not p.startswith("home/")
    ]
    assert rewritten == [], touched
