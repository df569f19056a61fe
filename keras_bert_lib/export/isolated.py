"""One conversion in a fresh process: TFLite's converter leaks memory in TF 2.20/2.21."""

import concurrent.futures
import multiprocessing
import os


def export_isolated(model_path, format, path, **options):
    """Runs `export_tflite` (format "tflite") or `export_onnx` ("onnx") in a fresh Python process
    that loads the `.keras` file at `model_path`, and returns the export's info dict.

    Each TFLite conversion keeps memory the process never gets back (tensorflow#122598), so a
    command or benchmark that makes several conversions
    runs each in its own process (spawned: no TensorFlow state is shared) and stays at one
    conversion's peak. Errors are raised here with their original type and message.

    Args:
        model_path: a `.keras` file (loaded with `safe_mode=True`).
        format: "tflite" or "onnx".
        path: the file to write.
        **options: passed on (`quantization=...` for TFLite; `optimize=`, `quantize=` for ONNX).
    Example:
        ```python
        # info = export_isolated("run/model.keras", "tflite", "exported/model.tflite", quantization="float16")
        ```
    """
    if format not in ("tflite", "onnx"):
        raise ValueError(f"format={format!r} is not one of 'tflite', 'onnx'.")
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(_export, os.fspath(model_path), format, os.fspath(path), options).result()


def _export(model_path, format, path, options):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # Here, in the fresh process: export_all imports this module, so a module-level import would be a cycle.
    from keras_bert_lib.export import export_onnx, export_tflite, load_model_file

    model, _ = load_model_file(model_path)
    return (export_tflite if format == "tflite" else export_onnx)(model, path, **options)
