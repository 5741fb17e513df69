# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""torch_stack's source check, run by ansible-playbook on this machine (connection local): the role's preflight with the
recipe-2022 profile on a node whose Python is CPython 3.8 (pyenv's), against stand-in sources on 127.0.0.1.

Stand-ins, and why: PyTorch's CPU index and Intel's wheel page cannot be reached here. Each is a local server of the
same shape: a PEP 503 index that lists torch 1.13.0+cpu for cp38 (PyTorch's), a flat find-links page that links the
oneCCL binding's wheel (Intel's), and a PEP 503 index for the rest of the pins that also carries torch 1.13.0 under
the plain version, as the package index carries its CUDA build. Each case is a host of its own; a node whose pinned
wheel is not listed must be refused in the preflight, naming the pin and where the check looked, before any change
(the recap and a snapshot of the run's folder, as the bad-input tests check); a node whose wheels are all listed
passes. The stand-ins count the requests they answer.
"""

from __future__ import annotations

import getpass
import importlib.util
import pathlib
import sys
from typing import Dict, List

import pytest
import yaml
from net import free_port
from node_python import node_python
from standin_index import SimpleIndex, wheel

from ansible_collections.amx.cluster.plugins.module_utils import stack_profile as sp


def _bad_input_helpers():
    """The bad-input tests' runner and checks, loaded from their file: putting their folder on sys.path would let its
    conftest stand in for other folders' conftest modules in the same session."""
    if "bad_input_helpers" not in sys.modules:
        path = pathlib.Path(__file__).resolve().parents[1] / "bad_input" / "bad_input_helpers.py"
        spec = importlib.util.spec_from_file_location("bad_input_helpers", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["bad_input_helpers"] = module  # before it runs: its dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules["bad_input_helpers"]


_helpers = _bad_input_helpers()
LOCAL, assert_refused, cluster = _helpers.LOCAL, _helpers.assert_refused, _helpers.cluster
fold, run_in_folder = _helpers.fold, _helpers.run_in_folder

REPO = pathlib.Path(__file__).resolve().parents[3]
PROFILES = yaml.safe_load((REPO / "roles" / "torch_stack" / "vars" / "profiles.yml").read_text())
RECIPE_PINS = sp.resolve_profile(PROFILES["__torch_stack_profiles"], "recipe-2022")["pins"]
CP38 = "cp38-cp38"
PLAY = """
- name: Run torch_stack's preflight on each host
  hosts: cluster
  gather_facts: false
  tasks:
    - name: Run the preflight
      ansible.builtin.include_role:
        name: amx.cluster.torch_stack
        tasks_from: preflight
"""


class Counted(SimpleIndex):
    """A SimpleIndex that keeps the path of every request it answers."""

    def __init__(self, folder: pathlib.Path) -> None:
        super().__init__(folder)
        self.requests: List[str] = []
        requests = self.requests
        # Called once per answer (a 404 also logs its error through log_message, which stays quiet).
        self.server.RequestHandlerClass.log_request = lambda handler, *args: requests.append(handler.path)

    @property
    def root(self) -> str:
        return self.url[: -len("simple/")]


def flat_page(folder: pathlib.Path, name: str, wheels: List[str]) -> None:
    """A find-links page as Intel's is: one HTML page of links to wheel files (quoted +)."""
    links = "".join(f'<a href="{w.replace("+", "%2B")}">{w}</a><br>\n' for w in wheels)
    (folder / name).write_text(f"<html><body>\n{links}</body></html>\n")


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    top = tmp_path_factory.mktemp("sources")
    pytorch, pypi, intel, own = top / "pytorch", top / "pypi", top / "intel", top / "own"
    wheel(pytorch, "torch", "1.13.0+cpu", tag=f"{CP38}-linux_x86_64")
    wheel(pypi, "torch", "1.13.0", tag=f"{CP38}-manylinux1_x86_64")  # the CUDA build, under the plain version
    wheel(pypi, "intel_extension_for_pytorch", "1.13.0", tag=f"{CP38}-manylinux2014_x86_64")
    # Every other pin of the profile (transformers, datasets, ...), as pure-Python wheels.
    for name, version in RECIPE_PINS.items():
        if name not in ("torch", "intel-extension-for-pytorch", "oneccl-bind-pt"):
            wheel(pypi, name, version)
    ccl = wheel(intel, "oneccl_bind_pt", "1.13.0+cpu", tag=f"{CP38}-linux_x86_64").name
    flat_page(intel, "ipex-whl-stable-cpu.html", [ccl, "oneccl_bind_pt-1.13.0+cpu-cp39-cp39-linux_x86_64.whl"])
    flat_page(intel, "without-ccl.html", ["oneccl_bind_pt-1.13.0+cpu-cp39-cp39-linux_x86_64.whl"])
    # A folder of the user's own that serves the CPU builds (docs/REPRODUCE.md).
    wheel(own, "torch", "1.13.0+cpu", tag=f"{CP38}-linux_x86_64")
    wheel(own, "oneccl_bind_pt", "1.13.0+cpu", tag=f"{CP38}-linux_x86_64")
    served = {"pytorch": Counted(pytorch), "pypi": Counted(pypi), "intel": Counted(intel)}
    yield {"top": top, "own": own, **served}
    for index in served.values():
        index.close()


def host(folder: pathlib.Path, python: pathlib.Path, sources: dict, **values) -> Dict[str, object]:
    folder.mkdir(parents=True)
    return {
        **LOCAL,
        "torch_stack_profile": "recipe-2022",
        "torch_stack_allow_yanked": True,
        "torch_stack_base_python": str(python),
        "torch_stack_user": getpass.getuser(),
        "torch_stack_install_os_packages": False,
        "torch_stack_index_url": sources["pypi"].url,
        "torch_stack_extra_index_urls": [sources["pytorch"].url],
        "torch_stack_find_links": [sources["intel"].root + "ipex-whl-stable-cpu.html"],
        "torch_stack_venv": str(folder / "venv"),
        "torch_stack_controller_cache": str(folder / "controller" / "wheelhouse"),
        "torch_stack_node_wheelhouse": str(folder / "node" / "wheelhouse"),
        "node_stamp_dir": str(folder / "stamps"),
        **values,
    }


def reset(sources: dict) -> None:
    for name in ("pytorch", "pypi", "intel"):
        sources[name].requests.clear()


@pytest.fixture(scope="module")
def direct(sources, tmp_path_factory):
    """One run of the preflight in direct mode (each node looks itself), one host per case."""
    python = node_python()
    if python is None:
        pytest.skip("no CPython 3.8 on this machine (pyenv's): recipe-2022 needs a node Python 3.7 to 3.10")
    folder = tmp_path_factory.mktemp("direct")
    closed = f"http://127.0.0.1:{free_port()}/simple/"
    intel = sources["intel"].root
    cases = {
        "all-listed": {},
        "ccl-missing": {"torch_stack_find_links": [intel + "without-ccl.html"]},
        "torch-index-skipped": {"torch_stack_extra_index_urls": [closed], "torch_stack_unreachable_indexes": "skip"},
        "torch-in-own-folder": {
            "torch_stack_extra_index_urls": [closed],
            "torch_stack_unreachable_indexes": "skip",
            "torch_stack_find_links": [intel + "ipex-whl-stable-cpu.html", str(sources["own"])],
        },
    }
    hosts = {
        name: host(folder / "cases" / name, python, sources, torch_stack_install_mode="direct", **values)
        for name, values in cases.items()
    }
    first = next(iter(hosts))
    (folder / "play.yml").write_text(PLAY)
    run, touched = run_in_folder(folder, folder / "play.yml", cluster({first: hosts.pop(first)}, hosts))
    return run, touched, closed


def failed_hosts(run) -> List[str]:
    return sorted({e["host"] for e in run.events if e["event"] == "result" and e["status"] == "failed"})


def test_a_pinned_wheel_that_no_source_lists_is_refused_before_any_change(direct, sources):
    run, touched, _closed = direct
    page = sources["intel"].root + "without-ccl.html"
    expect = (
        "ccl-missing: the node finds no wheel for the pins of profile 'recipe-2022' that fits the node",
        "oneccl-bind-pt==1.13.0+cpu (cp38 manylinux_2_",
        f"is listed in none of: {sources['pypi'].url}oneccl-bind-pt/, {sources['pytorch'].url}oneccl-bind-pt/, {page}",
        "Serve the wheel from a folder of your own (torch_stack_find_links, see docs/REPRODUCE.md)",
    )
    assert_refused(run, "ccl-missing", "torch_stack", expect, touched)


def test_a_cpu_pin_whose_only_index_is_skipped_is_refused_not_taken_from_the_package_index(direct, sources):
    """The stand-in package index lists torch 1.13.0 (its CUDA build): that never serves the 1.13.0+cpu pin."""
    run, touched, closed = direct
    expect = (
        "torch-index-skipped: the node finds no wheel",
        "torch==1.13.0+cpu (cp38 manylinux_2_",
        f"is listed in none of: {sources['pypi'].url}torch/,",
        f"left out because they did not answer (torch_stack_unreachable_indexes: skip): {closed}",
    )
    assert_refused(run, "torch-index-skipped", "torch_stack", expect, touched)
    assert f"leaving out {closed}" in fold(run.output)


def test_nodes_whose_wheels_are_all_listed_pass(direct):
    """Only the two refused cases fail; a +cpu pin found in the user's own folder passes though its index is out."""
    run, _touched, _closed = direct
    assert failed_hosts(run) == ["ccl-missing", "torch-index-skipped"], run.explain()
    for name in ("all-listed", "torch-in-own-folder"):
        assert run.stats[name]["failures"] == 0 and run.stats[name]["ok"] > 10, run.explain()


@pytest.fixture(scope="module")
def wheelhouse(sources, tmp_path_factory):
    """The preflight in wheelhouse mode for two nodes with the same profile and Python: the controller looks, once."""
    python = node_python()
    if python is None:
        pytest.skip("no CPython 3.8 on this machine (pyenv's): recipe-2022 needs a node Python 3.7 to 3.10")
    folder = tmp_path_factory.mktemp("wheelhouse")
    hosts = {name: host(folder / "cases" / name, python, sources) for name in ("node1", "node2")}
    (folder / "play.yml").write_text(PLAY)
    reset(sources)
    run, touched = run_in_folder(folder, folder / "play.yml", cluster({"node1": hosts.pop("node1")}, hosts))
    return run, touched, {name: list(sources[name].requests) for name in ("pytorch", "pypi", "intel")}


def test_the_controller_reads_each_page_once_for_all_nodes(wheelhouse):
    run, touched, requests = wheelhouse
    assert run.returncode == 0, run.explain()
    assert not touched, touched
    pins = sorted(RECIPE_PINS)
    # The answer check asks each index's root once; the source check one page per pin per index, the flat page once.
    assert sorted(requests["pytorch"]) == sorted(["/simple/"] + [f"/simple/{name}/" for name in pins])
    assert sorted(requests["pypi"]) == sorted(["/simple/"] + [f"/simple/{name}/" for name in pins])
    assert requests["intel"] == ["/ipex-whl-stable-cpu.html"] * 2
