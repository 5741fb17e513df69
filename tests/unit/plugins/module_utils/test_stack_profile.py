# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of plugins/module_utils/stack_profile.py, on the real profile data of the torch_stack role."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.amx.cluster.plugins.module_utils import stack_profile as sp

PROFILES_FILE = Path(__file__).resolve().parents[4] / "roles" / "torch_stack" / "vars" / "profiles.yml"
DATA = yaml.safe_load(PROFILES_FILE.read_text())
PROFILES = DATA["__torch_stack_profiles"]
YANKED = DATA["__torch_stack_yanked"]


LOCKS = PROFILES_FILE.parents[1] / "files" / "locks"


def resolve(name: str, **kwargs):
    return sp.resolve_profile(PROFILES, name, **kwargs)


def locked(name: str, python: str) -> dict:
    """The keyword arguments the role passes for a built-in profile's lock on a node with this Python."""
    path = LOCKS / name / f"py{python}.txt"
    return {"lock_text": path.read_text() if path.is_file() else None, "use_lock": True}


@pytest.mark.parametrize(
    ("name", "requirements", "has_ipex", "has_ccl", "backend", "cpu_flag", "backend_flag", "use_ipex"),
    [
        (
            "recipe-2022",
            [
                "torch==1.13.0+cpu",
                "intel-extension-for-pytorch==1.13.0",
                "oneccl-bind-pt==1.13.0+cpu",
                "transformers==4.24.0",
                "datasets==2.7.1",
                "evaluate==0.3.0",
                "accelerate==0.15.0",
            ],
            True,
            True,
            "ccl",
            "--no_cuda",
            "--xpu_backend",
            True,
        ),
        ("ipex-2.7-ccl", None, True, True, "ccl", "--use_cpu", "--ddp_backend", True),
        ("ipex-2.8", None, True, False, "gloo", "--use_cpu", "--ddp_backend", True),
        ("native", None, False, False, "gloo", "--use_cpu", "--ddp_backend", False),
    ],
)
def test_builtin_profiles(name, requirements, has_ipex, has_ccl, backend, cpu_flag, backend_flag, use_ipex):
    resolved = resolve(name)
    if requirements is not None:
        assert resolved["requirements"] == requirements
    assert resolved["has_ipex"] is has_ipex
    assert resolved["has_ccl"] is has_ccl
    assert resolved["backend"] == backend
    assert resolved["transformers_dialect"]["cpu_flag"] == cpu_flag
    assert resolved["transformers_dialect"]["backend_flag"] == backend_flag
    assert resolved["transformers_dialect"]["supports_use_ipex"] is use_ipex
    assert resolved["pins"]["torch"] == PROFILES[name]["packages"]["torch"]


def test_native_is_current_cpu_torch_without_ipex():
    resolved = resolve("native")
    assert resolved["pins"]["torch"] == "2.13.0+cpu"  # the CPU build, never the index's CUDA one
    assert {"transformers", "accelerate", "datasets", "evaluate", "tokenizers"} <= set(resolved["packages"])
    assert "intel-extension-for-pytorch" not in resolved["packages"]


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_carries_what_run_qa_imports(name):
    # run_qa.py imports datasets and evaluate, which transformers does not install (STACKS.md).
    assert {"datasets", "evaluate"} <= set(resolve(name)["pins"])


@pytest.mark.parametrize(
    ("overrides", "extra", "expected_torch", "expected_extra"),
    [
        ({"torch": "2.8.1"}, [], "torch==2.8.1", []),
        ({"Torch": ">=2.8,<2.9"}, [], "torch>=2.8,<2.9", []),
        ({}, ["scikit-learn==1.5.2"], "torch==2.8.0+cpu", ["scikit-learn==1.5.2"]),
    ],
)
def test_overrides_and_extras(overrides, extra, expected_torch, expected_extra):
    resolved = resolve("ipex-2.8", overrides=overrides, extra_packages=extra)
    assert resolved["requirements"][0] == expected_torch
    assert resolved["requirements"][len(PROFILES["ipex-2.8"]["packages"]) :] == expected_extra


def test_override_none_drops_a_package_and_flags_follow():
    resolved = resolve("ipex-2.7-ccl", overrides={"oneccl_bind_pt": None})
    assert resolved["has_ccl"] is False
    assert resolved["backend"] == "gloo"
    assert not any(line.startswith("oneccl") for line in resolved["requirements"])


def test_index_overrides_replace_the_profile_sources():
    assert resolve("native")["extra_index_urls"] == ["https://download.pytorch.org/whl/cpu"]
    resolved = resolve("native", index_url="file:///srv/simple", extra_index_urls=[], find_links=["/srv/wheels"])
    assert resolved["index_url"] == "file:///srv/simple"
    assert resolved["extra_index_urls"] == []
    assert resolved["find_links"] == ["/srv/wheels"]
    assert sp.index_args(resolved) == ["--index-url", "file:///srv/simple", "--find-links", "/srv/wheels"]


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("nope", {}, "unknown stack profile 'nope'; known profiles: ipex-2.7-ccl, ipex-2.8, native, recipe-2022"),
        ("native", {"overrides": {"torch": None}}, "torch cannot be dropped"),
        ("native", {"extra_packages": ["Torch==2.0"]}, "torch is already in profile"),
    ],
)
def test_resolve_refuses(name, kwargs, message):
    with pytest.raises(sp.StackProfileError, match=message.replace("(", r"\(")):
        resolve(name, **kwargs)


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        ({"description": "x"}, "lacks the key"),
        ({**PROFILES["native"], "packages": {"transformers": "5.0"}}, "must pin torch"),
        ({**PROFILES["native"], "extra_index_urls": "http://x"}, "'extra_index_urls' must be a list"),
        ("text", "must be a mapping"),
    ],
)
def test_bad_profile_data(profile, message):
    with pytest.raises(sp.StackProfileError, match=message):
        sp.resolve_profile({"bad": profile}, "bad")


@pytest.mark.parametrize(
    ("name", "python", "allow_yanked", "overrides", "expected"),
    [
        ("native", "3.11.2", False, {}, []),
        ("native", "3.14.0", False, {}, []),
        ("native", "3.9.18", False, {}, ["needs Python 3.10 to 3.14 but the node has 3.9.18"]),
        ("ipex-2.8", "3.13.1", False, {}, []),
        ("ipex-2.8", "3.14.0", False, {}, ["needs Python 3.9 to 3.13"]),
        ("recipe-2022", "3.8.10", True, {}, []),
        ("recipe-2022", "3.8.10", False, {}, ["intel-extension-for-pytorch==1.13.0 is yanked"]),
        ("recipe-2022", "3.11.2", True, {}, ["needs Python 3.8 to 3.10"]),
        (
            "ipex-2.8",
            "3.11.2",
            False,
            {"torch": "2.7.1"},
            ["IPEX 2.8.0 needs torch 2.8.x but torch is pinned to 2.7.1"],
        ),
        ("ipex-2.8", "3.11.2", False, {"torch": "2.8.1"}, []),
        (
            "ipex-2.7-ccl",
            "3.11.2",
            False,
            {"torch": "2.7.1", "intel-extension-for-pytorch": "2.7.0"},
            ["oneccl_bind_pt 2.7.0+cpu must match torch exactly"],
        ),
        ("ipex-2.7-ccl", "3.11.2", False, {"intel-extension-for-pytorch": ">=2.7"}, ["must be pinned exactly"]),
        ("ipex-2.8", "3.11.2", False, {"torch": "2.5.0", "intel-extension-for-pytorch": "2.5.0"}, ["is yanked"]),
        ("ipex-2.8", "3.11.2", True, {"torch": "2.5.0", "intel-extension-for-pytorch": "2.5.0"}, []),
    ],
)
def test_profile_problems(name, python, allow_yanked, overrides, expected):
    problems = sp.profile_problems(resolve(name, overrides=overrides), python, allow_yanked, YANKED)
    assert len(problems) == len(expected), problems
    for problem, text in zip(problems, expected):
        assert text in problem


def test_yanked_rule_as_list_and_bad_rule():
    resolved = resolve("ipex-2.8")
    assert sp.profile_problems(resolved, "3.11", False, {"intel-extension-for-pytorch": ["2.8.0"]})
    with pytest.raises(sp.StackProfileError, match="yanked rule"):
        sp.profile_problems(resolved, "3.11", False, {"intel-extension-for-pytorch": "2.8.0"})


@pytest.mark.parametrize(
    ("arch", "glibc", "first", "count", "last"),
    [
        ("x86_64", "2.36", "manylinux_2_36_x86_64", 24, "linux_x86_64"),
        ("x86_64", "2.17", "manylinux_2_17_x86_64", 5, "linux_x86_64"),
        ("aarch64", "2.31", "manylinux_2_31_aarch64", 17, "linux_aarch64"),
        ("arm64", "2.28", "manylinux_2_28_aarch64", 14, "linux_aarch64"),
    ],
)
def test_platform_tags(arch, glibc, first, count, last):
    tags = sp.platform_tags(arch, glibc)
    assert (tags[0], len(tags), tags[-1]) == (first, count, last)


@pytest.mark.parametrize(
    ("arch", "glibc", "message"),
    [("x86_64", "", "no glibc"), ("x86_64", "2.12", "older than 2.17"), ("", "2.36", "architecture is unknown")],
)
def test_platform_tags_refuse(arch, glibc, message):
    with pytest.raises(sp.StackProfileError, match=message):
        sp.platform_tags(arch, glibc)


def test_wheelhouse_key_depends_on_what_matters():
    base = resolve("native")
    tags = sp.platform_tags("x86_64", "2.36")
    key = sp.wheelhouse_key(base, "3.11.2", tags)
    assert len(key) == 16
    assert key == sp.wheelhouse_key(resolve("native"), "3.11.9", tags)  # patch level does not matter
    assert key != sp.wheelhouse_key(base, "3.12.1", tags)
    assert key != sp.wheelhouse_key(base, "3.11.2", sp.platform_tags("x86_64", "2.35"))
    assert key != sp.wheelhouse_key(resolve("native", overrides={"datasets": "5.1.0"}), "3.11.2", tags)
    assert key != sp.wheelhouse_key(resolve("native", extra_index_urls=[]), "3.11.2", tags)


def test_wheelhouse_key_takes_the_nodes_markers_but_the_kernels():
    base, tags = resolve("native"), sp.platform_tags("x86_64", "2.36")
    node = {"python_full_version": "3.11.2", "platform_release": "6.1.0-13-amd64", "platform_version": "#1 SMP"}
    key = sp.wheelhouse_key(base, "3.11.2", tags, node)
    assert key != sp.wheelhouse_key(base, "3.11.2", tags)
    assert key == sp.wheelhouse_key(base, "3.11.2", tags, dict(node, platform_release="6.1.0-18-amd64"))
    assert key == sp.wheelhouse_key(base, "3.11.2", tags, dict(node, platform_version="#2 SMP PREEMPT"))
    assert key != sp.wheelhouse_key(base, "3.11.2", tags, dict(node, python_full_version="3.11.9"))
    with pytest.raises(sp.StackProfileError, match="must be a mapping"):
        sp.wheelhouse_key(base, "3.11.2", tags, ["3.11.2"])


def test_pip_download_args():
    resolved = resolve("ipex-2.8", extra_index_urls=[])
    args = sp.pip_download_args(resolved, "3.11.2", ["manylinux_2_28_x86_64", "linux_x86_64"], "/tmp/wh")
    assert args[:7] == [
        "--dest",
        "/tmp/wh",
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        "3.11",
    ]
    assert args[7:11] == ["--platform", "manylinux_2_28_x86_64", "--platform", "linux_x86_64"]
    assert args[11:] == [*resolved["requirements"], "pip"]  # a profile without a lock: no constraints


def test_pip_download_args_of_a_locked_profile_take_the_lock_as_constraints():
    resolved = resolve("recipe-2022", extra_index_urls=[], find_links=[], **locked("recipe-2022", "3.8"))
    args = sp.pip_download_args(resolved, "3.8.10", ["manylinux2014_x86_64"], "/tmp/wh")
    assert args[9:] == ["-c", "/tmp/wh/constraints.txt", *resolved["requirements"], "pip"]


@pytest.mark.parametrize(
    ("version", "cpu_flag", "backend_flag", "use_ipex"),
    [
        ("4.24.0", "--no_cuda", "--xpu_backend", True),
        ("4.30.2", "--no_cuda", "--ddp_backend", True),
        ("4.53.3", "--use_cpu", "--ddp_backend", True),
        ("4.57.1", "--use_cpu", "--ddp_backend", False),
    ],
)
def test_transformers_dialect(version, cpu_flag, backend_flag, use_ipex):
    dialect = sp.transformers_dialect(version)
    assert (dialect["cpu_flag"], dialect["backend_flag"], dialect["supports_use_ipex"]) == (
        cpu_flag,
        backend_flag,
        use_ipex,
    )
    with pytest.raises(sp.StackProfileError):
        sp.transformers_dialect("4.10.0")


FREEZE = "torch==2.13.0+cpu\nTransformers==5.24.0\n# comment\n-e git+https://x/y#egg=z\nnumpy==2.4.6\n"


def test_manifest_is_stable_and_sensitive():
    versions = {"torch": "2.13.0+cpu", "transformers": "5.24.0", "ipex": None, "python": "3.11.2"}
    one = sp.build_manifest("native", "abc", FREEZE, versions, "3.11.2")
    two = sp.build_manifest(
        "native", "abc", "numpy==2.4.6\ntransformers==5.24.0\ntorch==2.13.0+cpu", versions, "3.11.2"
    )
    assert one == two
    assert one["packages"] == {"numpy": "2.4.6", "torch": "2.13.0+cpu", "transformers": "5.24.0"}
    other = sp.build_manifest("native", "abc", FREEZE.replace("2.4.6", "2.4.5"), versions, "3.11.2")
    assert other["manifest_sha256"] != one["manifest_sha256"]
    assert other["freeze_sha256"] != one["freeze_sha256"]
    with pytest.raises(sp.StackProfileError, match="no package"):
        sp.build_manifest("native", "abc", "", versions, "3.11.2")


@pytest.mark.parametrize(
    ("wheels", "expected"),
    [
        (["/c/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"], []),
        (
            ["/c/torch-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl"],
            ["/c/torch-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl"],
        ),
        (
            ["evaluate-0.4.6-py3-none-any.whl", "numpy-2.4.6-1-cp311-cp311-linux_x86_64.whl"],
            ["evaluate-0.4.6-py3-none-any.whl"],
        ),
    ],
)
def test_wheels_missing(wheels, expected):
    assert sp.wheels_missing(wheels, FREEZE) == expected


@pytest.mark.parametrize("bad", ["torch.tar.gz", "torch-2.0.whl"])
def test_wheel_name_refused(bad):
    with pytest.raises(sp.StackProfileError):
        sp.parse_wheel_filename(bad)


@pytest.mark.parametrize(
    ("spec", "name", "rest", "pin"),
    [
        ("torch==2.8.0", "torch", "==2.8.0", "2.8.0"),
        ("Intel_Extension_For_PyTorch == 2.8.0", "intel-extension-for-pytorch", "== 2.8.0", "2.8.0"),
        ("transformers[torch]>=4.30", "transformers", ">=4.30", None),
        ("accelerate==1.*", "accelerate", "==1.*", None),
        ("x===1.0", "x", "===1.0", None),
    ],
)
def test_split_spec_and_pin(spec, name, rest, pin):
    assert sp.split_spec(spec) == (name, rest)
    assert sp.exact_pin(rest) == pin


@pytest.mark.parametrize(
    ("version", "expected"), [("2.7.0+cpu", "2.7"), ("1.13", "1.13"), ("3", "3.0"), ("3.11.2", "3.11")]
)
def test_major_minor(version, expected):
    assert sp.major_minor(version) == expected


@pytest.mark.parametrize(
    "packages_by_host, expected",
    [
        ({"a": {"torch": "2.13.0"}, "b": {"torch": "2.13.0"}}, []),
        (
            {"a": {"torch": "2.13.0", "extra": "1.0"}, "b": {"torch": "2.13.0"}, "c": {"torch": "2.12.0"}},
            ["extra: 1.0 on a; absent on b, c", "torch: 2.13.0 on a, b; 2.12.0 on c"],
        ),
        ({"a": {}, "b": {"x": "1"}}, ["x: absent on a; 1 on b"]),
        ({}, []),
    ],
)
def test_stack_differences(packages_by_host, expected):
    assert sp.stack_differences(packages_by_host) == expected


@pytest.mark.parametrize(
    "recorded, freeze, expected",
    [
        ({"torch": "2.13.0+cpu", "numpy": "2.1.0"}, "numpy==2.1.0\ntorch==2.13.0+cpu\n", []),
        # Added by hand since: not lost, nothing to reinstall (the manifest is rewritten and compared instead).
        ({"torch": "2.13.0+cpu"}, "torch==2.13.0+cpu\nextra==1.0\n", []),
        (
            {"torch": "2.13.0+cpu", "numpy": "2.1.0", "tokenizers": "0.23.3"},
            "numpy==2.2.0\ntokenizers==0.23.3\n",
            ["numpy: 2.1.0, now 2.2.0", "torch: 2.13.0+cpu, now absent"],
        ),
        (
            {"by-hand": "file:///tmp/by_hand-1.0-py3-none-any.whl"},
            "",
            ["by-hand: file:///tmp/by_hand-1.0-py3-none-any.whl, now absent"],
        ),
    ],
)
def test_packages_lost(recorded, freeze, expected):
    assert sp.packages_lost(recorded, freeze) == expected


@pytest.mark.parametrize(
    "freeze, expected",
    [
        ("Torch==2.13.0+cpu\nnumpy==2.1.0\n", {"torch": "2.13.0+cpu", "numpy": "2.1.0"}),
        # A package installed by hand from a file has no version in pip freeze: its URL stands in for one.
        (
            "torch==2.13.0\namx_cluster.By-Hand @ file:///tmp/amx_cluster_by_hand-1.0-py3-none-any.whl\n",
            {"torch": "2.13.0", "amx-cluster-by-hand": "file:///tmp/amx_cluster_by_hand-1.0-py3-none-any.whl"},
        ),
        ("# comment\n-e git+https://example.invalid/x.git#egg=x\n\n", {}),
    ],
)
def test_parse_freeze(freeze, expected):
    assert sp.parse_freeze(freeze) == expected


# ---------------------------------------------------------------------------------------------------------------
# The locks (files/locks/PROFILE/pyX.Y.txt, written by tools/lock_profile.py).

LOCKED_PROFILES = sorted(name for name, profile in PROFILES.items() if profile.get("lock"))


def test_recipe_2022_is_locked_and_native_floats():
    assert "recipe-2022" in LOCKED_PROFILES
    assert "native" not in LOCKED_PROFILES and "no lock" in PROFILES["native"]["description"]
    assert not (LOCKS / "native").exists()


@pytest.mark.parametrize("name", LOCKED_PROFILES)
def test_a_locked_profile_has_a_lock_for_every_python_of_its_range_and_no_other(name):
    pythons = sp.python_versions(PROFILES[name]["python_min"], PROFILES[name]["python_max"])
    assert sorted(p.name for p in (LOCKS / name).iterdir()) == sorted(f"py{python}.txt" for python in pythons)


LOCK_FILES = sorted((name, path.stem[2:]) for name in LOCKED_PROFILES for path in (LOCKS / name).glob("py*.txt"))


@pytest.mark.parametrize(("name", "python"), LOCK_FILES)
def test_every_lock_agrees_with_its_profiles_pins_and_holds_every_package(name, python):
    lock = sp.parse_lock((LOCKS / name / f"py{python}.txt").read_text())
    resolved = resolve(name)
    for package, pin in resolved["pins"].items():
        # The lock keeps the profile's pin as written; a local label the profile adds later (1.13.0+cpu) still
        # matches a lock entry without one under pip's rules, and the role writes the profile's pin in its place.
        assert package in lock, f"{name} py{python}: {package} is pinned by the profile but absent from the lock"
        assert lock[package] == pin or lock[package] == pin.split("+")[0], (name, python, package, lock[package], pin)
    assert "pip" in lock, "the node's virtualenv upgrades pip to the lock's release"


def test_the_recipe_lock_is_of_its_era():
    lock = sp.parse_lock((LOCKS / "recipe-2022" / "py3.8.txt").read_text())
    era = {
        "fsspec": "2022.11.0",
        "huggingface-hub": "0.11.1",
        "pyarrow": "10.0.1",
        "numpy": "1.23.5",
        "tokenizers": "0.13.2",
        "accelerate": "0.15.0",
    }
    assert {name: lock[name] for name in era} == era


def test_the_role_takes_the_lock_as_constraints_with_the_profiles_pins_and_the_users_choices():
    text = "# comment\ntorch==1.12.0\nfsspec==2022.11.0\nnumpy==1.23.5\ntransformers==4.24.0\nfoo==1\n"
    resolved = resolve(
        "recipe-2022", overrides={"transformers": "4.25.1"}, extra_packages=["foo>=2"], lock_text=text, use_lock=True
    )
    # torch: the profile's pin wins over the lock's entry; transformers (overridden) and foo (extra) are left out.
    assert resolved["constraints"] == ["fsspec==2022.11.0", "numpy==1.23.5", "torch==1.13.0+cpu"]
    assert resolved["locked"] is True
    assert resolve("recipe-2022", lock_text=text, use_lock=False)["constraints"] == []
    assert resolve("native", lock_text=text, use_lock=True)["locked"] is False


def test_the_lock_is_in_the_requirements_hash():
    one = resolve("recipe-2022", **locked("recipe-2022", "3.8"))
    other = resolve("recipe-2022", lock_text="torch==1.13.0\nfsspec==2025.3.0\n", use_lock=True)
    assert sp.requirements_hash(one) != sp.requirements_hash(other)
    assert sp.requirements_hash(resolve("native")) == sp.requirements_hash(resolve("native", use_lock=True))


def test_a_locked_profile_without_a_lock_for_the_nodes_python_is_a_problem():
    resolved = resolve("recipe-2022", lock_text=None, use_lock=True)
    problems = sp.profile_problems(resolved, "3.8.10", allow_yanked=True, yanked=YANKED)
    assert problems == [
        "profile 'recipe-2022' has no lock for Python 3.8 (roles/torch_stack/files/locks/recipe-2022/py3.8.txt): make "
        "one with tools/lock_profile.py, or set torch_stack_lock: false to let the unpinned packages float"
    ]
    assert sp.profile_problems(resolve("recipe-2022", **locked("recipe-2022", "3.8")), "3.8.10", True, YANKED) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("numpy>=1.23\n", "line 1 of the lock is not of the form name==version"),
        ("numpy==1.23.5\ntorch @ file:///tmp/torch.whl\n", "line 2 of the lock is not of the form"),
        ("numpy==1.23.5\nNumPy==1.24.0\n", "line 2 of the lock names numpy a second time"),
    ],
)
def test_a_malformed_lock_is_refused(text, message):
    with pytest.raises(sp.StackProfileError, match=message):
        sp.parse_lock(text)


def test_python_versions():
    assert sp.python_versions("3.8", "3.10") == ["3.8", "3.9", "3.10"]
    assert sp.python_versions("3.12.1", "3.12") == ["3.12"]
    with pytest.raises(sp.StackProfileError, match="not one of a single major version"):
        sp.python_versions("3.10", "3.8")
