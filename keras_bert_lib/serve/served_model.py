"""One exported SavedModel behind KServe: requests in either protocol, batched, run through its
`serving_default` on raw strings."""

import asyncio

import numpy as np
import tensorflow as tf
from kserve import InferRequest, Model
from kserve.errors import InvalidInput

from keras_bert_lib.export.saved_model import load_text_signature, saved_model_dtype
from keras_bert_lib.serve.batcher import Batcher
from keras_bert_lib.serve.protocol import BadRequest, Limits, v1_response, v1_rows, v2_response, v2_rows

# Per-token outputs: as wide as the call is padded (its longest text, as the preprocessor pads it), so
# requests are not merged.
PER_TOKEN = ("sequence_output", "start_logits", "end_logits", "logits", "tag_ids")


class ServedModel(Model):
    """An exported SavedModel (`keras-bert export --format saved_model`) served by KServe's
    `ModelServer` under `name`: TF Serving's REST body on `/v1/models/NAME:predict` and the
    Open Inference Protocol on `/v2/models/NAME/infer`.

    Requests that arrive together run as one call (`Batcher`), padded by the SavedModel's
    preprocessor (by default to the call's longest text, rounded up to a multiple of 8). Outputs
    per text (a classifier's, an embedder's, a cross-encoder's) come from merged batches; outputs
    per token (a tagger's, a question answerer's) are as wide as the call is padded, so their
    requests queue through the same batcher but each runs at its own length, as it would alone.

    Args:
        name: str. The model's name in the URLs.
        path: str. The SavedModel folder (one version).
        max_batch_size, batch_timeout_micros, max_batch_tokens, in_flight: the batcher's (`Batcher`);
            a size of 1 turns batching off; `in_flight` None is 2, which keeps TensorFlow's cores
            busy. The token budget counts each text's tokens through the SavedModel's
            `token_counts` signature (one exported before it existed batches by count).
        limits: `Limits` of one request.
    Example:
        ```python
        from keras_bert_lib.serve.served_model import ServedModel
        # model = ServedModel("classifier", "exported/saved_model/1"); model.load()
        ```
    """

    def __init__(self, name, path, max_batch_size=32, batch_timeout_micros=0, limits=Limits(), on_batch=None,
                 max_batch_tokens=None, in_flight=None):
        super().__init__(name)
        self.path, self.limits = path, limits
        self.signature = self.inputs = self.outputs = self.counter = None
        self.precision = None
        self.batcher = Batcher(self._run, max_batch_size, batch_timeout_micros, on_batch, max_batch_tokens,
                               2 if in_flight is None else in_flight)

    def load(self):
        self.signature, self.inputs, self.outputs, self.counter = load_text_signature(self.path, token_counts=True)
        self.precision = saved_model_precision(self.path)
        self._run([[{name: "a" for name in self.inputs}]])  # the first call traces: not a client's wait
        self.ready = True
        return self.ready

    async def predict(self, payload, headers=None):
        try:
            if isinstance(payload, InferRequest):
                results = await self.infer(v2_rows(payload, self.inputs, self.limits))
                return v2_response(results, self.name, payload.id)
            rows, columnar = v1_rows(payload, self.inputs, self.limits)
        except BadRequest as e:
            raise InvalidInput(str(e)) from None
        return v1_response(await self.infer(rows), columnar)

    async def infer(self, rows):
        """Each row's results, through the batcher; with a token budget, the rows' token counts
        come first, off the event loop."""
        tokens = None
        if self.batcher.max_batch_tokens is not None and self.counter is not None:
            tokens = await asyncio.to_thread(self.token_counts, rows)
        return await self.batcher(rows, tokens)

    def _run(self, requests):
        """Each request's list of result dicts; requests merged into one call for per-text outputs."""
        if any(name in PER_TOKEN for name in self.outputs):
            return [self._call(rows) for rows in requests]
        return per_request(self._call([row for rows in requests for row in rows]), requests)

    def token_counts(self, rows):
        """The tokens the model reads of each row ([CLS] and [SEP]s included), or None where the
        SavedModel has no `token_counts` signature (exported before it existed)."""
        if self.counter is None:
            return None
        feed = {name: tf.constant([row[name].encode("utf-8", "replace") for row in rows]) for name in self.inputs}
        return [int(n) for n in self.counter(**feed)["token_counts"].numpy()]

    def _call(self, rows):
        feed = {name: tf.constant([row[name].encode("utf-8", "replace") for row in rows]) for name in self.inputs}
        out = {name: value.numpy() for name, value in self.signature(**feed).items()}
        return [{name: out[name][i] for name in self.outputs} for i in range(len(rows))]



def per_request(merged, requests):
    """`merged` (one result per row of `requests`, in order) cut back into one list per request.

    Example:
        ```python
        from keras_bert_lib.serve.served_model import per_request
        per_request([1, 2, 3], [["a"], ["b", "c"]])   # [[1], [2, 3]]
        ```
    """
    starts = np.cumsum([0] + [len(rows) for rows in requests])
    return [list(merged[a:b]) for a, b in zip(starts[:-1], starts[1:])]


def saved_model_precision(path):
    """What a SavedModel computes in, in words for the server's log: its weights' dtype
    (`export.saved_model.saved_model_dtype`) and how to serve the other.

    Example:
        ```python
        from keras_bert_lib.serve.served_model import saved_model_precision
        # saved_model_precision("exported/saved_model/1")   # 'float32 weights, TensorFlow on the CPU'
        ```
    """
    device = "the GPU" if tf.config.list_logical_devices("GPU") else "the CPU"
    if saved_model_dtype(path) == "bfloat16":
        return (f"bfloat16 weights (float32 outputs), TensorFlow on {device}; answers are within about 2e-3 of "
                "float32 (docs/serve.md): export with --dtype float32 to serve float32")
    return f"float32 weights, TensorFlow on {device}"
