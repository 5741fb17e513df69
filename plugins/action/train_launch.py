# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin amx.cluster.train_launch: train.yml's one-step launch on a cluster unchanged since its last full
launch, or a hand-over to the full path.

On the controller it hashes the launch's inputs (plugin_utils/launch_inputs.py). On the master, one call of the
launch check (module_utils/launch_check.py, sent without a module's wrapper by plugin_utils/node_bundle.py) reads
the plan the last full launch with these inputs left, probes every node in parallel over the cluster's SSH mesh
and, when every node is as it was, makes the new run's folders; then the job starts and is followed under
amx.cluster.train_job (a long poll), and its last answer carries the run's files, which land in
the controller's results folder with run.json. Any difference hands over to the full path, which runs every role
and gate with their own messages; this action never fails for a difference, only for a job that failed. A job that
failed removes the plan (launch_plan.plan_survives), so that the next launch takes the full path with its checks
instead of repeating the failure in one step.
"""

from __future__ import annotations

import base64
import io
import json
import os
import posixpath
import tarfile
import time
from typing import Any, Dict, Optional

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.amx.cluster.plugins.module_utils.launch_plan import plan_survives, run_record
from ansible_collections.amx.cluster.plugins.plugin_utils import node_bundle
from ansible_collections.amx.cluster.plugins.plugin_utils.launch_inputs import cluster_settings, forced, play_inputs

display = Display()

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# -e NAME=true asks for the full path: every role, every gate, the smoke test.
FULL_CHECK_SWITCHES = ["train_smoke_test_force", "node_stamp_force"]

ARGUMENT_SPEC: Dict[str, Any] = {
    "enabled": {"type": "bool", "default": True},
    "plan_dir": {"type": "str", "default": "/var/lib/amx-cluster/launch"},
    "run_id": {"type": "str", "default": ""},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def _say(self, text: str) -> None:
        display.display(f"one-step launch [{self._host}] {text}", stderr=True)

    def _hand_over(self, result: Dict[str, Any], reason: str) -> Dict[str, Any]:
        self._say(f"the full path runs: {reason}")
        result.update(launched=False, changed=False, reason=reason)
        return result

    def run(self, tmp: Optional[str] = None, task_vars: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        begun = time.monotonic()
        result = super().run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        task_vars = task_vars or {}
        self._host = str(task_vars.get("inventory_hostname", "master"))
        hosts = cluster_settings(task_vars, self._templar)
        inputs = play_inputs(task_vars, hosts, COLLECTION_ROOT)
        result["inputs"] = inputs
        if not args["enabled"]:
            return self._hand_over(result, "train_fast_launch is false")
        if self._task.check_mode:
            return self._hand_over(result, "check mode")
        switched = forced(hosts, FULL_CHECK_SWITCHES)
        if switched:
            return self._hand_over(result, f"a full check was asked for ({', '.join(switched)})")

        checking = time.monotonic()
        plan = self._check_plan({"inputs": inputs, "plan_dir": args["plan_dir"], "run_id": args["run_id"]}, task_vars)
        checked = time.monotonic() - checking
        if plan.get("failed"):
            raise AnsibleActionFail(plan.get("msg") or "amx.cluster.launch_plan failed")
        if not plan.get("ready"):
            return self._hand_over(result, plan.get("reason") or "the plan says no")
        self._say(f"run {plan['run_id']}: {plan['reason']}; smoke test skipped: {plan['smoke_reason']}")

        job = plan["job"]
        results_dir = posixpath.join(job["results_dir"], plan["run_id"])
        job_args = dict(
            job["args"],
            run_id=plan["run_id"],
            run_dir=plan["run_dir"],
            hint=f"The logs are fetched to {results_dir}/ (logs/job/rank-N.log); the exact command and environment "
            "are in launch.sh there",
            bundle=True,
        )
        try:
            done = self._train_job(job_args, task_vars, plan["user"]["name"])
        except Exception:
            self._forget_plan(inputs, args["plan_dir"], "the job could not be followed to its end", task_vars)
            raise
        self._settle_plan(done, inputs, args["plan_dir"], task_vars)
        unpacking = time.monotonic()
        bundle = done.pop("bundle", None)
        files = unpack(bundle, results_dir) if bundle else []
        metrics = read_json(os.path.join(results_dir, "metrics.json"))
        job_phases = done.setdefault("phases", {})
        job_phases["results"] = round((job_phases.get("results") or 0) + time.monotonic() - unpacking, 3)
        # The module's round trip less what it measured itself: the plan's part is the rest (Ansible's module
        # transfer and start, the plan and the smoke record read).
        phases = dict(plan.get("phases") or {})
        phases["plan"] = round(max(checked - sum(phases.values()), 0.0), 3)
        record = run_record(
            plan["record"],
            run_id=plan["run_id"],
            run_dir=plan["run_dir"],
            launch=plan["launch"],
            smoke={
                "skipped": plan["smoke_reason"],
                "onednn": (plan.get("smoke_figures") or {}).get("onednn"),
                "onednn_run": (plan.get("smoke_figures") or {}).get("run_id"),
            },
            single_node=None,
            job=done,
            metrics=metrics,
            timing={"phases": phases, "wall": round(time.monotonic() - begun, 3)},
        )
        os.makedirs(results_dir, exist_ok=True)
        with open(os.path.join(results_dir, "run.json"), "w", encoding="utf-8") as handle:
            handle.write(
                json.dumps(record, indent=4, sort_keys=True, separators=(",", ": "), ensure_ascii=False) + "\n"
            )
        failed = bool(done.get("job_failed", True))
        summary = "Run {} {} after {} (one step). AMX used: {}. Results: {}/ (run.json, {} files{}).".format(
            plan["run_id"],
            "FAILED" if failed else "finished",
            done.get("duration_human", "?"),
            record["amx"]["used"],
            results_dir,
            len(files),
            "" if bundle else "; " + (done.get("bundle_error") or "no files came back"),
        )
        self._say(summary)
        result.update(
            launched=True,
            changed=True,
            reason=plan["reason"],
            run_id=plan["run_id"],
            run_dir=plan["run_dir"],
            results_dir=results_dir,
            job={key: done.get(key) for key in ("rc", "duration", "duration_human", "last_progress", "job_failed")},
            msg=done.get("msg") if failed else summary,
        )
        if failed:
            result["failed"] = True
        return result

    def _check_plan(self, params: Dict[str, Any], task_vars: Dict[str, Any]) -> Dict[str, Any]:
        """The launch check (module_utils/launch_check.py) on the master in one round trip, as root, with the
        host's configured or discovered Python, else python3 (no discovery: a round trip of its own). No such Python,
        or one too old for the check, is a reason for the full path, not a failure."""
        try:
            return node_bundle.run(self, task_vars, "launch_check", "check", params, discover=False)
        except node_bundle.BundleError as exc:
            if exc.rc == 127:
                return {
                    "ready": False,
                    "reason": f"no such Python on {self._host} ({exc}): set ansible_python_interpreter",
                }
            if exc.too_old:
                return {"ready": False, "reason": f"on {self._host}, {exc}"}
            raise AnsibleActionFail(f"the one-step launch's check failed on {self._host}: {exc}") from None

    def _settle_plan(self, done: Any, inputs: str, plan_dir: str, task_vars: Dict[str, Any]) -> bool:
        """After the job: keep the plan for the next launch only when the job passed (plan_survives)."""
        keep, why = plan_survives(done)
        if not keep:
            self._forget_plan(inputs, plan_dir, why, task_vars)
        return keep

    def _forget_plan(self, inputs: str, plan_dir: str, why: str, task_vars: Dict[str, Any]) -> None:
        """Remove the plan of these inputs: the next launch takes the full path, whose checks say what is wrong."""
        removed = self._execute_module(
            module_name="amx.cluster.launch_plan",
            module_args={"state": "absent", "inputs": inputs, "plan_dir": plan_dir},
            task_vars=task_vars,
        )
        if removed.get("failed"):
            display.warning(f"one-step launch: could not remove the plan ({removed.get('msg')})")
            return
        self._say(f"{why}: the plan is removed, the next launch with these settings takes the full path")

    def _train_job(self, job_args: Dict[str, Any], task_vars: Dict[str, Any], user: str) -> Dict[str, Any]:
        """amx.cluster.train_job's action with these arguments, on this connection, as the training user."""
        task = self._task.copy()
        task.args = job_args
        action = self._shared_loader_obj.action_loader.get(
            "amx.cluster.train_job",
            task=task,
            connection=self._connection,
            play_context=self._play_context,
            loader=self._loader,
            templar=self._templar,
            shared_loader_obj=self._shared_loader_obj,
        )
        become = self._connection.become
        before = become.get_option("become_user") if become else None
        if become:
            become.set_option("become_user", user)
        try:
            return action.run(task_vars=task_vars)
        finally:
            if become:
                become.set_option("become_user", before)


def read_json(path: str) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            found = json.load(handle)
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def unpack(bundle: str, destination: str) -> list:
    """The run's files from train_job's last answer, into destination: regular files only, each inside it."""
    written = []
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(bundle)), mode="r:gz") as archive:
        for member in archive.getmembers():
            name = posixpath.normpath(member.name)
            if not member.isfile() or name.startswith(("/", "../")) or name == "..":
                continue
            path = os.path.join(destination, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            source = archive.extractfile(member)
            if source is None:
                continue
            with source, open(path, "wb") as handle:
                handle.write(source.read())
            written.append(name)
    return written
