"""The TensorFlow-only packages' check that Keras runs on TensorFlow."""

import keras


def require_tensorflow_backend(package):
    """Raises ImportError, saying what to do, unless Keras runs on its TensorFlow backend.

    `text`, `data`, `training` and `runs` build TensorFlow graphs (tensorflow-text, tf.data,
    tf.distribute); the encoders, heads and checkpoints run on every backend.

    Example:
        ```python
        from keras_bert_lib.backend_check import require_tensorflow_backend
        require_tensorflow_backend("text")   # passes under KERAS_BACKEND=tensorflow
        ```
    """
    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise ImportError(
            f"keras_bert_lib.{package} builds TensorFlow graphs (tensorflow-text, tf.data, "
            f"tf.distribute) and needs Keras' TensorFlow backend, but this process runs Keras on "
            f"{backend}. Set KERAS_BACKEND=tensorflow before importing keras; the encoders, heads "
            "and load_checkpoint run on every backend.")
