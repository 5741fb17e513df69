# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad input to the node roles: each is refused in the preflight of its role, with a message that names the host,
what is wrong and what to change, and nothing changes.

All these cases run in ONE ansible-playbook run of playbooks/role.yml: each case is a host of its own in the
inventory (named after the case, connection local: this machine), carrying its bad value and the role to run in its
host variables, and a folder of its own for every path variable. These roles check each host on its own (the
hostfile's master is the host itself here), so the hosts do not interfere: every host must stop in the preflight of
its role, and the recap must count no change for any of them. test_playbooks.py runs the same kind of input through
playbooks/provision.yml.
"""

from __future__ import annotations

import pathlib

import pytest
from bad_input_helpers import (
    LOCAL,
    TEST_PLAYBOOKS,
    Case,
    assert_refused,
    cluster,
    node_paths,
    run_in_folder,
)
from net import free_port

CLOSED_PORT = free_port()
HAS_AMX = "amx_tile" in pathlib.Path("/proc/cpuinfo").read_text()
NATIVE_WITHOUT_EXTRAS = {"accelerate": None, "datasets": None, "evaluate": None, "tokenizers": None}

CASES = [
    Case(
        "amx-required-not-a-bool",
        "amx_check",
        {"amx_check_required": "maybe"},
        ("amx_check_required", "'maybe' is not a valid boolean", "Valid booleans include"),
    ),
    Case(
        "min-cores-not-a-number",
        "amx_check",
        {"amx_check_min_physical_cores": "many"},
        ("amx_check_min_physical_cores", "many", "unable to convert to int"),
    ),
    Case(
        "min-cores-negative",
        "amx_check",
        {"amx_check_min_physical_cores": -1},
        ("amx_check_min_physical_cores is -1 for min-cores-negative", "set it to 0 (no minimum)"),
    ),
    Case(
        "node-smaller-than-needed",
        "amx_check",
        {"amx_check_min_physical_cores": 4096},
        (
            "node-smaller-than-needed has",
            "fewer than amx_check_min_physical_cores (4096)",
            "use a larger instance size",
        ),
    ),
    Case(
        "no-amx-on-this-cpu",
        "amx_check",
        {"amx_check_required": True},
        ("AMX is not usable on no-amx-on-this-cpu", "Sapphire Rapids or later", "set amx_check_required: false"),
    ),
    Case(
        "tcmalloc-unknown-library",
        "tcmalloc",
        {"tcmalloc_library": "libjemalloc"},
        ("tcmalloc_library", "libjemalloc", "libtcmalloc, libtcmalloc_minimal"),
    ),
    Case(
        "unknown-profile",
        "torch_stack",
        {"torch_stack_profile": "ipex-3.0"},
        ("unknown-profile: unknown torch_stack_profile 'ipex-3.0'", "Choose one of", "native, recipe-2022"),
    ),
    Case(
        "python-out-of-range",
        "torch_stack",
        {"torch_stack_profile": "recipe-2022", "torch_stack_overrides": {}},
        (
            "python-out-of-range: profile 'recipe-2022' cannot be installed",
            "needs Python 3.8 to 3.10 but the node has 3.",
            "set torch_stack_base_python to a Python in that range",
        ),
    ),
    Case(
        "base-python-missing",
        "torch_stack",
        {"torch_stack_base_python": "/nonexistent/bin/python3"},
        ("base-python-missing: cannot run torch_stack_base_python '/nonexistent/bin/python3'", "Install Python"),
    ),
    Case(
        "venv-user-missing",
        "torch_stack",
        {"torch_stack_user": "amx-no-such-user"},
        ("venv-user-missing: the user 'amx-no-such-user'", "does not exist", "set torch_stack_user"),
    ),
    Case(
        "venv-group-missing",
        "torch_stack",
        {"torch_stack_group": "amx-no-such-group"},
        ("venv-group-missing: the group 'amx-no-such-group' (torch_stack_group)", "set torch_stack_group"),
    ),
    Case(
        "venv-path-relative",
        "torch_stack",
        {"torch_stack_venv": "venv"},
        ("venv-path-relative: torch_stack_venv is 'venv'", "Set torch_stack_venv to a full path"),
    ),
    Case(
        "ipex-pin-does-not-match-torch",
        "torch_stack",
        {"torch_stack_overrides": {**NATIVE_WITHOUT_EXTRAS, "intel-extension-for-pytorch": "2.8.0"}},
        (
            "ipex-pin-does-not-match-torch: profile 'native' cannot be installed",
            "needs torch 2.8.x but torch is pinned to 2.13.0",
        ),
    ),
    Case(
        "torch-dropped-by-override",
        "torch_stack",
        {"torch_stack_overrides": {**NATIVE_WITHOUT_EXTRAS, "torch": None}},
        (
            "torch-dropped-by-override: profile 'native' cannot be resolved",
            "torch cannot be dropped",
            "Fix torch_stack_overrides",
        ),
    ),
    Case(
        "custom-profile-without-torch",
        "torch_stack",
        {
            "torch_stack_profile": "lean",
            "torch_stack_overrides": {},
            "torch_stack_custom_profiles": {
                "lean": {
                    "description": "transformers alone",
                    "python_min": "3.9",
                    "python_max": "3.13",
                    "index_url": None,
                    "extra_index_urls": [],
                    "find_links": [],
                    "packages": {"transformers": "5.24.0"},
                }
            },
        },
        (
            "custom-profile-without-torch: profile 'lean' cannot be resolved",
            "must pin torch",
            "Fix torch_stack_custom_profiles",
        ),
    ),
    Case(
        "custom-profiles-not-a-dict",
        "torch_stack",
        {"torch_stack_custom_profiles": "fast"},
        ("torch_stack_custom_profiles", "dict"),
    ),
    Case(
        "install-mode-unknown",
        "torch_stack",
        {"torch_stack_install_mode": "offline"},
        ("torch_stack_install_mode", "must be one of: wheelhouse, direct", "offline"),
    ),
    Case(
        "controller-pip-not-python-m-pip",
        "torch_stack",
        {"torch_stack_install_mode": "wheelhouse", "torch_stack_controller_pip": ["pip3"]},
        (
            "controller-pip-not-python-m-pip: torch_stack_controller_pip is ['pip3']: in wheelhouse mode it must be "
            "[PYTHON, -m, pip]",
            "or use torch_stack_install_mode: direct",
        ),
    ),
    Case(
        "index-unreachable",
        "torch_stack",
        {"torch_stack_extra_index_urls": [f"http://127.0.0.1:{CLOSED_PORT}/simple/"]},
        (
            "index-unreachable: the node cannot reach the package index(es) of profile 'native'",
            f"http://127.0.0.1:{CLOSED_PORT}/simple/",
            "torch_stack_unreachable_indexes: skip",
        ),
    ),
    Case(
        "hf-repo-unreadable",
        "hf_examples",
        {"hf_examples_repo_url": "/nonexistent/transformers.git"},
        (
            "hf-repo-unreadable: cannot read the repository /nonexistent/transformers.git (hf_examples_repo_url)",
            "Fix the URL",
        ),
    ),
    Case(
        "hf-tag-missing",
        "hf_examples",
        {"hf_examples_transformers_version": "9.9.9"},
        (
            "hf-tag-missing:",
            "has no tag or branch v9.9.9 (hf_examples_version",
            "set hf_examples_transformers_version to a released transformers version",
        ),
    ),
    Case(
        "hf-no-transformers-version",
        "hf_examples",
        {"hf_examples_transformers_version": None},
        ("hf-no-transformers-version: no transformers version", "set hf_examples_transformers_version"),
    ),
    Case(
        "hf-install-mode-unknown",
        "hf_examples",
        {"hf_examples_install_mode": "offline"},
        ("hf-install-mode-unknown: hf_examples_install_mode must be wheelhouse or direct",),
    ),
    Case(
        "hf-depth-negative",
        "hf_examples",
        {"hf_examples_depth": -1},
        ("hf-depth-negative: hf_examples_depth is -1", "use 1 (shallow clone, the default) or 0"),
    ),
    Case(
        "hf-checkout-path-relative",
        "hf_examples",
        {"hf_examples_dir": "transformers"},
        ("hf-checkout-path-relative: hf_examples_dir is 'transformers', not an absolute path", "set it to a full path"),
    ),
    Case(
        "venv-a-system-folder",
        "torch_stack",
        {"torch_stack_venv": "/opt"},
        ("venv-a-system-folder: torch_stack_venv is '/opt', a system folder", "set it to a folder of its own"),
    ),
    Case(
        "venv-a-link-to-a-system-folder",
        "torch_stack",
        {"torch_stack_venv": "@/venv-link"},
        ("torch_stack_venv is '", "venv-link', a link to '/usr', a system folder", "Set torch_stack_venv to a folder"),
    ),
    Case(
        "node-wheelhouse-a-system-folder",
        "torch_stack",
        {"torch_stack_node_wheelhouse": "/var/tmp/"},
        ("node-wheelhouse-a-system-folder: torch_stack_node_wheelhouse is '/var/tmp/', a system folder",),
    ),
    Case(
        "controller-cache-a-system-folder",
        "torch_stack",
        {"torch_stack_controller_cache": "/usr"},
        ("controller-cache-a-system-folder: torch_stack_controller_cache is '/usr', a system folder",),
    ),
    Case(
        "hf-checkout-a-system-folder",
        "hf_examples",
        {"hf_examples_dir": "/usr/local"},
        ("hf-checkout-a-system-folder: hf_examples_dir is '/usr/local', a system folder", "a folder of its own"),
    ),
    Case(
        "hf-node-wheelhouse-a-system-folder",
        "hf_examples",
        {"hf_examples_node_wheelhouse": "/var/cache"},
        ("hf-node-wheelhouse-a-system-folder: hf_examples_node_wheelhouse is '/var/cache', a system folder",),
    ),
    Case(
        "hostfile-slots-negative",
        "mpi_hostfile",
        {"mpi_hostfile_slots": -2},
        ("hostfile-slots-negative: mpi_hostfile_slots is -2", "use 0 (no slots) or a positive count"),
    ),
    Case(
        "hostfile-slots-not-a-number",
        "mpi_hostfile",
        {"mpi_hostfile_slots": "four"},
        ("mpi_hostfile_slots", "four", "unable to convert to int"),
    ),
    Case(
        "hostfile-path-relative",
        "mpi_hostfile",
        {"mpi_hostfile_path": "hosts"},
        ("hostfile-path-relative: mpi_hostfile_path is 'hosts', not an absolute path", "leave it empty for ~/hosts"),
    ),
    Case(
        "hostfile-duplicate-worker",
        "mpi_hostfile",
        {"mpi_hostfile_workers": ["node-a", "node-b", "node-a"]},
        (
            "hostfile-duplicate-worker: mpi_hostfile_workers lists node-a more than once",
            "would put the same machine twice in the hostfile",
            "list each machine once",
        ),
    ),
    Case(
        "hostfile-master-among-workers",
        "mpi_hostfile",
        {"mpi_hostfile_workers": ["node-a", "hostfile-master-among-workers"]},
        (
            "hostfile-master-among-workers: the master hostfile-master-among-workers is also in mpi_hostfile_workers",
            "keep it in master only",
        ),
    ),
    Case(
        "hostfile-unknown-worker",
        "mpi_hostfile",
        {"mpi_hostfile_workers": ["node-a", "nodee-b"]},
        ("hostfile-unknown-worker: mpi_hostfile_workers names nodee-b, not hosts of the inventory",),
    ),
]

# Symbolic links a case needs in its folder before the run: case id -> (name, target).
LINKS = {"venv-a-link-to-a-system-folder": ("venv-link", "/usr")}
IN_THIS_RUN = [case for case in CASES if not (case.id == "no-amx-on-this-cpu" and HAS_AMX)]


def host_vars(case: Case, folder: pathlib.Path, source_repo: pathlib.Path) -> dict:
    # Only mpi_hostfile reads gathered facts (its user defaults to the connecting one): 30 hosts gathering facts on
    # 2 cores would take half a minute, and the other roles gather the few facts they read themselves.
    values = {**LOCAL, **node_paths(folder), "bad_input_role": case.role}
    values["bad_input_gather_facts"] = case.role == "mpi_hostfile"
    if case.role == "hf_examples":
        values.update(
            hf_examples_enabled=True,
            hf_examples_repo_url=str(source_repo),
            hf_examples_transformers_version="1.0.0",
            hf_examples_venv_python="/usr/bin/python3",
        )
    if case.role == "mpi_hostfile":
        values.update(mpi_hostfile_master=case.id, mpi_hostfile_workers=[])
    # "@" stands for the case's folder (a symbolic link made there, see LINKS).
    values.update(
        {k: str(folder) + v[1:] if isinstance(v, str) and v.startswith("@") else v for k, v in case.bad.items()}
    )
    return values


@pytest.fixture(scope="module")
def batch(tmp_path_factory, source_repo):
    """role.yml once, every case a host of the inventory; returns the run and the paths it touched."""
    folder = tmp_path_factory.mktemp("node-roles")
    hosts = {}
    for case in IN_THIS_RUN:
        (folder / "cases" / case.id).mkdir(parents=True)
        if case.id in LINKS:
            (folder / "cases" / case.id / LINKS[case.id][0]).symlink_to(LINKS[case.id][1])
        hosts[case.id] = host_vars(case, folder / "cases" / case.id, source_repo)
    first = next(iter(hosts))
    inventory = cluster({first: hosts.pop(first)}, hosts)
    # Machines of the inventory outside the play, for the hostfile's worker lists.
    inventory["spare"] = {"hosts": {"node-a": LOCAL, "node-b": LOCAL}}
    run, touched = run_in_folder(folder, TEST_PLAYBOOKS / "role.yml", inventory)
    return run, touched


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_to_a_node_role_is_refused_before_any_change(batch, case):
    if case.id == "no-amx-on-this-cpu" and HAS_AMX:
        pytest.skip("this CPU has AMX, so amx_check_required: true passes here")
    run, touched = batch
    # Paths of this case, and any path outside the case folders (the run's own files, the playbooks' folder).
    mine = [path for path in touched if path.startswith(f"cases/{case.id}/") or not path.startswith("cases/")]
    assert_refused(run, case.id, case.role, case.expect, mine)
