# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bring-up benchmark (bench/bringup_bench.py is its command line) and the launch sweep (bench/launch_bench.py),
one module per concern:

- settings: what is measured with what (profile, cluster variables, targets);
- harness: the containers and SSH (tests/cluster/'s scripts), and running a command that must work;
- playbooks: ansible-playbook's environment, one timed run, its PLAY RECAP and slowest tasks;
- wheels: the torch wheel the baseline copies, and the bytes the controller fetched for the wheelhouse;
- baseline: the recipe's steps by hand, node after node;
- measure: one run of every measurement on fresh clusters;
- summary: medians, ratios and targets of whatever was measured;
- report: bringup.md, the notes on method, and the scaling report;
- node_resources, package_index: toward separate machines (a CPU cap per node; a package index with a rate limit
  per client, --index-rate);
- sweep: the launch overhead by cluster size (bench/launch_bench.py): its summary, launch.md and launch.png.
"""
