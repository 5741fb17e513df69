# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input to amx.cluster.hf_examples. Most would run a command of the user's choosing: a repository URL or a ref
that git reads as an option (``--upload-pack=CMD``), or a transport that runs a command (``ext::``). Each is refused
in the role's preflight, before any command, with the host, the variable and the fix; the command never runs (the
file it would create is absent), in a normal run and under ``--check`` alike. The last is a stack that cannot run
the example's script (a profile without ``evaluate`` for run_qa.py).

As in test_node_roles.py, every case is a host of its own in ONE ansible-playbook run of playbooks/role.yml (one
run per mode), with a folder of its own for every path variable.
"""

from __future__ import annotations

import pathlib

import pytest
from bad_input_helpers import TEST_PLAYBOOKS, Case, assert_refused, cluster, run_in_folder
from test_node_roles import host_vars

# {marker} becomes the absolute path of a file in the case's folder: the command the input would run creates it.
CASES = [
    Case(
        "hf-url-upload-pack",
        "hf_examples",
        {"hf_examples_repo_url": "--upload-pack=touch {marker}"},
        ("hf-url-upload-pack: hf_examples_repo_url '--upload-pack=touch", "starts with '-'", "https://"),
    ),
    Case(
        "hf-url-ext-transport",
        "hf_examples",
        {"hf_examples_repo_url": "ext::sh -c touch% {marker}"},
        ("hf-url-ext-transport: hf_examples_repo_url 'ext::sh", "set hf_examples_repo_url to an https://"),
    ),
    Case(
        "hf-url-transport-no-space",
        "hf_examples",
        {"hf_examples_repo_url": "ext::/usr/bin/touch%{marker}"},
        ("hf-url-transport-no-space:", "names the git transport 'ext::'", "a user@host:path address"),
    ),
    Case(
        "hf-url-http",
        "hf_examples",
        {"hf_examples_repo_url": "http://example.invalid/transformers.git"},
        ("hf-url-http: hf_examples_repo_url 'http://example.invalid/transformers.git' has the scheme 'http'",),
    ),
    Case(
        "hf-ref-option",
        "hf_examples",
        {"hf_examples_version": "--upload-pack=touch {marker}"},
        ("hf-ref-option: hf_examples_version '--upload-pack=touch", "starts with '-'", "set hf_examples_version"),
    ),
    Case(
        "hf-profile-lacks-evaluate",
        "hf_examples",
        {
            # What torch_stack publishes for a profile whose overrides drop evaluate.
            "torch_stack_profile": "native",
            "torch_stack_venv_python": "/usr/bin/python3",
            "torch_stack_packages": {
                "torch": "2.13.0+cpu",
                "transformers": "5.24.0",
                "datasets": "5.2.0",
                "numpy": "2.4.6",
            },
        },
        (
            "hf-profile-lacks-evaluate: run_qa.py (question-answering) imports evaluate, which profile 'native'",
            "torch_stack_extra_packages: ['evaluate==VERSION']",
        ),
    ),
]


def marker(folder: pathlib.Path, case: Case) -> pathlib.Path:
    return folder / "cases" / case.id / "command-ran"


def batch_run(folder: pathlib.Path, source_repo: pathlib.Path, check: bool):
    hosts = {}
    for case in CASES:
        (folder / "cases" / case.id).mkdir(parents=True)
        values = host_vars(case, folder / "cases" / case.id, source_repo)
        for name, value in case.bad.items():
            values[name] = value.replace("{marker}", str(marker(folder, case))) if isinstance(value, str) else value
        hosts[case.id] = values
    first = next(iter(hosts))
    inventory = cluster({first: hosts.pop(first)}, hosts)
    run, touched = run_in_folder(folder, TEST_PLAYBOOKS / "role.yml", inventory, check=check)
    return folder, run, touched


@pytest.fixture(scope="module", params=[False, True], ids=["run", "check"])
def batch(request, tmp_path_factory, source_repo):
    folder = tmp_path_factory.mktemp("hf-examples-check" if request.param else "hf-examples-run")
    return batch_run(folder, source_repo, check=request.param)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_examples_input_is_refused_before_anything_runs(batch, case):
    folder, run, touched = batch
    mine = [path for path in touched if path.startswith(f"cases/{case.id}/") or not path.startswith("cases/")]
    expect = tuple(piece.replace("{marker}", str(marker(folder, case))) for piece in case.expect)
    assert not marker(folder, case).exists(), f"the command in the input ran:\n{run.explain()}"
    assert_refused(run, case.id, case.role, expect, mine)
