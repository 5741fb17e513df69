# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
import pytest

from ansible_collections.amx.cluster.plugins.module_utils.dialect import DialectError, flag_dialect, parse_version


def test_recipe_dialect():
    """transformers 4.24 with the oneCCL binding and IPEX, 8 ranks: the recipe's `--no_cuda --xpu_backend ccl`."""
    dialect = flag_dialect("4.24.0", world_size=8, oneccl_installed=True, ipex_installed=True)
    assert dialect["flags"] == ["--no_cuda", "--xpu_backend", "ccl"]
    assert dialect["backend"] == "ccl"
    assert dialect["supports_use_ipex"] is True
    assert dialect["training_args"] == {"no_cuda": True, "xpu_backend": "ccl"}


def test_recipe_single_node_check_has_use_ipex_and_no_backend():
    dialect = flag_dialect("4.24.0", world_size=1, oneccl_installed=True, ipex_installed=True, use_ipex=True)
    assert dialect["flags"] == ["--no_cuda", "--use_ipex"]
    assert dialect["backend"] is None
    assert dialect["backend_flag"] is None
    assert dialect["use_ipex"] is True


@pytest.mark.parametrize(
    ("version", "world", "kwargs", "flags"),
    [
        # --xpu_backend until 4.32, --ddp_backend from 4.29 (preferred), ccl until 5.1
        ("4.20.0", 2, {"oneccl_installed": True}, ["--no_cuda", "--xpu_backend", "ccl"]),
        ("4.28.1", 2, {}, ["--no_cuda", "--xpu_backend", "gloo"]),
        ("4.29.0", 2, {"oneccl_installed": True}, ["--no_cuda", "--ddp_backend", "ccl"]),
        ("4.31.0", 2, {"backend": "mpi"}, ["--no_cuda", "--ddp_backend", "mpi"]),
        # --use_cpu from 4.32, --no_cuda gone in 5.0
        ("4.32.0", 2, {}, ["--use_cpu", "--ddp_backend", "gloo"]),
        ("4.57.6", 4, {"oneccl_installed": True}, ["--use_cpu", "--ddp_backend", "ccl"]),
        ("5.0.0", 2, {"oneccl_installed": True}, ["--use_cpu", "--ddp_backend", "ccl"]),
        ("5.1.0", 2, {"oneccl_installed": True}, ["--use_cpu", "--ddp_backend", "gloo"]),
        ("5.24.0", 6, {}, ["--use_cpu", "--ddp_backend", "gloo"]),
        ("5.24.0", 1, {"backend": "gloo"}, ["--use_cpu"]),
        ("4.24.0", 1, {}, ["--no_cuda"]),
        # --use_ipex until 4.57, and only with IPEX installed
        ("4.56.2", 1, {"use_ipex": True, "ipex_installed": True}, ["--use_cpu", "--use_ipex"]),
        ("4.57.0", 1, {"use_ipex": True, "ipex_installed": True}, ["--use_cpu"]),
        ("4.24.0", 2, {"use_ipex": True}, ["--no_cuda", "--xpu_backend", "gloo"]),
        ("4.24.0", 2, {"ipex_installed": True}, ["--no_cuda", "--xpu_backend", "gloo"]),
        # pre-release and local versions read as their release
        ("5.0.0rc1", 2, {}, ["--use_cpu", "--ddp_backend", "gloo"]),
        ("4.57.0.dev0", 1, {"use_ipex": True, "ipex_installed": True}, ["--use_cpu"]),
        ("v4.31", 2, {}, ["--no_cuda", "--ddp_backend", "gloo"]),
    ],
)
def test_flags_by_version(version, world, kwargs, flags):
    dialect = flag_dialect(version, world, **kwargs)
    assert dialect["flags"] == flags
    assert dialect["cpu_flag"] == flags[0]
    assert dialect["world_size"] == world


@pytest.mark.parametrize(
    ("version", "kwargs", "note"),
    [
        ("5.1.0", {"oneccl_installed": True}, "no longer accepts the ccl backend"),
        ("4.57.0", {"use_ipex": True, "ipex_installed": True}, "has no such flag (gone in 4.57.0)"),
        ("4.24.0", {"use_ipex": True}, "intel_extension_for_pytorch is not installed"),
        ("4.24.0", {"backend": "mpi"}, "needs a PyTorch built with MPI"),
    ],
)
def test_notes_say_why(version, kwargs, note):
    dialect = flag_dialect(version, 2, **kwargs)
    assert any(note in line for line in dialect["notes"]), dialect["notes"]


def test_one_process_note():
    assert "no backend flag" in flag_dialect("5.24.0", 1)["notes"][0]


@pytest.mark.parametrize(
    ("version", "world", "kwargs", "message"),
    [
        ("4.19.4", 2, {}, "transformers 4.19.4 is too old: runs under mpirun need >= 4.20.0"),
        (
            "5.24.0",
            2,
            {"backend": "ccl", "oneccl_installed": True},
            "does not accept the ccl backend (removed in 5.1.0)",
        ),
        ("4.24.0", 2, {"backend": "ccl"}, "needs the oneCCL binding for PyTorch"),
        ("4.24.0", 2, {"backend": "nccl"}, "backend must be one of auto, ccl, gloo, mpi"),
        ("4.24.0", 0, {}, "world_size must be an integer >= 1"),
        ("4.24.0", "two", {}, "world_size must be an integer >= 1"),
        ("4.24.0", True, {}, "world_size must be an integer >= 1"),
        ("latest", 1, {}, "cannot read a transformers version from 'latest'"),
        ("", 1, {}, "cannot read a transformers version"),
    ],
)
def test_impossible_requests_are_refused(version, world, kwargs, message):
    with pytest.raises(DialectError) as error:
        flag_dialect(version, world, **kwargs)
    assert message in str(error.value)
    assert isinstance(error.value, ValueError)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("4.24.0", (4, 24, 0)),
        ("5", (5, 0, 0)),
        ("4.57.0.dev0", (4, 57, 0)),
        ("5.0.0rc1", (5, 0, 0)),
        (" 4.29 ", (4, 29, 0)),
    ],
)
def test_parse_version(text, parsed):
    assert parse_version(text) == parsed
