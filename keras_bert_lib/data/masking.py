"""Masked-LM masking with tensorflow-text's ops: 15% chosen, of those 80% [MASK], 10% random, 10% kept."""

import numpy as np
import tensorflow as tf

from keras_bert_lib.text.tf_text import import_tensorflow_text


def mask_tokens(features, vocab_size, mask_id, special_ids, max_predictions=20, rate=0.15,
                mask_token_rate=0.8, random_token_rate=0.1, word_starts=None, max_ngram=1):
    """Masks a batch the way BERT's pre-training does, as a tf.data map (dynamic masking).

    `tensorflow_text.mask_language_model` chooses round(`rate` · n) of a row's n items, at least
    one and at most `max_predictions` (Google's count), never one of `special_ids` ([CLS], [SEP],
    [PAD]), and replaces 80% of them with
    [MASK], 10% with a random token and leaves 10%. With `word_starts` (bool (B, T), True on a
    word's first piece) whole words are chosen and masked together (whole-word masking). With
    `max_ngram` N > 1 (ALBERT uses 3) the sequence is cut into n-grams of pieces, or of words with
    `word_starts`, with P(n) ∝ 1/n for n ≤ N, and `rate` of the n-grams are chosen, which is
    `rate` of the units in expectation (ALBERT's n-gram masking).

    Args:
        features: dict with int32 `token_ids`, `segment_ids`, `padding_mask` (B, T).
        vocab_size: int. Random replacements are drawn from [0, vocab_size).
        mask_id: int. Id of [MASK].
        special_ids: ids never chosen.
        max_predictions: int. P, the width of `masked_positions`.
        rate, mask_token_rate, random_token_rate: floats, BERT's 0.15 / 0.8 / 0.1.
        word_starts: optional bool (B, T) for whole-word masking.
        max_ngram: int. Longest n-gram masked together; 1 masks single units.
    Returns:
        (inputs, labels, sample_weights): inputs are the features with masked `token_ids` and
        `masked_positions` (B, P); labels {"mlm_logits": original ids (B, P)}; weights
        {"mlm_logits": 1.0 on real predictions, 0.0 on padding (B, P)}.
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.data import mask_tokens
        batch = {"token_ids": np.array([[101, 7, 8, 9, 102, 0]], "int32"),
                 "segment_ids": np.zeros((1, 6), "int32"), "padding_mask": np.array([[1] * 5 + [0]], "int32")}
        inputs, labels, weights = mask_tokens(batch, vocab_size=200, mask_id=103, special_ids=[0, 101, 102])
        ```
    Reference:
        Devlin et al., 2019, §3.1 and Appendix A.1; Lan et al., 2020, §4.1 (n-gram masking)
    """
    tft = import_tensorflow_text("mask_tokens")

    ids = tf.cast(features["token_ids"], tf.int32)
    mask = tf.cast(features["padding_mask"], tf.bool)
    ragged = tf.RaggedTensor.from_tensor(ids, lengths=tf.reduce_sum(tf.cast(mask, tf.int32), axis=1))
    starts = tf.ones_like(mask) if word_starts is None else tf.cast(word_starts, tf.bool)
    if max_ngram > 1:
        special = tf.reduce_any(tf.equal(ids[..., None], tf.constant(list(special_ids), tf.int32)), -1)
        starts = _ngram_starts(starts, special, max_ngram)
    if word_starts is not None or max_ngram > 1:  # (B, groups, pieces): a group is chosen whole
        ragged = _group(ragged, tf.ragged.boolean_mask(starts, mask))
    selector = tft.RandomItemSelector(max_predictions, rate, unselectable_ids=list(special_ids))
    # tensorflow-text chooses ceil(rate · n) items of a row's n; Google chooses round(rate · n),
    # at least 1. The ceiling adds half an item per row on average (+0.7% of tokens on 70-token
    # rows), so each row's rate is set so that the ceiling lands on Google's count.
    n = tf.reduce_sum(tf.cast(selector.get_selectable(ragged, axis=1), tf.float32), axis=1)
    google_count = tf.maximum(1.0, tf.round(rate * n))
    selector = tft.RandomItemSelector(max_predictions, tf.math.divide_no_nan(google_count - 0.5, n),
                                      unselectable_ids=list(special_ids))
    chooser = tft.MaskValuesChooser(vocab_size, mask_id, mask_token_rate, random_token_rate)
    masked, masked_positions, masked_ids = tft.mask_language_model(ragged, selector, chooser, axis=1)
    # The outputs come back as (B, pieces) either way, positions indexing each row's pieces. With
    # whole words more than P pieces can be masked; only the first P are predicted.
    token_ids = masked.to_tensor(default_value=0, shape=tf.shape(ids))
    token_ids = tf.where(mask, token_ids, ids)
    positions = masked_positions.to_tensor(default_value=0, shape=[tf.shape(ids)[0], max_predictions])
    labels = masked_ids.to_tensor(default_value=0, shape=[tf.shape(ids)[0], max_predictions])
    weights = tf.sequence_mask(masked_ids.row_lengths(), max_predictions, dtype=tf.float32)
    inputs = {**features, "token_ids": token_ids, "masked_positions": tf.cast(positions, tf.int32)}
    return inputs, {"mlm_logits": tf.cast(labels, tf.int32)}, {"mlm_logits": weights}


def _ngram_starts(unit_starts, special, max_ngram):
    """Where each n-gram begins: units cut into runs of n ~ P(n) ∝ 1/n; a special token is its own."""
    shape = tf.shape(unit_starts)
    n = np.arange(1, max_ngram + 1)
    logits = tf.constant(np.log((1 / n) / (1 / n).sum())[None], tf.float32)  # (1, N); a list of arrays fails in a graph
    lengths = tf.reshape(tf.random.categorical(logits, shape[0] * shape[1], dtype=tf.int32) + 1, shape)
    first_units = tf.math.cumsum(lengths, axis=1, exclusive=True)  # (B, T) unit index of each n-gram's start
    unit = tf.math.cumsum(tf.cast(unit_starts, tf.int32), axis=1) - 1
    begins = unit_starts & tf.reduce_any(tf.equal(unit[:, :, None], first_units[:, None, :]), -1)
    after_special = tf.concat([tf.ones_like(special[:, :1]), special[:, :-1]], axis=1)
    return begins | special | (after_special & unit_starts)


def _group(ragged, starts):
    """(B, T) ragged values grouped into words at `starts`: (B, words, pieces)."""
    row_starts = tf.cast(starts.flat_values, tf.int64)
    word_index = tf.math.cumsum(row_starts) - 1
    words = tf.RaggedTensor.from_value_rowids(ragged.flat_values, word_index)
    words_per_row = tf.reduce_sum(tf.cast(starts, tf.int64), axis=1)
    return tf.RaggedTensor.from_row_lengths(words, words_per_row)
