# Copyright: contributors to amx.cluster
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fine-tune an extractive question-answering model on SQuAD-format JSON files, without the Hub.

The collection's own training script, for runs with a local model folder and local data:

    python3 qa_finetune.py --model_name_or_path MODEL_DIR \\
        --train_file train.json --validation_file validation.json \\
        --per_device_train_batch_size 32 --num_train_epochs 1 --output_dir OUT \\
        --use_cpu --ddp_backend gloo --bf16 --metrics_file metrics.json --progress_file progress.jsonl

It runs alone or under mpirun (the transformers Trainer reads PMI_RANK / PMI_SIZE; MASTER_ADDR and
MASTER_PORT come from the environment). It takes the flags of every transformers dialect
(--no_cuda or --use_cpu, --xpu_backend or --ddp_backend, --use_ipex) and maps them onto what the
installed transformers has. A backend is used only when there is more than one process.

It measures SQuAD exact match and F1 on the validation file before and after training, and
writes on rank 0:
  --metrics_file   one JSON document: losses, eval before/after, world size, the ranks that took
                   part (host, pid, batches per epoch), samples per second, wall time per epoch,
                   versions and arguments;
  --progress_file  JSON lines, one per logging step: step, total_steps, epoch, loss,
                   samples_per_second, eta_seconds, rank.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import inspect
import json
import os
import platform
import re
import socket
import string
import sys
import threading
import time
import traceback
from typing import Any, Dict, Iterable, List, Optional, Sequence

# Everything is local: never let a library reach for the Hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Set by amx.cluster.train when it skipped the collective smoke test (its record matched the cluster's fingerprint):
# the rendezvous and a first barrier must then be done within the smoke test's timeout, or the rank ends with exit
# code 124 and the smoke test's hint (the role's __train_smoke_hint, passed in, never written here).
FIRST_COLLECTIVE_TIMEOUT_VAR = "AMX_CLUSTER_FIRST_COLLECTIVE_TIMEOUT"
FIRST_COLLECTIVE_HINT_VAR = "AMX_CLUSTER_FIRST_COLLECTIVE_HINT"
FIRST_COLLECTIVE_EXIT = 124

WORLD_SIZE_VARS = ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
RANK_VARS = ("RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK")


def log(message: str) -> None:
    rank = env_int(RANK_VARS, 0)
    # One write per line, so that the ranks' lines never merge in the launcher's output.
    sys.stdout.write(f"[qa_finetune rank {rank}] {message}\n")
    sys.stdout.flush()


def env_int(names: Sequence[str], default: int) -> int:
    for name in names:
        value = os.environ.get(name, "")
        if value.strip().isdigit():
            return int(value)
    return default


# ----------------------------------------------------------------------------- arguments


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Fine-tune a QA model on SQuAD-format JSON files (local model, no Hub).",
    )
    parser.add_argument("--model_name_or_path", required=True, help="local folder made by save_pretrained")
    parser.add_argument("--train_file", help="SQuAD-format JSON for training")
    parser.add_argument("--validation_file", help="SQuAD-format JSON for evaluation (exact match, F1)")
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--do_train", action="store_true", help="train (default: train and evaluate)")
    parser.add_argument("--do_eval", action="store_true", help="evaluate (default: train and evaluate)")
    parser.add_argument("--per_device_train_batch_size", type=int, default=8)
    parser.add_argument("--per_device_eval_batch_size", type=int, default=64)
    parser.add_argument("--num_train_epochs", type=float, default=1.0)
    parser.add_argument("--max_steps", type=int, default=-1, help="stop after this many steps (> 0)")
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--weight_decay", type=float, default=0.0)
    parser.add_argument("--max_seq_length", type=int, default=384)
    parser.add_argument("--doc_stride", type=int, default=128)
    parser.add_argument("--max_answer_length", type=int, default=30)
    parser.add_argument("--n_best_size", type=int, default=20)
    parser.add_argument("--max_train_samples", type=int, help="use only the first N training questions")
    parser.add_argument("--max_eval_samples", type=int, help="use only the first N validation questions")
    parser.add_argument("--logging_steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--bf16", action="store_true", help="bfloat16 mixed precision (AMX on Sapphire Rapids)")
    parser.add_argument("--ddp_timeout", type=int, default=1800, help="seconds before a stuck collective fails")
    parser.add_argument("--overwrite_output_dir", action="store_true", help="accepted for run_qa.py compatibility")
    parser.add_argument("--no_save", action="store_true", help="do not save the trained model")
    parser.add_argument("--save_strategy", choices=["no", "steps"], default="no", help="steps: save checkpoints")
    parser.add_argument("--save_steps", type=int, default=500, help="steps between checkpoints")
    parser.add_argument("--save_total_limit", type=int, help="keep only the newest N checkpoints")
    parser.add_argument("--save_on_each_node", action="store_true", help="every node saves its own checkpoints")
    parser.add_argument("--resume_from_checkpoint", help="a checkpoint folder of an earlier attempt to go on from")
    # The flags of every transformers dialect.
    parser.add_argument("--no_cuda", action="store_true", help="run on the CPU (transformers < 5)")
    parser.add_argument("--use_cpu", action="store_true", help="run on the CPU (transformers >= 4.32)")
    parser.add_argument("--xpu_backend", choices=["ccl", "gloo", "mpi"], help="backend (transformers < 4.32)")
    parser.add_argument("--ddp_backend", help="backend (transformers >= 4.29): gloo, ccl (< 5.1), mpi")
    parser.add_argument("--use_ipex", action="store_true", help="use Intel Extension for PyTorch when installed")
    parser.add_argument("--metrics_file", help="write the metrics JSON here (rank 0)")
    parser.add_argument("--progress_file", help="append one JSON line per logging step here (rank 0)")
    args = parser.parse_args(list(argv))

    if not os.path.isdir(args.model_name_or_path):
        parser.error(
            f"--model_name_or_path {args.model_name_or_path!r} is not a folder: this script loads local models only "
            "(save_pretrained output); make one with make_tiny_qa.py"
        )
    if not args.do_train and not args.do_eval:
        args.do_train = args.do_eval = True
    if args.do_train and not args.train_file:
        parser.error("--train_file is required to train")
    if args.do_eval and not args.validation_file:
        parser.error("--validation_file is required to evaluate")
    for name in ("train_file", "validation_file"):
        path = getattr(args, name)
        if path and not os.path.isfile(path):
            parser.error(f"--{name} {path!r} does not exist")
    if args.xpu_backend and args.ddp_backend and args.xpu_backend != args.ddp_backend:
        parser.error(f"--xpu_backend {args.xpu_backend} and --ddp_backend {args.ddp_backend} disagree: pass one")
    if args.doc_stride >= args.max_seq_length:
        parser.error("--doc_stride must be smaller than --max_seq_length")
    if args.per_device_train_batch_size < 1 or args.logging_steps < 1 or args.save_steps < 1:
        parser.error("--per_device_train_batch_size, --logging_steps and --save_steps must be >= 1")
    if args.resume_from_checkpoint and not os.path.isfile(
        os.path.join(args.resume_from_checkpoint, "trainer_state.json")
    ):
        parser.error(
            f"--resume_from_checkpoint {args.resume_from_checkpoint!r} is no complete checkpoint on "
            f"{socket.gethostname()} (no trainer_state.json in it)"
        )
    return args


# ----------------------------------------------------------------------------- SQuAD metrics


def normalize_answer(text: str) -> str:
    """Lower case, drop punctuation and the articles a/an/the, collapse white space."""
    text = text.lower()
    text = "".join(char for char in text if char not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def exact_match(prediction: str, truth: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(truth))


def f1(prediction: str, truth: str) -> float:
    predicted, gold = normalize_answer(prediction).split(), normalize_answer(truth).split()
    if not predicted or not gold:
        return float(predicted == gold)
    common = collections.Counter(predicted) & collections.Counter(gold)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(predicted), overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def squad_scores(predictions: Dict[str, str], references: Dict[str, List[str]]) -> Dict[str, Any]:
    """Exact match and F1 in percent, each question scored against its best gold answer."""
    if not references:
        return {"exact_match": 0.0, "f1": 0.0, "count": 0}
    em_total = f1_total = 0.0
    for qid, answers in references.items():
        prediction = predictions.get(qid, "")
        em_total += max(exact_match(prediction, answer) for answer in answers)
        f1_total += max(f1(prediction, answer) for answer in answers)
    count = len(references)
    return {"exact_match": 100.0 * em_total / count, "f1": 100.0 * f1_total / count, "count": count}


# ----------------------------------------------------------------------------- data


def load_squad(path: str, limit: Optional[int] = None) -> List[Dict[str, Any]]:
    """Flatten a SQuAD-format file into one record per question."""
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise SystemExit(f"{path} is not SQuAD format: expected {{'data': [{{'paragraphs': [...]}}]}}")
    records: List[Dict[str, Any]] = []
    for article in document["data"]:
        for paragraph in article.get("paragraphs", []):
            context = paragraph["context"]
            for qa in paragraph.get("qas", []):
                answers = qa.get("answers", [])
                records.append(
                    {
                        "id": str(qa["id"]),
                        "question": qa["question"].strip(),
                        "context": context,
                        "answer_text": [a["text"] for a in answers],
                        "answer_start": [int(a["answer_start"]) for a in answers],
                    }
                )
    if limit is not None:
        records = records[:limit]
    if not records:
        raise SystemExit(f"{path} holds no questions")
    return records


def tokenize_pairs(tokenizer: Any, batch: Dict[str, List[Any]], args: argparse.Namespace) -> Any:
    return tokenizer(
        batch["question"],
        batch["context"],
        truncation="only_second",
        max_length=args.max_seq_length,
        stride=args.doc_stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length",
    )


def train_features(tokenizer: Any, args: argparse.Namespace) -> Any:
    """Return a batched map function that labels each window with the answer's token span (CLS if outside)."""

    def prepare(batch: Dict[str, List[Any]]) -> Dict[str, List[Any]]:
        encoded = tokenize_pairs(tokenizer, batch, args)
        origin = encoded.pop("overflow_to_sample_mapping")
        offsets_all = encoded.pop("offset_mapping")
        starts: List[int] = []
        ends: List[int] = []
        for i, offsets in enumerate(offsets_all):
            cls_index = encoded["input_ids"][i].index(tokenizer.cls_token_id)
            sequence = encoded.sequence_ids(i)
            sample = origin[i]
            if not batch["answer_start"][sample]:
                starts.append(cls_index)
                ends.append(cls_index)
                continue
            first_char = batch["answer_start"][sample][0]
            last_char = first_char + len(batch["answer_text"][sample][0])
            context_tokens = [t for t, s in enumerate(sequence) if s == 1]
            lo, hi = context_tokens[0], context_tokens[-1]
            if offsets[lo][0] > first_char or offsets[hi][1] < last_char:
                starts.append(cls_index)
                ends.append(cls_index)
                continue
            start = lo
            while start <= hi and offsets[start][0] <= first_char:
                start += 1
            end = hi
            while end >= lo and offsets[end][1] >= last_char:
                end -= 1
            starts.append(start - 1)
            ends.append(end + 1)
        encoded["start_positions"] = starts
        encoded["end_positions"] = ends
        return dict(encoded)

    return prepare


def eval_features(tokenizer: Any, args: argparse.Namespace) -> Any:
    """Return a batched map function keeping, per window, its question id and context offsets."""

    def prepare(batch: Dict[str, List[Any]]) -> Dict[str, List[Any]]:
        encoded = tokenize_pairs(tokenizer, batch, args)
        origin = encoded.pop("overflow_to_sample_mapping")
        example_ids: List[str] = []
        offsets_kept: List[List[Optional[List[int]]]] = []
        for i, offsets in enumerate(encoded["offset_mapping"]):
            sequence = encoded.sequence_ids(i)
            example_ids.append(batch["id"][origin[i]])
            offsets_kept.append([list(o) if sequence[t] == 1 else None for t, o in enumerate(offsets)])
        encoded["offset_mapping"] = offsets_kept
        encoded["example_id"] = example_ids
        return dict(encoded)

    return prepare


def best_answers(
    records: List[Dict[str, Any]],
    features: Any,
    start_logits: Any,
    end_logits: Any,
    n_best: int,
    max_answer_length: int,
) -> Dict[str, str]:
    """Pick, for every question, the highest scoring valid span over all of its windows."""
    import numpy as np

    by_example: Dict[str, List[int]] = collections.defaultdict(list)
    for index, example_id in enumerate(list(features["example_id"])):
        by_example[example_id].append(index)
    offsets_all = list(features["offset_mapping"])
    predictions: Dict[str, str] = {}
    for record in records:
        best_score, best_text = None, ""
        for index in by_example.get(record["id"], []):
            starts, ends, offsets = start_logits[index], end_logits[index], offsets_all[index]
            top_starts = np.argsort(starts)[-1 : -n_best - 1 : -1]
            top_ends = np.argsort(ends)[-1 : -n_best - 1 : -1]
            for s in top_starts:
                for e in top_ends:
                    if s >= len(offsets) or e >= len(offsets) or offsets[s] is None or offsets[e] is None:
                        continue
                    if e < s or e - s + 1 > max_answer_length:
                        continue
                    score = float(starts[s] + ends[e])
                    if best_score is None or score > best_score:
                        best_score = score
                        best_text = record["context"][offsets[s][0] : offsets[e][1]]
        predictions[record["id"]] = best_text
    return predictions


# ----------------------------------------------------------------------------- dialect


def training_arguments(args: argparse.Namespace, world_size: int) -> Any:
    """Build TrainingArguments with the field names this transformers has (the flag dialect)."""
    from transformers import TrainingArguments

    fields = {f.name: f for f in dataclasses.fields(TrainingArguments)}
    chosen: Dict[str, Any] = {}
    notes: List[str] = []
    kwargs: Dict[str, Any] = {
        "output_dir": args.output_dir,
        "per_device_train_batch_size": args.per_device_train_batch_size,
        "per_device_eval_batch_size": args.per_device_eval_batch_size,
        "num_train_epochs": args.num_train_epochs,
        "max_steps": args.max_steps,
        "learning_rate": args.learning_rate,
        "weight_decay": args.weight_decay,
        "logging_strategy": "steps",
        "logging_steps": args.logging_steps,
        # The first step's loss is the baseline the progress and the metrics compare against.
        "logging_first_step": True,
        "save_strategy": args.save_strategy,
        "save_steps": args.save_steps,
        "save_total_limit": args.save_total_limit,
        "save_on_each_node": args.save_on_each_node,
        "report_to": "none",
        "disable_tqdm": True,
        "seed": args.seed,
        "bf16": args.bf16,
        "ddp_timeout": args.ddp_timeout,
    }

    if args.no_cuda or args.use_cpu:
        name = "use_cpu" if "use_cpu" in fields else "no_cuda"
        kwargs[name] = True
        chosen["cpu_arg"] = name

    backend = args.ddp_backend or args.xpu_backend
    if backend and world_size < 2:
        notes.append(f"backend {backend} ignored: one process (a backend without a process group fails)")
        backend = None
    if backend:
        name = "ddp_backend" if "ddp_backend" in fields else "xpu_backend"
        choices = (fields[name].metadata or {}).get("choices")
        if choices and backend not in choices:
            raise SystemExit(
                "transformers {} does not accept backend {!r} (it knows {}): use gloo".format(
                    transformers_version(), backend, ", ".join(choices)
                )
            )
        if backend == "ccl":
            try:
                import oneccl_bindings_for_pytorch  # noqa: F401
            except ImportError as error:
                raise SystemExit(
                    f"backend ccl needs oneccl_bindings_for_pytorch ({error}): install it or use gloo"
                ) from error
        kwargs[name] = backend
        chosen["backend_arg"] = name
    chosen["backend"] = backend

    chosen["use_ipex"] = False
    if args.use_ipex:
        if "use_ipex" not in fields:
            notes.append(f"--use_ipex ignored: transformers {transformers_version()} has no use_ipex")
        else:
            try:
                import intel_extension_for_pytorch  # noqa: F401
            except ImportError:
                notes.append("--use_ipex ignored: intel_extension_for_pytorch is not installed")
            else:
                kwargs["use_ipex"] = True
                chosen["use_ipex"] = True

    unknown = sorted(set(kwargs) - set(fields))
    for name in unknown:
        notes.append(f"{name} not known to this transformers: left out")
        kwargs.pop(name)
    chosen["notes"] = notes
    return TrainingArguments(**kwargs), chosen


def transformers_version() -> str:
    import transformers

    return transformers.__version__


# ----------------------------------------------------------------------------- progress


def make_callbacks(args: argparse.Namespace, global_batch: int) -> List[Any]:
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        """Rank 0 appends a JSON line per logged step; every rank times its epochs."""

        def __init__(self) -> None:
            self.started = 0.0
            self.last_time = 0.0
            self.last_step = 0
            self.epoch_started = 0.0
            self.epoch_seconds: List[float] = []
            self.losses: List[float] = []

        def on_train_begin(self, targs: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.started = self.last_time = self.epoch_started = time.time()
            if args.progress_file and state.is_world_process_zero:
                os.makedirs(os.path.dirname(os.path.abspath(args.progress_file)), exist_ok=True)
                open(args.progress_file, "w").close()

        def on_epoch_begin(self, targs: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.epoch_started = time.time()

        def on_epoch_end(self, targs: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.epoch_seconds.append(round(time.time() - self.epoch_started, 3))

        def on_log(self, targs: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            if not logs or "loss" not in logs:
                return
            now = time.time()
            loss = float(logs["loss"])
            self.losses.append(loss)
            steps = state.global_step - self.last_step
            rate = steps * global_batch / max(now - self.last_time, 1e-9)
            per_step = (now - self.started) / max(state.global_step, 1)
            self.last_time, self.last_step = now, state.global_step
            if not state.is_world_process_zero:
                return
            line = {
                "step": state.global_step,
                "total_steps": state.max_steps,
                "epoch": round(float(state.epoch or 0.0), 4),
                "loss": loss,
                "samples_per_second": round(rate, 3),
                "eta_seconds": round(max(state.max_steps - state.global_step, 0) * per_step, 1),
                "rank": env_int(RANK_VARS, 0),
            }
            log(f"progress {json.dumps(line)}")
            if args.progress_file:
                with open(args.progress_file, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(line) + "\n")

    return [Progress()]


# ----------------------------------------------------------------------------- main


def evaluate(trainer: Any, records: List[Dict[str, Any]], features: Any, args: argparse.Namespace) -> Dict[str, Any]:
    started = time.time()
    model_inputs = features.remove_columns(["example_id", "offset_mapping"])
    output = trainer.predict(model_inputs)
    start_logits, end_logits = output.predictions[:2]
    predictions = best_answers(records, features, start_logits, end_logits, args.n_best_size, args.max_answer_length)
    scores = squad_scores(predictions, {r["id"]: r["answer_text"] for r in records})
    scores["seconds"] = round(time.time() - started, 3)
    scores["sample"] = {qid: predictions[qid] for qid in list(predictions)[:3]}
    return scores


def gather_ranks(info: Dict[str, Any]) -> List[Dict[str, Any]]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        gathered: List[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, info)
        return sorted(gathered, key=lambda item: item["rank"])
    return [info]


def leave_together() -> None:
    """Wait until every rank is done with the process group: after this, a rank can end without a peer still
    needing it. The group is not destroyed (see end)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def watch_first_collective(environ: Dict[str, str]) -> Optional[threading.Timer]:
    """Start the watch of the first collective when the role asked for it (FIRST_COLLECTIVE_TIMEOUT_VAR); None
    when it did not. A thread, not SIGALRM: a signal handler would wait for the blocking C++ call to return."""
    value = environ.get(FIRST_COLLECTIVE_TIMEOUT_VAR, "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise SystemExit(f"{FIRST_COLLECTIVE_TIMEOUT_VAR} must be a number of seconds above 0, got {value!r}")
    hint = environ.get(FIRST_COLLECTIVE_HINT_VAR, "").strip()
    timer = threading.Timer(seconds, first_collective_timed_out, args=(seconds, hint))
    timer.daemon = True
    timer.start()
    return timer


def first_collective_timed_out(seconds: float, hint: str) -> None:
    rank = env_int(RANK_VARS, 0)
    sys.stderr.write(
        f"TimeoutError: rank {rank} on {socket.gethostname()}: the job's first collective (the rendezvous at "
        f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')} and a barrier over every rank) "
        f"did not complete within {seconds:g} s, the smoke test's timeout; the smoke test was skipped, its record "
        f"matching the cluster's fingerprint. {hint}\n"
    )
    end(FIRST_COLLECTIVE_EXIT)


def first_collective_done(timer: Optional[threading.Timer]) -> None:
    """The first collective of the job, under the watch: a barrier over every rank once the process group is up."""
    if timer is None:
        return
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
    timer.cancel()
    log(f"first collective done within the smoke test's timeout ({timer.args[0]:g} s)")


def versions() -> Dict[str, str]:
    found = {"python": platform.python_version()}
    for name in ("torch", "transformers", "accelerate", "datasets", "tokenizers"):
        try:
            module = __import__(name)
            found[name] = str(getattr(module, "__version__", "?"))
        except ImportError:
            found[name] = "missing"
    return found


def attempts(metrics: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The job's earlier attempts (the file amx.cluster's run agent names in AMX_CLUSTER_ATTEMPTS_FILE), then this
    one: which checkpoint it went on from, and the steps it trained."""
    earlier: List[Dict[str, Any]] = []
    path = os.environ.get("AMX_CLUSTER_ATTEMPTS_FILE")
    if path:
        try:
            with open(path, encoding="utf-8") as handle:
                earlier = list(json.load(handle))
        except (OSError, ValueError, TypeError):
            earlier = []
    resumed = metrics.get("resumed_from") or {}
    steps = (metrics.get("train") or {}).get("steps")
    this = {
        "attempt": len(earlier) + 1,
        "resumed_from": resumed.get("checkpoint"),
        "first_step": (resumed.get("step") or 0) + 1,
        "last_step": steps,
        "wall_seconds": metrics.get("wall_seconds"),
    }
    return [*earlier, this]


def checkpoint_step(folder: str) -> Optional[int]:
    """The step of a checkpoint folder, from its trainer_state.json."""
    try:
        with open(os.path.join(folder, "trainer_state.json"), encoding="utf-8") as handle:
            return int(json.load(handle).get("global_step"))
    except (OSError, ValueError, TypeError):
        return None


def first_last(values: Iterable[float]) -> Dict[str, Optional[float]]:
    items = list(values)
    return {"first": items[0] if items else None, "last": items[-1] if items else None}


def main(argv: Sequence[str]) -> int:
    wall_started = time.time()
    args = parse_args(argv)
    world_size = env_int(WORLD_SIZE_VARS, 1)

    import datasets
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer, Trainer, default_data_collator

    datasets.disable_progress_bars()
    # The watch starts after the imports: on a loaded node they alone can outlast the timeout, and what the skipped
    # smoke test would have told is whether the ranks meet, not how fast they import.
    watch = watch_first_collective(dict(os.environ))
    targs, dialect = training_arguments(args, world_size)
    # The device's setup starts the process group (the rendezvous); the barrier is the job's first collective.
    if targs.device.type != "cpu":
        raise SystemExit(f"qa_finetune trains on the CPU; the training arguments chose {targs.device}")
    first_collective_done(watch)
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    if not getattr(tokenizer, "is_fast", False):
        raise SystemExit(f"the tokenizer in {args.model_name_or_path} is not a fast tokenizer: offsets are needed")
    model = AutoModelForQuestionAnswering.from_pretrained(args.model_name_or_path)
    accepted = set(inspect.signature(model.forward).parameters)

    def model_columns(dataset: Any, keep: Sequence[str] = ()) -> Any:
        extra = [c for c in dataset.column_names if c not in accepted and c not in keep]
        return dataset.remove_columns(extra) if extra else dataset

    train_dataset = None
    train_records: List[Dict[str, Any]] = []
    if args.do_train:
        train_records = load_squad(args.train_file, args.max_train_samples)
        raw = datasets.Dataset.from_list(train_records)
        train_dataset = model_columns(
            raw.map(train_features(tokenizer, args), batched=True, remove_columns=raw.column_names)
        )
    eval_records: List[Dict[str, Any]] = []
    eval_dataset = None
    if args.do_eval:
        eval_records = load_squad(args.validation_file, args.max_eval_samples)
        raw = datasets.Dataset.from_list(eval_records)
        eval_dataset = model_columns(
            raw.map(eval_features(tokenizer, args), batched=True, remove_columns=raw.column_names),
            keep=("example_id", "offset_mapping"),
        )

    global_batch = args.per_device_train_batch_size * max(targs.world_size, 1)
    callbacks = make_callbacks(args, global_batch)
    trainer = Trainer(
        model=model,
        args=targs,
        train_dataset=train_dataset,
        data_collator=default_data_collator,
        callbacks=callbacks,
    )
    try:  # the progress callback prints its own lines; drop the raw log dicts of the default printer
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)
    except ImportError:
        pass
    rank, world = targs.process_index, targs.world_size
    log(
        f"world {world}, local rank {targs.local_process_index}, device {targs.device}, "
        f"torch threads {torch.get_num_threads()}, dialect {json.dumps(dialect)}"
    )

    metrics: Dict[str, Any] = {
        "script": "qa_finetune.py",
        "versions": versions(),
        "world_size": world,
        "dialect": dialect,
        "args": vars(args),
    }
    if eval_dataset is not None:
        metrics["eval_before"] = evaluate(trainer, eval_records, eval_dataset, args)
        if trainer.is_world_process_zero():
            log("eval before training: {}".format(json.dumps(metrics["eval_before"])))

    batches_per_epoch = 0
    if train_dataset is not None:
        batches_per_epoch = len(trainer.get_train_dataloader())
        if args.resume_from_checkpoint:
            # Read before training: the checkpoint may be rotated away (save_total_limit) by the time it ends.
            metrics["resumed_from"] = {
                "checkpoint": args.resume_from_checkpoint,
                "step": checkpoint_step(args.resume_from_checkpoint),
            }
        result = trainer.train(resume_from_checkpoint=args.resume_from_checkpoint)
        progress = callbacks[0]
        losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
        first_last_loss = first_last(losses)
        metrics["train"] = {
            "questions": len(train_records),
            "features": len(train_dataset),
            "global_batch_size": global_batch,
            "steps": trainer.state.global_step,
            "epochs": round(float(trainer.state.epoch or 0.0), 4),
            "loss_first": first_last_loss["first"],
            "loss_last": first_last_loss["last"],
            "losses": losses,
            "train_loss": result.training_loss,
            "samples_per_second": result.metrics.get("train_samples_per_second"),
            "runtime_seconds": result.metrics.get("train_runtime"),
            "epoch_seconds": progress.epoch_seconds,
        }
        if not args.no_save:
            trainer.save_model(args.output_dir)
            if trainer.is_world_process_zero():
                tokenizer.save_pretrained(args.output_dir)
    if eval_dataset is not None:
        metrics["eval_after"] = evaluate(trainer, eval_records, eval_dataset, args)
        if trainer.is_world_process_zero():
            log("eval after training: {}".format(json.dumps(metrics["eval_after"])))

    metrics["ranks"] = gather_ranks(
        {
            "rank": rank,
            "local_rank": targs.local_process_index,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "batches_per_epoch": batches_per_epoch,
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "torch_threads": torch.get_num_threads(),
        }
    )
    metrics["wall_seconds"] = round(time.time() - wall_started, 3)
    metrics["attempts"] = attempts(metrics)
    if trainer.is_world_process_zero():
        if args.metrics_file:
            os.makedirs(os.path.dirname(os.path.abspath(args.metrics_file)), exist_ok=True)
            with open(args.metrics_file, "w", encoding="utf-8") as handle:
                json.dump(metrics, handle, indent=1, sort_keys=True)
                handle.write("\n")
        summary = {k: metrics[k] for k in ("world_size", "wall_seconds") if k in metrics}
        for key in ("eval_before", "eval_after"):
            if key in metrics:
                summary[key] = {m: round(metrics[key][m], 2) for m in ("exact_match", "f1")}
        if "train" in metrics:
            summary["loss"] = [metrics["train"]["loss_first"], metrics["train"]["loss_last"]]
        log(f"done {json.dumps(summary)}")
    leave_together()
    end(0)
    return 0


def end(code: int) -> None:
    """End the process once its output is flushed, skipping every destructor: the teardown of torch's
    distributed objects can hang (seen in the cluster scenario: rank 0 stuck after its last line, in the
    release of main's locals once the other rank had gone), and a rank that never ends holds the whole job.
    Called while main's objects are still alive, so that none of them is released first."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    try:
        end(main(sys.argv[1:]))
    except SystemExit as stop:
        # Ended here too, while the traceback still holds main's objects: an error must not hang in their release.
        if isinstance(stop.code, int) or stop.code is None:
            end(stop.code or 0)
        print(stop.code, file=sys.stderr)
        end(1)
    except BaseException:
        traceback.print_exc()
        end(1)
