# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Medians, ratios and targets of the runs' measurements (pure: the measurements in, the summary out)."""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Optional, Sequence

from benchlib.stats import median, ratio, ratio_of_medians

from .settings import (
    TARGET_EVERYDAY_LAUNCH_OVERHEAD,
    TARGET_LAUNCH_OVERHEAD,
    TARGET_PROVISION_RATIO,
    TARGET_RERUN_SHARE,
)

DIGITS = 3  # seconds and ratios in the summary, rounded


def rounded_median(values: Sequence[Optional[float]]) -> Optional[float]:
    return median(values, DIGITS)


def plural(nodes: int) -> str:
    return f"{nodes} node{'s' if nodes != 1 else ''}"


def summarise(nodes: int, runs: List[Dict[str, Any]], one_node: Dict[str, Any]) -> Dict[str, Any]:
    """Medians, ratios and targets of whatever was measured on clusters of `nodes` nodes (a run that broke half-way
    gives what it has); `one_node` is the separate 1-node provision, if any."""
    provisions = [r.get("provision", {}) for r in runs]
    first = [p["first"]["seconds"] for p in provisions if "first" in p]
    pairs = [(p["first"]["seconds"], p["second"]["seconds"]) for p in provisions if "second" in p]
    summary: Dict[str, Any] = {}
    targets: Dict[str, Any] = {}
    if first:
        summary["provision_seconds"] = {"runs": first, "median": rounded_median(first)}
        summary["first_run_changed"] = [p["first"]["changed"] for p in provisions if "first" in p]
    if pairs:
        second = [b for _a, b in pairs]
        summary["second_run_seconds"] = {"runs": second, "median": rounded_median(second)}
        summary["second_run_changed"] = [p["second"]["changed"] for p in provisions if "second" in p]
        summary["second_to_first"] = rounded_median([ratio(b, a) for a, b in pairs])
        targets["second_run_share"] = {
            "target": f"<= {TARGET_RERUN_SHARE:.0%} of the first run, 0 changed",
            "measured": summary["second_to_first"],
            "met": summary["second_to_first"] < TARGET_RERUN_SHARE and max(summary["second_run_changed"]) == 0,
        }
    base_pairs = [(r["provision"]["first"]["seconds"], r["baseline"]["seconds"]) for r in runs
                  if "baseline" in r and "first" in r.get("provision", {})]  # fmt: skip
    base = [r["baseline"]["seconds"] for r in runs if "baseline" in r]
    if base:
        summary["baseline_seconds"] = {"runs": base, "median": rounded_median(base)}
        summary["baseline_index_bytes_approx"] = [
            sum(n["index_bytes_approx"] for n in r["baseline"]["nodes"]) for r in runs if "baseline" in r
        ]
    if base_pairs:
        of_medians = ratio_of_medians([a for a, _b in base_pairs], [b for _a, b in base_pairs], DIGITS)
        each_run = [ratio(a, b, DIGITS) for a, b in base_pairs]
        summary["provision_to_baseline"] = {
            "runs": each_run,
            "of_medians": of_medians,
            "spread": [min(each_run), max(each_run)],
        }
        targets["provision_vs_baseline"] = {
            "target": f"<= {TARGET_PROVISION_RATIO}x the baseline's time",
            "measured": of_medians,
            "met": of_medians <= TARGET_PROVISION_RATIO,
        }
    controller_sent = [p["index_sent"]["controller"] for p in provisions if "index_sent" in p]
    node_sent = [n["index_sent"] for r in runs if "baseline" in r for n in r["baseline"]["nodes"] if "index_sent" in n]
    if controller_sent:
        summary["index_sent_to_controller"] = {"runs": controller_sent, "median": rounded_median(controller_sent)}
    if node_sent:
        summary["index_sent_to_baseline_node"] = {"runs": node_sent, "median": rounded_median(node_sent)}
    pushed = [sum(p["controller_sent"].values()) for p in provisions if "controller_sent" in p]
    if pushed:
        # Bytes out of the controller over SSH, and how many wheelhouses that is (the target: 1x at any size).
        summary["controller_sent_bytes"] = {"runs": pushed, "median": rounded_median(pushed)}
        wheelhouse = [p["bytes"]["from_index_bytes"] for p in provisions if "bytes" in p]
        if wheelhouse:
            summary["controller_sent_wheelhouses"] = ratio(median(pushed), median(wheelhouse), DIGITS)
    measured_bytes = {str(nodes): p["bytes"] for p in provisions if "bytes" in p}
    if "bytes" in one_node:
        measured_bytes["1"] = one_node["bytes"]
        summary["provision_1_node_seconds"] = one_node["first"]["seconds"]
    if measured_bytes:
        summary["bytes"] = {k: without_files(v) for k, v in measured_bytes.items()}
        if len(summary["bytes"]) > 1:
            summary["bytes_equal"] = len({b["from_index_bytes"] for b in summary["bytes"].values()}) == 1
    rows = [row for r in runs for row in r.get("train", [])]
    full = [row for row in rows if row["nodes"] == nodes and not row.get("first_on_cluster")]
    cold = [row["launch_overhead_seconds"] for row in rows if row.get("first_on_cluster")]
    if cold:
        summary["first_launch_overhead_seconds"] = {"runs": cold, "median": rounded_median(cold)}
    if full:
        overhead = [row["launch_overhead_seconds"] for row in full]
        summary["launch_overhead_seconds"] = {"runs": overhead, "median": rounded_median(overhead)}
        targets["launch_overhead"] = {
            "target": f"< {TARGET_LAUNCH_OVERHEAD:.0f} s on {plural(nodes)}",
            "measured": rounded_median(overhead),
            "met": rounded_median(overhead) < TARGET_LAUNCH_OVERHEAD,
        }
    everyday = [row for r in runs for row in r.get("everyday", [])]
    if everyday:
        summary.update(everyday_summary(everyday, full))
        targets["everyday_launch_overhead"] = {
            "target": f"< {TARGET_EVERYDAY_LAUNCH_OVERHEAD:.0f} s on {plural(nodes)}",
            "measured": summary["everyday_launch_overhead_seconds"]["median"],
            "met": summary["everyday_launch_overhead_seconds"]["median"] < TARGET_EVERYDAY_LAUNCH_OVERHEAD,
        }
    if rows:
        summary["scaling"] = scaling_rows(rows)
    summary["targets"] = targets
    return summary


def everyday_summary(everyday: List[Dict[str, Any]], full: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The everyday launches (the same settings as the full launch before them, a new run id): their overhead,
    whichever path each took, how many took the one-step path, and why the others did not (the hand-over's reason,
    and the full launch's when it kept no plan)."""
    overhead = [row["launch_overhead_seconds"] for row in everyday]
    return {
        "everyday_launch_overhead_seconds": {"runs": overhead, "median": rounded_median(overhead)},
        "everyday_one_step": {
            "runs": len(everyday),
            "one_step": sum(1 for row in everyday if row.get("one_step")),
            "full_path": [
                {"run_id": row["run_id"], "reason": row.get("launch_reason")}
                for row in everyday
                if not row.get("one_step")
            ],
            "plan_not_kept": [
                {"run_id": row["run_id"], "reason": row.get("plan_reason")}
                for row in full
                if row.get("plan_kept") is False
            ],
        },
    }


def scaling_rows(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One row per node count of the train.yml runs: the medians amx.cluster.scaling_report takes, and every run."""
    scaling = []
    for size in sorted({row["nodes"] for row in rows}):
        sized = [row for row in rows if row["nodes"] == size]
        epochs = [statistics.fmean(row["epoch_seconds"]) for row in sized if row["epoch_seconds"]]
        scaling.append(
            {
                "nodes": size,
                "samples_per_second": rounded_median([row["samples_per_second"] for row in sized]),
                "steps": sized[0]["steps"],
                "epoch_seconds": rounded_median(epochs),
                "label": f"median of {len(sized)}",
                "samples_per_second_runs": [row["samples_per_second"] for row in sized],
                "launch_overhead_runs": [row["launch_overhead_seconds"] for row in sized],
            }
        )
    return scaling


def without_files(data: Dict[str, Any]) -> Dict[str, Any]:
    """A wheelhouse's byte counts without its per-wheel list (which stays in the measurements)."""
    return {k: v for k, v in data.items() if k != "files"}
