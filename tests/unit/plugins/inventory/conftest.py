# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Load the inventory plugin from its file for unit tests.

Other unit tests import ``ansible_collections.amx.cluster`` as a plain namespace package (pytest's pythonpath), and
once that happened Ansible's collection loader can no longer resolve ``amx.cluster.ec2_cluster``. Loading the plugin
from its directory works in any test order; the FQCN path is exercised by the integration tests, which run
``ansible-inventory`` itself.
"""

from __future__ import annotations

import pathlib

import pytest
from ansible.plugins.loader import inventory_loader

PLUGIN_DIR = pathlib.Path(__file__).resolve().parents[4] / "plugins" / "inventory"


@pytest.fixture(scope="session", autouse=True)
def inventory_plugin_dir():
    inventory_loader.add_directory(str(PLUGIN_DIR))
