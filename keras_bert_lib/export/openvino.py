"""OpenVINO: an exported IR file (`.xml` + `.bin`); the runtimes behind `predict` are in
`runtime.openvino`.

OpenVINO reads the model as TensorFlow traces it (its TensorFlow front end on a concrete
function: it rejects our ONNX file's batch broadcast and the SavedModel's variable handles),
with a dynamic batch and sequence axis, and compiles it for the CPU at the precision the CPU
runs fastest (`INFERENCE_PRECISION_HINT`): bfloat16 on CPUs with AVX512-BF16 or AMX, float32
elsewhere. Needs the `openvino` extra (`pip install "keras-bert-lib[openvino]"`).
"""

import os
import time

import numpy as np

from keras_bert_lib.export.signatures import ServingModule, check_batch, task_outputs
from keras_bert_lib.runtime.openvino import OpenVINORuntime, compiled_runner, convert, require_openvino

__all__ = ["OpenVINORuntime", "export_openvino", "openvino_runner"]


def export_openvino(model, path, int8=None):
    """Writes the model's ids signature as OpenVINO IR (`path`, an `.xml` file, and its `.bin`
    beside it) and returns what was made, after OpenVINO has run it on a batch that agrees with
    the Keras model (max abs difference ≤ 1e-4 in float32; cosine ≥ 0.99 where OpenVINO computes
    in bfloat16).

    Inputs `token_ids`, `segment_ids`, `padding_mask` (int32, dynamic batch and sequence axes);
    outputs the task's named outputs (`export.signatures.output_names`). Tokenization stays
    outside, as for ONNX.

    With `int8` (a `runtime.openvino.Int8Runtime`: its calibration texts, or none for dynamic
    quantization) the file holds NNCF's int8 model, gated as `predict` gates it and checked
    against Keras by cosine (≥ 0.99). A static int8 file computes its float parts in float32 and
    says so in its `runtime_options` (`INFERENCE_PRECISION_HINT`), which `openvino_runner` applies
    and OpenVINO's own `compile_model` does not: pass it there.

    Args:
        model: a task model or `BertEncoder`.
        path: str. The `.xml` file.
        int8: an `Int8Runtime` or None (float weights).
    Returns:
        dict: `path`, `precision` (what the CPU here computes in), `max_abs_diff`, `seconds`.
    Example:
        ```python
        import os, tempfile
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.export.openvino import export_openvino
        info = export_openvino(bert_tiny(num_hidden_layers=1), os.path.join(tempfile.mkdtemp(), "model.xml"))
        ```
    """
    ov = require_openvino()
    if not os.fspath(path).endswith(".xml"):
        raise ValueError(f"{path}: an OpenVINO model is an .xml file (with its .bin beside it).")
    start = time.perf_counter()
    module = ServingModule(model, text=False)
    function = module.ids.get_concrete_function()
    ov_model = convert(function)
    names = [_name(port) for port in ov_model.outputs]  # the signature's keys
    feed = check_batch(model)
    expected = {k: np.asarray(v) for k, v in task_outputs(model, feed).items()}
    if int8 is not None:
        int8.calibrate(model, None)
        run = int8.runner(model, ov_model, names)  # quantized and gated on the calibration texts
        ov_model, run.precision = int8.quantized, f"int8 ({int8.quantization})"
    else:
        run = compiled_runner(ov_model, names)
    got = dict(zip(names, run(feed)))
    diff = _check(got, expected, run.precision)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    staging = os.path.join(folder, f".partial-{os.path.basename(path)}")
    ov.save_model(ov_model, staging, compress_to_fp16=False)
    os.replace(staging[:-4] + ".bin", os.fspath(path)[:-4] + ".bin")
    os.replace(staging, path)  # the .xml last: an .xml is there only with its .bin
    return {"path": os.fspath(path), "precision": run.precision, "max_abs_diff": diff,
            "seconds": time.perf_counter() - start}


def _check(got, expected, precision):
    """The largest float difference between OpenVINO's outputs and Keras'; raises where they
    disagree (bfloat16: by cosine, as the parity table reads it)."""
    worst = 0.0
    for name, want in expected.items():
        have = np.asarray(got[name])
        if not np.issubdtype(want.dtype, np.floating):
            continue
        diff = float(np.max(np.abs(have - want))) if want.size else 0.0
        worst = max(worst, diff)
        if precision != "float32":
            a, b = have.reshape(len(have), -1), want.reshape(len(want), -1)
            cosine = np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-12)
            if np.min(cosine) < 0.99:
                raise ValueError(f"OpenVINO's {name} disagrees with Keras: cosine {np.min(cosine):.4f} < 0.99.")
        elif diff > 1e-4:
            raise ValueError(f"OpenVINO's {name} differs from Keras' by {diff:.2e} (> 1e-4).")
    return worst


def _name(port):
    return min(port.get_names(), key=len)


def openvino_runner(path, threads=None):
    """An `.xml` file compiled for the CPU, as a function id dict → {output name: array}: at the
    precision its `runtime_options` name (a static int8 file's float parts: float32), else at
    OpenVINO's choice for this CPU.

    Example:
        ```python
        # run = openvino_runner("exported/openvino/model.xml"); run(ids)["probabilities"]
        ```
    """
    ov = require_openvino()
    ov_model = ov.Core().read_model(os.fspath(path))
    names = [_name(port) for port in ov_model.outputs]
    run = compiled_runner(ov_model, names, threads)
    return lambda ids: dict(zip(names, run(ids)))
