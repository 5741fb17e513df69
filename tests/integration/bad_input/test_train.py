# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input to amx.cluster.train: a layout the node cannot run, a hostfile that lists one machine twice, a run id
that cannot name a folder, Intel MPI without impi-rt in the stack, an inventory without a master group.

Each case is a run of playbooks/train_role.yml of its own (the training checks compare the hosts of one play) on
this machine as a one-node cluster: the facts that the real amx_check, tcmalloc and torch_stack published for this
machine in the session's good run (the `stack` fixture), then the role. Every path variable points under the test's
folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

import pytest
from bad_input_helpers import LOCAL, TEST_PLAYBOOKS, assert_refused, cluster, node_paths, run_in_folder

# More ranks than this machine has cores of any kind, so more than its physical cores wherever the tests run.
TOO_MANY = (os.cpu_count() or 1) + 1


@dataclass(frozen=True)
class TrainCase:
    id: str
    bad: Dict[str, Any]
    expect: Tuple[str, ...]
    hostfile: Optional[str] = "localhost\n"  # the hostfile on the master before the run (None: no file)
    inventory: Dict[str, Any] = field(default_factory=dict)  # a whole inventory instead of the one-node cluster


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
                "lists localhost, localhost, but the cluster is localhost",
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
    host = {**LOCAL, **node_paths(tmp_path), "bad_input_facts": str(stack), **case.bad}
    inventory = {"cluster": {"hosts": {"localhost": host}}} if case.inventory else cluster({"localhost": host}, {})
    if case.hostfile is not None:
        (tmp_path / "hosts").write_text(case.hostfile)
    run, touched = run_in_folder(tmp_path, TEST_PLAYBOOKS / "train_role.yml", inventory)
    assert_refused(run, "localhost", "train", case.expect, touched)
