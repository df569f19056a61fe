"""Choosing a tf.distribute strategy by name."""

import tensorflow as tf

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker", "tpu")


def create_strategy(name="auto", tpu_address=None):
    """A tf.distribute strategy: `auto` (mirrored over several GPUs, else the default),
    `one_device`, `mirrored` (all local GPUs, or CPUs), `multi_worker` (reads TF_CONFIG), `tpu`.

    Example:
        ```python
        from keras_bert_lib.training import create_strategy
        strategy = create_strategy("one_device")
        ```
    """
    if name not in STRATEGIES:
        raise ValueError(f"strategy={name!r} is not one of {STRATEGIES}.")
    if name == "multi_worker":  # must come before anything initialises TensorFlow's context
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if name == "auto":
        return tf.distribute.MirroredStrategy() if len(gpus) > 1 else tf.distribute.get_strategy()
    if name == "one_device":
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "mirrored":
        devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
        return tf.distribute.MirroredStrategy(devices)
    # A TPU is not reachable on this machine; this is the standard TPUStrategy start-up.
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address or "")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
