#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: stack_sources
short_description: Check that every pinned wheel is listed where a stack profile looks for it
version_added: 0.2.0
description:
  - Reads, once each, the pages where the profiles of O(checks) look for their pinned wheels (the PEP 503 page
    C(<index>/<normalised-name>/) of each pinned package on each index, each find-links page or folder) and says,
    for each check, which pins no source lists for the node's Python and platform tags.
  - Runs where the lookup is done - on the controller for a wheelhouse (delegated, once for all nodes), on the
    node for a direct install. Reads only; never changes anything.
  - A pin with a local version label (C(1.13.0+cpu)) must be listed in one of the sources read; the package index
    never carries such a build, so it is never left to pip's default index.
  - A page that does not answer counts as listing nothing; a PEP 503 page that answers 404 lists nothing.
author:
  - amx.cluster developers (@amx-cluster)
options:
  checks:
    description: What to check, one entry per node (entries that are the same are read and checked once).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The node the entry is for (named in the problems).
        type: str
        required: true
      pins:
        description: Package -> exact version (the profile's C(pins)).
        type: dict
        required: true
      indexes:
        description: PEP 503 simple indexes (URLs, or C(file://) folders) - the profile's index_url and extra ones.
        type: list
        elements: str
        default: []
      find_links:
        description: Find-links pages (URLs) or folders.
        type: list
        elements: str
        default: []
      default_index:
        description: The profile names no index_url, so pip's default index is a source too.
        type: bool
        default: false
      left_out:
        description: Sources left out because they did not answer (named in the problems).
        type: list
        elements: str
        default: []
      python:
        description: The node's Python version (C(3.8.10)).
        type: str
        required: true
      platforms:
        description: The node's platform tags, most specific first; empty takes any platform.
        type: list
        elements: str
        default: []
  pip:
    description:
      - A pip command (C([PYTHON, -m, pip])) whose configuration (C(pip config list)) adds sources, as it does
        to the install - its find-links and extra-index-url always, its index-url where a check has
        O(checks[].default_index).
      - Left out, pip's configuration is not read.
    type: list
    elements: str
  timeout:
    description: Seconds to wait for each page.
    type: int
    default: 10
"""

EXAMPLES = r"""
- name: Check that every pinned wheel is listed
  amx.cluster.stack_sources:
    checks:
      - name: node1
        pins: {torch: "1.13.0+cpu", oneccl-bind-pt: "1.13.0+cpu"}
        indexes: [https://download.pytorch.org/whl/cpu]
        find_links: [/srv/wheels]
        default_index: true
        python: "3.8.10"
        platforms: [manylinux_2_31_x86_64, manylinux2014_x86_64, linux_x86_64]
  register: sources
"""

RETURN = r"""
results:
  description: One entry per check, in the order of O(checks).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The check's name.
      type: str
    problems:
      description: One sentence per pin that no source lists (empty when all are listed).
      type: list
      elements: str
    found:
      description: The pins found, with the pages and files that list them.
      type: list
      elements: dict
    unchecked:
      description: The pins left to pip's default index, which was not read.
      type: list
      elements: dict
requests:
  description: How many pages and folders were read (each at most once).
  returned: always
  type: int
unreadable:
  description: The pages that did not answer.
  returned: always
  type: list
  elements: str
"""

import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional
from urllib.parse import unquote, urlsplit

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError
from ansible.module_utils.urls import open_url

from ansible_collections.amx.cluster.plugins.module_utils import wheel_sources as ws


def _read_local(path: str) -> Optional[List[str]]:
    """A folder's wheels (or its index.html, as pip reads a file:// index page), or an HTML file's links."""
    if os.path.isdir(path):
        page = os.path.join(path, "index.html")
        if os.path.isfile(page):
            path = page
        else:
            return sorted(os.listdir(path))
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return ws.page_files(handle.read())
    except OSError:
        return None


def _read(source: str, timeout: int) -> Optional[List[str]]:
    """The file names a page or folder lists: None when it does not answer, [] for a 404 page."""
    parts = urlsplit(source)
    if parts.scheme in ("http", "https"):
        try:
            with open_url(source, timeout=timeout, headers={"Accept": "text/html"}) as response:
                return ws.page_files(response.read().decode("utf-8", errors="replace"))
        except HTTPError as error:
            return [] if error.code == 404 else None
        except Exception:  # any failure to answer: reported as such, never a crash
            return None
    path = unquote(parts.path) if parts.scheme == "file" else source
    if not os.path.exists(path):
        return [] if parts.scheme == "file" and os.path.isdir(os.path.dirname(path.rstrip("/"))) else None
    return _read_local(path)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "checks": {
                "type": "list",
                "elements": "dict",
                "required": True,
                "options": {
                    "name": {"type": "str", "required": True},
                    "pins": {"type": "dict", "required": True},
                    "indexes": {"type": "list", "elements": "str", "default": []},
                    "find_links": {"type": "list", "elements": "str", "default": []},
                    "default_index": {"type": "bool", "default": False},
                    "left_out": {"type": "list", "elements": "str", "default": []},
                    "python": {"type": "str", "required": True},
                    "platforms": {"type": "list", "elements": "str", "default": []},
                },
            },
            "pip": {"type": "list", "elements": "str"},
            "timeout": {"type": "int", "default": 10},
        },
        supports_check_mode=True,
    )
    config = {"index-url": [], "extra-index-url": [], "find-links": []}
    if module.params["pip"]:
        rc, out, _err = module.run_command([*module.params["pip"], "config", "list"])
        if rc == 0:
            config = ws.pip_config_sources(out)
    pages: Dict[str, Optional[List[str]]] = {}
    done: Dict[str, dict] = {}
    results = []
    for entry in module.params["checks"]:
        indexes = list(entry["indexes"])
        default_unchecked = entry["default_index"]
        if default_unchecked and config["index-url"]:
            indexes += config["index-url"]
            default_unchecked = False
        sources = {
            "indexes": list(dict.fromkeys(indexes + config["extra-index-url"])),
            "find_links": list(dict.fromkeys(entry["find_links"] + config["find-links"])),
        }
        pins = {str(name): str(version) for name, version in entry["pins"].items()}
        key = json.dumps([pins, sources, entry["python"], entry["platforms"], default_unchecked], sort_keys=True)
        if key not in done:
            todo = [page for page in ws.pages_to_read(sources, pins) if page not in pages]
            # Side by side: the time is the slowest page's, not the sum over pins and indexes.
            with ThreadPoolExecutor(max_workers=8) as pool:
                pages.update(zip(todo, pool.map(lambda page: _read(page, module.params["timeout"]), todo)))
            done[key] = ws.check(pins, sources, pages, entry["python"], entry["platforms"], default_unchecked)
        outcome = done[key]
        problems = [ws.describe_missing(item, entry["python"], entry["platforms"]) for item in outcome["missing"]]
        if problems and entry["left_out"]:
            problems.append(
                f"left out because they did not answer (torch_stack_unreachable_indexes: skip): "
                f"{', '.join(entry['left_out'])}"
            )
        results.append(
            {
                "name": entry["name"],
                "problems": problems,
                "found": outcome["found"],
                "unchecked": outcome["unchecked"],
            }
        )
    module.exit_json(
        changed=False,
        results=results,
        requests=len(pages),
        unreadable=sorted(page for page, files in pages.items() if files is None),
    )


if __name__ == "__main__":
    main()
