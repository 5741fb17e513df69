# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The report files: bench/results/<date>/<name>.json and <name>.md."""

from __future__ import annotations

import datetime
import json
import pathlib
from typing import Any, Dict, Optional, Tuple


def dated_folder(root: pathlib.Path, today: Optional[datetime.date] = None) -> Tuple[str, pathlib.Path]:
    """Today's date (ISO) and root/<date>/, made if missing."""
    date = (today or datetime.date.today()).isoformat()
    folder = root / date
    folder.mkdir(parents=True, exist_ok=True)
    return date, folder


def write_report(folder: pathlib.Path, name: str, report: Dict[str, Any], markdown: str) -> Tuple[pathlib.Path, ...]:
    """<name>.json (the report, indented) and <name>.md (its rendering) in folder; prints where they are."""
    as_json, as_markdown = folder / f"{name}.json", folder / f"{name}.md"
    as_json.write_text(json.dumps(report, indent=2) + "\n")
    as_markdown.write_text(markdown)
    print(f"results: {as_json} and {as_markdown}")
    return as_json, as_markdown
