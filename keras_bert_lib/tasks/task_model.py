"""TaskModel: what the fine-tuning models share — raw strings in, the fine-tuning regimes, and
`from_checkpoint`."""

import contextlib
import logging

import keras
import numpy as np

from keras_bert_lib.heads import Pooling
from keras_bert_lib.models.checkpoint_loading import load_checkpoint
from keras_bert_lib.models.trainable_blocks import set_trainable_blocks
from keras_bert_lib.runtime.compile_path import choose_inference_dtype, choose_jit_compile
from keras_bert_lib.runtime.dtype_copy import weights_fingerprint, with_dtype
from keras_bert_lib.runtime.entry_points import EntryPoints, as_array, id_rows
from keras_bert_lib.runtime.input_checks import is_tf_dataset

# The pooling and task heads compute in float32 whatever the encoder's policy, as Keras'
# mixed-precision guide advises for a model's last layers: a bfloat16 head would round the
# logits to 8 bits of mantissa (a classifier's near-ties flip on that), for a negligible share
# of the work. The pre-training heads follow the encoder (their V-wide matmul is not negligible).
HEAD_DTYPE = "float32"
logger = logging.getLogger(__name__)
POOLINGS = ("cls", "mean")  # a classifier's or cross-encoder's: the [CLS] pooler, or the masked mean
FIT_LEARNING_RATE, FIT_WARMUP = 5e-5, 0.1  # BERT's fine-tuning recipe, as `keras-bert finetune`'s defaults


def default_optimizer(steps=None, learning_rate=FIT_LEARNING_RATE):
    """The optimizer a task model trains with unless `compile(optimizer=...)` says otherwise:
    `keras-bert finetune`'s, BERT's fine-tuning recipe (`training.create_optimizer`): AdamW with
    peak `learning_rate` (5e-5), β 0.9/0.999, ε 1e-6, weight decay 0.01 except on biases and LayerNorm, gradients
    clipped at global norm 1.0, linear warm-up over the first 10% of `steps` then linear decay to
    0 at the last. A task model's `fit` sizes it to the call (epochs × batches): each `fit` on the
    default optimizer is one run, with fresh moments, as each `keras-bert finetune` is. With
    `steps` unknown (None: a stream of unknown length) the rate stays at its peak. Another peak,
    sized by `fit` the same way: `model.compile(optimizer=default_optimizer(learning_rate=3e-4))`.

    Example:
        ```python
        from keras_bert_lib.tasks.task_model import default_optimizer
        optimizer = default_optimizer(steps=100)
        round(float(optimizer.learning_rate), 8)   # 0.0
        ```
    """
    if steps is None:  # Keras' own AdamW: a new task model imports no TensorFlow on the other backends
        optimizer = keras.optimizers.AdamW(learning_rate=learning_rate, weight_decay=0.01, epsilon=1e-6,
                                           global_clipnorm=1.0)
        optimizer.exclude_from_weight_decay(var_names=["gamma", "beta", "bias"])  # training.optimizers.NO_DECAY
    else:  # what keras-bert finetune builds (training needs TensorFlow's data pipelines anyway)
        from keras_bert_lib.training.optimizers import create_optimizer

        optimizer = create_optimizer("adamw", peak_learning_rate=learning_rate,
                                     warmup_steps=int(FIT_WARMUP * steps), total_steps=max(steps, 1),
                                     weight_decay=0.01, clipnorm=1.0)
    optimizer.sized_by_fit = {"steps": steps, "learning_rate": learning_rate}  # read by TaskModel.fit; a
    # `.keras` file records this, and loads default_optimizer(**it) (Keras' config leaves out the exclusions)
    return optimizer


def _fit_steps(x, args, kwargs):
    """Optimizer steps a `fit(x, ...)` call takes (epochs × batches), or None where x's length is
    not known (a generator, a dataset of unknown cardinality)."""
    epochs = kwargs.get("epochs", args[1] if len(args) > 1 else 1) - kwargs.get("initial_epoch", 0)
    per_epoch = kwargs.get("steps_per_epoch")
    if per_epoch is None:
        batch = kwargs.get("batch_size", args[0] if args else None) or 32
        if is_tf_dataset(x):
            cardinality = int(x.cardinality())
            per_epoch = cardinality if cardinality >= 0 else None
        elif isinstance(x, keras.utils.PyDataset):  # batches already (LengthBatches among them)
            per_epoch = len(x)
        else:
            rows = _rows(x)
            per_epoch = -(-rows // batch) if rows else None
    return None if per_epoch is None else max(epochs, 1) * per_epoch


class TaskModel(EntryPoints, keras.Model):
    """Base of the task models: an encoder, an optional `BertPreprocessor`, a fine-tuning regime.

    Every way in is Keras' own after the task's preprocessing (`runtime.entry_points.EntryPoints`).
    Built with a preprocessor, each (`predict`, `fit`, `evaluate`, `*_on_batch`, a call)
    takes raw strings — a list or 1-D array of texts, or a tuple `(first, second)` of them for
    pairs, or a `tf.data.Dataset` of those (with labels) — and tokenizes them before the compiled
    program (tokenizing is TensorFlow's; on other backends pass the id dict). The id dict of
    `token_ids`, `segment_ids`, `padding_mask` is taken in either case.

    A new task model is compiled with its task's loss and metrics and `default_optimizer()`: each
    `fit` trains as `keras-bert finetune` does (AdamW 5e-5, 10% warm-up, linear decay, clipping).
    Subclasses build the functional graph from `_encoder_inputs()` and end with `_finish_init`.

    Example:
        ```python
        from keras_bert_lib import TextClassifier, bert_tiny
        from keras_bert_lib.tasks import TaskModel
        classifier = TextClassifier(bert_tiny(num_hidden_layers=1), num_classes=2)
        isinstance(classifier, TaskModel), classifier.inference_dtype   # (True, 'auto')
        ```
    """

    _widths_vary = True  # predict and evaluate go by length: a graph per width, not a compile per width
    # The dtype `predict` runs the encoder in (`compile_path.choose_inference_dtype`): "auto" is
    # bfloat16 weights on CPUs with AVX512-BF16 or AMX, the model's own dtype elsewhere; None pins
    # the model's own; a policy name picks one; "int8" runs `predict` on `runtime.openvino.Int8Runtime`
    # (int8 weights and activations, calibrated on the first call's texts). Saved with the model.
    inference_dtype = "auto"
    # What `predict` runs batches on: None, Keras (TensorFlow's XLA or graph); or an object with
    # `calibrate(model, ids)` and `batch_function(model)` → (id dict → outputs), such as
    # `runtime.openvino.OpenVINORuntime()` or `Int8Runtime(calibration=texts)`. Not saved: a runtime
    # is a choice of the machine that predicts.
    runtime = None

    def _finish_init(self, encoder, preprocessor, trainable_blocks, uses_pooler):
        """The shared attributes, the regime, and the task's default compile (as keras-hub's
        tasks): a new task model can `fit` at once; `compile(...)` again to change anything."""
        self.encoder = encoder
        self.preprocessor = preprocessor
        self.trainable_blocks = trainable_blocks
        set_trainable_blocks(encoder, trainable_blocks, pooler=uses_pooler)
        self.compile()

    @staticmethod
    def _pooled(encoder, inputs, pooling, dtype):
        """(pooled (B, H), whether it is the [CLS] pooler): the pooler for "cls" where the encoder
        has one, else the [CLS] state (DistilBERT) or the masked mean of the last hidden states.
        For "cls" the encoder's last block computes [CLS] alone (`BertEncoder.call(output_range=1)`:
        the same vector, 5/6 of that block's matrix products skipped, 14% of a six-layer encoder's)."""
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r} is not one of {POOLINGS}.")
        every_layer = encoder.output_hidden_states or encoder.output_attentions
        encoded = encoder(inputs, output_range=1 if pooling == "cls" and not every_layer else None)
        if pooling == "cls" and "pooled_output" in encoded:
            return encoded["pooled_output"], True
        pooled = Pooling(pooling, name="pooling", dtype=dtype)(encoded["sequence_output"],
                                                                padding_mask=inputs["padding_mask"])
        return pooled, False

    @staticmethod
    def _encoder_inputs():
        return {name: keras.Input((None,), dtype="int32", name=name)
                for name in ("token_ids", "segment_ids", "padding_mask")}

    def _input_config(self):
        return self.encoder.config

    @classmethod
    def from_checkpoint(cls, path, *args, sequence_length=128, lowercase=None, **kwargs):
        """The task model on a checkpoint folder's encoder, taking raw strings through the
        folder's own tokenizer (`load_checkpoint` + `load_preprocessor`); the head is new.

        Args:
            path: a folder `load_checkpoint` and `load_preprocessor` read (Google TF1 or HuggingFace).
            sequence_length: int. Tokens per text (pair), [CLS] and [SEP]s included.
            lowercase: bool or None. Overrides the casing the folder's files state.
            *args, **kwargs: the task model's own arguments (e.g. `num_classes`).
        """
        from keras_bert_lib.text import load_preprocessor  # TensorFlow-only; the rest runs on any backend

        preprocessor = load_preprocessor(path, sequence_length=sequence_length, lowercase=lowercase)
        return cls(load_checkpoint(path), *args, preprocessor=preprocessor, **kwargs)

    # --- raw strings → ids -------------------------------------------------------------------
    def _tokenizer_and_length(self):
        """The preprocessor's tokenizer and sequence length, for tasks that pack text themselves
        (question-answering windows, words for tagging)."""
        if self.preprocessor is None:
            raise ValueError(f"{type(self).__name__} was built without a preprocessor, so it cannot read raw "
                             "text; build it with preprocessor=... (or from_checkpoint).")
        return self.preprocessor.tokenizer, self.preprocessor.sequence_length

    def _input_ids(self, x):
        """The id dict for `x`: a dict (or a PyDataset of batches) is kept; texts go through the
        preprocessor. No texts give an id dict of no rows (the preprocessor takes no empty batch)."""
        if not isinstance(x, dict) and _rows(x) == 0:
            return {k: v[:0] for k, v in self._ids(_one_row(x)).items()}
        return self._ids(x)

    def _ids(self, x):
        if x is None:
            raise ValueError(f"{type(self).__name__} got None; pass texts (a string, a list of them, or a tuple "
                             "(first, second) of them for pairs), a tf.data.Dataset of them, or the id dict "
                             "(token_ids, segment_ids, padding_mask).")
        if isinstance(x, (dict, keras.utils.PyDataset)):
            return x
        if is_tf_dataset(x) and self.preprocessor is None and not any(
                getattr(s.dtype, "name", None) == "string" for s in keras.tree.flatten(x.element_spec)):
            return x  # a dataset of id dicts
        if self.preprocessor is None:
            raise ValueError(f"{type(self).__name__} was built without a preprocessor, so it takes the id dict "
                             "(token_ids, segment_ids, padding_mask); build it with preprocessor=... (or "
                             "from_checkpoint) to pass raw strings.")
        if is_tf_dataset(x):
            return x.map(self._ids_of_element)
        ids, cut = self.preprocessor.with_truncation(_as_batch(x))
        cut = int(np.sum(cut))
        if cut:  # cut as BERT's packing does; said once per call, with the count
            logger.warning("%d of %d texts are longer than the model's %d tokens and were cut to fit "
                           "(BertPreprocessor(sequence_length=...) takes more, up to the encoder's %d positions).",
                           cut, len(ids["token_ids"]), self.preprocessor.sequence_length,
                           self.encoder.config.max_sequence_length)
        return {k: v.numpy() for k, v in ids.items()}

    def _ids_of_element(self, *element):
        """A dataset element: texts, (texts, y) or (texts, y, sample_weight); texts a string
        tensor, a (first, second) tuple of them, or an id dict."""
        if all(getattr(e, "dtype", None) == "string" for e in element):  # texts only: one text or a pair
            return self.preprocessor(element[0] if len(element) == 1 else tuple(element))
        features, *rest = element
        if not isinstance(features, dict):
            features = self.preprocessor(tuple(features) if isinstance(features, (tuple, list)) else features)
        return (features, *rest)

    def predict_runtime(self):
        """What `predict` runs batches on in place of Keras: the model's `runtime`; else, where
        `inference_dtype` is "int8", an `Int8Runtime` of its own (made once, calibrated on the first
        `predict` call's texts, quantized again when the weights change); else None.

        Example:
            ```python
            from keras_bert_lib import bert_tiny
            from keras_bert_lib.tasks import SentenceEmbedder
            embedder = SentenceEmbedder(bert_tiny(num_hidden_layers=1))
            assert embedder.predict_runtime() is None
            embedder.inference_dtype = "int8"
            assert type(embedder.predict_runtime()).__name__ == "Int8Runtime"
            ```
        """
        if self.runtime is not None or self.inference_dtype != "int8":
            return self.runtime
        if getattr(self, "_int8_runtime", None) is None:
            from keras_bert_lib.runtime.openvino import Int8Runtime

            object.__setattr__(self, "_int8_runtime", Int8Runtime())  # not tracked: no weights of ours
        return self._int8_runtime

    def inference_model(self):
        """The model `predict` runs: this one, or (`inference_dtype`) a copy whose encoder holds
        its weights in another dtype — bfloat16 on CPUs with AVX512-BF16 or AMX by default, 1.5
        times faster on real text with cosine at least 0.999 to float32. The copy is made once and
        made again when this model's weights change (`fit`, `load_weights`, an assignment).

        Example:
            ```python
            from keras_bert_lib import bert_tiny
            from keras_bert_lib.tasks import SentenceEmbedder
            embedder = SentenceEmbedder(bert_tiny(num_hidden_layers=1))
            embedder.inference_dtype = None   # predict in the model's own dtype (float32 here)
            assert embedder.inference_model() is embedder
            ```
        """
        dtype = None if self.inference_dtype == "int8" else choose_inference_dtype(
            self.inference_dtype, self.encoder.layers_dtype_policy, self.encoder.config.hidden_size)
        if dtype is None:
            return self
        stamp = (dtype, weights_fingerprint(self.weights))
        cached = getattr(self, "_inference_copy", None)
        if cached is None or cached[0] != stamp:
            copy = with_dtype(self, dtype)
            copy.inference_dtype = None
            copy.jit_compile = choose_jit_compile(dtype, hidden_size=self.encoder.config.hidden_size,
                                                  widths_vary=True)[0]
            object.__setattr__(self, "_inference_copy", (stamp, copy))  # not tracked: its weights are not ours
        return self._inference_copy[1]

    def _targets(self, y):
        """The labels as Keras takes them; a task with named classes maps and checks them."""
        return as_array(y)

    def _prepare_fit(self, x, args, kwargs):
        """On the default optimizer a `fit` call is one run of BERT's recipe, as `keras-bert
        finetune` trains: `default_optimizer` sized to this call's steps (then its slots, built)."""
        if getattr(self.optimizer, "sized_by_fit", False):
            strategy = getattr(self, "distribute_strategy", None)  # TensorFlow's; JAX lays out by batch
            with strategy.scope() if strategy is not None else contextlib.nullcontext():
                self.optimizer = default_optimizer(_fit_steps(x, args, kwargs),
                                                   self.optimizer.sized_by_fit["learning_rate"])
            self.train_function = None  # traced again with the new optimizer
        super()._prepare_fit(x, args, kwargs)

    def _optimizer_config(self, optimizer):
        """The default optimizer as `default_optimizer`'s arguments; another as Keras records it."""
        sized = getattr(optimizer, "sized_by_fit", None)
        return {"default_optimizer": sized} if sized else super()._optimizer_config(optimizer)

    def _optimizer_from_config(self, config):
        if isinstance(config, dict) and "default_optimizer" in config:  # as it was sized, with its rule
            return default_optimizer(**config["default_optimizer"])
        return super()._optimizer_from_config(config)

    def checkpoint_class_names(self):
        """The labels `save_checkpoint` writes as HF `*ForSequenceClassification`'s `id2label`, or
        None where only the encoder is written (a sentence embedder)."""
        return None

    # --- config --------------------------------------------------------------------------------
    def _base_config(self):
        return {"name": self.name, "encoder": keras.saving.serialize_keras_object(self.encoder),
                "preprocessor": (keras.saving.serialize_keras_object(self.preprocessor)
                                 if self.preprocessor is not None else None),
                "trainable_blocks": self.trainable_blocks, "inference_dtype": self.inference_dtype}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("preprocessor"), dict):
            import keras_bert_lib.text  # noqa: F401  registers BertPreprocessor (TensorFlow-only) for the loader
        for key in ("encoder", "preprocessor"):
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        inference_dtype = config.pop("inference_dtype", "auto")
        model = cls(**config)
        model.inference_dtype = inference_dtype
        return model


def _as_batch(x):
    """A lone text (a str) or a lone pair (a tuple of two str) as a batch of one."""
    if isinstance(x, str):
        return [x]
    if isinstance(x, tuple) and x and all(isinstance(part, str) for part in x):
        return tuple([part] for part in x)
    return x


def _rows(x):
    """How many rows `x` holds: texts, a (first, second) tuple of them, or an id dict; None when
    that is not known without reading it (a dataset, a generator)."""
    x = _as_batch(x)
    if isinstance(x, dict):
        return id_rows(x)
    if isinstance(x, tuple) and x:
        x = x[0]
    return len(x) if isinstance(x, (list, np.ndarray)) else None


def _one_row(x):
    """One text of the kind of `x` (an empty batch of texts): an empty text, or an empty pair."""
    return tuple([""] for _ in x) if isinstance(x, tuple) else [""]
