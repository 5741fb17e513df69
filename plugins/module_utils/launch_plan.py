# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one-step launch's plan: what a full launch that passed every gate leaves on the master, so that the next
launch with the same inputs on an unchanged cluster can start the job in one step.

The plan holds the launch as templates of the run (its folder and id replaced by marks, so that a new run id fills
them in), each node's probe and the fingerprint that probe gave when the full launch passed, the smoke test's
fingerprint and the parts of the run's record that do not change from run to run. Standard library only: the
module runs it on the master's Python (3.8+).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.amx.cluster.plugins.module_utils.node_probe import canonical_json, decide, fingerprint
from ansible_collections.amx.cluster.plugins.module_utils.onednn_verbose import run_kernels
from ansible_collections.amx.cluster.plugins.module_utils.smoke_record import RUN_DIR_MARK, RUN_ID_MARK

__all__ = [
    "PLAN_VERSION",
    "PlanError",
    "fill_run",
    "launch_problems",
    "node_changes",
    "parse_plan",
    "plan_digest",
    "plan_fresh",
    "plan_survives",
    "plan_text",
    "run_record",
    "template_run",
]

# 2: no maximum age (a plan holds while its fingerprints do); 3: node_probe's file states (mode and owner, links
# not followed) and {"unreadable": why}.
PLAN_VERSION = 3
# The only place a run's id is a value of its own: the environment variable that names the run to its ranks.
RUN_ID_KEYS = ("AMX_CLUSTER_RUN_ID",)
PLAN_KEYS = (
    "version",
    "inputs",
    "written",
    "user",
    "run_root",
    "source_run_dir",
    "run_files",
    "nodes",
    "smoke",
    "launch",
    "job",
    "record",
)


class PlanError(ValueError):
    """A plan that cannot be trusted or built, said so that a person can act on it."""


def template_run(value: Any, run_dir: str, run_id: str) -> Any:
    """A copy of value in which every path in the run's folder starts with a mark instead, and the run id's own
    variable holds a mark. Only whole paths are replaced: text that merely contains the folder stays as it is
    (launch_problems then refuses the plan, since the next run would still point at this run's folder)."""
    if not run_dir.startswith("/") or run_dir.endswith("/"):
        raise PlanError(f"the run folder must be an absolute path without a trailing '/', got {run_dir!r}")

    def walk(item: Any, key: Optional[str] = None) -> Any:
        if isinstance(item, Mapping):
            return {str(name): walk(inner, str(name)) for name, inner in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(inner) for inner in item]
        if isinstance(item, str):
            if key in RUN_ID_KEYS and item == run_id:
                return RUN_ID_MARK
            if item == run_dir or item.startswith(run_dir + "/"):
                return RUN_DIR_MARK + item[len(run_dir) :]
        return item

    return walk(value)


def fill_run(value: Any, run_dir: str, run_id: str) -> Any:
    """template_run's reverse: the marks replaced by another run's folder and id."""
    if isinstance(value, Mapping):
        return {name: fill_run(inner, run_dir, run_id) for name, inner in value.items()}
    if isinstance(value, list):
        return [fill_run(inner, run_dir, run_id) for inner in value]
    if isinstance(value, str):
        if value == RUN_ID_MARK:
            return run_id
        if value.startswith(RUN_DIR_MARK):
            return run_dir + value[len(RUN_DIR_MARK) :]
    return value


def launch_problems(rendered_now: str, rendered_again: str, rendered_elsewhere: str, run_dir: str) -> List[str]:
    """Why a launch template cannot be trusted for the next run: it must give this run's script back exactly
    (``rendered_again`` against ``rendered_now``), and filled with another folder (``rendered_elsewhere``) it must
    no longer name this run's folder."""
    problems = []
    if rendered_again != rendered_now:
        problems.append("the launch rendered from the plan is not the launch.sh this run ran")
    if run_dir in rendered_elsewhere:
        problems.append(f"the launch names the run's folder {run_dir} in a way the plan cannot replace")
    return problems


def plan_digest(plan: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json({key: plan.get(key) for key in PLAN_KEYS}).encode("utf-8")).hexdigest()


def plan_text(plan: Mapping[str, Any]) -> str:
    """The plan as written: its parts and their digest, so that a plan edited by hand is not trusted."""
    missing = [key for key in PLAN_KEYS if key not in plan]
    if missing:
        raise PlanError(f"the plan lacks {', '.join(missing)}")
    document = {key: plan[key] for key in PLAN_KEYS}
    document["digest"] = plan_digest(document)
    return json.dumps(document, sort_keys=True, indent=1) + "\n"


def parse_plan(text: str) -> Dict[str, Any]:
    """The plan written by plan_text, or PlanError saying why it is not one (never what it holds)."""
    try:
        plan = json.loads(text)
    except ValueError:
        raise PlanError("the plan is not JSON (damaged or edited)") from None
    if not isinstance(plan, dict):
        raise PlanError("the plan is not a JSON object")
    if plan.get("version") != PLAN_VERSION:
        raise PlanError(
            f"the plan is of another version ({plan.get('version')!r}, this collection writes {PLAN_VERSION})"
        )
    if plan.get("digest") != plan_digest(plan):
        raise PlanError("the plan's digest does not match its contents (edited or damaged)")
    return plan


def plan_fresh(plan: Mapping[str, Any], inputs: str, now: float) -> Tuple[bool, str]:
    """(usable, reason): the plan is of these inputs. Its age decides nothing (no clock decides alone): a plan
    holds as long as every node gives its fingerprint and the smoke test's record holds, which check_plan asks
    next; ``now`` only says, in the reason, how long ago the full launch passed."""
    if plan.get("inputs") != inputs:
        return False, "the plan was written for other inputs"
    written = plan.get("written")
    if isinstance(written, bool) or not isinstance(written, (int, float)) or not math.isfinite(written):
        return False, "the plan's written is not a number"
    return True, f"the last full launch with these settings passed {max(int(now - float(written)), 0)} s ago"


def plan_survives(job: Optional[Mapping[str, Any]]) -> Tuple[bool, str]:
    """(keep, reason): whether the plan may serve the next launch after a job it launched. A job that failed (a
    non-zero exit, a failed or unknown state, no answer) removes it: the next launch then takes the full path,
    whose gates and smoke test say why, instead of repeating the failure in one step."""
    if not isinstance(job, Mapping):
        return False, "the job gave no answer"
    if job.get("failed") or job.get("job_failed", True):
        rc = job.get("rc")
        return False, "the job failed" + (f" (exit code {rc})" if rc not in (None, 0) else "")
    if job.get("rc") != 0:
        return False, f"the job ended with exit code {job.get('rc')!r}"
    return True, "the job passed"


def node_changes(plan: Mapping[str, Any], answers: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """What keeps each node of ``plan`` from the one-step launch, as '<node>: <what>' sentences: no answer from its
    probe, a node record that does not hold (node_probe.decide: each node's record is the plan's inputs, its boot id
    and its fingerprint), a run folder of the new run that is already there, or processes of an earlier run."""
    found: List[str] = []
    for node in plan["nodes"]:
        name = node["name"]
        answer = answers.get(name)
        if answer is None or not answer.get("ok"):
            why = (answer or {}).get("error") or "no answer"
            found.append(f"{name}: the probe failed ({why})")
            continue
        live, recorded = answer["result"], node.get("fingerprint")
        record = {
            "inputs_hash": plan["inputs"],
            "boot_id": recorded.get("boot_id") if isinstance(recorded, Mapping) else None,
            "fingerprint": recorded,
        }
        holds, why = decide(record, plan["inputs"], fingerprint(live), str(live.get("boot_id") or ""))
        if not holds:
            found.append(f"{name}: {why}")
        for path in live.get("present") or []:
            found.append(f"{name}: {path} is there already (the full path follows, resumes or refuses that run)")
        processes = live.get("processes") or []
        if processes:
            shown = " | ".join(processes[:3]) + (f" and {len(processes) - 3} more" if len(processes) > 3 else "")
            found.append(f"{name}: processes of an earlier run are running ({shown})")
    return found


def run_record(
    static: Mapping[str, Any],
    run_id: str,
    run_dir: str,
    launch: Mapping[str, Any],
    smoke: Optional[Mapping[str, Any]],
    single_node: Optional[Mapping[str, Any]],
    job: Mapping[str, Any],
    metrics: Optional[Mapping[str, Any]],
    timing: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """A run's record (run.json on the controller), the same for the full path and the one-step launch.

    ``static`` is what does not change from run to run (the master, the nodes with their topology and versions, the
    layout, the dialect, the hostfile, MASTER_ADDR, the script, its file and arguments, the kind of data);
    ``launch`` the rendered launch (command, argv, env, genv, setvars); ``smoke`` the smoke test's figures (its
    ``onednn``: the JSON lines of the ranks that ran the bf16 probe, and ``onednn_run``: the run whose smoke test
    gave them, when it is an earlier one's record), which become ``amx`` (module_utils/onednn_verbose.py);
    ``job`` amx.cluster.train_job's result; ``metrics`` the run's metrics.json (empty when there is none);
    ``timing`` the launch's own phases before the job's (``phases``, seconds) and its ``wall`` time, when known."""
    metrics = dict(metrics or {})
    train = metrics.get("train")
    smoke = dict(smoke) if smoke else None
    probes = (smoke or {}).pop("onednn", None)
    measured_in = (smoke or {}).pop("onednn_run", None) or run_id
    return {
        "run_id": run_id,
        "succeeded": not job.get("job_failed", True),
        "master": static.get("master"),
        "run_dir": run_dir,
        "nodes": static.get("nodes"),
        "layout": static.get("layout"),
        "dialect": static.get("dialect"),
        "launch": {
            **{key: launch.get(key) for key in ("command", "argv", "env", "genv", "setvars")},
            "hostfile": static.get("hostfile"),
            "master_addr": static.get("master_addr"),
        },
        "script": static.get("script"),
        "script_file": static.get("script_file"),
        "script_args": static.get("script_args"),
        "data": static.get("data"),
        "smoke": smoke,
        # Which kernels did the bf16 matrix work on each node (the smoke test's probe), and so whether AMX ran.
        "amx": run_kernels(probes, measured_in if probes else None),
        "single_node": dict(single_node) if single_node else None,
        "job": {
            "rc": job.get("rc"),
            "seconds": job.get("duration"),
            "started": job.get("started"),
            "ended": job.get("ended"),
            "last_progress": job.get("last_progress"),
            "failure": job.get("failure"),
        },
        # Every attempt of the job: a failed one, kept in state/job/attempts/N/, then the one that went on from
        # its checkpoint.
        "attempts": list(job.get("attempts") or []),
        # Seconds of each phase, measured by the code that ran it: the launch's (plan, probe, prepare) then the
        # job's (job_start, job, sweep, notice, results); ``wall`` the whole launch's, when it is one step.
        "timing": {
            "phases": {**dict((timing or {}).get("phases") or {}), **dict(job.get("phases") or {})},
            "wall": (timing or {}).get("wall"),
        },
        "epoch_seconds": train.get("epoch_seconds") if isinstance(train, Mapping) else None,
        "metrics": {
            key: metrics.get(key)
            for key in ("eval_before", "eval_after", "train", "world_size", "ranks", "wall_seconds")
        },
    }
