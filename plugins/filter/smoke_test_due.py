# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.smoke_test_due: whether the smoke test runs.

record_text | smoke_test_due(fingerprint, now, max_age, force) -> {run, reason, age}.

A thin wrapper over module_utils.smoke_record; its documentation is the sidecar smoke_test_due.yml beside this file.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils import smoke_record
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    def filters(self):
        return {"smoke_test_due": filter_function("smoke_test_due", smoke_record.smoke_test_due)}
