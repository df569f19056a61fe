"""Choosing how a run spreads over devices by name: a tf.distribute strategy on TensorFlow, a
`keras.distribution` on JAX."""

import logging

import keras
import tensorflow as tf

logger = logging.getLogger(__name__)

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
    # The standard TPUStrategy start-up; untested: no TPU is reachable from the project's test machines.
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address or "")
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def create_distribution(name="auto"):
    """On Keras' JAX backend, the `keras.distribution` that `name` (a `STRATEGIES` name) means, or
    None for one device: data parallelism (`keras.distribution.DataParallel`) over every local
    device for `auto` (when there are several), `mirrored` and `tpu`; over every device of every
    process for `multi_worker`, after `keras.distribution.initialize()` (it reads
    KERAS_DISTRIBUTION_JOB_ADDRESSES, KERAS_DISTRIBUTION_NUM_PROCESSES and
    KERAS_DISTRIBUTION_PROCESS_ID). Each step then splits the global batch over the devices, and
    the gradient is that of the whole batch, as on one device. tf.data still feeds it from the host.

    Example:
        ```python
        from keras_bert_lib.training.strategy import create_distribution
        distribution = create_distribution("one_device")   # None
        ```
    """
    if name not in STRATEGIES:
        raise ValueError(f"strategy={name!r} is not one of {STRATEGIES}.")
    if name == "one_device":
        return None
    if name == "multi_worker":
        keras.distribution.initialize()
    devices = keras.distribution.list_devices()
    if name == "auto" and len(devices) < 2:
        return None
    logger.info("Data parallel over %d devices (%s).", len(devices), ", ".join(map(str, devices)))
    return keras.distribution.DataParallel(devices=devices)
