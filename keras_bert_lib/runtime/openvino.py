"""OpenVINO behind a task model's `predict`: the model as TensorFlow traces it, compiled for the
CPU at the precision it runs fastest (`OpenVINORuntime`), or quantized to int8 by NNCF
(`Int8Runtime`, what `inference_dtype = "int8"` runs on). Needs the `openvino` extra.
"""

import logging
import queue
import re

import keras
import numpy as np

from keras_bert_lib.runtime.compile_path import int8_kernels
from keras_bert_lib.runtime.dtype_copy import weights_fingerprint
from keras_bert_lib.runtime.input_checks import INPUTS as ID_NAMES
from keras_bert_lib.runtime.length_buckets import length_batches
from keras_bert_lib.runtime.openvino_layer_norm import fuse_layer_norms
from keras_bert_lib.runtime.packing import PACKED, check_row_tokens, pack, packed_function

logger = logging.getLogger("keras_bert_lib")

# The layers whose activations carry a BERT's outliers (its blocks' feed-forward output
# projections, Bondarenko et al. 2021): what `Int8Runtime` keeps in float when the whole model in
# int8 fails the quality gate.
FFN_OUTPUT = ("ffn/output",)
# `OpenVINORuntime`'s inference_precision → OpenVINO's INFERENCE_PRECISION_HINT (None: its own choice)
PRECISION_HINTS = {None: None, "float32": "f32", "bfloat16": "bf16"}
# Where an IR names the precision it must run at (`compiled_runner` applies it; OpenVINO does not)
IR_PRECISION = ["runtime_options", "INFERENCE_PRECISION_HINT"]


def require_openvino():
    try:
        import openvino
    except ImportError:
        raise ImportError('OpenVINO is not installed: pip install "keras-bert-lib[openvino]".') from None
    return openvino


def require_nncf():
    try:
        import nncf
    except ImportError:
        raise ImportError('int8 inference needs NNCF: pip install "keras-bert-lib[openvino]".') from None
    # its tables, on every call; the logger's level only (nncf.set_log_level also sets every handler
    # of its logger, which takes in handlers that others attached there, such as pytest's)
    logging.getLogger("nncf").setLevel(logging.ERROR)
    return nncf


def convert(function):
    """An OpenVINO model of a concrete function of the id dict (batch and sequence axes free; an
    input the model does not read, such as DistilBERT's `segment_ids`, left out), its layer
    normalizations one MVN node each (`fuse_layer_norms`)."""
    ov_model = require_openvino().convert_model(function)
    fuse_layer_norms(ov_model)
    return ov_model


def traced(model):
    """`model` as a concrete TensorFlow function of the id dict → its flattened outputs."""
    import tensorflow as tf

    spec = {k: tf.TensorSpec((None, None), tf.int32, name=k) for k in ID_NAMES}
    return tf.function(lambda ids: keras.tree.flatten(model(ids, training=False)),
                       input_signature=[spec]).get_concrete_function()


def input_order(ov_model):
    """The input names (`token_ids`, ..., or `runtime.packing`'s) of an OpenVINO model's inputs,
    in its order: for each, the longest name its port's names hold (`packed_token_ids`, not
    `token_ids`)."""
    names = sorted((*ID_NAMES, *PACKED), key=len, reverse=True)
    return [next(k for k in names if any(k in n for n in port.get_names())) for port in ov_model.inputs]


def compiled_runner(ov_model, names, threads=None, config=None, latency=False):
    """A function id dict → list of arrays (in `names`' order) over a model compiled for the CPU
    with OpenVINO's THROUGHPUT hint (its streams split the cores: two of `predict`'s batches at
    once on two cores run faster than one on both), or with `latency` its LATENCY hint (one
    stream on every core: for a caller that runs one call at a time, a server with one batch in
    flight); each call at once has an infer request of its own, and `run.streams` says how many
    to run at once (OpenVINO's optimal number of requests). A precision the model's IR names in
    its `runtime_options` (a static int8 program's float32) is applied, as OpenVINO does not
    apply it itself; `config` overrides it."""
    ov = require_openvino()
    config = {"PERFORMANCE_HINT": "LATENCY" if latency else "THROUGHPUT",
              **({"INFERENCE_NUM_THREADS": threads} if threads else {}),
              **({IR_PRECISION[1]: ov_model.get_rt_info(IR_PRECISION).astype(str)}
                 if ov_model.has_rt_info(IR_PRECISION) else {}),
              **(config or {})}
    compiled = ov.Core().compile_model(ov_model, "CPU", config)
    order = input_order(compiled)
    idle = queue.SimpleQueue()  # infer requests no call holds: made as calls at once need them

    def run(ids):
        try:
            request = idle.get_nowait()
        except queue.Empty:
            request = compiled.create_infer_request()
        try:
            results = request.infer([np.asarray(ids[k], np.int32) for k in order])
            return [np.array(results[port]) for port in compiled.outputs[:len(names)]]
        finally:
            idle.put(request)

    hint = compiled.get_property("INFERENCE_PRECISION_HINT").to_string()
    run.precision = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}.get(hint, hint)
    run.streams = int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
    return run


class OpenVINORuntime:
    """Runs a task model's `predict` on OpenVINO instead of TensorFlow: set it as the model's
    `runtime`. `predict` keeps its contract (by length, the caller's order, the same outputs);
    each batch runs through one OpenVINO program that takes every width, compiled once from the
    model's weights and again when they change (`fit`, an assignment). So each batch is as wide as
    its longest row (`width_multiple` 1): columns of padding would cost compute and save no
    program.

    OpenVINO computes in bfloat16 on CPUs with AVX512-BF16 or AMX and in float32 elsewhere, or in
    what `inference_precision` asks (`precision` says which after the first call).
    docs/benchmarks.md times it against the default runtime: pick it where it is faster on your
    CPU and your texts; on small batches (a server's) its calls cost less than TensorFlow's.

    With `pack_tokens`, each batch's texts run packed (`runtime.packing`): end to end in rows of
    that many tokens, each attending to itself alone, so that a batch of uneven texts costs its
    tokens, not its rows times its longest (a server's batches; the encoders with learned
    absolute positions). Each text's outputs are those it gets alone.

    A runtime is the predicting machine's choice, not the model's: it is not saved with the model.

    Args:
        threads: int or None. CPU threads (None: OpenVINO's default, every core).
        inference_precision: "float32", "bfloat16" or None (OpenVINO's choice for this CPU).
        pack_tokens: int or None. Tokens of a packed row (None: batches run padded).
        latency: bool. Each call on every core, one call at a time (OpenVINO's LATENCY hint): for
            a caller that runs one batch at a time (`keras-bert serve --batches-in-flight 1`);
            default False: streams split the cores and `predict` runs that many batches at once.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.tasks import SentenceEmbedder
        from keras_bert_lib.runtime.openvino import OpenVINORuntime
        embedder = SentenceEmbedder(bert_tiny(num_hidden_layers=1))
        ids = {"token_ids": np.array([[2, 7, 3]]), "segment_ids": np.zeros((1, 3), "int32"),
               "padding_mask": np.ones((1, 3), "int32")}
        want = embedder.predict(ids, verbose=0)
        embedder.runtime = OpenVINORuntime()
        assert np.allclose(embedder.predict(ids, verbose=0), want, atol=1e-2)
        embedder.runtime = OpenVINORuntime(inference_precision="float32")
        assert np.allclose(embedder.predict(ids, verbose=0), want, atol=1e-5)
        assert embedder.runtime.precision == "float32"
        embedder.runtime = OpenVINORuntime(inference_precision="float32", pack_tokens=64)
        assert np.allclose(embedder.predict(ids, verbose=0), want, atol=1e-5)
        ```
    """

    width_multiple = 1  # what `predict` rounds a batch's width up to on this runtime

    def __init__(self, threads=None, inference_precision=None, pack_tokens=None, latency=False):
        if inference_precision not in PRECISION_HINTS:
            raise ValueError(f"inference_precision={inference_precision!r}: one of "
                             f"{', '.join(map(repr, PRECISION_HINTS))}.")
        if pack_tokens is not None:
            check_row_tokens(pack_tokens, "pack_tokens")  # None: no packing
        self.threads, self.inference_precision, self.pack_tokens = threads, inference_precision, pack_tokens
        self.latency = latency
        self.precision = None
        self.streams = 1  # batches `predict` runs at once (OpenVINO's number, once compiled)
        self._compiled = None  # (weights fingerprint, runner)

    def batch_function(self, model):
        """A function of one batch's id dict → `model`'s outputs (Keras' structure), on OpenVINO."""
        stamp = (id(model), weights_fingerprint(model.weights))
        if self._compiled is None or self._compiled[0] != stamp:
            structure = model.output
            names = [str(i) for i in range(len(keras.tree.flatten(structure)))]
            run = self.runner(model, convert(packed_function(model) if self.pack_tokens else traced(model)), names)
            self.precision, self.streams = run.precision, run.streams
            self._compiled = (stamp, lambda ids: keras.tree.pack_sequence_as(structure, run(self._packed(ids))))
        return self._compiled[1]

    def calibrate(self, model, ids):
        """Called by `predict` with its id rows before its first batch; nothing to do here."""

    def _packed(self, ids):
        """A batch's id dict as the compiled program takes it: packed (`pack`) where it packs."""
        return pack(ids, self.pack_tokens) if self.pack_tokens else ids

    def runner(self, model, ov_model, names):
        hint = PRECISION_HINTS[self.inference_precision]
        return compiled_runner(ov_model, names, self.threads, {"INFERENCE_PRECISION_HINT": hint} if hint else None,
                               latency=self.latency)


class Int8Runtime(OpenVINORuntime):
    """int8 weights and activations on OpenVINO: what a task model's `predict` runs on when its
    `inference_dtype` is "int8", or set it as the model's `runtime` to give it calibration texts.

    Static quantization (NNCF's post-training quantization for transformers, SmoothQuant at 0.75)
    calibrates on a sample of texts: `calibration` when given, else up to `samples` rows of the
    first `predict` call that brings at least 32. A first call with fewer (a server's single
    text) quantizes dynamically instead: int8 weights, activations quantized per call. A quality
    gate then runs the calibration rows through float32 and int8: where any row's output has
    cosine below `min_cosine` (outputs under 8 numbers wide: a difference above a tenth of their
    spread), every block's feed-forward output projection (`FFN_OUTPUT`, where BERT's outliers
    live) is kept in float and it tries again, and if that fails too it refuses, with one line
    that names the layers to keep in float (`keep_float`) or says to predict in bfloat16. Layers
    kept in float from the start (the first block's feed-forward output lifts a model's worst
    texts the most) cost speed: int8 runs fastest whole. The static program computes what stays
    in float in float32 on every CPU, and its IR says so (OpenVINO's bfloat16 default on AMX
    pushed it far from float32). On a CPU without VNNI or AMX every matmul weight takes 7 bits
    (NNCF's overflow fix): AVX2 sums pairs of int8 products in int16, which 8-bit weights can
    overflow.

    Args:
        calibration: list of texts (or of (first, second) pairs) or None. What to calibrate on.
        keep_float: tuple of layer paths ("ffn/output", "layer_0/attention/query") whose matmuls
            stay in float, in every block where the path matches (default: none).
        samples: int. Calibration rows taken from `predict`'s first call (default: 300).
        min_cosine: float. The quality gate (default: 0.99).
        threads: int or None. CPU threads (None: every core).
        pack_tokens: int or None. Tokens of a packed row (`OpenVINORuntime`; None: padded). The
            packed program is the one calibrated and gated.
        latency: bool. One call at a time on every core (`OpenVINORuntime`; default False).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.runtime.openvino import Int8Runtime
        from keras_bert_lib.tasks import SentenceEmbedder
        embedder = SentenceEmbedder(bert_tiny(num_hidden_layers=1))
        rng = np.random.default_rng(0)
        ids = {"token_ids": rng.integers(5, 1000, (64, 12)).astype("int32"),
               "segment_ids": np.zeros((64, 12), "int32"), "padding_mask": np.ones((64, 12), "int32")}
        want = embedder.predict(ids, verbose=0)
        embedder.runtime = Int8Runtime()
        got = embedder.predict(ids, verbose=0)      # calibrated on these 64 rows, then gated
        assert embedder.runtime.quantization == "static" and embedder.runtime.worst_cosine >= 0.99
        assert np.min(np.sum(got * want, 1)) >= 0.99  # unit vectors: their cosine
        ```
    """

    def __init__(self, calibration=None, keep_float=(), samples=300, min_cosine=0.99, threads=None, pack_tokens=None,
                 latency=False):
        super().__init__(threads, pack_tokens=pack_tokens, latency=latency)
        self.calibration = calibration
        self.keep_float = tuple(keep_float)
        self.samples, self.min_cosine = samples, min_cosine
        self.quantization = None  # "static" or "dynamic", once quantized
        self.kept_float = None  # the layer paths kept in float, once quantized
        self.worst_cosine = None  # the gate's smallest cosine (static)
        self._rows = None  # the calibration id rows
        self.quantized = None  # the OpenVINO model that runs, once quantized (what an export saves)

    def calibrate(self, model, ids):
        """Takes calibration rows from `predict`'s first call (`ids`), unless texts were given;
        with neither (`ids` None), it will quantize dynamically."""
        if self._rows is not None:
            return
        if self.calibration is None and ids is None:  # nothing to calibrate on: dynamic
            self._rows = {}
            return
        if self.calibration is not None:
            texts = self.calibration
            pair = isinstance(texts, tuple) or (len(texts) and isinstance(texts[0], (tuple, list)))
            texts = tuple(map(list, zip(*texts))) if pair and not isinstance(texts, tuple) else texts
            ids = model.preprocessor.with_truncation(texts)[0] if model.preprocessor is not None else texts
            ids = {k: np.asarray(v) for k, v in ids.items()}
        rows = len(ids["padding_mask"])
        if self.calibration is None and rows < 32:
            self._rows = {}  # dynamic
            return
        pick = np.unique(np.linspace(0, rows - 1, min(rows, self.samples)).astype(int))
        self._rows = {k: np.asarray(v)[pick] for k, v in ids.items()}

    def runner(self, model, ov_model, names):
        nncf = require_nncf()
        if int8_kernels() is None:
            logger.warning("int8: this CPU has no VNNI or AMX, so OpenVINO runs int8 on slower AVX2 sequences; "
                           "python -m bench.real_text_speed says whether it beats the default here.")
        if not self._rows:  # no rows: dynamic
            self.quantization, self.kept_float = "dynamic", ()
            self.quantized = nncf.compress_weights(ov_model, mode=nncf.CompressWeightsMode.INT8_ASYM)
            self.quantized.set_rt_info("32", ["runtime_options", "DYNAMIC_QUANTIZATION_GROUP_SIZE"])  # kept in its IR
            # one stream: OpenVINO 2026.4's dynamic quantization on several streams gives wrong outputs
            # for every model compiled after the first in a process (tested)
            return compiled_runner(self.quantized, names, self.threads,
                                   {"DYNAMIC_QUANTIZATION_GROUP_SIZE": "32", "PERFORMANCE_HINT": "LATENCY"})
        batches = [self._packed(b) for b in _calibration_batches(self._rows)]
        float32 = compiled_runner(ov_model, names, self.threads, {"INFERENCE_PRECISION_HINT": "f32"})
        want = [float32(b) for b in batches]
        first = self.keep_float
        tries = [first] + ([tuple(k for k in first if not k.endswith(FFN_OUTPUT[0])) + FFN_OUTPUT]
                           if FFN_OUTPUT[0] not in first else [])
        for keep in tries:
            quantized = self._quantize(nncf, ov_model.clone(), batches, keep)
            # what stays in float runs in float32, and its IR says so: with OpenVINO's bfloat16
            # default on AMX, all-MiniLM-L6-v2's static program failed the gate even with FFN_OUTPUT
            quantized.set_rt_info("f32", IR_PRECISION)
            run = compiled_runner(quantized, names, self.threads, latency=self.latency)
            worst = min(_agreement(run(b), w, b["padding_mask"]) for b, w in zip(batches, want))
            if worst >= self.min_cosine:
                self.quantization, self.kept_float, self.worst_cosine = "static", keep, worst
                self.quantized = quantized
                if keep != first:
                    logger.warning("int8 drifted from float32 on its calibration texts with %s in float; now %s "
                                   "are (smallest cosine %.4f).", ", ".join(first) or "nothing", ", ".join(keep),
                                   worst)
                return run
        raise ValueError(
            f"int8 drifts too far from float32 on the calibration texts (smallest cosine {worst:.4f} < "
            f"{self.min_cosine}) even with {', '.join(keep)} in float: keep more layers in float "
            f"(Int8Runtime(keep_float={keep + ('attention/output',)!r})) or predict in bfloat16 "
            "(inference_dtype='auto').")

    @staticmethod
    def _quantize(nncf, ov_model, batches, keep):
        from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters, AdvancedSmoothQuantParameters

        data = nncf.Dataset([[b[k] for k in input_order(ov_model)] for b in batches])
        patterns = [".*" + "/".join(f"{re.escape(part)}(_\\d+)?" for part in path.split("/")) + "/.*"
                    for path in keep]
        return nncf.quantize(ov_model, data, model_type=nncf.ModelType.TRANSFORMER, subset_size=len(batches),
                             ignored_scope=nncf.IgnoredScope(patterns=patterns, validate=False),
                             advanced_parameters=AdvancedQuantizationParameters(
                                 smooth_quant_alphas=AdvancedSmoothQuantParameters(matmul=0.75),
                                 # 7-bit weights without VNNI or AMX (the docstring says why)
                                 overflow_fix=None if int8_kernels() else nncf.OverflowFix.ENABLE))


def _calibration_batches(rows, size=16):
    """Calibration rows by length (`length_batches`), each batch cut to its longest row."""
    return [{k: np.ascontiguousarray(v[pick, :width], np.int32) for k, v in rows.items()}
            for pick, width in length_batches(rows["padding_mask"], size, multiple=1)]


def _agreement(got, want, mask):
    """The smallest per-row agreement of int8's outputs with float32's: cosine for outputs at
    least 8 numbers wide (padded positions zeroed), and for narrower ones (a classifier's logits, a
    score) 1 minus the largest difference over a tenth of float32's spread."""
    worst = 1.0
    for have, ref in zip(got, want):
        if not np.issubdtype(ref.dtype, np.floating) or not ref.size:
            continue
        have, ref = np.asarray(have, np.float64), np.asarray(ref, np.float64)
        if ref.ndim >= 3 and ref.shape[1] == mask.shape[1]:  # per token: the text's own positions
            have, ref = have * mask[:, :, None], ref * mask[:, :, None]
        elif ref.ndim == 2 and ref.shape[1] == mask.shape[1]:
            have, ref = have * mask, ref * mask
        have, ref = have.reshape(len(ref), -1), ref.reshape(len(ref), -1)
        if ref.shape[1] >= 8:
            cosine = np.sum(have * ref, 1) / (np.linalg.norm(have, axis=1) * np.linalg.norm(ref, axis=1) + 1e-12)
            worst = min(worst, float(cosine.min()))
        else:
            spread = max(float(np.std(ref)), 1e-6)
            worst = min(worst, 1.0 - float(np.abs(have - ref).max()) / (10 * spread))
    return worst
