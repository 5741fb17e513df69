# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every profile's resolution of the examples' requirements against the real package index (marked ``network``:
``pytest -m 'not network'`` leaves them out; they skip when the index does not answer).

What is real and what stands in: the package index (pip's default) is asked for real for everything it serves:
accelerate, datasets, evaluate and all their dependencies, with the node's Python, platform and marker values, so the
versions, Requires-Python and markers are the real ones. PyTorch's CPU index and Intel's pages cannot be reached from
here: the CPU builds the profiles pin (torch X.Y.Z+cpu) come from a local index of stand-in wheels with the same names
and versions (and torch's real dependencies' names) on 127.0.0.1, in the place of the profile's PyTorch CPU index.

pip resolves with ``install --dry-run --ignore-installed --report`` instead of ``download``: the same options (the
role's ``download_args``, the verb and the destination swapped), the same resolver, but only the metadata of each
candidate is fetched (the index serves it apart, PEP 658), not the wheels (pyarrow, pandas: hundreds of MB).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import urllib.request

import pytest
from conftest import NODES, QA_REQUIREMENTS, node_markers, pip_env, resolved, run_pip, stack_freeze
from standin_index import SimpleIndex, wheel

from ansible_collections.amx.cluster.plugins.module_utils import examples as ex
from ansible_collections.amx.cluster.plugins.module_utils import stack_profile as sp

pytestmark = [pytest.mark.network, pytest.mark.slow]

# torch's own dependencies (names only: the real ones come from the package index), by release (the profiles pin
# the CPU build, X.Y.Z+cpu).
TORCH_DEPS = {
    "1.13.0": ["typing-extensions"],
    "2.7.0": ["filelock", "typing-extensions>=4.10.0", "sympy>=1.13.3", "networkx", "jinja2", "fsspec"],
    "2.8.0": ["filelock", "typing-extensions>=4.10.0", "sympy>=1.13.3", "networkx", "jinja2", "fsspec"],
    "2.13.0": ["filelock", "typing-extensions>=4.10.0", "sympy>=1.13.3", "networkx>=2.5.1", "jinja2", "fsspec>=0.8.5"],
}


def index_answers() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=10) as answer:
            return answer.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def cpu_index(tmp_path_factory):
    if not index_answers():
        pytest.skip("the package index (https://pypi.org/simple/) does not answer from here")
    folder = tmp_path_factory.mktemp("pytorch-cpu")
    for profile, (python, _glibc) in NODES.items():
        version = resolved(profile)["pins"]["torch"]
        release = version.split("+")[0]
        tag_python = "cp" + sp.major_minor(python).replace(".", "")
        tag = f"{tag_python}-{tag_python}-{'linux_x86_64' if release == '1.13.0' else 'manylinux_2_28_x86_64'}"
        wheel(folder, "torch", version, TORCH_DEPS[release], tag)
    index = SimpleIndex(folder)
    yield index.url
    index.close()


def resolve(profile: str, python: str, glibc: str, cpu_index: str, env: dict, folder: pathlib.Path):
    folder.mkdir(parents=True, exist_ok=True)
    markers = node_markers(python)
    extra = [cpu_index for url in resolved(profile)["extra_index_urls"] if "download.pytorch.org" in url]
    chosen = ex.effective_indexes({"index_url": None, "extra_index_urls": extra, "find_links": []})
    spec = ex.download_spec(QA_REQUIREMENTS, stack_freeze(profile), markers, chosen, sp.platform_tags("x86_64", glibc))
    args = ex.download_args(spec, str(folder))
    assert args[0] == "download" and args[2:4] == ["--dest", str(folder)]
    report = folder / "report.json"
    args = ["install", args[1], "--dry-run", "--ignore-installed", "--target", str(folder / "target")]
    args += ["--report", str(report), *ex.download_args(spec, str(folder))[4:]]
    run = run_pip(spec, folder, args, env)
    assert run.returncode == 0, run.stderr[-3000:]
    picked = {}
    for item in json.loads(report.read_text())["install"]:
        picked[sp.normalize_name(item["metadata"]["name"])] = item["metadata"]["version"]
    return picked


@pytest.fixture(scope="module")
def resolutions(cpu_index, tmp_path_factory):
    """The four resolutions at once (pip waits on the network most of the time), with a pip cache kept between test
    runs (~/.cache/amx.cluster/tests/pip): a cold cache costs a few minutes, a warm one seconds."""
    folder = tmp_path_factory.mktemp("network-resolution")
    env = pip_env(folder)
    cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "amx.cluster/tests/pip"
    env["PIP_CACHE_DIR"] = str(cache)
    with concurrent.futures.ThreadPoolExecutor(len(NODES)) as pool:
        jobs = {
            profile: pool.submit(resolve, profile, *NODES[profile], cpu_index, env, folder / profile)
            for profile in NODES
        }
        return {profile: job.result() for profile, job in jobs.items()}


@pytest.mark.parametrize("profile", sorted(NODES))
def test_the_examples_requirements_resolve_on_the_real_index(profile, resolutions):
    picked = resolutions[profile]
    pins = resolved(profile)["pins"]
    assert picked["torch"] == pins["torch"] and pins["torch"].endswith("+cpu")
    for name in ("accelerate", "datasets", "evaluate"):
        assert name in picked
        if name in pins:
            assert picked[name] == pins[name], (
                f"{name}: the profile pins {pins[name]}, the resolution took {picked[name]}"
            )
    assert not [name for name in picked if name.startswith("nvidia-")], "a CUDA build of torch came in"
