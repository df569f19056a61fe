"""ONNX through tf2onnx on the ids signature, checked in ONNX Runtime before it is reported."""

import logging
import os
import tempfile

import numpy as np
import tensorflow as tf

from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.export.signatures import ID_NAMES, agreement, check_batch, task_outputs

FUSED = ("Attention", "MultiHeadAttention", "LayerNormalization", "SkipLayerNormalization", "Gelu", "BiasGelu",
         "FastGelu", "EmbedLayerNormalization")


def export_onnx(model, path, opset=17, optimize=True, quantize=None):
    """Writes the model's ids signature as an ONNX file and returns what was made.

    Inputs `token_ids`, `segment_ids`, `padding_mask` (int32, dynamic batch and sequence axes;
    an input the model does not read is left out: DistilBERT has no `segment_ids`); outputs the
    task's named outputs (`export.signatures.output_names`). Tokenization stays outside ONNX
    (tf2onnx cannot convert tensorflow-text's FastWordpiece): tokenize with the library's
    preprocessor or HuggingFace `tokenizers` on the same vocab.txt. The file is written only after
    ONNX Runtime has loaded it and run it on a batch that agrees with the Keras model (max abs
    difference ≤ 1e-4), so a conversion that "succeeds" into an invalid graph is an error here.

    tf2onnx converts a function that takes the weights as inputs, which become initializers after
    (a frozen graph's weights would be copied once per optimiser pass); each Keras
    LayerNormalization becomes one ONNX LayerNormalization (`export.onnx_graph`). With `optimize`,
    ONNX Runtime's transformer optimiser (model type `bert`) fuses each block into Attention,
    BiasGelu and SkipLayerNormalization operators, reported in `fused`, and the same check runs
    again; `quantize="dynamic_int8"` then quantizes the MatMul and Attention weights to int8 (ONNX
    Runtime's dynamic quantization, per channel, 7-bit for CPUs without VNNI; checked by cosine
    ≥ 0.99 instead).

    Args:
        model: a task model or `BertEncoder`.
        path: str. The `.onnx` file.
        opset: int. ONNX opset (17 has LayerNormalization).
        optimize: bool. Run ONNX Runtime's transformer optimiser.
        quantize: None or "dynamic_int8".
    Returns:
        dict: `path`, `fused` (the optimiser's counts of fused operators; empty without it),
        `rewritten` (LayerNormalization subgraphs folded; attention scales and GELU inputs written as
        Div), `max_abs_diff` (against Keras on the check batch), `seconds` (conversion time).
    Example:
        ```python
        import os, tempfile
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.export import export_onnx
        info = export_onnx(bert_tiny(num_hidden_layers=1), os.path.join(tempfile.mkdtemp(), "m.onnx"))
        ```
    """
    import time

    if quantize not in (None, "dynamic_int8"):
        raise ValueError(f"quantize={quantize!r} is not one of None, 'dynamic_int8'.")
    start = time.perf_counter()
    proto = _convert(model, opset)
    from keras_bert_lib.export import onnx_graph  # the onnx package is the export extra's

    folded = {"LayerNormalization": onnx_graph.fold_layer_norms(proto),
              "Dense as one MatMul": onnx_graph.unflatten_dense_layers(proto),
              **onnx_graph.products_as_divisions(proto)}
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "plain.onnx")
        with open(plain, "wb") as f:
            f.write(proto.SerializeToString())
        del proto
        feed = check_batch(model)
        expected = {k: np.asarray(v) for k, v in task_outputs(model, feed).items()}
        result = plain
        fused = {}
        if optimize:
            result, fused = _optimize(plain, model, tmp)
        if quantize:
            import onnx
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantized = os.path.join(tmp, "int8.onnx")
            # Per-channel scales, 7-bit weights: AVX2 without VNNI saturates int8 products otherwise
            # (movie reviews, MiniLM: held-out accuracy 0.710 per tensor, 0.740 so, 0.730 in float).
            # The fused operators (com.microsoft) have no ONNX shape inference: their outputs are float.
            # It advises (on the root logger) a shape pre-processing pass meant for PyTorch's graphs.
            advice = _Dropped("pre-processing before quantization")
            logging.getLogger().addFilter(advice)
            try:
                quantize_dynamic(result, quantized, weight_type=QuantType.QInt8, per_channel=True, reduce_range=True,
                                 extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
            finally:
                logging.getLogger().removeFilter(advice)
            result = quantized
        diff = check_onnx(result, feed, expected, cosine_only=bool(quantize))
        with open(result, "rb") as f:
            atomic_write_text(path, f.read())
    return {"path": os.fspath(path), "fused": fused, "rewritten": folded, "max_abs_diff": diff,
            "seconds": time.perf_counter() - start}


def _convert(model, opset):
    """tf2onnx on a function that takes the weights as inputs (`weights_to_initializers` says
    why); the ONNX graph then holds them as initializers named after the Keras variables."""
    import keras
    import tf2onnx

    variables = list(model.variables)
    names = [f"{v.path.replace('/', '.')}.{i}" for i, v in enumerate(variables)]
    spec = [tf.TensorSpec((None, None), tf.int32, name=k) for k in ID_NAMES]
    spec += [tf.TensorSpec(v.shape, v.dtype, name=n) for v, n in zip(variables, names)]

    def ids_and_weights(token_ids, segment_ids, padding_mask, *weights):
        with keras.StatelessScope(state_mapping=list(zip(variables, weights))):
            return task_outputs(model, {"token_ids": token_ids, "segment_ids": segment_ids,
                                        "padding_mask": padding_mask})

    function = tf.function(ids_and_weights, input_signature=spec, autograph=False)
    proto, _ = tf2onnx.convert.from_function(function, input_signature=spec, opset=opset)
    from keras_bert_lib.export.onnx_graph import weights_to_initializers  # the export extra's onnx

    weights_to_initializers(proto, {n: v.numpy() for v, n in zip(variables, names)}, ID_NAMES)
    return proto


class _Dropped(logging.Filter):
    """Drops the log records whose message holds `text`."""

    def __init__(self, text):
        super().__init__()
        self.text = text

    def filter(self, record):
        return self.text not in record.getMessage()


def _optimize(plain, model, tmp):
    """ONNX Runtime's transformer optimiser, as `optimize_model(model_type="bert")` runs it, without
    PyTorch. That function first runs ONNX Runtime's basic graph optimisations (constant folding,
    redundant nodes) through a helper that imports torch (onnxruntime 1.32), which the export
    extra does not install. The same pass is asked of an InferenceSession here (the helper's
    session options: basic level, ConstantSharing off); then the Python fusions alone
    (`opt_level=0`) run on its output. The fused graph is the one `optimize_model` makes (tested)."""
    import onnxruntime as ort
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import AttentionMaskFormat, FusionOptions

    basic = os.path.join(tmp, "basic.onnx")
    session_options = ort.SessionOptions()
    session_options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    session_options.optimized_model_filepath = basic
    ort.InferenceSession(plain, session_options, providers=["CPUExecutionProvider"],
                         disabled_optimizers=["ConstantSharing"])
    config = getattr(model, "encoder", model).config
    options = FusionOptions("bert")
    # The fused Attention reads the 0/1 mask itself, not a length per row: any padding is exact.
    options.attention_mask_format = AttentionMaskFormat.AttentionMask
    quiet = logging.getLogger(optimizer.__name__)  # it warns that tf2onnx, not PyTorch, made the file
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        optimized = optimizer.optimize_model(basic, model_type="bert", num_heads=config.num_attention_heads,
                                             hidden_size=config.hidden_size, optimization_options=options,
                                             opt_level=0)
    finally:
        quiet.setLevel(level)
    counts = {k: v for k, v in optimized.get_fused_operator_statistics().items() if k in FUSED and v}
    out = os.path.join(tmp, "optimized.onnx")
    optimized.save_model_to_file(out)
    return out, counts


def onnx_runner(path, threads=None):
    """One ONNX Runtime (CPU) session on an `.onnx` file, as a function id dict → {output name:
    array}. Inputs the file does not take are left out (tf2onnx drops an unused one:
    DistilBERT's `segment_ids`). `threads`: intra-op threads (None: ONNX Runtime's default, every core).

    Example:
        ```python
        # run = onnx_runner("model.onnx"); run({"token_ids": ..., "segment_ids": ..., "padding_mask": ...})
        ```
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(os.fspath(path), options, providers=["CPUExecutionProvider"])
    names, used = [o.name for o in session.get_outputs()], {i.name for i in session.get_inputs()}
    return lambda inputs: dict(zip(names, session.run(None, {k: v for k, v in inputs.items() if k in used})))


def run_onnx(path, inputs):
    """Runs an `.onnx` file once in ONNX Runtime (CPU) on an id dict; {output name: array}.

    Example:
        ```python
        # run_onnx("model.onnx", {"token_ids": ..., "segment_ids": ..., "padding_mask": ...})
        ```
    """
    return onnx_runner(path)(inputs)


def check_onnx(path, feed, expected, atol=1e-4, cosine_only=False):
    """Runs `path` on `feed` and compares its float outputs with `expected`: the max abs
    difference (≤ `atol`), or with `cosine_only` the cosine (≥ 0.99). Returns the largest
    difference; raises if an output is missing or disagrees.

    Example:
        ```python
        # check_onnx("model.onnx", feed, {"pooled_output": keras_pooled})
        ```
    """
    got = run_onnx(path, feed)
    missing = [name for name in expected if name not in got]
    if missing:
        raise RuntimeError(f"The ONNX file has outputs {sorted(got)}, not {missing}.")
    diff, cosine = agreement(got, expected)
    if cosine_only and not cosine >= 0.99:
        raise RuntimeError(f"The ONNX file's outputs have cosine {cosine:.4f} to the Keras model's (< 0.99).")
    if not cosine_only and not diff <= atol:
        raise RuntimeError(f"The ONNX file's outputs differ from the Keras model's by {diff:.3g} (> {atol}): the "
                           "conversion is wrong; please report it with the model's config.")
    return diff
