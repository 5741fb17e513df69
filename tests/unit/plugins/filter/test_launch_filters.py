# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filters amx.cluster.script_args and amx.cluster.mpi_launcher, and the role's wiring of script_args."""

from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from ansible_env import local_play_tasks

from ansible_collections.amx.cluster.plugins.filter import mpi_launcher, script_args

REPO = Path(__file__).resolve().parents[4]
ANSIBLE = REPO / ".venv" / "bin" / "ansible-playbook"


def filters():
    found = {}
    for module in (script_args, mpi_launcher):
        found.update(module.FilterModule().filters())
    return found


def test_each_filter_is_exposed_under_its_file_name():
    assert sorted(filters()) == ["mpi_launcher", "script_args"]


@pytest.mark.parametrize(
    "name, args, kwargs, message",
    [
        ("script_args", ("train", "/r"), {}, "amx.cluster.script_args: script must be one of"),
        ("mpi_launcher", ("intel",), {"venv": "/v"}, "amx.cluster.mpi_launcher: Intel MPI without the oneCCL binding"),
        ("mpi_launcher", ("lam",), {}, "amx.cluster.mpi_launcher: the MPI implementation must be one of"),
    ],
)
def test_bad_input_names_the_filter(name, args, kwargs, message):
    with pytest.raises(AnsibleFilterError) as error:
        filters()[name](*args, **kwargs)
    assert str(error.value).startswith(message)


PLAY = """
- hosts: localhost
  gather_facts: false
  vars_files:
    - {repo}/roles/train/defaults/main.yml
    - {repo}/roles/train/vars/main.yml
  tasks:
    - name: Build the arguments as the role does
      ansible.builtin.include_tasks: {repo}/roles/train/tasks/script_args.yml
      vars:
        __train_args_dir: /runs/r1
        __train_args_max_steps: null
        __train_args_max_eval: null
    - name: Show them
      ansible.builtin.debug:
        var: __train_built_args
"""


@pytest.mark.skipif(not ANSIBLE.exists(), reason="needs the controller venv (make setup)")
@pytest.mark.parametrize(
    "extra, expected",
    [
        (
            ["-e", "@" + str(REPO / "playbooks" / "vars" / "blog-recipe.yml")],
            "--model_name_or_path distilbert-base-uncased --dataset_name squad --do_train --do_eval "
            "--per_device_train_batch_size 32 --num_train_epochs 1 --output_dir /runs/r1/output --overwrite_output_dir",
        ),
        (
            ["-e", "train_script=qa_finetune", "-e", "__train_home=/home/u", "-e", f"role_path={REPO}/roles/train"],
            "--model_name_or_path /home/u/amx-cluster-runs/datasets/tiny-qa-KEY/model "
            "--train_file /home/u/amx-cluster-runs/datasets/tiny-qa-KEY/data/train.json "
            "--validation_file /home/u/amx-cluster-runs/datasets/tiny-qa-KEY/data/validation.json --do_train --do_eval "
            "--per_device_train_batch_size 16 --num_train_epochs 8 --logging_steps 10 --output_dir /runs/r1/output "
            "--overwrite_output_dir --learning_rate 0.003 --max_seq_length 96 --doc_stride 32 "
            "--metrics_file /runs/r1/metrics.json --progress_file /runs/r1/progress.jsonl",
        ),
    ],
    ids=["blog-preset", "defaults"],
)
def test_the_roles_task_builds_the_arguments_in_a_real_play(tmp_path, extra, expected):
    """tasks/script_args.yml, run by Ansible with the role's defaults and vars, wires the knobs into the filter."""
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(repo=REPO))
    tasks = local_play_tasks(play, *extra)
    args = tasks[-1]["hosts"]["localhost"]["__train_built_args"]
    rendered = " ".join(args)
    if "tiny-qa-" in rendered:
        key = rendered.split("tiny-qa-", 1)[1].split("/", 1)[0]
        rendered = rendered.replace(key, "KEY")
    assert rendered == expected
