# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the train role writes for the blog preset, rendered from the roles' own tasks: the golden test's source.

Ansible's Templar renders the settings that the train role's preflight.yml gives its plan (amx.cluster.train_plan)
over its defaults, vars/main.yml and vars/Debian.yml, with the preset on top as extra vars; the plan
(module_utils/train_plan.py) then computes the layout, the dialect, the launcher, the script's arguments and the
launches; tcmalloc's path is what amx.cluster.tcmalloc's
tasks/configure.yml picks from a node's linker cache. What only live nodes give is fabricated in :func:`node_facts`.

It runs as its own process (``python blog_render.py PRESET [OVERRIDES_JSON]``, printing JSON): Ansible's collection
loader must own the ``ansible_collections`` package to resolve ``amx.cluster.*`` filters, which a pytest session
that imported it from the checkout cannot give it.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "unit" / "fixtures" / "cpu" / "spr_metal_r7iz"
TRAIN = REPO / "roles" / "train"
TCMALLOC_ROLE = REPO / "roles" / "tcmalloc"

# What only live nodes give, fabricated: the master's private address (the blog's), the venv and the examples
# checkout (the roles' defaults), the training user's home on Ubuntu, the run id, oneCCL's setvars.sh (what
# prepare.yml's python -c prints), and `ldconfig -p` on Ubuntu 20.04 with libgoogle-perftools-dev (its -dev package
# adds the unversioned libtcmalloc.so beside the runtime's libtcmalloc.so.4).
MASTER_ADDR = "172.31.3.190"
VENV = "/opt/amx-cluster/venv"
EXAMPLES = "/opt/amx-cluster/transformers/examples/pytorch/question-answering"
HOME = "/home/ubuntu"
RUN_ID = "blog-1"
RUN_DIR = f"{HOME}/amx-cluster-runs/{RUN_ID}"
SETVARS = f"{VENV}/lib/python3.8/site-packages/oneccl_bindings_for_pytorch/env/setvars.sh"
LDCONFIG_UBUNTU_2004 = """\
1234 libs found in cache `/etc/ld.so.cache'
\tlibtcmalloc_minimal.so.4 (libc6,x86-64) => /lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
\tlibtcmalloc_minimal.so (libc6,x86-64) => /lib/x86_64-linux-gnu/libtcmalloc_minimal.so
\tlibtcmalloc_and_profiler.so.4 (libc6,x86-64) => /lib/x86_64-linux-gnu/libtcmalloc_and_profiler.so.4
\tlibtcmalloc.so.4 (libc6,x86-64) => /lib/x86_64-linux-gnu/libtcmalloc.so.4
\tlibtcmalloc.so (libc6,x86-64) => /lib/x86_64-linux-gnu/libtcmalloc.so
"""
HOSTS = ["amx-master", "amx-worker-1", "amx-worker-2", "amx-worker-3"]


def trusted(value):
    """A value read from the role's YAML as Ansible reads it: its text may be a template."""
    try:
        from ansible.template import trust_as_template
    except ImportError:  # ansible-core before 2.19 templates every string
        return value
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {key: trusted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [trusted(item) for item in value]
    return value


def load(path: pathlib.Path):
    return yaml.safe_load(path.read_text())


def find_task(path: pathlib.Path, name: str, inherited: dict | None = None) -> tuple:
    """The task named ``name`` in a task file (inside blocks too) and the vars of the blocks around it."""

    def walk(tasks, block_vars):
        for task in tasks or []:
            merged = {**block_vars, **(task.get("vars") or {})} if "block" in task else block_vars
            if task.get("name") == name:
                return task, block_vars
            for key in ("block", "rescue", "always"):
                found = walk(task.get(key), merged)
                if found:
                    return found
        return None

    found = walk(load(path), dict(inherited or {}))
    assert found, f"{path.name} has no task named {name!r}: the test follows the role's task names"
    return found


def _templar(variables: dict):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    return Templar(loader=DataLoader(), variables=variables)


class Host:
    """One host's variables as the play sees them, and the role's set_fact tasks rendered into them."""

    def __init__(self, layers: list, preset: dict):
        self.vars: dict = {}
        for layer in layers:
            self.vars.update(trusted(layer))
        self.preset = trusted(preset)

    def render(self, value, extra: dict | None = None):
        # Extra vars (the preset) win over everything, as -e does.
        variables = {**self.vars, **trusted(extra or {}), **self.preset}
        return _templar(variables).template(trusted(value))

    def set_fact(self, path: pathlib.Path, name: str, extra: dict | None = None) -> dict:
        task, block_vars = find_task(path, name)
        local = {**block_vars, **(task.get("vars") or {}), **(extra or {})}
        facts = {key: self.render(value, local) for key, value in task["ansible.builtin.set_fact"].items()}
        self.vars.update(facts)
        return facts


def tcmalloc_library_path(preset: dict) -> str:
    """amx.cluster.tcmalloc's pick on the node: its tasks/configure.yml over `ldconfig -p`."""
    host = Host(
        [
            load(TCMALLOC_ROLE / "defaults" / "main.yml"),
            *(load(path) for path in sorted((TCMALLOC_ROLE / "vars").glob("*.yml"))),
            {"ansible_facts": {"architecture": "x86_64", "os_family": "Debian"}, "inventory_hostname": HOSTS[0]},
            {"__tcmalloc_ldconfig": {"stdout_lines": LDCONFIG_UBUNTU_2004.splitlines()}},
        ],
        preset,
    )
    configure = TCMALLOC_ROLE / "tasks" / "configure.yml"
    host.set_fact(configure, "Pick the tcmalloc library for this architecture")
    stat_task = find_task(configure, "Resolve the library file")[0]
    chosen = host.render(stat_task["ansible.builtin.stat"]["path"], stat_task.get("vars"))
    # The stat's path is the pick; publish it as the role does (tcmalloc_library_path: stat.path).
    publish = find_task(configure, "Publish the tcmalloc path")[0]
    host.vars["__tcmalloc_stat"] = {"stat": {"path": chosen, "lnk_source": chosen}}
    return host.render(publish["ansible.builtin.set_fact"]["tcmalloc_library_path"])


def node_facts(preset: dict, recipe_stack: dict, topology: dict) -> dict:
    """What the roles before train leave on each node (fabricated: see the constants)."""
    from ansible_collections.amx.cluster.plugins.module_utils.stack_profile import resolve_profile

    profile = resolve_profile(recipe_stack["__torch_stack_profiles"], preset["torch_stack_profile"])
    return {
        "amx_check_topology": topology,
        "amx_check_amx_usable": True,
        "torch_stack_manifest_hash": "0" * 64,
        "torch_stack_versions": dict(profile["pins"]),
        "torch_stack_has_oneccl": True,
        "torch_stack_has_ipex": True,
        "torch_stack_venv_python": f"{VENV}/bin/python",
        "torch_stack_packages": {},
        "tcmalloc_library_path": tcmalloc_library_path(preset),
        "kernel": "6.5.0",
        "user": ["ubuntu", "1000", "1000", "", HOME, "/bin/bash"],
    }


def render_role(preset: dict, recipe_stack: dict) -> dict:
    """The train role's launch of the job and of the single-node run on the master: the settings its preflight.yml
    gives amx.cluster.train_plan, rendered over its defaults and vars, then the plan itself."""
    from ansible_collections.amx.cluster.plugins.module_utils import cpu_info
    from ansible_collections.amx.cluster.plugins.module_utils.cluster_shape import cluster_shape
    from ansible_collections.amx.cluster.plugins.module_utils.train_plan import plan

    topology = cpu_info.topology(
        cpu_info.parse_cpuinfo((FIXTURE / "cpuinfo.txt").read_text()),
        cpu_info.parse_lscpu_json((FIXTURE / "lscpu.json").read_text()),
    )
    groups = {"all": HOSTS, "cluster": HOSTS, "master": HOSTS[:1], "workers": HOSTS[1:]}
    host = Host(
        [
            load(TRAIN / "defaults" / "main.yml"),
            load(TRAIN / "vars" / "main.yml"),
            load(TRAIN / "vars" / "Debian.yml"),
            {
                "inventory_hostname": HOSTS[0],
                "groups": groups,
                "role_path": str(TRAIN),
                "playbook_dir": str(REPO / "playbooks"),
                "ansible_facts": {"os_family": "Debian", "architecture": "x86_64", "user_id": "ubuntu"},
            },
        ],
        preset,
    )
    task = find_task(TRAIN / "tasks" / "preflight.yml", "Check every gate and compute the run's plan")[0]
    settings = host.render(task["amx.cluster.train_plan"]["settings"])
    facts = node_facts(preset, recipe_stack, topology)
    shape = cluster_shape(groups, {name: {"ssh_mesh_address": MASTER_ADDR} for name in HOSTS})
    context = {
        "shape": shape,
        "play_hosts_all": HOSTS,
        "play_hosts": HOSTS,
        "run_id": RUN_ID,
        "now": 0.0,
        "example_dir": EXAMPLES,
        "mpich_launcher": host.render("{{ __train_mpich_launcher }}"),
        "role_files": {},
    }
    found = plan(settings, {name: facts for name in HOSTS}, {"setvars": SETVARS}, context)
    assert not found["problems"], found["problems"]
    return {
        "job": found["launch"],
        "smoke": found["smoke_launch"],
        "single": found["single"]["launch"] if found["single"] else None,
        "single_script": found["single"]["launch"]["script"] if found["single"] else None,
        "layout": found["layout"],
        "checkpoint_steps": int(host.render("{{ train_checkpoint_steps }}")),
        "ld_preload": facts["tcmalloc_library_path"],
    }


def main(argv: list) -> int:
    """``blog_render.py PRESET [OVERRIDES_JSON]``: the rendered launches as JSON on standard output."""
    from ansible.plugins.loader import init_plugin_loader

    # amx.cluster.* resolve to this checkout, linked under .collections by `make setup`, as ansible-playbook finds it.
    init_plugin_loader([os.fspath(REPO / ".collections")])
    preset = load(pathlib.Path(argv[0]))
    preset.update(json.loads(argv[1]) if len(argv) > 1 else {})
    recipe_stack = load(REPO / "roles" / "torch_stack" / "vars" / "profiles.yml")
    rendered = render_role(preset, recipe_stack)
    print(json.dumps(rendered, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
