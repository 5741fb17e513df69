#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_state
short_description: A node's live fingerprint, and the stamp that lets a node role skip work that cannot have changed
version_added: 0.2.0
description:
  - In one call, reads the stamp that a node role (M(amx.cluster.node_state) with O(write=true)) left after its
    checks passed, takes the live fingerprint of what that stamp's probe names and says whether the role may skip
    its steps (RV(skip)) and why (RV(reason)).
  - "The fingerprint is the collection's one node probe (module_utils C(node_probe), which the launch check takes
    too): the kernel release always, and what the probe asks for: the versions of distro packages
    (one C(dpkg-query) or C(rpm) call), a virtualenv (the names of its C(*.dist-info) folders, and its C(pyvenv.cfg)),
    the hash, mode and owner of files and of the manifest (a symlink by its target, never followed), and the AMX probe
    (the facts of M(amx.cluster.cpu_facts) that say whether AMX is usable, from C(/proc/cpuinfo), the kernel release,
    the CPU affinity and the C(arch_prctl) probe)."
  - What cannot be read (a FIFO, a device or a folder where a file is expected, a path that gives an error, no
    package manager) is never opened nor taken as unchanged; the role runs in full.
  - A role keeps one stamp per inputs hash (O(stamp_dir)/O(role).<16 hex digits>.json, the newest 4), so that two
    checkouts or controllers with other inputs do not replace each other's.
  - The role may skip only when the stamp is a regular file owned by root with mode 0600, intact (its digest
    matches), of the same role and inputs hash, written during this boot (C(/proc/sys/kernel/random/boot_id)), and
    its fingerprint equals the live one, whatever its age. Anything else is the full path.
  - With O(write=true), takes the fingerprint of O(probe) and writes the stamp of O(role) and O(inputs_hash) (JSON,
    root-owned, 0600, replaced atomically) under O(stamp_dir), and removes that role's stamps past the newest 4.
    It reports C(changed) when the record (inputs, probe, fingerprint, boot id, facts) differs from the stamp
    already there; a stamp renewed with only a new time is not a change.
author:
  - amx.cluster developers (@amx-cluster)
options:
  role:
    description: The role whose stamp is read or written (the file is O(stamp_dir)/O(role).<hash>.json, its name
      from O(inputs_hash)).
    type: str
    required: true
  inputs_hash:
    description:
      - The hash of the role's inputs (collection version, the collection's plugin code, role files, resolved
        variables), from M(amx.cluster.node_record). It names the stamp read or written; a stamp
        of other inputs never lets the role skip.
    type: str
    required: true
  stamp_dir:
    description: The folder of the stamps on the node (created 0700 root when a stamp is written).
    type: path
    default: /var/lib/amx-cluster/stamps
  force:
    description: Never skip (a forced full run); the stamp is still read and the fingerprint taken.
    type: bool
    default: false
  write:
    description: Write the stamp of O(role) with the fingerprint of O(probe), instead of deciding.
    type: bool
    default: false
  probe:
    description:
      - What the fingerprint covers, kept in the stamp (a later read probes what the stamp names). Used with
        O(write=true).
    type: dict
    default: {}
    suboptions:
      packages:
        description: Distro packages whose installed versions are compared.
        type: list
        elements: str
        default: []
      venv:
        description: A virtualenv whose distributions and C(pyvenv.cfg) are compared.
        type: path
      manifest:
        description: A file whose sha256 is compared (the stack manifest).
        type: path
      files:
        description: Files whose sha256, mode and owner are compared (a missing file is part of the fingerprint; a
          symlink is compared by its target and not followed; a file that cannot be read means the full path).
        type: list
        elements: path
        default: []
      amx:
        description: Compare the AMX probe and the CPU facts behind it.
        type: bool
        default: false
      stamps:
        description:
          - Stamps of other roles under O(stamp_dir) that must still hold, as a dict of role name to
            C({inputs_hash}). Each is read and decided as its own role decides it (intact, root's, this boot, of
            that C(inputs_hash), and the node as its fingerprint found it); the stamp's
            digest is compared. The provision stamp names the node roles' stamps this way. With O(write=true), no
            stamp is written while one of them does not hold (RV(written) is false and RV(reason) says which).
        type: dict
        default: {}
  facts:
    description:
      - The facts the role published, kept in the stamp and returned in RV(facts) when the role skips, so that a
        later task sets them again. Used with O(write=true).
    type: dict
    default: {}
  node_facts:
    description:
      - Host facts kept in the stamp and returned as C(ansible_facts) when the role skips (amx.cluster.amx_check
        keeps C(amx_cpu)). Used with O(write=true).
    type: dict
    default: {}
  disk_path:
    description: The path whose free disk space is returned in RV(disk_free_bytes) (not compared).
    type: path
    default: /
attributes:
  check_mode:
    support: full
    description: Reading changes nothing; in check mode a write reports whether it would change the stamp and
      writes nothing.
  diff_mode:
    support: none
    description: The stamp is bookkeeping of the collection; there is no diff to show.
notes:
  - Run it with become (root), as the stamps are root's. A stamp that is not root's with mode 0600 is not trusted.
  - The free disk space is returned for the launch's checks; it changes all the time and is never compared.
seealso:
  - module: amx.cluster.cpu_facts
"""

EXAMPLES = r"""
- name: Decide whether tcmalloc must run again
  amx.cluster.node_state:
    role: tcmalloc
    inputs_hash: "{{ tcmalloc_inputs_hash }}"
  become: true
  register: tcmalloc_state

- name: Stamp the node after the checks passed
  amx.cluster.node_state:
    role: tcmalloc
    inputs_hash: "{{ tcmalloc_inputs_hash }}"
    write: true
    probe:
      packages: [libgoogle-perftools-dev]
      files: ["{{ tcmalloc_library_realpath }}"]
    facts:
      tcmalloc_library_path: "{{ tcmalloc_library_path }}"
  become: true
  when: not tcmalloc_state.skip
"""

RETURN = r"""
written:
  description: With O(write=true), whether the stamp was written (false when a stamp of O(probe.stamps) does not hold).
  returned: always
  type: bool
  sample: true
skip:
  description: True when the stamp holds and the role may skip its steps; always false with O(write=true).
  returned: always
  type: bool
  sample: true
reason:
  description: Why the role runs in full (no stamp, an edited one, a reboot, its age, the inputs, what changed) or
    how old the stamp it trusts is.
  returned: always
  type: str
  sample: "the node changed since the stamp: packages: libgoogle-perftools-dev"
boot_id:
  description: The node's boot id.
  returned: always
  type: str
  sample: 0f6c2d2e-3c1b-4a57-9a4e-8e2f5b8f7b10
fingerprint:
  description: The live fingerprint of the probe (of the stamp when reading, of O(probe) when writing); empty when
    there is no usable stamp to take the probe from.
  returned: always
  type: dict
  sample: {"packages": {"libgoogle-perftools-dev": "2.10-1"}}
facts:
  description: The facts kept in the stamp when RV(skip) is true; empty otherwise.
  returned: always
  type: dict
  sample: {"tcmalloc_library_path": "/lib/x86_64-linux-gnu/libtcmalloc.so.4"}
stamp_path:
  description: The stamp's file (of O(role) and O(inputs_hash)).
  returned: always
  type: str
  sample: /var/lib/amx-cluster/stamps/tcmalloc.3f1c0a9b2d4e5f60.json
disk_free_bytes:
  description: Free bytes for an unprivileged user on the file system of O(disk_path); null when it cannot be read.
  returned: always
  type: int
  sample: 41234567168
"""

# Ansible modules import after their documentation (validate-modules checks it).
import contextlib
import os
import re
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.amx.cluster.plugins.module_utils import node_probe
from ansible_collections.amx.cluster.plugins.module_utils.cpu_info import (
    CpuInfoError,
    gather_cpu_facts,
    probe_amx,
)
from ansible_collections.amx.cluster.plugins.module_utils.files import ABSENT, read_root_record, write_atomically
from ansible_collections.amx.cluster.plugins.module_utils.node_state import (
    StampError,
    amx_fingerprint,
    build_stamp,
    check_probe,
    parse_boot_id,
    parse_stamp,
    probe_spec,
    record_name,
    records_to_remove,
    same_record,
    stamp_text,
)

CPUINFO = "/proc/cpuinfo"
ROLE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def amx_state():
    """The facts of module_utils.cpu_info (as cpu_facts computes them, lscpu aside) that decide AMX: cpu_info is
    not standard library only, so node_probe (sent as it is to the workers) cannot read them."""
    try:
        with open(CPUINFO) as handle:
            cpuinfo = handle.read()
        uname = os.uname()
        facts = gather_cpu_facts(
            cpuinfo,
            None,
            machine=uname.machine,
            kernel_release=uname.release,
            probe=probe_amx(uname.machine),
            allowed_cpus=sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        )
    except (OSError, CpuInfoError) as exc:
        return {node_probe.UNREADABLE: type(exc).__name__}
    return amx_fingerprint(facts)


def named_stamps_state(stamp_dir, stamps, boot_id, now):
    """{role: {"holds": true, "digest"} | {"holds": false, "reason"}} for the stamps a probe names: each read and
    decided as its own role decides it (its inputs hash as the probe gives it)."""
    state = {}
    for role, want in stamps.items():
        stamp, why = read_stamp(stamp_dir, role, want["inputs_hash"])
        if stamp is not None and stamp["probe"]["stamps"]:
            stamp, why = None, "it names stamps of its own"
        if stamp is None:
            state[role] = {"holds": False, "reason": why}
            continue
        live = fingerprint(stamp["probe"], stamp_dir, boot_id, now)
        holds, why = node_probe.decide(stamp, want["inputs_hash"], live, boot_id, now=now)
        state[role] = {"holds": True, "digest": stamp["digest"]} if holds else {"holds": False, "reason": why}
    return state


def fingerprint(probe, stamp_dir, boot_id, now):
    """node_probe's fingerprint of a stamp's probe, with the AMX facts and the stamps it names."""
    live = node_probe.fingerprint(node_probe.probe(probe_spec(probe)))
    # This module's Python is Ansible's interpreter, not a role's: the virtualenv's own is in its pyvenv.cfg.
    live.pop("python")
    if probe["amx"]:
        live["amx"] = amx_state()
    if probe["stamps"]:
        live["stamps"] = named_stamps_state(stamp_dir, probe["stamps"], boot_id, now)
    return live


def read_stamp(stamp_dir, role, inputs):
    """(stamp or None, why not) of the record of `role` for `inputs`: only a regular file of root's with mode 0600
    is read."""
    path = os.path.join(stamp_dir, record_name(role, inputs))
    text, why = read_root_record(path)
    if text is None and why == ABSENT:
        others = records_to_remove(role, stamp_entries(stamp_dir), keep=0)
        if others:
            why = "the role's inputs changed (collection version or code, role files or variables): no stamp of them"
            return None, why
        return None, "no stamp of an earlier run"
    if text is None:
        return None, f"the stamp {path} {why}: not trusted"
    try:
        return parse_stamp(text, role), ""
    except StampError as exc:
        return None, f"{exc}: not trusted"


def stamp_entries(stamp_dir):
    """{name: modification time} of the files of the stamp folder ({} when there is none)."""
    try:
        names = os.listdir(stamp_dir)
    except OSError:
        return {}
    entries = {}
    for name in names:
        try:
            entries[name] = os.lstat(os.path.join(stamp_dir, name)).st_mtime
        except OSError:
            continue
    return entries


def write_stamp(directory, path, text, role):
    os.makedirs(directory, mode=0o700, exist_ok=True)
    write_atomically(path, text, mode=0o600, prefix=".stamp-")
    # The newest records of the role stay, one per inputs: another checkout's record is not this one's to replace.
    for name in records_to_remove(role, stamp_entries(directory)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(directory, name))


class NodeStateError(Exception):
    """What stops the module, said so that a person can act on it."""


def run(params, check_mode):
    """The module's result for its parameters: read and decide, or write (not in check mode) the stamp."""
    role = params["role"]
    if not ROLE_NAME.match(role):
        raise NodeStateError(f"role '{role}' is not a role name (lower case letters, digits and _)")
    path = os.path.join(params["stamp_dir"], record_name(role, params["inputs_hash"]))
    try:
        boot_id = parse_boot_id(node_probe.boot_id())
    except StampError as exc:
        raise NodeStateError(f"cannot read the boot id of this node ({exc}); it needs Linux with /proc") from None
    result = dict(
        changed=False,
        skip=False,
        written=False,
        boot_id=boot_id,
        facts={},
        stamp_path=path,
        disk_free_bytes=node_probe.disk_free(params["disk_path"]),
    )

    if params["write"]:
        try:
            probe = check_probe({key: value for key, value in (params["probe"] or {}).items() if value is not None})
        except StampError as exc:
            raise NodeStateError(f"the probe of role {role} is wrong: {exc}") from None
        now = time.time()
        live = fingerprint(probe, params["stamp_dir"], boot_id, now)
        unheld = node_probe.unheld_stamps(live.get("stamps") or {})
        if unheld:
            # A record that rests on stamps that do not hold would let the next run skip what must run.
            result.update(reason="no stamp written: " + "; ".join(unheld), fingerprint=live)
            return result
        stamp = build_stamp(
            role, params["inputs_hash"], probe, live, boot_id, now, params["facts"], params["node_facts"]
        )
        earlier, _why = read_stamp(params["stamp_dir"], role, params["inputs_hash"])
        renewed = earlier is not None and same_record(earlier, stamp)
        if not check_mode:
            try:
                write_stamp(params["stamp_dir"], path, stamp_text(stamp), role)
            except OSError as exc:
                raise NodeStateError(f"cannot write the stamp {path} ({exc}): run the task with become: true") from None
        result.update(
            changed=not renewed,
            written=not check_mode,
            reason="stamp renewed (the same record, a new time)" if renewed else "stamp written",
            fingerprint=live,
        )
        return result

    now = time.time()
    stamp, why = read_stamp(params["stamp_dir"], role, params["inputs_hash"])
    live = fingerprint(stamp["probe"], params["stamp_dir"], boot_id, now) if stamp is not None else None
    if stamp is None and not params["force"]:
        skip, reason = False, why
    else:
        skip, reason = node_probe.decide(stamp, params["inputs_hash"], live, boot_id, params["force"], now)
    result.update(skip=skip, reason=reason, fingerprint=live or {})
    if skip:
        result["facts"] = stamp["facts"]
        result["ansible_facts"] = stamp["node_facts"]
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            role=dict(type="str", required=True),
            inputs_hash=dict(type="str", required=True),
            stamp_dir=dict(type="path", default="/var/lib/amx-cluster/stamps"),
            force=dict(type="bool", default=False),
            write=dict(type="bool", default=False),
            probe=dict(
                type="dict",
                default={},
                options=dict(
                    packages=dict(type="list", elements="str", default=[]),
                    venv=dict(type="path"),
                    manifest=dict(type="path"),
                    files=dict(type="list", elements="path", default=[]),
                    amx=dict(type="bool", default=False),
                    stamps=dict(type="dict", default={}),
                ),
            ),
            facts=dict(type="dict", default={}),
            node_facts=dict(type="dict", default={}),
            disk_path=dict(type="path", default="/"),
        ),
        supports_check_mode=True,
    )
    try:
        result = run(module.params, module.check_mode)
    except NodeStateError as exc:
        module.fail_json(msg=f"node_state: {exc}")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
