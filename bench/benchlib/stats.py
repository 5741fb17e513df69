# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Medians and ratios as the benchmark reports give them."""

from __future__ import annotations

import statistics
from typing import Optional, Sequence


def median(values: Sequence[Optional[float]], digits: Optional[int] = None) -> Optional[float]:
    """The median of the values that were measured (None: not measured), rounded to `digits` when given; None when
    nothing was measured."""
    present = [value for value in values if value is not None]
    if not present:
        return None
    middle = statistics.median(present)
    return middle if digits is None else round(middle, digits)


def ratio(numerator: float, denominator: float, digits: Optional[int] = None) -> float:
    """numerator / denominator, rounded to `digits` when given. A zero denominator is an error of the caller: a
    benchmark that can measure 0 s floors it first and says so."""
    if denominator == 0:
        raise ZeroDivisionError(f"ratio of {numerator} to 0")
    quotient = numerator / denominator
    return quotient if digits is None else round(quotient, digits)


def ratio_of_medians(
    numerators: Sequence[Optional[float]], denominators: Sequence[Optional[float]], digits: Optional[int] = None
) -> float:
    """median(numerators) / median(denominators), each median and the ratio rounded to `digits` when given."""
    top, bottom = median(numerators, digits), median(denominators, digits)
    if top is None or bottom is None:
        raise ValueError("a ratio of medians needs at least one measured value on each side")
    return ratio(top, bottom, digits)
