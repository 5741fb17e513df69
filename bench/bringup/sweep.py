# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The launch-overhead sweep (bench/launch_bench.py): how the everyday launch's overhead grows with the cluster.
The pure parts: the summary of the measured rows, launch.md, and the plot's data."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from .report import broke_lines, cut, machine_lines, path_name, secs
from .summary import plural, rounded_median

# The everyday launch's overhead at each cluster size it is judged at (issue 28: <= 2.0 s on 3 nodes, <= 3.5 s on 16).
SWEEP_TARGETS = {3: 2.0, 16: 3.5}
# run.json's timing.phases, in the launch's order.
PHASES = ("plan", "probe", "prepare", "job_start", "job", "sweep", "notice", "results")


def parse_sizes(text: str) -> List[int]:
    """'1,4,16' -> [1, 4, 16]: distinct node counts of 1 or more, in ascending order."""
    try:
        sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        sizes = []
    if not sizes or sizes[0] < 1:
        raise ValueError(f"--sizes is a comma-separated list of node counts of 1 or more, such as 1,4,16; not {text!r}")
    return sizes


def summarise_sweep(rows: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Per node count: the full launch's overhead, the everyday launches' (median, every run, how many in one step,
    the reasons of the others); the targets of SWEEP_TARGETS at the sizes measured."""
    sizes = sorted({row["nodes"] for row in rows})
    per_size = []
    targets: Dict[str, Any] = {}
    for size in sizes:
        full = [row for row in rows if row["nodes"] == size and row["kind"] == "full"]
        everyday = [row for row in rows if row["nodes"] == size and row["kind"] == "everyday"]
        overhead = [row["launch_overhead_seconds"] for row in everyday]
        entry = {
            "nodes": size,
            "full_overhead_seconds": rounded_median([row["launch_overhead_seconds"] for row in full]),
            "everyday_overhead_seconds": {"runs": overhead, "median": rounded_median(overhead)},
            "everyday_job_seconds": rounded_median([row["job_seconds"] for row in everyday]),
            "everyday_phases": {
                name: rounded_median([(row.get("phases") or {}).get(name) for row in everyday if row.get("phases")])
                for name in PHASES
            },
            "one_step": sum(1 for row in everyday if row.get("one_step")),
            "everyday_runs": len(everyday),
            "full_path": [
                {"run_id": row["run_id"], "reason": row.get("launch_reason")} for row in everyday if not row["one_step"]
            ],
        }
        per_size.append(entry)
        limit = SWEEP_TARGETS.get(size)
        measured = entry["everyday_overhead_seconds"]["median"]
        if limit is not None and measured is not None:
            targets[f"everyday_launch_overhead_{size}_nodes"] = {
                "target": f"<= {limit:.1f} s on {plural(size)}",
                "measured": measured,
                "met": measured <= limit,
            }
    return {"sizes": per_size, "targets": targets}


def plot_series(summary: Dict[str, Any]) -> Dict[str, List[Optional[float]]]:
    """The plot's lines: node counts, the everyday launches' median, lowest and highest overhead, the full launch's."""
    sizes = summary["sizes"]
    return {
        "nodes": [s["nodes"] for s in sizes],
        "everyday_median": [s["everyday_overhead_seconds"]["median"] for s in sizes],
        "everyday_low": [min(s["everyday_overhead_seconds"]["runs"], default=None) for s in sizes],
        "everyday_high": [max(s["everyday_overhead_seconds"]["runs"], default=None) for s in sizes],
        "full": [s["full_overhead_seconds"] for s in sizes],
    }


def plot(summary: Dict[str, Any], path: str, title: str) -> None:
    """launch.png: the everyday launch's overhead (median, with the lowest and highest run) and the full launch's,
    against the node count, with the targets."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    series = plot_series(summary)
    figure, axes = pyplot.subplots(figsize=(7, 4.2))
    nodes, median = series["nodes"], series["everyday_median"]
    low = [m - lo if m is not None and lo is not None else 0 for m, lo in zip(median, series["everyday_low"])]
    high = [hi - m if m is not None and hi is not None else 0 for m, hi in zip(median, series["everyday_high"])]
    axes.errorbar(nodes, median, yerr=[low, high], marker="o", capsize=4, label="everyday launch (one step), median")
    axes.plot(nodes, series["full"], marker="s", linestyle="--", label="full launch (every role and gate)")
    for size, limit in SWEEP_TARGETS.items():
        axes.plot([size], [limit], marker="v", color="red", linestyle="none")
        axes.annotate(f"target <= {limit:.1f} s", (size, limit), textcoords="offset points", xytext=(6, 4))
    axes.set_xscale("log", base=2)
    axes.set_xticks(nodes, [str(n) for n in nodes])
    axes.set_xlabel("nodes")
    axes.set_ylabel("train.yml wall time minus the job's (s)")
    axes.set_ylim(bottom=0)
    axes.set_title(title, fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)


def sweep_markdown(report: Dict[str, Any]) -> str:
    s = report["summary"]
    lines = [
        f"# Launch overhead by cluster size, {report['date']}",
        "",
        f"Command: `{report['command']}`  ",
        f"Nodes: {report['node_image']}. Sizes {', '.join(map(str, report['sizes']))}: the first N nodes of one "
        f"cluster of {report['sizes'][-1]}, {report['processes_per_node']} rank(s) per node. For every size, a full "
        f"launch, then {report['everyday_runs']} everyday launch(es) with its settings and a new run id. Overhead = "
        "train.yml's wall time minus the job's own time (run.json job.seconds). Plot: launch.png.",
        "",
        "| nodes | everyday launch, median | runs | one step | job (median) | full launch | target | met |",
        "| ---: | ---: | --- | ---: | ---: | ---: | --- | --- |",
    ]
    for size in s["sizes"]:
        target = s["targets"].get(f"everyday_launch_overhead_{size['nodes']}_nodes")
        everyday = size["everyday_overhead_seconds"]
        lines.append(
            f"| {size['nodes']} | {secs(everyday['median'])} | {', '.join(f'{v:.1f}' for v in everyday['runs'])} | "
            f"{size['one_step']} of {size['everyday_runs']} | {secs(size['everyday_job_seconds'])} | "
            f"{secs(size['full_overhead_seconds'])} | {target['target'] if target else ''} | "
            f"{'' if not target else 'yes' if target['met'] else 'NO'} |"
        )
    others = [(size["nodes"], f) for size in s["sizes"] for f in size["full_path"]]
    if others:
        lines += ["", "Everyday launches that took the full path, with the reason train.yml gave:", ""]
        lines += [f"- {nodes} nodes, {f['run_id']}: {cut(f['reason'])}" for nodes, f in others]
    lines += ["", "## The everyday launch's phases (run.json timing.phases, median seconds)", ""]
    lines += ["| nodes | " + " | ".join(PHASES) + " |", "| ---: |" + " ---: |" * len(PHASES)]
    for size in s["sizes"]:
        phases = size.get("everyday_phases") or {}
        figures = ["-" if phases.get(name) is None else f"{phases[name]:.2f}" for name in PHASES]
        lines.append(f"| {size['nodes']} | " + " | ".join(figures) + " |")
    lines += ["", "## Where the time goes (slowest tasks, the first launch of each kind at each size)", ""]
    for row in report["measurements"]:
        if row.get("first_of_kind"):
            tasks = "; ".join(f"{t['task']} {t['seconds']:.1f} s" for t in row["slowest_tasks"][:5])
            lines.append(f"- {plural(row['nodes'])}, {row['kind']} launch ({path_name(row)}): {tasks or '-'}")
    lines += ["", "## How it is measured", "", *[f"- {note}" for note in report["notes"]]]
    setup = report.get("setup") or {}
    if setup:
        lines += [
            "",
            f"Set-up, not part of any figure: the stack image in {secs(setup.get('image_seconds'))}, provision.yml "
            f"on the {plural(report['sizes'][-1])} in {secs(setup.get('provision_seconds'))} "
            f"({setup.get('provision_changed')} changed).",
        ]
    return "\n".join(lines + broke_lines(report) + machine_lines(report)) + "\n"
