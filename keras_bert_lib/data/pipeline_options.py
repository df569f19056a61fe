"""`without_autotune`: the options every pipeline of ours ends with, so that Keras does not wait on
an iterator it has finished with; `parallel_map`, the map and prefetch most of them end with."""

import tensorflow as tf


def without_autotune(data):
    """`data` with tf.data's autotuning thread off.

    Keras makes a new iterator over the held-out data for each epoch's validation pass (and one
    for each `evaluate`), and drops it at the end. With autotuning on, TensorFlow 2.21 then waits
    for the autotuning thread, which sleeps for its optimisation period, a period that doubles
    while the pipeline runs: seconds lost after most passes, with the processor idle, and none with
    these options. Our pipelines are light next to the model (tokenizing a batch costs the same
    with autotuning and without), so their `AUTOTUNE` maps and prefetches keep TensorFlow's untuned
    defaults.

    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.data.pipeline_options import without_autotune
        data = without_autotune(tf.data.Dataset.range(4).prefetch(tf.data.AUTOTUNE))
        data.options().autotune.enabled   # False
        ```
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return data.with_options(options)


def parallel_map(data, fn):
    """`data.map(fn)` in parallel, prefetched, with autotuning off (`without_autotune`).

    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.data.pipeline_options import parallel_map
        list(parallel_map(tf.data.Dataset.range(3), lambda x: x * 2).as_numpy_iterator())   # [0, 2, 4]
        ```
    """
    return without_autotune(data.map(fn, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
