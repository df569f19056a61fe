"""Held-out passes with two batches in flight: while `evaluate` (or `fit`'s held-out pass) adds one
batch to the loss and metrics, the next batch's forward pass already runs on another thread, as
`predict` runs two batches at once (`length_buckets.in_flight`, `compile_path.inference_streams`).

Keras' test step is one TensorFlow function that runs the forward pass and then updates the
metrics; two of them at once race on the metrics' variables (Keras' `assign_add` reads, adds and
assigns: a pass of 2,000 texts lost half of its loss that way). Here the forward pass and the
update are two functions: forward passes overlap, updates run one at a time, in the data's order,
on the calling thread, so the numbers are Keras' own.
"""

import contextlib
import functools
import itertools

import keras

from keras_bert_lib.keras_internals import held_out_update, runs_under_strategy
from keras_bert_lib.runtime.compile_path import any_shape, inference_function, inference_streams
from keras_bert_lib.runtime.length_buckets import in_flight


@contextlib.contextmanager
def evaluating_in_flight(model, batches):
    """Inside the block, `model`'s Keras `evaluate` runs two forward passes at once where
    `predict` does (TensorFlow's graph on a CPU, one device, one step per execution) and reads
    at most `batches` batches (None: until the data ends); elsewhere it changes nothing.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib import TextClassifier, bert_tiny
        from keras_bert_lib.runtime.evaluate_in_flight import evaluating_in_flight
        classifier = TextClassifier(bert_tiny(num_hidden_layers=1), num_classes=2)
        ids = {k: np.ones((6, 4), "int32") for k in ("token_ids", "segment_ids", "padding_mask")}
        with evaluating_in_flight(classifier, batches=3):
            classifier.evaluate(ids, np.array([0, 1] * 3), batch_size=2, verbose=0)
        ```
    """
    streams = _streams(model)
    if streams < 2:
        yield
        return
    model.make_test_function()
    current = model.test_function  # Keras' own, or (an evaluate inside a held-out pass) ours around it
    keras_function = current.keras_function if isinstance(current, InFlightTestFunction) else current
    tests = InFlightTestFunction(model, keras_function, streams, batches)
    model.test_function = tests
    try:
        yield
    finally:
        model.test_function = current
        tests.close()


def _streams(model):
    """How many forward passes a held-out pass of `model` runs at once: `predict`'s number, on
    the TensorFlow backend with one step per execution and no strategy; else 1 (Keras' own)."""
    if (keras.backend.backend() != "tensorflow" or model.run_eagerly or model.steps_per_execution != 1
            or runs_under_strategy(model)):
        return 1
    return inference_streams(model.jit_compile)


class InFlightTestFunction:
    """Keras' `test_function` for one `evaluate` call: called once per step with the data's
    iterator, it returns that step's logs. It reads one batch ahead, runs its forward pass on a
    thread pool, and updates the loss and metrics with the current batch's outputs on the calling
    thread. A dataset whose elements hold optional parts, or a pass under a `tf.distribute` scope,
    takes Keras' own function.

    Example:
        ```python
        from keras_bert_lib import TextClassifier, bert_tiny
        from keras_bert_lib.runtime.evaluate_in_flight import InFlightTestFunction, evaluating_in_flight
        classifier = TextClassifier(bert_tiny(num_hidden_layers=1), num_classes=2)
        with evaluating_in_flight(classifier, batches=3):  # Keras' evaluate then calls it
            ours = isinstance(classifier.test_function, InFlightTestFunction)  # True (in TF's graph on a CPU)
        ```
    """

    def __init__(self, model, keras_function, streams, batches):
        self.model, self.keras_function, self.streams, self.batches = model, keras_function, streams, batches
        self.started, self.results, self.update = False, None, None

    def __call__(self, iterator):
        if not self.started:
            self.started = True
            self._start(iterator)
        if self.results is None:
            return self.keras_function(iterator)
        data, y_pred = next(self.results)
        return self.update(data, y_pred)

    def _start(self, iterator):
        import tensorflow as tf

        spec = getattr(iterator, "element_spec", None)
        if (tf.distribute.has_strategy() or not isinstance(iterator, tf.data.Iterator)
                or any(isinstance(s, tf.OptionalSpec) for s in tf.nest.flatten(spec))):
            return  # Keras' own function, one batch at a time
        forward, self.update = _step_functions(self.model, self.keras_function, spec)
        self.results = in_flight(lambda data: (data, forward(keras.utils.unpack_x_y_sample_weight(data)[0])),
                                 itertools.islice(_batches(iterator), self.batches), self.streams)

    def close(self):
        """Ends the pass: waits for a forward pass still running (its outputs are dropped)."""
        if self.results is not None:
            self.results.close()


def _batches(iterator):
    while (element := iterator.get_next_as_optional()).has_value():
        yield element.get_value()


def _step_functions(model, keras_function, spec):
    """(forward, update) TensorFlow functions for elements of `spec` at any width and batch size:
    the forward pass is `predict`'s (`inference_function`, one trace between them), the update is
    traced once and kept until `compile` makes Keras build a new test function (new metrics)."""
    import tensorflow as tf

    cached = getattr(model, "_in_flight_steps", None)
    if cached is None or cached[0] is not keras_function:
        cached = (keras_function, {})
        object.__setattr__(model, "_in_flight_steps", cached)  # not tracked, and not saved with the model
    spec = any_shape(spec)
    key = repr(spec)
    if key not in cached[1]:
        forward = inference_function(model)
        outputs = forward.get_concrete_function(keras.utils.unpack_x_y_sample_weight(spec)[0]).structured_outputs
        y_spec = tf.nest.map_structure(lambda t: tf.TensorSpec(t.shape, t.dtype), outputs)  # classes stay known
        update = tf.function(functools.partial(held_out_update, model), input_signature=[spec, y_spec])
        cached[1][key] = forward, update
    return cached[1][key]

