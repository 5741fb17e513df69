# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test helper: report the facts of a node without a default route (setup leaves default_ipv4 empty there), for
the tests of a node whose cluster network is not its default route. The test machine's own route cannot be taken
away from under the other tests: this fact is the one thing stood in for, and it joins the gathered facts as
setup's would."""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    module.exit_json(changed=False, ansible_facts={"default_ipv4": {}})


if __name__ == "__main__":
    main()
