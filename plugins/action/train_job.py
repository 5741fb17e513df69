# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin amx.cluster.train_job: start a launch script on the master detached, show its progress, report.

The run is owned by an agent on the master (module_utils/train_agent.py, written into the run's state
folder): a supervisor in a session of its own runs the script, enforces the time limit, notes which
process is which rank on every node, and once the launcher is gone ends whatever is left of the run on
every node. This plugin only starts it and watches it over the Ansible connection, printing a progress
line to stderr as the run goes (stdout belongs to the stdout callback: with the json callback it must stay
one JSON document). It watches with a long poll (the agent answers when there is something new, after
``long_poll`` seconds at the latest), or with ``long_poll`` 0 by a look every ``poll_interval`` seconds. A
dropped connection does not stop the run: the same task with the same run folder attaches to it again.
With ``bundle``, the last answer carries the run folder's files as a tar.gz (``bundle`` in the result).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import time
from typing import Any, Dict, List, Optional, Tuple

from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.amx.cluster.plugins.module_utils import train_agent
from ansible_collections.amx.cluster.plugins.module_utils.train_progress import (
    analyse_failure,
    failure_message,
    format_duration,
    format_progress,
    left_running,
    parse_log_progress,
    parse_progress,
    split_ranks,
)
from ansible_collections.amx.cluster.plugins.plugin_utils import node_bundle

display = Display()

ARGUMENT_SPEC: Dict[str, Any] = {
    "run_dir": {"type": "str", "required": True},
    "run_id": {"type": "str", "required": True},
    "script": {"type": "str", "required": True},
    "name": {"type": "str", "default": "job"},
    "label": {"type": "str"},
    "python": {"type": "str", "default": "python3"},
    "nodes": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {"alias": {"type": "str", "required": True}, "name": {"type": "str", "required": True}},
    },
    "processes_per_node": {"type": "int", "default": 1},
    "progress_file": {"type": "str"},
    "timeout": {"type": "int", "default": 0},
    "poll_interval": {"type": "float", "default": 5.0},
    "long_poll": {"type": "float", "default": 20.0},
    "heartbeat": {"type": "int", "default": 60},
    "rerun": {"type": "bool", "default": False},
    "retry_failed": {"type": "bool", "default": False},
    "env": {"type": "dict", "default": {}},
    "hint": {"type": "str", "default": ""},
    "ssh_options": {
        "type": "list",
        "elements": "str",
        "default": ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"],
    },
    "secret_env": {"type": "dict", "default": {}, "no_log": True},
    "connection_retries": {"type": "int", "default": 12},
    "output_lines": {"type": "int", "default": 200},
    "bundle": {"type": "bool", "default": False},
    "bundle_skip": {"type": "str", "default": r"^state/train_agent\.py$|(^|/)__pycache__/|^output/"},
    "bundle_limit": {"type": "int", "default": 64 * 1024 * 1024},
}


def next_look(
    poll_interval: float, long_poll: float, heartbeat: int, waited: float, failures: int
) -> Tuple[float, float]:
    """How the loop takes its next look at the job: (seconds to sleep first, ``wait`` for the agent's status).

    Without a long poll (``long_poll`` 0): sleep ``poll_interval`` (at most 1 s in the first 3 s of ``waited``),
    then ask for an answer at once. With one: ask at once, and the agent answers when something is new, after
    ``long_poll`` seconds at the latest, never later than ``heartbeat`` (when there is one) so that the heartbeat
    line keeps its pace. A retry after a failed look (``failures``) keeps the pace of ``poll_interval`` either way.
    """
    pause = min(poll_interval, 1.0) if waited < 3 else poll_interval
    if long_poll <= 0:
        return pause, 0.0
    return (pause if failures else 0.0), (min(long_poll, float(heartbeat)) if heartbeat > 0 else long_poll)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    # ------------------------------------------------------------------------- remote calls

    def _agent(self, command: str, cfg: Dict[str, Any], in_data: Optional[bytes] = None) -> Dict[str, Any]:
        argv = [self._python, self._agent_path, command, json.dumps(cfg, sort_keys=True)]
        if command == "start":
            argv[1:2] = self._install_agent()
        done = self._low_level_execute_command(
            " ".join(shlex.quote(part) for part in argv), sudoable=True, in_data=in_data
        )
        try:
            if done.get("rc") == 0:
                return node_bundle.answer(done.get("stdout", ""))
        except ValueError:
            pass
        raise AnsibleActionFail(
            "the run's agent on {} failed ({} {}, rc {}): {}".format(
                self._host, self._agent_path, command, done.get("rc"), (done.get("stderr") or "").strip()[-600:]
            )
        )

    def _install_agent(self) -> List[str]:
        """The arguments of the Python that writes the agent into the run's state folder, as the user the run
        belongs to, and then runs it: its start is one round trip."""
        with open(train_agent.__file__, "rb") as handle:
            source = handle.read()
        code = (
            "import base64, os, sys; os.umask(0o077); os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True); "
            "tmp = sys.argv[1] + '.tmp'; open(tmp, 'wb').write(base64.b64decode(sys.argv[2])); "
            "os.replace(tmp, sys.argv[1]); os.execv(sys.executable, [sys.executable, sys.argv[1], *sys.argv[3:]])"
        )
        return ["-c", code, self._agent_path, base64.b64encode(source).decode("ascii")]

    def _say(self, text: str) -> None:
        display.display(f"{self._label} [{self._host}] {text}", stderr=True)

    # ------------------------------------------------------------------------- the task

    def run(self, tmp: Optional[str] = None, task_vars: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        task_vars = task_vars or {}
        self._host = str(task_vars.get("inventory_hostname", "master"))
        self._label = args["label"] or args["name"]
        self._python = args["python"]
        run_dir = args["run_dir"].rstrip("/")
        if not os.path.isabs(run_dir):
            raise AnsibleActionFail(f"run_dir must be an absolute path on {self._host}, got {run_dir!r}")
        if args["long_poll"] < 0:
            raise AnsibleActionFail(
                f"long_poll for {self._host} must be 0 (a look every poll_interval seconds) or more seconds, "
                f"got {args['long_poll']}"
            )
        if args["bundle"]:
            try:
                re.compile(args["bundle_skip"])
            except re.error as error:
                raise AnsibleActionFail(
                    f"bundle_skip for {self._host} is not a regular expression ({error}): give one that finds the "
                    "run-folder-relative paths to leave out of the bundle, or an empty string for none"
                ) from None
            if args["bundle_limit"] <= 0:
                raise AnsibleActionFail(
                    f"bundle_limit for {self._host} must be a number of bytes above 0, got {args['bundle_limit']}"
                )
        script = args["script"] if os.path.isabs(args["script"]) else os.path.join(run_dir, args["script"])
        state_dir = f"{run_dir}/state/{args['name']}"
        logs_dir = f"{run_dir}/logs/{args['name']}"
        self._agent_path = f"{run_dir}/state/{train_agent.AGENT_NAME}"
        nodes = args["nodes"] or [{"alias": "localhost", "name": self._host}]
        hosts = {node["alias"]: node["name"] for node in nodes}
        hostfile_order = [node["alias"] for node in nodes]
        workers = [alias for alias in hostfile_order if alias != "localhost"]
        ppn = max(int(args["processes_per_node"]), 1)
        result.update({"run_dir": run_dir, "state_dir": state_dir, "logs_dir": logs_dir, "script": script})

        if self._task.check_mode:
            result.update(changed=True, msg=f"check mode: would start {script} on {self._host} (run {args['run_id']})")
            return result

        cfg: Dict[str, Any] = {
            "run_id": args["run_id"],
            "job": f"{args['run_id']}/{args['name']}",
            "run_dir": run_dir,
            "state_dir": state_dir,
            "logs_dir": logs_dir,
            "script": script,
            "timeout": args["timeout"],
            "workers": workers,
            "python": self._python,
            "ssh_options": args["ssh_options"],
            "rerun": args["rerun"],
            "retry_failed": args["retry_failed"],
            "env": {str(name): str(value) for name, value in (args["env"] or {}).items()},
        }
        if args["progress_file"]:
            progress_file = args["progress_file"]
            cfg["progress_file"] = (
                progress_file if os.path.isabs(progress_file) else os.path.join(run_dir, progress_file)
            )

        # The secret variables travel on the agent's standard input (not its command line, not a file).
        secrets = {str(name): str(value) for name, value in (args["secret_env"] or {}).items()}
        starting = time.monotonic()
        begun = self._agent(
            "start",
            dict(cfg, secrets_on_stdin=bool(secrets)),
            in_data=json.dumps(secrets).encode("utf-8") if secrets else None,
        )
        started_in = round(max(time.monotonic() - starting - float(begun.get("running") or 0), 0.0), 3)
        state = begun.get("state")
        if state == "error":
            raise AnsibleActionFail(f"{self._label} on {self._host}: {begun.get('error')}")
        if state == "started":
            self._say(
                "started {} (run {}, supervisor pid {}, time limit {}); it goes on if this connection drops: "
                "run the play again with the same run id to follow it".format(
                    script,
                    args["run_id"],
                    (begun.get("supervisor") or {}).get("pid"),
                    format_duration(args["timeout"]) if args["timeout"] else "none",
                )
            )
        elif state == "attached":
            since = time.time() - float((begun.get("supervisor") or {}).get("started") or time.time())
            self._say(f"attached to the run started {format_duration(since)} ago (run {args['run_id']})")
        result["state"] = state

        last: Optional[Dict[str, Any]] = None
        progress_count = 0
        last_said = time.time()
        last_line = ""
        failures = 0
        offsets = {"progress_offset": 0, "log_offset": 0}
        final_options: Dict[str, Any] = {"log_limit": 256 * 1024}
        if args["bundle"]:
            final_options["bundle"] = {"skip": args["bundle_skip"], "limit": args["bundle_limit"]}
        final: Optional[Dict[str, Any]] = None
        ended: Optional[Dict[str, Any]] = begun.get("result") if state == "finished_before" else None
        started_wait = time.time()
        following = time.monotonic()
        while ended is None:
            pause, wait = next_look(
                args["poll_interval"], args["long_poll"], args["heartbeat"], time.time() - started_wait, failures
            )
            if pause:
                time.sleep(pause)
            try:
                # With a long poll the call lasts up to `wait` seconds: the agent answers when something is new.
                status = self._agent(
                    "status", dict(cfg, **offsets, final=final_options, **({"wait": wait} if wait else {}))
                )
                failures = 0
            except (AnsibleConnectionFailure, AnsibleActionFail) as error:
                failures += 1
                if failures > args["connection_retries"]:
                    raise AnsibleActionFail(
                        f"{self._label}: lost touch with {self._host} ({error}); the run goes on there. Run the play "
                        f"again with the same run id ({args['run_id']}) to follow it, or look at {state_dir}/"
                    ) from error
                self._say(f"no answer from {self._host} ({failures}/{args['connection_retries']}): {error}")
                continue
            records: List[Dict[str, Any]] = []
            if "progress" in status:
                offsets["progress_offset"] = status["progress"]["offset"]
                records = parse_progress(status["progress"]["text"])
            log = status.get("log") or {}
            offsets["log_offset"] = log.get("offset", offsets["log_offset"])
            text = log.get("text", "")
            if text.strip():
                last_line = [line for line in text.replace("\r", "\n").splitlines() if line.strip()][-1]
            if not args["progress_file"] and text:
                guess = parse_log_progress(text, last)
                if guess and guess != last:
                    records = [guess]
            if records:
                last = records[-1]
                progress_count += len(records)
                self._say(format_progress(last))
                last_said = time.time()
            elif args["heartbeat"] and time.time() - last_said >= args["heartbeat"]:
                running = status.get("now", time.time()) - started_wait
                self._say(
                    f"running, {format_duration(running)}" + (f"; last output: {last_line[:200]}" if last_line else "")
                )
                last_said = time.time()
            if status.get("result") is not None:
                ended, final = status["result"], status.get("final")
            elif not status.get("alive"):
                # The supervisor writes its result before it exits: look once more, then call it lost.
                again = self._agent("status", dict(cfg, **offsets))
                ended = again.get("result") or {
                    "rc": None,
                    "error": f"the supervisor of the run is gone; see {state_dir}",
                }

        followed = time.monotonic() - following
        if final is None:
            final = self._agent("final", dict(cfg, **final_options))
        outcome = final.get("result") or ended
        log_tail = final.get("log_tail", "")
        lines = [line for line in log_tail.replace("\r", "\n").splitlines() if line.strip()]
        left = left_running(outcome.get("sweeps") or {}, hosts)
        result.update(
            {
                "changed": state != "finished_before",
                "rc": outcome.get("rc"),
                "signal": outcome.get("signal"),
                "timed_out": bool(outcome.get("timed_out")),
                "duration": outcome.get("duration"),
                "duration_human": format_duration(outcome.get("duration")),
                "started": outcome.get("started"),
                "ended": outcome.get("ended"),
                "last_progress": last,
                "progress_count": progress_count,
                "launcher_log": outcome.get("launcher_log"),
                "rank_logs": outcome.get("rank_logs", []),
                "left_running": left,
                "output_lines": lines[-args["output_lines"] :],
                "rank_lines": {key: value[-20:] for key, value in split_ranks(log_tail).items()},
                "attempts": train_agent.attempt_summary([*(final.get("attempts") or []), outcome]),
                # Seconds of each phase, as the code that ran it measured them (run.json's timing).
                "phases": {
                    "job_start": started_in,
                    "job": outcome.get("duration"),
                    "sweep": outcome.get("sweep_seconds"),
                    # From the job's end, its sweep done, until the controller had its result.
                    "notice": round(
                        max(followed - (outcome.get("duration") or 0) - (outcome.get("sweep_seconds") or 0), 0.0), 3
                    ),
                    "results": final.get("seconds"),
                },
            }
        )
        if args["bundle"]:
            result.update({key: final[key] for key in ("bundle", "bundle_error") if key in final})
        result["job_failed"] = True
        stuck = {node: pids for node, pids in left.items() if isinstance(pids, list)}
        unchecked = {node: why for node, why in left.items() if not isinstance(why, list)}
        if outcome.get("rc") == 0 and not outcome.get("timed_out") and not outcome.get("error"):
            if stuck:
                result["failed"] = True
                result["msg"] = f"{self._label} finished, but processes of run {args['run_id']} still run: {stuck}"
                return result
            result["job_failed"] = False
            self._say(
                f"finished in {format_duration(outcome.get('duration'))}"
                + (f"; last: {format_progress(last)}" if last else "")
            )
            if unchecked:
                display.warning(f"{self._label}: could not check for processes left on {unchecked}")
            return result

        rank_hosts = {
            rank: hostfile_order[min(rank // ppn, len(hostfile_order) - 1)] for rank in range(ppn * len(nodes))
        }
        analysis = analyse_failure(log_tail, rank_hosts, hosts)
        result["failure"] = analysis
        message = failure_message(self._label, self._host, outcome, analysis, run_dir, last, args["hint"])
        if stuck:
            message += f" Processes of the run still running: {stuck}."
        if unchecked:
            message += f" Could not check for processes left on: {unchecked}."
        if not left:
            message += " No process of the run is left on any node ({}).".format(
                ", ".join(hosts.get(alias, alias) for alias in (outcome.get("sweeps") or {"localhost": 1}))
            )
        if state == "finished_before":
            message += f" (This run ended earlier; set rerun to start run {args['run_id']} again.)"
        result["failed"] = True
        result["msg"] = message
        return result
