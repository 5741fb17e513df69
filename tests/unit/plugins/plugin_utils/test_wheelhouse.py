# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller's wheelhouse download (plugin_utils/wheelhouse.py), with the real pip of this Python against a
folder of stand-in wheels (--no-index --find-links): the cache folder, the node's marker values, the tar, a path with
a quote, failures that leave no download behind and bad input refused before anything is written."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time

import pytest
from standin_index import wheel

from ansible_collections.amx.cluster.plugins.plugin_utils import wheelhouse as wh

PIP = [sys.executable, "-m", "pip"]


def markers(python: str) -> dict:
    return {
        "implementation_name": "cpython",
        "implementation_version": python,
        "os_name": "posix",
        "platform_machine": "x86_64",
        "platform_python_implementation": "CPython",
        "platform_release": "5.15.0-1051-aws",
        "platform_system": "Linux",
        "platform_version": "#56~20.04.1-Ubuntu SMP",
        "python_full_version": python,
        "python_version": ".".join(python.split(".")[:2]),
        "sys_platform": "linux",
    }


@pytest.fixture
def links(tmp_path, monkeypatch):
    """alpha needs gamma always and beta only on Pythons older than 3.9 (a backport, as many packages declare)."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.setenv("PIP_CACHE_DIR", str(tmp_path / "pip-cache"))
    folder = tmp_path / "links"
    wheel(folder, "alpha", "1.0", requires=["gamma", 'beta; python_version < "3.9"'])
    wheel(folder, "beta", "1.0")
    wheel(folder, "gamma", "1.0")
    return folder


def args(links, dest, python="3.8"):
    work = wh.partial_dir(str(dest))
    return ["download", "--no-index", "--find-links", str(links), "--dest", work, "--only-binary=:all:",
            "--implementation", "cp", "--python-version", python, "-r", f"{work}/requirements.txt"]  # fmt: skip


def test_downloads_for_the_nodes_markers_into_a_path_with_a_quote_and_packs_the_wheels(tmp_path, links):
    dest = tmp_path / "cache's dir" / "key 1"
    files = {"requirements.txt": "alpha==1.0\n"}
    done = wh.fetch(str(dest), PIP, args(links, dest), files=files, markers=markers("3.8.10"), pack=True)
    assert done == {
        "changed": True,
        "cached": False,
        "path": str(dest),
        "wheels": ["alpha-1.0-py3-none-any.whl", "beta-1.0-py3-none-any.whl", "gamma-1.0-py3-none-any.whl"],
    }
    assert sorted(p.name for p in dest.iterdir()) == ["markers.json", "requirements.txt", "wheels.tar"]
    assert (dest / "requirements.txt").read_text() == "alpha==1.0\n"
    with tarfile.open(dest / "wheels.tar") as archive:
        assert archive.getnames() == done["wheels"]
    assert not os.path.lexists(wh.partial_dir(str(dest)))

    again = wh.fetch(str(dest), PIP, args(links, dest), files=files, markers=markers("3.8.10"), pack=True)
    assert again == {"changed": False, "cached": True, "path": str(dest), "wheels": []}


def test_without_the_nodes_markers_pip_judges_for_its_own_python(tmp_path, links):
    assert sys.version_info >= (3, 9), "the controller's Python must be newer than the node's for this test"
    dest = tmp_path / "cache" / "plain"
    done = wh.fetch(str(dest), PIP, args(links, dest), files={"requirements.txt": "alpha==1.0\n"})
    # The node's Python 3.8 would need beta: the controller's markers leave it out.
    assert done["wheels"] == ["alpha-1.0-py3-none-any.whl", "gamma-1.0-py3-none-any.whl"]
    assert sorted(p.name for p in dest.iterdir()) == [*done["wheels"], "requirements.txt"]


def test_a_failed_download_leaves_no_cache_folder_and_the_next_one_starts_clean(tmp_path, links):
    dest = tmp_path / "cache" / "k"
    with pytest.raises(wh.DownloadFailed) as failed:
        wh.fetch(str(dest), PIP, args(links, dest), files={"requirements.txt": "missing-package==1.0\n"})
    assert failed.value.rc != 0
    assert any("missing-package" in line for line in failed.value.stderr_tail)
    assert len(failed.value.stderr_tail) <= wh.STDERR_LINES
    assert not dest.exists()
    leftover = tmp_path / "cache" / "k.partial" / "stale.whl"
    leftover.write_text("from the interrupted download")
    done = wh.fetch(str(dest), PIP, args(links, dest), files={"requirements.txt": "gamma==1.0\n"})
    assert done["wheels"] == ["gamma-1.0-py3-none-any.whl"]
    assert "stale.whl" not in os.listdir(dest)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"files": {"../x": ""}}, "'../x' is not a plain file name"),
        ({"files": {"markers.json": "{}"}}, "markers.json is written by the download itself"),
        ({"files": {"r.txt": 3}}, "the content of r.txt must be text"),
        ({"markers": {"python_version": "3.8"}}, "the node's marker values lack"),
        ({"markers": markers("3.8.10"), "pip": ["/usr/bin/pip3"]}, r"pip3 is \['/usr/bin/pip3'\]|must be \[PYTHON"),
        ({"pip": "python -m pip"}, "must be a list of non-empty strings"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(tmp_path, links, kwargs, message):
    dest = tmp_path / "cache" / "k"
    pip = kwargs.pop("pip", PIP)
    with pytest.raises(ValueError, match=message):
        wh.fetch(str(dest), pip, args(links, dest), **kwargs)
    assert not (tmp_path / "cache").exists()


def test_the_pip_variable_is_named_in_the_error(tmp_path, links):
    with pytest.raises(ValueError, match=r"torch_stack_controller_pip is .*torch_stack_install_mode: direct"):
        wh.fetch(str(tmp_path / "k"), ["pip3"], [], markers=markers("3.8.10"), variable="torch_stack_controller_pip")


def test_check_mode_writes_nothing(tmp_path, links):
    dest = tmp_path / "cache" / "k"
    done = wh.fetch(str(dest), PIP, args(links, dest), files={"requirements.txt": "gamma\n"}, check_mode=True)
    assert done["changed"] is True and done["cached"] is False
    assert not (tmp_path / "cache").exists()


def test_a_file_in_the_place_of_the_folder_is_refused(tmp_path, links):
    dest = tmp_path / "k"
    dest.write_text("not a download")
    with pytest.raises(wh.WheelhouseError, match="exists and is not a folder"):
        wh.fetch(str(dest), PIP, args(links, dest))
    assert dest.read_text() == "not a download"


def test_the_command_runs_pip_through_the_runner_only_with_markers():
    assert wh.download_command([*PIP, "--isolated"], ["download", "x"]) == [*PIP, "--isolated", "download", "x"]
    assert wh.download_command([*PIP, "--isolated"], ["download", "x"], "/c/k.partial/markers.json") == [
        sys.executable, wh.RUNNER, "/c/k.partial/markers.json", "--isolated", "download", "x"
    ]  # fmt: skip
    assert os.path.isfile(wh.RUNNER)


def test_two_runs_that_want_the_same_download_at_once_make_it_once(tmp_path, links):
    """Two controller runs at the same moment (threads here, processes in use: the lock is a file lock): one
    downloads, the other waits for it and finds the folder complete; neither sees the other's partial folder."""
    from concurrent.futures import ThreadPoolExecutor

    dest = tmp_path / "cache" / "key"
    files = {"requirements.txt": "alpha==1.0\n"}
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda _: wh.fetch(str(dest), PIP, args(links, dest), files=files), range(2)))
    assert sorted(run["cached"] for run in runs) == [False, True]
    assert [run["wheels"] for run in runs if not run["cached"]] == [
        ["alpha-1.0-py3-none-any.whl", "gamma-1.0-py3-none-any.whl"]
    ]
    assert not os.path.exists(wh.partial_dir(str(dest)))


GATED_PIP = """
import os, sys, time
dest = sys.argv[sys.argv.index("--dest") + 1]
gate, deadline = sys.argv[-1], time.monotonic() + 120
while not os.path.exists(gate):  # the test opens the gate once it has seen the caller return
    if time.monotonic() > deadline:
        sys.exit("the gate was never opened")
    time.sleep(0.05)
with open(os.path.join(dest, "delta-1.0-py3-none-any.whl"), "w") as handle:
    handle.write("a stand-in wheel")
"""


def test_a_download_in_the_background_outlives_its_caller_and_the_next_fetch_waits_for_it(tmp_path):
    """start_fetch returns while its download still runs (here a stand-in pip that waits for a gate), in a process
    that holds none of the caller's files: a caller whose output is read to its end (as a test reads
    ansible-playbook's) ends before the download does. The next fetch of the same folder waits and finds it
    complete."""
    script = tmp_path / "gated_pip.py"
    script.write_text(GATED_PIP)
    gate = tmp_path / "gate"
    dest = tmp_path / "cache" / "k"
    argv = ["download", "--dest", wh.partial_dir(str(dest)), str(gate)]
    caller = (
        "import sys; from ansible_collections.amx.cluster.plugins.plugin_utils import wheelhouse as wh; "
        f"print(wh.start_fetch({str(dest)!r}, [sys.executable, {str(script)!r}], {argv!r}, pack=True))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    started = subprocess.run(
        [sys.executable, "-c", caller], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == str({"changed": True, "cached": False, "started": True, "path": str(dest)})
    # The download makes its folder just after it takes the lock, which is when start_fetch returns.
    deadline = time.monotonic() + 60
    while not os.path.isdir(wh.partial_dir(str(dest))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.path.isdir(wh.partial_dir(str(dest))) and not dest.exists(), "the download runs on after its caller"

    gate.write_text("")
    done = wh.fetch(str(dest), [sys.executable, str(script)], argv, pack=True)
    assert done == {"changed": False, "cached": True, "path": str(dest), "wheels": []}
    with tarfile.open(dest / "wheels.tar") as archive:
        assert archive.getnames() == ["delta-1.0-py3-none-any.whl"]
    assert wh.start_fetch(str(dest), [sys.executable, str(script)], argv) == {
        "changed": False, "cached": True, "started": False, "path": str(dest)
    }  # fmt: skip


def test_a_failed_download_in_the_background_is_reported_by_the_next_fetch(tmp_path, links):
    dest = tmp_path / "cache" / "k"
    files = {"requirements.txt": "missing-package==1.0\n"}
    assert wh.start_fetch(str(dest), PIP, args(links, dest), files=files)["started"] is True
    with pytest.raises(wh.DownloadFailed) as failed:
        wh.fetch(str(dest), PIP, args(links, dest), files=files)
    assert any("missing-package" in line for line in failed.value.stderr_tail)
    assert not dest.exists()


@pytest.mark.parametrize("start", [wh.fetch, wh.start_fetch])
def test_bad_input_in_the_background_is_refused_before_it_starts(tmp_path, links, start):
    with pytest.raises(ValueError, match=r"markers\.json is written by the download itself"):
        start(str(tmp_path / "cache" / "k"), PIP, args(links, tmp_path / "cache" / "k"), files={"markers.json": ""})
    assert not (tmp_path / "cache").exists()
    assert start(str(tmp_path / "k"), PIP, [], check_mode=True)["changed"] is True
    assert not (tmp_path / "k").exists()
