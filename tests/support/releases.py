# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the collection's releases shipped, frozen here because a release does not change: the tests of tombstones
and of `version_added` compare the plugins of today with it."""

import pathlib

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]

# Every filter name release 0.1.0 (commit 650a8f8) shipped: frozen, since a release does not change.
RELEASE_0_1_0_COMMIT = "650a8f8"
RELEASE_0_1_0_FILTERS = frozenset(
    (
        "admin_cidr_check",
        "files_to_copy",
        "flag_dialect",
        "folder_problems",
        "hf_examples_constraints",
        "hf_examples_controller_command",
        "hf_examples_controller_pip_problem",
        "hf_examples_download_args",
        "hf_examples_download_spec",
        "hf_examples_indexes",
        "hf_examples_input_problems",
        "hf_examples_script_problems",
        "hostfile_problems",
        "launch_command",
        "launch_env",
        "launch_problems",
        "mesh_input_problems",
        "mesh_key_comment",
        "mesh_key_owner",
        "mesh_known_host_conflicts",
        "mpi_launcher",
        "rank_layout",
        "script_args",
        "stack_differences",
        "stack_download_args",
        "stack_index_args",
        "stack_major_minor",
        "stack_manifest",
        "stack_packages_lost",
        "stack_platform_tags",
        "stack_problems",
        "stack_requirements_hash",
        "stack_resolve",
        "stack_transformers_dialect",
        "stack_wheelhouse_key",
        "stack_wheels_missing",
        "worker_aliases",
    )
)


def first_release(plugin_type: str, name: str) -> str:
    """The release a plugin first shipped in: one named in changelogs/changelog.yaml (its modules and plugins, as
    antsibull-changelog recorded them; it did not record filters, hence the frozen list), else the next one,
    galaxy.yml's version."""
    changelog = yaml.safe_load((REPO / "changelogs" / "changelog.yaml").read_text())
    for version, release in sorted(changelog["releases"].items()):
        listed = (
            release.get("modules", []) if plugin_type == "module" else release.get("plugins", {}).get(plugin_type, [])
        )
        if name in {entry["name"] for entry in listed}:
            return version
    if plugin_type == "filter" and name in RELEASE_0_1_0_FILTERS:
        return "0.1.0"
    return str(yaml.safe_load((REPO / "galaxy.yml").read_text())["version"])
