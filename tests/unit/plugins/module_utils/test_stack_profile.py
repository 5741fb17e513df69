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


# --- Bad input to the functions (the cases of the stack_* filters, removed in 0.2.0: the functions raise, the plan
# turns that into a problem of the host).


@pytest.mark.parametrize(
    ("func", "args", "error", "message"),
    [
        (sp.resolve_profile, ({}, "native"), sp.StackProfileError, "no stack profiles are defined"),
        (sp.platform_tags, ("x86_64", None), sp.StackProfileError, "the node has no glibc"),
        (sp.major_minor, ("abc",), sp.StackProfileError, "cannot read a version"),
        (sp.wheels_missing, (["x.tar.gz"], ""), sp.StackProfileError, "is not a wheel file name"),
        (sp.profile_problems, ({}, "3.11"), KeyError, "name"),
        (sp.stack_differences, (["not a mapping"],), AttributeError, "values"),
        (sp.packages_lost, (["torch"], ""), sp.StackProfileError, "the recorded packages"),
    ],
)
def test_bad_input_raises(func, args, error, message):
    with pytest.raises(error, match=message):
        func(*args)


def test_pass_through():
    assert sp.major_minor("2.8.0+cpu") == "2.8"
    assert sp.platform_tags("x86_64", "2.28")[0] == "manylinux_2_28_x86_64"


# --- The plan of amx.cluster.stack_plan

PYTHON = {"version": "3.11.4", "machine": "x86_64", "libc": "glibc", "libc_version": "2.36"}
MARKERS = {"python_version": "3.11", "platform_machine": "x86_64", "platform_release": "6.1"}
SETTINGS = {
    "profile": "native",
    "custom_profiles": {},
    "overrides": {},
    "extra_packages": [],
    "allow_yanked": False,
    "lock": True,
    "index_url": None,
    "extra_index_urls": None,
    "find_links": None,
    "index_check_timeout": 10,
    "unreachable_indexes": "fail",
    "venv": "/opt/amx-cluster/venv",
    "user": "ubuntu",
    "group": None,
    "base_python": "python3",
    "install_mode": "wheelhouse",
    "controller_pip": ["/usr/bin/python3", "-m", "pip"],
    "controller_pip_extra_args": [],
    "controller_cache": "/srv/cache/wheelhouse",
    "node_wheelhouse": "/var/cache/amx-cluster/wheelhouse",
    "import_every_run": False,
}
NODE = {
    "name": "node1",
    "os_family": "Debian",
    "distribution": "Debian",
    "python": PYTHON,
    "markers": MARKERS,
    "user": {"home": "/home/ubuntu"},
    "group_exists": False,
    "primary_group": "ubuntu",
    "venv_stat": {"exists": False},
    "venv_writable": None,
}


def make_plan(settings=None, node=None, answers=None, lock_text=None):
    return sp.plan({**SETTINGS, **(settings or {})}, PROFILES, YANKED, {**NODE, **(node or {})}, lock_text, answers)


def test_plan_gives_what_the_tasks_use():
    planned = make_plan()
    assert planned["problems"] == []
    resolved = planned["resolved"]
    assert resolved["name"] == "native" and planned["requirements_sha256"] == sp.requirements_hash(resolved)
    assert planned["requirements"] == "".join(line + "\n" for line in resolved["requirements"])
    assert planned["constraints"] == "# profile native has no lock here: its unpinned packages float\n"
    assert planned["index_args"] == ["--extra-index-url", "https://download.pytorch.org/whl/cpu"]
    assert planned["group"] == "ubuntu" and planned["venv_absent"] and planned["python"] == "3.11"
    wheelhouse = planned["wheelhouse"]
    platforms = sp.platform_tags("x86_64", "2.36")
    assert wheelhouse["key"] == sp.wheelhouse_key(resolved, "3.11.4", platforms, MARKERS)
    assert wheelhouse["dest"] == f"/srv/cache/wheelhouse/{wheelhouse['key']}"
    assert wheelhouse["args"][:4] == [
        "download",
        "--disable-pip-version-check",
        "--dest",
        wheelhouse["dest"] + ".partial",
    ]
    assert wheelhouse["files"] == {"requirements.txt": planned["requirements"], "constraints.txt": ""}
    check = planned["source_check"]
    assert check["name"] == "node1" and check["platforms"] == platforms and check["default_index"]
    assert [entry["key"] for entry in planned["imports"]][:2] == ["torch", "transformers"]
    assert "wheelhouse" not in make_plan({"install_mode": "direct"})


def test_plan_reads_the_lock_and_leaves_it_for_custom_profiles():
    lock = "torch==2.13.0+cpu\nfilelock==3.0.0\n"
    assert make_plan(lock_text=lock)["resolved"]["constraints"] == []  # native has no lock of its own
    planned = sp.plan({**SETTINGS, "profile": "ipex-2.8"}, PROFILES, YANKED, NODE, lock, None)
    assert "filelock==3.0.0" in planned["constraints"]
    custom = {"ipex-2.8": PROFILES["ipex-2.8"]}
    assert not sp.uses_lock({**SETTINGS, "profile": "ipex-2.8", "custom_profiles": custom})


def test_plan_reports_every_problem_at_once():
    planned = make_plan(
        {
            "profile": "recipe-2022",
            "venv": "/opt",
            "controller_pip": ["pip3"],
            "index_check_timeout": 0,
            "group": "nogroup",
        },
        {"user": None, "os_family": "Suse", "distribution": "SLES"},
    )
    problems = planned["problems"]
    assert "resolved" not in planned
    assert problems[0].startswith("profile 'recipe-2022' cannot be installed: profile 'recipe-2022' needs Python 3.8")
    assert "is yanked from the package index" in problems[0]
    joined = " | ".join(problems)
    for text in (
        "torch_stack_index_check_timeout is 0",
        "torch_stack_controller_pip is ['pip3']",
        "not SLES (Suse)",
        "the user 'ubuntu' that should own /opt does not exist",
        "the group 'nogroup' (torch_stack_group)",
        "torch_stack_venv is '/opt', a system folder",
    ):
        assert text in joined, text


@pytest.mark.parametrize(
    ("settings", "node", "expect"),
    [
        ({"profile": "ipex-3.0"}, {}, "unknown torch_stack_profile 'ipex-3.0'. Choose one of ipex-2.7-ccl, ipex-2.8"),
        ({"venv": "venv"}, {}, "torch_stack_venv is 'venv': a relative path"),
        ({"overrides": {"torch": None}}, {}, "profile 'native' cannot be resolved: torch cannot be dropped"),
        ({"install_mode": "offline"}, {}, "torch_stack_install_mode must be wheelhouse or direct"),
        ({"unreachable_indexes": "maybe"}, {}, "torch_stack_unreachable_indexes must be fail or skip"),
        ({}, {"python": None, "python_error": "no such file"}, "cannot run torch_stack_base_python 'python3' (no such"),
        ({}, {"python": {**PYTHON, "libc": "", "libc_version": ""}}, "not glibc"),
        ({"node_wheelhouse": "/var/tmp/"}, {}, "torch_stack_node_wheelhouse is '/var/tmp/', a system folder"),
        ({"controller_cache": "/usr"}, {}, "torch_stack_controller_cache is '/usr', a system folder"),
        (
            {"venv": "/srv/venv-link"},
            {"venv_stat": {"exists": True, "islnk": True, "lnk_source": "/usr"}},
            "torch_stack_venv is '/srv/venv-link', a link to '/usr', a system folder. Set torch_stack_venv",
        ),
        ({}, {"venv_stat": {"exists": True, "isdir": False}}, "exists but is not a folder"),
        ({}, {"venv_stat": {"exists": True, "isdir": True}, "venv_writable": False}, "is not writable by ubuntu"),
    ],
)
def test_plan_problem(settings, node, expect):
    problems = make_plan(settings, node)["problems"]
    assert len(problems) == 1 and expect in problems[0], problems


def test_an_existing_writable_venv_is_used_as_it_is():
    planned = make_plan(node={"venv_stat": {"exists": True, "isdir": True}, "venv_writable": True})
    assert planned["problems"] == [] and not planned["venv_absent"]


def test_unreachable_indexes_fail_or_are_left_out():
    closed = "http://127.0.0.1:9/simple/"
    answers = [
        {"item": closed, "msg": "Connection refused"},
        {"item": "https://download.pytorch.org/whl/cpu", "status": 200},
        {"item": "/srv/none", "stat": {"exists": False}},
        {"skipped": True},
    ]
    failed = make_plan({"extra_index_urls": [closed, "https://download.pytorch.org/whl/cpu"]}, answers=answers)
    (problem,) = failed["problems"]
    assert problem.startswith("the controller cannot reach the package index(es) of profile 'native' (no answer, an")
    assert f"path): {closed}. Fix the URL" in problem and "torch_stack_unreachable_indexes: skip" in problem
    skipped = make_plan(
        {"extra_index_urls": [closed], "find_links": ["/srv/none"], "unreachable_indexes": "skip"}, answers=answers
    )
    assert skipped["left_out"] == [closed, "/srv/none"]
    assert skipped["resolved"]["extra_index_urls"] == [] and skipped["resolved"]["find_links"] == []
    assert skipped["source_check"]["left_out"] == [closed, "/srv/none"]
    # The main index is never left out.
    main = make_plan({"index_url": closed, "unreachable_indexes": "skip", "install_mode": "direct"}, answers=answers)
    assert main["problems"][0].startswith("the node cannot reach")
    assert sp.unreachable(["a", "b"], [{"item": "a", "status": 500}, {"item": "b", "status": 301}]) == ["a"]


STACK_FREEZE = "torch==2.13.0+cpu\ntransformers==5.24.0\n"
RESOLVED = resolve("native", overrides={"accelerate": None, "datasets": None, "evaluate": None, "tokenizers": None})
VERSIONS = {"torch": "2.13.0+cpu", "transformers": "5.24.0", "ipex": None, "oneccl": None, "python": "3.11.4"}


def earlier_manifest(freeze=STACK_FREEZE, versions=None):
    versions = VERSIONS if versions is None else versions
    return sp.build_manifest("native", sp.requirements_hash(RESOLVED), freeze, versions, "3.11.4")


def test_install_state():
    import json

    text = json.dumps(earlier_manifest())
    same = sp.install_state("native", RESOLVED, text, STACK_FREEZE, False)
    assert same == {"install_needed": False, "packages_lost": [], "import_needed": False, "earlier": json.loads(text)}
    assert sp.install_state("native", RESOLVED, text, STACK_FREEZE, True)["import_needed"]
    assert sp.install_state("native", RESOLVED, None, None, False)["install_needed"]
    assert sp.install_state("native", RESOLVED, "not json", STACK_FREEZE, False)["install_needed"]
    assert sp.install_state("other", RESOLVED, text, STACK_FREEZE, False)["install_needed"]
    lost = sp.install_state("native", RESOLVED, text, "torch==2.13.0+cpu\n", False)
    assert lost["install_needed"] and lost["packages_lost"] == ["transformers: 5.24.0, now absent"]
    # A package added by hand: nothing lost, but the manifest differs, so the stack is imported again.
    added = sp.install_state("native", RESOLVED, text, STACK_FREEZE + "rich==13.0\n", False)
    assert not added["install_needed"] and added["import_needed"]


def test_installed_stack():
    report = {"python": {"version": "3.11.4"}, "versions": dict(VERSIONS), "import_errors": {}}
    done = sp.installed_stack("native", RESOLVED, STACK_FREEZE, report, {}, "/opt/venv")
    assert done["manifest"] == earlier_manifest() and done["verify_problems"] == []
    facts = done["facts"]
    assert facts["manifest_hash"] == done["manifest"]["manifest_sha256"] and facts["backend"] == "gloo"
    assert facts["transformers_dialect"]["cpu_flag"] == "--use_cpu" and not facts["has_ipex"]
    assert sp.installed_stack("native", RESOLVED, STACK_FREEZE, None, earlier_manifest(), "/opt/venv")["manifest"] == (
        earlier_manifest()
    )
    broken = {"python": {"version": "3.11.4"}, "versions": {**VERSIONS, "torch": None}, "import_errors": {"torch": "E"}}
    problems = sp.installed_stack("native", RESOLVED, STACK_FREEZE, broken, {}, "/opt/venv")["verify_problems"]
    assert problems[0].startswith("/opt/venv/bin/python cannot import: torch (E)")
    assert (
        problems[1]
        == "installed versions differ from the pins: torch None (pinned 2.13.0+cpu). Remove /opt/venv and run the role "
        "again"
    )
    ipex = resolve("ipex-2.8")
    versions = {**VERSIONS, "torch": "2.7.0", "ipex": "2.8.0", "transformers": "4.57.1"}
    report = {"python": {"version": "3.11.4"}, "versions": versions, "import_errors": {}}
    problems = sp.installed_stack("ipex-2.8", ipex, STACK_FREEZE, report, {}, "/v")["verify_problems"]
    assert any(p.startswith("IPEX 2.8.0 and torch 2.7.0 differ in major.minor") for p in problems)
    assert sp.pin_mismatches(RESOLVED, {"torch": "2.13.0+cpu", "transformers": "5.24.0"}) == []
