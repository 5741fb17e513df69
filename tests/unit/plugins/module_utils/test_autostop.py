# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The autostop decision (a pure function of the settings, what the node shows and the last state), the readers of
processes and utmp, and the checker run as the node runs it (a subprocess, a recorder for the shutdown)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from ansible_collections.amx.cluster.plugins.module_utils import autostop
from ansible_collections.amx.cluster.plugins.module_utils.autostop import Observation, Settings, decide

SETTINGS = Settings(idle_minutes=60, action="stop", shutdown_command=("shutdown", "-h", "now"))
BOOT = "boot-a"


def seen(uptime, wall=None, boot=BOOT, jobs=(), logins=()):
    return Observation(
        wall=1_700_000_000.0 + uptime if wall is None else wall,
        uptime=uptime,
        boot_id=boot,
        jobs=tuple(jobs),
        logins=tuple(logins),
    )


def run_checks(*observations, settings=SETTINGS, state=None):
    decision = None
    for observation in observations:
        decision = decide(settings, observation, state)
        state = decision.state
    return decision


def test_a_node_idle_from_its_first_check_stops_after_the_idle_minutes():
    assert not run_checks(seen(100)).shutdown
    assert not run_checks(seen(100), seen(100 + 59 * 60)).shutdown
    short = run_checks(seen(100), seen(100 + 3599))
    assert not short.shutdown and short.reason == "idle for 59.9 of 60 minutes"
    last = run_checks(seen(100), seen(100 + 59 * 60), seen(100 + 60 * 60))
    assert last.shutdown
    assert last.idle_seconds == 3600
    assert last.reason == "idle for 60.0 minutes (limit 60): stop"


@pytest.mark.parametrize(
    "busy, reason",
    [
        ({"jobs": ["run-1/job"]}, "busy: job run-1/job"),
        ({"logins": ["alice@pts/0"]}, "busy: login alice@pts/0"),
        ({"jobs": ["agent pid 7"], "logins": ["root@pts/1"]}, "busy: job agent pid 7, login root@pts/1"),
    ],
)
def test_a_job_or_a_login_keeps_the_node_and_restarts_the_idle_time(busy, reason):
    decision = run_checks(seen(100), seen(100 + 59 * 60, **busy))
    assert not decision.shutdown and decision.reason == reason
    assert decision.state["idle_since_uptime"] is None
    # Idle again: a fresh hour from now.
    assert not run_checks(seen(100), seen(100 + 59 * 60, **busy), seen(100 + 119 * 60)).shutdown
    assert run_checks(seen(100), seen(100 + 59 * 60, **busy), seen(100 + 60 * 60), seen(100 + 120 * 60)).shutdown


def test_the_wall_clock_set_forward_or_back_changes_nothing():
    # Ten hours forward on the wall clock, one minute on the boot clock: not idle long enough.
    forward = run_checks(seen(100, wall=1_700_000_000.0), seen(160, wall=1_700_036_000.0))
    assert not forward.shutdown and forward.idle_seconds == 60
    # A day back on the wall clock: the hour on the boot clock still counts.
    back = run_checks(seen(100, wall=1_700_000_000.0), seen(100 + 3600, wall=1_699_917_200.0))
    assert back.shutdown


def test_another_boot_counts_the_idle_time_from_its_first_check():
    before = run_checks(seen(100), seen(100 + 59 * 60)).state
    after = decide(SETTINGS, seen(30, boot="boot-b"), before)
    assert not after.shutdown and after.idle_seconds == 0 and after.state["boot_id"] == "boot-b"


@pytest.mark.parametrize(
    "previous",
    [
        None,
        "garbage",
        {},
        {"version": 0, "boot_id": BOOT, "idle_since_uptime": 0},
        {"version": 1, "boot_id": BOOT, "idle_since_uptime": 99999},  # after now: a damaged state
        {"version": 1, "boot_id": BOOT, "idle_since_uptime": True},
        {"version": 1, "boot_id": BOOT, "idle_since_uptime": "0"},
    ],
)
def test_a_missing_or_damaged_state_starts_the_idle_time_now(previous):
    decision = decide(SETTINGS, seen(5000), previous)
    assert not decision.shutdown and decision.idle_seconds == 0 and decision.state["idle_since_uptime"] == 5000


def test_the_state_says_when_the_shutdown_is_due_on_the_wall_clock():
    state = run_checks(seen(100, wall=1000.0), seen(700, wall=1600.0)).state
    assert state["idle_since_wall"] == 1000.0
    assert state["shutdown_due_wall"] == 1000.0 + 3600
    assert state["idle_seconds"] == 600


def test_idle_minutes_zero_never_shuts_down():
    off = Settings(0, "stop", ("true",))
    decision = run_checks(seen(0), seen(10**7), settings=off)
    assert not decision.shutdown and decision.state["shutdown_due_wall"] is None


@pytest.mark.parametrize(
    "raw, message",
    [
        ([], "must be a JSON object"),
        ({"idle_minutes": -1}, "idle_minutes must be"),
        ({"idle_minutes": "60"}, "idle_minutes must be"),
        ({"idle_minutes": True}, "idle_minutes must be"),
        ({"idle_minutes": 5, "action": "hibernate"}, "action must be one of stop, terminate"),
        ({"idle_minutes": 5, "shutdown_command": []}, "shutdown_command must be"),
        ({"idle_minutes": 5, "shutdown_command": "shutdown -h now"}, "shutdown_command must be"),
    ],
)
def test_bad_settings_are_refused(raw, message):
    with pytest.raises(autostop.SettingsError, match=message):
        autostop.check_settings(raw)


def test_job_processes_and_terminal_sessions_from_process_lists():
    processes = [
        (10, b"python3\0train.py\0", [b"PATH=/bin", b"AMX_CLUSTER_JOB=run-7/job"]),
        (11, b"/venv/bin/python\0/runs/r/state/train_agent.py\0start\0", [b"HOME=/root"]),
        (12, b"sshd: alice@pts/0\0", []),
        (13, b"sshd-session: bob@pts/3\0", []),
        (14, b"sshd: alice [priv]\0", []),
        (15, b"sshd: amx@notty\0", []),
        (16, b"bash\0", [b"NOT_AMX_CLUSTER_JOB=x"]),
    ]
    assert autostop.job_processes(processes) == ("agent pid 11", "run-7/job")
    assert autostop.ssh_terminal_sessions(processes) == ("alice@pts/0", "bob@pts/3")


def utmp_entry(kind, pid, line, user):
    return autostop.UTMP_RECORD.pack(
        kind, pid, line.encode(), b"", user.encode(), b"host", 0, 0, 0, 0, 0, 0, 0, 0, 0, b""
    )


def test_utmp_lists_live_user_sessions_only():
    assert autostop.UTMP_RECORD.size == 384  # glibc's struct utmp on 64-bit Linux
    data = b"".join(
        [
            utmp_entry(2, 0, "~", "reboot"),  # BOOT_TIME
            utmp_entry(7, 100, "pts/0", "alice"),
            utmp_entry(7, 200, "pts/1", "gone"),  # its process died without a logout record
            utmp_entry(8, 300, "pts/2", "bob"),  # DEAD_PROCESS
        ]
    )
    assert autostop.utmp_logins(data, alive=lambda pid: pid == 100) == ("alice@pts/0",)
    assert autostop.utmp_logins(data[:100]) == ()


def test_the_units_and_the_settings_document():
    service = autostop.service_unit("/usr/bin/python3")
    assert f"ExecStart=/usr/bin/python3 {autostop.SCRIPT_PATH} check\n" in service
    assert "Type=oneshot" in service and autostop.MARKER in service
    timer = autostop.timer_unit()
    assert "OnUnitActiveSec=1min" in timer and "WantedBy=timers.target" in timer
    document = json.loads(autostop.config_document(SETTINGS))
    assert autostop.check_settings(document) == SETTINGS


# ----------------------------------------------------------------------------- the checker as a process


@pytest.fixture
def checker(tmp_path):
    script = tmp_path / "autostop.py"
    script.write_text(autostop.script_source(pathlib.Path(autostop.__file__).read_text(), sys.executable))
    record = tmp_path / "shutdowns"
    config = tmp_path / "config.json"
    # The recorder stands in for `shutdown -h now`, which this test must not run.
    settings = Settings(1, "terminate", ("/bin/sh", "-c", f"echo shutdown >> {record}"))
    config.write_text(autostop.config_document(settings))

    def check(*extra):
        argv = [sys.executable, str(script), "check", "--config", str(config), "--state", str(tmp_path / "s.json")]
        done = subprocess.run([*argv, *extra], capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)

    return {"check": check, "record": record, "state": tmp_path / "s.json", "config": config, "script": script}


def test_the_checker_runs_alone_and_shuts_down_once_idle(checker):
    # The clocks are injected. A login on this machine (or another run's training job) keeps it busy: then the
    # decision cannot be seen here, and the container test covers it.
    uptime = float(pathlib.Path("/proc/uptime").read_text().split()[0])
    first = checker["check"]("--uptime", str(uptime))
    if first["reason"].startswith("busy:"):
        pytest.skip(f"this machine is busy ({first['reason']}); the container test covers an idle node")
    assert first == {"reason": "idle for 0.0 of 1 minutes", "shutdown": False}
    assert not checker["record"].exists()
    second = checker["check"]("--uptime", str(uptime + 61), "--now", str(time.time() + 61))
    assert second["shutdown"] and second["reason"] == "idle for 1.0 minutes (limit 1): terminate"
    assert checker["record"].read_text() == "shutdown\n"
    state = json.loads(checker["state"].read_text())
    assert state["shutdown_requested_wall"] == state["checked_wall"]


def test_the_checker_refuses_bad_settings_and_does_nothing(checker):
    checker["config"].write_text(json.dumps({"idle_minutes": -5}))
    done = subprocess.run(
        [
            sys.executable,
            str(checker["script"]),
            "check",
            "--config",
            str(checker["config"]),
            "--state",
            str(checker["state"]),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "idle_minutes must be a whole number" in json.loads(done.stdout)["error"]
    assert not checker["state"].exists() and not checker["record"].exists()


def test_the_checker_sees_a_job_process_of_this_machine(checker):
    job = subprocess.Popen(["sleep", "30"], env={**os.environ, "AMX_CLUSTER_JOB": "unit-run/job"})
    try:
        answer = checker["check"]("--uptime", "10000")
    finally:
        job.kill()
        job.wait()
    assert answer["shutdown"] is False and "job unit-run/job" in answer["reason"]
