# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The amx.cluster.train_job action plugin, run by ansible-playbook against this machine on small bash jobs."""

import base64
import io
import json
import os
import subprocess
import sys
import tarfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from ansible_collections.amx.cluster.plugins.action.train_job import next_look

REPO = Path(__file__).resolve().parents[4]
PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Run the job
      amx.cluster.train_job:
        run_dir: "{{ run_dir }}"
        run_id: "{{ run_id }}"
        script: launch.sh
        python: "{{ ansible_playbook_python }}"
        nodes: "{{ cluster | default([{'alias': 'localhost', 'name': 'head'}]) }}"
        processes_per_node: 2
        progress_file: progress.jsonl
        poll_interval: "{{ poll | default(0.5) }}"
        long_poll: "{{ long_poll | default(omit) }}"
        heartbeat: 2
        timeout: "{{ limit | default(60) }}"
        rerun: "{{ rerun | default(false) }}"
        hint: Look at the network.
        bundle: "{{ bundle | default(false) }}"
        bundle_limit: "{{ bundle_limit | default(omit) }}"
        bundle_skip: "{{ bundle_skip | default(omit) }}"
      register: job
      failed_when: false

    - name: Keep the result
      ansible.builtin.copy:
        content: "{{ job | to_json }}"
        dest: "{{ run_dir }}/task.json"
        mode: "0644"
"""

# Four ranks of a fake job, two "nodes": progress lines from rank 0; rank 3 can be made to die.
JOB = r"""
for step in 1 2 3 4; do
  sleep 0.4
  printf '{"step": %d, "total_steps": 4, "epoch": 0.%d, "loss": 1.%d, ' "$step" "$step" "$step" >> progress.jsonl
  printf '"samples_per_second": 8.0, "eta_seconds": %d}\n' "$((4 - step))" >> progress.jsonl
  echo "[0] step $step"
  if [ "${DIE:-}" = "$step" ]; then
    echo "[3] Traceback (most recent call last):"
    echo "[3] RuntimeError: out of patience"
    echo "[3] amx.cluster: rank 3 ended: exit code 1, pid 4242 on worker-b"
    exit 7
  fi
done
"""


def play(run_dir, *extra, check=False, callback=None, fails=False, verbose=False):
    """Run the play; returns (stderr, where the progress lines go; the task's result; stdout).

    With ``fails``, the play must fail (an error raised before the job starts, which failed_when does not cover)."""
    playbook = run_dir.parent / "play.yml"
    playbook.write_text(PLAY)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0")
    if callback:
        env["ANSIBLE_STDOUT_CALLBACK"] = callback
    argv = [str(PLAYBOOK), "-i", "localhost,", str(playbook), "-e", f"ansible_python_interpreter={sys.executable}"]
    argv += ["-e", f"run_dir={run_dir}", "-e", f"run_id={run_dir.name}"]
    for item in extra:
        argv += ["-e", item]
    if check:
        argv.append("--check")
    if verbose:
        argv.append("-vvv")
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert (done.returncode != 0) if fails else (done.returncode == 0), done.stdout + done.stderr
    task = json.loads((run_dir / "task.json").read_text()) if (run_dir / "task.json").exists() else None
    return done.stderr, task, done.stdout


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / ("run-" + uuid.uuid4().hex[:8])
    folder.mkdir()
    return folder


def write_job(run_dir, body=JOB, die=None):
    prefix = f"export DIE={die}\n" if die else ""
    (run_dir / "launch.sh").write_text("#!/usr/bin/env bash\nset -eo pipefail\n" + prefix + textwrap.dedent(body))


@pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not next to this Python")
@pytest.mark.parametrize("extra", [[], ["long_poll=0"]], ids=["long-poll", "look-every-poll-interval"])
def test_a_job_runs_shows_progress_and_is_reported_once(run_dir, extra):
    write_job(run_dir)
    out, task, stdout = play(run_dir, *extra)
    assert "job [localhost] started " in out
    assert "job [localhost] step 4/4 (100%) | epoch 0.40 | loss 1.4000 | 8.0 samples/s | ETA 0:00:00" in out
    assert "job [localhost] finished in 0:00:0" in out
    assert task["state"] == "started"
    assert task["changed"] is True
    assert task["job_failed"] is False
    assert task["rc"] == 0
    assert task["last_progress"]["step"] == 4
    assert task["progress_count"] >= 1
    assert task["left_running"] == {}
    assert task["rank_lines"]["rank-0"][-1] == "step 4"
    assert (run_dir / "logs" / "job" / "rank-0.log").read_text().splitlines()[-1] == "step 4"

    # The same task again: the job ended, it is reported and not started (0 changed).
    assert "TASK [Run the job]" in stdout and "job [localhost]" not in stdout
    out, again, _stdout = play(run_dir)
    assert again["state"] == "finished_before"
    assert again["changed"] is False
    assert again["rc"] == 0
    assert "started" not in out


@pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not next to this Python")
def test_the_job_says_its_phases_and_starts_and_ends_without_round_trips_of_their_own(run_dir):
    """Each command on the master is one round trip (an EXEC line at -vvv): the agent is written and started in
    one, and the answer that has the result has the final one's too (no `final` command)."""
    write_job(run_dir)
    started = time.monotonic()
    _out, task, stdout = play(run_dir, "bundle=true", verbose=True)
    took = time.monotonic() - started
    commands = [line for line in stdout.splitlines() if line.startswith("<localhost> EXEC ")]
    agent = [line for line in commands if "train_agent.py" in line]
    assert [line for line in agent if " start " in line or " final " in line] == agent[:1], agent
    assert " start " in agent[0] and "base64.b64decode" in agent[0]
    phases = task["phases"]
    assert sorted(phases) == ["job", "job_start", "notice", "results", "sweep"]
    assert all(isinstance(seconds, float) and seconds >= 0 for seconds in phases.values()), phases
    assert phases["job"] >= 1.6  # the job's four steps of 0.4 s
    assert sum(phases.values()) <= took
    assert "launch.sh" in unpack(task["bundle"])


@pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not next to this Python")
def test_a_failed_job_names_the_rank_and_its_host(run_dir):
    # node1 does not exist: the clean-up cannot reach it, and says so.
    cluster = [{"alias": "localhost", "name": "head"}, {"alias": "node1", "name": "worker-b"}]
    write_job(run_dir, die=2)
    task = play(run_dir, json.dumps({"cluster": cluster}))[1]
    assert task["job_failed"] is True
    assert task["rc"] == 7
    assert task["failure"]["rank"] == 3
    assert task["failure"]["host"] == "worker-b (node1)"
    message = task["msg"]
    assert message.startswith("job on localhost failed after 0:00:0")
    assert "rank 3 on worker-b (node1) failed with RuntimeError: out of patience (exit code 1)" in message
    assert "last progress: step 2/4 (50%)" in message
    assert "Look at the network." in message
    assert "Could not check for processes left on: {'worker-b (node1)': 'ssh node1 exited 255" in message
    assert "No process of the run is left" not in message


@pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not next to this Python")
def test_the_time_limit_stops_a_hanging_job(run_dir):
    write_job(run_dir, body='echo "[0] waiting for a peer"\nsleep 120\n')
    out, task, _stdout = play(run_dir, "limit=2")
    assert task["job_failed"] is True
    assert task["timed_out"] is True
    assert task["msg"].startswith("job on localhost did not finish within 0:00:02: stopped it")
    assert "running, 0:00:0" in out  # the heartbeat while nothing progressed


@pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not next to this Python")
def test_check_mode_starts_nothing(run_dir):
    write_job(run_dir)
    task = play(run_dir, check=True)[1]
    assert task is None  # the copy task did not write either
    assert not (run_dir / "state").exists()
    assert not (run_dir / "progress.jsonl").exists()


@pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not next to this Python")
def test_progress_keeps_the_json_callback_output_one_document(run_dir):
    """Pipelines read stdout as the callback's document: the progress lines go to stderr, for people."""
    write_job(run_dir)
    out, task, stdout = play(run_dir, callback="json")
    document = json.loads(stdout)  # the whole of stdout, from its first character
    assert document["stats"]["localhost"]["failures"] == 0
    assert task["rc"] == 0
    assert "job [localhost] finished in 0:00:0" in out


@pytest.mark.parametrize(
    ("poll_interval", "long_poll", "heartbeat", "waited", "failures", "expected"),
    [
        # Without a long poll: today's loop, a sleep (1 s at most in the first 3 s), then an answer at once.
        (5.0, 0.0, 60, 0.5, 0, (1.0, 0.0)),
        (5.0, 0.0, 60, 10.0, 0, (5.0, 0.0)),
        (0.5, 0.0, 60, 10.0, 0, (0.5, 0.0)),
        # With one: no sleep; the agent holds the answer up to long_poll, never past the heartbeat.
        (5.0, 20.0, 60, 0.5, 0, (0.0, 20.0)),
        (5.0, 20.0, 60, 100.0, 0, (0.0, 20.0)),
        (5.0, 20.0, 2, 100.0, 0, (0.0, 2.0)),
        (5.0, 20.0, 0, 100.0, 0, (0.0, 20.0)),  # no heartbeat: no bound from it
        # A retry after a failed look keeps the pace of poll_interval.
        (5.0, 20.0, 60, 100.0, 1, (5.0, 20.0)),
        (5.0, 20.0, 60, 1.0, 2, (1.0, 20.0)),
    ],
)
def test_next_look(poll_interval, long_poll, heartbeat, waited, failures, expected):
    assert next_look(poll_interval, long_poll, heartbeat, waited, failures) == expected


@pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not next to this Python")
def test_the_long_poll_follows_a_job_without_sleeping_between_looks(run_dir):
    # A job that outlasts the loop's first 3 s of short sleeps; after them, the loop without a long poll would sleep
    # poll_interval (120 s) before its next look. With the long poll the task ends when the job does.
    write_job(run_dir, body="sleep 4\n" + JOB)
    started = time.monotonic()
    out, task, _stdout = play(run_dir, "poll=120")
    took = time.monotonic() - started
    assert task["rc"] == 0 and task["job_failed"] is False
    assert "job [localhost] step 4/4 (100%)" in out
    assert took < 100, f"the task took {took:.0f} s: it slept poll_interval between looks"


def unpack(bundle):
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(bundle)), mode="r:gz") as tar:
        return {member.name: tar.extractfile(member).read() for member in tar.getmembers()}


@pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not next to this Python")
def test_the_bundle_comes_back_with_the_result_when_asked(run_dir):
    write_job(run_dir)
    (run_dir / "output").mkdir()
    (run_dir / "output" / "model.bin").write_bytes(b"weights")
    task = play(run_dir, "bundle=true")[1]
    assert task["rc"] == 0 and "bundle_error" not in task
    files = unpack(task["bundle"])
    assert sorted(files) == [
        "launch.sh",
        "logs/job/rank-0.log",
        "progress.jsonl",
        "state/job/attempts.json",
        "state/job/launcher.log",
        "state/job/result.json",
        "state/job/supervisor.json",
    ]
    assert files["logs/job/rank-0.log"].decode().splitlines()[-1] == "step 4"
    assert json.loads(files["state/job/result.json"])["rc"] == 0

    # Over its limit: no bundle, and why.
    too_big = play(run_dir, "bundle=true", "bundle_limit=64", "rerun=true")[1]
    assert "bundle" not in too_big
    # The first run's task.json is in the folder now.
    assert too_big["bundle_error"].startswith(f"the bundle of {run_dir} (8 files) is ")
    assert too_big["bundle_error"].endswith(
        " bytes as a tar.gz, more than its limit of 64 bytes: raise the limit or leave more out with its skip pattern"
    )


@pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not next to this Python")
def test_no_bundle_unless_asked(run_dir):
    write_job(run_dir, body="echo '[0] done'\n")
    task = play(run_dir)[1]
    assert task["rc"] == 0
    assert "bundle" not in task and "bundle_error" not in task


@pytest.mark.skipif(not PLAYBOOK.exists(), reason="ansible-playbook is not next to this Python")
def test_a_bad_bundle_pattern_is_refused_before_anything_starts(run_dir):
    write_job(run_dir)
    out, task, stdout = play(run_dir, "bundle=true", "bundle_skip=(unclosed", fails=True)
    assert task is None
    assert (
        "bundle_skip for localhost is not a regular expression (missing ), unterminated subpattern at position 0): "
        "give one that finds the run-folder-relative paths to leave out of the bundle, or an empty string for none"
    ) in " ".join((out + stdout).split())
    assert not (run_dir / "state").exists()
    assert not (run_dir / "progress.jsonl").exists()
