# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/RELIABILITY.md lists every bad-input test, by the short names its tables use (N[id], C[id], T[id], H[id],
E[id] and function names): a case added without its row in the table fails here."""

from __future__ import annotations

import re

import test_cluster
import test_hf_examples
import test_node_roles
import test_train
from bad_input_helpers import REPO

DOC = REPO / "docs" / "RELIABILITY.md"
EC2_TESTS = REPO / "tests" / "integration" / "ec2" / "test_bad_input.py"


def expected_names() -> list:
    names = [f"N[{case.id}]" for case in test_node_roles.CASES]
    names += [f"C[{case.id}]" for case in test_cluster.CASES]
    names += [f"T[{param.id}]" for param in test_train.CASES]
    names += [f"H[{case.id}]" for case in test_hf_examples.CASES]
    ec2 = EC2_TESTS.read_text()
    names += [f"E[{case_id}]" for case_id in re.findall(r'id="([^"]+)"', ec2)]
    names += [name for name in re.findall(r"^def (test_\w+)", ec2, re.MULTILINE) if "fails_before" not in name]
    names += [
        "test_provision_refuses_an_unknown_profile_before_any_change",
        "test_provision_checks_every_role_before_any_role_acts",
        "test_an_empty_cluster_is_refused",
        "test_a_hostfile_master_outside_the_play_is_refused",
        "test_a_key_the_mesh_did_not_make_is_neither_used_nor_deleted",
        "test_check_mode_runs_clean_on_a_fresh_node",
        "test_a_known_hosts_line_the_mesh_did_not_write_is_not_replaced",
    ]
    return names


def test_the_reliability_doc_lists_every_bad_input_test():
    doc = DOC.read_text()
    missing = [name for name in expected_names() if name not in doc]
    # The EC2 file also holds a test of a good input (no cluster name: the cloud part skips); it is no bad input.
    missing = [name for name in missing if name != "test_nothing_happens_without_a_cluster_name"]
    assert missing == [], f"{DOC} has no row for {missing}"
