"""BiasActivationDense: a Dense layer written the way TensorFlow fuses it with oneDNN."""

import keras


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class BiasActivationDense(keras.layers.Dense):
    """`keras.layers.Dense` whose TensorFlow graph TensorFlow fuses: act(x·W + b) as MatMul → BiasAdd
    → activation on the (B·T, H) rows, the pattern TensorFlow's remapper turns into one oneDNN call
    with the bias and GELU as post-ops (`ONEDNN_VERBOSE`: `attr-post-ops:eltwise_gelu_erf`). Keras'
    Dense adds its bias with AddV2 on the (B, T, I) product, which it does not fuse (the fused
    form is faster in bfloat16 with AVX512-BF16). float32 fuses on every x86 CPU; bfloat16 only on CPUs
    with AVX512-BF16 or AMX (elsewhere oneDNN runs it as a plain gemm). Other backends, XLA
    (which fuses either form) and LoRA/quantized layers take Dense's own call; the result is the
    same function. BERT uses it for the feed-forward's first dense (its GELU); the attention
    projections stay plain Dense, whose graph ONNX Runtime's optimiser fuses into one Attention
    operator (the reshapes this form adds around Q, K and V stop that fusion).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.layers.bias_activation_dense import BiasActivationDense
        y = BiasActivationDense(16, activation="relu")(np.ones((2, 4, 8), "float32"))  # (2, 4, 16)
        ```
    """

    def call(self, inputs, training=None):
        if (keras.backend.backend() != "tensorflow" or self.bias is None or self.lora_enabled
                or self.quantization_mode is not None or len(inputs.shape) < 2):
            return super().call(inputs, training=training)
        import tensorflow as tf

        shape = tf.shape(inputs)
        rows = tf.reshape(inputs, (-1, self.kernel.shape[0]))  # (B·T, H)
        y = tf.nn.bias_add(tf.matmul(rows, self.kernel), self.bias)  # (B·T, I)
        if self.activation is not None:
            y = self.activation(y)
        return tf.reshape(y, tf.concat([shape[:-1], [self.units]], axis=0))  # (B, T, I)

    def get_config(self):
        # Every __init__ argument, as every layer here saves them (Dense leaves these out when unset).
        regularizer = self.activity_regularizer
        return {"activity_regularizer": keras.regularizers.serialize(regularizer) if regularizer else None,
                "lora_rank": self.lora_rank, "lora_alpha": self.lora_alpha, **super().get_config()}
