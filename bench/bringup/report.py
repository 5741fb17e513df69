# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bring-up benchmark's report: bringup.md from the report's data, the notes on method, the scaling report."""

from __future__ import annotations

import json
import pathlib
import subprocess
from typing import Any, Dict, List, Optional, Sequence

import yaml
from benchlib.machine import describe_machine, load_average

from .playbooks import ansible_env, playbook
from .settings import PROCESSES_PER_NODE, TRAIN_EPOCHS
from .summary import plural, rounded_median


def mb(value: Optional[float]) -> str:
    return "-" if value is None else f"{value / 1e6:.1f} MB"


def secs(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1f} s"


def markdown(report: Dict[str, Any]) -> str:
    s = report["summary"]
    n = report["nodes"]
    cpus = report.get("node_cpus")
    unit = "CPU" if cpus == 1 else "CPUs"
    capped = [f"Every node capped at {cpus:g} {unit} (`docker run --cpus`).", ""] if cpus else []
    index = report.get("index")
    if index:
        capped += [
            f"Every wheel, torch included, from the benchmark's own package index on this machine "
            f"({index['wheels']} wheels, {mb(index['wheel_bytes'])}), at most {mb(index['rate_bytes_per_second'])}/s "
            "per client: the controller's pip for provision.yml, every node's pip for the baseline.",
            "",
        ]
    paced = report.get("controller_rate_bytes_per_second")
    if paced:
        capped += [
            f"Everything the controller sends each node over SSH, and gets back, at most {mb(paced)}/s each way per "
            "node (bench/bringup/controller_link.py).",
            "",
        ]
    lines = [
        f"# Bring-up benchmark, {report['date']}",
        "",
        f"Command: `{report['command']}`  ",
        f"{report['runs']} run(s) on {n} container node(s) made by tests/cluster/ (fresh containers for every "
        f"measurement), wheelhouse: {report['wheelhouse']}. Medians; every run's figure in bringup.json.",
        "",
        *capped,
        "| measurement | median | runs | target | met |",
        "| --- | ---: | --- | --- | --- |",
    ]

    def row(name: str, value: str, runs: Sequence[Any], target: str = "", met: Optional[bool] = None) -> None:
        shown = ", ".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in runs)
        lines.append(f"| {name} | {value} | {shown} | {target} | {'' if met is None else 'yes' if met else 'NO'} |")

    t = s["targets"]
    if "provision_seconds" in s:
        row(f"provision.yml, {plural(n)}", secs(s["provision_seconds"]["median"]), s["provision_seconds"]["runs"])
    if "baseline_seconds" in s:
        row(f"sequential baseline, {plural(n)}", secs(s["baseline_seconds"]["median"]), s["baseline_seconds"]["runs"])
    if "provision_to_baseline" in s:
        target = t["provision_vs_baseline"]
        ratio = s["provision_to_baseline"]
        row("provision / baseline", f"{ratio['of_medians']:.2f}x", ratio["runs"], target["target"], target["met"])
        if "spread" in ratio:
            row("provision / baseline, spread of the pairs", "{:.2f}x to {:.2f}x".format(*ratio["spread"]), [])
    if "index_sent_to_controller" in s:
        sent = s["index_sent_to_controller"]
        row("from the index, controller, a provision.yml", mb(sent["median"]), [mb(v) for v in sent["runs"]])
    if "controller_sent_bytes" in s:
        sent = s["controller_sent_bytes"]
        wheelhouses = s.get("controller_sent_wheelhouses")
        shown = mb(sent["median"]) + (f" ({wheelhouses:.2f}x the wheelhouse)" if wheelhouses is not None else "")
        row("out of the controller over SSH, a provision.yml", shown, [mb(v) for v in sent["runs"]])
    if "index_sent_to_baseline_node" in s:
        sent = s["index_sent_to_baseline_node"]
        row("from the index, a baseline node", mb(sent["median"]), [mb(v) for v in sent["runs"]])
    if "first_run_changed" in s:
        row("changed, first provision.yml", str(s["first_run_changed"][0]), s["first_run_changed"])
    if "second_run_seconds" in s:
        row("second provision.yml", secs(s["second_run_seconds"]["median"]), s["second_run_seconds"]["runs"])
        target = t["second_run_share"]
        row("second / first", f"{s['second_to_first']:.1%}", [], target["target"], target["met"])
        row("changed, second provision.yml", str(max(s["second_run_changed"])), s["second_run_changed"])
    # A report of a benchmark with the everyday launches (it records --everyday-runs) says which launch is which;
    # earlier reports render as they were written.
    everyday_kind = "everyday_runs" in report
    if "launch_overhead_seconds" in s:
        target = t["launch_overhead"]
        overhead = s["launch_overhead_seconds"]
        name = f"train.yml launch overhead, {plural(n)}" + (
            ", full launch (the last train.yml)" if everyday_kind else ""
        )
        row(name, secs(overhead["median"]), overhead["runs"], target["target"], target["met"])
    if "everyday_launch_overhead_seconds" in s:
        target = t["everyday_launch_overhead"]
        overhead = s["everyday_launch_overhead_seconds"]
        row(f"everyday train.yml launch overhead, {plural(n)} (same settings, new run id)", secs(overhead["median"]),
            overhead["runs"], target["target"], target["met"])  # fmt: skip
        one_step = s["everyday_one_step"]
        row("everyday train.yml, one-step launches", f"{one_step['one_step']} of {one_step['runs']}", [])
    if "first_launch_overhead_seconds" in s:
        first_launch = s["first_launch_overhead_seconds"]
        row("first train.yml on a fresh cluster, overhead", secs(first_launch["median"]), first_launch["runs"])
    if "provision_1_node_seconds" in s:
        row("provision.yml, 1 node", secs(s["provision_1_node_seconds"]), [])
    if "everyday_one_step" in s:
        lines += everyday_section(report)
    if "bytes" in s:
        lines += [
            "",
            "## Bytes the controller fetched for the wheelhouse",
            "",
            "| nodes | wheels | from the package index | from local disk | pages of the index read | the wheelhouse "
            "tar |",
            "| ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for nodes, b in sorted(s["bytes"].items(), key=lambda kv: int(kv[0])):
            lines.append(
                f"| {nodes} | {b['wheels']} | {mb(b['from_index_bytes'])} | {mb(b['from_local_disk_bytes'])} | "
                f"{b['index_pages_fetched']} | {mb(b['tar_bytes'])} |"
            )
        lines += [
            "",
            "Measured from the controller's pip log (`Added <wheel> from <url>`: "
            + ("http = the benchmark's package index" if index else "https = the package index")
            + ", file: = folders on this machine, i.e. pip's find-links and the file:// indexes of its configuration) "
            "and the sizes of the wheels in the wheelhouse tar, with an empty pip cache (PIP_CACHE_DIR) and an empty "
            "wheelhouse cache of the run's own (torch_stack_controller_cache). Index pages are counted, not weighed.",
        ]
        if "baseline_index_bytes_approx" in s:
            lines.append(
                f"The baseline's nodes downloaded {mb(rounded_median(s['baseline_index_bytes_approx']))} from the "
                f"package index in all ({plural(n)}, median over the runs, from pip's rounded `Downloading ... (size)` "
                "figures), " + ("torch included." if index else "besides the torch wheel copied to each.")
            )
    if "scaling" in s:
        lines += [
            "",
            "## Training throughput, same global work",
            "",
            f"qa_finetune on the tiny data set, {TRAIN_EPOCHS} epochs, {PROCESSES_PER_NODE} ranks per node, the same "
            "global batch on every node count (per-rank batch = global / ranks). The report of "
            "amx.cluster.scaling_report is in scaling.md / scaling.json / scaling.png.",
            "",
            "| nodes | samples/s (median) | runs | steps | efficiency | train.yml overhead (runs) |",
            "| ---: | ---: | --- | ---: | ---: | --- |",
        ]
        eff = {r["nodes"]: r.get("efficiency") for r in report.get("scaling_report", {}).get("runs", [])}
        for r in s["scaling"]:
            e = eff.get(r["nodes"])
            lines.append(
                f"| {r['nodes']} | {r['samples_per_second']} | {', '.join(map(str, r['samples_per_second_runs']))} "
                f"| {r['steps']} | {'-' if e is None else f'{e:.0%}'} | "
                f"{', '.join(f'{v:.1f}' for v in r['launch_overhead_runs'])} |"
            )
        lines += [
            "",
            "All containers share this machine's CPUs: more nodes do not bring more cores, so the efficiency here "
            "measures the cost of distributing the job, not the speed-up real nodes give.",
        ]
    first_run = report["measurements"][0]
    provision = first_run.get("provision", {})
    slow = [(f"{which} provision.yml", provision[which]) for which in ("first", "second") if which in provision]
    slow += [
        (f"{'first' if r.get('first_on_cluster') else 'last'} train.yml on {r['nodes']} node(s)"
         + ("" if r.get("first_on_cluster") or not everyday_kind else ", full launch"), r)
        for r in first_run.get("train", [])
        if r["nodes"] == n
    ]  # fmt: skip
    slow += [
        (f"first everyday train.yml on {r['nodes']} node(s), {path_name(r)}", r)
        for r in first_run.get("everyday", [])[:1]
    ]
    lines += ["", "## Where the time goes (run 1, slowest tasks by ansible.posix.profile_tasks)", ""]
    for name, played in slow:
        tasks = "; ".join(f"{task['task']} {task['seconds']:.1f} s" for task in played["slowest_tasks"][:6])
        lines.append(f"- {name}: {tasks or '-'}")
    lines += ["", "## How it is measured", "", *[f"- {note}" for note in report["notes"]]]
    lines += broke_lines(report)
    if report["skipped"]:
        lines += ["", "Skipped in this run: " + "; ".join(report["skipped"]) + "."]
    return "\n".join(lines + machine_lines(report)) + "\n"


def broke_lines(report: Dict[str, Any]) -> List[str]:
    """What a report says when its run broke before the end (nothing when it did not)."""
    if not report.get("error"):
        return []
    return ["", f"**The run broke before it finished**; the figures above are what it measured. Error: "
            f"`{report['error'][:500]}`"]  # fmt: skip


def machine_lines(report: Dict[str, Any]) -> List[str]:
    """A report's last line: the machine it ran on, and its load before and after."""
    m = report["machine"]
    return [
        "",
        f"Machine: {m['cpus']} CPUs, load average {m['load_before']} before and {m['load_after']} after, Python "
        f"{m['python']}, ansible-core {m['ansible_core']}, {m['docker']}.",
    ]


REASON_CHARS = 300  # a reason in the report is cut here: the playbook's log has it whole


def path_name(row: Dict[str, Any]) -> str:
    """The path a train.yml took, in a word or two."""
    one_step = row.get("one_step")
    return "path not said" if one_step is None else "one step" if one_step else "full path"


def cut(text: Optional[str], missing: str = "no reason given") -> str:
    """A reason on one line, cut short."""
    text = " ".join((text or missing).split())
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def everyday_section(report: Dict[str, Any]) -> List[str]:
    """The everyday launches: every one with its path and figures, then when and why the one-step path was not taken."""
    s = report["summary"]
    one_step = s["everyday_one_step"]
    rows = [r for run in report["measurements"] for r in run.get("everyday", [])]
    lines = [
        "",
        "## Everyday launches",
        "",
        f"train.yml again on the {plural(report['nodes'])}, {report.get('everyday_runs', '?')} time(s) per run "
        "right after "
        "the last train.yml of the scaling sequence (a full launch), with its settings: the same inventory file and "
        "extra vars, a new train_run_id each time, as a user starts the next job. The one-step launch starts the job "
        "from the master when the plan the full launch kept still holds.",
        "",
        "| run id | same settings as | path | train.yml | job | overhead |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['run_id']} | {r.get('settings_of') or '-'} | {path_name(r)} | {secs(r['playbook_seconds'])} | "
            f"{secs(r['job_seconds'])} | {secs(r['launch_overhead_seconds'])} |"
        )
    lines.append("")
    if one_step["full_path"]:
        lines.append(
            f"**The one-step path was not taken** in {len(one_step['full_path'])} of {one_step['runs']} everyday "
            "launch(es); the reason train.yml gave (its standard error: `one-step launch [<master>] the full path "
            "runs: <reason>`):"
        )
        unsaid = "train.yml's output names neither path (no `one-step launch [<master>]` line)"
        lines += [""] + [f"- {f['run_id']}: {cut(f['reason'], unsaid)}" for f in one_step["full_path"]]
    else:
        lines.append(f"Every everyday launch took the one-step path ({one_step['runs']} of {one_step['runs']}).")
    if one_step["plan_not_kept"]:
        lines += ["", "The full launch kept no plan for the next launch, in its words:", ""]
        lines += [f"- {f['run_id']}: {cut(f['reason'])}" for f in one_step["plan_not_kept"]]
    return lines


NOTES = [  # the notes every report has, after those on where the wheels come from
    "All containers share this machine's CPUs (and whatever else runs on it: see the load average below). "
    "provision.yml installs on all nodes at once, which on separate machines is where its lead over a "
    "node-by-node baseline comes from; here the parallel installs compete for the same cores, so the ratio shows "
    "the work each approach does rather than the wall time separate machines would see.",
    "Second run: provision.yml again on the same nodes; changed = sum over hosts of the PLAY RECAP.",
    "Launch overhead: train.yml's wall time minus the training job's own time (run.json job.seconds: mpirun start"
    " to end on the master, each rank's Python start and import included). A full launch includes the one-step "
    "launch's hand-over, the node roles' read-only pass, the gates, the collective smoke test (run.json "
    "smoke.seconds), fetching the results and keeping the plan; it is judged on the last train.yml on N nodes of "
    "the scaling sequence (the master's one-step plans are removed before it, so it takes the full path). The "
    "first one on a fresh cluster also installs MPICH and makes the tiny data set, and is shown apart.",
    "Everyday launch: right after that full launch, train.yml --everyday-runs times on the same N nodes with its "
    "settings (the same inventory file and extra vars, a new train_run_id each time). Its overhead is measured "
    "the same way, whichever path it takes; the path comes from train.yml's standard error (`one-step launch "
    "[<master>] run <id>: ...` or `... the full path runs: <reason>`), and the report gives the reason of every "
    "hand-over. Its target is judged on the median of all everyday launches of all runs.",
    "Scaling: train.yml on N, 1, .., N-1, then N nodes again of the provisioned cluster (for fewer than N, an MPI"
    " hostfile of the first nodes written by amx.cluster.mpi_hostfile, passed as train_hostfile), the same global"
    " batch and data every time; samples/s = the Trainer's train_samples_per_second (metrics.json), the median "
    "per node count goes to amx.cluster.scaling_report.",
]


def notes(index: bool) -> List[str]:
    """How it is measured, as the report says it; `index`: every wheel came from the benchmark's own index."""
    if index:
        sources = (
            "With a cold wheelhouse the controller downloads every wheel (an empty pip cache and wheelhouse folder of "
            "the run's own) from the benchmark's package index only (PIP_CONFIG_FILE=/dev/null: none of this "
            "machine's pip sources), torch included, as the baseline's nodes do."
        )
        baseline = (
            "Baseline: one node after the other over SSH as the sudo user: `apt-get update` and `apt-get install "
            "libgoogle-perftools-dev python3-venv`, `python3 -m venv`, `pip install` of the native profile's pins, "
            "torch included, from the benchmark's package index, then one import of the stack."
        )
    else:
        sources = (
            "With a cold wheelhouse the controller downloads every wheel (an empty pip cache and wheelhouse folder of "
            "the run's own), as the baseline's nodes do; the torch wheel comes from this machine's wheel folder, as "
            "the profile's torch==2.13.0 does for the controller's pip."
        )
        baseline = (
            "Baseline: one node after the other over SSH as the sudo user: scp the host's CA bundle and the same "
            "torch wheel (nodes cannot see the host's wheel folder; the role copies its wheelhouse to every node "
            "too), `apt-get update` and `apt-get install libgoogle-perftools-dev python3-venv`, `python3 -m venv`, "
            "`pip install <torch wheel> <the native profile's other pins>` from the package index with PIP_CERT, "
            "then one import of the stack."
        )
    model = (
        [
            "The package index: the wheels of one `pip download` of the profile's pins and of pip (made once, not "
            "timed), served over http from this machine by bench/bringup/package_index.py, every client address (each "
            "node, and the controller from this machine's own address) paced by a token bucket of its own, so each "
            "gets the stated rate as over a link of its own. What the model leaves out: the index's own latency and "
            "TLS, a shared uplink or a cloud's per-instance limits, the Debian mirror (apt still comes through this "
            "machine's one connection, for both sides), and the master's copy of the wheelhouse to the other nodes "
            "(the cluster's own network, here the bridge, not paced)."
        ]
        if index
        else []
    )
    return [
        "Every measurement starts on fresh containers (Debian bookworm, sshd, the image of "
        "tests/cluster/node-image.sh); baseline and provision alternate which goes first from run to run.",
        "provision.yml: `ansible-playbook -i <inventory> playbooks/provision.yml` with the fleet scenario's "
        f"group_vars (native profile, no PyTorch index, AMX not required), wall time of the command. {sources}",
        f"{baseline} It does less than the role (no manifest, no verification beyond the import, no SSH mesh or "
        "hostfile).",
        *model,
        *NOTES,
    ]


def machine(load_before: str) -> Dict[str, Any]:
    """The machine line of the report: CPUs, load before and after, Python, ansible-core, Docker."""
    docker = subprocess.run(["docker", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return {**describe_machine(load_before, load_average()), "docker": docker or "docker ?"}


def scaling_report(workdir: pathlib.Path, rows: List[Dict[str, Any]], dest: pathlib.Path, title: str) -> Dict:
    """Feed the medians to amx.cluster.scaling_report (scaling.json, .md, .png in dest); its report comes back."""
    runs = [
        {k: row[k] for k in ("nodes", "samples_per_second", "steps", "epoch_seconds", "label") if row[k] is not None}
        for row in rows
    ]
    play = workdir / "scaling.yml"
    play.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Write the scaling report",
                    "hosts": "localhost",
                    "connection": "local",
                    "gather_facts": False,
                    "tasks": [
                        {
                            "name": "Write scaling.json, scaling.md and scaling.png",
                            "amx.cluster.scaling_report": {"dest": str(dest), "title": title, "runs": runs},
                        }
                    ],
                }
            ],
            sort_keys=False,
        )
    )
    inventory = workdir / "localhost.yml"
    inventory.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    playbook(play, inventory, workdir / "scaling.log", ansible_env(workdir))
    return json.loads((dest / "scaling.json").read_text())
