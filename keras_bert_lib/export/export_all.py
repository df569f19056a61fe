"""Every export at once: a model file → a SavedModel, TFLite and ONNX files, checked, in one folder."""

import importlib.util
import os
import warnings

import keras

from keras_bert_lib.backend_check import require_tensorflow_for
from keras_bert_lib.export.isolated import export_isolated
from keras_bert_lib.export.onnx import export_onnx
from keras_bert_lib.export.openvino import export_openvino
from keras_bert_lib.export.saved_model import export_saved_model
from keras_bert_lib.export.tflite import export_tflite
from keras_bert_lib.file_checks import check_writable_folder
from keras_bert_lib.layers.initializers import assigned_next
from keras_bert_lib.output_lock import output_lock
from keras_bert_lib.runtime import with_dtype
from keras_bert_lib.runtime.compile_path import bfloat16_kernels, bfloat16_pays, model_width

FORMATS = ("saved_model", "tflite", "onnx", "openvino")
DEFAULT_FORMATS = ("saved_model", "tflite", "onnx")  # OpenVINO is an extra of its own
QUANTIZATIONS = (None, "float16", "dynamic_int8")
DTYPES = ("auto", "float32", "bfloat16")


def saved_model_dtype(setting, model, flags=None, accelerators=None):
    """(the dtype of the SavedModel's weights, why): "bfloat16" or "float32" as `setting` says;
    for "auto", bfloat16 where it pays (`compile_path.bfloat16_pays`: TensorFlow on a CPU with
    AVX512-BF16 or AMX, a model 256 wide or more), float32 elsewhere. Outputs stay float32.

    Example:
        ```python
        from keras_bert_lib import bert_base
        from keras_bert_lib.export.export_all import saved_model_dtype
        saved_model_dtype("auto", bert_base(), flags={"avx2"}, accelerators=[])[0]   # "float32"
        ```
    """
    if setting not in DTYPES:
        raise ValueError(f"dtype={setting!r}: the SavedModel's weights are one of {DTYPES}.")
    if setting != "auto":
        return setting, f"--dtype {setting}"
    if bfloat16_pays(model_width(model), flags, accelerators):
        return "bfloat16", f"--dtype auto: this CPU has {bfloat16_kernels(flags)}"
    kernels = bfloat16_kernels(flags)
    return "float32", ("--dtype auto: " + (f"the model is narrower than bfloat16 pays for on {kernels}" if kernels
                                           else "this CPU has no bfloat16 instructions (AVX512-BF16 or AMX)"))


def load_model_file(path):
    """(the Keras model, its `.keras` path) from a `.keras` file or a run folder holding
    `model.keras`, loaded with `safe_mode=True` and without its optimizer, its weights not drawn
    before the file's replace them (`assigned_next`); a ValueError that says what to pass if it is
    neither.

    Example:
        ```python
        from keras_bert_lib.export.export_all import load_model_file
        # model, path = load_model_file("runs/quickstart_classify")
        ```
    """
    file = os.path.join(path, "model.keras") if os.path.isdir(path) else os.fspath(path)
    if not os.path.isfile(file):
        raise ValueError(f"{file} is not a file; pass a .keras file or a run folder with model.keras.")
    try:
        with warnings.catch_warnings(), assigned_next():  # Keras fails on a weight the file does not hold
            # compile=False: Keras says it skips the optimizer's variables
            warnings.filterwarnings("ignore", message="Skipping variable loading for optimizer")
            return keras.saving.load_model(file, safe_mode=True, compile=False), file
    except (ValueError, OSError, KeyError, TypeError) as e:  # not a .keras archive, or one of other classes
        raise ValueError(f"{file} does not load as a Keras model ({e}); pass the model.keras that keras-bert "
                         "finetune or model.save wrote.") from None


def check_export_target(output, formats=FORMATS, version=1, flag="--output"):
    """Raises a ValueError, before any conversion, if `output` cannot be written or already holds
    SavedModel `version` (TF Serving serves a version as it was written); `flag` names the setting.

    Example:
        ```python
        import tempfile
        from keras_bert_lib.export.export_all import check_export_target
        check_export_target(tempfile.mkdtemp(), ["saved_model"], version=1)
        ```
    """
    check_writable_folder(output, flag)
    target = os.path.join(output, "saved_model", str(version))
    if "saved_model" in formats and os.path.exists(target):
        raise ValueError(f"{target} exists, and TF Serving serves a version as it was written: export as "
                         f"--version {version + 1}, or delete the folder.")


def export_all(model, output, formats=DEFAULT_FORMATS, quantize=(None,), version=1, pair=None, text=True, optimize=True,
               model_path=None, log=None, dtype="auto", calibration=None):
    """Writes each of `formats` into `output`, every file checked against the Keras model as it
    is made; returns {artefact: path}, the keys `parity_report` takes ("saved_model", or
    "saved_model bfloat16" for bfloat16 weights, "tflite", "onnx dynamic_int8", ...).

    `output/saved_model/<version>/` (TF Serving), `output/model[_<quantize>].tflite`,
    `output/model[_int8].onnx`, `output/openvino/model.xml` (and `.bin`; float32 weights, the
    `openvino` extra). Each of `quantize` gives a TFLite and (but for float16) an ONNX
    file. With several TFLite/ONNX files and `model_path` (the model's `.keras` file), each
    conversion runs in a fresh process (`export_isolated`: TFLite's converter leaks memory).

    Args:
        model: a task model or encoder.
        output: str. The folder (made if needed; checked first by `check_export_target`).
        formats: some of "saved_model", "tflite", "onnx", "openvino".
        quantize: some of None, "float16" (TFLite only), "dynamic_int8".
        version: int. The SavedModel's TF Serving version.
        pair: None, or True for a classifier of text pairs (two string inputs).
        text: bool. TFLite: the tokenizer inside the file too (strings in).
        optimize: bool. ONNX: ONNX Runtime's transformer optimiser.
        model_path: the `.keras` file of `model`, for the fresh-process conversions.
        log: a function of one line (say `print`) told of each artefact as it is written, or None.
        dtype: the SavedModel's weights: "float32", "bfloat16" (stored once in bfloat16: the serving
            copy, `models.with_dtype`; float32 outputs) or "auto" (`saved_model_dtype`). The other
            formats are float32 (or quantized). "int8" is for OpenVINO alone: `openvino/model_int8.xml`,
            NNCF's int8 model (`export_openvino(int8=...)`).
        calibration: list of texts or None. int8's calibration texts (None: dynamic int8).
    Raises:
        ValueError: an unknown format or quantization, float16 for ONNX alone, an output that
            cannot take the files or that another export is writing (`output/.lock`), OpenVINO
            not installed (before any conversion).
    Example:
        ```python
        import tempfile
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.export import export_all
        paths = export_all(bert_tiny(num_hidden_layers=1), tempfile.mkdtemp(), formats=["saved_model"])
        ```
    """
    require_tensorflow_for("Exports", "keras-bert export MODEL --output DIR")
    formats = list(dict.fromkeys(formats))
    quantize = list(dict.fromkeys(quantize))
    unknown = [f for f in formats if f not in FORMATS] + [q for q in quantize if q not in QUANTIZATIONS]
    if unknown:
        raise ValueError(f"{unknown} not among the formats {FORMATS} and quantizations {QUANTIZATIONS}.")
    onnx_quantize = [q for q in quantize if q != "float16"]
    if "onnx" in formats and not onnx_quantize:
        raise ValueError("float16 quantization is for TFLite; ONNX takes none or dynamic_int8.")
    check_export_target(output, formats, version)
    int8 = dtype == "int8"
    if int8 and formats != ["openvino"]:
        raise ValueError("--dtype int8 writes an OpenVINO file (--format openvino alone); a SavedModel holds float32 "
                         "or bfloat16 weights, and ONNX and TFLite take --quantize dynamic_int8. Nothing was written.")
    weights, why = saved_model_dtype("auto" if int8 else dtype, model)
    if "openvino" in formats and importlib.util.find_spec("openvino") is None:
        raise ValueError('--format openvino needs OpenVINO: pip install "keras-bert-lib[openvino]". '
                         "Nothing was written.")
    with output_lock(os.path.join(output, ".lock"), output, "--output"):  # one export into a folder at a time
        jobs = [("tflite", q) for q in quantize if "tflite" in formats] + \
               [("onnx", q) for q in onnx_quantize if "onnx" in formats]
        isolate = len(jobs) > 1 and model_path is not None
        say = log or (lambda line: None)
        exported = {}
        if "saved_model" in formats:
            served = with_dtype(model, "bfloat16") if weights == "bfloat16" else model
            key = "saved_model" if weights == "float32" else f"saved_model {weights}"  # the parity table's row
            exported[key] = export_saved_model(served, os.path.join(output, "saved_model"), version=version, pair=pair,
                                               preprocessor=getattr(model, "preprocessor", None))
            say(f"saved_model: {exported[key]} ({weights} weights; {why})")
        for fmt, q in jobs:
            if fmt == "tflite":
                options = dict(quantization=q, text=text, pair=pair)
                path = os.path.join(output, f"model_{q}.tflite" if q else "model.tflite")
            else:
                options = dict(optimize=optimize, quantize=q)
                path = os.path.join(output, "model_int8.onnx" if q else "model.onnx")
            info = (export_isolated(model_path, fmt, path, **options) if isolate
                    else (export_tflite if fmt == "tflite" else export_onnx)(model, path, **options))
            fused = ", ".join(f"{k} {v}" for k, v in info.get("fused", {}).items() if v)
            say(f"{fmt}{' ' + q if q else ''}: {info['path']}" +
                (f" in {info['seconds']:.1f} s; fused operators: {fused or 'none'}" if fmt == "onnx" else ""))
            exported[f"{fmt} {q}" if q else fmt] = info["path"]
        if "openvino" in formats:
            quantized = None
            if int8:
                from keras_bert_lib.runtime.openvino import Int8Runtime

                quantized = Int8Runtime(calibration=calibration)
            info = export_openvino(model, os.path.join(output, "openvino", "model_int8.xml" if int8 else "model.xml"),
                                   int8=quantized)
            say(f"openvino: {info['path']} in {info['seconds']:.1f} s; computes in {info['precision']} on this CPU")
            exported["openvino int8" if int8 else "openvino"] = info["path"]
        return exported
