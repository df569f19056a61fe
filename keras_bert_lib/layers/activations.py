"""GELU in both of its BERT-family forms, and the lookup from a config's `hidden_act`."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_lib")
def gelu(x):
    """Exact GELU: x·Φ(x) = 0.5·x·(1 + erf(x/√2)) (Hendrycks & Gimpel; HuggingFace's "gelu").

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers.activations import gelu
        y = gelu(np.array([0.0, 1.0], "float32"))  # [0.0, 0.8413447]
        ```

    Written with erf, not TensorFlow's `tf.nn.gelu` (which computes 0.5·x·erfc(−x/√2)): tf2onnx
    cannot convert Erfc, ONNX Runtime fuses this very pattern into one Gelu, and TensorFlow runs
    it faster, in graph mode and under XLA; the two agree within 1e-6.
    """
    return 0.5 * x * (1.0 + ops.erf(x * 0.7071067811865476))


@keras.saving.register_keras_serializable(package="keras_bert_lib")
def gelu_tanh(x):
    """Tanh GELU: 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))) (Google's modeling.py "gelu").

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers.activations import gelu_tanh
        y = gelu_tanh(np.array([0.0, 1.0], "float32"))  # [0.0, 0.841192]
        ```
    """
    return keras.activations.gelu(x, approximate=True)


_BY_NAME = {"gelu": gelu, "gelu_tanh": gelu_tanh, "relu": keras.activations.relu}


def get_activation(name: str):
    """The activation function for a config's `hidden_act` ("gelu", "gelu_tanh", "relu").

    Example:
        ```python
        from keras_bert_lib.layers.activations import get_activation
        act = get_activation("gelu_tanh")
        ```
    """
    if name not in _BY_NAME:
        raise ValueError(f"hidden_act={name!r} is not one of {sorted(_BY_NAME)}.")
    return _BY_NAME[name]
