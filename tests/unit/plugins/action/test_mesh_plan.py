# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the amx.cluster.mesh_plan action reads of each node; the whole action runs in the ssh_mesh integration tests
(tests/integration/bad_input/test_ssh_mesh.py, test_cluster.py, tests/integration/ssh_mesh)."""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.action.mesh_plan import node_values

ACCOUNT = ["x", "1000", "1001", "", "/home/amx", "/bin/sh"]


class Raising(dict):
    """A host whose variable fails to template when read, as Ansible's hostvars raise then."""

    def __getitem__(self, key):
        if key == "__ssh_mesh_node_port":
            raise RuntimeError("'ssh_mesh_port' is undefined")
        return super().__getitem__(key)


def test_a_node_shares_its_values_account_and_host_key():
    hostvars = {
        "m": {
            "__ssh_mesh_node_port": 2222,
            "__ssh_mesh_node_user": "amx",
            "__ssh_mesh_node_key_name": "cluster",
            "ansible_facts": {"getent_passwd": {"amx": ACCOUNT}, "ssh_host_key_ed25519_public": "AAAA"},
        }
    }
    assert node_values(hostvars, "m") == {
        "port": 2222,
        "user": "amx",
        "key_name": "cluster",
        "account": ACCOUNT,
        "host_key": "AAAA",
    }


def test_what_a_node_lacks_is_left_out_or_none():
    # No facts: no account looked up (not a missing user) and no host key.
    assert node_values({"w": {"__ssh_mesh_node_user": "amx"}}, "w") == {"user": "amx", "host_key": None}
    # getent found no such user: the account is None, a problem for mesh_plan.
    facts = {"ansible_facts": {"getent_passwd": {"amx": None}}}
    assert node_values({"w": {"__ssh_mesh_node_user": "amx", **facts}}, "w")["account"] is None
    # A value that fails to template is left out, as one never shared.
    raising = Raising({"__ssh_mesh_node_port": 22, "__ssh_mesh_node_user": "amx"})
    assert node_values({"w": raising}, "w") == {"user": "amx", "host_key": None}
    assert node_values({}, "gone") == {"host_key": None}
