"""Non-overlapping pairs, left to right, as a regular expression or BPE's merge reads them."""

import tensorflow as tf


def pair_starts(hit):
    """Where a pair starts: `hit[i]` says whether positions i and i+1 could pair; in a run of
    hits ("a a a a": three) the 1st, 3rd, … start one, so no position is in two pairs.

    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.text.pair_runs import pair_starts
        assert pair_starts(tf.constant([True, True, True, False, True])).numpy().tolist() == [
            True, False, True, False, True]
        ```
    """
    position = tf.range(tf.shape(hit)[0])
    run_start = tf.gather(tf.concat([[0], tf.boolean_mask(position + 1, ~hit)], 0),
                          tf.cumsum(tf.cast(~hit, tf.int32)) - tf.cast(~hit, tf.int32))
    return hit & ((position - run_start) % 2 == 0)
