#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The work is done by the action plugin of the same name (plugins/action/wheelhouse_fetch.py); this file documents it.

DOCUMENTATION = r"""
module: wheelhouse_fetch
short_description: Download wheels for a node into a folder of the controller cache, once
version_added: 0.2.0
author:
  - amx.cluster developers (@amx-cluster)
description:
  - The controller's download of the torch_stack and hf_examples roles, in one place. Runs on the controller,
    whichever host the task runs for.
  - When the folder O(dest) exists, it is a complete download and nothing is done. Otherwise the download is made in
    O(dest) with C(.partial) appended (emptied first), filled with O(files), C(markers.json) (with O(markers)) and the
    wheels that pip downloads, the wheels packed into C(wheels.tar) (with O(pack)), and renamed to O(dest) once all
    of that worked, so an interrupted download is never taken for a complete one.
  - Runs that want a download in the same cache folder at once take turns (a lock on the folder that holds O(dest)),
    and a later one finds its download complete.
  - pip runs from an argument vector, never through a shell; the paths may hold quotes or spaces.
  - With O(markers), pip evaluates environment markers (C(pkg; python_version < "3.10") in requirement files and in
    every dependency's metadata) with the node's values instead of the controller's, through a runner of the
    collection that takes the place of C(-m pip) in O(pip).
options:
  dest:
    description: The cache folder of this download on the controller; its parent folders are created.
    type: path
    required: true
  pip:
    description:
      - The controller's pip as a command, C([PYTHON, -m, pip]) followed by pip's global options if any.
      - With O(markers) it must have that form (the runner replaces C(-m pip)).
    type: list
    elements: str
    required: true
  pip_variable:
    description: The variable O(pip) comes from, named in the error when it does not have the required form.
    type: str
    default: controller_pip
  args:
    description:
      - The arguments after O(pip), starting with C(download). The download folder, O(dest) with C(.partial)
        appended, is where pip's C(--dest) and the paths of O(files) must point.
    type: list
    elements: str
    required: true
  files:
    description: Text files to write into the download folder before pip runs (requirements, constraints), by name.
    type: dict
    default: {}
  markers:
    description:
      - The node's PEP 508 marker values (C(python_version), C(platform_machine), ...; all eleven variables, each a
        string), as probed on the node.
      - Left out, pip evaluates markers for the Python that runs it.
    type: dict
  pack:
    description: Pack the downloaded wheels into one C(wheels.tar) (one transfer per node instead of one per wheel).
    type: bool
    default: false
  background:
    description:
      - Start the download in a process of its own on the controller and return once it holds the lock above, so
        that it runs while the play goes on; O(dest) appears when it has finished.
      - A later task with the same O(dest) and without O(background) waits for it and finds the folder complete.
        When the background download failed, that task downloads again and fails with pip's error (a failure is
        reported there, not here).
      - Every input is checked before it starts, as without O(background).
      - When the play ends first, the process goes on until its download is complete (the next run finds it in
        the cache) or failed (its C(.partial) folder is emptied by the next download).
    type: bool
    default: false
  description:
    description: What is downloaded, for the error message.
    type: str
    default: pip download
  hint:
    description: What to check when the download fails, appended to the error message.
    type: str
    default: ""
attributes:
  action:
    support: full
    description: Runs as the action plugin of the same name, on the controller; nothing runs on the host.
  check_mode:
    support: full
    description: In check mode nothing is written or downloaded; the task reports a change when the folder is missing.
  diff_mode:
    support: none
    description: The result is a folder of wheels.
  platform:
    support: full
    platforms: posix
    description: Runs on the controller.
notes:
  - Use C(run_once) (and a loop over the distinct downloads the hosts need) in a play over several hosts.
"""

EXAMPLES = r"""
- name: Download a requirement file's wheels for the nodes' Python 3.8, with the node's marker values
  amx.cluster.wheelhouse_fetch:
    dest: "{{ cache }}/{{ key }}"
    pip: ["{{ ansible_playbook_python }}", -m, pip]
    args: [download, --dest, "{{ cache }}/{{ key }}.partial", "--only-binary=:all:", --implementation, cp,
           --python-version, "3.8", --platform, manylinux2014_x86_64, -r, "{{ cache }}/{{ key }}.partial/req.txt"]
    files:
      req.txt: "requests\n"
    markers: "{{ node_markers }}"
    pack: true
  run_once: true
"""

RETURN = r"""
path:
  description: The folder of the download, as an absolute path.
  returned: always
  type: str
cached:
  description: Whether the folder was there already (nothing was downloaded).
  returned: always
  type: bool
wheels:
  description: The names of the wheels downloaded by this task (empty when cached or in check mode).
  returned: when O(background=false)
  type: list
  elements: str
started:
  description: Whether a download was started in the background (false when cached or in check mode).
  returned: when O(background=true)
  type: bool
"""
