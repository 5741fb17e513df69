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


@pytest.mark.parametrize(("url", "reason"), BAD_URLS, ids=[str(u)[:30] for u, _ in BAD_URLS])
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
