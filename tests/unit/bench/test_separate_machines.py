# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The parts that make the containers look like separate machines: the per-client rate limit's arithmetic (on a
clock of the test's own), the package index (its pages, and pip downloading from it on 127.0.0.1), the per-node CPU
cap, and how the benchmark points the controller and the baseline at the index."""

from __future__ import annotations

import copy
import json
import os
import pathlib
import subprocess
import sys
import types
import urllib.error
import urllib.request
import zipfile

import bringup_bench
import pytest
from benchlib.rate_limit import PerClientLimit, TokenBucket, parse_rate
from bringup import baseline, measure, node_resources, package_index, report, wheels
from conftest import BENCH


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


def test_the_report_says_when_the_controllers_link_was_paced(bringup_report):
    paced = copy.deepcopy(bringup_report)
    paced["controller_rate_bytes_per_second"] = 25_000_000
    line = "Everything the controller sends each node over SSH, and gets back, at most 25.0 MB/s each way per node"
    assert line in report.markdown(paced)
    assert "Everything the controller sends" not in report.markdown(bringup_report)


def tiny_wheel(folder, name="tiny_pkg", version="1.0"):
    """A wheel pip accepts: its metadata, WHEEL file and RECORD, nothing to import."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, text in files.items():
            wheel.writestr(member, text)
        wheel.writestr(f"{dist}/RECORD", "".join(f"{member},,\n" for member in files) + f"{dist}/RECORD,,\n")
    return path


def test_pip_downloads_from_the_index_and_every_byte_is_counted(tmp_path):
    served, dest = tmp_path / "served", tmp_path / "dest"
    served.mkdir()
    wheel = tiny_wheel(served)
    with package_index.PackageIndex(served, rate=10e6) as index:
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--dest", str(dest), "--index-url", index.url]
        env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}  # this machine's indexes and wheel folders: not seen
        for name in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT"):
            env.pop(name, None)
        proc = subprocess.run([*pip, "Tiny.Pkg==1.0"], capture_output=True, text=True, env=env, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert (dest / wheel.name).read_bytes() == wheel.read_bytes()
        sent = index.sent["127.0.0.1"]
        assert sent > wheel.stat().st_size  # the wheel and the project's page
        missing = subprocess.run([*pip, "absent-pkg"], capture_output=True, text=True, env=env, check=False)
        assert missing.returncode != 0
        assert "No matching distribution found for absent-pkg" in missing.stderr


def test_the_index_serves_only_its_wheels(tmp_path):
    (tmp_path / "secret.txt").write_text("not a wheel")
    tiny_wheel(tmp_path)
    with package_index.PackageIndex(tmp_path, rate=10e6) as index:
        base = index.url.rsplit("/simple/", 1)[0]
        for path in ("/files/secret.txt", "/files/../secret.txt", "/other"):
            with pytest.raises(urllib.error.HTTPError, match="404"):
                urllib.request.urlopen(base + path, timeout=10)
        with urllib.request.urlopen(base + "/simple/Tiny_Pkg", timeout=10) as page:  # the name as written
            assert "tiny_pkg-1.0-py3-none-any.whl" in page.read().decode()


def test_an_empty_folder_is_no_index(tmp_path):
    with pytest.raises(ValueError, match=r"no wheels in .*: the package index would be empty"):
        package_index.PackageIndex(tmp_path, rate=10e6)


def test_the_command_line_takes_an_index_rate(capsys):
    assert bringup_bench.parse_args(["--index-rate", "25MB"]).index_rate_bytes == 25e6
    assert bringup_bench.parse_args([]).index_rate_bytes is None
    with pytest.raises(SystemExit):
        bringup_bench.parse_args(["--index-rate", "fast"])
    assert "a rate is a positive number" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bringup_bench.parse_args(["--index-rate", "25MB", "--wheelhouse", "shared"])
    assert "--index-rate measures downloads: it needs --wheelhouse cold" in capsys.readouterr().err


def test_with_the_index_the_baseline_takes_every_pin_from_it():
    profile = {"packages": {"torch": "2.13.0", "transformers": "4.57.1"}}
    wheel = pathlib.Path("/wheels/torch-2.13.0-cp311-cp311-linux_x86_64.whl")
    steps = baseline.baseline_steps(wheel, profile, "http://172.30.0.1:8765/simple/")
    assert [name for name, _command in steps] == ["apt_tcmalloc", "venv", "pip_install", "import_check"]
    pip_install = dict(steps)["pip_install"]
    assert pip_install.endswith(
        "--index-url http://172.30.0.1:8765/simple/ --trusted-host 172.30.0.1 torch==2.13.0 transformers==4.57.1"
    )
    assert "PIP_CERT" not in pip_install and "/tmp/torch" not in pip_install


def test_with_the_index_the_controllers_pip_sees_nothing_else(tmp_path, monkeypatch):
    tiny_wheel(tmp_path)
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")
    monkeypatch.setenv("PIP_CERT", "/etc/ssl/certs/ca-certificates.crt")
    args = bringup_bench.parse_args(["--index-rate", "25MB"])
    bench = measure.Bench(args, harness=None, workdir=tmp_path)
    cluster = types.SimpleNamespace(dir=tmp_path / "c1")
    assert "PIP_FIND_LINKS" in bench.env(cluster)  # without the index: the machine's sources, as a user has them
    with package_index.PackageIndex(tmp_path, rate=10e6) as index:
        bench.index = index
        env = bench.env(cluster)
        assert env["PIP_CONFIG_FILE"] == os.devnull
        assert "PIP_FIND_LINKS" not in env
        assert env["PIP_CERT"] == "/etc/ssl/certs/ca-certificates.crt"  # not a source: kept
        settings = bench.provision_vars(cluster)
        assert settings["torch_stack_index_url"] == index.url
        assert settings["torch_stack_controller_pip_extra_args"][-2:] == ["--trusted-host", "127.0.0.1"]


def test_wheels_from_an_http_index_count_as_from_the_index():
    log = (
        "Added torch==2.13.0 from http://172.30.0.1:8765/files/torch-2.13.0-cp311-cp311-linux_x86_64.whl#sha256=ab "
        "to build tracker\nFetched page http://172.30.0.1:8765/simple/torch/\n"
    )
    counted = wheels.classify_wheels({"torch-2.13.0-cp311-cp311-linux_x86_64.whl": 100}, log)
    assert (counted["from_index_bytes"], counted["unknown_source_bytes"], counted["index_pages_fetched"]) == (100, 0, 1)


def test_the_report_says_where_the_wheels_came_from(bringup_report):
    with_index = copy.deepcopy(bringup_report)
    with_index["index"] = {"rate_bytes_per_second": 25e6, "wheels": 61, "wheel_bytes": 322.3e6}
    with_index["summary"]["index_sent_to_controller"] = {"runs": [322.5e6], "median": 322.5e6}
    with_index["summary"]["index_sent_to_baseline_node"] = {"runs": [322.4e6, 322.4e6], "median": 322.4e6}
    text = report.markdown(with_index)
    assert "from the benchmark's own package index on this machine (61 wheels, 322.3 MB), at most 25.0 MB/s" in text
    assert "| from the index, controller, a provision.yml | 322.5 MB | 322.5 MB |" in text
    assert "| from the index, a baseline node | 322.4 MB | 322.4 MB, 322.4 MB |" in text
    assert "package index" not in report.markdown(bringup_report).split("## Bytes")[0]


def test_the_notes_without_the_index_are_those_of_earlier_reports():
    earlier = json.loads((BENCH / "results" / "2026-12-02" / "bringup.json").read_text())["notes"]
    assert report.notes(index=False) == earlier
    with_index = report.notes(index=True)
    assert any("What the model leaves out" in note for note in with_index)
    assert not any("PIP_CERT" in note for note in with_index)


def test_the_controllers_bytes_are_every_client_but_the_nodes():
    before = {"172.30.0.2": 5_000, "192.0.2.2": 100}  # an earlier cluster's node, and the controller before
    now = {"172.30.0.2": 5_300, "172.30.0.3": 300, "192.0.2.2": 322_000_100}
    assert measure.provision_index_bytes(now, before, ["172.30.0.2", "172.30.0.3"]) == {
        "controller": 322_000_000,
        "nodes": 600,
    }
