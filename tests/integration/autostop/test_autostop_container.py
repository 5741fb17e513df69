# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The autostop on a node for real: a container of the tests' node image (tests/cluster/node-image.sh, sshd running)
reached through Docker. The ec2_cluster role's "autostop" entry point installs the checker, its settings and the
systemd units; a second run changes nothing; the units pass `systemd-analyze verify` on this machine. Then the
installed checker decides on the node, as the timer would run it: a training job's process (AMX_CLUSTER_JOB in its
environment), an interactive SSH login with a terminal, neither; the wall clock moved, the boot clock not.

What cannot run here, and stands in for it:
- A container has no systemd, so the timer itself never fires: the test runs the checker's command (the service's
  ExecStart) by hand, with the clocks injected (--now, --uptime) instead of waiting an hour.
- `shutdown -h now` would do nothing useful in a container: ec2_cluster_idle_shutdown_command (the configurable
  command, documented as the test hook) is a recorder that appends the time to a file.
The shutdown behaviour the instances get is tested against the local EC2 API
(tests/integration/ec2/test_autostop_ec2.py).
"""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess
import time
from typing import Dict, List

import pytest
from docker_node import VENV_BIN, docker_node, run

REPO = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = "/usr/local/libexec/amx-cluster-autostop.py"
UNITS = ("/etc/systemd/system/amx-cluster-autostop.service", "/etc/systemd/system/amx-cluster-autostop.timer")
CONFIG = "/etc/amx-cluster/autostop.json"
STATE = "/var/lib/amx-cluster/autostop-state.json"
RECORD = "/root/shutdowns-recorded"

pytestmark = pytest.mark.slow

PLAY = """
- hosts: node
  gather_facts: false
  tasks:
    - name: Install the autostop
      ansible.builtin.include_role:
        name: amx.cluster.ec2_cluster
        tasks_from: autostop
    - name: Read it back
      amx.cluster.autostop:
        state: status
      register: autostop_status
    - name: Show it
      ansible.builtin.debug:
        msg: "STATUS {{ autostop_status | to_json }}"
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with docker_node(tmp_path_factory.mktemp("autostop"), "autostop", PLAY) as started:
        yield started


def playbook(node, *extra: str, ok: bool = True) -> subprocess.CompletedProcess:
    env = {
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "HOME": str(node["folder"]),
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_CALLBACK_RESULT_FORMAT": "json",
    }
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", "inventory.json", "play.yml", *extra]
    done = subprocess.run(argv, cwd=node["folder"], env=env, capture_output=True, text=True, timeout=900, check=False)
    assert (done.returncode == 0) == ok, done.stdout[-6000:] + done.stderr[-2000:]
    return done


def on(node, script: str, check: bool = True) -> str:
    return run(["docker", "exec", node["name"], "sh", "-c", script], check=check).stdout


def recap(output: str) -> Dict[str, int]:
    line = [line for line in output.splitlines() if line.startswith("node ")][-1]
    return {key: int(value) for key, value in (part.split("=") for part in line.split(":", 1)[1].split())}


def recorder_vars(minutes: int = 2) -> List[str]:
    settings = {
        "ec2_cluster_idle_minutes": minutes,
        "ec2_cluster_idle_action": "stop",
        # The recorder in place of `shutdown -h now`.
        "ec2_cluster_idle_shutdown_command": ["/bin/sh", "-c", f"date +%s >> {RECORD}"],
    }
    return ["-e", json.dumps(settings)]


def check(node, uptime: float, now: float) -> dict:
    """One run of what the service runs (its ExecStart), with the clocks given."""
    out = on(node, f"python3 {SCRIPT} check --uptime {uptime} --now {now}")
    return json.loads(out)


@pytest.fixture(scope="module")
def installed(node):
    return playbook(node, *recorder_vars())


def test_the_role_installs_the_checker_and_the_units_and_a_second_run_changes_nothing(node, installed):
    assert recap(installed.stdout)["changed"] == 1
    listing = on(node, f"stat -c '%n %U %a' {SCRIPT} {CONFIG} {' '.join(UNITS)}").split("\n")
    assert listing[:5] == [
        f"{SCRIPT} root 755",
        f"{CONFIG} root 644",
        f"{UNITS[0]} root 644",
        f"{UNITS[1]} root 644",
        "",
    ]
    assert f"ExecStart=/usr/bin/python3 {SCRIPT} check" in on(node, f"cat {UNITS[0]}")
    settings = json.loads(on(node, f"cat {CONFIG}"))
    assert (settings["idle_minutes"], settings["action"]) == (2, "stop")
    # No systemd in a container: the role says the timer will not fire.
    assert "its timer never fires" in " ".join(installed.stdout.replace("\\n", " ").split())
    again = playbook(node, *recorder_vars())
    assert recap(again.stdout)["changed"] == 0


def test_the_units_pass_systemd_analyze_verify(node, installed, tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed on this machine: the unit files cannot be verified here")
    for unit in UNITS:
        (tmp_path / pathlib.Path(unit).name).write_text(on(node, f"cat {unit}"))
    # The service's ExecStart names the node's /usr/bin/python3, which this machine has too.
    done = run(["systemd-analyze", "verify", *(str(tmp_path / pathlib.Path(unit).name) for unit in UNITS)], check=False)
    problems = [line for line in (done.stdout + done.stderr).splitlines() if "amx-cluster-autostop" in line]
    assert done.returncode == 0 and not problems, done.stdout + done.stderr


def test_an_idle_node_shuts_down_after_its_minutes_and_only_then(node, installed):
    on(node, f"rm -f {STATE} {RECORD}")
    start = time.time()
    first = check(node, 1000, start)
    assert first == {"shutdown": False, "reason": "idle for 0.0 of 2 minutes"}
    assert not check(node, 1119, start + 119)["shutdown"]
    assert on(node, f"test -e {RECORD} && echo recorded || echo none").strip() == "none"
    last = check(node, 1120, start + 120)
    assert last == {"shutdown": True, "reason": "idle for 2.0 minutes (limit 2): stop"}
    assert len(on(node, f"cat {RECORD}").split()) == 1
    state = json.loads(on(node, f"cat {STATE}"))
    assert state["shutdown_command"][:2] == ["/bin/sh", "-c"] and state["idle_seconds"] == 120


def test_a_running_job_keeps_the_node(node, installed):
    on(node, f"rm -f {STATE} {RECORD}")
    on(node, "AMX_CLUSTER_JOB=run-42/job nohup sleep 300 >/dev/null 2>&1 &")
    try:
        busy = check(node, 2000, time.time() + 1000)
        assert busy == {"shutdown": False, "reason": "busy: job run-42/job"}
    finally:
        on(node, "pkill -f 'sleep 300'", check=False)
    # Once the job is gone, a new idle time starts: not a shutdown at once.
    after = check(node, 2010, time.time() + 1010)
    assert after == {"shutdown": False, "reason": "idle for 0.0 of 2 minutes"}
    assert on(node, f"test -e {RECORD} && echo recorded || echo none").strip() == "none"


def test_an_interactive_ssh_login_keeps_the_node(node, installed):
    on(node, f"rm -f {STATE} {RECORD}")
    # A real login through the node's sshd, with a terminal (-tt), as a person's `ssh node` has.
    on(
        node,
        "test -f /root/.ssh/login || ssh-keygen -q -t ed25519 -N '' -f /root/.ssh/login; "
        "install -d -m 0700 /root/.ssh; cat /root/.ssh/login.pub >> /root/.ssh/authorized_keys; "
        "chmod 0600 /root/.ssh/authorized_keys",
    )
    on(
        node,
        "nohup ssh -tt -i /root/.ssh/login -o StrictHostKeyChecking=accept-new -o BatchMode=yes root@127.0.0.1 "
        "'sleep 120' >/dev/null 2>&1 &",
    )
    try:
        busy = {}
        for _attempt in range(50):  # the login takes a moment
            busy = check(node, 5000, time.time() + 5000)
            if busy["reason"].startswith("busy"):
                break
            time.sleep(0.2)
        assert busy["shutdown"] is False
        assert busy["reason"].startswith("busy: login root@pts/"), busy
    finally:
        on(node, "pkill -f 'sleep 120'", check=False)
    assert on(node, f"test -e {RECORD} && echo recorded || echo none").strip() == "none"


def test_the_wall_clock_moved_does_not_stop_the_node(node, installed):
    on(node, f"rm -f {STATE} {RECORD}")
    start = time.time()
    check(node, 1000, start)
    # Ten hours later on the wall clock, thirty seconds on the boot clock (an NTP step, a wrong clock set right).
    moved = check(node, 1030, start + 36000)
    assert moved == {"shutdown": False, "reason": "idle for 0.5 of 2 minutes"}
    # Another boot (a stop and start): the idle time counts from its first check, whatever the old state said.
    on(node, f'sed -i \'s/"boot_id": "[^"]*"/"boot_id": "another-boot"/\' {STATE}')
    assert check(node, 5000, start + 40000) == {"shutdown": False, "reason": "idle for 0.0 of 2 minutes"}
    assert on(node, f"test -e {RECORD} && echo recorded || echo none").strip() == "none"


def test_a_run_of_the_controller_holds_off_the_shutdown(node, installed):
    """train.yml and provision.yml touch the autostop first: a node one second short of its limit starts again."""
    on(node, f"rm -f {STATE} {RECORD}")
    start = time.time()
    check(node, 1000, start)
    assert check(node, 1119, start + 119) == {"shutdown": False, "reason": "idle for 1.9 of 2 minutes"}
    env = {
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "HOME": str(node["folder"]),
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
    }
    touched = subprocess.run(
        [str(VENV_BIN / "ansible"), "node", "-i", "inventory.json", "-m", "amx.cluster.autostop", "-a", "state=touch"],
        cwd=node["folder"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert touched.returncode == 0 and "SUCCESS" in touched.stdout, touched.stdout + touched.stderr
    assert json.loads(on(node, f"cat {STATE}"))["busy"] == ["job ansible run"]
    assert check(node, 1120, start + 120) == {"shutdown": False, "reason": "idle for 0.0 of 2 minutes"}
    assert not check(node, 1239, start + 239)["shutdown"]
    assert check(node, 1240, start + 240)["shutdown"]
    assert len(on(node, f"cat {RECORD}").split()) == 1


def test_the_status_module_reads_the_last_check(node, installed):
    on(node, f"rm -f {STATE}")
    now = time.time()
    check(node, 1000, now)
    check(node, 1060, now + 60)
    done = playbook(node, *recorder_vars())
    found = re.search(r'"msg": ("STATUS .*")', done.stdout)
    assert found, done.stdout[-3000:]
    status = json.loads(json.loads(found.group(1))[len("STATUS ") :])
    assert status["settings"]["idle_minutes"] == 2
    assert status["last_check"]["idle_seconds"] == 60
    assert status["last_check"]["shutdown_due_wall"] == pytest.approx(now + 120, abs=1)
    assert status["timer_active"] is False and status["systemd"] is False


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"ec2_cluster_idle_minutes": -1}, "ec2_cluster_idle_minutes (-1) must be 0"),
        ({"ec2_cluster_idle_action": "hibernate"}, "ec2_cluster_idle_action"),
        # A string, not a list: one argument, no such program on the node.
        ({"ec2_cluster_idle_shutdown_command": "shutdown -h now"}, "program 'shutdown -h now' is not found"),
    ],
)
def test_bad_values_are_refused_before_any_change(node, installed, bad, message):
    before = on(node, f"ls -l --time-style=+%s.%N {SCRIPT} {CONFIG} {' '.join(UNITS)} 2>&1; cat {CONFIG} 2>&1")
    done = playbook(node, "-e", json.dumps(bad), ok=False)
    assert message in " ".join(done.stdout.split()), done.stdout[-3000:]
    assert recap(done.stdout)["changed"] == 0
    assert on(node, f"ls -l --time-style=+%s.%N {SCRIPT} {CONFIG} {' '.join(UNITS)} 2>&1; cat {CONFIG} 2>&1") == before


PROGRESS = {
    "step": 40,
    "total_steps": 120,
    "epoch": 0.33,
    "loss": 4.9123,
    "samples_per_second": 41.2,
    "eta_seconds": 72,
}
# A launch script as train.yml's agent runs it: it writes the progress file qa_finetune.py writes, then trains on.
LAUNCH = f"""#!/bin/bash
echo '{json.dumps(PROGRESS)}' > progress.jsonl
exec sleep 300
"""


def test_status_of_a_container_cluster_with_a_job_running(node, installed, tmp_path):
    """status.yml on a one-node cluster whose job was started by the real job agent (train_agent.py), as train.yml
    starts it. The node is not an EC2 instance: the test's inventory gives it the ec2_* variables the
    amx.cluster.ec2_cluster inventory plugin would (type, state, launch time two hours ago), to price it."""
    run_dir = "/root/amx-cluster-runs/run-9"
    agent = (REPO / "plugins" / "module_utils" / "train_agent.py").read_text()
    on(node, f"mkdir -p {run_dir}/state")
    subprocess.run(
        ["docker", "exec", "-i", node["name"], "sh", "-c", f"cat > {run_dir}/state/train_agent.py"],
        input=agent,
        text=True,
        check=True,
    )
    subprocess.run(
        ["docker", "exec", "-i", node["name"], "sh", "-c", f"cat > {run_dir}/launch.sh"],
        input=LAUNCH,
        text=True,
        check=True,
    )
    cfg = {"state_dir": f"{run_dir}/state", "script": f"{run_dir}/launch.sh", "run_dir": run_dir, "job": "run-9/job"}
    started = json.loads(on(node, f"python3 {run_dir}/state/train_agent.py start '{json.dumps(cfg)}' </dev/null"))
    assert started["state"] == "started", started
    launched = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(time.time() - 7200))
    inventory = {
        "all": {
            "children": {
                "cluster": {
                    "children": {
                        "master": {
                            "hosts": {
                                "node": {
                                    "ansible_connection": "community.docker.docker",
                                    "ansible_host": node["name"],
                                    "ansible_python_interpreter": "/usr/bin/python3",
                                    "ec2_state": "running",
                                    "ec2_instance_type": "r7iz.metal-16xl",
                                    "ec2_instance_id": "i-0123456789abcdef0",
                                    "ec2_launch_time": launched,
                                }
                            }
                        }
                    }
                },
            }
        }
    }
    (tmp_path / "cluster.json").write_text(json.dumps(inventory))
    env = {
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "HOME": str(node["folder"]),
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
    }
    try:
        argv = [str(VENV_BIN / "ansible-playbook"), "-i", str(tmp_path / "cluster.json"), "playbooks/status.yml"]
        text = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert text.returncode == 0, text.stdout[-4000:] + text.stderr[-2000:]
        machine = subprocess.run(
            argv,
            cwd=REPO,
            env=dict(env, ANSIBLE_STDOUT_CALLBACK="json"),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert machine.returncode == 0, machine.stdout[-4000:] + machine.stderr[-2000:]
    finally:
        on(node, "pkill -f 'sleep 300'", check=False)
    (node["folder"] / "status-text.txt").write_text(text.stdout)
    (node["folder"] / "status-json.json").write_text(machine.stdout)
    words = " ".join(text.stdout.split())
    assert "job run-9/job on node: step 40/120 (33%) | epoch 0.33 | loss 4.9123 | 41.2 samples/s | ETA 0:01:12" in words
    assert "node | running | r7iz.metal-16xl | i-0123456789abcdef0 | up 2:00:0" in words
    assert "busy: job agent pid " in words and ", job run-9/job |" in words
    # Machine-readable: the json callback's document holds the module's result.
    document = json.loads(machine.stdout)
    results = [
        task["hosts"]["localhost"]
        for play in document["plays"]
        for task in play["tasks"]
        if task["task"]["name"] == "Put the status together"
    ]
    status = results[0]
    row = status["nodes"][0]
    assert (row["name"], row["state"], row["instance_type"], row["reached"]) == (
        "node",
        "running",
        "r7iz.metal-16xl",
        True,
    )
    # The job's processes and its supervisor (the agent) keep the node busy.
    assert "job run-9/job" in row["busy"] and row["busy"][0].startswith("job agent pid ")
    assert row["idle_minutes"] == 0.0
    assert row["autostop"] == {"idle_minutes": 2, "action": "stop"}
    assert status["job"]["progress"]["eta_seconds"] == 72 and status["job"]["run_dir"] == run_dir
    assert status["cost"]["per_hour"] == 5.952
    assert status["cost"]["so_far"] == pytest.approx(11.9, abs=0.1)  # two hours at the list price


def test_idle_minutes_zero_removes_what_it_installed_and_only_that(node, installed):
    on(node, "mkdir -p /etc/amx-cluster && echo mine > /etc/amx-cluster/user-notes")
    off = playbook(node, "-e", "ec2_cluster_idle_minutes=0")
    assert recap(off.stdout)["changed"] == 1
    assert on(node, f"ls {SCRIPT} {CONFIG} {' '.join(UNITS)} 2>&1 || true").count("No such file") == 4
    assert on(node, "cat /etc/amx-cluster/user-notes").strip() == "mine"
    assert recap(playbook(node, "-e", "ec2_cluster_idle_minutes=0").stdout)["changed"] == 0
