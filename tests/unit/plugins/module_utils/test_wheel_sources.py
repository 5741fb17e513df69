# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

import pytest

from ansible_collections.amx.cluster.plugins.module_utils import wheel_sources as ws

RECIPE_PLATFORMS = ["manylinux_2_31_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "linux_x86_64"]


@pytest.mark.parametrize(
    ("filename", "name", "version", "pythons", "abis", "platforms"),
    [
        ("torch-1.13.0+cpu-cp38-cp38-linux_x86_64.whl", "torch", "1.13.0+cpu", {"cp38"}, {"cp38"}, {"linux_x86_64"}),
        (
            "oneccl_bind_pt-1.13.0+cpu-cp38-cp38-linux_x86_64.whl",
            "oneccl-bind-pt",
            "1.13.0+cpu",
            {"cp38"},
            {"cp38"},
            {"linux_x86_64"},
        ),
        (
            "intel_extension_for_pytorch-1.13.0-cp38-cp38-manylinux2014_x86_64.whl",
            "intel-extension-for-pytorch",
            "1.13.0",
            {"cp38"},
            {"cp38"},
            {"manylinux2014_x86_64"},
        ),
        # A link as PyTorch's index writes it: a path, the + quoted, a hash fragment.
        (
            "/whl/cpu/torch-2.7.0%2Bcpu-cp310-cp310-manylinux_2_28_x86_64.whl#sha256=ab",
            "torch",
            "2.7.0+cpu",
            {"cp310"},
            {"cp310"},
            {"manylinux_2_28_x86_64"},
        ),
        # A build tag, and compressed tag sets.
        (
            "numpy-1.24.4-1-cp38-cp38-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
            "numpy",
            "1.24.4",
            {"cp38"},
            {"cp38"},
            {"manylinux_2_17_x86_64", "manylinux2014_x86_64"},
        ),
        ("transformers-4.24.0-py3-none-any.whl", "transformers", "4.24.0", {"py3"}, {"none"}, {"any"}),
    ],
)
def test_parse_wheel(filename, name, version, pythons, abis, platforms):
    assert ws.parse_wheel(filename) == ws.WheelName(name, version, pythons, abis, platforms)


@pytest.mark.parametrize(
    "filename", ["torch-1.13.0.tar.gz", "torch-1.13.0-cp38.whl", "a-b-c-d-e-f-g.whl", "../", "torch--cp38-cp38-x.whl"]
)
def test_parse_wheel_refuses_what_is_not_a_wheel_name(filename):
    assert ws.parse_wheel(filename) is None


@pytest.mark.parametrize(
    ("name", "normalised"),
    [
        ("oneccl_bind_pt", "oneccl-bind-pt"),
        ("Intel_Extension.For-PyTorch", "intel-extension-for-pytorch"),
        ("a__b", "a-b"),
    ],
)
def test_normalize(name, normalised):
    assert ws.normalize(name) == normalised


@pytest.mark.parametrize(
    ("pin", "version", "matches"),
    [
        ("1.13.0", "1.13.0+cpu", True),  # a plain pin takes any local build of the release
        ("1.13.0+cpu", "1.13.0+cpu", True),
        ("1.13.0+cpu", "1.13.0", False),  # the CUDA build under the plain version is never a +cpu pin
        ("2.8.0+cpu", "2.8.0+cu128", False),
        ("1.13", "1.13.0+cpu", True),
        ("1.13.0+CPU", "1.13.0+cpu", True),
        ("1.13.0", "1.13.1", False),
        ("2.0.0rc1", "2.0.0rc1", True),
        ("2.0.0", "2.0.0rc1", False),
    ],
)
def test_version_matches(pin, version, matches):
    assert ws.version_matches(pin, version) is matches


@pytest.mark.parametrize(
    ("filename", "python", "platforms", "fits"),
    [
        ("torch-1.13.0+cpu-cp38-cp38-linux_x86_64.whl", "3.8.10", RECIPE_PLATFORMS, True),
        ("torch-1.13.0+cpu-cp39-cp39-linux_x86_64.whl", "3.8.10", RECIPE_PLATFORMS, False),
        ("intel_extension_for_pytorch-1.13.0-cp38-cp38-manylinux2014_x86_64.whl", "3.8.10", RECIPE_PLATFORMS, True),
        # A newer glibc than the node's.
        ("torch-2.7.0+cpu-cp38-cp38-manylinux_2_28_x86_64.whl", "3.8.10", ["manylinux_2_27_x86_64"], False),
        ("torch-1.13.0+cpu-cp38-cp38-linux_aarch64.whl", "3.8.10", RECIPE_PLATFORMS, False),
        ("transformers-4.24.0-py3-none-any.whl", "3.8.10", RECIPE_PLATFORMS, True),
        (
            "cryptography-41.0.0-cp37-abi3-manylinux_2_28_x86_64.whl",
            "3.12.3",
            ["manylinux_2_39_x86_64", "manylinux_2_28_x86_64"],
            True,
        ),
        ("cryptography-41.0.0-cp37-abi3-manylinux_2_28_x86_64.whl", "3.6.9", ["manylinux_2_28_x86_64"], False),
        # No platform tags known (a non-glibc node in direct mode): any platform.
        ("torch-1.13.0+cpu-cp38-cp38-linux_x86_64.whl", "3.8.10", [], True),
    ],
)
def test_wheel_fits(filename, python, platforms, fits):
    assert ws.wheel_fits(ws.parse_wheel(filename), python, platforms) is fits


def test_page_files_reads_a_pep503_page_and_a_find_links_page():
    html = (
        "<!DOCTYPE html><html><body>\n"
        '<a href="/whl/cpu/torch-1.13.0%2Bcpu-cp38-cp38-linux_x86_64.whl#sha256=00">torch-1.13.0+cpu-cp38…</a><br/>\n'
        '<a href="https://host/x/oneccl_bind_pt-1.13.0%2Bcpu-cp38-cp38-linux_x86_64.whl">oneccl</a>\n'
        "<a>no href</a></body></html>"
    )
    assert ws.page_files(html) == [
        "torch-1.13.0+cpu-cp38-cp38-linux_x86_64.whl",
        "oneccl_bind_pt-1.13.0+cpu-cp38-cp38-linux_x86_64.whl",
    ]


@pytest.mark.parametrize(
    ("index", "package", "page"),
    [
        ("https://download.pytorch.org/whl/cpu", "torch", "https://download.pytorch.org/whl/cpu/torch/"),
        ("http://127.0.0.1:8000/simple/", "oneccl_bind_pt", "http://127.0.0.1:8000/simple/oneccl-bind-pt/"),
        ("file:///srv/simple", "Intel_Extension_For_PyTorch", "file:///srv/simple/intel-extension-for-pytorch/"),
    ],
)
def test_project_page(index, package, page):
    assert ws.project_page(index, package) == page


PINS = {"torch": "1.13.0+cpu", "oneccl-bind-pt": "1.13.0+cpu", "transformers": "4.24.0"}
TORCH_INDEX = "http://127.0.0.1:1/whl/cpu"
INTEL_PAGE = "http://127.0.0.1:2/ipex-whl-stable-cpu"
SOURCES = {"indexes": [TORCH_INDEX], "find_links": [INTEL_PAGE]}


def test_pages_to_read_is_one_per_package_per_index_and_one_per_find_links_page():
    pages = ws.pages_to_read(SOURCES, PINS)
    assert pages == [
        f"{TORCH_INDEX}/torch/",
        f"{TORCH_INDEX}/oneccl-bind-pt/",
        f"{TORCH_INDEX}/transformers/",
        INTEL_PAGE,
    ]


def test_check_finds_each_pin_where_it_is_listed():
    pages = {
        f"{TORCH_INDEX}/torch/": ["torch-1.13.0+cpu-cp38-cp38-linux_x86_64.whl"],
        f"{TORCH_INDEX}/oneccl-bind-pt/": [],
        f"{TORCH_INDEX}/transformers/": [],
        INTEL_PAGE: [
            "oneccl_bind_pt-1.13.0+cpu-cp38-cp38-linux_x86_64.whl",
            "torch-1.13.0+cpu-cp39-cp39-linux_x86_64.whl",
        ],
    }
    out = ws.check(PINS, SOURCES, pages, "3.8.10", RECIPE_PLATFORMS, default_index_unchecked=True)
    assert [(e["package"], sorted(e["where"])) for e in out["found"]] == [
        ("oneccl-bind-pt", [INTEL_PAGE]),
        ("torch", [f"{TORCH_INDEX}/torch/"]),
    ]
    # transformers carries no local label: pip's default index serves it, unread.
    assert [e["package"] for e in out["unchecked"]] == ["transformers"]
    assert out["missing"] == []


def test_a_cpu_pin_is_never_left_to_the_default_index():
    """The index that lists torch +cpu did not answer (None): the default index does not count for a +cpu pin."""
    pages = {f"{TORCH_INDEX}/torch/": None, INTEL_PAGE: ["oneccl_bind_pt-1.13.0+cpu-cp38-cp38-linux_x86_64.whl"]}
    # The CUDA build under the plain version on a page does not serve the +cpu pin either.
    pages[INTEL_PAGE].append("torch-1.13.0-cp38-cp38-manylinux1_x86_64.whl")
    out = ws.check(PINS, SOURCES, pages, "3.8.10", RECIPE_PLATFORMS, default_index_unchecked=True)
    assert [(e["package"], e["version"]) for e in out["missing"]] == [("torch", "1.13.0+cpu")]
    message = ws.describe_missing(out["missing"][0], "3.8.10", RECIPE_PLATFORMS)
    assert message == (
        f"torch==1.13.0+cpu (cp38 manylinux_2_31_x86_64) is listed in none of: {TORCH_INDEX}/torch/, {INTEL_PAGE}"
    )


def test_without_a_default_index_every_pin_must_be_listed():
    out = ws.check({"transformers": "4.24.0"}, SOURCES, {}, "3.8.10", RECIPE_PLATFORMS, default_index_unchecked=False)
    assert [e["package"] for e in out["missing"]] == ["transformers"]


def test_a_wheel_for_another_python_is_not_listed_for_the_node():
    pages = {f"{TORCH_INDEX}/torch/": ["torch-1.13.0+cpu-cp311-cp311-linux_x86_64.whl"]}
    out = ws.check({"torch": "1.13.0+cpu"}, {"indexes": [TORCH_INDEX]}, pages, "3.8.10", RECIPE_PLATFORMS, True)
    assert [e["package"] for e in out["missing"]] == ["torch"]


def test_pip_config_sources():
    listing = (
        ":env:.cert='/etc/ssl/certs/ca-certificates.crt'\n"
        ":env:.find-links='/opt/wheels'\n"
        "global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'\n"
        "global.find-links='/opt/wheels'\n"
        "install.index-url='http://127.0.0.1:3141/simple'\n"
    )
    assert ws.pip_config_sources(listing) == {
        "index-url": ["http://127.0.0.1:3141/simple"],
        "extra-index-url": ["file:///opt/pypi/simple", "file:///opt/pypi-more/simple"],
        "find-links": ["/opt/wheels"],
    }
