"""`without_autotune`: the options every pipeline of ours ends with, so that Keras does not wait on
an iterator it has finished with."""

import tensorflow as tf


def without_autotune(data):
    """`data` with tf.data's autotuning thread off.

    Keras makes a new iterator over the held-out data for each epoch's validation pass (and one
    for each `evaluate`), and drops it at the end. With autotuning on, TensorFlow 2.21 then waits
    for the autotuning thread, which sleeps for its optimisation period, a period that doubles
    while the pipeline runs: measured here, 6.4-10.2 s lost after a 10-13 s pass in most passes,
    with the processor idle (a fine-tuning run on 2,000 movie reviews lost 6.9-9.6 s in six of
    seven runs; none in runs with these options). Our pipelines are light next to the model (125
    tokenized batches of 32 reviews in 0.2 s either way), so their `AUTOTUNE` parallel maps run
    at TensorFlow's fixed default instead, the number of cores.

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
