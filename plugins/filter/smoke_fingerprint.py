# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.smoke_fingerprint: {host: facts} | smoke_fingerprint(launch, run_dir, run_id) -> a sha256 digest.

A thin wrapper over module_utils.smoke_record; its documentation is the sidecar smoke_fingerprint.yml beside this file.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils import smoke_record
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"smoke_fingerprint": filter_function("smoke_fingerprint", smoke_record.smoke_fingerprint)}
