# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Progress lines and failure reports of amx.cluster.train_job (module_utils/train_progress.py)."""

import json

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.train_progress import (
    analyse_failure,
    failure_message,
    format_duration,
    format_progress,
    left_running,
    parse_log_progress,
    parse_progress,
    rank_reports,
    split_ranks,
)

HYDRA_BANNER = """
===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   PID 12771 RUNNING AT localhost
=   EXIT CODE: 9
=   CLEANING UP REMAINING PROCESSES
=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES
===================================================================================
YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)
"""


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (0, "0:00:00"),
        (75, "0:01:15"),
        (3725.4, "1:02:05"),
        ("59.6", "0:01:00"),
        (None, "?"),
        ("soon", "?"),
        (-3, "0:00:00"),
    ],
)
def test_format_duration(seconds, expected):
    assert format_duration(seconds) == expected


def test_parse_progress_keeps_records_and_skips_the_rest():
    text = "\n".join(
        [
            json.dumps({"step": 10, "total_steps": 40, "loss": 2.5}),
            "not json",
            '{"step": 20, "total_steps": 40',  # a line still being written
            json.dumps({"no_step": 1}),
            json.dumps([1, 2]),
            json.dumps({"step": 30, "total_steps": 40, "loss": 1.5}),
        ]
    )
    assert [record["step"] for record in parse_progress(text)] == [10, 30]


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (
            {
                "step": 40,
                "total_steps": 120,
                "epoch": 0.3333,
                "loss": 4.91234,
                "samples_per_second": 41.23,
                "eta_seconds": 72,
                "rank": 0,
            },
            "step 40/120 (33%) | epoch 0.33 | loss 4.9123 | 41.2 samples/s | ETA 0:01:12",
        ),
        ({"step": 7}, "step 7"),
        ({"step": 5, "total_steps": 10, "loss": None, "rate": "2.5 it/s"}, "step 5/10 (50%) | 2.5 it/s"),
        ({"step": 120, "total_steps": 120, "eta_seconds": 0}, "step 120/120 (100%) | ETA 0:00:00"),
    ],
)
def test_format_progress(record, expected):
    assert format_progress(record) == expected


def test_parse_log_progress_reads_tqdm_and_the_logged_loss():
    text = (
        "[0]  12%|#2        | 24/200 [00:10<01:13,  2.40it/s]\r"
        "[0] {'loss': '1.2345', 'grad_norm': '3.1', 'learning_rate': '4e-05', 'epoch': '0.12'}\n"
    )
    record = parse_log_progress(text)
    assert record["step"] == 24
    assert record["total_steps"] == 200
    assert record["eta_seconds"] == 73
    assert record["rate"] == "2.40 it/s"
    assert record["loss"] == pytest.approx(1.2345)
    assert record["epoch"] == pytest.approx(0.12)


def test_parse_log_progress_transformers_4_floats_and_nothing_new():
    old = {"step": 3, "total_steps": 9}
    record = parse_log_progress("{'loss': 0.75, 'learning_rate': 5e-05, 'epoch': 1.0}", old)
    assert record == {"step": 3, "total_steps": 9, "loss": 0.75, "epoch": 1.0}
    assert parse_log_progress("loading the data set\n", old) == old
    assert parse_log_progress("nothing here") is None


def test_split_ranks_reassembles_chunks_of_a_line():
    # Hydra prefixes every chunk a rank writes: print() in pieces, and two ranks writing into one line.
    text = "[0] hello 0 9147\n[1] hello[1]  [1] 1 9148\n[0] a[1] b\n[0] c\n"
    assert split_ranks(text) == {"rank-0": ["hello 0 9147", "ac"], "rank-1": ["hello 1 9148", "b"]}


def test_split_ranks_keeps_launcher_lines_carriage_returns_and_unfinished_lines():
    text = "[0] \rLoading: 0%[0] \rLoading: 100%[0] \n" + HYDRA_BANNER + "[2] unfinished"
    parts = split_ranks(text)
    assert parts["rank-0"] == ["Loading: 0%", "Loading: 100%"]
    assert parts["rank-2"] == ["unfinished"]
    assert parts["launcher"][1] == "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"
    assert parts["launcher"][-1].startswith("YOUR APPLICATION TERMINATED")


def test_rank_reports_in_order():
    text = (
        "[3] amx.cluster: rank 3 ended: signal 9 (KILL), pid 4242 on ip-10-0-0-12\n"
        "[0] amx.cluster: rank 0 ended: exit code 1, pid 17 on master\n"
    )
    assert rank_reports(text) == [
        {"rank": 3, "how": "signal 9 (KILL)", "signal": 9, "pid": 4242, "hostname": "ip-10-0-0-12"},
        {"rank": 0, "how": "exit code 1", "signal": None, "pid": 17, "hostname": "master"},
    ]


RANK_HOSTS = {0: "localhost", 1: "localhost", 2: "node1", 3: "node1"}
HOSTS = {"localhost": "head", "node1": "worker-b"}


def test_a_rank_killed_without_a_word_is_named_by_its_wrapper():
    text = (
        "[0] step 10\n[3] step 10\n"
        "[3] amx.cluster: rank 3 ended: signal 9 (KILL), pid 4242 on ip-10-0-0-12\n" + HYDRA_BANNER
    )
    analysis = analyse_failure(text, RANK_HOSTS, HOSTS)
    assert analysis["rank"] == 3
    assert analysis["host"] == "worker-b (node1)"
    assert analysis["pid"] == 4242
    assert "killed by signal 9 (KILL)" in analysis["how"]
    assert analysis["lines"] == ["step 10"]  # the wrapper's own report is not part of the rank's output


def test_the_first_report_wins_over_the_ranks_ended_after_it():
    text = (
        '[1] Traceback (most recent call last):\n[1]   File "x.py", line 3, in <module>\n'
        "[1] RuntimeError: boom\n"
        "[1] amx.cluster: rank 1 ended: exit code 1, pid 11 on head\n"
        "[2] RuntimeError: Connection closed by peer [10.0.0.11]:29500\n"
        "[2] amx.cluster: rank 2 ended: exit code 1, pid 12 on worker-b\n"
    )
    analysis = analyse_failure(text, RANK_HOSTS, HOSTS)
    assert analysis["rank"] == 1
    assert analysis["host"] == "head"
    assert analysis["how"] == "failed with RuntimeError: boom (exit code 1)"
    assert analysis["error_ranks"] == [1, 2]


def test_without_a_wrapper_the_first_error_names_the_rank():
    text = "[0] fine\n[2] ValueError: bad input\n[0] RuntimeError: peer gone\n"
    analysis = analyse_failure(text, RANK_HOSTS, HOSTS)
    assert (analysis["rank"], analysis["host"]) == (2, "worker-b (node1)")
    assert analysis["evidence"] == "its error message came first"
    assert analysis["how"] == "failed with ValueError: bad input"


def test_no_rank_to_name():
    analysis = analyse_failure("[0] all good\n" + HYDRA_BANNER, RANK_HOSTS, HOSTS)
    assert analysis["rank"] is None
    assert analysis["how"] == "no rank reported an error; mpirun: Killed (signal 9)"


def test_failure_message_names_rank_host_logs_and_hint():
    text = "[3] step 10\n[3] amx.cluster: rank 3 ended: signal 9 (KILL), pid 4242 on ip-10-0-0-12\n" + HYDRA_BANNER
    analysis = analyse_failure(text, RANK_HOSTS, HOSTS)
    message = failure_message(
        "train",
        "head",
        {"rc": 9, "duration": 83},
        analysis,
        "/home/u/runs/r1",
        {"step": 40, "total_steps": 120},
        "Check the network.",
    )
    assert message.startswith("train on head failed after 0:01:23 (launcher exit code 9). rank 3 on worker-b (node1)")
    assert "last progress: step 40/120 (33%)" in message
    assert "last lines of rank 3: step 10" in message
    assert "logs: head:/home/u/runs/r1/logs/" in message
    assert message.endswith("Check the network.")


def test_failure_message_of_a_timeout_and_of_a_lost_supervisor():
    timed_out = failure_message("train smoke", "head", {"timed_out": True, "timeout": 120}, {"how": "x"}, "/r", None)
    assert timed_out.startswith("train smoke on head did not finish within 0:02:00: stopped it")
    lost = failure_message("train", "head", {"error": "the supervisor is gone"}, {}, "/r")
    assert lost.startswith("train on head could not be supervised: the supervisor is gone")


def test_left_running():
    assert left_running({"localhost": {"found": [1], "left": []}, "node1": {"found": [], "left": []}}, HOSTS) == {}
    left = left_running(
        {"localhost": {"left": [{"pid": 7}]}, "node1": {"error": "ssh node1: timed out"}, "node2": None}, HOSTS
    )
    assert left == {"head": [7], "worker-b (node1)": "ssh node1: timed out", "node2": "no answer"}
