# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every profile's resolution of the examples' requirements, offline: the role's own pip command (the runner with the
node's marker values, binary wheels for the node's Python and platform, the profile's indexes, the virtualenv's
freeze as constraints) against stand-in wheels on 127.0.0.1.

Stand-ins, and why: no index but the Python package index is reachable here, and that one only for the tests marked
``network`` (test_resolution_network.py). Here EVERY index is a local PEP 503 index of tiny wheels with the real names
and versions: one stands in for PyTorch's CPU index (torch X.Y.Z+cpu, the builds the profiles pin), one for the
package index (accelerate, datasets, evaluate and their dependencies, plus the CUDA builds of torch it really
carries). The dependencies carry markers on the Python version, so that the node's Python (3.8 to 3.12) and the
controller's (3.11) need different packages.

Where this machine has a CPython of the node's version (pyenv), the node's marker values come from node_info's probe
run by that Python, and the downloaded wheels are installed into a virtualenv of it with ``pip install --no-index``,
as the role does on the node: the download is complete for that Python.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Dict, Optional

import pytest
from conftest import NODES, QA_REQUIREMENTS, node_markers, resolved, run_pip, stack_freeze
from standin_index import SimpleIndex, names, wheel

from ansible_collections.amx.cluster.plugins.module_utils import examples as ex
from ansible_collections.amx.cluster.plugins.module_utils import python_facts as pf
from ansible_collections.amx.cluster.plugins.module_utils import stack_profile as sp

PYENV = pathlib.Path("/root/.pyenv/versions")

# What each profile's node must receive for QA_REQUIREMENTS (with the stand-ins below): name==version.
COMMON_312 = {"numpy==2.2.6", "packaging==24.2", "typing-extensions==4.12.2", "setuptools==75.8.0"}
EXPECTED = {
    "recipe-2022": {
        "accelerate==0.15.0",  # the newest accelerate that takes torch 1.13 (the 1.x releases need torch 2)
        "datasets==2.7.1",
        "evaluate==0.3.0",
        "torch==1.13.0+cpu",
        "numpy==1.24.4",  # the newest for Python 3.8
        "packaging==24.2",
        "typing-extensions==4.12.2",
        "importlib-metadata==6.7.0",  # python_version < "3.10": the node needs it, the controller (3.11) not
        "tomli==2.0.1",  # python_version < "3.11"
    },
    "ipex-2.7-ccl": {
        "accelerate==1.6.0",
        "datasets==3.5.0",
        "evaluate==0.4.3",
        "torch==2.7.0+cpu",
        "numpy==2.2.6",
        "packaging==24.2",
        "typing-extensions==4.12.2",
        "tomli==2.0.1",
    },
    "ipex-2.8": {"accelerate==1.10.1", "datasets==4.0.0", "evaluate==0.4.5", "torch==2.8.0+cpu"} | COMMON_312,
    "native": {"accelerate==1.15.0", "datasets==5.2.0", "evaluate==0.4.6", "torch==2.13.0+cpu"} | COMMON_312,
}

DATASETS_DEPS = [
    "numpy>=1.17",
    "packaging",
    'importlib-metadata; python_version < "3.10"',
    'tomli; python_version < "3.11"',
    'setuptools; python_version >= "3.12"',
]


def cp(python: str) -> str:
    return "cp" + python.replace(".", "")


def build_standins(folder: pathlib.Path) -> Dict[str, pathlib.Path]:
    """The wheels of the two stand-in indexes: {'pytorch': folder, 'pypi': folder}."""
    pytorch, pypi = folder / "pytorch-cpu", folder / "pypi"
    pythons = sorted({sp.major_minor(python) for python, _glibc in NODES.values()} | {"3.11"})
    for version, tag_platform in (("1.13.0", "linux_x86_64"), ("2.7.0", "manylinux_2_28_x86_64")):
        for python in pythons:
            wheel(
                pytorch, "torch", f"{version}+cpu", ["typing-extensions"], f"{cp(python)}-{cp(python)}-{tag_platform}"
            )
    for version in ("2.8.0", "2.13.0"):
        for python in pythons:
            tag = f"{cp(python)}-{cp(python)}-manylinux_2_28_x86_64"
            wheel(pytorch, "torch", f"{version}+cpu", ["typing-extensions"], tag)
            # The package index carries CUDA builds under the plain version, with their nvidia-* dependencies.
            wheel(pypi, "torch", version, ["typing-extensions", "nvidia-cublas-cu12"], tag)
    for version, needs_torch, python_min in (
        ("0.15.0", ">=1.4.0", "3.7"),
        ("1.6.0", ">=2.0.0", "3.9"),
        ("1.10.1", ">=2.0.0", "3.9"),
        ("1.15.0", ">=2.0.0", "3.10"),
    ):
        wheel(
            pypi,
            "accelerate",
            version,
            [f"torch{needs_torch}", "packaging", "numpy"],
            requires_python=f">={python_min}",
        )
    for version, python_min in (("2.7.1", "3.7"), ("3.5.0", "3.9"), ("4.0.0", "3.9"), ("5.2.0", "3.10")):
        wheel(pypi, "datasets", version, DATASETS_DEPS, requires_python=f">={python_min}")
    for version in ("0.3.0", "0.4.3", "0.4.5", "0.4.6"):
        wheel(pypi, "evaluate", version, ["datasets>=2.0.0", "numpy>=1.17"], requires_python=">=3.7")
    for version, python_min, python_max in (("1.24.4", "3.8", "3.11"), ("2.2.6", "3.10", "3.13")):
        for python in pythons:
            if sp.version_key(python_min) <= sp.version_key(python) <= sp.version_key(python_max):
                wheel(pypi, "numpy", version, [], f"{cp(python)}-{cp(python)}-manylinux_2_17_x86_64")
    wheel(pypi, "packaging", "24.2")
    wheel(pypi, "typing-extensions", "4.12.2")
    wheel(pypi, "importlib-metadata", "6.7.0")
    wheel(pypi, "tomli", "2.0.1")
    wheel(pypi, "setuptools", "75.8.0")
    wheel(pypi, "nvidia-cublas-cu12", "12.4.5.8")
    return {"pytorch": pytorch, "pypi": pypi}


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    folders = build_standins(tmp_path_factory.mktemp("standins"))
    served = {name: SimpleIndex(folder) for name, folder in folders.items()}
    yield {name: index.url for name, index in served.items()}
    for index in served.values():
        index.close()


def local_python(python: str) -> Optional[pathlib.Path]:
    """A CPython of this major.minor on this machine (pyenv's), or None."""
    found = sorted(PYENV.glob(f"{sp.major_minor(python)}.*/bin/python{sp.major_minor(python)}"))
    return found[-1] if found else None


def profile_indexes(profile: str, indexes: Dict[str, str]) -> dict:
    """The profile's index list as torch_stack publishes it (torch_stack_indexes), with every index it names swapped
    for its local stand-in, as torch_stack_index_url / torch_stack_extra_index_urls would: the package index (pip's
    default, null in the profiles) for the stand-in package index, PyTorch's CPU index for its stand-in, and Intel's
    pages (which serve only IPEX and the oneCCL binding, packages the examples do not ask for) left out."""
    profile_data = resolved(profile)
    assert profile_data["index_url"] is None
    extra = [indexes["pytorch"] for url in profile_data["extra_index_urls"] if "download.pytorch.org" in url]
    assert extra, f"profile {profile} names no PyTorch CPU index"
    return {"index_url": indexes["pypi"], "extra_index_urls": extra, "find_links": []}


def spec_for(profile: str, indexes: Dict[str, str], markers: Optional[dict] = None) -> dict:
    python, glibc = NODES[profile]
    markers = markers or node_markers(python)
    published = profile_indexes(profile, indexes)
    chosen = ex.effective_indexes(published)
    platforms = sp.platform_tags(markers["platform_machine"], glibc)
    return ex.download_spec(QA_REQUIREMENTS, stack_freeze(profile), markers, chosen, platforms)


def downloaded(folder: pathlib.Path) -> set:
    return names(folder.glob("*.whl"))


def probe(python: pathlib.Path) -> dict:
    """What amx.cluster.node_info reports for this Python (its probe, run here)."""
    out = subprocess.run([str(python), "-c", pf.probe_source()], capture_output=True, text=True, check=True)
    return pf.parse_report(out.stdout)


@pytest.mark.parametrize("profile", sorted(NODES))
def test_the_examples_requirements_resolve_for_the_profiles_node(profile, indexes, env, tmp_path):
    python, _glibc = NODES[profile]
    interpreter = local_python(python)
    markers = probe(interpreter)["markers"] if interpreter else None
    spec = spec_for(profile, indexes, markers)
    folder = tmp_path / "download"
    run = run_pip(spec, folder, ex.download_args(spec, str(folder)), env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert downloaded(folder) == EXPECTED[profile]
    if interpreter is None:
        pytest.skip(f"no CPython {sp.major_minor(python)} here to install the download into (resolution checked)")
    # The node's side: a virtualenv of that Python, the download installed with --no-index under the constraints.
    venv = tmp_path / "venv"
    subprocess.run([str(interpreter), "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    # This pip installs into that virtualenv (pip --python), which saves bootstrapping pip in it.
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    files = ["-c", str(folder / "constraints.txt"), "-r", str(folder / "requirements.in")]
    install = subprocess.run(
        [*pip, "install", "--no-index", "--find-links", str(folder), *files],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
    freeze = subprocess.run([*pip, "freeze"], capture_output=True, text=True, env=env, check=True).stdout
    assert set(sp.parse_freeze(freeze).items()) >= {tuple(item.split("==")) for item in EXPECTED[profile]}


@pytest.mark.parametrize("profile", sorted(NODES))
def test_without_the_nodes_markers_the_download_misses_what_the_node_needs(profile, indexes, env, tmp_path):
    """The role's command before the runner: plain pip evaluates the markers for the controller's Python 3.11."""
    spec = spec_for(profile, indexes)
    folder = tmp_path / "download"
    run = run_pip(spec, folder, ex.download_args(spec, str(folder)), env, markers=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert downloaded(folder) != EXPECTED[profile]
    assert not EXPECTED[profile] <= downloaded(folder), "the controller's markers picked everything the node needs"


@pytest.mark.parametrize("profile", sorted(NODES))
def test_without_the_profiles_indexes_the_cpu_build_of_torch_is_not_found(profile, indexes, env, tmp_path):
    """The role's command before the profile's indexes: only the package index, which has no torch X+cpu."""
    spec = spec_for(profile, indexes)
    spec["indexes"] = ex.effective_indexes({"index_url": indexes["pypi"]})
    folder = tmp_path / "download"
    run = run_pip(spec, folder, ex.download_args(spec, str(folder)), env)
    assert run.returncode != 0
    pin = resolved(profile)["pins"]["torch"]
    assert pin.endswith("+cpu"), pin  # the profile pins the CPU build itself
    assert f"torch=={pin}" in run.stdout + run.stderr, run.stderr[-3000:]
