# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every profile's lock is what tools/lock_profile.py resolves today from the real package index (its cut-off date
makes the answer stable): a hand edit, a profile pin changed without a new lock, or a change of the tool shows here.
Marked ``network``; skips when uv cannot reach the package index."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[3]
PROFILES = yaml.safe_load((REPO / "roles/torch_stack/vars/profiles.yml").read_text())["__torch_stack_profiles"]

pytestmark = [pytest.mark.network]


# What uv says when the index is out of reach (no network), as opposed to a resolution that failed.
UNREACHABLE = ("Failed to fetch", "error sending request", "dns error", "Connection refused")


@pytest.mark.parametrize("profile", sorted(name for name, data in PROFILES.items() if data.get("lock")))
def test_lock_is_what_the_tool_resolves(profile):
    done = subprocess.run(
        [sys.executable, str(REPO / "tools/lock_profile.py"), profile, "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 and any(words in done.stderr for words in UNREACHABLE):
        pytest.skip(f"uv cannot reach the package index from here: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "as resolved" in done.stdout
