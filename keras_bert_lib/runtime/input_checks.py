"""Checks of the encoder's inputs before they enter a compiled program, where a bad id is silent;
every entry point of our models runs them (`runtime.entry_points`).

Under XLA a gather clamps an out-of-range id instead of failing, a segment id past the table
gives a zero vector, and a float id or a 0.5 mask is cast without a word. So the values are
checked on the host, before the compiled step: numpy in microseconds (docs/design.md, "Speed").
"""

import keras
import numpy as np

INPUTS = ("token_ids", "segment_ids", "padding_mask")


def check_inputs(inputs, config, extra=()):
    """Raises ValueError naming the input, the bad value and the valid range, or returns None.

    Checks that `inputs` (a dict of arrays) has `token_ids`, `segment_ids` and `padding_mask` of
    one (B, T) shape, integer (the mask may be bool), with ids in [0, vocab_size), segment ids in
    [0, type_vocab_size) (not read by DistilBERT), a 0/1 mask and T within the positions. `extra`
    names further (B, P) index inputs into T (a pretrainer's `masked_positions`).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib import PRESETS
        from keras_bert_lib.runtime.input_checks import check_inputs
        batch = {"token_ids": np.array([[101, 30522]]), "segment_ids": np.zeros((1, 2), int),
                 "padding_mask": np.ones((1, 2), int)}
        try:
            check_inputs(batch, PRESETS["bert_base"])
        except ValueError as e:
            print(e)   # token_ids holds 30522 at [0, 1]; valid ids are 0 … 30521 (vocab_size 30522).
        ```
    """
    if not isinstance(inputs, dict):
        raise ValueError(f"The encoder takes a dict with {', '.join(INPUTS)}; got {type(inputs).__name__}.")
    missing = [k for k in (*INPUTS, *extra) if k not in inputs]
    if missing:
        raise ValueError(f"Inputs lack {missing}; the encoder takes a dict with {', '.join(INPUTS)}.")
    arrays = {k: np.asarray(inputs[k]) for k in (*INPUTS, *extra)}
    shape = arrays["token_ids"].shape
    for name, array in arrays.items():
        if array.ndim != 2 or (name in INPUTS and array.shape != shape) or array.shape[0] != shape[0]:
            raise ValueError(f"{name} has shape {array.shape} but token_ids has {shape}: the inputs are "
                             "(batch, length) int arrays of one shape (masked_positions: (batch, P)).")
        if not (np.issubdtype(array.dtype, np.integer) or (name == "padding_mask" and array.dtype == bool)):
            raise ValueError(f"{name} is {array.dtype}; it must hold integers (int32).")
    length = shape[1]
    rules = {
        "token_ids": (config.vocab_size, f"valid ids are 0 … {config.vocab_size - 1} (vocab_size {config.vocab_size})"),
        "padding_mask": (2, "a padding mask holds 0 and 1 only (1 = real token)"),
    }
    if config.type_vocab_size:  # DistilBERT has no segment table and ignores segment_ids
        rules["segment_ids"] = (config.type_vocab_size, f"valid segment ids are 0 … {config.type_vocab_size - 1} "
                                                         f"(type_vocab_size {config.type_vocab_size})")
    for name in extra:
        rules[name] = (length, f"positions index the {length} tokens: 0 … {length - 1}")
    for name, (limit, rule) in rules.items():
        array = arrays[name].astype(np.int64)
        bad = np.argwhere((array < 0) | (array >= limit))
        if len(bad):
            where = tuple(int(i) for i in bad[0])
            raise ValueError(f"{name} holds {array[where]} at {list(where)}; {rule}.")
    if length > config.max_sequence_length:
        raise ValueError(f"The inputs have {length} positions but the encoder takes at most "
                         f"{config.max_sequence_length}; truncate them (e.g. BertPreprocessor(sequence_length=...)).")


def concrete(value):
    """`value` as a numpy array when it holds values now (numpy, eager tensors), else None
    (symbolic tensors while a graph or a JAX program is traced)."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple, int)):
        return np.asarray(value)
    if isinstance(value, keras.KerasTensor):
        return None
    try:
        return np.asarray(keras.ops.convert_to_numpy(value))
    except Exception:  # a symbolic tf.Tensor or a JAX tracer: checked before tracing instead
        return None


def is_tf_dataset(x):
    """Whether `x` is a tf.data.Dataset, asked without importing TensorFlow (other backends).

    Example:
        ```python
        from keras_bert_lib.runtime.input_checks import is_tf_dataset
        is_tf_dataset([1, 2])   # False
        ```
    """
    return type(x).__module__.startswith("tensorflow") and hasattr(x, "element_spec") and hasattr(x, "map")


def checked_dataset(dataset, config, extra):
    """The same checks as graph assertions in the dataset's own map (outside the compiled step).
    TensorFlow is imported only here: a tf.data.Dataset means it is installed."""
    import tensorflow as tf

    @tf.autograph.experimental.do_not_convert  # plain graph code; autograph would only cost time
    def check(features, *rest):
        if not isinstance(features, dict):
            return (features, *rest)
        length = tf.shape(features["token_ids"])[1]
        limits = {"token_ids": (config.vocab_size, f"vocab_size {config.vocab_size}"),
                  "padding_mask": (2, "a mask holds 0 and 1 only")}
        if config.type_vocab_size:
            limits["segment_ids"] = (config.type_vocab_size, f"type_vocab_size {config.type_vocab_size}")
        asserts = [
            tf.debugging.assert_less_equal(
                length,
                config.max_sequence_length,
                message=f"more positions than the encoder's {config.max_sequence_length}",
            )
        ]
        for name, (limit, what) in limits.items():
            value = tf.cast(features[name], tf.int64)
            asserts += [tf.debugging.assert_non_negative(value, message=f"{name} holds a negative value; {what}"),
                        tf.debugging.assert_less(value, tf.cast(limit, tf.int64),
                                                 message=f"{name} holds a value >= {limit}; {what}")]
        for name in extra:
            value = tf.cast(features[name], tf.int64)
            asserts.append(tf.debugging.assert_less(value, tf.cast(length, tf.int64),
                                                    message=f"{name} points past the sequence length"))
        for name in (*INPUTS, *extra):
            if not (features[name].dtype.is_integer or (name == "padding_mask" and features[name].dtype == tf.bool)):
                raise ValueError(f"{name} is {features[name].dtype.name} in the dataset; it must hold integers.")
        with tf.control_dependencies(asserts):
            features = {k: tf.identity(v) for k, v in features.items()}
        return (features, *rest)

    return dataset.map(check)
