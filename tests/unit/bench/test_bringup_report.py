# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bring-up benchmark's summary and report: the 2026-11-30 run (measured before bench/bringup/ existed) gives
the same summary and the same bringup.md, byte for byte; partial and broken runs say what they have."""

from __future__ import annotations

import copy
import pathlib

import inventory_bench
import pytest
from bringup import report, summary

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"


def test_the_stored_run_summarises_as_it_did(bringup_report):
    again = summary.summarise(
        bringup_report["nodes"], bringup_report["measurements"], bringup_report["one_node_provision"] or {}
    )
    assert again == bringup_report["summary"]


def test_the_stored_run_renders_as_it_did(bringup_report):
    assert report.markdown(bringup_report) == (FIXTURES / "bringup-2026-11-30.md").read_text()


def test_the_stored_inventory_run_renders_as_it_did(inventory_report):
    assert inventory_bench.markdown(inventory_report) == (FIXTURES / "inventory-2026-11-30.md").read_text()


def provision(first, second=None, changed=(40, 0)):
    played = {"first": {"seconds": first, "changed": changed[0]}}
    if second is not None:
        played["second"] = {"seconds": second, "changed": changed[1]}
    return played


def test_a_run_that_broke_after_the_first_provision_gives_what_it_has():
    got = summary.summarise(3, [{"run": 1, "provision": provision(400.0)}], {})
    assert got == {
        "provision_seconds": {"runs": [400.0], "median": 400.0},
        "first_run_changed": [40],
        "targets": {},
    }


def test_ratios_are_of_medians_and_each_run():
    runs = [
        {"run": 1, "provision": provision(100.0, 5.0), "baseline": {"seconds": 400.0, "nodes": []}},
        {"run": 2, "provision": provision(300.0, 9.0), "baseline": {"seconds": 500.0, "nodes": []}},
        {"run": 3, "provision": provision(200.0, 30.0), "baseline": {"seconds": 600.0, "nodes": []}},
    ]
    got = summary.summarise(3, runs, {})
    assert got["provision_to_baseline"] == {"runs": [0.25, 0.6, 0.333], "of_medians": 0.4}
    assert got["targets"]["provision_vs_baseline"]["met"] is True
    assert got["second_to_first"] == 0.05  # median of 0.05, 0.03, 0.15
    assert got["targets"]["second_run_share"] == {
        "target": "<= 10% of the first run, 0 changed",
        "measured": 0.05,
        "met": True,
    }


@pytest.mark.parametrize(
    ("first", "second", "changed", "met"),
    [
        (100.0, 9.9, (40, 0), True),
        (100.0, 10.0, (40, 0), False),  # under 10%, not at it
        (100.0, 5.0, (40, 1), False),  # one change on the second run misses the target whatever the time
    ],
)
def test_the_second_run_target(first, second, changed, met):
    got = summary.summarise(1, [{"run": 1, "provision": provision(first, second, changed)}], {})
    assert got["targets"]["second_run_share"]["met"] is met


def train_row(nodes, overhead, first_on_cluster=False, samples=10.0):
    return {
        "nodes": nodes,
        "first_on_cluster": first_on_cluster,
        "launch_overhead_seconds": overhead,
        "samples_per_second": samples,
        "steps": 6,
        "epoch_seconds": [1.0, 3.0],
    }


def test_the_launch_overhead_is_judged_on_everyday_launches_only():
    rows = [train_row(2, 200.0, first_on_cluster=True), train_row(1, 30.0, samples=20.0), train_row(2, 14.9)]
    got = summary.summarise(2, [{"run": 1, "provision": provision(100.0), "train": rows}], {})
    assert got["first_launch_overhead_seconds"] == {"runs": [200.0], "median": 200.0}
    assert got["launch_overhead_seconds"] == {"runs": [14.9], "median": 14.9}
    assert got["targets"]["launch_overhead"] == {"target": "< 15 s on 2 nodes", "measured": 14.9, "met": True}
    assert [(r["nodes"], r["samples_per_second"], r["epoch_seconds"], r["label"]) for r in got["scaling"]] == [
        (1, 20.0, 2.0, "median of 1"),
        (2, 10.0, 2.0, "median of 2"),
    ]


def test_bytes_on_one_and_n_nodes_are_compared():
    measured = {"wheels": 3, "from_index_bytes": 10, "files": [{"wheel": "a.whl"}]}
    one_node = {"first": {"seconds": 50.0, "changed": 30}, "bytes": {**measured, "from_index_bytes": 11}}
    got = summary.summarise(3, [{"run": 1, "provision": {**provision(100.0), "bytes": measured}}], one_node)
    assert got["bytes"] == {"3": {"wheels": 3, "from_index_bytes": 10}, "1": {"wheels": 3, "from_index_bytes": 11}}
    assert got["bytes_equal"] is False
    assert got["provision_1_node_seconds"] == 50.0


def test_a_broken_run_and_what_was_skipped_are_in_the_report(bringup_report):
    broken = copy.deepcopy(bringup_report)
    broken["error"] = "train.yml failed (rc 2, log /tmp/x/train-1-3n.log):\n" + "x" * 1000
    broken["skipped"] = ["the sequential baseline (no provision/baseline ratio)", "train.yml (no launch overhead)"]
    text = report.markdown(broken)
    assert "**The run broke before it finished**" in text
    assert "x" * 500 not in text  # the error is cut short: a report is no log
    assert "Skipped in this run: the sequential baseline (no provision/baseline ratio); train.yml" in text
    assert text.endswith(".\n")


@pytest.mark.parametrize(("value", "money"), [(None, "-"), (97_400_000, "97.4 MB"), (0, "0.0 MB")])
def test_megabytes(value, money):
    assert report.mb(value) == money


@pytest.mark.parametrize(("value", "shown"), [(None, "-"), (131.07, "131.1 s")])
def test_seconds(value, shown):
    assert report.secs(value) == shown


@pytest.mark.parametrize(("nodes", "said"), [(1, "1 node"), (3, "3 nodes")])
def test_plural(nodes, said):
    assert summary.plural(nodes) == said
