# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""make_tiny_qa.py for real: SQuAD-format data and a tiny DistilBERT that loads offline, reproducibly."""

import json
import subprocess
from pathlib import Path

import pytest
from train_helpers import make_tiny_qa, run_env

pytestmark = pytest.mark.slow


def test_data_is_squad_format_with_exact_answer_spans(tiny_qa):
    for name, count in (
        ("train_file", tiny_qa["train_questions"]),
        ("validation_file", tiny_qa["validation_questions"]),
    ):
        document = json.loads(Path(tiny_qa[name]).read_text())
        seen = 0
        for article in document["data"]:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    answer = qa["answers"][0]
                    start = answer["answer_start"]
                    assert paragraph["context"][start : start + len(answer["text"])] == answer["text"]
                    seen += 1
        assert seen == count
    ids = [
        qa["id"]
        for split in ("train_file", "validation_file")
        for article in json.loads(Path(tiny_qa[split]).read_text())["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]
    assert len(ids) == len(set(ids))


def test_same_seed_same_files_other_seed_other_data(train_python, tiny_qa, tmp_path):
    again = make_tiny_qa(train_python, tmp_path / "again")
    assert again["files"] == tiny_qa["files"]
    other = make_tiny_qa(train_python, tmp_path / "other", "--seed", "1", "--train_paragraphs", "20")
    assert other["files"]["data/train.json"] != tiny_qa["files"]["data/train.json"]
    assert other["train_questions"] == 60


def test_model_and_tokenizer_load_offline(train_python, tiny_qa):
    code = """
import json, sys
from transformers import AutoModelForQuestionAnswering, AutoTokenizer
folder = sys.argv[1]
tok = AutoTokenizer.from_pretrained(folder)
model = AutoModelForQuestionAnswering.from_pretrained(folder)
enc = tok("where does bob live ?", "bob lives in zzqx .", return_offsets_mapping=True)
print(json.dumps({
    "fast": tok.is_fast, "vocab": len(tok), "type": model.config.model_type, "dim": model.config.dim,
    "layers": model.config.n_layers, "heads": model.config.n_heads,
    "tokens": tok.convert_ids_to_tokens(enc["input_ids"]), "keys": sorted(enc.keys()),
}))
"""
    done = subprocess.run(
        [str(train_python), "-c", code, tiny_qa["model_dir"]],
        capture_output=True,
        text=True,
        env=run_env(HF_HUB_OFFLINE="1"),
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert info["fast"] is True
    assert info["vocab"] == tiny_qa["model"]["vocab_size"] == 600
    assert (info["type"], info["dim"], info["layers"], info["heads"]) == ("distilbert", 32, 2, 2)
    assert info["tokens"][0] == "[CLS]" and info["tokens"].count("[SEP]") == 2
    assert any(token.startswith("##") for token in info["tokens"])  # an unseen word splits into WordPieces
    assert "token_type_ids" not in info["keys"]  # DistilBERT takes none
