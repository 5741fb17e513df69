# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A package index on this machine, for a bring-up as separate machines would see it.

The wheels of a folder (a wheelhouse: torch and everything the profile pins) as a PEP 503 simple index,
http://<host>:<port>/simple/, every response paced by a per-client rate limit (benchlib.rate_limit): each node and
the controller download at most `rate` bytes per second, as each machine would over a link of its own to the index.
The pages are made in memory from the folder's wheel names (the folder is not written to); a file is only served
if its name is one of the wheels listed. What each client was sent is counted (`sent`).

    cd bench && ../.venv/bin/python -m bringup.package_index ~/wheels --rate 25MB --port 8765
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import html
import http.server
import pathlib
import re
import threading
import time
import urllib.parse
from typing import Dict, List, Optional

from benchlib.rate_limit import PerClientLimit, parse_rate

CHUNK = 64 * 1024


def project_name(wheel_filename: str) -> str:
    """The PEP 503 normalised project name of a wheel file (`Foo_Bar-1.0-py3-none-any.whl` -> `foo-bar`)."""
    return re.sub(r"[-_.]+", "-", wheel_filename.split("-", 1)[0]).lower()


def sha256_of(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()


def index_pages(wheels: Dict[str, str]) -> Dict[str, bytes]:
    """The simple index's pages by URL path, from {wheel filename: its sha256}: /simple/ lists the projects,
    /simple/<project>/ links each of its wheels (../../files/<name>#sha256=<hex>)."""
    projects: Dict[str, List[str]] = {}
    for filename in sorted(wheels):
        projects.setdefault(project_name(filename), []).append(filename)

    def page(title: str, links: List[str]) -> bytes:
        body = "".join(f"{link}<br>\n" for link in links)
        return (
            f'<!DOCTYPE html>\n<html><head><meta name="pypi:repository-version" content="1.0">'
            f"<title>{html.escape(title)}</title></head><body>\n{body}</body></html>\n"
        ).encode()

    pages = {"/simple/": page("Simple index", [f'<a href="{p}/">{p}</a>' for p in sorted(projects)])}
    for project, filenames in projects.items():
        links = [
            f'<a href="../../files/{urllib.parse.quote(name)}#sha256={wheels[name]}">{html.escape(name)}</a>'
            for name in filenames
        ]
        pages[f"/simple/{project}/"] = page(f"Links for {project}", links)
    return pages


class PackageIndex:
    """The wheels of `folder` served as a simple index on host:port (port 0: a free one), `rate` bytes per second
    per client address; `url` is the index URL to give pip (--index-url). Use as a context manager, or close()."""

    def __init__(
        self, folder: pathlib.Path, rate: float, host: str = "127.0.0.1", port: int = 0, burst: Optional[float] = None
    ) -> None:
        self.folder = folder
        self.files = {path.name: path for path in sorted(folder.glob("*.whl"))}
        if not self.files:
            raise ValueError(f"no wheels in {folder}: the package index would be empty")
        self.pages = index_pages({name: sha256_of(path) for name, path in self.files.items()})
        self.limit = PerClientLimit(rate, burst)
        self.server = http.server.ThreadingHTTPServer((host, port), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}/simple/"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.1,), name="package-index", daemon=True)
        self.thread.start()

    @property
    def sent(self) -> Dict[str, int]:
        """Bytes sent per client address (pages and files), so far."""
        return dict(self.limit.sent)

    def _handler(self) -> type:
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass  # a benchmark's output is its measurements

            def do_HEAD(self) -> None:
                self.respond(body=False)

            def do_GET(self) -> None:
                self.respond(body=True)

            def respond(self, body: bool) -> None:
                path = urllib.parse.urlsplit(self.path).path
                if path == "/simple":
                    path = "/simple/"
                elif path.startswith("/simple/") and not path.endswith("/"):
                    path += "/"
                if path.startswith("/simple/") and path not in index.pages:
                    # pip asks for the name as written too: normalise it as PEP 503 says.
                    path = f"/simple/{project_name(path[len('/simple/') :].strip('/'))}/"
                if path in index.pages:
                    self.send(index.pages[path], "text/html; charset=utf-8", body)
                    return
                name = urllib.parse.unquote(path[len("/files/") :]) if path.startswith("/files/") else ""
                if name in index.files:
                    self.send_file(index.files[name], body)
                    return
                self.send_error(404, "not in this index")

            def send(self, data: bytes, content_type: str, body: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    for start in range(0, len(data), CHUNK):
                        self.paced_write(data[start : start + CHUNK])

            def send_file(self, path: pathlib.Path, body: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(path.stat().st_size))
                self.end_headers()
                if body:
                    with open(path, "rb") as handle:
                        for chunk in iter(lambda: handle.read(CHUNK), b""):
                            self.paced_write(chunk)

            def paced_write(self, chunk: bytes) -> None:
                wait = index.limit.take(self.client_address[0], len(chunk))
                if wait > 0:
                    time.sleep(wait)
                self.wfile.write(chunk)

        return Handler

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def __enter__(self) -> PackageIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=pathlib.Path, help="a folder of wheels")
    parser.add_argument("--rate", default="25MB", help="per client, per second (default: 25MB)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    args = parser.parse_args()
    try:
        rate = parse_rate(args.rate)
    except ValueError as error:
        parser.error(str(error))
    with PackageIndex(args.folder, rate, args.host, args.port) as index:
        print(f"{index.url} ({len(index.files)} wheels, {rate / 1e6:g} MB/s per client); Ctrl-C stops it", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            index.thread.join()


if __name__ == "__main__":
    main()
