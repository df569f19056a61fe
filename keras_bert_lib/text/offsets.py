"""Byte offsets of tokens → character offsets in the original text, as HuggingFace's `offset_mapping`."""

import tensorflow as tf


def character_offsets(sizes, ids, byte_starts, byte_ends):
    """(starts, ends) in characters of the original text, from a tokenizer's byte offsets into the
    text each character became: `sizes` (B, C) are the bytes each original character takes there
    (0 for one removed), `ids` the (B, N) ragged ids whose offsets these are. A token that starts
    inside a character starts at that character; one that ends inside a character ends after it.

    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.text.offsets import character_offsets
        sizes = tf.ragged.constant([[1, 2, 1]], tf.int64)   # the bytes of "aéb" (é takes 2)
        ids = tf.ragged.constant([[7, 8]])
        starts, ends = character_offsets(sizes, ids, tf.ragged.constant([[0, 3]]), tf.ragged.constant([[3, 4]]))
        starts.to_list(), ends.to_list()   # [[0, 2]], [[2, 3]]
        ```
    """
    sizes = tf.ragged.map_flat_values(tf.cast, sizes, tf.int64)
    ends_in_bytes = tf.math.cumsum(sizes, axis=1)  # (B, C) where each character's bytes end
    starts_in_bytes = ends_in_bytes - sizes
    starts = tf.ragged.map_flat_values(tf.cast, byte_starts, tf.int64)
    ends = tf.ragged.map_flat_values(tf.cast, byte_ends, tf.int64)
    first = tf.searchsorted(ends_in_bytes.to_tensor(tf.int64.max), starts.to_tensor(), side="right")
    after = tf.searchsorted(starts_in_bytes.to_tensor(tf.int64.max), ends.to_tensor(), side="left")
    lengths = ids.row_lengths()
    return tf.RaggedTensor.from_tensor(first, lengths=lengths), tf.RaggedTensor.from_tensor(after, lengths=lengths)
