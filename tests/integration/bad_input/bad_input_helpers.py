# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared pieces of the bad-input tests: the cases' shape, the ansible-playbook runner, and the checks.

Every run happens in a folder of its own (its working directory), with a temporary HOME, pip cut off from every
index, and every path variable of the roles pointing under the run's folder; the checks watch that folder and the
test playbooks' folder (where a relative path lands with a local connection). A probe callback
(callback_plugins/bad_input_events.py) writes each task result and the recap's counts as JSON lines, which is what
the checks read.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_env import ansible_env
from standin_index import wheel

REPO = pathlib.Path(__file__).resolve().parents[3]
HERE = pathlib.Path(__file__).resolve().parent
VENV_BIN = REPO / ".venv" / "bin"
PLAYBOOKS = REPO / "playbooks"
TEST_PLAYBOOKS = HERE / "playbooks"
LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}

# A failure counts as "in preflight" when it comes from the role's argument validation, from one of its
# tasks/preflight*.yml files, or (amx_check only, a read-only gate that runs first) from its verify step.
PREFLIGHT_FILE = re.compile(r"/roles/(?P<role>[a-z_]+)/tasks/preflight[a-z_]*\.yml:\d+$")
GATE_FILE = re.compile(r"/roles/amx_check/tasks/verify\.yml:\d+$")


@dataclass(frozen=True)
class Case:
    """One bad input: the variables that make it (host variables of the case's host), the role whose preflight
    must refuse it, and the pieces the error must carry (the host, the variable or value, the fix)."""

    id: str
    role: str
    bad: Dict[str, Any]
    expect: Tuple[str, ...]


@dataclass
class Run:
    args: List[str]
    returncode: int
    output: str
    seconds: float
    events: List[Dict[str, Any]] = field(default_factory=list)
    stats: Dict[str, Dict[str, int]] = field(default_factory=dict)

    def explain(self) -> str:
        return f"{' '.join(self.args)}\nexit {self.returncode} after {self.seconds:.1f}s\n{self.output[-8000:]}"

    def results(self, host: str) -> List[Dict[str, Any]]:
        return [e for e in self.events if e["event"] == "result" and e["host"] == host]

    def failure(self, host: str) -> Optional[Dict[str, Any]]:
        """The failure that stopped the host (the last failed or unreachable result), or None."""
        failed = [e for e in self.results(host) if e["status"] in ("failed", "unreachable")]
        return failed[-1] if failed else None


def fold(text: str) -> str:
    """Messages are folded over several lines in the output: compare them with single spaces."""
    return " ".join(text.split())


def message(event: Dict[str, Any]) -> str:
    result = event.get("result", {})
    parts = [str(result.get("msg", ""))]
    parts += [str(error) for error in result.get("argument_errors", []) or []]
    return fold(" ".join(parts))


def in_preflight(event: Dict[str, Any], role: str) -> bool:
    path = event.get("path") or ""
    if event.get("role") != role:
        return False
    if event.get("action") in ("ansible.builtin.validate_argument_spec", "validate_argument_spec"):
        return True
    found = PREFLIGHT_FILE.search(path)
    if found and found.group("role") == role:
        return True
    return role == "amx_check" and bool(GATE_FILE.search(path))


def node_paths(folder: pathlib.Path) -> Dict[str, Any]:
    """Every path variable of the roles, under `folder`, and the settings that keep a run off the real machine:
    no OS package installs, no AMX requirement (this CPU has none), pip in direct mode without any index.

    torch's CPU build is listed in a find-links folder of the case (a stand-in wheel of that name, never installed:
    the runs that get as far as pip find the stack already there), as torch_stack's source check requires."""
    wheel(folder / "wheels", "torch", "2.13.0+cpu")
    return {
        "amx_check_required": False,
        "tcmalloc_install": False,
        "torch_stack_profile": "native",
        # torch and transformers are all the training preflight needs; fewer imports, faster runs.
        "torch_stack_overrides": {"accelerate": None, "datasets": None, "evaluate": None, "tokenizers": None},
        "torch_stack_extra_index_urls": [],
        "torch_stack_find_links": [str(folder / "wheels")],
        "torch_stack_install_os_packages": False,
        "torch_stack_install_mode": "direct",
        "torch_stack_venv": str(folder / "venv"),
        "torch_stack_controller_cache": str(folder / "controller" / "wheelhouse"),
        "torch_stack_node_wheelhouse": str(folder / "node" / "wheelhouse"),
        "hf_examples_enabled": False,
        "hf_examples_dir": str(folder / "transformers"),
        "hf_examples_controller_cache": str(folder / "controller" / "hf_examples"),
        "hf_examples_node_wheelhouse": str(folder / "node" / "hf_examples"),
        "hf_examples_install_os_packages": False,
        "mpi_hostfile_path": str(folder / "hosts"),
        "train_require_amx": False,
        "train_install_mpi": False,
        "train_smoke_test": False,
        "train_hostfile": str(folder / "hosts"),
        "train_run_root": str(folder / "runs"),
        "train_results_dir": str(folder / "results"),
        "train_controller_cache": str(folder / "controller" / "train"),
        # The node roles' stamps (amx.cluster.node_stamp), not this machine's /var/lib/amx-cluster.
        "node_stamp_dir": str(folder / "stamps"),
    }


def cluster(master: Dict[str, Dict[str, Any]], workers: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """An inventory in the shape the playbooks and roles expect: group cluster with children master and workers."""
    return {"cluster": {"children": {"master": {"hosts": master}, "workers": {"hosts": workers}}}}


def snapshot(root: pathlib.Path) -> Dict[str, str]:
    """Every path under root with a digest of its content (files) or 'dir', leaving out Ansible's own temporary
    folders (~/.ansible) and Python's byte-code caches."""
    state: Dict[str, str] = {}
    for current, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".ansible", "__pycache__")]
        base = pathlib.Path(current)
        for name in dirs:
            state[str((base / name).relative_to(root))] = "dir"
        for name in files:
            item = base / name
            digest = hashlib.sha256(item.read_bytes()).hexdigest() if item.is_file() else "special"
            state[str(item.relative_to(root))] = digest
    return state


def changes(before: Dict[str, str], after: Dict[str, str], under: Sequence[str] = ("",)) -> List[str]:
    """Paths created, removed or rewritten, limited to those under one of the prefixes."""
    touched = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    return sorted(p for p in touched if any(p == u or p.startswith(u.rstrip("/") + "/") or not u for u in under))


def environment(home: pathlib.Path, events: pathlib.Path) -> Dict[str, str]:
    return ansible_env(
        home,
        drop=("AWS_", "PIP_"),
        ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback_plugins"),
        ANSIBLE_CALLBACKS_ENABLED="bad_input_events",
        ANSIBLE_FORKS="8",
        AMX_TEST_EVENTS=str(events),
        # pip sees no configuration and no index: the tests never download, and a check that is missing makes
        # the install fail at once instead of fetching a stack.
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )


def ansible_playbook(
    folder: pathlib.Path,
    playbook: pathlib.Path,
    inventory: pathlib.Path,
    extra_vars: Optional[Dict[str, Any]] = None,
    check: bool = False,
    timeout: int = 600,
) -> Run:
    """Run ansible-playbook in `folder` (its working directory; HOME is folder/home) and read the probe's events."""
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    events = folder / "events.jsonl"
    events.unlink(missing_ok=True)
    args = [str(VENV_BIN / "ansible-playbook"), str(playbook), "-i", str(inventory)]
    if extra_vars:
        args += ["-e", json.dumps(extra_vars)]
    if check:
        args.append("--check")
    started = time.monotonic()
    proc = subprocess.run(
        args,
        cwd=folder,
        env=environment(home, events),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = [json.loads(line) for line in events.read_text().splitlines()] if events.exists() else []
    events.unlink(missing_ok=True)
    stats: Dict[str, Dict[str, int]] = {}
    for entry in lines:
        if entry["event"] == "stats":
            stats = entry["hosts"]
    return Run(args, proc.returncode, proc.stdout, time.monotonic() - started, lines, stats)


def run_in_folder(
    folder: pathlib.Path,
    playbook: pathlib.Path,
    inventory: Dict[str, Any],
    extra_vars: Optional[Dict[str, Any]] = None,
    check: bool = False,
) -> Tuple[Run, List[str]]:
    """Write the inventory (JSON is YAML) into folder, run the playbook there, and return the run with every path
    that it created, removed or rewritten under folder, or under the test playbooks' folder: with a local
    connection a relative path resolves against the playbook's folder."""
    (folder / "home").mkdir(parents=True, exist_ok=True)
    path = folder / "inventory.yml"
    path.write_text(json.dumps(inventory, indent=1) + "\n")
    before, before_playbooks = snapshot(folder), snapshot(TEST_PLAYBOOKS)
    run = ansible_playbook(folder, playbook, path, extra_vars, check)
    touched = changes(before, snapshot(folder))
    touched += [f"{TEST_PLAYBOOKS}/{p}" for p in changes(before_playbooks, snapshot(TEST_PLAYBOOKS))]
    return run, touched


def assert_refused(run: Run, host: str, role: str, expect: Sequence[str], touched: Sequence[str]) -> None:
    """The three promises of a refused bad input, for one host of a run:
    (a) the run failed, (b) this host's failure comes from the role's preflight and its message carries every
    expected piece (the host, the variable or value, the fix), (c) the recap counts no change on any host and no
    path under the watched folders was created, removed or rewritten."""
    assert run.returncode != 0, run.explain()
    failure = run.failure(host)
    assert failure is not None, f"no failure for {host}\n{run.explain()}"
    assert failure["status"] == "failed", f"{host}: {failure}\n{run.explain()}"
    assert in_preflight(failure, role), f"{host} failed outside the preflight of {role}: {failure}"
    text = message(failure)
    missing = [piece for piece in expect if fold(piece) not in text]
    assert not missing, f"{host}: the message lacks {missing}:\n{text}"
    assert run.stats, run.explain()
    changed = {name: counts["changed"] for name, counts in run.stats.items() if counts["changed"]}
    assert not changed, f"changes reported: {changed}\n{run.explain()}"
    assert not touched, f"paths created, removed or rewritten: {touched}"
