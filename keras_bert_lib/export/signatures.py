"""What an exported model computes: each task's named outputs, on the id tensors and on raw strings."""

import types

import numpy as np
import tensorflow as tf

from keras_bert_lib.models import BertEncoder
from keras_bert_lib.runtime.input_checks import INPUTS as ID_NAMES  # token_ids, segment_ids, padding_mask
from keras_bert_lib.tasks import CrossEncoder, SentenceEmbedder, SpanQuestionAnswerer, TextClassifier, TokenClassifier

PAIR_TASKS = (CrossEncoder, SpanQuestionAnswerer)  # always two texts: (query, passage), (question, context)


def output_names(model):
    """The serving outputs of `model`, by task (the SavedModel's, TFLite's and ONNX's names).

    Example:
        ```python
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.export.signatures import output_names
        output_names(bert_tiny())   # ("sequence_output", "pooled_output")
        ```
    """
    if isinstance(model, TextClassifier):
        return ("score",) if model.num_classes == 1 else ("probabilities", "label")
    if isinstance(model, SentenceEmbedder):
        return ("embeddings",)
    if isinstance(model, CrossEncoder):
        return ("score",)
    if isinstance(model, SpanQuestionAnswerer):
        return ("start_logits", "end_logits")
    if isinstance(model, TokenClassifier):
        return ("logits", "tag_ids")
    if isinstance(model, BertEncoder):
        return ("sequence_output", "pooled_output") if model.config.with_pooler else ("sequence_output",)
    raise ValueError(f"Export takes an encoder (BertEncoder) or a task model (TextClassifier, SentenceEmbedder, "
                     f"CrossEncoder, SpanQuestionAnswerer, TokenClassifier), not {type(model).__name__}.")


def task_outputs(model, ids):
    """The named float32 (and int32 label) outputs of `model` on an id dict, in `output_names` order.

    A classifier gives softmax `probabilities` (B, C) and the `label` index (B,) (a regression, one
    `score`); a token classifier its `logits` (B, T, C) and `tag_ids` (B, T); an encoder its
    `sequence_output` and `pooled_output` only (not the hidden states or attention it may return).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.export.signatures import task_outputs
        ids = {k: np.ones((1, 4), "int32") for k in ("token_ids", "padding_mask")}
        out = task_outputs(bert_tiny(), {**ids, "segment_ids": np.zeros((1, 4), "int32")})
        ```
    """
    output_names(model)  # refuses what it cannot export before any tracing
    return named_outputs(model, model(ids, training=False))


def named_outputs(model, out):
    """`task_outputs` of what `model` gave (its call's or its `predict`'s output, tensors or arrays).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib import TextClassifier, bert_tiny
        from keras_bert_lib.export.signatures import named_outputs
        named = named_outputs(TextClassifier(bert_tiny(num_hidden_layers=1), 2), np.array([[2.0, 0.0]]))
        assert int(named["label"][0]) == 0 and abs(float(named["probabilities"][0, 0]) - 0.8808) < 1e-4
        ```
    """
    names = output_names(model)
    if isinstance(model, TextClassifier):
        logits = tf.cast(out, tf.float32)
        if names == ("score",):
            return {"score": logits[:, 0]}
        return {"probabilities": tf.nn.softmax(logits, axis=-1), "label": tf.argmax(logits, -1, output_type=tf.int32)}
    if isinstance(model, TokenClassifier):
        logits = tf.cast(out, tf.float32)
        return {"logits": logits, "tag_ids": tf.argmax(logits, -1, output_type=tf.int32)}
    if not isinstance(out, dict):
        out = {names[0]: out}
    return {name: tf.cast(out[name], tf.float32) for name in names}


def text_input_names(model, pair=None):
    """("text",) for one text a row, ("text", "text_pair") for two: a cross-encoder's (query,
    passage) and a question answerer's (question, context) always, a classifier's when `pair`.

    Example:
        ```python
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.export.signatures import text_input_names
        text_input_names(bert_tiny(), pair=True)   # ("text", "text_pair")
        ```
    """
    if pair is None:
        pair = isinstance(model, PAIR_TASKS)
    return ("text", "text_pair") if pair else ("text",)


def utf8_or_replaced(texts):
    """Strings with invalid UTF-8 bytes replaced by U+FFFD, which BERT's normaliser then drops:
    a request with broken bytes gets a defined answer, not an op error.

    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.export.signatures import utf8_or_replaced
        utf8_or_replaced(tf.constant([b"caf\\xe9"]))   # [b"caf\\xef\\xbf\\xbd"]
        ```
    """
    return tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)


def agreement(got, expected):
    """(largest max abs difference, smallest cosine) over the float outputs of `expected` that
    `got` also holds (name → array); (nan, nan) if any of `got`'s is not finite.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.export.signatures import agreement
        diff, cosine = agreement({"p": np.array([1.0, 2.0])}, {"p": np.array([1.0, 2.1])})
        diff   # 0.1
        cosine   # 0.999815
        ```
    """
    diff, cosine = 0.0, 1.0
    for name, want in expected.items():
        if np.asarray(want).dtype.kind != "f":
            continue
        a, b = np.asarray(got[name], "float64").ravel(), np.asarray(want, "float64").ravel()
        if not np.isfinite(a).all():
            return float("nan"), float("nan")
        if a.size:
            diff = max(diff, float(np.max(np.abs(a - b))))
            cosine = min(cosine, float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12)))
    return diff, cosine


def check_batch(model, batch=3, length=16, seed=0):
    """Random ids with right padding in one row: the batch every export is checked on.

    Example:
        ```python
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.export.signatures import check_batch
        feed = check_batch(bert_tiny())   # token_ids, segment_ids, padding_mask of (3, 16)
        ```
    """
    config = getattr(model, "encoder", model).config
    length = min(length, config.max_position_embeddings)
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, length), "int32")
    mask[0, length // 2:] = 0
    ids = rng.integers(5, config.vocab_size, (batch, length)).astype("int32") * mask
    segments = np.zeros((batch, length), "int32")
    if config.type_vocab_size > 1:
        segments[:, length // 2:] = 1
    return {"token_ids": ids, "segment_ids": segments * mask, "padding_mask": mask}


class ServingModule(tf.Module):
    """The model, its preprocessor and two `tf.function`s to serve: `ids` on `token_ids`,
    `segment_ids`, `padding_mask` (int32, (B, T)) and, with a preprocessor, `text` on one or two
    string tensors (B,) (unless `text=False`). Each returns the task's named outputs
    (`task_outputs`) and, with `class_names=True`, a classifier's `class_name` (B,) string of its
    `label`, where it was built with `class_names` (what a run's labels were called). What is
    tracked is the model's tf.Variables, not the Keras model: a SavedModel stores each weight once,
    TFLite's converter finds the variables it freezes, and saving traces only the signatures (a
    tracked Keras model adds a `serving_default` function of its own, and of each model inside it,
    traced on every save and revived on every load). The string signature runs the ids one, so
    the encoder is traced once.

    Example:
        ```python
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.export.signatures import ServingModule
        module = ServingModule(bert_tiny())
        signature = module.ids.get_concrete_function()
        ```
    """

    def __init__(self, model, preprocessor=None, pair=None, text=True, class_names=False):
        super().__init__(name="serving")
        output_names(model)
        self._untracked = types.SimpleNamespace(model=model)  # out of the object graph: not tracked
        names = getattr(model, "class_names", None) if class_names and isinstance(model, TextClassifier) else None
        self.class_names = tf.constant([str(n) for n in names]) if names and model.num_classes > 1 else None
        self.model_variables = [getattr(v, "value", v) for v in model.weights]  # each tf.Variable once
        # text=False (TFLite, ONNX: ids only) leaves the tokenizer out of what is traced and saved.
        self.preprocessor = None if not text else (
            preprocessor if preprocessor is not None else getattr(model, "preprocessor", None))
        self.text_names = text_input_names(model, pair)
        ids_spec = {k: tf.TensorSpec((None, None), tf.int32, name=k) for k in ID_NAMES}
        self.ids = tf.function(lambda ids: self._named(task_outputs(model, ids)), input_signature=[ids_spec])
        if self.preprocessor is not None:
            text_spec = {k: tf.TensorSpec((None,), tf.string, name=k) for k in self.text_names}
            self.text = tf.function(self._text, input_signature=[text_spec])
            self.token_counts = tf.function(self._token_counts, input_signature=[text_spec])

    @property
    def model(self):
        """The Keras model the signatures run (not part of what a SavedModel stores)."""
        return self._untracked.model

    def _text(self, texts):
        parts = tuple(utf8_or_replaced(texts[k]) for k in self.text_names)
        ids = self.preprocessor(parts if len(parts) == 2 else parts[0])
        return self.ids({k: tf.cast(ids[k], tf.int32) for k in ID_NAMES})

    def _token_counts(self, texts):
        parts = tuple(utf8_or_replaced(texts[k]) for k in self.text_names)
        ids = self.preprocessor(parts if len(parts) == 2 else parts[0])
        return {"token_counts": tf.reduce_sum(tf.cast(ids["padding_mask"], tf.int32), axis=1)}

    def _named(self, outputs):
        if self.class_names is None:
            return outputs
        return {**outputs, "class_name": tf.gather(self.class_names, outputs["label"])}

    def signatures(self):
        """{"serving_default": strings (or ids without a preprocessor), "serving_ids": ids}, as the
        `tf.function`s: `tf.saved_model.save` traces each once, where a concrete function traced
        before the save is traced again inside it (TensorFlow keys a trace by the save context)."""
        return {"serving_default": self.text if self.preprocessor is not None else self.ids, "serving_ids": self.ids}

    def token_count_signature(self):
        """{"token_counts": strings → int32 (B,), the tokens the model reads of each text, [CLS] and
        [SEP]s included, cut as `serving_default` cuts} with a preprocessor, else {}: what a server
        reports as usage (OpenAI's `prompt_tokens`)."""
        return {"token_counts": self.token_counts} if self.preprocessor is not None else {}
