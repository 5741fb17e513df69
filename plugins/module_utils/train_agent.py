# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The agent of a training run: started, watched and cleaned up on the nodes, for amx.cluster.train_job.

The action plugin amx.cluster.train_job writes this file into the run's state folder on the master
(``<run_dir>/state/train_agent.py``) and runs it there with the stack's Python. The supervisor also
sends it, on standard input, through the cluster's SSH mesh to the workers
(``ssh node1 PYTHON - sweep '{...}'``). So it is one self-contained file: the standard library only,
Python 3.8+, nothing imported from the collection.

Commands (``python3 train_agent.py COMMAND 'JSON'``, one JSON document out on stdout):

``start``   start the launch script detached from the caller: a forked supervisor in a session of its
            own (``setsid``, standard streams on /dev/null) runs ``bash SCRIPT`` in a further session
            (with ``secrets_on_stdin``, the job's secret variables, a JSON object read from standard input,
            added to its environment and written nowhere),
            so a dropped SSH connection or an interrupted Ansible leaves the run going. It never
            starts a run twice: it attaches to a live supervisor, or reports the result of a finished
            one (unless ``rerun``, or ``retry_failed`` and that one failed). An earlier attempt's result,
            launcher output, rank logs and progress file move to ``<state>/attempts/N/`` first: nothing
            of it is lost. ``env`` adds variables (not secret ones) to the launcher's environment.
``status``  is the supervisor alive; the lines appended to the progress file and to the launcher's
            output since the given offsets; the result once there is one. With ``wait`` (seconds) a long
            poll: it answers as soon as there is something new (new lines, the result, the supervisor
            gone), after ``wait`` seconds at the latest. With ``final`` (its options), the answer that
            carries the result carries ``final``'s answer too.
``final``   the result, the tail of the launcher's output and the results of the earlier attempts; with
            ``bundle`` (``{"skip": REGEX, "limit": BYTES}``), every file of the run folder as a tar.gz.
``scan``    the processes of the job on this node (pid, rank, command).
``sweep``   end every process of the job on this node (SIGTERM, then SIGKILL) and list what is left.

A process belongs to a job (one launch script of a run: ``<run id>/job``, ``<run id>/smoke``...) when
its environment holds ``AMX_CLUSTER_JOB=<run id>/<name>``: the supervisor sets it for the launcher, and
Hydra launchers hand the launcher's environment to every rank on every node. The agents themselves and
the caller's own ancestors (the shell ssh started) never match.

The supervisor waits for the launcher, enforces the overall time limit (it holds even when the
controller is gone), ends whatever is left of the run on every node once the launcher is gone (the
launcher's process group here, ``sweep`` on each worker through the mesh), splits the launcher's
output into one log per rank (``mpirun -prepend-rank`` prefixes each chunk with ``[rank] ``) and
writes ``result.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
import time
from typing import Any, Callable, Dict, List, Optional

# What only the master's commands use (processes, threads, tar) is imported where it is used: every worker runs this
# file for ``sweep`` after each job, which takes 29 to 37 ms without them and 42 to 64 ms with them.

AGENT_NAME = "train_agent.py"
JOB_VAR = "AMX_CLUSTER_JOB"
# The checkpoint an attempt resumes from (the launch script passes it on as --resume_from_checkpoint).
RESUME_VAR = "AMX_CLUSTER_RESUME_FROM"
# A JSON list of the job's earlier attempts (attempt_summary), for the training script's metrics.
ATTEMPTS_VAR = "AMX_CLUSTER_ATTEMPTS_FILE"
RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "RANK")
MARKER = re.compile(r"\[(\d+)\] ")
MAX_READ = 256 * 1024
# How often a long poll (status with ``wait``) looks again.
POLL_STEP = 0.2


# ----------------------------------------------------------------------------- small helpers


def read_json(path: str, default: Any = None) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return default


def write_json(path: str, data: Any) -> None:
    """Write atomically (a reader never sees half a document)."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, path)


def pid_alive(pid: Optional[int]) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def read_from(path: str, offset: int, limit: int = MAX_READ) -> Dict[str, Any]:
    """Bytes appended to ``path`` since ``offset`` (the last ``limit`` of them), as text and the new offset.

    A file shorter than the offset was truncated or replaced: read it from the start.
    """
    try:
        size = os.path.getsize(path)
    except OSError:
        return {"text": "", "offset": 0, "skipped": 0, "exists": False}
    if size < offset:
        offset = 0
    skipped = max(0, size - offset - limit)
    with open(path, "rb") as handle:
        handle.seek(offset + skipped)
        data = handle.read(size - offset - skipped)
    # Only whole lines: a line still being written is read next time.
    cut = data.rfind(b"\n") + 1
    data = data[:cut]
    return {
        "text": data.decode("utf-8", errors="replace"),
        "offset": offset + skipped + cut,
        "skipped": skipped,
        "exists": True,
    }


def tail(path: str, limit: int = MAX_READ) -> str:
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


# ----------------------------------------------------------------------------- processes of the run


def ancestors(pid: int) -> List[int]:
    found = []
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
                pid = int(handle.read().rsplit(")", 1)[-1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        found.append(pid)
    return found


def scan(job: str) -> List[Dict[str, Any]]:
    """The processes of a job on this node (``AMX_CLUSTER_JOB=<job>`` in their environment).

    The agents themselves and this process's own ancestors never match.
    """
    marker = f"{JOB_VAR}={job}".encode()
    me = os.getpid()
    skip = set([me, *ancestors(me)])
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in skip:
            continue
        pid = int(name)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
        except OSError:
            continue
        if not cmdline or AGENT_NAME.encode() in cmdline or marker not in environ:
            continue
        rank = None
        for var in RANK_VARS:
            for entry in environ:
                if entry.startswith(var.encode() + b"=") and entry[len(var) + 1 :].isdigit():
                    rank = int(entry[len(var) + 1 :])
                    break
            if rank is not None:
                break
        command = " ".join(part.decode("utf-8", "replace") for part in cmdline.split(b"\0") if part)
        found.append({"pid": pid, "rank": rank, "command": command[:300]})
    return sorted(found, key=lambda item: item["pid"])


def sweep(job: str, grace: float = 5.0) -> Dict[str, Any]:
    """End every process of the run on this node: SIGTERM, up to ``grace`` seconds, then SIGKILL."""
    found = scan(job)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for item in scan(job):
            with contextlib.suppress(OSError):
                os.kill(item["pid"], sig)
        deadline = time.time() + (grace if sig == signal.SIGTERM else 3.0)
        while time.time() < deadline and scan(job):
            time.sleep(0.2)
        if not scan(job):
            break
    left = scan(job)
    return {"found": [item["pid"] for item in found], "left": left}


def sweep_cluster(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """``sweep`` on this node and on every worker at once: one ssh per worker, all in flight together, so the
    clean-up after a job takes one worker's time, not the sum of them."""
    import concurrent.futures

    workers = list(cfg.get("workers") or [])
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(64, len(workers) + 1)) as pool:
        pending = {"localhost": pool.submit(sweep, cfg["job"])}
        for alias in workers:
            pending[alias] = pool.submit(remote, alias, "sweep", cfg, {"job": cfg["job"]}, 60)
        return {alias: future.result() for alias, future in pending.items()}


def kill_group(pgid: int, grace: float = 5.0, reap: Optional[Callable[[], Any]] = None) -> None:
    """End a process group: SIGTERM, then SIGKILL for whatever is still in it after ``grace`` seconds. ``reap``
    collects the group's leader when it is this process's child (Popen.poll): unreaped, its zombie would count
    as a member until the grace ran out."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except OSError:
            return
        deadline = time.time() + grace
        while time.time() < deadline:
            if reap is not None:
                reap()
            try:
                os.killpg(pgid, 0)
            except OSError:
                return
            time.sleep(0.2)


def remote_argv(alias: str, command: str, cfg: Dict[str, Any], payload: Dict[str, Any]) -> List[str]:
    import shlex

    argv = ["ssh", *cfg.get("ssh_options", []), alias]
    argv.append(
        " ".join(shlex.quote(part) for part in [cfg.get("python", "python3"), "-", command, json.dumps(payload)])
    )
    return argv


def remote(alias: str, command: str, cfg: Dict[str, Any], payload: Dict[str, Any], timeout: float = 60.0) -> Any:
    """Run this agent's ``command`` on a worker through the mesh (``ssh ALIAS PYTHON - COMMAND JSON``)."""
    import subprocess

    argv = remote_argv(alias, command, cfg, payload)
    try:
        with open(os.path.abspath(__file__), "rb") as source:
            done = subprocess.run(argv, stdin=source, capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"error": f"ssh {alias}: {error}"}
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        return {
            "error": "ssh {} exited {}: {}".format(
                alias, done.returncode, done.stderr.decode("utf-8", "replace")[-400:]
            )
        }


# ----------------------------------------------------------------------------- per-rank logs


def split_ranks(text: str) -> Dict[str, List[str]]:
    """Split ``mpirun -prepend-rank`` output into lines per rank (``rank-N``) and the launcher's own lines.

    Hydra prefixes every chunk a rank writes, not every line, so one line of the combined output can hold
    several chunks (``[1] hello[1]  [1] 1``), even of different ranks. A chunk without a newline is kept
    until the same rank finishes the line. Lines that start without a prefix are the launcher's.
    """
    out: Dict[str, List[str]] = {}
    pending: Dict[str, str] = {}
    for raw in text.replace("\r\n", "\n").split("\n"):
        if not raw:
            continue
        if not MARKER.match(raw):
            out.setdefault("launcher", []).append(raw)
            continue
        pieces = MARKER.split(raw)[1:]  # rank, text, rank, text, ...
        chunks = [(f"rank-{int(pieces[i])}", pieces[i + 1]) for i in range(0, len(pieces), 2)]
        for index, (key, chunk) in enumerate(chunks):
            pending[key] = pending.get(key, "") + chunk
            if index == len(chunks) - 1:
                for line in pending.pop(key).split("\r"):
                    if line.strip():
                        out.setdefault(key, []).append(line)
    for key, rest in pending.items():
        if rest.strip():
            out.setdefault(key, []).append(rest)
    return out


def write_rank_logs(log_path: str, logs_dir: str) -> List[str]:
    try:
        with open(log_path, encoding="utf-8", errors="replace", newline="") as handle:
            parts = split_ranks(handle.read())
    except OSError:
        return []
    os.makedirs(logs_dir, exist_ok=True)
    written = []
    for key in sorted(parts):
        path = os.path.join(logs_dir, f"{key}.log")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("\n".join(parts[key]) + "\n")
        written.append(path)
    return written


# ----------------------------------------------------------------------------- the supervisor


def paths(cfg: Dict[str, Any]) -> Dict[str, str]:
    state = cfg["state_dir"]
    return {
        "supervisor": os.path.join(state, "supervisor.json"),
        "result": os.path.join(state, "result.json"),
        "log": os.path.join(state, "launcher.log"),
        "attempts": os.path.join(state, "attempts"),
    }


def earlier_attempts(cfg: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The results of the job's earlier attempts, oldest first (each with the folder it was kept in)."""
    folder = paths(cfg)["attempts"]
    try:
        numbers = sorted(int(name) for name in os.listdir(folder) if name.isdigit())
    except OSError:
        return []
    found = []
    for number in numbers:
        result = read_json(os.path.join(folder, str(number), "result.json"), {}) or {}
        found.append(dict(result, attempt=number, kept_in=os.path.join(folder, str(number))))
    return found


def keep_attempt(cfg: Dict[str, Any]) -> str:
    """Move what the job's last attempt left (result, launcher output, rank logs, progress file) into
    ``attempts/N/`` of its state folder, N counting from 1, and answer with that folder."""
    files = paths(cfg)
    number = len(earlier_attempts(cfg)) + 1
    kept = os.path.join(files["attempts"], str(number))
    os.makedirs(os.path.join(kept, "logs"), exist_ok=True)
    moves = [(files["result"], "result.json"), (files["log"], "launcher.log")]
    if cfg.get("progress_file"):
        moves.append((cfg["progress_file"], os.path.basename(cfg["progress_file"])))
    if cfg.get("logs_dir") and os.path.isdir(cfg["logs_dir"]):
        moves.extend(
            (os.path.join(cfg["logs_dir"], name), os.path.join("logs", name))
            for name in sorted(os.listdir(cfg["logs_dir"]))
        )
    for source, name in moves:
        if os.path.isfile(source):
            os.replace(source, os.path.join(kept, name))
    return kept


def attempt_summary(results: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Attempts of a job (their results, oldest first) as the records keep them: number, return code, signal,
    whether it timed out, times, the checkpoint it resumed from, and the folder of an earlier one's files."""
    return [
        {
            "attempt": number,
            "rc": result.get("rc"),
            "signal": result.get("signal"),
            "timed_out": bool(result.get("timed_out")),
            "started": result.get("started"),
            "ended": result.get("ended"),
            "seconds": result.get("duration"),
            "resumed_from": (result.get("env") or {}).get(RESUME_VAR) or None,
            "kept_in": result.get("kept_in"),
        }
        for number, result in enumerate(results, start=1)
    ]


def failed(result: Dict[str, Any]) -> bool:
    return result.get("rc") != 0 or bool(result.get("timed_out"))


def supervisor_alive(cfg: Dict[str, Any]) -> bool:
    info = read_json(paths(cfg)["supervisor"], {}) or {}
    pid = info.get("pid")
    if not pid_alive(pid):
        return False
    try:
        with open(f"/proc/{int(pid)}/cmdline", "rb") as handle:
            return AGENT_NAME.encode() in handle.read()
    except OSError:
        return False


def read_secrets(stream: Any) -> Dict[str, str]:
    """The secret variables of a job, as one JSON object on `stream` (the agent's standard input): never on the
    command line (visible to every user in ps) nor in a file."""
    data = json.loads(stream.read() or "{}")
    if not isinstance(data, dict):
        raise ValueError("the secret variables must be a JSON object")
    return {str(name): str(value) for name, value in data.items()}


def supervise(cfg: Dict[str, Any], secrets: Optional[Dict[str, str]] = None) -> int:
    import subprocess

    files = paths(cfg)
    started = time.time()
    info: Dict[str, Any] = {"pid": os.getpid(), "started": started, "script": cfg["script"]}
    write_json(files["supervisor"], info)
    timeout = float(cfg.get("timeout") or 0)
    env = dict(os.environ)
    env.update({str(name): str(value) for name, value in (cfg.get("env") or {}).items()})
    # Secret variables reach the launcher (and through it every rank) in its environment only.
    env.update(secrets or {})
    env[JOB_VAR] = cfg["job"]
    env[ATTEMPTS_VAR] = files["attempts"] + ".json"
    write_json(env[ATTEMPTS_VAR], attempt_summary(earlier_attempts(cfg)))
    with open(files["log"], "ab") as log:
        proc = subprocess.Popen(
            ["/bin/bash", cfg["script"]],
            cwd=cfg["run_dir"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    info["launcher_pid"] = proc.pid
    write_json(files["supervisor"], info)

    timed_out = False
    rc: Optional[int] = None
    while rc is None:
        try:
            rc = proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            if timeout and time.time() - started > timeout:
                timed_out = True
                kill_group(proc.pid, reap=proc.poll)
                rc = proc.wait()
    ended = time.time()

    # Whatever is left of the run: the launcher's process group here, then the run's processes on every node.
    kill_group(proc.pid, grace=3.0)
    sweeps = sweep_cluster(cfg)
    rank_logs = write_rank_logs(files["log"], cfg["logs_dir"]) if cfg.get("logs_dir") else []
    swept = time.time()
    result = {
        "rc": rc,
        "signal": abs(rc) if (rc or 0) < 0 else None,
        "timed_out": timed_out,
        "timeout": timeout,
        "started": started,
        "ended": ended,
        "duration": round(ended - started, 3),
        # The clean-up after the launcher: its process group, the sweep on every node, the per-rank logs.
        "sweep_seconds": round(swept - ended, 3),
        "sweeps": sweeps,
        "rank_logs": rank_logs,
        "launcher_log": files["log"],
        "env": cfg.get("env") or {},
    }
    write_json(files["result"], result)
    return 0


# ----------------------------------------------------------------------------- commands


def start(cfg: Dict[str, Any], secrets: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    files = paths(cfg)
    os.makedirs(cfg["state_dir"], exist_ok=True)
    if supervisor_alive(cfg):
        return {"state": "attached", "supervisor": read_json(files["supervisor"], {})}
    previous = read_json(files["result"])
    retry = previous is not None and bool(cfg.get("retry_failed")) and failed(previous)
    if previous is not None and not cfg.get("rerun") and not retry:
        return {"state": "finished_before", "result": previous}
    if not os.path.isfile(cfg["script"]):
        return {"state": "error", "error": "no launch script at {}".format(cfg["script"])}
    if retry:
        keep_attempt(cfg)
    for name in ("result", "log", "supervisor"):
        with contextlib.suppress(OSError):
            os.remove(files[name])
    if cfg.get("logs_dir"):
        try:
            for name in os.listdir(cfg["logs_dir"]):
                os.remove(os.path.join(cfg["logs_dir"], name))
        except OSError:
            pass

    pid = os.fork()
    if pid == 0:  # the supervisor: a session of its own, no terminal, nothing shared with the caller
        code = 1
        try:
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            code = supervise(cfg, secrets)
        except BaseException as error:  # a supervisor that cannot run says why in the result
            with contextlib.suppress(OSError):
                write_json(files["result"], {"rc": None, "error": f"supervisor failed: {error!r}"})
        finally:
            os._exit(code)
    deadline = time.time() + 15
    while time.time() < deadline:
        info = read_json(files["supervisor"]) or {}
        if info.get("launcher_pid") or os.path.exists(files["result"]):
            break
        time.sleep(0.1)
    info = read_json(files["supervisor"], {})
    # How long the job has run when this answer leaves: the caller's start phase ends where the job's begins.
    running = round(max(time.time() - float(info.get("started") or time.time()), 0.0), 3)
    return {"state": "started", "supervisor": info, "result": read_json(files["result"]), "running": running}


def look(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """What is new since the caller's offsets: whether the supervisor is alive, its result, and the lines appended to
    the progress file and to the launcher's output (``progress_offset``, ``log_offset``)."""
    files = paths(cfg)
    answer: Dict[str, Any] = {"alive": supervisor_alive(cfg), "result": read_json(files["result"]), "now": time.time()}
    if cfg.get("progress_file"):
        answer["progress"] = read_from(cfg["progress_file"], int(cfg.get("progress_offset") or 0))
    answer["log"] = read_from(files["log"], int(cfg.get("log_offset") or 0), limit=int(cfg.get("log_limit") or 65536))
    return answer


def something_new(cfg: Dict[str, Any], answer: Dict[str, Any]) -> bool:
    """Whether an answer of ``look`` tells the caller anything: the run ended (a result, or no supervisor), or the
    progress file or the log moved past the caller's offsets (new whole lines, or a file replaced or gone)."""
    if answer["result"] is not None or not answer["alive"]:
        return True
    if "progress" in answer and answer["progress"]["offset"] != int(cfg.get("progress_offset") or 0):
        return True
    return answer["log"]["offset"] != int(cfg.get("log_offset") or 0)


def status(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """``look`` at once, or with ``wait`` (seconds) a long poll: the first answer with something new, looking every
    ``POLL_STEP`` seconds, and after ``wait`` seconds at the latest an answer with nothing new."""
    wait = max(float(cfg.get("wait") or 0), 0.0)
    deadline = time.monotonic() + wait
    answer = look(cfg)
    while wait and not something_new(cfg, answer) and time.monotonic() < deadline:
        time.sleep(min(POLL_STEP, max(deadline - time.monotonic(), 0.0)))
        answer = look(cfg)
    # The run's end with ``final`` (its options) in the same answer: no round trip more for it.
    if answer["result"] is not None and isinstance(cfg.get("final"), dict):
        answer["final"] = final(dict(cfg, **cfg["final"]))
    return answer


def bundle(run_dir: str, skip: str = "", limit: int = 0) -> Dict[str, Any]:
    """Every regular file under ``run_dir`` (paths relative to it, sorted; those ``skip`` finds with ``re.search``
    left out) as a tar.gz in base64 (``bundle``), or, when the archive is larger than ``limit`` bytes,
    ``bundle_error`` saying how large it is."""
    import base64
    import tarfile
    import tempfile

    try:
        pattern = re.compile(skip) if skip else None
    except re.error as error:
        return {"bundle_error": f"the bundle's skip pattern {skip!r} is not a regular expression: {error}"}
    names = []
    for folder, dirs, found in os.walk(run_dir):
        dirs.sort()
        for name in found:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, run_dir).replace(os.sep, "/")
            if os.path.islink(path) or not os.path.isfile(path) or (pattern and pattern.search(relative)):
                continue
            names.append(relative)
    with tempfile.TemporaryFile() as archive:
        with tarfile.open(fileobj=archive, mode="w:gz") as tar:
            for relative in sorted(names):
                try:
                    tar.add(os.path.join(run_dir, relative), arcname=relative, recursive=False)
                except FileNotFoundError:  # gone since the walk: nothing to keep
                    continue
                except OSError as error:
                    return {"bundle_error": f"cannot read {relative} in {run_dir} for the bundle: {error.strerror}"}
        size = archive.tell()
        if limit and size > limit:
            return {
                "bundle_error": f"the bundle of {run_dir} ({len(names)} files) is {size} bytes as a tar.gz, more "
                f"than its limit of {limit} bytes: raise the limit or leave more out with its skip pattern"
            }
        archive.seek(0)
        return {"bundle": base64.b64encode(archive.read()).decode("ascii")}


def final(cfg: Dict[str, Any]) -> Dict[str, Any]:
    begun = time.monotonic()
    files = paths(cfg)
    answer = {
        "result": read_json(files["result"]),
        "log_tail": tail(files["log"], int(cfg.get("log_limit") or MAX_READ)),
        "attempts": earlier_attempts(cfg),
    }
    if isinstance(cfg.get("bundle"), dict):
        options = cfg["bundle"]
        answer.update(bundle(cfg["run_dir"], str(options.get("skip") or ""), int(options.get("limit") or 0)))
    answer["seconds"] = round(time.monotonic() - begun, 3)
    return answer


def main(argv: List[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "status", "final", "scan", "sweep"):
        answer_line({"error": "usage: train_agent.py start|status|final|scan|sweep JSON"})
        return 2
    cfg = json.loads(argv[1])
    # What the run writes (state, logs, the job's own output) is its user's alone: the launch may hold secrets.
    os.umask(0o077)
    if argv[0] == "start":
        answer = start(cfg, read_secrets(sys.stdin) if cfg.get("secrets_on_stdin") else None)
    elif argv[0] == "status":
        answer = status(cfg)
    elif argv[0] == "final":
        answer = final(cfg)
    elif argv[0] == "scan":
        answer = {"processes": scan(cfg["job"])}
    else:
        answer = sweep(cfg["job"], float(cfg.get("grace", 5.0)))
    answer_line(answer)
    return 0


def answer_line(answer: Dict[str, Any]) -> None:
    """The one JSON document a command answers with, on a line of its own."""
    sys.stdout.write(json.dumps(answer, sort_keys=True) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
