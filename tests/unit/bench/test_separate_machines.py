# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The parts that make the containers look like separate machines: the per-client rate limit's arithmetic (on a
clock of the test's own), the package index's pages, and the per-node CPU cap."""

from __future__ import annotations

import copy

import bringup_bench
import pytest
from benchlib.rate_limit import PerClientLimit, TokenBucket, parse_rate
from bringup import node_resources, package_index, report


class Clock:
    """Time that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_full_bucket_sends_its_burst_at_once_then_the_rate_holds():
    clock = Clock()
    bucket = TokenBucket(rate=1000, capacity=500, clock=clock)
    assert bucket.take(500) == 0.0  # the burst
    assert bucket.take(1000) == 1.0  # then 1000 bytes at 1000 B/s
    assert bucket.take(500) == 1.5  # queued behind the first: in debt by 1500 bytes
    clock.now += 1.5  # the waits are served
    assert bucket.take(0) == 0.0
    assert bucket.tokens == 0.0


def test_an_idle_bucket_saves_no_more_than_its_capacity():
    clock = Clock()
    bucket = TokenBucket(rate=1000, capacity=500, clock=clock)
    bucket.take(500)
    clock.now += 3600  # an hour idle saves 500 bytes, not 3.6 MB
    assert bucket.take(500) == 0.0
    assert bucket.take(250) == 0.25


def test_a_chunk_larger_than_the_bucket_is_paced_not_refused():
    clock = Clock()
    bucket = TokenBucket(rate=25e6, capacity=64 * 1024, clock=clock)
    assert bucket.take(64 * 1024) == 0.0
    assert bucket.take(25_000_000) == pytest.approx(1.0)


def test_the_long_run_rate_is_exact():
    clock = Clock()
    bucket = TokenBucket(rate=2000, capacity=0, clock=clock)
    for _chunk in range(100):  # 100 chunks of 100 bytes, each sent when its wait is over
        clock.now += bucket.take(100)
    assert clock.now - 100.0 == pytest.approx(100 * 100 / 2000)


def test_clients_have_buckets_of_their_own_and_are_counted():
    clock = Clock()
    limit = PerClientLimit(rate=1000, capacity=0, clock=clock)
    assert limit.take("172.30.0.2", 1000) == 1.0
    assert limit.take("172.30.0.3", 1000) == 1.0  # another node: not behind the first
    assert limit.take("172.30.0.2", 500) == 1.5
    assert limit.sent == {"172.30.0.2": 1500, "172.30.0.3": 1000}


def test_the_default_burst_is_one_chunk_or_one_second_of_a_slow_rate():
    assert PerClientLimit(rate=25e6).capacity == 64 * 1024
    assert PerClientLimit(rate=1000).capacity == 1000


@pytest.mark.parametrize(
    ("rate", "capacity", "message"),
    [(0, 10, "above 0 bytes per second"), (-5, 10, "above 0"), (10, -1, "0 bytes or more")],
)
def test_a_bucket_refuses_nonsense(rate, capacity, message):
    with pytest.raises(ValueError, match=message):
        TokenBucket(rate, capacity)


def test_a_negative_take_is_refused():
    with pytest.raises(ValueError, match="cannot take -1 bytes"):
        TokenBucket(10, 10).take(-1)


@pytest.mark.parametrize(
    ("text", "rate"),
    [("25MB", 25e6), ("25 MB/s", 25e6), ("500kB", 5e5), ("1.5GB", 1.5e9), ("1000", 1000.0), ("64b", 64.0)],
)
def test_rates_as_people_write_them(text, rate):
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["", "fast", "0MB", "-3MB", "25TB", "25 MiB"])
def test_rates_that_say_nothing_are_refused(text):
    with pytest.raises(ValueError, match="a rate is a positive number"):
        parse_rate(text)


def test_index_pages_follow_pep_503():
    torch = "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl"
    pages = package_index.index_pages(
        {"Foo_Bar-1.0-py3-none-any.whl": "ab" * 32, "foo.bar-2.0-py3-none-any.whl": "cd" * 32, torch: "ef" * 32}
    )
    assert sorted(pages) == ["/simple/", "/simple/foo-bar/", "/simple/torch/"]
    listing = pages["/simple/"].decode()
    assert '<a href="foo-bar/">foo-bar</a>' in listing
    assert '<a href="torch/">torch</a>' in listing
    foo_bar = pages["/simple/foo-bar/"].decode()
    assert f'<a href="../../files/Foo_Bar-1.0-py3-none-any.whl#sha256={"ab" * 32}">' in foo_bar
    assert f'<a href="../../files/foo.bar-2.0-py3-none-any.whl#sha256={"cd" * 32}">' in foo_bar
    quoted = "torch-2.13.0%2Bcpu-cp311-cp311-linux_x86_64.whl"  # the + of a local version, quoted
    assert f'href="../../files/{quoted}#sha256={"ef" * 32}"' in pages["/simple/torch/"].decode()


@pytest.mark.parametrize(
    ("cpus", "options"), [(None, []), (1, ["--cpus", "1"]), (0.5, ["--cpus", "0.5"]), (2.0, ["--cpus", "2"])]
)
def test_cpu_cap_options(cpus, options):
    assert node_resources.cpu_cap_options(cpus, machine_cpus=2) == options


@pytest.mark.parametrize("cpus", [0, 0.001, 3, -1])
def test_a_cpu_cap_the_machine_cannot_give_is_refused(cpus):
    with pytest.raises(ValueError, match=r"between 0\.01 and this machine's 2 CPUs.*--node-cpus"):
        node_resources.cpu_cap_options(cpus, machine_cpus=2)


def test_the_command_line_takes_a_cpu_cap(capsys):
    assert bringup_bench.parse_args(["--node-cpus", "0.5"]).node_options == ["--cpus", "0.5"]
    assert bringup_bench.parse_args([]).node_options == []
    with pytest.raises(SystemExit):
        bringup_bench.parse_args(["--node-cpus", "0"])
    assert "a node's CPU cap must be between 0.01" in capsys.readouterr().err


def test_the_report_says_when_nodes_were_capped(bringup_report):
    capped = copy.deepcopy(bringup_report)
    capped["node_cpus"] = 0.5
    text = report.markdown(capped)
    assert "Every node capped at 0.5 CPUs (`docker run --cpus`)." in text
    capped["node_cpus"] = 1.0
    assert "Every node capped at 1 CPU (`docker run --cpus`)." in report.markdown(capped)
    assert "capped" not in report.markdown(bringup_report)
