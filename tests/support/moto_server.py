# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A moto server (the local EC2 API) on 127.0.0.1, for the EC2 tests and the inventory benchmark.

    with moto_server.running(workdir, MOTO_AMIS_PATH=...) as url:
        ...  # boto3 / Ansible pointed at url

The server gets none of the caller's AWS_* or MOTO_* variables, logs to workdir/moto.log and is stopped on exit.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import ssl
import subprocess
import sys
import time
import urllib.request
from typing import Iterator, Optional, Tuple

from net import free_port

MOTO_SERVER = pathlib.Path(sys.executable).parent / "moto_server"


def post(url: str, path: str, timeout: float = 30) -> None:
    request = urllib.request.Request(url + path, data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        response.read()


def reset(url: str) -> None:
    """Wipe everything the server holds (moto's own defaults come back)."""
    post(url, "/moto-api/reset")


@contextlib.contextmanager
def running(
    workdir: pathlib.Path,
    startup_timeout: float = 30,
    tls: Optional[Tuple[pathlib.Path, pathlib.Path, pathlib.Path]] = None,
    **env_extra: str,
) -> Iterator[str]:
    """Start moto_server on a free port, yield its URL once it answers, stop it afterwards.

    tls: (certificate, private key, CA bundle that signed the certificate) to serve https with; the URL is then
    https://.
    """
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "MOTO_"))}
    env.update(env_extra)
    url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    tls_args = ["-c", str(tls[0]), "-k", str(tls[1])] if tls else []
    probe_context = ssl.create_default_context(cafile=str(tls[2])) if tls else None
    with open(workdir / "moto.log", "w") as log:
        server = subprocess.Popen(
            [str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(port), *tls_args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=workdir,
        )
        try:
            deadline = time.monotonic() + startup_timeout
            while True:
                try:
                    with urllib.request.urlopen(url + "/moto-api/", timeout=2, context=probe_context):
                        break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"moto_server did not start on {url}; see {workdir / 'moto.log'}") from None
                    time.sleep(0.2)
            yield url
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
