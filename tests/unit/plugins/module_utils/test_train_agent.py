# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The run agent of amx.cluster.train_job (module_utils/train_agent.py), on real processes of this machine."""

import base64
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import uuid

import pytest

from ansible_collections.amx.cluster.plugins.module_utils import train_agent

AGENT = train_agent.__file__


def agent(command, cfg):
    done = subprocess.run(
        [sys.executable, AGENT, command, json.dumps(cfg)], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_for_result(cfg, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        answer = agent("status", cfg)
        if answer["result"] is not None:
            return answer["result"]
        time.sleep(0.2)
    raise AssertionError(f"no result after {seconds} s: {agent('status', cfg)}")


@pytest.fixture
def run(tmp_path):
    run_id = "test-" + uuid.uuid4().hex[:8]
    run_dir = tmp_path / run_id
    run_dir.mkdir()
    cfg = {
        "run_id": run_id,
        "job": run_id + "/job",
        "run_dir": str(run_dir),
        "state_dir": str(run_dir / "state" / "job"),
        "logs_dir": str(run_dir / "logs" / "job"),
        "script": str(run_dir / "launch.sh"),
        "progress_file": str(run_dir / "progress.jsonl"),
        "timeout": 0,
        "workers": [],
    }
    yield cfg
    train_agent.sweep(cfg["job"], grace=1)


def write_script(cfg, body):
    with open(cfg["script"], "w") as handle:
        handle.write("#!/usr/bin/env bash\nset -eo pipefail\n" + body)


@pytest.fixture
def marked(run):
    """A process of the job (rank 3), one of another job of the same run, and one that is no job's."""
    procs = []
    for job, seconds in ((run["job"], "60"), (run["run_id"] + "/smoke", "61"), (None, "62")):
        env = dict(os.environ, PMI_RANK="3")
        if job:
            env["AMX_CLUSTER_JOB"] = job
        procs.append(subprocess.Popen(["sleep", seconds], env=env))
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait()


def test_scan_finds_the_job_by_its_environment(run, marked):
    ours, sibling, other = marked
    found = train_agent.scan(run["job"])
    assert [(item["pid"], item["rank"]) for item in found] == [(ours.pid, 3)]
    assert [item["pid"] for item in train_agent.scan(run["run_id"] + "/smoke")] == [sibling.pid]
    assert other.pid not in [item["pid"] for item in train_agent.scan(run["run_id"])]


def test_sweep_ends_the_job_and_nothing_else(run, marked):
    ours, sibling, other = marked
    answer = train_agent.sweep(run["job"], grace=2)
    assert answer["found"] == [ours.pid]
    assert answer["left"] == []
    assert ours.wait(timeout=5) == -15
    assert sibling.poll() is None
    assert other.poll() is None


def test_sweep_kills_what_ignores_sigterm(run):
    env = dict(os.environ, AMX_CLUSTER_JOB=run["job"])
    stubborn = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"],
        env=env,
    )
    time.sleep(0.5)
    started = time.time()
    answer = train_agent.sweep(run["job"], grace=1)
    assert answer["left"] == []
    assert stubborn.wait(timeout=5) == -9
    assert time.time() - started < 10


def test_the_workers_are_swept_at_once(run, tmp_path, monkeypatch):
    # A stand-in ssh on PATH records when each worker's sweep starts and ends (the real one over the mesh runs in
    # the fleet scenario): every sweep starts before the first one ends, so 8 workers take one worker's time.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    events = tmp_path / "events"
    fake_ssh = bin_dir / "ssh"
    fake_ssh.write_text(
        "#!/bin/sh\n"
        f'echo "start" >> {events}\n'
        "cat > /dev/null\n"
        "sleep 1\n"
        f'echo "end" >> {events}\n'
        'echo \'{"found": [], "left": []}\'\n'
    )
    fake_ssh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    cfg = dict(run, workers=[f"node{index}" for index in range(1, 9)])
    sweeps = train_agent.sweep_cluster(cfg)
    assert sorted(sweeps) == ["localhost"] + [f"node{index}" for index in range(1, 9)]
    assert all(answer == {"found": [], "left": []} for alias, answer in sweeps.items() if alias != "localhost")
    assert events.read_text().split() == ["start"] * 8 + ["end"] * 8


@pytest.mark.parametrize(
    ("content", "offset", "text", "new_offset"),
    [
        ("a\nb\n", 0, "a\nb\n", 4),
        ("a\nb\npart", 0, "a\nb\n", 4),  # a line still being written waits for the next look
        ("a\nb\nc\n", 4, "c\n", 6),
        ("x\n", 10, "x\n", 2),  # shorter than the offset: the file was replaced, read it again
    ],
)
def test_read_from(tmp_path, content, offset, text, new_offset):
    path = tmp_path / "log"
    path.write_text(content)
    answer = train_agent.read_from(str(path), offset)
    assert (answer["text"], answer["offset"]) == (text, new_offset)


def test_read_from_a_missing_file(tmp_path):
    assert train_agent.read_from(str(tmp_path / "none"), 5) == {"text": "", "offset": 0, "skipped": 0, "exists": False}


def test_start_detaches_reports_progress_and_splits_the_logs(run):
    write_script(
        run,
        'echo "[0] starting"\necho "[1] starting"\n'
        'for step in 1 2 3; do sleep 0.5; echo "{\\"step\\": $step, \\"total_steps\\": 3}" >> progress.jsonl; done\n'
        'echo "[1] done"\necho "[0] done"\n',
    )
    started = time.time()
    answer = agent("start", run)
    assert answer["state"] == "started"
    assert time.time() - started < 1.4, "start returns before the run ends"
    assert 0 <= answer["running"] < 1.4  # the job's time when the answer left, for the caller's start phase
    supervisor = answer["supervisor"]["pid"]
    assert os.getsid(supervisor) == supervisor, "the supervisor leads a session of its own"

    result = wait_for_result(run)
    assert result["rc"] == 0 and result["timed_out"] is False
    assert result["sweeps"]["localhost"]["left"] == []
    assert 0 <= result["sweep_seconds"] < 30 and result["duration"] >= 1.5
    status = agent("status", run)
    assert [json.loads(line)["step"] for line in status["progress"]["text"].splitlines()] == [1, 2, 3]
    logs = sorted(os.listdir(run["logs_dir"]))
    assert logs == ["rank-0.log", "rank-1.log"]
    with open(os.path.join(run["logs_dir"], "rank-1.log")) as handle:
        assert handle.read() == "starting\ndone\n"

    again = agent("start", run)
    assert again["state"] == "finished_before"
    assert again["result"]["rc"] == 0
    final = agent("final", run)
    assert "[0] done" in final["log_tail"]


def test_start_attaches_to_a_live_run_and_reruns_on_request(run):
    write_script(run, "sleep 2\necho '[0] once'\n")
    assert agent("start", run)["state"] == "started"
    assert agent("start", run)["state"] == "attached"
    assert wait_for_result(run)["rc"] == 0
    rerun = dict(run, rerun=True)
    assert agent("start", rerun)["state"] == "started"
    assert wait_for_result(rerun)["rc"] == 0


def test_a_failing_launcher_is_recorded(run):
    write_script(run, "echo '[0] RuntimeError: boom'\nexit 3\n")
    agent("start", run)
    result = wait_for_result(run)
    assert result["rc"] == 3
    assert "RuntimeError: boom" in agent("final", run)["log_tail"]


def test_the_time_limit_ends_the_run_and_its_processes(run):
    run["timeout"] = 2
    write_script(run, "sleep 300 &\nsleep 300\n")
    started = time.time()
    agent("start", run)
    result = wait_for_result(run, seconds=40)
    assert result["timed_out"] is True
    assert result["rc"] < 0
    assert 2 <= time.time() - started < 30
    assert train_agent.scan(run["job"]) == []


def test_what_escapes_the_launcher_is_swept_once_it_ends(run):
    # A rank that left the launcher's process group (setsid) still carries the job's mark.
    write_script(run, "setsid sleep 300 < /dev/null > /dev/null 2>&1 &\nsleep 1\n")
    agent("start", run)
    result = wait_for_result(run)
    assert result["rc"] == 0
    assert len(result["sweeps"]["localhost"]["found"]) == 1
    assert result["sweeps"]["localhost"]["left"] == []
    assert train_agent.scan(run["job"]) == []


def test_start_without_a_script(run):
    assert agent("start", run) == {"error": f"no launch script at {run['script']}", "state": "error"}


def test_usage():
    done = subprocess.run([sys.executable, AGENT, "nonsense"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "usage" in json.loads(done.stdout)["error"]


def test_secret_variables_reach_the_launcher_from_stdin_and_are_written_nowhere(run):
    marker = "s3cret-" + uuid.uuid4().hex
    # The launcher proves it sees the value by a digest of it; the value itself must not land in any file.
    write_script(run, 'printf "%s" "$AMX_TEST_SECRET" | sha256sum > seen.txt\n')
    cfg = dict(run, secrets_on_stdin=True)
    done = subprocess.run(
        [sys.executable, AGENT, "start", json.dumps(cfg)],
        input=json.dumps({"AMX_TEST_SECRET": marker}),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert marker not in done.stdout + done.stderr
    assert wait_for_result(run)["rc"] == 0

    with open(os.path.join(run["run_dir"], "seen.txt")) as handle:
        seen = handle.read().split()[0]
    assert seen == hashlib.sha256(marker.encode()).hexdigest()
    for folder, _dirs, files in os.walk(run["run_dir"]):
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                assert marker.encode() not in handle.read(), os.path.join(folder, name)


def test_without_secrets_on_stdin_the_launcher_gets_none(run):
    write_script(run, 'printf "[%s]" "${AMX_TEST_SECRET:-}" > seen.txt\n')
    agent("start", run)
    assert wait_for_result(run)["rc"] == 0
    with open(os.path.join(run["run_dir"], "seen.txt")) as handle:
        assert handle.read() == "[]"


def test_a_failed_job_is_kept_and_a_new_attempt_goes_on_with_its_variables(run):
    # The first attempt fails after its progress and rank output; the second sees the variables it was given and
    # the list of the earlier attempts.
    write_script(
        run,
        'if [[ -z "${AMX_CLUSTER_RESUME_FROM:-}" ]]; then\n'
        '  echo \'{"step": 1}\' >> progress.jsonl; echo "[0] first"; exit 9\n'
        "fi\n"
        'echo \'{"step": 2}\' >> progress.jsonl; echo "[0] from $AMX_CLUSTER_RESUME_FROM"\n'
        'cp "$AMX_CLUSTER_ATTEMPTS_FILE" seen-attempts.json\n',
    )
    agent("start", run)
    assert wait_for_result(run)["rc"] == 9
    assert agent("start", run)["state"] == "finished_before", "without retry_failed a failure is reported"

    retry = dict(run, retry_failed=True, env={"AMX_CLUSTER_RESUME_FROM": "/r/output/checkpoint-40"})
    assert agent("start", retry)["state"] == "started"
    result = wait_for_result(retry)
    assert result["rc"] == 0 and result["env"] == {"AMX_CLUSTER_RESUME_FROM": "/r/output/checkpoint-40"}

    kept = os.path.join(run["state_dir"], "attempts", "1")
    assert sorted(os.listdir(kept)) == ["launcher.log", "logs", "progress.jsonl", "result.json"]
    with open(os.path.join(kept, "logs", "rank-0.log")) as handle:
        assert handle.read() == "first\n"
    with open(os.path.join(kept, "progress.jsonl")) as handle:
        assert handle.read() == '{"step": 1}\n'
    with open(run["progress_file"]) as handle:
        assert handle.read() == '{"step": 2}\n', "the new attempt's progress starts afresh"
    with open(os.path.join(run["logs_dir"], "rank-0.log")) as handle:
        assert handle.read() == "from /r/output/checkpoint-40\n"
    with open(os.path.join(run["run_dir"], "seen-attempts.json")) as handle:
        seen = json.load(handle)
    assert [(a["attempt"], a["rc"], a["kept_in"]) for a in seen] == [(1, 9, kept)]

    summary = train_agent.attempt_summary(agent("final", run)["attempts"] + [result])
    assert [(a["attempt"], a["rc"], a["resumed_from"]) for a in summary] == [
        (1, 9, None),
        (2, 0, "/r/output/checkpoint-40"),
    ]
    assert agent("start", retry)["state"] == "finished_before", "a job that succeeded is never run again"


def test_a_timed_out_attempt_counts_as_failed():
    assert train_agent.failed({"rc": 0, "timed_out": True})
    assert train_agent.failed({"rc": None})
    assert not train_agent.failed({"rc": 0, "timed_out": False})


# ----------------------------------------------------------------------------- status with wait: the long poll


@pytest.fixture
def watched(run):
    """A run being watched: a real process stands for its supervisor (its command line names the agent, as the
    supervisor's does), the launcher's output and the progress file hold a line each, and the caller is at their
    ends."""
    os.makedirs(run["state_dir"])
    supervisor = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; time.sleep(float(sys.argv[1]))", "60", train_agent.AGENT_NAME]
    )
    with open(os.path.join(run["state_dir"], "supervisor.json"), "w") as handle:
        json.dump({"pid": supervisor.pid, "started": time.time()}, handle)
    log = os.path.join(run["state_dir"], "launcher.log")
    with open(log, "w") as handle:
        handle.write("[0] starting\n")
    with open(run["progress_file"], "w") as handle:
        handle.write('{"step": 1}\n')
    cfg = dict(run, log_offset=len("[0] starting\n"), progress_offset=len('{"step": 1}\n'))
    # On a loaded machine the stand-in may not be seen as the supervisor at once: the tests start once it is.
    deadline = time.monotonic() + 30
    while not train_agent.supervisor_alive(cfg) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert train_agent.supervisor_alive(cfg)
    yield cfg, supervisor, log
    supervisor.kill()
    supervisor.wait()


def later(seconds, command):
    """A shell command run ``seconds`` from now, in the background."""
    return subprocess.Popen(["/bin/sh", "-c", f"sleep {seconds}; {command}"])


def timed_status(cfg):
    started = time.monotonic()
    answer = agent("status", cfg)
    return answer, time.monotonic() - started


def test_status_without_wait_answers_at_once_with_nothing_new(watched):
    cfg, _supervisor, _log = watched
    answer = agent("status", cfg)
    assert answer["alive"] is True and answer["result"] is None
    assert (answer["log"]["text"], answer["progress"]["text"]) == ("", "")


def test_status_waits_until_the_log_grows(watched):
    cfg, _supervisor, log = watched
    writer = later(1, f"echo '[0] step 1' >> {log}")
    answer, took = timed_status(dict(cfg, wait=60))
    writer.wait()
    assert answer["log"]["text"] == "[0] step 1\n"
    assert answer["alive"] is True and answer["result"] is None
    assert took < 45, "it answered when the line came, not at the end of the wait"


def test_status_waits_until_the_progress_file_grows(watched):
    cfg, _supervisor, _log = watched
    writer = later(1, "echo '{\"step\": 2}' >> " + cfg["progress_file"])
    answer, took = timed_status(dict(cfg, wait=60))
    writer.wait()
    assert answer["progress"]["text"] == '{"step": 2}\n'
    assert took < 45


def test_status_does_not_answer_for_half_a_line(watched):
    cfg, _supervisor, log = watched
    writer = later(0.5, f"printf '[0] still writ' >> {log}")
    answer, took = timed_status(dict(cfg, wait=2))
    writer.wait()
    assert answer["log"]["text"] == "" and answer["log"]["offset"] == cfg["log_offset"]
    assert took >= 1.9


def test_status_waits_until_the_result_is_written(watched):
    cfg, _supervisor, _log = watched
    result = os.path.join(cfg["state_dir"], "result.json")
    writer = later(1, f"echo '{{\"rc\": 0}}' > {result}.tmp && mv {result}.tmp {result}")
    answer, took = timed_status(dict(cfg, wait=60))
    writer.wait()
    assert answer["result"] == {"rc": 0}
    assert took < 45


def test_status_with_final_carries_its_answer_once_the_result_is_there(watched):
    cfg, _supervisor, _log = watched
    asked = dict(cfg, final={"log_limit": 1024})
    assert "final" not in agent("status", asked)  # still running: nothing final yet
    result = os.path.join(cfg["state_dir"], "result.json")
    with open(result, "w") as handle:
        handle.write('{"rc": 0, "duration": 1.5, "sweep_seconds": 0.2}\n')
    answer = agent("status", asked)
    assert answer["final"]["result"] == answer["result"] == {"rc": 0, "duration": 1.5, "sweep_seconds": 0.2}
    assert answer["final"]["log_tail"] == "[0] starting\n"
    assert 0 <= answer["final"]["seconds"] < 30
    assert "final" not in agent("status", cfg)  # not asked for


def test_status_waits_until_the_supervisor_is_gone(watched):
    cfg, supervisor, _log = watched
    killer = later(1, f"kill {supervisor.pid}")
    answer, took = timed_status(dict(cfg, wait=60))
    killer.wait()
    assert answer["alive"] is False and answer["result"] is None
    assert took < 45


def test_status_answers_after_the_wait_when_nothing_is_new(watched):
    cfg, _supervisor, _log = watched
    started = time.monotonic()
    answer = train_agent.status(dict(cfg, wait=1.5))
    took = time.monotonic() - started
    # What the answer says first: an early answer then shows what the agent took for news.
    assert answer["alive"] is True and answer["result"] is None
    assert answer["log"] == {"text": "", "offset": cfg["log_offset"], "skipped": 0, "exists": True}
    assert answer["progress"]["offset"] == cfg["progress_offset"]
    assert took >= 1.4


def test_status_answers_at_once_when_something_is_new_already(watched):
    cfg, _supervisor, _log = watched
    # The caller has not read the first lines yet: nothing to wait for.
    answer, took = timed_status(dict(cfg, log_offset=0, progress_offset=0, wait=60))
    assert answer["log"]["text"] == "[0] starting\n"
    assert answer["progress"]["text"] == '{"step": 1}\n'
    assert took < 45


# ----------------------------------------------------------------------------- final with bundle


def unpack(answer):
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(answer["bundle"])), mode="r:gz") as tar:
        return {
            member.name: tar.extractfile(member).read().decode() for member in tar.getmembers() if member.isfile()
        }, [member.name for member in tar.getmembers()]


@pytest.fixture
def run_files(run):
    """A finished run's folder: the agent, the job's state and logs, the model's output, a symlink."""
    root = run["run_dir"]
    files = {
        "state/train_agent.py": "# the agent\n",
        "state/__pycache__/train_agent.cpython-311.pyc": "bytes",
        "state/job/result.json": '{"rc": 0}\n',
        "state/job/launcher.log": "[0] done\n",
        "logs/job/rank-0.log": "done\n",
        "output/model.safetensors": "weights",
        "output/checkpoint-2/optimizer.pt": "state",
        "metrics.json": '{"eval_f1": 1.0}\n',
        "launch.sh": "mpirun ...\n",
        "report/output/plot.txt": "kept: output/ only at the top is left out\n",
    }
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        with open(os.path.join(root, name), "w") as handle:
            handle.write(text)
    os.symlink("/etc/hostname", os.path.join(root, "link-to-elsewhere"))
    return run, files


DEFAULT_SKIP = r"^state/train_agent\.py$|(^|/)__pycache__/|^output/"


def test_final_without_bundle_has_none(run_files):
    run, _files = run_files
    answer = agent("final", run)
    assert "bundle" not in answer and "bundle_error" not in answer


def test_final_bundles_every_file_of_the_run(run_files):
    run, files = run_files
    answer = agent("final", dict(run, bundle={}))
    contents, names = unpack(answer)
    assert names == sorted(files), "every regular file, sorted, relative to the run folder; no symlink"
    assert contents == files
    assert answer["result"] == {"rc": 0} and "bundle_error" not in answer


def test_final_bundle_leaves_out_what_skip_finds(run_files):
    run, files = run_files
    contents, names = unpack(agent("final", dict(run, bundle={"skip": DEFAULT_SKIP, "limit": 1 << 20})))
    assert names == [
        "launch.sh",
        "logs/job/rank-0.log",
        "metrics.json",
        "report/output/plot.txt",
        "state/job/launcher.log",
        "state/job/result.json",
    ]
    assert contents["metrics.json"] == files["metrics.json"]


def test_final_bundle_over_its_limit_is_left_out_and_says_how_big_it_was(run_files):
    run, _files = run_files
    whole = len(base64.b64decode(agent("final", dict(run, bundle={}))["bundle"]))
    answer = agent("final", dict(run, bundle={"limit": 100}))
    assert "bundle" not in answer
    assert answer["bundle_error"] == (
        f"the bundle of {run['run_dir']} (10 files) is {whole} bytes as a tar.gz, more than its limit of 100 bytes: "
        "raise the limit or leave more out with its skip pattern"
    )
    assert "bundle" in agent("final", dict(run, bundle={"limit": whole}))


def test_final_bundle_with_a_bad_pattern_says_so(run_files):
    run, _files = run_files
    answer = agent("final", dict(run, bundle={"skip": "(unclosed"}))
    assert "bundle" not in answer
    assert answer["bundle_error"].startswith("the bundle's skip pattern '(unclosed' is not a regular expression")


def test_a_group_is_ended_as_soon_as_it_is_gone_though_its_leader_is_this_processs_child():
    """kill_group waits for the group to empty, up to its grace. A leader that is this process's child stays a zombie,
    a member of the group, until it is reaped: with reap (Popen.poll) the grace is not waited out (before, every job
    stopped at its time limit waited 5 s of SIGTERM grace and 5 s after SIGKILL for its own launcher's zombie)."""
    leader = subprocess.Popen(["sh", "-c", "sleep 300 & sleep 300; wait"], start_new_session=True)
    started = time.monotonic()
    train_agent.kill_group(leader.pid, grace=60.0, reap=leader.poll)
    waited = time.monotonic() - started
    # Both sleeps and the shell end at the SIGTERM; the 60 s grace is never needed.
    assert leader.returncode == -15, leader.returncode
    assert waited < 30, f"kill_group waited {waited:.1f} s for a group that had ended"
