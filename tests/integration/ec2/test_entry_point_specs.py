# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bake entry point's argument spec is main's (one list in meta/argument_specs.yml, a YAML alias for bake):
Ansible still validates bake's input against it before any task of the entry point, and nothing reaches the EC2
API. A value that main's spec refuses is refused by bake's, and a good value passes bake's validation."""

from __future__ import annotations

import pytest
from ec2_helpers import anything_created

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Make the image and launch the workers
      ansible.builtin.include_role:
        name: amx.cluster.ec2_cluster
        tasks_from: bake
"""


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ({"ec2_cluster_image_strategy": "sideways"}, ["ec2_cluster_image_strategy", "bake, parallel"]),
        ({"ec2_cluster_ssh_timeout": "soon"}, ["ec2_cluster_ssh_timeout", "int"]),
        ({"ec2_cluster_bake_stack": "torch"}, ["ec2_cluster_bake_stack", "dict"]),
    ],
    ids=["choices", "type", "bake-only-option"],
)
def test_bake_validates_its_input_with_mains_spec(playbook, ec2, tmp_path, bad, words):
    path = tmp_path / "bake.yml"
    path.write_text(PLAY)
    run = playbook(path, {"ec2_cluster_name": "specs", "ec2_cluster_region": "us-east-1", **bad})
    assert run.returncode != 0, run.explain()
    assert "Validating arguments against arg spec 'bake'" in run.output, run.explain()
    for word in words:
        assert word in run.output, (word, run.explain())
    assert not any(anything_created(ec2).values()), "the validation must fail before any call to the EC2 API"
