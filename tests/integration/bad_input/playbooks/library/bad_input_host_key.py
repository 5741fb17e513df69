# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test helper: report a made-up ed25519 host key as the host's fact, for a machine that runs no sshd (and so has
no host key of its own) in the ssh_mesh tests. A fact set this way joins the gathered facts, as setup's would."""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={"key": {"type": "str", "required": True}}, supports_check_mode=True)
    module.exit_json(changed=False, ansible_facts={"ssh_host_key_ed25519_public": module.params["key"]})


if __name__ == "__main__":
    main()
