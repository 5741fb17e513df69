# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node state stamp for real, on a container of the tests' node image (tests/cluster/node-image.sh), reached
through Docker (community.docker's docker connection): tcmalloc installs its package from Debian's mirror and stamps
the node; a second run is skipped by the stamp with nothing changed and its facts still set; a package removed
behind the role's back takes the full path again, which puts it back. Three runs of the role, kept to that for the
time of `make test`: an edited or untrusted stamp, a reboot, the clock, other inputs and a forced run are tested
without a container (tests/unit/plugins/modules/test_node_state.py, module_utils/test_node_state.py).
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
from typing import Dict

import pytest
from docker_node import VENV_BIN, docker_node, run

REPO = pathlib.Path(__file__).resolve().parents[3]
STAMP = "/var/lib/amx-cluster/stamps/tcmalloc.*.json"  # one record per inputs
FULL_STEP = "TASK [amx.cluster.tcmalloc : Read the linker cache]"

pytestmark = pytest.mark.slow

PLAY = """
- hosts: node
  gather_facts: false
  roles:
    - role: amx.cluster.tcmalloc
  post_tasks:
    - name: Show the facts the next plays read
      ansible.builtin.debug:
        msg: "FACTS {{ {'path': tcmalloc_library_path, 'real': tcmalloc_library_realpath} | to_json }}"
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with docker_node(tmp_path_factory.mktemp("stamp"), "stamp", PLAY) as started:
        yield started


def playbook(node, *extra: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "HOME": str(node["folder"]),
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
    }
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    argv = [str(VENV_BIN / "ansible-playbook"), "-i", "inventory.json", "play.yml", *extra]
    done = subprocess.run(argv, cwd=node["folder"], env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    return done


def on(node, script: str) -> str:
    return run(["docker", "exec", node["name"], "sh", "-c", script]).stdout


def recap(output: str) -> Dict[str, int]:
    line = [line for line in output.splitlines() if line.startswith("node ")][-1]
    return {key: int(value) for key, value in (part.split("=") for part in line.split(":", 1)[1].split())}


def facts(output: str) -> dict:
    """The facts the post task printed (the JSON result format: the message is one JSON string)."""
    found = re.search(r'"msg": ("FACTS .*")', output)
    assert found, output[-3000:]
    return json.loads(json.loads(found.group(1))[len("FACTS ") :])


@pytest.fixture(scope="module")
def first(node):
    return playbook(node)


def test_the_first_run_installs_and_stamps_the_node(node, first):
    assert FULL_STEP in first.stdout
    assert "no stamp of an earlier run" in " ".join(first.stdout.split())
    assert on(node, f"stat -c '%U %a' {STAMP}").split() == ["root", "600"]
    assert on(node, "dpkg-query -W -f='${db:Status-Abbrev}' libgoogle-perftools-dev").startswith("ii")


def test_a_second_run_is_skipped_by_the_stamp_and_sets_the_facts(node, first):
    second = playbook(node)
    assert FULL_STEP not in second.stdout
    assert "the node is as the stamp of" in " ".join(second.stdout.split()), second.stdout[-3000:]
    assert recap(second.stdout)["changed"] == 0
    assert facts(second.stdout) == facts(first.stdout)


def test_a_removed_package_takes_the_full_path_and_is_put_back(node, first):
    # The -dev package only: the runtime library stays, the role's own checks would still pass.
    on(node, "dpkg -r libgoogle-perftools-dev >/dev/null")
    again = playbook(node)
    words = " ".join(again.stdout.split())
    assert "the node changed since the stamp: packages: libgoogle-perftools-dev" in words, again.stdout[-3000:]
    assert FULL_STEP in again.stdout
    assert on(node, "dpkg-query -W -f='${db:Status-Abbrev}' libgoogle-perftools-dev").startswith("ii")
