# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin amx.cluster.scaling_report: the scaling report of a job's runs, written on the controller.

The numbers come from module_utils/scaling.py (one place for each computation); this plugin only checks
the options, draws the plot and writes ``scaling.json``, ``scaling.md`` and ``scaling.png`` into ``dest``
when their content differs from what is there. The PNG is drawn with matplotlib's Agg canvas (no pyplot, no
display, no global backend switch) and saved without the software metadata, so the same report gives the
same bytes and a second run reports no change. matplotlib is optional: without it the JSON and the
Markdown are written and the task warns.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any, Dict, List, Mapping, Optional

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.amx.cluster.plugins.module_utils.files import write_atomically
from ansible_collections.amx.cluster.plugins.module_utils.scaling import (
    build_report,
    plot_series,
    render_markdown,
)

DEFAULT_TITLE = "Scaling of the training job"
FILES = ("scaling.json", "scaling.md", "scaling.png")
FILE_MODE = 0o644

ARGUMENT_SPEC: Dict[str, Any] = {
    "runs": {
        "type": "list",
        "elements": "dict",
        "required": True,
        "options": {
            "nodes": {"type": "int", "required": True},
            "samples_per_second": {"type": "float", "required": True},
            "steps": {"type": "int", "required": True},
            "epoch_seconds": {"type": "raw"},
            "samples_per_epoch": {"type": "int"},
            "instance_type": {"type": "str"},
            "label": {"type": "str"},
        },
    },
    "dest": {"type": "path", "required": True},
    "prices": {"type": "dict", "default": {}},
    "title": {"type": "str", "default": DEFAULT_TITLE},
    "amx": {"type": "dict", "default": {}},
}

# Colours that stay apart for colour-blind readers (Okabe-Ito).
BLUE = "#0072B2"
ORANGE = "#D55E00"
GREY = "#7f7f7f"
# Value labels above a point, on a white ground so that lines behind them do not cross the digits.
LABEL: Dict[str, Any] = {
    "textcoords": "offset points",
    "xytext": (0, 10),
    "ha": "center",
    "va": "bottom",
    "fontsize": 9,
    "bbox": {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
}


def render_png(report: Mapping[str, Any]) -> bytes:
    """The two panels as PNG bytes; the same report gives the same bytes. ImportError without matplotlib."""
    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    series = plot_series(report)
    nodes, ticks = series["nodes"], series["ticks"]
    span = (min(ticks) - 0.4, max(ticks) + 0.4)
    with matplotlib.style.context("default"):
        figure = Figure(figsize=(11.0, 4.6), dpi=100)
        FigureCanvasAgg(figure)
        speed, efficiency = figure.subplots(1, 2)

        speed.plot(
            nodes,
            series["ideal_samples_per_second"],
            linestyle="--",
            color=GREY,
            linewidth=1.5,
            label=f"linear from {nodes[0]} node{'s' if nodes[0] > 1 else ''} (ideal)",
        )
        speed.plot(nodes, series["samples_per_second"], "o-", color=BLUE, linewidth=2, markersize=7, label="measured")
        for x, y, epoch in zip(nodes, series["samples_per_second"], series["epoch_labels"]):
            # Below and right of the point, where neither line runs (the linear ideal runs above the measured one).
            text = f"{y:,.1f}/s" + (f"\n{epoch}" if epoch else "")
            speed.annotate(text, (x, y), color=BLUE, **dict(LABEL, xytext=(9, -6), ha="left", va="top"))
        top = max(series["ideal_samples_per_second"] + series["samples_per_second"])
        speed.set_ylim(0, top * 1.25)
        speed.set_title("Throughput", fontsize=12)
        speed.set_ylabel("samples per second (whole job)")
        speed.legend(loc="upper left", frameon=False)

        efficiency.axhline(100, linestyle=":", color=GREY, linewidth=1.5, label="linear scaling (100%)")
        efficiency.plot(
            series["reference_nodes"],
            series["reference_efficiency_percent"],
            "s--",
            color=ORANGE,
            linewidth=1.5,
            markersize=9,  # larger than the measured points, so it shows around one at the same place
            label=series["reference_label"],
        )
        efficiency.plot(
            nodes, series["efficiency_percent"], "o-", color=BLUE, linewidth=2, markersize=7, label="measured"
        )
        for x, y in zip(series["reference_nodes"], series["reference_efficiency_percent"]):
            efficiency.annotate(f"{y:.1f}%", (x, y), color=ORANGE, **dict(LABEL, xytext=(0, -10), va="top"))
        for x, y in zip(nodes, series["efficiency_percent"]):
            efficiency.annotate(f"{y:.1f}%", (x, y), color=BLUE, **LABEL)
        highest = max(series["efficiency_percent"] + series["reference_efficiency_percent"])
        efficiency.set_ylim(0, max(120.0, highest * 1.15))
        efficiency.yaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:.0f}%"))
        base = nodes[0]
        efficiency.set_title(
            f"Efficiency against linear scaling from {base} node{'s' if base > 1 else ''}", fontsize=12
        )
        efficiency.set_ylabel("efficiency")
        efficiency.legend(loc="lower left", frameon=False, fontsize=9)

        # The throughput panel leaves room on the right of the last point for its label.
        speed.set_xlim(span[0], span[1] + 0.3 * (span[1] - span[0]))
        efficiency.set_xlim(*span)
        for axes in (speed, efficiency):
            axes.set_xlabel("nodes")
            axes.set_xticks(ticks)
            axes.grid(True, alpha=0.3)
            axes.spines["top"].set_visible(False)
            axes.spines["right"].set_visible(False)
        figure.suptitle(str(report["title"]), fontsize=14, fontweight="bold")
        figure.tight_layout()
        buffer = io.BytesIO()
        # No "Software" entry: the bytes depend on the report alone, not on the matplotlib version string.
        figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def _read(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write(path: str, content: bytes) -> None:
    write_atomically(path, content, mode=FILE_MODE, prefix=".scaling-")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp: Optional[str] = None, task_vars: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        dest = os.path.abspath(args["dest"])
        try:
            report = build_report(args["runs"], prices=args["prices"], title=args["title"], amx=args["amx"])
        except ValueError as error:
            raise AnsibleActionFail(f"scaling_report: {error}") from error

        paths = {name: os.path.join(dest, name) for name in FILES}
        content: Dict[str, bytes] = {
            "scaling.json": (json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"),
            "scaling.md": render_markdown(report).encode("utf-8"),
        }
        warnings: List[str] = []
        try:
            content["scaling.png"] = render_png(report)
        except ImportError as error:
            warnings.append(
                f"scaling_report: no plot, matplotlib cannot be imported on the controller ({error}): "
                "pip install matplotlib (into the Python that runs ansible-playbook); the report is scaling.json and "
                "scaling.md only"
            )

        if os.path.exists(dest) and not os.path.isdir(dest):
            raise AnsibleActionFail(f"scaling_report: dest {dest} exists and is not a folder")
        stale_png = False
        if "scaling.png" not in content and _read(paths["scaling.png"]) is not None:
            # A plot left from an earlier report that is no longer the one written: it would mislead.
            stale_png = _read(paths["scaling.json"]) != content["scaling.json"]
        to_write = [name for name in FILES if name in content and _read(paths[name]) != content[name]]

        if not self._task.check_mode:
            try:
                os.makedirs(dest, exist_ok=True)
                for name in to_write:
                    _write(paths[name], content[name])
                if stale_png:
                    os.unlink(paths["scaling.png"])
            except OSError as error:
                raise AnsibleActionFail(f"scaling_report: cannot write the report into {dest}: {error}") from error
        if stale_png:
            warnings.append(
                "scaling_report: {} {}, drawn for an earlier report".format(
                    "would remove" if self._task.check_mode else "removed", paths["scaling.png"]
                )
            )

        last = report["runs"][-1]
        summary = (
            f"{last['nodes']} nodes: {last['speedup']:.2f}x the samples/s of {report['base_nodes']}, "
            f"{last['efficiency'] * 100:.1f}% efficiency"
            if len(report["runs"]) > 1
            else f"{last['nodes']} node(s) only: nothing to compare"
        )
        verb = "would write" if self._task.check_mode else "wrote"
        result.update(
            {
                "changed": bool(to_write or stale_png),
                "report": report,
                "dest": dest,
                "files": {name: paths[name] for name in FILES if name in content},
                "written": to_write,
                "plotted": "scaling.png" in content,
                "msg": f"{summary}; {verb} {', '.join(to_write) or 'nothing (up to date)'} in {dest}",
            }
        )
        if warnings:
            result["warnings"] = warnings
        return result
