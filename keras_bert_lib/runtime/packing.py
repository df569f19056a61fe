"""Packed inference: a batch's texts laid end to end in rows of a few dozen tokens, each text
attending to itself alone (`BertEncoder.call_packed`), then each text's states gathered back for
the task model's head. A batch of short, uneven texts then costs about its tokens, where padding
costs its rows times its longest text: what a server's small batches of whatever arrived pay
(TEI runs its batches unpadded for the same reason). Each text's outputs are those it gets alone.

The encoders with learned absolute positions pack (BERT, ALBERT, DistilBERT, RoBERTa, XLM-R,
ELECTRA); ModernBERT's rotary and DeBERTa's relative positions do not yet (`can_pack`).
"""

import numbers

import numpy as np

from keras_bert_lib.runtime.input_checks import INPUTS as ID_NAMES

# The packed inputs, beside the batch's own id dict (which the head reads: its padding mask)
PACKED = ("packed_token_ids", "packed_segment_ids", "position_ids", "text_ids", "gather")


def check_row_tokens(value, name):
    """Raises one line unless `value` is a whole number of tokens, 1 or more (`name` says which
    argument it is).

    Example:
        ```python
        from keras_bert_lib.runtime.packing import check_row_tokens
        check_row_tokens(64, "pack_tokens")
        try:
            check_row_tokens("64", "pack_tokens")
        except ValueError as e:
            assert str(e) == "pack_tokens='64': the tokens of a packed row, an int of 1 or more."
        ```
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name}={value!r}: the tokens of a packed row, an int of 1 or more.")


def can_pack(model):
    """Whether `model` (a task model) can run packed: its encoder has `call_packed` and outputs
    no per-layer states.

    Example:
        ```python
        from keras_bert_lib import SentenceEmbedder, bert_tiny
        from keras_bert_lib.runtime.packing import can_pack
        assert can_pack(SentenceEmbedder(bert_tiny(num_hidden_layers=1)))
        ```
    """
    encoder = getattr(model, "encoder", None)
    return (hasattr(encoder, "call_packed") and not encoder.output_hidden_states
            and not encoder.output_attentions)


def pack(ids, row_tokens=64):
    """The id dict of a batch (N, T, right-padded) packed into rows of `row_tokens` tokens: texts
    longest first, each into the first row with room (a text longer than a row gets one of its
    own; rows are as wide as the fullest). Returns the batch's id dict with `PACKED` added:
    `packed_token_ids`, `packed_segment_ids`, `position_ids` (each text from 0) and `text_ids`
    (a row's texts from 1, 0 for padding), (R, W); `gather` (N, T, 2): where each text's tokens
    lie, (row, column).

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.runtime.packing import pack
        ids = {"token_ids": np.array([[2, 7, 3, 0], [2, 8, 9, 3], [2, 3, 0, 0]]),
               "segment_ids": np.zeros((3, 4), "int32"),
               "padding_mask": np.array([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0]])}
        packed = pack(ids, row_tokens=6)
        packed["packed_token_ids"].tolist()   # [[2, 8, 9, 3, 2, 3], [2, 7, 3, 0, 0, 0]]
        packed["position_ids"].tolist()       # [[0, 1, 2, 3, 0, 1], [0, 1, 2, 0, 0, 0]]
        packed["text_ids"].tolist()           # [[1, 1, 1, 1, 2, 2], [1, 1, 1, 0, 0, 0]]
        packed["gather"][2, :2].tolist()      # [[0, 4], [0, 5]]
        ```
    """
    check_row_tokens(row_tokens, "row_tokens")
    ids = {k: np.asarray(v) for k, v in ids.items()}
    lengths = ids["padding_mask"].sum(1).astype(int)
    rows, used = [], []  # each row's texts, and its tokens
    for i in np.argsort(-lengths, kind="stable"):
        row = next((r for r, n in enumerate(used) if n + lengths[i] <= row_tokens), None)
        if row is None:  # a new row
            row = len(rows)
            rows.append([])
            used.append(0)
        rows[row].append(i)
        used[row] += lengths[i]
    shape = (len(rows), max(used))
    tokens, segments, positions, texts = (np.zeros(shape, np.int32) for _ in range(4))
    gather = np.zeros((*ids["padding_mask"].shape, 2), np.int32)
    segment_ids = ids.get("segment_ids", np.zeros_like(ids["token_ids"]))
    for r, members in enumerate(rows):
        at = 0
        for k, i in enumerate(members, 1):
            n = lengths[i]
            tokens[r, at:at + n], segments[r, at:at + n] = ids["token_ids"][i, :n], segment_ids[i, :n]
            positions[r, at:at + n], texts[r, at:at + n] = np.arange(n), k
            gather[i, :n, 0], gather[i, :n, 1] = r, at + np.arange(n)
            at += n
    return {**ids, "packed_token_ids": tokens, "packed_segment_ids": segments, "position_ids": positions,
            "text_ids": texts, "gather": gather}


def packed_function(model):
    """`model` (a task model that `can_pack`) as a concrete TensorFlow function of `pack`'s dict →
    its flattened outputs, those of `model` on the batch's own id dict: the encoder runs packed,
    each text's states (and its pooler's [CLS]) are gathered back to (N, T, H), and the rest of
    the model's graph (`keras_internals.graph_after`) reads them with the batch's padding mask.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib import SentenceEmbedder, bert_tiny
        from keras_bert_lib.runtime.packing import pack, packed_function
        embedder = SentenceEmbedder(bert_tiny(num_hidden_layers=1))
        ids = {"token_ids": np.array([[2, 7, 3, 0], [2, 8, 9, 3]], "int32"), "segment_ids": np.zeros((2, 4), "int32"),
               "padding_mask": np.array([[1, 1, 1, 0], [1, 1, 1, 1]], "int32")}
        got = packed_function(embedder)(pack(ids))[0]
        assert np.allclose(got, embedder.predict(ids, verbose=0), atol=1e-5)
        ```
    """
    import keras
    import tensorflow as tf

    from keras_bert_lib.keras_internals import graph_after

    if not can_pack(model):
        raise ValueError(f"{type(model).__name__} on {type(getattr(model, 'encoder', None)).__name__} does not run "
                         "packed: the encoders with learned absolute positions do (BERT, ALBERT, DistilBERT, RoBERTa, "
                         "XLM-R, ELECTRA); run it padded (pack_tokens=None).")
    encoder = model.encoder
    head, called = graph_after(model, encoder)
    pooler = encoder.get_layer("pooler") if encoder.config.with_pooler else None
    widths = {len(t.shape): t.shape[1] for t in called}  # the call's (N, H) pooled and (N, T|1, H) sequence

    def run(packed):
        rows = encoder.call_packed(packed["packed_token_ids"], packed["packed_segment_ids"], packed["position_ids"],
                                   packed["text_ids"])["sequence_output"]
        sequence = tf.gather_nd(rows, packed["gather"])  # (N, T, H): each text's states, as alone
        outputs = {"sequence_output": sequence if widths[3] is None else sequence[:, :widths[3]]}
        if pooler is not None:
            outputs["pooled_output"] = pooler(sequence[:, 0])
        ids = {k: packed[k] for k in ID_NAMES}
        return keras.tree.flatten(head([*keras.tree.flatten(outputs), ids], training=False))

    spec = {k: tf.TensorSpec((None, None), tf.int32, name=k) for k in (*ID_NAMES, *PACKED[:-1])}
    spec["gather"] = tf.TensorSpec((None, None, 2), tf.int32, name="gather")
    return tf.function(run, input_signature=[spec]).get_concrete_function()
