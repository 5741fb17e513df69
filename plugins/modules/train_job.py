#!/usr/bin/python
# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# The work is done by the action plugin of the same name (plugins/action/train_job.py); this file documents it.

DOCUMENTATION = r"""
module: train_job
short_description: Start a training launch script on the master, detached, and follow it to the end
version_added: 0.1.0
author:
  - amx.cluster developers (@amx-cluster)
description:
  - Starts O(script) (a launch script in O(run_dir), such as the C(mpirun) line amx.cluster.train renders) on the host
    the task runs on, detached from the Ansible connection. A supervisor in a session of its own runs it, so a dropped
    SSH connection or an interrupted play leaves the run going. The same task again (same O(run_dir) and O(name))
    attaches to a run that is still going, and reports one that has ended unless O(rerun) is set.
  - While the run goes, the task follows it with a long poll (the agent on the host answers as soon as there is
    something new, after O(long_poll) seconds at the latest), or with O(long_poll=0) by a look every O(poll_interval)
    seconds, and prints a line on the controller's standard error for each new record of O(progress_file) (JSON
    lines with step, total_steps, epoch, loss, samples_per_second, eta_seconds), or, without one, for the progress the
    Trainer's console output shows. Standard output stays the stdout callback's, so with the C(json) callback it is
    one JSON document.
  - The supervisor enforces O(timeout) even if the controller goes away. When the launcher has ended, it ends whatever
    is left of the job on every node (the launcher's process group on this host, and every process whose environment
    holds C(AMX_CLUSTER_JOB=<run_id>/<name>) here and on each worker, reached through the cluster's SSH mesh), and
    splits the launcher's output (C(mpirun -prepend-rank)) into one log per rank under C(<run_dir>/logs/<name>/).
  - The task fails when the job fails, naming the rank that ended first and its host (from the report of the rank
    wrapper C(rank_exec.sh) or the first error message), what it said, and where the logs are.
  - Runs as the user of the task's C(become_user); the run folder must be writable by that user.
options:
  run_dir:
    description: Absolute path of the run folder on the host; the agent and the job's state go into C(state/<name>/).
    type: str
    required: true
  run_id:
    description: The run's name; with O(name) it marks the job's processes on every node.
    type: str
    required: true
  script:
    description: The launch script, absolute or relative to O(run_dir); run with C(bash).
    type: str
    required: true
  name:
    description: The job's name within the run (C(job), C(smoke), C(single)).
    type: str
    default: job
  label:
    description: What the progress lines start with; defaults to O(name).
    type: str
  python:
    description: The Python that runs the agent on the host and, through the mesh, on the workers (3.8 or newer).
    type: str
    default: python3
  nodes:
    description:
      - The cluster's nodes in hostfile order, the master first as C(localhost); the workers are reached by their alias
        for the clean-up, and ranks are mapped to nodes O(processes_per_node) at a time.
      - Empty means this host alone.
    type: list
    elements: dict
    default: []
    suboptions:
      alias:
        description: The name in the MPI hostfile and the master's C(~/.ssh/config) (C(localhost), C(node1)...).
        type: str
        required: true
      name:
        description: The inventory name, used in messages.
        type: str
        required: true
  processes_per_node:
    description: Ranks per node, to tell which node a rank ran on.
    type: int
    default: 1
  progress_file:
    description: JSON lines file the training script appends to, absolute or relative to O(run_dir).
    type: str
  timeout:
    description: Seconds after which the supervisor ends the job (0 for no limit).
    type: int
    default: 0
  poll_interval:
    description:
      - Seconds between looks at the job when O(long_poll=0).
      - With a long poll, the pause before a look again after one that failed (O(connection_retries)).
    type: float
    default: 5.0
  long_poll:
    description:
      - Seconds the agent on the host may hold each answer while there is nothing new (new progress records or output,
        the job's end); it answers as soon as there is. No pause between looks, so progress shows as it comes.
      - At most O(heartbeat) seconds when O(heartbeat) is set, so the "running" lines keep their pace; each look is
        one command over the connection that lasts that long when the job is quiet.
      - V(0) looks every O(poll_interval) seconds instead, each answer at once.
    type: float
    default: 20.0
  heartbeat:
    description: Seconds without new progress after which a "running" line is printed (0 for never).
    type: int
    default: 60
  rerun:
    description: Start the job again when an earlier start of it has ended.
    type: bool
    default: false
  retry_failed:
    description:
      - Start a new attempt of the job when its earlier attempt failed (it reports a successful one as it was).
      - The earlier attempt's result, launcher output, rank logs and progress file move to
        C(<run_dir>/state/<name>/attempts/N/) first.
    type: bool
    default: false
  env:
    description:
      - Variables added to the launcher's environment (and so to every rank's), recorded in the job's result.
      - For values that must not be written anywhere, use O(secret_env).
    type: dict
    default: {}
  hint:
    description: Appended to the failure message (where to look, what to change).
    type: str
    default: ""
  ssh_options:
    description: Options for the supervisor's ssh to the workers.
    type: list
    elements: str
    default: ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
  secret_env:
    description:
      - Secret variables for the job, as name and value. They reach the launcher's environment (and through a Hydra
        launcher every rank's) on the agent's standard input, never on a command line, in a file of the run, in the
        task's result or in a log, unless the job itself prints them.
    type: dict
    default: {}
  connection_retries:
    description: Looks in a row that may fail (a flaky connection) before the task gives up following the job.
    type: int
    default: 12
  output_lines:
    description: How many of the last lines of the launcher's output to return.
    type: int
    default: 200
  bundle:
    description:
      - Return every regular file of O(run_dir) (paths relative to it, sorted, without those O(bundle_skip) finds) as
        a gzipped tar archive in RV(bundle), in the same answer as the job's result, for the controller to unpack.
      - When the archive is larger than O(bundle_limit), RV(bundle_error) says how large it is instead.
    type: bool
    default: false
  bundle_skip:
    description:
      - A Python regular expression; the files of O(run_dir) whose relative path it finds (C(re.search)) are left out
        of the bundle. The default leaves out the agent, C(__pycache__) folders and C(output/) (the model and its
        checkpoints).
      - An empty string leaves nothing out.
    type: str
    default: '^state/train_agent\.py$|(^|/)__pycache__/|^output/'
  bundle_limit:
    description: The largest bundle in bytes (of the tar.gz, before base64); a larger one is not returned.
    type: int
    default: 67108864
attributes:
  action:
    support: full
    description: The work is done by the action plugin of the same name, on the controller and over the connection.
  check_mode:
    support: full
    description: In check mode nothing is started; the task reports what it would start.
  diff_mode:
    support: none
    description: Nothing to show; the job's files are the result.
  platform:
    support: full
    platforms: posix
    description: Linux hosts (C(/proc), C(setsid)).
notes:
  - Needs Linux on the host (C(/proc), C(setsid)); C(pidfd) is not needed.
seealso:
  - module: ansible.builtin.async_status
    description: A generic way to wait for a detached task; this module follows a training job instead.
"""

EXAMPLES = r"""
- name: Run the training and follow it
  amx.cluster.train_job:
    run_dir: /home/ubuntu/amx-cluster-runs/squad-1
    run_id: squad-1
    script: launch.sh
    python: /opt/amx-cluster/venv/bin/python
    nodes:
      - {alias: localhost, name: master}
      - {alias: node1, name: worker1}
    processes_per_node: 2
    progress_file: progress.jsonl
    timeout: 21600
  become: true
  become_user: ubuntu
  register: job

- name: A collective smoke test under a hard limit
  amx.cluster.train_job:
    run_dir: /home/ubuntu/amx-cluster-runs/squad-1
    run_id: squad-1
    name: smoke
    script: smoke.sh
    timeout: 120
    rerun: true
    hint: Check MASTER_ADDR, the firewall between the nodes and the network interface variables.
"""

RETURN = r"""
state:
  description: V(started), V(attached) (to a job still going), or V(finished_before) (reported, not started).
  returned: success, not in check mode
  type: str
rc:
  description: The launcher's exit code (negative, the signal that ended it).
  returned: success, not in check mode
  type: int
job_failed:
  description: Whether the job failed (with C(failed_when) set to false, the task itself does not fail).
  returned: success, not in check mode
  type: bool
signal:
  description: The signal that ended the launcher, if one did.
  returned: success, not in check mode
  type: int
timed_out:
  description: Whether the supervisor ended the job at O(timeout).
  returned: success, not in check mode
  type: bool
duration:
  description: Wall time of the job in seconds.
  returned: success, not in check mode
  type: float
duration_human:
  description: The same as H:MM:SS.
  returned: success, not in check mode
  type: str
started:
  description: Start time (seconds since the epoch).
  returned: success, not in check mode
  type: float
ended:
  description: End time (seconds since the epoch).
  returned: success, not in check mode
  type: float
last_progress:
  description: The last progress record seen.
  returned: success, not in check mode
  type: dict
progress_count:
  description: How many progress records were seen.
  returned: success, not in check mode
  type: int
launcher_log:
  description: Path of the launcher's whole output on the host.
  returned: success, not in check mode
  type: str
rank_logs:
  description: Paths of the per-rank logs on the host.
  returned: success, not in check mode
  type: list
  elements: str
attempts:
  description:
    - Every attempt of the job, oldest first, the last being this one; with O(retry_failed), the failed ones before.
    - Each has V(attempt) (from 1), V(rc), V(signal), V(timed_out), V(started), V(ended), V(seconds),
      V(resumed_from) (the checkpoint in E(AMX_CLUSTER_RESUME_FROM), or null) and V(kept_in) (the folder of an
      earlier attempt's files).
  returned: success, not in check mode
  type: list
  elements: dict
phases:
  description:
    - Seconds of the job's phases - V(job_start) (the agent written and started, one round trip, until its answer
      is back, so it may overlap the job's first moments by the answer's way back), V(job) (the launcher's run),
      V(sweep) (the clean-up on every node after it), V(notice) (from the sweep's end until the controller has the
      result, that is the status answer's way back and the wait for it), V(results) (the last answer, with the output's
      tail and the bundle).
  returned: success, not in check mode
  type: dict
  version_added: 0.2.0
left_running:
  description: Processes of the job still alive after the clean-up, per node (empty when all is clean).
  returned: success, not in check mode
  type: dict
output_lines:
  description: The last O(output_lines) lines of the launcher's output.
  returned: success, not in check mode
  type: list
  elements: str
rank_lines:
  description: The last lines of each rank (C(rank-N)) and of the launcher itself (C(launcher)).
  returned: success, not in check mode
  type: dict
bundle:
  description:
    - The files of O(run_dir) as a gzipped tar archive, in base64 (paths relative to O(run_dir)).
  returned: when O(bundle) is set and the archive is within O(bundle_limit)
  type: str
bundle_error:
  description: Why there is no RV(bundle) (its size and the limit, or a file that could not be read).
  returned: when O(bundle) is set and the archive could not be returned
  type: str
failure:
  description:
    - What brought the job down. C(rank), C(host), C(alias), C(pid), C(how), C(evidence), C(lines) (the rank's last
      output), C(reports) (the rank wrapper's reports), C(error_ranks), C(launcher_lines).
  returned: when the job failed
  type: dict
run_dir:
  description: The run folder.
  returned: always
  type: str
state_dir:
  description: The job's state folder (supervisor.json, launcher.log, result.json).
  returned: always
  type: str
logs_dir:
  description: The job's per-rank logs folder.
  returned: always
  type: str
script:
  description: The launch script, as an absolute path.
  returned: always
  type: str
"""
