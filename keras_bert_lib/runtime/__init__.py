"""How models run fast on this machine, in one place: the CPU's facts and the compile rules
(`compile_path`), bfloat16 weight copies (`dtype_copy`), batches by length (`length_buckets`) and
batches in flight (`evaluate_in_flight`, `compile_path.inference_streams`), behind every model's
entry points (`entry_points`: Keras' `predict`, `fit`, `evaluate`, overridden once).

The defaults, stated once: a task model's `predict` sorts texts by length and pads each batch to
its longest row; in TensorFlow's graph on a CPU two batches run at once; on a CPU with
AVX512-BF16 or AMX (and on GPUs and TPUs with bfloat16) a model at least 256 wide predicts from a
bfloat16 copy of its weights (`inference_dtype = "auto"`; None pins the model's own dtype);
float32 runs as one XLA program, bfloat16 on a CPU as TensorFlow's graph (oneDNN's bfloat16
kernels); `model.runtime` (`openvino.OpenVINORuntime()`, `openvino.Int8Runtime()`) replaces Keras
for `predict`, and `inference_dtype = "int8"` runs it on an `Int8Runtime` of its own (OpenVINO with
NNCF; never chosen by "auto").
"""

from keras_bert_lib.runtime.dtype_copy import with_dtype

__all__ = ["with_dtype"]
