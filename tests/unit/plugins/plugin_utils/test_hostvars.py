# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plugin_utils/hostvars.py: another host's variable, or a default, whatever the hostvars throw."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from ansible.errors import AnsibleUndefinedVariable

from ansible_collections.amx.cluster.plugins.plugin_utils.hostvars import MISSING, hostvar


class Untemplatable(Mapping):
    """A host whose variables fail to template, as Ansible's HostVars do for an undefined reference."""

    def __getitem__(self, key):
        raise AnsibleUndefinedVariable(f"'{key}' is undefined")

    def __iter__(self):
        return iter(["broken"])

    def __len__(self):
        return 1

    def __contains__(self, key):
        return True


HOSTVARS = {"node1": {"facts": {"kernel": "6.8"}, "plain": "x", "none": None}, "node2": Untemplatable()}


@pytest.mark.parametrize(
    ("host", "path", "expected"),
    [
        ("node1", ("facts", "kernel"), "6.8"),
        ("node1", ("plain",), "x"),
        ("node1", ("none",), None),
        ("node1", ("facts", "absent"), MISSING),
        ("node1", ("plain", "deeper"), MISSING),  # a string has no keys
        ("node3", ("plain",), MISSING),  # a host the play does not know
        ("node2", ("broken",), MISSING),  # a value that does not template
    ],
)
def test_hostvar(host, path, expected):
    assert hostvar(HOSTVARS, host, *path, default=MISSING) == expected


def test_the_default_is_none():
    assert hostvar(HOSTVARS, "node1", "facts", "absent") is None
