# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the smoke test's record: thin wrappers over module_utils.smoke_record (docs: smoke_fingerprint.yml,
smoke_record.yml, smoke_test_due.yml)."""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils import smoke_record as sr
from ansible_collections.amx.cluster.plugins.plugin_utils.filters import filter_function


class FilterModule:
    """The cluster fingerprint, the record a passing smoke test leaves, and whether the smoke test runs."""

    def filters(self):
        return {
            # {host: facts} | smoke_fingerprint(launch, run_dir, run_id) -> sha256 hex digest
            "smoke_fingerprint": filter_function("smoke_fingerprint", sr.smoke_fingerprint),
            # fingerprint | smoke_record(now, figures) -> the record to write
            "smoke_record": filter_function("smoke_record", sr.smoke_record),
            # record_text | smoke_test_due(fingerprint, now, max_age, force) -> {run, reason, age}
            "smoke_test_due": filter_function("smoke_test_due", sr.smoke_test_due),
        }
