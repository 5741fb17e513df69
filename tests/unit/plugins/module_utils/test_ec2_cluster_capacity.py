# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the vCPU quota rules of an EC2 cluster (ec2_cluster_capacity)."""

from __future__ import annotations

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_capacity import capacity_error, quota_code


@pytest.mark.parametrize(
    ("instance_type", "spot", "code"),
    [
        ("r7iz.metal-16xl", False, "L-1216C47A"),
        ("m7i.2xlarge", False, "L-1216C47A"),
        ("c7i.48xlarge", True, "L-34B43A08"),
        ("i4i.large", False, "L-1216C47A"),
        ("inf2.xlarge", False, "L-1945791B"),
        ("g5.xlarge", False, "L-DB2E81BA"),
        ("p5.48xlarge", True, "L-7212CCBC"),
        ("x2iedn.xlarge", False, "L-7295265B"),
    ],
)
def test_quota_code_by_instance_class(instance_type, spot, code):
    assert quota_code(instance_type, spot)[0] == code


@pytest.mark.parametrize("instance_type", ["trn1.2xlarge", "mac1.metal", "dl1.24xlarge", "u-6tb1.metal", "", "m7i"])
def test_quota_code_unknown(instance_type):
    assert quota_code(instance_type) is None


def test_quota_name_says_market():
    assert quota_code("m7i.large")[1] == "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"
    assert quota_code("m7i.large", spot=True)[1].startswith("All Spot Instance Requests for Standard")


def test_fits():
    assert capacity_error("demo", "eu-west-1", "r7iz.metal-16xl", 16, 64, 1024, 1024.0, "q") is None
    assert capacity_error("demo", "eu-west-1", "r7iz.metal-16xl", 100, 64, 0, None) is None


def test_over_the_cap():
    message = capacity_error("demo", "eu-west-1", "r7iz.metal-16xl", 17, 64, 1024, 5000.0, "q")
    assert "need 1088 vCPUs, more than ec2_cluster_max_vcpus (1024)" in message
    assert "at most 15 with this type" in message


def test_over_the_quota():
    message = capacity_error("demo", "eu-west-1", "m7i.2xlarge", 5, 8, 0, 32.0, "Running On-Demand Standard")
    assert "need 40 vCPUs, more than the account's quota in eu-west-1 for Running On-Demand Standard (32 vCPUs)" in (
        message
    )
    assert "at most 3 with this type" in message


def test_quota_smaller_than_one_node():
    message = capacity_error("demo", "eu-west-1", "r7iz.metal-16xl", 1, 64, 0, 32.0, "q")
    assert "at most 0 with this type" in message


def test_negative_cap_is_refused():
    assert "ec2_cluster_max_vcpus is -1" in capacity_error("demo", "r", "m7i.large", 1, 2, -1)


def test_impossible_counts_are_programming_errors():
    with pytest.raises(ValueError):
        capacity_error("demo", "r", "m7i.large", 0, 2, 0)
    with pytest.raises(ValueError):
        capacity_error("demo", "r", "m7i.large", 1, 0, 0)
