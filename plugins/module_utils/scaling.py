# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Scaling report: how a training job's speed and cost change with the number of nodes.

Pure functions, standard library only (Python 3.8+), shared by the amx.cluster.scaling_report action
plugin and its tests:

- :func:`build_report` turns the measured runs of one job on several node counts into the report: per node
  count the samples per second, the time per epoch (measured, or projected from the samples per epoch), the
  speed-up over the smallest node count, the efficiency against linear scaling, and the cost per epoch.
- :func:`reference_report` is the same computation over the original recipe's published figures.
- :func:`render_markdown` renders a report (with the recipe's figures beside it) as Markdown.
- :func:`plot_series` gives the points the plot draws, so the plot only draws.

Speed-up and efficiency compare samples per second (every run has it; the time per epoch may be projected).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence

# On-demand list prices in USD per hour, Linux, region us-east-1, as written into the collection. They are
# list prices only: CHECK the current ones for your region (and any discount or savings plan you have) and
# override them with the ``prices`` option; an instance type missing here gets no cost.
DEFAULT_PRICES: Dict[str, float] = {
    "r7iz.metal-16xl": 5.952,
    "r7iz.16xlarge": 5.952,
    "m7i.48xlarge": 9.6768,
    "c7i.48xlarge": 8.568,
    "m8i.48xlarge": 10.16064,
    "c6i.16xlarge": 2.72,
}

# The original recipe's figures (DistilBERT on SQuAD, 1 epoch, bf16). It publishes times only; the
# samples per epoch below (the questions of SQuAD v1.1's training set) only turn them into rates and cancel
# out of the speed-up and the efficiency.
RECIPE: Dict[str, Any] = {
    "title": "DistilBERT on SQuAD, 1 epoch, bf16",
    "samples_per_epoch": 87599,
    "runs": [
        {"nodes": 1, "instance_type": "r7iz.metal-16xl", "epoch_seconds": 26 * 60.0},
        {"nodes": 4, "instance_type": "r7iz.metal-16xl", "epoch_seconds": 7 * 60.0 + 30.0},
    ],
    # The same job on one Ice Lake node (no AMX), for the cost comparison only.
    "comparison": [
        {"nodes": 1, "instance_type": "c6i.16xlarge", "epoch_seconds": 3 * 3600.0 + 30 * 60.0, "note": "no AMX"},
    ],
}

REQUIRED = ("nodes", "samples_per_second", "steps")
KNOWN = (*REQUIRED, "epoch_seconds", "samples_per_epoch", "instance_type", "label")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _positive_int(where: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}: {name} must be a whole number of at least 1, got {value!r}")
    return value


def _positive_number(where: str, name: str, value: Any) -> float:
    if not _is_number(value) or value <= 0:
        raise ValueError(f"{where}: {name} must be a number greater than 0, got {value!r}")
    return float(value)


def merge_prices(overrides: Optional[Mapping[str, Any]] = None) -> Dict[str, float]:
    """The default price table with ``overrides`` (instance type -> USD per hour) merged over it."""
    prices = dict(DEFAULT_PRICES)
    for instance_type, price in (overrides or {}).items():
        if not isinstance(instance_type, str) or not instance_type.strip():
            raise ValueError(f"prices: an instance type must be a non-empty string, got {instance_type!r}")
        prices[instance_type.strip()] = _positive_number("prices", f"the price of {instance_type}", price)
    return prices


def _check_run(index: int, run: Any) -> Dict[str, Any]:
    """One measurement, checked and normalised; ValueError names the run and the field."""
    if not isinstance(run, Mapping):
        raise ValueError(f"runs[{index}] must be a mapping with {', '.join(REQUIRED)}, got {run!r}")
    where = f"runs[{index}]" + (f" (nodes={run['nodes']!r})" if "nodes" in run else "")
    missing = [name for name in REQUIRED if run.get(name) is None]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)} (each run needs {', '.join(REQUIRED)})")
    unknown = sorted(str(name) for name in run if name not in KNOWN)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}; the fields are {', '.join(KNOWN)}")
    row: Dict[str, Any] = {
        "nodes": _positive_int(where, "nodes", run["nodes"]),
        "samples_per_second": _positive_number(where, "samples_per_second", run["samples_per_second"]),
        "steps": _positive_int(where, "steps", run["steps"]),
        "samples_per_epoch": None,
        "epoch_seconds": None,
        "epochs_measured": None,
        "instance_type": None,
        "label": None,
    }
    if run.get("samples_per_epoch") is not None:
        row["samples_per_epoch"] = _positive_int(where, "samples_per_epoch", run["samples_per_epoch"])
    epoch = run.get("epoch_seconds")
    if isinstance(epoch, (list, tuple)):
        # The training script times every epoch: a list means the mean of its epochs.
        if not epoch:
            raise ValueError(f"{where}: epoch_seconds is an empty list; give a number, a list of numbers or null")
        times = [_positive_number(where, "each of epoch_seconds", value) for value in epoch]
        row["epoch_seconds"] = sum(times) / len(times)
        row["epochs_measured"] = len(times)
    elif epoch is not None:
        row["epoch_seconds"] = _positive_number(where, "epoch_seconds", epoch)
        row["epochs_measured"] = 1
    for name in ("instance_type", "label"):
        value = run.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{where}: {name} must be a non-empty string or null, got {value!r}")
        row[name] = value.strip()
    return row


def epoch_cost(
    nodes: int, instance_type: Optional[str], epoch_seconds: Optional[float], prices: Mapping[str, float]
) -> Dict[str, Any]:
    """Cost of one epoch: nodes * USD per hour * hours per epoch; None with a note when it cannot be told."""
    if epoch_seconds is None:
        return {"price_per_hour": None, "cost_per_epoch": None, "cost_note": "no time per epoch"}
    if instance_type is None:
        return {"price_per_hour": None, "cost_per_epoch": None, "cost_note": "no instance type given"}
    price = prices.get(instance_type)
    if price is None:
        return {
            "price_per_hour": None,
            "cost_per_epoch": None,
            "cost_note": f"no price for {instance_type}: add it to prices",
        }
    return {
        "price_per_hour": price,
        "cost_per_epoch": round(nodes * price * epoch_seconds / 3600.0, 4),
        "cost_note": None,
    }


def _scale(rows: List[Dict[str, Any]], prices: Mapping[str, float]) -> List[Dict[str, Any]]:
    """Speed-up, efficiency, ideal time and cost of normalised rows (sorted by nodes, rates > 0)."""
    base = rows[0]
    out = []
    for row in rows:
        if row["epoch_seconds"] is not None:
            epoch_seconds, source = row["epoch_seconds"], "measured"
        elif row["samples_per_epoch"] is not None:
            epoch_seconds, source = row["samples_per_epoch"] / row["samples_per_second"], "projected"
        else:
            epoch_seconds, source = None, None
        scale = row["nodes"] / base["nodes"]
        speedup = row["samples_per_second"] / base["samples_per_second"]
        entry = dict(row)
        entry.update(
            {
                "samples_per_second": round(row["samples_per_second"], 3),
                "epoch_seconds": None if epoch_seconds is None else round(epoch_seconds, 3),
                "epoch_source": source,
                "ideal_samples_per_second": round(base["samples_per_second"] * scale, 3),
                "speedup": round(speedup, 4),
                "efficiency": round(speedup / scale, 4),
            }
        )
        entry.update(epoch_cost(row["nodes"], row["instance_type"], epoch_seconds, prices))
        out.append(entry)
    # The ideal time per epoch: the smallest node count's time, divided by the node ratio.
    base_time = out[0]["epoch_seconds"]
    for entry in out:
        entry["ideal_epoch_seconds"] = (
            None if base_time is None else round(base_time * base["nodes"] / entry["nodes"], 3)
        )
    return out


def reference_report(prices: Optional[Mapping[str, float]] = None) -> Dict[str, Any]:
    """The recipe's figures put through the same computation as the measured runs."""
    prices = DEFAULT_PRICES if prices is None else prices
    rows = []
    for run in RECIPE["runs"]:
        rate = RECIPE["samples_per_epoch"] / run["epoch_seconds"]
        rows.append(
            {
                "nodes": run["nodes"],
                "samples_per_second": rate,
                "steps": None,
                "samples_per_epoch": None,
                "epoch_seconds": run["epoch_seconds"],
                "epochs_measured": 1,
                "instance_type": run["instance_type"],
                "label": None,
            }
        )
    keep = ("nodes", "instance_type", "epoch_seconds", "ideal_epoch_seconds", "speedup", "efficiency")
    runs = [
        {key: entry[key] for key in (*keep, "price_per_hour", "cost_per_epoch", "cost_note")}
        for entry in _scale(rows, prices)
    ]
    comparison = []
    for run in RECIPE["comparison"]:
        entry = {key: run[key] for key in ("nodes", "instance_type", "epoch_seconds", "note")}
        entry.update(epoch_cost(run["nodes"], run["instance_type"], run["epoch_seconds"], prices))
        comparison.append(entry)
    return {"title": RECIPE["title"], "runs": runs, "comparison": comparison}


def build_report(
    runs: Sequence[Any],
    prices: Optional[Mapping[str, Any]] = None,
    title: str = "Scaling of the training job",
    amx: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The scaling report of ``runs`` (measurements of one job on different node counts).

    Each run: ``nodes`` (int), ``samples_per_second`` (float), ``steps`` (int), and optionally
    ``epoch_seconds`` (the measured time of an epoch, or a list of them: their mean), ``samples_per_epoch``
    (to project the time of an epoch when it was not measured), ``instance_type`` (for the cost) and
    ``label`` (a name for the run, such as its run id). ``prices`` (instance type -> USD per hour) are merged
    over :data:`DEFAULT_PRICES`. ``amx`` is the run record's ``amx`` (module_utils/onednn_verbose.py's
    ``run_kernels``: whether AMX did the bf16 matrix work, per node), kept as it is. Raises ValueError naming the
    run and the field on bad input.
    """
    if amx is not None and not isinstance(amx, Mapping):
        raise ValueError(f"amx must be the run record's amx mapping, got {type(amx).__name__}")
    if isinstance(runs, (str, bytes)) or not isinstance(runs, Sequence):
        raise ValueError(f"runs must be a list of measurements, got {type(runs).__name__}")
    if not runs:
        raise ValueError("runs is empty: give at least one measured run (nodes, samples_per_second, steps)")
    table = merge_prices(prices)
    rows = [_check_run(index, run) for index, run in enumerate(runs)]
    seen: Dict[int, int] = {}
    for index, row in enumerate(rows):
        if row["nodes"] in seen:
            raise ValueError(
                f"runs[{seen[row['nodes']]}] and runs[{index}] both have nodes={row['nodes']}: give one "
                "measurement per node count (the best or the mean of the repeats)"
            )
        seen[row["nodes"]] = index
    rows.sort(key=lambda row: row["nodes"])
    scaled = _scale(rows, table)

    notes: List[str] = []
    if len(scaled) == 1:
        notes.append("Only one node count was measured: speed-up and efficiency need at least two.")
    for entry in scaled:
        if entry["epoch_source"] == "projected":
            notes.append(
                f"{entry['nodes']} node(s): the time per epoch is projected "
                "(samples_per_epoch / samples_per_second), not measured."
            )
        elif entry["epoch_source"] is None:
            notes.append(
                f"{entry['nodes']} node(s): no time per epoch (give epoch_seconds or samples_per_epoch), so no cost."
            )
        elif entry["epochs_measured"] and entry["epochs_measured"] > 1:
            notes.append(f"{entry['nodes']} node(s): the time per epoch is the mean of {entry['epochs_measured']}.")
        if entry["cost_note"] and entry["epoch_source"] is not None:
            notes.append(f"{entry['nodes']} node(s): no cost, {entry['cost_note']}.")
    sizes = sorted({entry["samples_per_epoch"] for entry in scaled if entry["samples_per_epoch"] is not None})
    if len(sizes) > 1:
        notes.append(
            "The runs have different samples per epoch ({}): they may not be the same job.".format(
                ", ".join(str(size) for size in sizes)
            )
        )
    types = sorted({entry["instance_type"] for entry in scaled if entry["instance_type"] is not None})
    if len(types) > 1:
        notes.append(
            "The runs are on different instance types ({}): the speed-up mixes node speed with scaling.".format(
                ", ".join(types)
            )
        )
    used = sorted(
        {entry["instance_type"] for entry in scaled if entry["instance_type"] in table}
        | {run["instance_type"] for run in RECIPE["runs"] + RECIPE["comparison"] if run["instance_type"] in table}
    )
    return {
        "title": title,
        "base_nodes": scaled[0]["nodes"],
        "speedup_basis": "samples_per_second",
        "runs": scaled,
        "reference": reference_report(table),
        "prices": {instance_type: table[instance_type] for instance_type in used},
        "notes": notes,
        "amx": dict(amx) if amx else None,
    }


# ------------------------------------------------------------------------------------------ presentation


def format_duration(seconds: Optional[float]) -> str:
    """``450`` -> ``7 min 30 s``; ``12600`` -> ``3 h 30 min``; None -> ``-``."""
    if seconds is None:
        return "-"
    total = round(float(seconds))
    hours, minutes, secs = total // 3600, total % 3600 // 60, total % 60
    parts = []
    if hours:
        parts.append(f"{hours} h")
    if minutes:
        parts.append(f"{minutes} min")
    if secs or not parts:
        parts.append(f"{secs} s")
    return " ".join(parts)


def _money(value: Optional[float]) -> str:
    return "-" if value is None else f"${value:,.2f}"


def _percent(value: Optional[float]) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _times(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _table(header: Sequence[str], align: Sequence[str], rows: Sequence[Sequence[str]]) -> List[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def _amx_lines(amx: Optional[Mapping[str, Any]]) -> List[str]:
    """The line under the table that says whether AMX did the bf16 matrix work, and which kernel did on each node."""
    if not amx:
        return []
    nodes = amx.get("nodes") or {}
    kernels = "; ".join(
        "{}: {}".format(host, (record or {}).get("impl") or (record or {}).get("reason") or "?")
        for host, record in sorted(nodes.items())
    )
    source = f", measured by the smoke test of run {amx['measured_in']}" if amx.get("measured_in") else ""
    return ["", "AMX used: {} ({}{}).".format(amx.get("used", "unknown"), kernels or "no node measured", source)]


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as a Markdown document: the measured runs, the recipe's figures, notes and prices."""
    base = report["base_nodes"]
    lines = [f"# {report['title']}", ""]
    lines.append(
        f"Speed-up and efficiency compare samples per second with the smallest node count ({base}); the efficiency "
        f"is the speed-up over the linear one (nodes / {base}). Cost per epoch = nodes x USD per hour x hours per "
        "epoch, at the on-demand prices below."
    )
    lines.append("")
    rows = []
    for entry in report["runs"]:
        epoch = format_duration(entry["epoch_seconds"])
        if entry["epoch_source"] == "projected":
            epoch += " (projected)"
        rows.append(
            [
                str(entry["nodes"]),
                entry["label"] or "-",
                entry["instance_type"] or "-",
                str(entry["steps"]),
                f"{entry['samples_per_second']:,.1f}",
                f"{entry['ideal_samples_per_second']:,.1f}",
                epoch,
                format_duration(entry["ideal_epoch_seconds"]),
                _times(entry["speedup"]),
                _percent(entry["efficiency"]),
                _money(entry["cost_per_epoch"]),
            ]
        )
    lines += _table(
        [
            "Nodes",
            "Run",
            "Instance",
            "Steps",
            "Samples/s",
            "Linear samples/s",
            "Time per epoch",
            "Ideal time",
            "Speed-up",
            "Efficiency",
            "Cost per epoch",
        ],
        ["---:", "---", "---", "---:", "---:", "---:", "---", "---", "---:", "---:", "---:"],
        rows,
    )
    lines += _amx_lines(report.get("amx"))
    reference = report["reference"]
    lines += ["", f"## Reference: the original recipe ({reference['title']})", ""]
    rows = [
        [
            str(entry["nodes"]),
            entry["instance_type"],
            format_duration(entry["epoch_seconds"]),
            format_duration(entry["ideal_epoch_seconds"]),
            _times(entry["speedup"]),
            _percent(entry["efficiency"]),
            _money(entry["cost_per_epoch"]),
        ]
        for entry in reference["runs"]
    ]
    rows += [
        [
            str(entry["nodes"]),
            f"{entry['instance_type']} ({entry['note']})",
            format_duration(entry["epoch_seconds"]),
            "-",
            "-",
            "-",
            _money(entry["cost_per_epoch"]),
        ]
        for entry in reference["comparison"]
    ]
    lines += _table(
        ["Nodes", "Instance", "Time per epoch", "Ideal time", "Speed-up", "Efficiency", "Cost per epoch"],
        ["---:", "---", "---", "---", "---:", "---:", "---:"],
        rows,
    )
    if report["notes"]:
        lines += ["", "## Notes", ""]
        lines += [f"- {note}" for note in report["notes"]]
    lines += ["", "## Prices", ""]
    lines += _table(
        ["Instance", "USD per hour"],
        ["---", "---:"],
        [[instance_type, f"{price:.4f}"] for instance_type, price in sorted(report["prices"].items())],
    )
    lines += [
        "",
        "On-demand list prices (Linux, us-east-1) unless overridden with the `prices` option: check the current ones "
        "for your region and account.",
        "",
    ]
    return "\n".join(lines)


def plot_series(report: Mapping[str, Any]) -> Dict[str, Any]:
    """The points the plot draws: measured and linear samples/s (with the time per epoch), measured and reference
    efficiency (%)."""
    runs = report["runs"]
    reference = report["reference"]["runs"]
    nodes = [entry["nodes"] for entry in runs]
    return {
        "nodes": nodes,
        "samples_per_second": [entry["samples_per_second"] for entry in runs],
        "ideal_samples_per_second": [entry["ideal_samples_per_second"] for entry in runs],
        "efficiency_percent": [round(entry["efficiency"] * 100, 2) for entry in runs],
        "reference_nodes": [entry["nodes"] for entry in reference],
        "reference_efficiency_percent": [round(entry["efficiency"] * 100, 2) for entry in reference],
        "epoch_labels": [
            None
            if entry["epoch_seconds"] is None
            else format_duration(entry["epoch_seconds"])
            + (" / epoch\n(projected)" if entry["epoch_source"] == "projected" else " / epoch")
            for entry in runs
        ],
        "reference_label": "recipe: {}, {}".format(
            report["reference"]["title"].split(",")[0], reference[0]["instance_type"]
        ),
        "ticks": sorted(set(nodes) | {entry["nodes"] for entry in reference}),
    }
