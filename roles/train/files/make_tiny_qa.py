# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Make a tiny question-answering data set and a tiny DistilBERT, offline and deterministically.

Writes, under --output_dir:

  data/train.json, data/validation.json   SQuAD v1.1 format ({"version", "data": [{"title",
                                           "paragraphs": [{"context", "qas": [...]}]}]})
  model/                                   a randomly initialised DistilBertForQuestionAnswering
                                           (dim 32, 2 layers, 2 heads by default) and a WordPiece
                                           tokenizer trained here by `tokenizers`, both saved
                                           with save_pretrained
  manifest.json                            seed, sizes, versions and a sha256 of every file

The data is synthetic but learnable: each paragraph describes one person in shuffled
sentences among filler ones, and each question asks for one attribute (where they live, their
job, their pet). The answer is a span right after a cue phrase that matches the question type,
so a small model can learn to find it. Same seed, same files.

Needs torch, transformers and tokenizers; no network, no hub.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import string
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kl", "st", "tr"]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ou"]
JOBS = [
    "baker",
    "pilot",
    "farmer",
    "teacher",
    "welder",
    "nurse",
    "painter",
    "sailor",
    "miner",
    "tailor",
    "plumber",
    "chemist",
    "lawyer",
    "grocer",
    "potter",
    "weaver",
]
COLORS = ["red", "blue", "green", "black", "white", "grey", "brown", "golden", "purple", "yellow"]
ANIMALS = ["cat", "dog", "parrot", "horse", "rabbit", "goat", "turtle", "hamster", "lizard", "pony"]
FILLERS = [
    "the weather was mild that spring .",
    "the market opens early on mondays .",
    "a long road runs along the river .",
    "nobody remembers when the bridge was built .",
    "the library closes at six in winter .",
    "there is a small park near the station .",
    "the trains are often late in autumn .",
    "many people visit the old harbour .",
]


def pseudo_word(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(ONSETS) + rng.choice(VOWELS) for _syllable in range(syllables))


def make_paragraph(rng: random.Random, index: int, split: str) -> Dict[str, Any]:
    """One paragraph about one person, with one question per attribute."""
    name = pseudo_word(rng, rng.randint(2, 3))
    city = pseudo_word(rng, rng.randint(2, 3))
    if rng.random() < 0.3:
        city = f"{city} {pseudo_word(rng, 2)}"
    job = rng.choice(JOBS)
    pet = f"{rng.choice(COLORS)} {rng.choice(ANIMALS)}"
    facts: List[Tuple[str, str, str]] = [
        ("city", f"{name} lives in ", city),
        ("job", f"{name} works as a ", job),
        ("pet", f"{name} owns a ", pet),
    ]
    sentences: List[Tuple[str, str, str]] = list(facts)
    for filler in rng.sample(FILLERS, rng.randint(1, 3)):
        sentences.append(("filler", filler, ""))
    rng.shuffle(sentences)

    context = ""
    starts: Dict[str, int] = {}
    for kind, prefix, answer in sentences:
        if context:
            context += " "
        if kind == "filler":
            context += prefix
            continue
        context += prefix
        starts[kind] = len(context)
        context += answer + " ."
    questions = {
        "city": f"where does {name} live ?",
        "job": f"what does {name} do for a living ?",
        "pet": f"what pet does {name} have ?",
    }
    qas = []
    for kind, _prefix, answer in facts:
        start = starts[kind]
        assert context[start : start + len(answer)] == answer
        qas.append(
            {
                "id": f"{split}-{index:05d}-{kind}",
                "question": questions[kind],
                "answers": [{"text": answer, "answer_start": start}],
            }
        )
    return {"title": name, "paragraphs": [{"context": context, "qas": qas}]}


def make_split(rng: random.Random, count: int, split: str) -> Dict[str, Any]:
    return {"version": "tiny-qa-1", "data": [make_paragraph(rng, i, split) for i in range(count)]}


def corpus(*datasets: Dict[str, Any]) -> List[str]:
    texts: List[str] = []
    for dataset in datasets:
        for article in dataset["data"]:
            for paragraph in article["paragraphs"]:
                texts.append(paragraph["context"])
                texts.extend(qa["question"] for qa in paragraph["qas"])
    return texts


def train_tokenizer(texts: List[str], vocab_size: int) -> Any:
    """Train a BERT-style WordPiece tokenizer (lower case, [CLS] A [SEP] B [SEP]) offline."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    alphabet = sorted(set(string.ascii_lowercase + string.digits + string.punctuation + "".join(texts).lower()) - {" "})
    # The trainer numbers "##x" pieces in the order it meets them in a hash map, which makes merge
    # ties (and so the vocabulary) differ from run to run. Declaring every "##x" up front fixes
    # their ids and makes training reproducible; they are ordinary pieces in the saved tokenizer.
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        special_tokens=specials + ["##" + char for char in alphabet],
        initial_alphabet=alphabet,
        show_progress=False,
    )
    trained = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    trained.normalizer = normalizers.BertNormalizer(lowercase=True)
    trained.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trained.train_from_iterator(sorted(set(texts)), trainer=trainer)
    # The trainer hands out ids in hash-map order; WordPiece only needs the set of pieces, so
    # number them canonically (specials, then sorted) to make the saved tokenizer reproducible.
    pieces = sorted(set(trained.get_vocab()) - set(specials))
    vocab = {token: index for index, token in enumerate(specials + pieces)}
    tokenizer = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    return tokenizer


def build_model(raw_tokenizer: Any, folder: Path, args: argparse.Namespace) -> Dict[str, Any]:
    import torch
    from transformers import DistilBertConfig, DistilBertForQuestionAnswering, PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw_tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=args.max_position_embeddings,
        model_input_names=["input_ids", "attention_mask"],
    )
    torch.manual_seed(args.seed)
    config = DistilBertConfig(
        vocab_size=len(tokenizer),
        dim=args.dim,
        hidden_dim=args.dim * 4,
        n_layers=args.layers,
        n_heads=args.heads,
        max_position_embeddings=args.max_position_embeddings,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = DistilBertForQuestionAnswering(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    # transformers 5 records its own class name (TokenizersBackend), which 4.x cannot load; the generic
    # fast-tokenizer name loads the same tokenizer.json in both.
    config_path = folder / "tokenizer_config.json"
    tokenizer_config = json.loads(config_path.read_text())
    tokenizer_config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_path.write_text(json.dumps(tokenizer_config, indent=2, sort_keys=True) + "\n")
    return {
        "vocab_size": len(tokenizer),
        "parameters": sum(p.numel() for p in model.parameters()),
        "torch": torch.__version__,
    }


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--output_dir", required=True, help="folder to write data/, model/ and manifest.json to")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train_paragraphs", type=int, default=200, help="3 questions each")
    parser.add_argument("--validation_paragraphs", type=int, default=40, help="3 questions each")
    parser.add_argument("--vocab_size", type=int, default=600)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--max_position_embeddings", type=int, default=128)
    args = parser.parse_args(argv)
    if args.train_paragraphs < 1 or args.validation_paragraphs < 1:
        parser.error("--train_paragraphs and --validation_paragraphs must be >= 1")
    if args.dim % args.heads:
        parser.error(f"--dim ({args.dim}) must be a multiple of --heads ({args.heads})")
    return args


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    out = Path(args.output_dir)
    data_dir, model_dir = out / "data", out / "model"
    data_dir.mkdir(parents=True, exist_ok=True)

    rng = random.Random(args.seed)
    train = make_split(rng, args.train_paragraphs, "train")
    validation = make_split(rng, args.validation_paragraphs, "validation")
    (data_dir / "train.json").write_text(json.dumps(train, indent=1, sort_keys=True) + "\n")
    (data_dir / "validation.json").write_text(json.dumps(validation, indent=1, sort_keys=True) + "\n")

    model_info = build_model(train_tokenizer(corpus(train, validation), args.vocab_size), model_dir, args)

    files = sorted(p for p in list(data_dir.iterdir()) + list(model_dir.iterdir()) if p.is_file())
    manifest = {
        "seed": args.seed,
        "train_questions": 3 * args.train_paragraphs,
        "validation_questions": 3 * args.validation_paragraphs,
        "model": {
            "dim": args.dim,
            "layers": args.layers,
            "heads": args.heads,
            "max_position_embeddings": args.max_position_embeddings,
            **model_info,
        },
        "files": {str(p.relative_to(out)): sha256(p) for p in files},
        "model_dir": str(model_dir),
        "train_file": str(data_dir / "train.json"),
        "validation_file": str(data_dir / "validation.json"),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(json.dumps({k: manifest[k] for k in ("model_dir", "train_file", "validation_file", "seed")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
