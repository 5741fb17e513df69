# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An inventory file that names the amx.cluster.ec2_cluster plugin under a name the plugin does not read: the user
sees why and how to rename it, not only Ansible's "could not be verified"."""

from __future__ import annotations

import ec2_helpers

CLUSTER = "named"


def test_a_misnamed_file_says_why_and_the_fix(ec2, inventory_file, inventory_list):
    ec2_helpers.launch(ec2, 1, "master", CLUSTER)
    wrong = inventory_file(CLUSTER, name="yml")  # named.yml
    assert wrong.name == "named.yml"

    run = inventory_list(wrong)[0]

    assert run.returncode != 0, run.explain()
    assert (
        f"{wrong} names the amx.cluster.ec2_cluster inventory plugin, which reads only files whose name ends in "
        f"ec2_cluster.yml or ec2_cluster.yaml: rename it, for example to {wrong.parent}/named.ec2_cluster.yml"
    ) in " ".join(run.output.split()), run.explain()
    # Renamed as told, the same file works.
    right = wrong.rename(wrong.parent / "named.ec2_cluster.yml")
    run, data = inventory_list(right)
    assert run.returncode == 0, run.explain()
    assert data["master"]["hosts"] == ["master"]
    assert "names the amx.cluster.ec2_cluster inventory plugin" not in run.output


def test_other_inventories_get_no_such_warning(inventory_list, tmp_path):
    static = tmp_path / "fleet.yml"
    static.write_text("all:\n  hosts:\n    ec2_cluster:\n")
    run = inventory_list(static)[0]
    assert run.returncode == 0, run.explain()
    assert "names the amx.cluster.ec2_cluster" not in run.output
