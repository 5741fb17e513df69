# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a repository URL and a ref may look like before they reach git (module_utils/examples.py)."""

from __future__ import annotations

import pytest

from ansible_collections.amx.cluster.plugins.module_utils import examples as ex

GOOD_URLS = [
    "https://github.com/huggingface/transformers.git",
    "https://mirror.example.com:8443/git/transformers",
    "https://user:token@git.example.com/transformers.git",
    "ssh://git@github.com/huggingface/transformers.git",
    "ssh://git@[2001:db8::1]:2222/srv/transformers.git",
    "git://git.example.com/transformers.git",
    "file:///srv/transformers",
    "git@github.com:huggingface/transformers.git",
    "mirror:transformers.git",
    "/srv/git/transformers.git",
]

BAD_URLS = [
    ("--upload-pack=touch /tmp/x", "starts with '-'"),
    ("-u touch /tmp/x", "starts with '-'"),
    ("--upload-pack=/tmp/evil", "starts with '-'"),
    ("ext::sh -c touch% /tmp/x", "a space or a control character"),
    ("ext::/usr/bin/touch%/tmp/x", "names the git transport 'ext::'"),
    ("fd::7", "names the git transport 'fd::'"),
    ("http://github.com/huggingface/transformers.git", "has the scheme 'http' (use https://)"),
    ("ftp://example.com/transformers.git", "has the scheme 'ftp'"),
    ("https://github.com/x.git\n[core]", "a space or a control character"),
    ("https://-oProxyCommand=x/y", "not a URL form the role accepts"),
    ("git@-oProxyCommand=touch:x", "not a URL form the role accepts"),
    ("transformers", "not a URL form the role accepts"),
    ("", "must be a non-empty string"),
    (None, "must be a non-empty string"),
    (["https://github.com/x.git"], "must be a non-empty string"),
]


@pytest.mark.parametrize("url", GOOD_URLS)
def test_the_accepted_url_forms_pass(url):
    assert ex.repo_url_problem(url) == ""


@pytest.mark.parametrize(("url", "reason"), BAD_URLS, ids=[str(case[0])[:30] for case in BAD_URLS])
def test_a_url_that_git_would_run_or_misread_is_refused_with_the_fix(url, reason):
    problem = ex.repo_url_problem(url)
    assert reason in problem
    assert "set hf_examples_repo_url to an https://, ssh://, git:// or file:// URL" in problem


def test_a_control_character_is_shown_escaped_not_raw():
    problem = ex.repo_url_problem("https://x.example/a\nb")
    assert "\n" not in problem and "\\n" in problem


@pytest.mark.parametrize("ref", ["v4.24.0", "main", "release/4.x", "3f2e1d0", "v5.24.0-rc1"])
def test_plain_refs_pass(ref):
    assert ex.ref_problem(ref) == ""


@pytest.mark.parametrize(
    "ref",
    ["--upload-pack=touch /tmp/x", "-x", "v1 0", "a..b", "v1^", "x~1", "a:b", "@{u}", "x.lock", "x/", ".hidden", "", 4],
)
def test_a_ref_git_would_misread_is_refused(ref):
    problem = ex.ref_problem(ref)
    assert problem and "set hf_examples_version to a tag such as v4.24.0" in problem


def test_input_problems_lists_both():
    assert ex.input_problems("https://github.com/huggingface/transformers.git", "v4.24.0") == []
    problems = ex.input_problems("--upload-pack=x", "-y")
    assert len(problems) == 2 and "hf_examples_repo_url" in problems[0] and "hf_examples_version" in problems[1]


# ---------------------------------------------------------------------------------------------- the requirements

NODE_38 = {
    "implementation_name": "cpython",
    "implementation_version": "3.8.10",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "platform_release": "5.15.0-1051-aws",
    "platform_system": "Linux",
    "platform_version": "#56~20.04.1-Ubuntu SMP",
    "python_full_version": "3.8.10",
    "python_version": "3.8",
    "sys_platform": "linux",
}
INDEXES = {"index_url": None, "extra_index_urls": ["https://download.pytorch.org/whl/cpu"], "find_links": []}
TAGS = ["manylinux_2_31_x86_64", "linux_x86_64"]


def test_the_marker_values_are_checked():
    assert ex.marker_environment({**NODE_38, "extra": "x"}) == NODE_38
    with pytest.raises(ex.ExamplesError, match="lack python_version"):
        ex.marker_environment({k: v for k, v in NODE_38.items() if k != "python_version"})
    with pytest.raises(ex.ExamplesError, match="are not strings"):
        ex.marker_environment({**NODE_38, "python_version": 3.8})
    with pytest.raises(ex.ExamplesError, match="not CPython or PyPy"):
        ex.marker_environment({**NODE_38, "implementation_name": "ironpython"})
    with pytest.raises(ex.ExamplesError, match="must be a mapping"):
        ex.marker_environment(["3.8"])


def test_constraints_pin_what_the_venv_holds_and_leave_out_what_has_no_version():
    freeze = "Torch==1.13.0+cpu\n# comment\n-e git+https://x/y#egg=y\nmine @ file:///tmp/mine.whl\nnumpy==1.24.4\n"
    assert ex.constraints_text(freeze) == "numpy==1.24.4\ntorch==1.13.0+cpu\n"
    assert ex.constraints_text("") == ""


def test_the_profiles_lock_pins_what_the_venv_does_not_hold_yet():
    freeze = "torch==1.13.0+cpu\nnumpy==1.23.5\n"
    lock = ["accelerate==0.15.0", "numpy==1.24.0", "torch==1.13.0"]
    # What the venv holds stays as it is; accelerate, new, takes the lock's release.
    assert ex.constraints_text(freeze, lock) == "accelerate==0.15.0\nnumpy==1.23.5\ntorch==1.13.0+cpu\n"
    spec = ex.download_spec("accelerate\n", freeze, NODE_38, INDEXES, TAGS, lock)
    assert spec["constraints"] == ex.constraints_text(freeze, lock)
    assert spec["key"] != ex.download_spec("accelerate\n", freeze, NODE_38, INDEXES, TAGS)["key"]
    with pytest.raises(ex.ExamplesError, match="list of name==version lines"):
        ex.constraints_text(freeze, "accelerate==0.15.0")


@pytest.mark.parametrize(
    ("published", "given", "expected"),
    [
        (None, (None, None, None), {"index_url": None, "extra_index_urls": [], "find_links": []}),
        (INDEXES, (None, None, None), INDEXES),
        # torch_stack left an unreachable extra index out: what it published is what the requirements use.
        ({**INDEXES, "extra_index_urls": []}, (None, None, None), {**INDEXES, "extra_index_urls": []}),
        (
            INDEXES,
            ("", ["file:///srv/wheels"], ["/srv/links"]),
            {"index_url": None, "extra_index_urls": ["file:///srv/wheels"], "find_links": ["/srv/links"]},
        ),
        (
            INDEXES,
            ("http://127.0.0.1:3141/simple/", None, None),
            {**INDEXES, "index_url": "http://127.0.0.1:3141/simple/"},
        ),
    ],
)
def test_the_indexes_are_the_users_else_torch_stacks(published, given, expected):
    assert ex.effective_indexes(published, *given) == expected


@pytest.mark.parametrize("bad", [[1], "https://a", [""]])
def test_index_lists_must_be_lists_of_urls(bad):
    with pytest.raises(ex.ExamplesError, match="must be a list of URLs"):
        ex.effective_indexes(None, None, bad, None)


def test_nodes_that_differ_only_in_their_kernel_share_a_download():
    one = ex.download_spec("accelerate\n", "torch==1.13.0+cpu\n", NODE_38, INDEXES, TAGS)
    other = ex.download_spec(
        "accelerate\n", "torch==1.13.0+cpu\n", {**NODE_38, "platform_release": "5.15.0-9"}, INDEXES, TAGS
    )
    assert one["key"] == other["key"] and len(one["key"]) == 16
    assert one["python"] == "3.8" and one["implementation"] == "cp"
    assert one["constraints"] == "torch==1.13.0+cpu\n"
    for changed in (
        ex.download_spec(
            "accelerate\n", "torch==1.13.0+cpu\n", {**NODE_38, "python_full_version": "3.8.11"}, INDEXES, TAGS
        ),
        ex.download_spec("accelerate\n", "torch==2.8.0+cpu\n", NODE_38, INDEXES, TAGS),
        ex.download_spec("accelerate\n", "torch==1.13.0+cpu\n", NODE_38, {**INDEXES, "extra_index_urls": []}, TAGS),
        ex.download_spec("accelerate\nevaluate\n", "torch==1.13.0+cpu\n", NODE_38, INDEXES, TAGS),
        ex.download_spec("accelerate\n", "torch==1.13.0+cpu\n", NODE_38, INDEXES, TAGS[:1]),
    ):
        assert changed["key"] != one["key"]


def test_the_download_takes_the_nodes_python_platform_and_the_profiles_indexes():
    spec = ex.download_spec("accelerate\n", "torch==1.13.0+cpu\n", NODE_38, INDEXES, TAGS)
    args = ex.download_args(spec, "/c/k.partial", ["--retries", "2"])
    assert args == [
        "download", "--disable-pip-version-check", "--dest", "/c/k.partial", "--only-binary=:all:",
        "--implementation", "cp", "--python-version", "3.8",
        "--platform", "manylinux_2_31_x86_64", "--platform", "linux_x86_64",
        "--extra-index-url", "https://download.pytorch.org/whl/cpu",
        "--retries", "2",
        "-c", "/c/k.partial/constraints.txt", "-r", "/c/k.partial/requirements.in",
    ]  # fmt: skip


def test_the_controller_command_puts_the_runner_in_place_of_dash_m_pip():
    assert ex.controller_command(["/usr/bin/python3", "-m", "pip", "--isolated"], "/r.py", "/m.json") == [
        "/usr/bin/python3", "/r.py", "/m.json", "--isolated"]  # fmt: skip
    assert ex.controller_pip_problem(["/usr/bin/python3", "-m", "pip"]) == ""
    for bad in (["/usr/bin/pip3"], ["uv", "pip"], "python -m pip", [], None):
        assert "must be [PYTHON, -m, pip]" in ex.controller_pip_problem(bad)
        with pytest.raises(ex.ExamplesError):
            ex.controller_command(bad, "/r.py", "/m.json")


def test_the_controller_pip_problem_names_the_variable_and_its_roles_install_mode():
    problem = ex.controller_pip_problem(["pip3"], "torch_stack_controller_pip")
    assert problem.startswith("torch_stack_controller_pip is ['pip3']: in wheelhouse mode it must be [PYTHON, -m, pip]")
    assert problem.endswith("or use torch_stack_install_mode: direct")
    assert ex.controller_pip_problem(["pip3"]).endswith("or use hf_examples_install_mode: direct")


# ---------------------------------------------------------------------------------------------- the script's imports


def test_a_stack_without_a_module_of_the_script_is_named_with_the_fix():
    packages = {"torch": "2.13.0+cpu", "transformers": "5.24.0", "Datasets": "5.2.0", "numpy": "2.4.6"}
    problems = ex.script_problems("question-answering", packages, "native")
    assert problems == [
        "run_qa.py (question-answering) imports evaluate, which profile 'native' (torch_stack_profile) does not "
        "install: add it to the profile with torch_stack_extra_packages: ['evaluate==VERSION'] (or stop dropping it in "
        "torch_stack_overrides), or choose a profile that carries it (every built-in profile does)"
    ]
    assert ex.script_problems("question-answering", {**packages, "evaluate": "0.4.6"}, "native") == []
    assert len(ex.script_problems("question-answering", {"torch": "1"}, None)) == 4
    assert "which the virtualenv does not install" in ex.script_problems("qa_finetune", {}, None)[0]


def test_an_example_whose_imports_are_unknown_is_not_checked():
    assert ex.script_problems("token-classification", {}, "native") == []


def test_the_input_check_passes_a_good_pair_and_refuses_an_option():
    # From the former hf_examples_input_problems filter's tests.
    assert ex.input_problems("file:///srv/transformers", "v1.0.0") == []
    assert "starts with '-'" in ex.input_problems("--upload-pack=x", "v1.0.0")[0]


def test_a_primary_index_that_is_not_a_string_is_refused():
    # From the former hf_examples_indexes filter's tests.
    with pytest.raises(ex.ExamplesError, match="hf_examples_index_url must be"):
        ex.effective_indexes({}, 3)


# ---------------------------------------------------------------------------------------------- the plan

SETTINGS = {
    "repo_url": "https://github.com/huggingface/transformers.git",
    "version": "v5.24.0",
    "transformers_version": "5.24.0",
    "example": "question-answering",
    "venv_python": "/opt/amx-cluster/venv/bin/python",
    "install_requirements": True,
    "install_mode": "wheelhouse",
    "controller_pip": ["/usr/bin/python3", "-m", "pip"],
    "controller_pip_extra_args": ["--retries", "2"],
    "depth": 1,
    "dir": "/opt/amx-cluster/transformers",
    "node_wheelhouse": "/var/cache/amx-cluster/hf_examples",
    "controller_cache": "/home/me/.cache/amx.cluster/hf_examples",
    "index_url": None,
    "extra_index_urls": None,
    "find_links": None,
}
STACK = {
    "venv_python": "/opt/amx-cluster/venv/bin/python",
    "packages": {"torch": "2.13.0", "transformers": "5.24.0", "datasets": "5.2.0", "evaluate": "0.4.6", "numpy": "2"},
    "profile": "native",
    "indexes": INDEXES,
    "constraints": ["accelerate==0.15.0"],
}
NODE = {"markers": NODE_38, "libc": ["glibc", "2.31"]}


def test_good_settings_plan_the_indexes_and_the_lock_of_torch_stacks_venv():
    assert ex.plan(SETTINGS, STACK) == {
        "problems": [],
        "indexes": INDEXES,
        "index_args": ex.index_args(INDEXES),
        "lock": ["accelerate==0.15.0"],
    }
    # A virtualenv of one's own takes neither the lock nor the script check.
    own = ex.plan({**SETTINGS, "venv_python": "/srv/venv/bin/python"}, {**STACK, "packages": {}})
    assert own["problems"] == [] and own["lock"] == []
    # torch_stack did not run: pip's own indexes.
    assert ex.plan(SETTINGS, {})["indexes"] == {"index_url": None, "extra_index_urls": [], "find_links": []}


def test_every_problem_comes_at_once_with_its_fix():
    bad = {
        **SETTINGS,
        "repo_url": "--upload-pack=x",
        "version": "-y",
        "transformers_version": "None",
        "venv_python": None,
        "install_mode": "offline",
        "depth": -1,
        "dir": "transformers",
        "index_url": None,
    }
    problems = ex.plan(bad, {**STACK, "venv_python": None, "packages": {"torch": "2"}})["problems"]
    assert [p.split(" ", maxsplit=1)[0] for p in problems] == [
        "hf_examples_repo_url",
        "hf_examples_version",
        "no",  # transformers version
        "no",  # virtualenv
        "run_qa.py",  # transformers, datasets, evaluate, numpy
        "run_qa.py",
        "run_qa.py",
        "run_qa.py",
        "hf_examples_install_mode",
        "hf_examples_depth",
        "hf_examples_dir",
    ]
    assert "no transformers version" in problems[2] and "set hf_examples_transformers_version" in problems[2]
    assert problems[-2].startswith("hf_examples_depth is -1: use 1 (shallow clone, the default) or 0")
    assert problems[-1].startswith("hf_examples_dir is 'transformers', not an absolute path")


def test_the_wheelhouse_settings_are_checked_in_wheelhouse_mode_only():
    wheelhouse = {**SETTINGS, "controller_pip": ["pip3"], "node_wheelhouse": "wheels", "controller_cache": None}
    problems = ex.plan(wheelhouse, STACK)["problems"]
    assert problems[0].startswith("hf_examples_controller_pip is ['pip3']: in wheelhouse mode it must be")
    assert [p.split(" ")[0] for p in problems[1:]] == ["hf_examples_node_wheelhouse", "hf_examples_controller_cache"]
    assert ex.plan({**wheelhouse, "install_mode": "direct"}, STACK)["problems"] == []
    assert ex.plan({**wheelhouse, "install_requirements": False}, STACK)["problems"] == []


def test_a_bad_index_setting_is_a_problem_not_an_error():
    problems = ex.plan({**SETTINGS, "extra_index_urls": [""]}, STACK)["problems"]
    assert problems == ["hf_examples_extra_index_urls must be a list of URLs or paths, or null"]


def test_the_freeze_gives_the_constraints_and_the_node_the_download():
    freeze = "torch==2.13.0+cpu\n"
    planned = ex.plan(SETTINGS, STACK, freeze=freeze)
    assert planned["constraints"] == "accelerate==0.15.0\ntorch==2.13.0+cpu\n" and "download" not in planned
    download = ex.plan(SETTINGS, STACK, freeze=freeze, requirements="accelerate\n", node=NODE)["download"]
    spec = ex.download_spec("accelerate\n", freeze, NODE_38, INDEXES, download["platforms"], ["accelerate==0.15.0"])
    assert download["key"] == spec["key"] and download["platforms"][0] == "manylinux_2_31_x86_64"
    assert download["dest"] == f"/home/me/.cache/amx.cluster/hf_examples/{spec['key']}"
    assert download["args"] == ex.download_args(spec, download["dest"] + ".partial", ["--retries", "2"])


def test_a_node_the_wheels_cannot_fit_is_a_problem_that_names_this_roles_direct_mode():
    musl = {"markers": NODE_38, "libc": ["", ""]}
    problems = ex.plan(SETTINGS, STACK, freeze="", requirements="x\n", node=musl)["problems"]
    assert problems == [
        "the node has no glibc (or its version is unknown): manylinux wheels do not fit it; use "
        "hf_examples_install_mode: direct"
    ]
    ironpython = {"markers": {**NODE_38, "implementation_name": "ironpython"}, "libc": ["glibc", "2.31"]}
    assert "not CPython or PyPy" in ex.plan(SETTINGS, STACK, "", "x\n", ironpython)["problems"][0]


CHECKOUT = {"home": "/home/me", "stat": {"exists": False}, "writable": None}


@pytest.mark.parametrize(
    ("settings", "checkout", "expect"),
    [
        ({}, {"home": None}, "the user 'me' that should own /opt/amx-cluster/transformers does not exist"),
        ({"dir": "/usr/local"}, {}, "hf_examples_dir is '/usr/local', a system folder. The role creates its folders"),
        ({"node_wheelhouse": "/var/cache"}, {}, "hf_examples_node_wheelhouse is '/var/cache', a system folder"),
        ({"controller_cache": "/usr"}, {}, "hf_examples_controller_cache is '/usr', a system folder"),
        (
            {"dir": "/srv/link"},
            {"stat": {"exists": True, "islnk": True, "lnk_source": "/etc"}},
            "hf_examples_dir is '/srv/link', a link to '/etc', a system folder. Set hf_examples_dir",
        ),
        ({}, {"stat": {"exists": True, "isdir": False}}, "exists but is not a folder"),
        ({}, {"stat": {"exists": True, "isdir": True}, "writable": False}, "is not writable by me"),
    ],
)
def test_the_checkout_user_and_folders_are_checked(settings, checkout, expect):
    planned = ex.plan({**SETTINGS, "user": "me", **settings}, STACK, checkout={**CHECKOUT, **checkout})
    assert len(planned["problems"]) == 1 and expect in planned["problems"][0], planned["problems"]


def test_a_good_checkout_says_whether_the_folder_is_made_and_a_relative_one_is_reported_once():
    assert ex.plan({**SETTINGS, "user": "me"}, STACK, checkout=CHECKOUT)["dir_absent"]
    there = {**CHECKOUT, "stat": {"exists": True, "isdir": True}, "writable": True}
    assert ex.plan({**SETTINGS, "user": "me"}, STACK, checkout=there)["dir_absent"] is False
    problems = ex.plan({**SETTINGS, "dir": "transformers"}, STACK, checkout=CHECKOUT)["problems"]
    assert problems == [
        "hf_examples_dir is 'transformers', not an absolute path: set it to a full path such as "
        "/opt/amx-cluster/transformers."
    ]


def test_the_downloaded_wheels_the_venv_lacks():
    wheels = ["/c/k/torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl", "/c/k/rich-13.0-py3-none-any.whl"]
    planned = ex.plan(SETTINGS, STACK, freeze="torch==2.13.0+cpu\n", downloaded=wheels)
    assert planned["wheels_missing"] == ["/c/k/rich-13.0-py3-none-any.whl"]
    assert ex.plan(SETTINGS, STACK, freeze="", downloaded=["x.tar.gz"])["problems"] == [
        "'x.tar.gz' is not a wheel file name"
    ]
