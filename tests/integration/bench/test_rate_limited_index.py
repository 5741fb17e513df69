# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bring-up benchmark's package index on 127.0.0.1: pip installs from it, and a download through it takes at
least as long as its per-client rate says (a lower bound only: a loaded machine can make it slower, never faster)."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from bringup.package_index import PackageIndex
from standin_index import wheel

SIZE = 200_000
RATE = 400_000  # bytes per second per client
BURST = 16_384


@pytest.fixture
def wheelhouse(tmp_path):
    folder = tmp_path / "wheels"
    wheel(folder, "Tiny_Pkg", "1.0")
    # A file of known size to time (the index serves it as any wheel: it is listed, not unpacked).
    (folder / "padding-1.0-py3-none-any.whl").write_bytes(os.urandom(SIZE))
    return folder


def download(url: str, source: str) -> tuple:
    """GET url from the source address `source` (each 127.0.0.x is a client of its own); (bytes, seconds)."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30, source_address=(source, 0))
    started = time.monotonic()
    try:
        connection.request("GET", parts.path)
        response = connection.getresponse()
        data = response.read()
        assert response.status == 200
    finally:
        connection.close()
    return data, time.monotonic() - started


def test_a_download_is_paced_at_the_clients_rate(wheelhouse):
    with PackageIndex(wheelhouse, rate=RATE, burst=BURST) as index:
        file_url = index.url.replace("/simple/", "/files/padding-1.0-py3-none-any.whl")
        data, seconds = download(file_url, "127.0.0.2")
        assert data == (wheelhouse / "padding-1.0-py3-none-any.whl").read_bytes()
        assert seconds >= (SIZE - BURST) / RATE * 0.95  # 0.46 s at least; unlimited, it takes milliseconds
        assert seconds < 30
        other, other_seconds = download(file_url, "127.0.0.3")
        assert other == data
        assert other_seconds >= (SIZE - BURST) / RATE * 0.95
        assert index.sent == {"127.0.0.2": SIZE, "127.0.0.3": SIZE}


def test_pip_installs_from_it(wheelhouse, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", NO_PROXY="127.0.0.1")
    with PackageIndex(wheelhouse, rate=10_000_000) as index:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--index-url", index.url,
             "--dest", str(tmp_path / "got"), "tiny-pkg==1.0"],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert [p.name for p in (tmp_path / "got").iterdir()] == ["Tiny_Pkg-1.0-py3-none-any.whl"]
        assert sum(index.sent.values()) > 0


@pytest.mark.parametrize(
    "path",
    ["/files/../pyproject.toml", "/files/%2e%2e/pyproject.toml", "/files/missing-1.0-py3-none-any.whl", "/other"],
)
def test_only_the_listed_wheels_are_served(wheelhouse, path):
    (wheelhouse.parent / "pyproject.toml").write_text("secret = 1\n")
    with PackageIndex(wheelhouse, rate=10_000_000) as index:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(index.url.replace("/simple/", path), timeout=30)
        assert refused.value.code == 404


def test_a_name_as_written_finds_its_normalised_page(wheelhouse):
    with PackageIndex(wheelhouse, rate=10_000_000) as index:
        page = urllib.request.urlopen(index.url + "Tiny.Pkg", timeout=30)
        with page:
            assert b"Tiny_Pkg-1.0-py3-none-any.whl#sha256=" in page.read()


def test_an_empty_folder_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no wheels in"):
        PackageIndex(tmp_path, rate=1000)
