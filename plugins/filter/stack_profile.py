# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters over stack profiles: thin wrappers around plugins/module_utils/stack_profile.py."""

from __future__ import annotations

from typing import Any, Callable, Dict

from ansible_collections.amx.cluster.plugins.module_utils import stack_profile as sp
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function

_FILTERS = {
    # profiles | stack_resolve(name, overrides, extra_packages, index_url, extra_index_urls, find_links)
    "stack_resolve": sp.resolve_profile,
    # resolved | stack_problems(python_version, allow_yanked, yanked_rules) -> list of messages
    "stack_problems": sp.profile_problems,
    # arch | stack_platform_tags(glibc_version) -> pip --platform tags
    "stack_platform_tags": sp.platform_tags,
    # resolved | stack_requirements_hash
    "stack_requirements_hash": sp.requirements_hash,
    # resolved | stack_wheelhouse_key(python_version, platforms)
    "stack_wheelhouse_key": sp.wheelhouse_key,
    # resolved | stack_download_args(python_version, platforms, dest) -> argv after "pip download"
    "stack_download_args": sp.pip_download_args,
    # resolved | stack_index_args -> --index-url/--extra-index-url/--find-links argv
    "stack_index_args": sp.index_args,
    # "4.24.0" | stack_transformers_dialect -> {backend_flag, cpu_flag, ipex_flag, ...}
    "stack_transformers_dialect": sp.transformers_dialect,
    # profile_name | stack_manifest(requirements_sha256, freeze_text, versions, python_version)
    "stack_manifest": sp.build_manifest,
    # {host: {package: version}} | stack_differences -> one line per package that differs between the hosts
    "stack_differences": sp.stack_differences,
    # manifest.packages | stack_packages_lost(freeze_text) -> recorded packages now absent or at another version
    "stack_packages_lost": sp.packages_lost,
    # wheel_files | stack_wheels_missing(freeze_text) -> wheels not installed at that version
    "stack_wheels_missing": sp.wheels_missing,
    # "2.8.0" | stack_major_minor -> "2.8"
    "stack_major_minor": sp.major_minor,
}


class FilterModule:
    """Stack profile filters."""

    def filters(self) -> Dict[str, Callable[..., Any]]:
        return {name: filter_function(name, func) for name, func in _FILTERS.items()}
