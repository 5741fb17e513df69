# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Autostop: a node of an EC2 cluster shuts itself down after some minutes with no training job and no login.

The module amx.cluster.autostop installs this very file on each node (``SCRIPT_PATH``), with its settings
(``CONFIG_PATH``) and a systemd timer that runs ``python3 SCRIPT_PATH check`` every minute. So it is one
self-contained file: the standard library only, Python 3.8+, nothing imported from the collection.

``check`` looks at the node (``observe``), decides (``decide``, a pure function), writes the new state
(``STATE_PATH``) and, when the node has been idle long enough, runs the shutdown command (``shutdown -h now`` by
default). The instance's initiated-shutdown behaviour, set by the ec2_cluster role, makes that a stop or a
termination: the node needs no cloud credentials.

Idle time is counted on the boot clock (``/proc/uptime``), never the wall clock, so a clock set forward or back
neither stops a busy node nor keeps an idle one. The state names its boot (``/proc/sys/kernel/random/boot_id``):
after a reboot, or a stop and start, the idle time counts from that boot's first check.

Busy means: a process of a training job (``AMX_CLUSTER_JOB=...`` in its environment, which train_agent.py gives
the launcher and Hydra passes to every rank on every node) or the job agent itself (``train_agent.py``), or an
interactive login: a live ``USER_PROCESS`` entry of utmp (what ``who`` lists) or an sshd session with a
terminal (``sshd: user@pts/N``).

``status`` prints the state and the settings without acting. Both commands print one JSON document.
``--now`` and ``--uptime`` replace the clocks (tests; the systemd service never passes them).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import struct
import subprocess
import sys
import time
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

UNIT_NAME = "amx-cluster-autostop"
SCRIPT_PATH = "/usr/local/libexec/amx-cluster-autostop.py"
CONFIG_PATH = "/etc/amx-cluster/autostop.json"
STATE_PATH = "/var/lib/amx-cluster/autostop-state.json"
SERVICE_PATH = f"/etc/systemd/system/{UNIT_NAME}.service"
TIMER_PATH = f"/etc/systemd/system/{UNIT_NAME}.timer"
ACTIONS = ("stop", "terminate")
DEFAULT_SHUTDOWN_COMMAND = ("shutdown", "-h", "now")
# What the maximum lifetime's boot script (ec2_cluster's user data) keeps: the deadline, in epoch seconds.
LIFETIME_DEADLINE_PATH = "/var/lib/cloud/instance/amx-cluster-deadline"
# The first line of every file the module writes: it removes only files that carry it.
MARKER = "amx.cluster autostop"
STATE_VERSION = 1
JOB_VAR = b"AMX_CLUSTER_JOB="
AGENT_NAME = b"train_agent.py"
UTMP_PATHS = ("/run/utmp", "/var/run/utmp")
# struct utmp of glibc on 64-bit Linux (384 bytes): type, pid, line, id, user, host, exit, session, tv, addr.
UTMP_RECORD = struct.Struct("hi32s4s32s256shhiii4i20s")
USER_PROCESS = 7


class Settings(NamedTuple):
    idle_minutes: int
    action: str
    shutdown_command: Tuple[str, ...]


class Observation(NamedTuple):
    wall: float  # time.time(), only to show when things happened
    uptime: float  # seconds since boot: what idle time is counted on
    boot_id: str
    jobs: Tuple[str, ...]
    logins: Tuple[str, ...]


class Decision(NamedTuple):
    shutdown: bool
    idle_seconds: float
    reason: str
    state: Dict[str, Any]


class SettingsError(ValueError):
    pass


def check_settings(raw: Any) -> Settings:
    """The settings from the config document, or SettingsError naming what is wrong."""
    if not isinstance(raw, dict):
        raise SettingsError("the settings must be a JSON object")
    minutes = raw.get("idle_minutes")
    if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes < 0:
        raise SettingsError(f"idle_minutes must be a whole number of minutes, 0 or more (0 = off), not {minutes!r}")
    action = raw.get("action", "stop")
    if action not in ACTIONS:
        raise SettingsError(f"action must be one of {', '.join(ACTIONS)}, not {action!r}")
    command = raw.get("shutdown_command", list(DEFAULT_SHUTDOWN_COMMAND))
    if not isinstance(command, list) or not command or not all(isinstance(part, str) and part for part in command):
        raise SettingsError("shutdown_command must be a non-empty list of non-empty strings (the argv to run)")
    return Settings(minutes, action, tuple(command))


def _idle_since(previous: Any, observation: Observation) -> Optional[float]:
    """The boot-clock second the idle time started at, from the previous state when it still holds."""
    if not isinstance(previous, dict) or previous.get("version") != STATE_VERSION:
        return None
    if previous.get("boot_id") != observation.boot_id:
        return None
    since = previous.get("idle_since_uptime")
    if not isinstance(since, (int, float)) or isinstance(since, bool) or not 0 <= since <= observation.uptime:
        return None
    return float(since)


def busy_reasons(observation: Observation) -> List[str]:
    """What keeps the node busy: ``job <name>`` and ``login <user@tty>``; empty when idle."""
    return [f"job {job}" for job in observation.jobs] + [f"login {login}" for login in observation.logins]


def decide(settings: Settings, observation: Observation, previous: Any) -> Decision:
    """Whether the node shuts down now, and the state to keep for the next check.

    ``previous`` is the last state written (anything: a missing or damaged state counts as none).
    """
    busy = busy_reasons(observation)
    state: Dict[str, Any] = {
        "version": STATE_VERSION,
        "boot_id": observation.boot_id,
        "checked_wall": observation.wall,
        "checked_uptime": observation.uptime,
        "idle_minutes": settings.idle_minutes,
        "action": settings.action,
        "busy": busy,
    }
    if busy:
        state.update(idle_since_uptime=None, idle_since_wall=None, idle_seconds=0.0, shutdown_due_wall=None)
        return Decision(False, 0.0, "busy: " + ", ".join(busy), state)

    since = _idle_since(previous, observation)
    since = observation.uptime if since is None else since
    idle = observation.uptime - since
    due = since + settings.idle_minutes * 60
    state.update(
        idle_since_uptime=since,
        idle_since_wall=observation.wall - idle,
        idle_seconds=idle,
        shutdown_due_wall=(observation.wall + due - observation.uptime) if settings.idle_minutes else None,
    )
    if settings.idle_minutes == 0:
        return Decision(False, idle, "autostop is off (idle_minutes 0)", state)
    # Tenths of a minute, rounded down: a node one second short of its limit does not read as at the limit.
    minutes = math.floor(idle / 6) / 10
    if observation.uptime >= due:
        reason = f"idle for {minutes:.1f} minutes (limit {settings.idle_minutes}): {settings.action}"
        return Decision(True, idle, reason, state)
    return Decision(False, idle, f"idle for {minutes:.1f} of {settings.idle_minutes} minutes", state)


# ----------------------------------------------------------------------------- what the node shows


def processes() -> List[Tuple[int, bytes, List[bytes]]]:
    """Every process of the node but this one: pid, command line, environment."""
    found = []
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
        except OSError:
            continue
        if cmdline:
            found.append((int(name), cmdline, environ))
    return found


def job_processes(processes: Sequence[Tuple[int, bytes, List[bytes]]]) -> Tuple[str, ...]:
    """The training jobs with a process on this node, and the job agents at work (by pid)."""
    jobs = set()
    for pid, cmdline, environ in processes:
        for entry in environ:
            if entry.startswith(JOB_VAR):
                jobs.add(entry[len(JOB_VAR) :].decode("utf-8", "replace"))
        if AGENT_NAME in cmdline:
            jobs.add(f"agent pid {pid}")
    return tuple(sorted(jobs))


def job_folders(processes: Sequence[Tuple[int, bytes, List[bytes]]]) -> Dict[str, str]:
    """The working folder of one process of each job (the launcher's is the run folder: its progress file)."""
    folders: Dict[str, str] = {}
    for pid, _cmdline, environ in sorted(processes):
        for entry in environ:
            if entry.startswith(JOB_VAR):
                job = entry[len(JOB_VAR) :].decode("utf-8", "replace")
                if job not in folders:
                    with contextlib.suppress(OSError):
                        folders[job] = os.readlink(f"/proc/{pid}/cwd")
    return folders


def ssh_terminal_sessions(processes: Sequence[Tuple[int, bytes, List[bytes]]]) -> Tuple[str, ...]:
    """sshd's sessions with a terminal, from their process titles (``sshd: user@pts/0``, ``sshd-session: ...``)."""
    found = set()
    for _pid, cmdline, _environ in processes:
        title = cmdline.split(b"\0")[0].decode("utf-8", "replace").strip()
        head, _sep, rest = title.partition(": ")
        if head in ("sshd", "sshd-session") and "@pts/" in rest:
            found.add(rest.split()[0])
    return tuple(sorted(found))


def utmp_logins(data: bytes, alive: Any = None) -> Tuple[str, ...]:
    """The live user sessions of a utmp file's contents (``user@line``)."""
    alive = alive or _pid_alive
    found = set()
    size = UTMP_RECORD.size
    for offset in range(0, len(data) - size + 1, size):
        fields = UTMP_RECORD.unpack_from(data, offset)
        kind, pid, line, user = fields[0], fields[1], fields[2], fields[4]
        if kind != USER_PROCESS or not alive(pid):
            continue
        name = user.split(b"\0")[0].decode("utf-8", "replace")
        tty = line.split(b"\0")[0].decode("utf-8", "replace")
        found.add(f"{name}@{tty}")
    return tuple(sorted(found))


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: str, binary: bool = False) -> Any:
    try:
        with open(path, "rb" if binary else "r") as handle:
            return handle.read()
    except OSError:
        return b"" if binary else ""


def observe(
    wall: Optional[float] = None, uptime: Optional[float] = None, seen: Optional[List[Any]] = None
) -> Observation:
    seen = processes() if seen is None else seen
    logins = set(ssh_terminal_sessions(seen))
    for path in UTMP_PATHS:
        data = _read(path, binary=True)
        if data:
            logins.update(utmp_logins(data))
            break
    return Observation(
        wall=time.time() if wall is None else wall,
        uptime=float(_read("/proc/uptime").split()[0]) if uptime is None else uptime,
        boot_id=_read("/proc/sys/kernel/random/boot_id").strip(),
        jobs=job_processes(seen),
        logins=tuple(sorted(logins)),
    )


# ----------------------------------------------------------------------------- what the module installs


def service_unit(python: str) -> str:
    return (
        f"# {MARKER}: written by amx.cluster.autostop; removed with ec2_cluster_idle_minutes=0\n"
        "[Unit]\n"
        "Description=amx.cluster autostop: shut the node down when it has been idle long enough\n"
        f"ConditionPathExists={CONFIG_PATH}\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"ExecStart={python} {SCRIPT_PATH} check\n"
    )


def timer_unit() -> str:
    return (
        f"# {MARKER}: written by amx.cluster.autostop; removed with ec2_cluster_idle_minutes=0\n"
        "[Unit]\n"
        "Description=amx.cluster autostop: look every minute whether the node is idle\n"
        "\n"
        "[Timer]\n"
        "OnBootSec=1min\n"
        "OnUnitActiveSec=1min\n"
        "AccuracySec=10s\n"
        "\n"
        "[Install]\n"
        "WantedBy=timers.target\n"
    )


def config_document(settings: Settings) -> str:
    data = {
        "comment": f"{MARKER}: written by amx.cluster.autostop (ec2_cluster_idle_* variables)",
        "idle_minutes": settings.idle_minutes,
        "action": settings.action,
        "shutdown_command": list(settings.shutdown_command),
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def script_source(source: str, python: str) -> str:
    """This file as the node runs it: a shebang of the node's Python first."""
    return f"#!{python}\n# {MARKER}: written by amx.cluster.autostop\n{source}"


# ----------------------------------------------------------------------------- the checker


def write_state(path: str, data: Any) -> None:
    """Write the checker's state atomically (a reader never sees half of it)."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, path)


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _say(answer: Dict[str, Any]) -> None:
    """The one JSON line a command answers with (the journal keeps it)."""
    sys.stdout.write(json.dumps(answer, sort_keys=True) + "\n")
    sys.stdout.flush()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="amx.cluster autostop checker")
    parser.add_argument("command", choices=["check", "status"])
    parser.add_argument("--config", default=CONFIG_PATH)
    parser.add_argument("--state", default=STATE_PATH)
    parser.add_argument("--now", type=float, help="the wall clock, in seconds since the epoch (tests)")
    parser.add_argument("--uptime", type=float, help="seconds since boot (tests)")
    args = parser.parse_args(argv)
    try:
        settings = check_settings(_read_json(args.config))
    except SettingsError as exc:
        _say({"error": f"{args.config}: {exc}"})
        return 2
    previous = _read_json(args.state)
    if args.command == "status":
        _say({"settings": settings._asdict(), "state": previous})
        return 0
    decision = decide(settings, observe(args.now, args.uptime), previous)
    state = dict(decision.state, reason=decision.reason)
    if decision.shutdown:
        state["shutdown_command"] = list(settings.shutdown_command)
        state["shutdown_requested_wall"] = state["checked_wall"]
    write_state(args.state, state)
    _say({"shutdown": decision.shutdown, "reason": decision.reason})
    if decision.shutdown:
        return subprocess.call(list(settings.shutdown_command))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
