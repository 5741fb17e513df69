# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
name: ec2_cluster
short_description: The instances of one amx.cluster EC2 cluster, named master and node1..N
version_added: 0.1.0
description:
  - Finds the running instances tagged C(amx.cluster/cluster=<cluster_name>) with server-side filters
    and large pages (one DescribeInstances call per 1000 instances), and builds the inventory the
    collection's playbooks expect.
  - Groups C(master), C(workers) and C(cluster) (names configurable), stopped nodes only in C(stopped). The
    master is named C(master);
    workers are named C(node<i>) from their C(amx.cluster/node-index) tag, or, for untagged workers, by
    launch order (launch time, launch index within a request, instance id), never by launch time alone.
  - Host variables are namespaced C(ec2_*) (C(ec2_tags), C(ec2_instance_id), C(ec2_node_index) ...)
    plus C(ansible_host).
  - Credentials come from boto3's usual chain (environment, shared credentials and config files, a
    named O(profile), instance roles).
  - The configuration file name must end with C(ec2_cluster.yml) or C(ec2_cluster.yaml).
  - Any error (a bad option, AWS refusing the request, an instance that cannot be placed) fails the parse with
    the cause. Ansible then goes on without this source unless told otherwise; to stop the run, set
    C(any_unparsed_is_failed = true) in the C([inventory]) section of C(ansible.cfg) (the collection's checkout
    does) or E(ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED=true), and the real cause is what the user sees.
author:
  - amx.cluster developers (@amx-cluster)
requirements:
  - boto3 >= 1.28.0
  - botocore >= 1.31.0
extends_documentation_fragment:
  - inventory_cache
  - constructed
options:
  plugin:
    description: The name of this plugin; it must be V(amx.cluster.ec2_cluster) to use it.
    type: str
    required: true
    choices: [amx.cluster.ec2_cluster]
  cluster_name:
    description:
      - The cluster to list, the value of the instances' C(amx.cluster/cluster) tag, matched exactly.
      - 1-40 letters, digits or hyphens, starting with a letter or digit, as for C(ec2_cluster_name) of the
        C(amx.cluster.ec2_cluster) role; other names are refused.
    type: str
    required: true
    env:
      - name: AMX_EC2_CLUSTER_NAME
  regions:
    description:
      - The regions to look in. When empty, boto3's default region (E(AWS_REGION),
        E(AWS_DEFAULT_REGION) or the profile's region).
    type: list
    elements: str
    default: []
  profile:
    description: A named profile of the AWS config files; boto3's default chain when not set.
    type: str
    aliases: [aws_profile]
  endpoint_url:
    description:
      - The URL of the EC2 API, for a local stand-in such as moto (C(http://127.0.0.1:5000)).
      - When not set boto3 decides (E(AWS_ENDPOINT_URL_EC2), E(AWS_ENDPOINT_URL), or AWS itself).
    type: str
  use_private_address:
    description:
      - Set C(ansible_host) to the private IP address (a controller inside the VPC).
      - When V(false), the public IP address where there is one, the private one otherwise.
    type: bool
    default: false
  instance_states:
    description: The instance states of the nodes put in the master, workers and cluster groups.
    type: list
    elements: str
    default: [running]
  stopped_states:
    description:
      - The instance states of the nodes put in O(stopped_group) instead (with their C(ec2_state)), named among the
        others, and named in a warning that says how to start them again (C(provision.yml)).
      - A state also in O(instance_states) counts there. V([]) leaves stopped nodes out, without a word.
    type: list
    elements: str
    default: [stopping, stopped]
    version_added: 0.2.0
  stopped_group:
    description: The group of the nodes in O(stopped_states) (an autostop stopped them, or a user).
    type: str
    default: stopped
    version_added: 0.2.0
  page_size:
    description: Instances asked for per DescribeInstances call (5 to 1000).
    type: int
    default: 1000
  master_group:
    description: The group of the master.
    type: str
    default: master
  workers_group:
    description: The group of the workers.
    type: str
    default: workers
  cluster_group:
    description: The group of every node, master included.
    type: str
    default: cluster
  export_settings:
    description:
      - Set the variables C(ec2_cluster_name), C(ec2_cluster_region) (when exactly one region is
        given), C(ec2_cluster_endpoint_url) and C(ec2_cluster_aws_profile) (when set) on the group
        C(all), so that C(provision.yml) and C(teardown.yml) act on the cluster this inventory
        describes without repeating its settings.
    type: bool
    default: true
"""

EXAMPLES = r"""
# The least a file needs: the cluster "demo" in eu-west-1, reached on public addresses
#   plugin: amx.cluster.ec2_cluster
#   cluster_name: demo
#   regions: [eu-west-1]

# A controller inside the VPC, with a cache and an extra group per instance type
plugin: amx.cluster.ec2_cluster
cluster_name: demo
regions: [eu-west-1]
use_private_address: true
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/amx-cluster-inventory
cache_timeout: 300
keyed_groups:
  - key: ec2_instance_type
    prefix: type
compose:
  ansible_user: "'ubuntu'"
"""

import hashlib
import json

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_aws import (
    AWS_ERRORS,
    HAS_BOTO3,
    MISSING_BOTO3,
    AwsAccessError,
    describe_cluster_instances,
    ec2_client,
    explain,
    session,
)
from ansible_collections.amx.cluster.plugins.module_utils.ec2_cluster_nodes import (
    INVENTORY_FILE_SUFFIXES,
    ClusterLayoutError,
    check_cluster_name,
    misnamed_inventory_file,
    node_hostvars,
    order_nodes,
    simplify_instance,
)


class _HostsFirst:
    """The inventory, with host names resolved before group names.

    InventoryData looks a name up among the groups first, and the cluster's host ``master`` shares its name with
    the group ``master``: variables and group memberships meant for the host would land on the group. This
    adapter sends them to the host; everything else goes to the inventory unchanged.
    """

    def __init__(self, inventory):
        self._inventory = inventory

    def __getattr__(self, name):
        return getattr(self._inventory, name)

    def set_variable(self, entity, varname, value):
        if entity in self._inventory.hosts:
            self._inventory.hosts[entity].set_variable(varname, value)
        else:
            self._inventory.set_variable(entity, varname, value)

    def add_child(self, group, child):
        if child in self._inventory.hosts:
            self._inventory.add_host(child, group=group)
            return True
        return self._inventory.add_child(group, child)


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "amx.cluster.ec2_cluster"

    def verify_file(self, path):
        if not super().verify_file(path):
            return False
        if path.endswith(INVENTORY_FILE_SUFFIXES):
            return True
        # A file that names this plugin under another name would only get Ansible's "could not be verified":
        # say why, and the fix. Only the start of a YAML file is read (the plugin line comes first).
        if path.endswith((".yml", ".yaml")):
            try:
                with open(path, encoding="utf-8", errors="replace") as config:
                    problem = misnamed_inventory_file(path, config.read(65536))
            except OSError:
                problem = None
            if problem:
                self.display.warning(problem)
        return False

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self.inventory = _HostsFirst(inventory)
        self._read_config_data(path)

        cache_key = self._cache_key(path)
        use_cache = self.get_option("cache") and cache
        update_cache = self.get_option("cache") and not cache
        instances = None
        if use_cache:
            try:
                instances = self._cache[cache_key]
            except KeyError:
                update_cache = True
        if instances is None:
            instances = self._fetch()
        if update_cache:
            self._cache[cache_key] = instances
        self._populate(instances)

    # The options that decide which instances the answer holds: the cache key covers them all, so another cluster
    # name, region or endpoint with the same file never reads this one's cached hosts.
    _ANSWER_OPTIONS = ("cluster_name", "regions", "profile", "endpoint_url", "instance_states", "stopped_states")

    def _cache_key(self, path):
        shaping = {name: self.get_option(name) for name in self._ANSWER_OPTIONS}
        digest = hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:16]
        return f"{self.get_cache_key(path)}_{digest}"

    def _fetch(self):
        """The cluster's instances in every region, simplified to JSON-safe dicts (the cached form)."""
        if not HAS_BOTO3:
            raise AnsibleParserError(f"{self.NAME}: {MISSING_BOTO3}")
        cluster_name = self.get_option("cluster_name")
        try:
            check_cluster_name(cluster_name)
        except ClusterLayoutError as exc:
            raise AnsibleParserError(f"{self.NAME}: option cluster_name: {exc}") from None
        regions = self.get_option("regions") or [None]
        action = f"{self.NAME}: listing the instances of cluster {cluster_name!r}"
        instances = []
        try:
            aws_session = session(self.get_option("profile"))
        except AwsAccessError as exc:
            raise AnsibleParserError(f"{action}: {exc}") from None
        for region in regions:
            try:
                client = ec2_client(aws_session, region, self.get_option("endpoint_url"))
                region_name = client.meta.region_name
                raw = describe_cluster_instances(client, cluster_name, self._states(), self.get_option("page_size"))
            except (AwsAccessError, ClusterLayoutError) as exc:
                raise AnsibleParserError(f"{action}: {exc}") from None
            except AWS_ERRORS as exc:
                raise AnsibleParserError(explain(exc, region, action)) from None
            instances.extend(simplify_instance(instance, region_name) for instance in raw)
        return instances

    def _states(self):
        """Every state asked for: the cluster's, then the stopped ones (named together, so names stay stable)."""
        states = list(self.get_option("instance_states"))
        return states + [state for state in self.get_option("stopped_states") if state not in states]

    def _populate(self, instances):
        master_group = self.get_option("master_group")
        workers_group = self.get_option("workers_group")
        cluster_group = self.get_option("cluster_group")
        for group in (master_group, workers_group, cluster_group):
            self.inventory.add_group(group)
        if self.get_option("export_settings"):
            self._export_settings()

        try:
            nodes, ignored = order_nodes(instances)
        except ClusterLayoutError as exc:
            raise AnsibleParserError(
                "{}: cluster {!r}: {}".format(self.NAME, self.get_option("cluster_name"), exc)
            ) from None
        if ignored:
            self.display.warning(
                "{}: ignoring instances tagged with cluster {!r} but neither master nor worker: {}".format(
                    self.NAME, self.get_option("cluster_name"), ", ".join(ignored)
                )
            )

        for node in nodes:
            if node.get("index_tag_ignored"):
                self.display.warning(
                    "{}: instance {}: tag amx.cluster/node-index ignored ({}); named {} by launch order. Set the tag "
                    "to the worker's number or remove it".format(
                        self.NAME, node["instance_id"], node["index_tag_ignored"], node["name"]
                    )
                )

        running_states = self.get_option("instance_states")
        stopped = [node for node in nodes if node["state"] not in running_states]
        if stopped:
            stopped_group = self.get_option("stopped_group")
            self.inventory.add_group(stopped_group)
            self.display.warning(
                "{}: cluster {!r}: {} {} not running ({}): in group {!r} only, not in {}. Start {} again with "
                "playbooks/provision.yml (amx.cluster.provision) and this inventory".format(
                    self.NAME,
                    self.get_option("cluster_name"),
                    ", ".join(node["name"] for node in stopped),
                    "is" if len(stopped) == 1 else "are",
                    ", ".join(f"{node['name']} {node['instance_id']} {node['state']}" for node in stopped),
                    stopped_group,
                    "/".join((master_group, workers_group, cluster_group)),
                    "it" if len(stopped) == 1 else "them",
                )
            )

        strict = self.get_option("strict")
        use_private = self.get_option("use_private_address")
        for node in nodes:
            host = node["name"]
            if node["state"] in running_states:
                self.inventory.add_host(host, group=master_group if node["node_role"] == "master" else workers_group)
                self.inventory.add_host(host, group=cluster_group)
            else:
                self.inventory.add_host(host, group=stopped_group)
            hostvars = node_hostvars(node, use_private)
            for key, value in hostvars.items():
                self.inventory.set_variable(host, key, value)
            self._set_composite_vars(self.get_option("compose"), hostvars, host, strict=strict)
            # Groups may use what compose made (rank hints, users ...), as the variables the plays will see.
            hostvars = self.inventory.hosts[host].get_vars()
            self._add_host_to_composed_groups(self.get_option("groups"), hostvars, host, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, host, strict=strict)

    def _export_settings(self):
        settings = {"ec2_cluster_name": self.get_option("cluster_name")}
        regions = self.get_option("regions")
        if len(regions) == 1:
            settings["ec2_cluster_region"] = regions[0]
        if self.get_option("endpoint_url"):
            settings["ec2_cluster_endpoint_url"] = self.get_option("endpoint_url")
        if self.get_option("profile"):
            settings["ec2_cluster_aws_profile"] = self.get_option("profile")
        for key, value in settings.items():
            self.inventory.set_variable("all", key, value)
