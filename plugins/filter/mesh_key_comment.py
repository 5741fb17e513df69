# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter amx.cluster.mesh_key_comment: a thin wrapper over module_utils.ssh_mesh.key_comment.

Its documentation is the sidecar mesh_key_comment.yml beside this file.
"""

from __future__ import annotations

from ansible_collections.amx.cluster.plugins.module_utils.ssh_mesh import key_comment


def mesh_key_comment(key_name, master):
    """The comment of the public key ssh_mesh makes, its mark of ownership."""
    return key_comment(str(key_name), str(master))


class FilterModule:
    def filters(self):
        return {"mesh_key_comment": mesh_key_comment}
