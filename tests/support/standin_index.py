# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Stand-in wheels and a local package index, for tests of requirement resolution without the real indexes.

``wheel()`` writes a tiny wheel with a given name, version, tag and dependencies (a real wheel pip installs: a
package folder with an empty ``__init__.py`` and its metadata); ``SimpleIndex`` lays a folder of wheels out as a
PEP 503 simple index and serves it on 127.0.0.1 until closed.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import pathlib
import re
import threading
import zipfile
from typing import Iterable, Optional, Sequence


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def wheel(
    folder: pathlib.Path,
    name: str,
    version: str,
    requires: Sequence[str] = (),
    tag: str = "py3-none-any",
    requires_python: Optional[str] = None,
    module: Optional[str] = None,
    init: Optional[str] = None,
) -> pathlib.Path:
    """Write ``name-version-tag.whl`` into folder and return its path. Its package folder is ``module`` (by default
    the name with underscores), whose ``__init__.py`` is ``init`` (by default one line: ``__version__``)."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = re.sub(r"[-_.]+", "_", name)
    info = f"{dist}-{version}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        metadata.append(f"Requires-Python: {requires_python}")
    metadata += [f"Requires-Dist: {line}" for line in requires]
    files = {
        f"{module or dist}/__init__.py": init if init is not None else f"__version__ = {version!r}\n",
        f"{info}/METADATA": "\n".join(metadata) + "\n",
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: amx-cluster-tests\nRoot-Is-Purelib: true\nTag: {tag}\n",
    }
    path = folder / f"{dist}-{version}-{tag}.whl"
    record = []
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            data = text.encode("utf-8")
            archive.writestr(member, data)
            record.append(f"{member},sha256={_digest(data)},{len(data)}")
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def _project(filename: str) -> str:
    return re.sub(r"[-_.]+", "-", filename.split("-", 1)[0]).lower()


class SimpleIndex:
    """The wheels of ``folder`` as a PEP 503 simple index on http://127.0.0.1:PORT/simple/ (``url``)."""

    def __init__(self, folder: pathlib.Path) -> None:
        self.folder = folder
        self.refresh()
        root = str(folder)

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=root, **kwargs)

            def log_message(self, *args):  # quiet
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def refresh(self) -> None:
        """Write the index pages for the wheels now in the folder."""
        wheels = sorted(p for p in self.folder.glob("*.whl"))
        projects = {}
        for path in wheels:
            projects.setdefault(_project(path.name), []).append(path)
        simple = self.folder / "simple"
        simple.mkdir(exist_ok=True)
        links = "".join(f'<a href="{name}/">{name}</a>\n' for name in sorted(projects))
        (simple / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
        for name, paths in projects.items():
            (simple / name).mkdir(exist_ok=True)
            anchors = "".join(
                f'<a href="../../{p.name}#sha256={hashlib.sha256(p.read_bytes()).hexdigest()}">{p.name}</a>\n'
                for p in paths
            )
            (simple / name / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{anchors}</body></html>\n")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def names(paths: Iterable[pathlib.Path]) -> set:
    """``{name==version}`` of wheel files, names normalised."""
    found = set()
    for path in paths:
        parts = path.name[:-4].split("-")
        found.add(f"{_project(parts[0])}=={parts[1]}")
    return found
