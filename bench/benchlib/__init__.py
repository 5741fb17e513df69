# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What every benchmark in bench/ shares: where things are, medians and ratios, the machine line, the report files.

The benchmark scripts run as `python bench/<name>.py`, so bench/ is on the import path and this package imports
as `benchlib`.
"""
