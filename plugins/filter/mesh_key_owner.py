# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.mesh_key_owner: a thin wrapper over module_utils.ssh_mesh.key_owner.

Its documentation is the sidecar mesh_key_owner.yml beside this file.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.amx.cluster.plugins.module_utils.ssh_mesh import key_owner


def mesh_key_owner(public_text, private_exists, key_name, master):
    """Whether the key pair at ~/.ssh/<key_name> is absent, ours or foreign (see module_utils.ssh_mesh)."""
    if public_text is not None and not isinstance(public_text, str):
        raise AnsibleFilterError(f"mesh_key_owner: expected the public key's text or None, got {type(public_text)}")
    return key_owner(bool(private_exists), public_text, str(key_name), str(master))


class FilterModule:
    def filters(self):
        return {"mesh_key_owner": mesh_key_owner}
