"""TFLite for phones: the ids model in built-in ops, optionally quantized, or with the tokenizer inside."""

import contextlib
import logging
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.export.saved_model import saving_quietly
from keras_bert_lib.export.signatures import ServingModule, agreement, check_batch, task_outputs
from keras_bert_lib.export.tflite_text import TFLiteTextModule, register_text_ops

logger = logging.getLogger(__name__)

# Strings on which the file's tokenizer must give the SavedModel's ids exactly (tflite_text says
# where the two normalisers differ: none of these).
PROBES = ("A moving, beautifully acted film.", "Café Dupont\tserved crêpes.", "Dull 😴 — 北京 and 東京?!", "",
          "x " * 300)

QUANTIZATIONS = (None, "float16", "dynamic_int8", "int8")
# The agreement a file must keep with the Keras model on every float output. Full int8 does not
# reach its 0.99 (MiniLM: 0.33; the −1e9 attention mask and outlier activations, docs/export.md),
# so it is refused rather than written.
MIN_COSINE = {None: None, "float16": 0.999, "dynamic_int8": 0.99, "int8": 0.99}


def export_tflite(model, path, quantization=None, preprocessor=None, representative_data=None, text=True,
                  pair=None):
    """Writes the model as a `.tflite` file, runs it in LiteRT (`ai-edge-litert`;
    `tf.lite.Interpreter` is deprecated in TF 2.21) and writes it only if every float output agrees
    with Keras: float32 within 1e-4, float16 at cosine ≥ 0.999, int8 at ≥ 0.99 (checked on a padded
    batch of random ids, full int8 on the first 8 calibration rows, and a text-in file also on
    strings, where its ids must equal the preprocessor's).

    Signatures keep the SavedModel's names. `serving_ids`: inputs `token_ids`, `segment_ids`,
    `padding_mask` (int32, any batch and length: LiteRT resizes), the task's outputs
    (`export.signatures.output_names`), TFLite built-in ops only. With a preprocessor (passed, or
    the model's own) and `text=True`, also `serving_default` on raw strings (`text`, and `text_pair`
    for pair tasks) and `tokenize` (strings → the three id tensors), through tensorflow-text's TFLite
    kernels (`export.tflite_text.CUSTOM_OPS`): the interpreter must register them —
    `InterpreterWithCustomOps(custom_op_registerers=register_text_ops())` in Python, tensorflow-text's
    op resolver in an app (docs/export.md). Its normaliser differs from BERT's on control characters
    and, uncased, on compatibility characters ("ß", "ﬁ", "…"): `export.tflite_text.tflite_tokenizer`.

    Args:
        model: a task model or `BertEncoder`.
        path: str. The `.tflite` file.
        quantization: None (float32), "float16" (weights in float16), "dynamic_int8" (weights in
            int8, activations quantized on the fly) or "int8" (weights and activations in int8
            where TFLite has int8 kernels, calibrated on `representative_data`; float elsewhere;
            ids only).
        preprocessor: a `BertPreprocessor` for the string signature; default the model's own.
        representative_data: for "int8": an iterable of id dicts (a few hundred real rows).
        text: bool. False writes the ids signature only (no tokenizer, built-in ops only).
        pair: bool or None. Two string inputs for a classifier of text pairs (None: as the task).
    Returns:
        dict: `path`, the largest `max_abs_diff` and the smallest `cosine` over the float outputs
        against Keras on the check batch, `megabytes`.
    Example:
        ```python
        import os, tempfile
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.export import export_tflite
        info = export_tflite(bert_tiny(num_hidden_layers=1), os.path.join(tempfile.mkdtemp(), "m.tflite"))
        ```
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization={quantization!r} is not one of {QUANTIZATIONS}.")
    if quantization == "int8" and representative_data is None:
        raise ValueError("quantization='int8' calibrates activations: pass representative_data, an iterable of id "
                         "dicts (token_ids, segment_ids, padding_mask) of real text.")
    preprocessor = preprocessor if preprocessor is not None else getattr(model, "preprocessor", None)
    text = text and preprocessor is not None
    if text and type(preprocessor.tokenizer).__name__ != "WordPieceTokenizer":
        # LiteRT has kernels for WordPiece only among ours: SentencePiece's clean-up runs regex and
        # Unicode normalisation ops, byte-level BPE a loop over hash tables (docs/export.md).
        logger.info("A text-in TFLite file takes WordPiece only; this model's tokenizer is %s, so the file "
                    "takes ids (tokenize in the app with the model's tokenizer files).",
                    type(preprocessor.tokenizer).__name__)
        text = False
    if text and quantization == "int8":
        raise ValueError("quantization='int8' calibrates the ids signature only: export with text=False and "
                         "tokenize in the app, or use 'dynamic_int8' for a text-in file.")
    module = TFLiteTextModule(model, preprocessor, pair) if text else ServingModule(model, text=False)
    signatures = module.signatures() if text else {"serving_ids": module.ids}
    with tempfile.TemporaryDirectory() as tmp:
        with saving_quietly():
            tf.saved_model.save(module, tmp, signatures=signatures)
        converter = tf.lite.TFLiteConverter.from_saved_model(tmp, signature_keys=list(signatures))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = text  # tensorflow-text's kernels (CUSTOM_OPS), registered at run time
        # Weights as constants in the file: with resource variables kept, LiteRT read them uninitialised.
        converter.experimental_enable_resource_variables = False
        if quantization:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantization == "float16":
            converter.target_spec.supported_types = [tf.float16]
        rows = None
        if quantization == "int8":
            rows = [{k: np.asarray(v, "int32") for k, v in r.items()} for r in representative_data]
            converter.representative_dataset = lambda: iter(rows)
        with _converter_log_held(text):
            flat = converter.convert()
    # Checked on random ids, or for int8 on the calibration rows: a model calibrated on real text
    # is not meant to keep random ids (MiniLM's pooled output: cosine 0.25 on them).
    checks = [agreement(run_tflite(flat, feed), {k: np.asarray(v) for k, v in task_outputs(model, feed).items()})
              for feed in (rows[:8] if rows else [check_batch(model)])]
    if text:
        checks.append(_check_text(flat, module))
    diff, cosine = max(d for d, _ in checks), min(c for _, c in checks)
    floor = MIN_COSINE[quantization]
    if not np.isfinite(diff) or (floor is None and diff > 1e-4) or (floor is not None and cosine < floor):
        hint = (" One int8 scale per tensor cannot hold BERT's attention mask and outlier activations "
                "(docs/export.md): use quantization='dynamic_int8'." if quantization == "int8" else "")
        raise RuntimeError(f"The {quantization or 'float32'} TFLite file disagrees with the Keras model (max abs "
                           f"difference {diff:.3g}, cosine {cosine:.5f}); nothing was written.{hint}")
    atomic_write_text(path, flat)
    return {"path": os.fspath(path), "max_abs_diff": diff, "cosine": cosine, "megabytes": len(flat) / 1e6}


@contextlib.contextmanager
def _converter_log_held(held):
    """Holds back what the converter writes to stderr (file descriptor 2, from C++) while it runs,
    and writes it out only if the conversion fails: for a text-in file it lists the expected
    custom ops with a link to instructions, which reads like an error and is not one."""
    if not held:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            log.seek(0)
            sys.stderr.write(log.read().decode("utf-8", "replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _check_text(flat, module):
    """The text-in file's ids and outputs on PROBES against the preprocessor's ids and Keras."""
    names = module.text_names
    feed = {name: np.array(PROBES[i:] + PROBES[:i], dtype=object) for i, name in enumerate(names)}
    exact = module.preprocessor(tuple(tf.constant(feed[k]) for k in names) if len(names) == 2 else feed["text"])
    got_ids = run_tflite(flat, feed, "tokenize")
    for name, want in exact.items():
        if not np.array_equal(got_ids[name], want.numpy()):
            raise RuntimeError(f"The TFLite file's tokenizer gives other {name} than the preprocessor on "
                               f"{PROBES!r}; nothing was written.")
    return agreement(run_tflite(flat, feed, "serving_default"),
                     {k: np.asarray(v) for k, v in task_outputs(module.model, dict(exact)).items()})


def tflite_runner(model, signature="serving_ids", threads=None):
    """One LiteRT interpreter on a `.tflite` file (a path or its bytes), as a function input dict
    → {name: array}. `threads`: None for every core (`os.cpu_count()`), as ONNX Runtime does.

    Example:
        ```python
        # run = tflite_runner("model.tflite"); run({"token_ids": ..., "segment_ids": ..., "padding_mask": ...})
        ```
    """
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    source = {"model_content": model} if isinstance(model, bytes) else {"model_path": os.fspath(model)}
    interpreter = InterpreterWithCustomOps(custom_op_registerers=register_text_ops(),
                                           num_threads=threads or os.cpu_count(), **source)
    runner = interpreter.get_signature_runner(signature)
    wanted = runner.get_input_details()
    return lambda inputs: runner(**{k: np.asarray(v) for k, v in inputs.items() if k in wanted})


def run_tflite(model, inputs, signature="serving_ids"):
    """Runs a `.tflite` file (a path or its bytes) once in LiteRT on an input dict; {name: array}.

    Example:
        ```python
        # run_tflite("model.tflite", {"token_ids": ..., "segment_ids": ..., "padding_mask": ...})
        ```
    """
    return tflite_runner(model, signature)(inputs)
