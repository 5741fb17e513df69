# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The benchmarks' pure parts: bench/ goes on the import path, as it is when a benchmark runs as a script."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[3] / "bench"
FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(BENCH))


@pytest.fixture
def bringup_report() -> dict:
    """The 3-node, 1-run report of 2026-11-30 (bench/results/2026-11-30/bringup.json), measured before the split."""
    return json.loads((FIXTURES / "bringup-2026-11-30.json").read_text())


@pytest.fixture
def inventory_report() -> dict:
    return json.loads((FIXTURES / "inventory-2026-11-30.json").read_text())
