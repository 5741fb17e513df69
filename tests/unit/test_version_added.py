# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every plugin's `version_added`, as ansible-doc shows it to users, is the release the plugin first shipped in
(changelogs/changelog.yaml and the frozen 0.1.0 filter list), or the next release for a plugin that has not shipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from ansible_env import REPO, VENV_BIN
from releases import first_release

PLUGIN_TYPES = ("module", "filter", "inventory")


def ansible_doc(*args: str):
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    done = subprocess.run(
        [str(VENV_BIN / "ansible-doc"), *args, "--json"], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


@pytest.mark.skipif(not (VENV_BIN / "ansible-doc").exists() and not shutil.which("ansible-doc"), reason="make setup")
@pytest.mark.parametrize("plugin_type", PLUGIN_TYPES)
def test_version_added_is_the_first_release(plugin_type):
    names = sorted(ansible_doc("-t", plugin_type, "-l", "amx.cluster"))
    assert names, f"ansible-doc lists no {plugin_type} of amx.cluster"
    docs = ansible_doc("-t", plugin_type, *names)
    wrong = {}
    for name in names:
        said = str(docs[name]["doc"].get("version_added"))
        expected = first_release(plugin_type, name.split(".")[-1])
        if said != expected:
            wrong[name] = f"says {said}, first released in {expected}"
    assert not wrong, "; ".join(f"{name} {why}" for name, why in sorted(wrong.items()))
