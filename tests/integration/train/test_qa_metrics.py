# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SQuAD exact match / F1 of qa_finetune.py (standard library only: runs without the training venv)."""

import importlib.util
import subprocess
import sys

import pytest
from train_helpers import FILES


def load_script():
    spec = importlib.util.spec_from_file_location("qa_finetune", FILES / "qa_finetune.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


qa = load_script()


@pytest.mark.parametrize(
    ("text", "normal"),
    [("The Red Cat!", "red cat"), ("  an   apple, a pear ", "apple pear"), ("theatre", "theatre"), ("", "")],
)
def test_normalize_answer(text, normal):
    assert qa.normalize_answer(text) == normal


@pytest.mark.parametrize(
    ("prediction", "truth", "em", "f1"),
    [
        ("red cat", "the red cat", 1.0, 1.0),
        ("red dog", "red cat", 0.0, 0.5),
        ("a big red cat", "red cat", 0.0, 0.8),
        ("", "red cat", 0.0, 0.0),
        ("", "", 1.0, 1.0),
        ("dog", "cat", 0.0, 0.0),
    ],
)
def test_exact_match_and_f1(prediction, truth, em, f1):
    assert qa.exact_match(prediction, truth) == em
    assert qa.f1(prediction, truth) == pytest.approx(f1)


def test_squad_scores_take_the_best_gold_answer_and_average_in_percent():
    scores = qa.squad_scores(
        {"q1": "red cat", "q2": "blue", "q3": "x"},
        {"q1": ["dog", "the red cat"], "q2": ["blue sky"], "q3": ["y"], "q4": ["z"]},
    )
    assert scores["count"] == 4
    assert scores["exact_match"] == pytest.approx(25.0)
    assert scores["f1"] == pytest.approx(100 * (1 + 2 / 3) / 4)


def test_load_squad_flattens_questions(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(
        '{"data": [{"title": "t", "paragraphs": [{"context": "ab cd", '
        '"qas": [{"id": 1, "question": " q? ", "answers": [{"text": "cd", "answer_start": 3}]}]}]}]}'
    )
    assert qa.load_squad(str(path)) == [
        {"id": "1", "question": "q?", "context": "ab cd", "answer_text": ["cd"], "answer_start": [3]}
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model_name_or_path", "distilbert-base-uncased"], "is not a folder: this script loads local models only"),
        (["--model_name_or_path", "."], "--train_file is required to train"),
        (["--model_name_or_path", ".", "--do_eval", "--validation_file", "/nonexistent.json"], "does not exist"),
        (
            [
                "--model_name_or_path",
                ".",
                "--do_eval",
                "--validation_file",
                __file__,
                "--xpu_backend",
                "ccl",
                "--ddp_backend",
                "gloo",
            ],
            "--xpu_backend ccl and --ddp_backend gloo disagree",
        ),
        (
            ["--model_name_or_path", ".", "--do_eval", "--validation_file", __file__, "--doc_stride", "400"],
            "--doc_stride must be smaller than --max_seq_length",
        ),
    ],
)
def test_bad_arguments_fail_before_any_heavy_import(args, message):
    done = subprocess.run(
        [sys.executable, str(FILES / "qa_finetune.py"), "--output_dir", "/tmp/unused", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert message in done.stderr
