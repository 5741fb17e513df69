# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""bench/benchlib: medians, ratios, the machine line and the report files every benchmark shares."""

from __future__ import annotations

import datetime
import json

import pytest
from benchlib import machine, results, stats


@pytest.mark.parametrize(
    ("values", "digits", "expected"),
    [
        ([3.0, 1.0, 2.0], None, 2.0),
        ([4.0, 1.0, 2.0, 3.0], None, 2.5),
        ([1.0, None, 5.0], None, 3.0),  # None: not measured, left out
        ([1.23456, 2.34567], 3, 1.79),
        ([0.1234567], 3, 0.123),
        ([0.1234567], None, 0.1234567),
        ([], None, None),
        ([None, None], 3, None),
    ],
)
def test_median(values, digits, expected):
    assert stats.median(values, digits) == expected


@pytest.mark.parametrize(
    ("numerator", "denominator", "digits", "expected"),
    [(457.1, 382.8, 3, 1.194), (1.0, 3.0, None, 1 / 3), (1.0, 3.0, 2, 0.33), (0.0, 5.0, None, 0.0)],
)
def test_ratio(numerator, denominator, digits, expected):
    assert stats.ratio(numerator, denominator, digits) == expected


def test_ratio_of_zero_says_so():
    with pytest.raises(ZeroDivisionError, match=r"ratio of 2\.0 to 0"):
        stats.ratio(2.0, 0.0)


def test_ratio_of_medians_rounds_each_median_then_the_ratio():
    # As the bring-up report has always done it: 1.0004 -> 1.0 and 0.0016 -> 0.002, so 500.0 (not 625.25).
    assert stats.ratio_of_medians([0.5, 1.0004, 9.0], [0.0016], 3) == 500.0
    assert stats.ratio_of_medians([1.0, 3.0], [1.0, 1.0, 4.0]) == 2.0
    with pytest.raises(ValueError, match="at least one measured value"):
        stats.ratio_of_medians([None], [1.0])


def test_describe_machine_keeps_the_reports_order():
    described = machine.describe_machine("0.10 0.20 0.30", "1.00 2.00 3.00")
    assert list(described) == ["cpus", "load_before", "load_after", "python", "ansible_core"]
    assert described["load_before"] == "0.10 0.20 0.30"
    assert "load_after" not in machine.describe_machine("0.10 0.20 0.30")


def test_load_average_is_three_figures():
    figures = machine.load_average().split(" ")
    assert len(figures) == 3
    assert all(float(f) >= 0 for f in figures)


def test_report_files_go_to_a_dated_folder(tmp_path, capsys):
    date, folder = results.dated_folder(tmp_path / "results", datetime.date(2026, 12, 2))
    assert (date, folder) == ("2026-12-02", tmp_path / "results" / "2026-12-02")
    assert folder.is_dir()
    assert results.dated_folder(tmp_path / "results", datetime.date(2026, 12, 2))[1] == folder  # again: no error
    written = results.write_report(folder, "inventory", {"runs": 1, "nested": {"a": [1, 2]}}, "# Report\n")
    assert written == (folder / "inventory.json", folder / "inventory.md")
    assert json.loads(written[0].read_text()) == {"runs": 1, "nested": {"a": [1, 2]}}
    assert written[0].read_text().endswith("}\n")
    assert written[1].read_text() == "# Report\n"
    assert capsys.readouterr().out == f"results: {written[0]} and {written[1]}\n"
