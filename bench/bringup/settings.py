# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the bring-up benchmark measures with: the profile, the container cluster's variables, the targets."""

from __future__ import annotations

import pathlib
from typing import Any, Dict

from benchlib.paths import REPO

TOOLS = REPO / "tests" / "cluster"
# The wheels the benchmark's own package index serves (--index-rate), one folder per pin set (bringup.wheels).
INDEX_CACHE = pathlib.Path.home() / ".cache" / "amx.cluster" / "bench-index"
PROFILES = REPO / "roles" / "torch_stack" / "vars" / "profiles.yml"
PROFILE = "native"
NODE_USER = "amx"  # the sudo user of the node image (tests/cluster/node-image.sh)
HOST_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
TCMALLOC_PACKAGE = "libgoogle-perftools-dev"  # what the recipe installs (roles/tcmalloc/vars/Debian.yml)
PROCESSES_PER_NODE = 2  # train_processes_per_node's default
TRAIN_EPOCHS = 2
MIN_GLOBAL_BATCH = 48

TARGET_PROVISION_RATIO = 0.5  # provision.yml at most half the baseline's time
TARGET_RERUN_SHARE = 0.05  # a second run under 5% of the first, with 0 changed (issue 15)
TARGET_LAUNCH_OVERHEAD = 15.0  # seconds, the last train.yml of the scaling sequence (a full launch)
TARGET_EVERYDAY_LAUNCH_OVERHEAD = 10.0  # seconds, the everyday launch (same settings, new run id: the one-step path)
EVERYDAY_RUNS = 3  # --everyday-runs' default

# Where the master keeps the one-step launch's plans (amx.cluster.train_launch's plan_dir default).
LAUNCH_PLAN_DIR = "/var/lib/amx-cluster/launch"

# The group_vars a container cluster needs (extensions/molecule/fleet/molecule.yml).
CLUSTER_VARS: Dict[str, Any] = {
    "amx_check_required": False,
    "torch_stack_profile": PROFILE,
    "torch_stack_extra_index_urls": [],
    "hf_examples_enabled": False,
    "train_require_amx": False,
    "train_epochs": TRAIN_EPOCHS,
}
