# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every role and entry point imported the ways a user's own playbook imports it: `roles:`, `import_role` and
`include_role`, with facts gathered and not, on a host of the user's own name (not a node name, not localhost);
then each tag a role's README documents, alone; then the ssh_mesh README's key rotation command as written.

The cases of one entry point share a playbook: one play per import style (see import_cases), the plain play a user
writes (an import_role or include_role inside a block whose rescue lets the playbook go on; a `roles:` play last,
as a play whose every host failed ends the run), and between two of them a play that drops the gathered facts and
the failed state of the one before. (What the role set with set_fact in an earlier play stays: it does not reach
the argument validation, which reads the options only.) The playbooks run side by side, one ansible-playbook each.

In every play the role must pass its argument validation and run its own tasks, to a known end: the role's own end
on this machine (read-only roles) or the refusal, by one of the role's checks, of an input that its argument spec
accepts (a relative path, a count below 0, an earlier role missing, a string for a list), so that nothing is
installed here. The proof comes from the probe callback (callback_plugins/play_events.py), play by play: the
validation task's result, the role's tasks after it, and the message of the task that stopped it.
"""

from __future__ import annotations

import concurrent.futures
import copy
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[3]
HERE = pathlib.Path(__file__).resolve().parent
VENV_BIN = REPO / ".venv" / "bin"
VALIDATE = ("ansible.builtin.validate_argument_spec", "validate_argument_spec")
# Names of the user's own: the host is no node1..N, no master, no localhost.
HOST = "gpu-head-07"
STYLES = ("roles", "import_role", "include_role")


@dataclass(frozen=True)
class Entry:
    """A role's entry point, the variables of the user's play, and where the role is expected to stop: `stop` is
    None for a role that runs to its end here, else a piece of the message of the check that refuses the input."""

    role: str
    entry: str = "main"
    vars: Dict[str, Any] = field(default_factory=dict)
    stop: Optional[str] = None
    hosts: str = "cluster"
    # A bad-input entry (label set) runs in one play only, import_role with facts.
    label: str = ""


def folders(base: str) -> Dict[str, Any]:
    """Path variables under the run's own folder, so that nothing lands in the real home or /opt."""
    return {
        "mpi_hostfile_path": f"{base}/hosts",
        "torch_stack_controller_cache": f"{base}/controller/wheelhouse",
        "hf_examples_controller_cache": f"{base}/controller/hf_examples",
        # The node roles' stamps (amx.cluster.node_stamp), not this machine's /var/lib/amx-cluster.
        "node_stamp_dir": f"{base}/stamps",
    }


ENTRIES = (
    Entry(
        "amx_check",
        vars={"amx_check_required": False, "amx_check_min_physical_cores": -1},
        stop="amx_check_min_physical_cores is -1",
    ),
    # The library is installed on the test machine (tests/host-packages.sh); the role finds it and runs a process
    # with it preloaded, read-only.
    Entry("tcmalloc", vars={"tcmalloc_install": False}),
    Entry("tcmalloc", "preflight"),
    Entry("torch_stack", vars={"torch_stack_venv": "relative/venv"}, stop="torch_stack_venv is 'relative/venv'"),
    Entry(
        "torch_stack",
        "preflight",
        vars={"torch_stack_venv": "relative/venv"},
        stop="torch_stack_venv is 'relative/venv'",
    ),
    # Without torch_stack before it, the examples have no transformers version: refused by its first checks.
    Entry("hf_examples", stop="no transformers version to pick the examples tag from"),
    Entry("mpi_hostfile", vars={"mpi_hostfile_slots": -1}, stop="mpi_hostfile_slots is -1"),
    # A one-node cluster: the mesh checks its input, the user and the host keys, and has no worker to wire.
    Entry("ssh_mesh"),
    Entry("train", stop="the training needs the facts of amx.cluster.amx_check"),
    # Internal to the node roles: alone, each entry point says so.
    Entry("node_stamp", stop="amx.cluster.node_stamp is internal to the node roles"),
    Entry("node_stamp", "check", vars={"node_stamp_role": "tcmalloc"}, stop="is internal to the node roles"),
    Entry("node_stamp", "write", vars={"node_stamp_role": "tcmalloc"}, stop="is internal to the node roles"),
    Entry(
        "ec2_cluster",
        vars={"ec2_cluster_name": "not a name", "ec2_cluster_admin_cidr": "203.0.113.7/32"},
        stop='ec2_cluster_name is "not a name"',
        hosts="localhost",
    ),
    Entry(
        "ec2_cluster",
        "bake",
        vars={"ec2_cluster_name": "demo"},
        stop="needs the results of the role's main entry point",
        hosts="localhost",
    ),
    Entry(
        "ec2_cluster",
        "autostop",
        vars={"ec2_cluster_idle_minutes": -1},
        stop="ec2_cluster_idle_minutes (-1) must be 0 (autostop off) or more",
    ),
    Entry(
        "ec2_cluster",
        "teardown",
        vars={"ec2_cluster_name": "not a name"},
        stop="teardown needs the cluster's name and region",
        hosts="localhost",
    ),
)


@dataclass(frozen=True)
class Case:
    entry: Entry
    style: str
    facts: bool
    # Run with --tags TAG (a tag the role's README documents), alone among the role's tags.
    tag: str = ""

    @property
    def id(self) -> str:
        label = f"-{self.entry.label}" if self.entry.label else ""
        tag = f"-tag-{self.tag}" if self.tag else ""
        return f"{self.entry.role}-{self.entry.entry}{label}-{self.style}-{'facts' if self.facts else 'nofacts'}{tag}"


# A string where the spec says a list: the argument validation accepts it (it checks the string split at commas),
# the role would get the string and iterate its characters; the role's preflight (amx.cluster.cluster_shape) refuses
# it first, naming the variable.
BAD_INPUT = (
    Entry(
        "mpi_hostfile",
        vars={"mpi_hostfile_workers": "w1"},
        stop="mpi_hostfile_workers must be a list of inventory host names",
        label="workers-string",
    ),
    Entry(
        "ssh_mesh",
        vars={"ssh_mesh_workers": "w1"},
        stop="ssh_mesh_workers must be a list of inventory host names",
        label="workers-string",
    ),
)


def import_cases(index: int, entry: Entry) -> List[Case]:
    """Every import style of an entry point once, facts gathered and not in turn, the turn starting the other way
    at the next entry point: each entry point runs with facts and without, and across them every style meets both.
    (`roles:` reaches the main entry point only: a play's role entry takes no tasks_from.)"""
    styles = [style for style in STYLES if style != "roles" or entry.entry == "main"]
    return [Case(entry, style, (index + turn) % 2 == 1) for turn, style in enumerate(styles)]


CASES = [case for index, entry in enumerate(ENTRIES) for case in import_cases(index, entry)] + [
    Case(entry, "import_role", True) for entry in BAD_INPUT
]


def documented_tags(role: str) -> List[str]:
    """The tags a role's README documents: its "## Tags" section or its "Tags:" line."""
    readme = (REPO / "roles" / role / "README.md").read_text()
    if "\n## Tags\n" in readme:
        text = readme.split("\n## Tags\n", 1)[1].split("\n## ", 1)[0]
    elif "\nTags: " in readme:
        text = readme.split("\nTags: ", 1)[1].split("\n\n", 1)[0].split("\nTests", 1)[0]
    else:
        return []
    return list(dict.fromkeys(re.findall(rf"`({role}(?:_[a-z_]+)?)`", text)))


# Each documented tag alone, the role's first case (import_role, no facts) under --tags TAG: the role's checks run
# with each of its tags, so the same stop (or the same clean end) is expected.
TAG_CASES = [
    Case(entry, "import_role", False, tag)
    for entry in ENTRIES
    if entry.entry == "main"
    for tag in documented_tags(entry.role)
]
CASES += TAG_CASES


def inventory() -> Dict[str, Any]:
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    return {
        "all": {"hosts": {"localhost": local}},
        "cluster": {"children": {"master": {"hosts": {HOST: local}}, "workers": {"hosts": {}}}},
    }


def user_play(case: Case, role_vars: Dict[str, Any]) -> Dict[str, Any]:
    """The user's play: the role imported in the case's style, its variables given with it. An import_role or
    include_role sits in a block whose rescue ends the play quietly, so that the playbook goes on to the next case
    (a play whose every host failed ends the whole run); a `roles:` play is always a playbook's last."""
    name = f"amx.cluster.{case.entry.role}"
    entry = {} if case.entry.entry == "main" else {"tasks_from": case.entry.entry}
    head: Dict[str, Any] = {"name": case.id, "hosts": case.entry.hosts, "gather_facts": case.facts}
    if case.style == "roles":
        return {**head, "roles": [{"role": name, "vars": role_vars}]}
    task = {"name": f"Run {name}", f"ansible.builtin.{case.style}": {"name": name, **entry}, "vars": role_vars}
    rescue = {"name": "Go on with the next case", "ansible.builtin.meta": "noop", "tags": ["always"]}
    return {**head, "tasks": [{"name": "Use the role", "block": [task], "rescue": [rescue]}]}


def playbooks(cases: List[Case]) -> List[List[Case]]:
    """The cases of one entry point in playbooks: as many as it has `roles:` cases, each of those last in one."""
    last = [case for case in cases if case.style == "roles"]
    rest = [case for case in cases if case.style != "roles"]
    count = max(1, len(last))
    return [rest[i::count] + last[i : i + 1] for i in range(count)]


# Between two cases: the facts and the failed state of the play before are dropped (for every host of the play).
FRESH = {
    "name": "Start the next case afresh",
    "hosts": "all",
    "gather_facts": False,
    "tasks": [
        {"name": "Drop the facts", "ansible.builtin.meta": "clear_facts", "tags": ["always"]},
        {"name": "Drop the failures", "ansible.builtin.meta": "clear_host_errors", "tags": ["always"]},
    ],
}


@dataclass
class Run:
    args: List[str]
    returncode: int
    output: str
    seconds: float
    plays: Dict[str, List[Dict[str, Any]]]

    def explain(self, case_id: str) -> str:
        play = self.output.split(f"PLAY [{case_id}]", 1)[-1].split("PLAY [Start the next case afresh]", 1)[0]
        return (
            f"{' '.join(self.args)}\nexit {self.returncode} after {self.seconds:.1f}s\nPLAY [{case_id}]{play[-6000:]}"
        )


def run_playbook(cases: List[Case], base: pathlib.Path) -> Run:
    folder = base / cases[-1].id
    (folder / "home").mkdir(parents=True)
    (folder / "inventory.yml").write_text(json.dumps(inventory(), indent=1) + "\n")
    plays: List[Dict[str, Any]] = []
    for case in cases:
        plays += [copy.deepcopy(FRESH)] if plays else []
        plays.append(user_play(case, {**folders(str(folder / case.id)), **case.entry.vars}))
    (folder / "site.yml").write_text(yaml.safe_dump(plays, sort_keys=False, width=120))
    args = [str(VENV_BIN / "ansible-playbook"), "site.yml", "-i", "inventory.yml"]
    tags = ",".join(case.tag for case in cases if case.tag)
    return ansible_playbook(folder, args + (["--tags", tags] if tags else []))


def ansible_playbook(folder: pathlib.Path, args: List[str]) -> Run:
    """Run ansible-playbook in folder (HOME is folder/home) with the probe, and sort its events by play."""
    events = folder / "events.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "AWS_", "PIP_"))}
    env.update(
        HOME=str(folder / "home"),
        PATH=f"{VENV_BIN}:{env.get('PATH', '/usr/bin:/bin')}",
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_CALLBACK_PLUGINS=str(HERE / "callback_plugins"),
        ANSIBLE_CALLBACKS_ENABLED="play_events",
        AMX_TEST_EVENTS=str(events),
        # Nothing here may download: pip sees no index.
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_INDEX="1",
    )
    started = time.monotonic()
    proc = subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False)
    seconds = time.monotonic() - started
    by_play: Dict[str, List[Dict[str, Any]]] = {}
    current: List[Dict[str, Any]] = []
    for line in events.read_text().splitlines() if events.exists() else []:
        event = json.loads(line)
        if event["event"] == "play":
            current = by_play.setdefault(event["name"], [])
        else:
            current.append(event)
    return Run(args, proc.returncode, proc.stdout + proc.stderr, seconds, by_play)


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory) -> Dict[str, Run]:
    """The playbooks of every entry point with a selected case, side by side; the run of each case's playbook."""
    if not (VENV_BIN / "ansible-playbook").exists():
        pytest.skip(f"ansible-playbook is not in {VENV_BIN}: run `make setup` first")
    params = [getattr(getattr(item, "callspec", None), "params", {}) for item in request.session.items]
    selected = [p["case"] for p in params if isinstance(p.get("case"), Case)]
    by_entry: Dict[Tuple[str, str, str], List[Case]] = {}
    for case in selected:
        by_entry.setdefault((case.entry.role, case.entry.entry, case.entry.label), []).append(case)
    groups = [group for cases in by_entry.values() for group in playbooks([c for c in cases if not c.tag]) if group]
    # Tags are named after their role: one run takes one tag of each role, each in that role's own play.
    by_role: Dict[str, List[Case]] = {}
    for case in selected:
        if case.tag:
            by_role.setdefault(case.entry.role, []).append(case)
    rounds = max((len(cases) for cases in by_role.values()), default=0)
    groups += [[cases[i] for cases in by_role.values() if i < len(cases)] for i in range(rounds)]
    base = tmp_path_factory.mktemp("role-imports")
    workers = int(os.environ.get("AMX_TEST_PARALLEL", "4"))
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_playbook, cases, base) for cases in groups]
        done = {case.id: future.result() for future, cases in zip(futures, groups) for case in cases}
    print(f"\n{len(groups)} playbooks, {len(done)} plays, in {time.monotonic() - started:.1f} s ({workers} at a time)")
    return done


def message(event: Dict[str, Any]) -> str:
    result = event.get("result", {})
    return " ".join(
        " ".join([str(result.get("msg", ""))] + [str(e) for e in result.get("argument_errors") or []]).split()
    )


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_role_passes_validation_and_runs(runs, case):
    run = runs[case.id]
    entry = case.entry
    explain = run.explain(case.id)
    assert case.id in run.plays, f"the play of the case did not run\n{explain}"
    events = run.plays[case.id]
    mine = [e for e in events if e.get("role") == entry.role]
    validations = [e for e in mine if e["action"] in VALIDATE]
    assert validations, f"the argument validation of {entry.role} did not run\n{explain}"
    assert [e["status"] for e in validations] == ["ok"] * len(validations), (
        f"argument validation of {entry.role} ({entry.entry}) failed: {message(validations[-1])}\n{explain}"
    )
    after = mine[mine.index(validations[0]) + 1 :]
    assert [e for e in after if e["status"] != "skipped"], (
        f"no task of {entry.role} ran after its validation\n{explain}"
    )
    failed = [e for e in events if e["status"] in ("failed", "unreachable")]
    if entry.stop is None:
        assert not failed, explain
    else:
        assert failed, f"expected a stop with {entry.stop!r}\n{explain}"
        assert failed[-1].get("role") == entry.role, explain
        assert " ".join(entry.stop.split()) in message(failed[-1]), (
            f"stopped elsewhere: {message(failed[-1])}\n{explain}"
        )
    changed = [e["task"] for e in events if e["status"] == "ok" and e["result"].get("changed")]
    assert not changed, f"the role changed something here: {changed}\n{explain}"


def test_every_entry_point_is_covered():
    """Each entry point of every role's argument_specs has its cases: a new role or entry point needs a row."""
    specs: List[Tuple[str, str]] = []
    for path in sorted((REPO / "roles").glob("*/meta/argument_specs.yml")):
        specs += [(path.parent.parent.name, entry) for entry in yaml.safe_load(path.read_text())["argument_specs"]]
    assert sorted(specs) == sorted({(e.role, e.entry) for e in ENTRIES})


def test_the_key_rotation_command_of_the_ssh_mesh_readme(tmp_path):
    """The README's command, as written, on a user's one-node fleet: under --tags ssh_mesh the play's own fact
    gathering is left out, so the mesh must pass its validation and gather what it reads itself."""
    readme = (REPO / "roles" / "ssh_mesh" / "README.md").read_text()
    found = re.search(r"`(ansible-playbook playbooks/provision\.yml [^`]*--tags ssh_mesh)`", readme)
    assert found, "the ssh_mesh README no longer shows the rotation command"
    (tmp_path / "home").mkdir()
    (tmp_path / "fleet.yml").write_text(json.dumps(inventory(), indent=1) + "\n")
    words = shlex.split(found.group(1))
    args = [str(VENV_BIN / words[0]), str(REPO / words[1]), *words[2:], "-i", "fleet.yml"]
    run = ansible_playbook(tmp_path, args)
    mesh = [e for events in run.plays.values() for e in events if e.get("role") == "ssh_mesh"]
    assert run.returncode == 0, run.output[-6000:]
    assert [e["status"] for e in mesh if e["action"] in VALIDATE] == ["ok"], run.output[-6000:]
    assert [e for e in mesh if e["task"].endswith("Gather the facts the mesh reads") and e["status"] == "ok"], (
        run.output[-6000:]
    )
