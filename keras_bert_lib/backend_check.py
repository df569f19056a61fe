"""The TensorFlow-only packages' check that Keras runs on TensorFlow."""

import keras


def require_tensorflow_backend(package, also=()):
    """Raises ImportError, saying what to do, unless Keras runs on its TensorFlow backend (or on
    one of the backends in `also`, with TensorFlow installed beside it).

    `tasks` and `export` build TensorFlow graphs with Keras layers in them (raw-string models,
    SavedModels); `text`, `data`, `training` and `runs` build tf.data pipelines and TensorFlow
    graphs too, and also run under Keras' JAX backend, where tf.data on the host feeds JAX's
    compiled steps (`also=("jax",)`). The encoders, heads and checkpoints run on every backend.

    Example:
        ```python
        from keras_bert_lib.backend_check import require_tensorflow_backend
        require_tensorflow_backend("text")   # passes under KERAS_BACKEND=tensorflow
        ```
    """
    backend = keras.backend.backend()
    if backend in also:
        try:
            import tensorflow  # noqa: F401  (tf.data and tensorflow-text feed the other backend)
        except ImportError:
            raise ImportError(f"keras_bert_lib.{package} on {backend} reads its data with tf.data: "
                              "pip install tensorflow tensorflow-text (CPU wheels are enough).") from None
        return
    if backend != "tensorflow":
        where = "TensorFlow or " + " or ".join(also) if also else "TensorFlow"
        raise ImportError(
            f"keras_bert_lib.{package} builds TensorFlow graphs (tensorflow-text, tf.data, "
            f"tf.distribute) and needs Keras' TensorFlow backend, but this process runs Keras on "
            f"{backend}. Set KERAS_BACKEND=tensorflow before importing keras (it runs on {where}); "
            "the encoders, heads and load_checkpoint run on every backend.")


def require_tensorflow_for(what, command):
    """Raises ValueError, naming the command to run instead, unless Keras runs on TensorFlow:
    for the steps that build TensorFlow graphs around Keras layers (fine-tuning runs with their
    raw-string models, exports) while the rest of the package also runs on JAX.

    Example:
        ```python
        from keras_bert_lib.backend_check import require_tensorflow_for
        require_tensorflow_for("exports", "keras-bert export RUN --output DIR")   # passes on TensorFlow
        ```
    """
    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise ValueError(f"{what} run on Keras' TensorFlow backend, and this process runs Keras on {backend}: "
                           f"KERAS_BACKEND=tensorflow {command} (On JAX: pre-training, the encoders, heads "
                           "and checkpoints.)")
