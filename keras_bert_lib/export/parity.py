"""parity_report: each exported artefact against the Keras model — difference, agreement, size, speed."""

import os
import time

import numpy as np

from keras_bert_lib.export.signatures import agreement, task_outputs


def _size(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(r, f)) for r, _, files in os.walk(path) for f in files)
    return os.path.getsize(path)


def runner(path, text=False):
    """A function ids → {name: array} for a SavedModel folder, a .tflite, .onnx or OpenVINO .xml file, loaded
    once (the parity report's latencies are steady-state calls, not session set-up). With
    `text=True`, the function of its string signature (`serving_default`: {"text": strings, …}),
    or None where the artefact takes ids only (ONNX, OpenVINO, an ids-only file).

    Example:
        ```python
        # run = runner("exported/model.onnx"); outputs = run(ids)
        ```
    """
    if os.fspath(path).endswith(".tflite"):
        from keras_bert_lib.export.tflite import tflite_runner

        try:
            return tflite_runner(path, "serving_default" if text else "serving_ids")
        except ValueError:  # no such signature: an ids-only file
            return None
    if os.fspath(path).endswith(".onnx"):
        from keras_bert_lib.export.onnx import onnx_runner

        return None if text else onnx_runner(path)
    if os.fspath(path).endswith(".xml"):
        from keras_bert_lib.export.openvino import openvino_runner

        return None if text else openvino_runner(path)
    import tensorflow as tf

    loaded = tf.saved_model.load(os.fspath(path))
    serve = loaded.signatures["serving_default" if text else "serving_ids"]
    if text and serve.structured_input_signature[1].get("text", tf.TensorSpec(None, tf.int32)).dtype != tf.string:
        return None
    return lambda feed: {k: v.numpy() for k, v in serve(**{k: tf.constant(v) for k, v in feed.items()}).items()}


def _median_seconds(fn, ids, repeats):
    fn(ids)  # warm-up: tracing, session set-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(ids)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def parity_report(model, exported, inputs, repeats=5, labels=None, timed_rows=8, texts=None):
    """Compares exported artefacts with the Keras model on the same id batch.

    Per artefact: the largest absolute difference and the smallest cosine over the float outputs
    (`export.signatures.agreement`), task agreement (the share of equal labels / tags / argmax of the
    first output), with `labels` the accuracy of its `label` output, the size on disk and the
    median latency of `repeats` calls on the first `timed_rows` rows of `inputs`. With `texts`,
    the raw strings that `inputs` were made from, each artefact that takes strings (SavedModel,
    text-in TFLite) gets a second row, "<name> text", from its string signature: tokenizer and
    model against Keras on the preprocessor's ids.

    Args:
        model: the Keras task model or encoder that was exported.
        exported: dict name → path (a SavedModel version folder, a `.tflite`, `.onnx` or OpenVINO `.xml` file).
        inputs: the id dict (`token_ids`, `segment_ids`, `padding_mask`), numpy int32.
        labels: optional int array (B,): the true classes of a classifier's rows.
        texts: optional dict {"text": strings (B,)[, "text_pair": strings]} of the same rows.
    Returns:
        list of dicts (`artefact`, `max_abs_diff`, `cosine`, `agreement`, [`accuracy`,]
        `megabytes`, `ms`), the Keras model's own row first; `format_report` prints them as a table.
    Example:
        ```python
        import tempfile
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.export import export_saved_model, parity_report
        from keras_bert_lib.export.signatures import check_batch
        encoder = bert_tiny(num_hidden_layers=1)
        rows = parity_report(encoder, {"saved_model": export_saved_model(encoder, tempfile.mkdtemp())},
                             check_batch(encoder))
        ```
    """
    import tensorflow as tf

    keras_fn = tf.function(lambda ids: task_outputs(model, ids))
    want = {k: v.numpy() for k, v in keras_fn(inputs).items()}
    timed = {k: np.asarray(v)[:timed_rows] for k, v in inputs.items()}
    keras_bytes = sum(np.prod(w.shape) * np.dtype(w.dtype).itemsize for w in model.weights)

    def row(name, got, megabytes, run, timed=timed):
        diff, cosine = agreement(got, want)
        key = next((k for k in want if want[k].dtype.kind in "iu"), next(iter(want)))
        same = (np.asarray(got[key]) == want[key]) if want[key].dtype.kind in "iu" else (
            np.argmax(got[key], -1) == np.argmax(want[key], -1))
        accuracy = {} if labels is None else {"accuracy": float(np.mean(np.asarray(got["label"]) == labels))}
        return {"artefact": name, "max_abs_diff": diff, "cosine": cosine, "agreement": float(np.mean(same)),
                **accuracy, "megabytes": megabytes, "ms": 1e3 * _median_seconds(run, timed, repeats)}

    rows = [row("keras", want, keras_bytes / 1e6, keras_fn)]
    for name, path in exported.items():
        run = runner(path)
        rows.append(row(name, run(inputs), _size(path) / 1e6, run))
        run = runner(path, text=True) if texts is not None else None
        if run is not None:
            strings = {k: np.asarray(v, dtype=object) for k, v in texts.items()}
            rows.append(row(f"{name} text", run(strings), _size(path) / 1e6, run,
                            {k: v[:timed_rows] for k, v in strings.items()}))
    return rows


def format_report(rows):
    """The rows of `parity_report` as a text table.

    Example:
        ```python
        from keras_bert_lib.export.parity import format_report
        print(format_report([{"artefact": "keras", "max_abs_diff": 0.0, "cosine": 1.0, "agreement": 1.0,
                              "megabytes": 17.6, "ms": 3.2}]))
        ```
    """
    accuracy = all("accuracy" in r for r in rows)
    lines = [f"{'artefact':<26}{'max |diff|':>12}{'cosine':>10}{'agreement':>11}" + ("  accuracy" if accuracy else "")
             + f"{'size MB':>10}{'median ms':>11}"]
    for r in rows:
        lines.append(f"{r['artefact']:<26}{r['max_abs_diff']:>12.2e}{r['cosine']:>10.6f}{r['agreement']:>11.3f}"
                     + (f"{r['accuracy']:>10.3f}" if accuracy else "") + f"{r['megabytes']:>10.1f}{r['ms']:>11.2f}")
    return "\n".join(lines)
