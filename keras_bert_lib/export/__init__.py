"""Export: a TF Serving SavedModel on raw strings, a TFLite file and an ONNX file, each checked
against Keras.

TensorFlow only (the SavedModel's tokenizer is tensorflow-text's); ONNX needs the `export`
extra (`pip install "keras-bert-lib[export]"`: tf2onnx, onnxruntime), OpenVINO its own
(`pip install "keras-bert-lib[openvino]"`).
"""

from keras_bert_lib.backend_check import require_tensorflow_backend

require_tensorflow_backend("export", also=("jax",))

from keras_bert_lib.export.export_all import DEFAULT_FORMATS, FORMATS, check_export_target, export_all, load_model_file  # noqa: E402
from keras_bert_lib.export.onnx import export_onnx  # noqa: E402
from keras_bert_lib.export.openvino import OpenVINORuntime, export_openvino  # noqa: E402
from keras_bert_lib.export.parity import format_report, parity_report  # noqa: E402
from keras_bert_lib.export.saved_model import export_saved_model  # noqa: E402
from keras_bert_lib.export.signatures import ServingModule, output_names  # noqa: E402
from keras_bert_lib.export.tflite import export_tflite  # noqa: E402

__all__ = ["DEFAULT_FORMATS", "FORMATS", "OpenVINORuntime", "ServingModule", "check_export_target", "export_all",
           "export_onnx", "export_openvino", "export_saved_model", "export_tflite", "format_report", "load_model_file",
           "output_names", "parity_report"]
