"""TFLite for phones: the ids model in built-in ops, optionally quantized, checked in LiteRT."""

import os
import tempfile

import numpy as np
import tensorflow as tf

from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.export.signatures import ServingModule, agreement, check_batch

QUANTIZATIONS = (None, "float16", "dynamic_int8", "int8")
# The agreement a file must keep with the Keras model on every float output. Full int8 does not
# reach its 0.99 yet (MiniLM: 0.32; docs/export.md), so it is refused rather than written.
MIN_COSINE = {None: None, "float16": 0.999, "dynamic_int8": 0.99, "int8": 0.99}


def export_tflite(model, path, quantization=None, representative_data=None):
    """Writes the model's ids signature as a `.tflite` file of TFLite built-in ops, runs it in
    LiteRT (`ai-edge-litert`; `tf.lite.Interpreter` is deprecated in TF 2.21) on a padded batch
    of random ids (full int8: on the first 8 calibration rows) and writes it only if every float
    output agrees with Keras: float32 within 1e-4, float16 at
    cosine ≥ 0.999, int8 at ≥ 0.99.

    The file's signature `serving_ids` keeps the SavedModel's names: inputs `token_ids`,
    `segment_ids`, `padding_mask` (int32, any batch and length: LiteRT resizes), outputs the task's
    (`export.signatures.output_names`).

    Args:
        model: a task model or `BertEncoder`.
        path: str. The `.tflite` file.
        quantization: None (float32), "float16" (weights in float16), "dynamic_int8" (weights in
            int8, activations quantized on the fly) or "int8" (weights and activations in int8
            where TFLite has int8 kernels, calibrated on `representative_data`; float elsewhere).
        representative_data: for "int8": an iterable of id dicts (a few hundred real rows).
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
    module = ServingModule(model, text=False, track_variables=True)
    with tempfile.TemporaryDirectory() as tmp:
        tf.saved_model.save(module, tmp, signatures={"serving_ids": module.ids.get_concrete_function()})
        converter = tf.lite.TFLiteConverter.from_saved_model(tmp, signature_keys=["serving_ids"])
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
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
        flat = converter.convert()
    # Checked on random ids, or for int8 on the calibration rows: a model calibrated on real text
    # is not meant to keep random ids (MiniLM's pooled output: cosine 0.25 on them).
    checks = [agreement(run_tflite(flat, feed), {k: np.asarray(v) for k, v in module.ids(feed).items()})
              for feed in (rows[:8] if rows else [check_batch(model)])]
    diff, cosine = max(d for d, _ in checks), min(c for _, c in checks)
    floor = MIN_COSINE[quantization]
    if not np.isfinite(diff) or (floor is None and diff > 1e-4) or (floor is not None and cosine < floor):
        raise RuntimeError(f"The {quantization or 'float32'} TFLite file disagrees with the Keras model (max abs "
                           f"difference {diff:.3g}, cosine {cosine:.5f}); nothing was written.")
    atomic_write_text(path, flat)
    return {"path": os.fspath(path), "max_abs_diff": diff, "cosine": cosine, "megabytes": len(flat) / 1e6}


def tflite_runner(model, signature="serving_ids", threads=None):
    """One LiteRT interpreter on a `.tflite` file (a path or its bytes), as a function input dict
    → {name: array}. `threads`: None for every core (`os.cpu_count()`), as ONNX Runtime does.

    Example:
        ```python
        # run = tflite_runner("model.tflite"); run({"token_ids": ..., "segment_ids": ..., "padding_mask": ...})
        ```
    """
    from ai_edge_litert.interpreter import Interpreter

    threads = threads or os.cpu_count()
    interpreter = (Interpreter(model_content=model, num_threads=threads) if isinstance(model, bytes)
                   else Interpreter(model_path=os.fspath(model), num_threads=threads))
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
