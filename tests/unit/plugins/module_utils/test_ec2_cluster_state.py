# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the rules for an EC2 cluster's controller files (ec2_cluster_state)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_state import (
    MANIFEST,
    StateError,
    check_name,
    dump,
    empty_manifest,
    parse_manifest,
    plan_removal,
    record,
    regions_with_state,
    unrecorded,
)


def manifest(**files):
    base = empty_manifest("demo", "eu-west-1")
    base["files"] = dict(files)
    return base


def test_record_adds_only_what_is_new():
    first, added = record(empty_manifest("demo", "eu-west-1"), {"known_hosts": "known_hosts"})
    assert added == ["known_hosts"]
    second, added = record(first, {"known_hosts": "known_hosts", "amx-demo.pem": "private_key"})
    assert added == ["amx-demo.pem"]
    assert second["files"] == {"known_hosts": "known_hosts", "amx-demo.pem": "private_key"}
    assert first["files"] == {"known_hosts": "known_hosts"}  # not changed in place


@pytest.mark.parametrize("name", ["../id_ed25519", "/etc/passwd", "a/b", MANIFEST, "", ".hidden", "x..y"])
def test_names_outside_the_folder_are_refused(name):
    with pytest.raises(StateError):
        check_name(name)
    with pytest.raises(StateError):
        record(empty_manifest("demo", "eu-west-1"), {name: "known_hosts"})


def test_unknown_kind_is_refused():
    with pytest.raises(StateError):
        record(empty_manifest("demo", "eu-west-1"), {"x.txt": "anything"})


def test_round_trip():
    data = manifest(**{"amx-demo.pem": "private_key"})
    assert parse_manifest(dump(data), "demo", "eu-west-1", "m") == data


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not JSON"),
        ("[]", "format 1"),
        (json.dumps({"format": 1, "cluster": "other", "region": "eu-west-1", "files": {}}), "cluster 'other'"),
        (json.dumps({"format": 1, "cluster": "demo", "region": "us-east-1", "files": {}}), "region 'us-east-1'"),
        (
            json.dumps({"format": 1, "cluster": "demo", "region": "eu-west-1", "files": {"../x": "known_hosts"}}),
            "plain file",
        ),
    ],
)
def test_foreign_or_broken_manifests_are_refused(text, message):
    with pytest.raises(StateError, match=message):
        parse_manifest(text, "demo", "eu-west-1", "m")


def test_a_broken_manifest_is_not_echoed():
    with pytest.raises(StateError) as error:
        parse_manifest("-----BEGIN OPENSSH PRIVATE KEY-----", "demo", "eu-west-1", "m")
    assert "BEGIN" not in str(error.value)


def test_removal_of_recorded_files_only():
    data = manifest(**{"amx-demo.pem": "private_key", "known_hosts": "known_hosts"})
    remove, keep = plan_removal(data, ["amx-demo.pem", "known_hosts", "mine.txt"], instances_left=0)
    assert remove == ["amx-demo.pem", "known_hosts"]
    assert keep == {}
    assert unrecorded(data, ["amx-demo.pem", "known_hosts", "mine.txt", MANIFEST]) == ["mine.txt"]


def test_the_key_stays_while_instances_are_left():
    data = manifest(**{"amx-demo.pem": "private_key", "known_hosts": "known_hosts"})
    remove, keep = plan_removal(data, ["amx-demo.pem", "known_hosts"], instances_left=2)
    assert remove == ["known_hosts"]
    assert "2 instance(s) in eu-west-1" in keep["amx-demo.pem"]


def test_recorded_files_that_are_gone_are_skipped():
    remove, keep = plan_removal(manifest(known_hosts="known_hosts"), [], instances_left=0)
    assert (remove, keep) == ([], {})


def test_without_a_manifest_nothing_is_recorded():
    assert unrecorded(None, ["amx-demo.pem"]) == ["amx-demo.pem"]


def test_regions_with_state():
    entries = [("eu-west-1", True), ("us-east-1", True), ("us-west-2", False), ("notes", True)]
    assert regions_with_state(entries, "eu-west-1") == ["us-east-1"]


def test_bad_region():
    with pytest.raises(StateError):
        empty_manifest("demo", "mars")
