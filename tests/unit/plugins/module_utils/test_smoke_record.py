# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The smoke test's cluster fingerprint and the decision to skip it: each input changes the fingerprint, order that
does not matter does not, and every doubt about the record takes the full path."""

from __future__ import annotations

import copy
import json
from typing import Any, Callable, Dict, Optional

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.smoke_record import (
    parse_checksums,
    smoke_fingerprint,
    smoke_record,
    smoke_test_due,
)

RUN_ID = "20261202T013000Z"
RUN_DIR = f"/home/mpi/amx-cluster-runs/{RUN_ID}"
HOME = "/home/mpi"
BOOT = "/proc/sys/kernel/random/boot_id"


def digest(char: str) -> str:
    return char * 64


def checksums(files: Dict[str, str]) -> str:
    return "".join(f"{value}  {path}\n" for path, value in files.items())


def node(boot: str, extra: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    files = {
        BOOT: digest(boot),
        f"{HOME}/.ssh/config": digest("c"),
        f"{HOME}/.ssh/known_hosts": digest("d"),
        f"{HOME}/.ssh/authorized_keys": digest("e"),
        f"{HOME}/.ssh/cluster.pub": digest("f"),
    }
    files.update(extra or {})
    return {
        "stack": "1" * 64,
        "python": "/opt/amx-cluster/venv/bin/python",
        "kernel": "6.8.0-1015-aws",
        "checksums": checksums(files),
    }


def cluster() -> Dict[str, Any]:
    return {
        "nodes": {
            "master": node("a", {f"{HOME}/hosts": digest("9")}),
            "worker1": node("b"),
        },
        "launch": {
            "script": (
                f"#!/bin/bash\nexport AMX_CLUSTER_RUN_ID={RUN_ID}\nmpirun -f {HOME}/hosts -n 4 -ppn 2 "
                f"-genv MASTER_ADDR 10.0.0.1 {RUN_DIR}/rank_exec.sh python {RUN_DIR}/smoke_allreduce.py\n"
            ),
            "role_files": {"smoke_allreduce.py": digest("2"), "rank_exec.sh": digest("3")},
            "launcher_info": "HYDRA build details: Version: 4.0",
        },
    }


def fingerprint(state: Dict[str, Any], run_dir: str = RUN_DIR, run_id: str = RUN_ID) -> str:
    return smoke_fingerprint(state["nodes"], state["launch"], run_dir=run_dir, run_id=run_id)


def replace_file(host: str, path: str, value: str) -> Callable[[Dict[str, Any]], None]:
    def change(state: Dict[str, Any]) -> None:
        files = parse_checksums(state["nodes"][host]["checksums"])
        files[path] = value
        state["nodes"][host]["checksums"] = checksums(files)

    return change


def drop_file(host: str, path: str) -> Callable[[Dict[str, Any]], None]:
    def change(state: Dict[str, Any]) -> None:
        files = parse_checksums(state["nodes"][host]["checksums"])
        del files[path]
        state["nodes"][host]["checksums"] = checksums(files)

    return change


def set_in(*keys: str, value: Any) -> Callable[[Dict[str, Any]], None]:
    def change(state: Dict[str, Any]) -> None:
        target = state
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return change


def script_edit(old: str, new: str) -> Callable[[Dict[str, Any]], None]:
    def change(state: Dict[str, Any]) -> None:
        state["launch"]["script"] = state["launch"]["script"].replace(old, new)

    return change


CHANGES = {
    "a worker's stack (another package)": set_in("nodes", "worker1", "stack", value="2" * 64),
    "the master's stack": set_in("nodes", "master", "stack", value="2" * 64),
    "the training Python": set_in("nodes", "worker1", "python", value="/usr/bin/python3"),
    "the kernel": set_in("nodes", "worker1", "kernel", value="6.8.0-1016-aws"),
    "a reboot (boot id)": replace_file("worker1", BOOT, digest("7")),
    "the hostfile": replace_file("master", f"{HOME}/hosts", digest("8")),
    "the hostfile gone": drop_file("master", f"{HOME}/hosts"),
    "the SSH config": replace_file("master", f"{HOME}/.ssh/config", digest("8")),
    "known_hosts (a new host key)": replace_file("master", f"{HOME}/.ssh/known_hosts", digest("8")),
    "authorized_keys": replace_file("worker1", f"{HOME}/.ssh/authorized_keys", digest("8")),
    "the cluster key": replace_file("master", f"{HOME}/.ssh/cluster.pub", digest("8")),
    "a new SSH file": replace_file("worker1", f"{HOME}/.ssh/id_other.pub", digest("8")),
    "the rank count (layout)": script_edit("-n 4", "-n 6"),
    "MASTER_ADDR": script_edit("10.0.0.1", "10.0.0.2"),
    "the launcher's env": script_edit("export AMX", "export GLOO_SOCKET_IFNAME=eth1\nexport AMX"),
    "the launcher": set_in("launch", "launcher_info", value="HYDRA build details: Version: 4.1"),
    "the smoke test script": set_in("launch", "role_files", "smoke_allreduce.py", value=digest("4")),
    "the rank wrapper": set_in("launch", "role_files", "rank_exec.sh", value=digest("4")),
    "a node added": set_in("nodes", "worker2", value=node("c")),
    "a node renamed": lambda state: state["nodes"].update({"worker9": state["nodes"].pop("worker1")}),
}


@pytest.mark.parametrize("change", list(CHANGES.values()), ids=list(CHANGES))
def test_each_input_changes_the_fingerprint(change):
    before = cluster()
    after = copy.deepcopy(before)
    change(after)
    assert fingerprint(after) != fingerprint(before)


def test_the_fingerprint_is_a_sha256_digest_and_stable():
    assert fingerprint(cluster()) == fingerprint(cluster())
    assert len(fingerprint(cluster())) == 64
    int(fingerprint(cluster()), 16)


def test_the_next_run_folder_and_id_leave_it_as_it_was():
    later = json.loads(json.dumps(cluster()).replace(RUN_ID, "20261203T090000Z"))
    assert fingerprint(later, RUN_DIR.replace(RUN_ID, "20261203T090000Z"), "20261203T090000Z") == fingerprint(cluster())
    # A named run id (train_run_id) in the same run root: the same.
    named = json.loads(json.dumps(cluster()).replace(RUN_ID, "my-run"))
    assert fingerprint(named, RUN_DIR.replace(RUN_ID, "my-run"), "my-run") == fingerprint(cluster())


def test_another_run_root_changes_it():
    moved = json.loads(json.dumps(cluster()).replace("/home/mpi/amx-cluster-runs", "/data/runs"))
    # The run folder itself is taken out; the hostfile path and the SSH files stay, so only the run root moved: the
    # same fingerprint is right (the run root does not reach the collective).
    assert fingerprint(moved, RUN_DIR.replace("/home/mpi/amx-cluster-runs", "/data/runs")) == fingerprint(cluster())


def test_order_that_does_not_matter_does_not_change_it():
    state = cluster()
    reordered = {
        "nodes": dict(reversed(list(state["nodes"].items()))),
        "launch": dict(reversed(list(state["launch"].items()))),
    }
    lines = reordered["nodes"]["master"]["checksums"].splitlines(keepends=True)
    reordered["nodes"]["master"]["checksums"] = "".join(reversed(lines))
    reordered["nodes"]["worker1"] = dict(reversed(list(reordered["nodes"]["worker1"].items())))
    assert fingerprint(reordered) == fingerprint(state)


def test_order_that_matters_changes_it():
    state = cluster()
    state["launch"]["hostfile"] = ["localhost", "node1", "node2"]
    swapped = copy.deepcopy(state)
    swapped["launch"]["hostfile"] = ["localhost", "node2", "node1"]
    assert fingerprint(swapped) != fingerprint(state)


def test_checksums_as_text_or_mapping_are_the_same_input():
    state = cluster()
    parsed = copy.deepcopy(state)
    parsed["nodes"]["worker1"]["checksums"] = parse_checksums(state["nodes"]["worker1"]["checksums"])
    assert fingerprint(parsed) == fingerprint(state)


def test_parse_checksums_reads_sha256sum_output():
    text = f"{digest('A')}  /home/mpi/.ssh/config\n\n\\{digest('b')} */home/mpi/odd\\nname\n"
    assert parse_checksums(text) == {"/home/mpi/.ssh/config": digest("a"), "/home/mpi/odd\\nname": digest("b")}


@pytest.mark.parametrize(
    "text, needle",
    [
        ("not a checksum\n", "line 1 of the checksums"),
        (f"{digest('a')[:-1]}  /x\n", "line 1"),
    ],
)
def test_parse_checksums_names_the_host_and_line_never_the_text(text, needle):
    with pytest.raises(ValueError) as error:
        parse_checksums(text, "worker1")
    assert needle in str(error.value) and "worker1" in str(error.value)
    assert "not a checksum" not in str(error.value).replace("is not a sha256sum", "")


@pytest.mark.parametrize(
    "nodes, launch, kwargs, error",
    [
        ({}, {}, {}, ValueError),
        ({"m": "x"}, {}, {}, TypeError),
        ({"m": {}}, "script", {}, TypeError),
        ({"m": {"when": object()}}, {}, {}, TypeError),
        ({"m": {"x": float("nan")}}, {}, {}, ValueError),
        ({"m": {}}, {}, {"run_dir": None}, TypeError),
    ],
)
def test_bad_input_is_refused(nodes, launch, kwargs, error):
    with pytest.raises(error):
        smoke_fingerprint(nodes, launch, **kwargs)


# ------------------------------------------------------------------------------------------- the decision

NOW = 1_764_640_000.0
FP = fingerprint(cluster())


def record_text(fp: str = FP, when: float = NOW - 600, **extra: Any) -> str:
    record = smoke_record(fp, when, {"ranks": 4, "nodes": 2, "backend": "gloo", "seconds": 14.2})
    record.update(extra)
    return json.dumps(record)


def due(record: Any, fp: str = FP, **kwargs: Any) -> Dict[str, Any]:
    return smoke_test_due(record, fp, NOW, **{"max_age": 86400, **kwargs})


def test_a_matching_young_record_skips_the_smoke_test():
    answer = due(record_text())
    assert answer["run"] is False
    assert answer["age"] == pytest.approx(600)
    assert "600 s ago" in answer["reason"]


def test_a_record_at_the_limit_still_counts():
    assert due(record_text(when=NOW - 86400))["run"] is False
    assert due(record_text(when=NOW))["run"] is False


@pytest.mark.parametrize("change", list(CHANGES.values()), ids=list(CHANGES))
def test_every_change_takes_the_full_path(change):
    live = cluster()
    change(live)
    answer = due(record_text(), fp=fingerprint(live))
    assert answer["run"] is True
    assert "cluster changed" in answer["reason"]


@pytest.mark.parametrize(
    "record, kwargs, reason",
    [
        (None, {}, "no record"),
        ("", {}, "no record"),
        ("  \n", {}, "no record"),
        (record_text(when=NOW - 86401), {}, "more than train_smoke_test_max_age"),
        (record_text(when=NOW - 120), {"max_age": 60}, "more than train_smoke_test_max_age (60 s)"),
        (record_text(when=NOW - 1), {"max_age": 0}, "more than train_smoke_test_max_age"),
        (record_text(when=NOW + 5), {}, "dated in the future"),
        (record_text(), {"force": True}, "train_smoke_test_force"),
        (record_text(), {"guarded": False}, "does not watch its first collective"),
        (record_text()[:-5], {}, "cannot be read"),
        ("[]", {}, "cannot be read"),
        ("null", {}, "cannot be read"),
        (json.dumps({"fingerprint": FP, "time": NOW}), {}, "cannot be read"),
        (record_text(version=2), {}, "cannot be read"),
        (record_text(time="yesterday"), {}, "cannot be read"),
        (record_text(time=True), {}, "cannot be read"),
        (record_text(time=None), {}, "cannot be read"),
        (record_text(fingerprint=None), {}, "cannot be read"),
        (record_text().replace(str(NOW - 600), "Infinity"), {}, "cannot be read"),
        (record_text().replace(FP, "0" * 64), {}, "cluster changed"),
        (record_text().replace(str(NOW - 600), str(NOW - 100)), {}, None),
    ],
    ids=[
        "absent",
        "empty",
        "blank",
        "stale",
        "stale-own-limit",
        "zero-max-age",
        "future",
        "forced",
        "unguarded-script",
        "truncated",
        "a-list",
        "null",
        "no-version",
        "other-version",
        "time-text",
        "time-bool",
        "time-null",
        "fingerprint-null",
        "time-infinite",
        "fingerprint-edited",
        "time-edited-still-young",
    ],
)
def test_every_doubt_takes_the_full_path_never_an_error(record, kwargs, reason):
    answer = due(record, **kwargs)
    if reason is None:  # an edit that leaves a well-formed, young record of the same cluster: as good as the original
        assert answer["run"] is False
    else:
        assert answer["run"] is True
        assert reason in answer["reason"]


def test_a_record_given_as_a_mapping_is_read_the_same():
    assert due(json.loads(record_text()))["run"] is False


@pytest.mark.parametrize(
    "fp, now, max_age",
    [("", NOW, 86400), (None, NOW, 86400), (FP, -1, 86400), (FP, NOW, -1), (FP, NOW, "a day"), (FP, True, 86400)],
)
def test_bad_decision_inputs_are_refused(fp, now, max_age):
    with pytest.raises(ValueError):
        smoke_test_due(record_text(), fp, now, max_age=max_age)


def test_the_record_holds_the_fingerprint_time_and_figures():
    record = smoke_record(FP, NOW, {"ranks": 4, "hosts": ["a", "b"]})
    assert record == {"version": 1, "fingerprint": FP, "time": NOW, "figures": {"ranks": 4, "hosts": ["a", "b"]}}
    assert json.loads(json.dumps(record)) == record


@pytest.mark.parametrize("fp, now", [("abc", NOW), (FP.upper(), NOW), (FP, float("nan")), (FP, "now"), (FP, None)])
def test_a_bad_record_is_never_written(fp, now):
    with pytest.raises(ValueError):
        smoke_record(fp, now)
