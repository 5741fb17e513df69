#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ec2_cluster_state
short_description: Record, list and remove the controller files an amx.cluster EC2 cluster wrote
version_added: 0.1.0
description:
  - The controller files of a cluster live in one folder per region, C(<state_dir>/<region>/), with a manifest
    (C(.amx-cluster-files.json)) naming the files the collection wrote there.
  - V(record) adds files to the manifest (and makes the folders, mode 0700, when missing).
  - V(status) lists the regions of the cluster folder that hold a manifest, and this region's recorded files.
  - V(remove) removes the recorded files of the region only, never another file, keeps a recorded private key
    while the cluster still has instances in the region (asked from EC2), and removes a folder only when empty.
author:
  - amx.cluster developers (@amx-cluster)
options:
  action:
    description: What to do.
    type: str
    choices: [record, status, remove]
    required: true
  state_dir:
    description: The cluster's controller folder (C(ec2_cluster_state_dir)); the region's folder is inside it.
    type: path
    required: true
  cluster_name:
    description: The cluster's name.
    type: str
    required: true
  region:
    description:
      - The cluster's region, also the name of its folder in O(state_dir).
      - When not given, E(AWS_REGION) or E(AWS_DEFAULT_REGION).
    required: true
  files:
    description: For O(action=record), file names inside the region folder and their kind.
    type: dict
    default: {}
notes:
  - Supports check mode; in check mode nothing is written or removed, and the result says what would be.
  - Only O(action=remove) talks to AWS (to count the cluster's instances), and needs boto3; the other actions take
    the connection options, so that C(module_defaults) for C(group/amx.cluster.aws) apply, and leave them unused.
extends_documentation_fragment:
  - amx.cluster.ec2_cluster_aws
  - amazon.aws.common.modules
  - amazon.aws.region.modules
  - amazon.aws.boto3
"""

EXAMPLES = r"""
- name: Record the created private key
  amx.cluster.ec2_cluster_state:
    action: record
    state_dir: ~/.ansible/amx_cluster/demo
    cluster_name: demo
    region: eu-west-1
    files:
      amx-demo.pem: private_key
"""

RETURN = r"""
region_dir:
  description: The region's folder.
  returned: always
  type: str
other_regions:
  description: Other regions of the cluster folder that hold a manifest (O(action=status)).
  returned: success
  type: list
  elements: str
recorded:
  description: The region's recorded files (name -> kind).
  returned: success
  type: dict
removed:
  description: The files removed (O(action=remove)).
  returned: success
  type: list
  elements: str
kept:
  description: Recorded files kept, with the reason (O(action=remove)).
  returned: success
  type: dict
unrecorded:
  description: Files in the region folder that the collection did not record, left alone.
  returned: success
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import env_fallback
from ansible_collections.amazon.aws.plugins.module_utils.modules import AnsibleAWSModule

from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_aws import (
    AWS_ERRORS,
    HAS_BOTO3,
    MISSING_BOTO3,
    AwsAccessError,
    describe_cluster_instances,
    explain,
    module_client,
)
from ansible_collections.amx.cluster.plugins.module_utils.files import write_atomically
from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_state import (
    MANIFEST,
    StateError,
    check_region,
    dump,
    empty_manifest,
    parse_manifest,
    plan_removal,
    record,
    regions_with_state,
    unrecorded,
)

LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]


def read_manifest(path, cluster, region):
    if not os.path.lexists(path):
        return None
    if os.path.islink(path) or not os.path.isfile(path):
        raise StateError(f"{path} is not a regular file: move it away and run again")
    with open(path, encoding="utf-8") as handle:
        return parse_manifest(handle.read(), cluster, region, path)


def write_manifest(path, manifest):
    write_atomically(path, dump(manifest), mode=0o600, prefix=".amx-cluster-files.")


def make_folder(path):
    """Make the folder (0700) and any missing parent; folders that exist keep their owner and mode."""
    missing = []
    current = path
    while not os.path.isdir(current):
        missing.append(current)
        current = os.path.dirname(current)
    for folder in reversed(missing):
        os.mkdir(folder, 0o700)
        os.chmod(folder, 0o700)
    return bool(missing)


def files_in(folder):
    if not os.path.isdir(folder):
        return []
    return sorted(
        name
        for name in os.listdir(folder)
        if os.path.islink(os.path.join(folder, name)) or os.path.isfile(os.path.join(folder, name))
    )


def instances_left(module, params):
    if not HAS_BOTO3:
        module.fail_json(msg=MISSING_BOTO3)
    action = f"listing the instances of cluster {params['cluster_name']!r} before removing its private key"
    client = module_client(module)
    try:
        return len(describe_cluster_instances(client, params["cluster_name"], LIVE_STATES))
    except AwsAccessError as exc:
        module.fail_json(msg=f"{action}: {exc}")
    except AWS_ERRORS as exc:
        module.fail_json(msg=explain(exc, params["region"], action))


def main() -> None:
    module = AnsibleAWSModule(
        argument_spec=dict(
            action=dict(type="str", choices=["record", "status", "remove"], required=True),
            state_dir=dict(type="path", required=True),
            cluster_name=dict(type="str", required=True),
            files=dict(type="dict", default={}),
            # amazon.aws's region, required: it names the region's folder.
            region=dict(
                type="str",
                required=True,
                aliases=["aws_region"],
                fallback=(env_fallback, ["AWS_REGION", "AWS_DEFAULT_REGION"]),
            ),
        ),
        supports_check_mode=True,
        # boto3 only for action=remove (instances_left() checks it).
        check_boto3=False,
    )
    params = module.params
    cluster, region = params["cluster_name"], params["region"]
    state_dir = os.path.abspath(params["state_dir"])
    try:
        check_region(region)
    except StateError as exc:
        module.fail_json(msg=str(exc))
    region_dir = os.path.join(state_dir, region)
    manifest_path = os.path.join(region_dir, MANIFEST)
    result = dict(changed=False, region_dir=region_dir)
    try:
        manifest = read_manifest(manifest_path, cluster, region)
        if params["action"] == "record":
            updated, added = record(manifest or empty_manifest(cluster, region), params["files"])
            result.update(recorded=updated["files"], added=added)
            if added or manifest is None:
                result["changed"] = True
                if not module.check_mode:
                    make_folder(region_dir)
                    write_manifest(manifest_path, updated)
        elif params["action"] == "status":
            entries = []
            if os.path.isdir(state_dir):
                for name in sorted(os.listdir(state_dir)):
                    path = os.path.join(state_dir, name)
                    entries.append((name, os.path.isdir(path) and os.path.isfile(os.path.join(path, MANIFEST))))
            result.update(
                other_regions=regions_with_state(entries, region),
                recorded=manifest["files"] if manifest else {},
                unrecorded=unrecorded(manifest, files_in(region_dir)),
            )
        else:
            present = files_in(region_dir)
            needs_count = manifest is not None and any(
                kind == "private_key" and name in present for name, kind in manifest["files"].items()
            )
            left = instances_left(module, params) if needs_count else 0
            remove, keep = plan_removal(manifest, present, left) if manifest else ([], {})
            result.update(removed=remove, kept=keep, unrecorded=unrecorded(manifest, present))
            if manifest is not None:
                result["changed"] = True
                if not module.check_mode:
                    for name in remove:
                        os.unlink(os.path.join(region_dir, name))
                    if keep:
                        write_manifest(manifest_path, dict(manifest, files={n: manifest["files"][n] for n in keep}))
                    else:
                        os.unlink(manifest_path)
                    for folder in (region_dir, state_dir):
                        try:
                            os.rmdir(folder)  # only when empty: anything else in it stays
                        except OSError:
                            break
    except StateError as exc:
        module.fail_json(msg=f"cluster {cluster} in {region}: {exc}", **result)
    except OSError as exc:
        module.fail_json(msg=f"cluster {cluster} in {region}: {exc.strerror}: {exc.filename}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
