"""A fine-tuning run's Keras model behind the server, on the path `predict` takes."""

import numpy as np
import tensorflow as tf

from keras_bert_lib.export.signatures import PAIR_TASKS, named_outputs, output_names, text_input_names, utf8_or_replaced
from keras_bert_lib.runtime.input_checks import INPUTS as ID_NAMES
from keras_bert_lib.runtime.length_buckets import bucket_width
from keras_bert_lib.runtime.packing import can_pack
from keras_bert_lib.serve.batcher import Batcher
from keras_bert_lib.serve.protocol import Limits
from keras_bert_lib.serve.served_model import PER_TOKEN, ServedModel, per_request


class ServedKerasModel(ServedModel):
    """A fine-tuning run's folder (or a task model's `.keras` file) served as its SavedModel
    would be (the same inputs, outputs and routes), as the model's `predict` runs texts: in its
    `inference_dtype` (`dtype`: "auto" is bfloat16 where it pays, or "float32", "bfloat16",
    "int8"), by length, on `runtime`: "openvino" (`runtime.openvino.OpenVINORuntime`, in that
    dtype; int8 always runs there), "tensorflow" (Keras, `predict`'s own path) or "auto" (OpenVINO
    where the openvino extra is installed: a server's calls hold a few texts each, and such a call
    costs OpenVINO far less than TensorFlow; on `predict`'s large batches the gap is small;
    docs/benchmarks.md times both).

    A batch closes at `max_batch_size` texts or `max_batch_tokens` tokens, and up to `in_flight`
    batches run at once while the next forms (None: one on OpenVINO, each on every core, which
    answers a lone client fastest and keeps up with two at once under load; two on TensorFlow).
    Texts are tokenized in a worker thread (never on the event loop), as many in one call as can
    be (one text costs about what sixteen do): each formed batch in its run, or, where the token
    budget can close a batch before its count (`max_batch_size` texts of the model's length hold
    more than `max_batch_tokens`), as requests arrive, those waiting together in one call, so
    that each text's count is known when batches form.
    A formed batch is padded as the preprocessor pads a call (per-token outputs are then as wide
    as the SavedModel's) and runs as `predict` runs it (`fixed_predictor`: the path resolved
    once at load, as a served model's weights do not change). On OpenVINO, with an encoder of
    learned absolute positions, the batch runs as one call, packed (`runtime.packing`): its texts
    end to end in rows of `pack_tokens` tokens, each attending to itself alone, so that a batch
    of whatever arrived costs its tokens rather than its rows times its longest text. Otherwise
    (or with `pack_tokens` None) it runs sorted by length, in parts of `chunk_size` texts each cut
    to its longest, as many parts at once as the runtime runs (OpenVINO's streams). int8
    calibrates on `calibration` (texts) where given, and is dynamic otherwise
    (`runtime.openvino.Int8Runtime`).

    Args:
        name: str. The model's name in the URLs.
        path: str. The run folder or `.keras` file.
        dtype: str. What the model computes in (default: "auto").
        calibration: list of str or None. int8's calibration texts.
        runtime: str. "auto", "openvino" or "tensorflow": what runs the model (default: "auto").
        max_batch_size, batch_timeout_micros, max_batch_tokens, in_flight: the batcher's (`Batcher`).
        chunk_size: int. Texts per model call within a batch, where it does not pack (default: 4).
        pack_tokens: int or None. Tokens of a packed row (default: 64; None: no packing).
        limits: `Limits` of one request.
    Example:
        ```python
        from keras_bert_lib.serve.served_keras_model import ServedKerasModel
        # model = ServedKerasModel("classifier", "runs/classify", dtype="int8"); model.load()
        ```
    """

    def __init__(self, name, path, dtype="auto", calibration=None, max_batch_size=32, batch_timeout_micros=0,
                 limits=Limits(), on_batch=None, max_batch_tokens=None, in_flight=None, chunk_size=4, runtime="auto",
                 pack_tokens=64):
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime={runtime!r}: one of {', '.join(RUNTIMES)}.")
        self.on_openvino = dtype == "int8" or on_openvino_runtime(runtime)
        if in_flight is None:
            in_flight = 1 if self.on_openvino else 2
        super().__init__(name, path, max_batch_size, batch_timeout_micros, limits, on_batch,
                         max_batch_tokens=max_batch_tokens, in_flight=in_flight)
        self.dtype, self.calibration, self.chunk_size, self.runtime = dtype, calibration, chunk_size, runtime
        self.pack_tokens = pack_tokens
        self.model = self._tokenize = self._predict = self._count_first = None
        # requests waiting to be tokenized go as one call: one text costs about what sixteen do
        self._tokenizer = Batcher(self._tokenize_requests, max_batch_size=1024, batch_timeout_micros=0)

    def load(self):
        from keras_bert_lib.corpus.models import set_inference_dtype
        from keras_bert_lib.export import load_model_file
        from keras_bert_lib.finetuning import task_of_run

        self.model, file = load_model_file(self.path)
        task = task_of_run(file)
        pair = (task is not None and len(task.serves.inputs) == 2) or isinstance(self.model, PAIR_TASKS)
        self.inputs, self.outputs = text_input_names(self.model, pair), output_names(self.model)
        names = getattr(self.model, "class_names", None)
        if names and getattr(self.model, "num_classes", 0) > 1:
            self.outputs += ("class_name",)
        self.class_names = (np.array([str(n).encode() for n in names], object)  # as TF's strings
                            if "class_name" in self.outputs else None)
        self.precision = set_inference_dtype(self.model, self.dtype)
        pack = self.pack_tokens if self.on_openvino and can_pack(self.model) else None
        latency = self.batcher.in_flight == 1  # one batch at a time: each on every core
        if self.dtype == "int8":
            from keras_bert_lib.runtime.openvino import Int8Runtime

            self.model.runtime = Int8Runtime(calibration=self.calibration, pack_tokens=pack, latency=latency)
            if self.calibration:
                self.precision += f"; calibrated on {len(self.calibration)} texts"
        elif self.on_openvino:
            from keras_bert_lib.runtime.compile_path import choose_inference_dtype
            from keras_bert_lib.runtime.openvino import OpenVINORuntime

            chosen = choose_inference_dtype(self.model.inference_dtype, self.model.encoder.layers_dtype_policy,
                                            self.model.encoder.config.hidden_size)
            self.model.runtime = OpenVINORuntime(inference_precision="bfloat16" if chosen == "bfloat16" else "float32",
                                                 pack_tokens=pack, latency=latency)
        spec = tf.TensorSpec((None,), tf.string)
        preprocessor = self.model.preprocessor
        self._tokenize = tf.function(
            lambda *texts: preprocessor(tuple(map(utf8_or_replaced, texts)) if len(texts) == 2
                                        else utf8_or_replaced(texts[0])),
            input_signature=[spec] * len(self.inputs))
        first = self.tokenized([{name: "a" for name in self.inputs}])[0]
        self.model.predict(self._padded(first), verbose=0)  # traces (and compiles): not a client's wait
        if self.on_openvino and self.dtype != "int8":
            self.precision = (f"{self.model.runtime.precision} weights, OpenVINO on the CPU (--runtime tensorflow "
                              "runs TensorFlow, the path predict takes)")
        if pack:
            self.precision += f"; each batch packed in rows of {pack} tokens"
        self._predict = self.model.fixed_predictor(self.batcher.max_batch_size if pack else self.chunk_size)
        budget, length = self.batcher.max_batch_tokens, self.model.preprocessor.sequence_length
        self._count_first = budget is not None and self.batcher.max_batch_size * length > budget
        self._run([first])
        self.ready = True
        return self.ready

    async def infer(self, rows):
        """Each row's results, batched by texts and tokens, tokenized off the event loop."""
        if not self._count_first:  # each formed batch is tokenized in its run (`_call`)
            return await self.batcher(rows)
        tokenized = await self._tokenizer(rows)
        return await self.batcher([ids for ids, _ in tokenized], [count for _, count in tokenized])

    def _tokenize_requests(self, requests):
        ids, counts = self.tokenized([row for request in requests for row in request])
        return per_request(list(zip(ids, counts)), requests)

    def tokenized(self, rows):
        """([each row's unpadded id dict], [each row's token count])."""
        out = self._tokenize(*(tf.constant([row[name].encode("utf-8", "replace") for row in rows])
                               for name in self.inputs))
        out = {k: out[k].numpy() for k in ID_NAMES}
        counts = out["padding_mask"].sum(1)
        return [{k: v[i, :n] for k, v in out.items()} for i, n in enumerate(counts)], [int(n) for n in counts]

    def token_counts(self, rows):
        return self.tokenized(rows)[1]

    def _padded(self, rows):
        """The rows as one id dict, as wide as the preprocessor pads them (as `predict` and the
        SavedModel see them): on a runtime, its programs see a few widths, not every length."""
        p = self.model.preprocessor
        longest = max(len(row["padding_mask"]) for row in rows)
        width = p.sequence_length if p.padding == "max_length" else bucket_width(longest, p.pad_to_multiple_of,
                                                                                 p.sequence_length)
        ids = {k: np.zeros((len(rows), width), np.int32) for k in ID_NAMES}
        for i, row in enumerate(rows):
            for k in ID_NAMES:
                ids[k][i, :len(row[k])] = row[k]
        return ids

    def _call(self, rows):
        if rows and "padding_mask" not in rows[0]:  # texts, not yet tokenized (`infer`)
            rows = self.tokenized(rows)[0]
        out = {k: np.asarray(v) for k, v in named_outputs(self.model, self._predict(self._padded(rows))).items()}
        if self.class_names is not None:
            out["class_name"] = self.class_names[out["label"]]
        return [{name: out[name][i] for name in self.outputs} for i in range(len(rows))]


RUNTIMES = ("auto", "openvino", "tensorflow")


def on_openvino_runtime(runtime):
    """Whether a run folder served with `--runtime` `runtime` runs on OpenVINO: "openvino" (an
    ImportError that names the extra where it is missing), "auto" where it is installed.

    Example:
        ```python
        from keras_bert_lib.serve.served_keras_model import on_openvino_runtime
        assert on_openvino_runtime("tensorflow") is False
        ```
    """
    if runtime == "tensorflow":
        return False
    try:
        import openvino  # noqa: F401
    except ImportError:
        if runtime == "openvino":
            raise ImportError('--runtime openvino needs OpenVINO: pip install "keras-bert-lib[openvino]".') from None
        return False
    return True


__all__ = ["PER_TOKEN", "RUNTIMES", "ServedKerasModel", "on_openvino_runtime"]
