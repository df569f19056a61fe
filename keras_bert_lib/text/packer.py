"""BertPacker: segments of ids → `[CLS] a [SEP] b [SEP]`, truncated and padded to a fixed length."""

import keras
import tensorflow as tf

from keras_bert_lib.keras_internals import takes_strings
from keras_bert_lib.text.tf_text import import_tensorflow_text

TRUNCATIONS = ("round_robin", "waterfall", "longest_first")
PACKINGS = ("bert", "roberta")  # [CLS] a [SEP] b [SEP] with segments 0/1; <s> a </s></s> b </s>, one segment
PADDINGS = ("longest", "max_length")  # HuggingFace's words


def check_truncate(truncate):
    """Raises ValueError unless `truncate` is one of TRUNCATIONS."""
    if truncate not in TRUNCATIONS:
        raise ValueError(f"truncate={truncate!r} is not one of {TRUNCATIONS}.")


def check_padding(padding, pad_to_multiple_of):
    """Raises ValueError unless `padding` is one of PADDINGS and `pad_to_multiple_of` None or a
    positive integer.

    Example:
        ```python
        from keras_bert_lib.text.packer import check_padding
        check_padding("longest", 16)
        ```
    """
    if padding not in PADDINGS:
        raise ValueError(f"padding={padding!r} is not one of {PADDINGS}: 'longest' pads a batch to its longest "
                         "text (rounded up to pad_to_multiple_of), 'max_length' to sequence_length.")
    if pad_to_multiple_of is not None and (not isinstance(pad_to_multiple_of, int) or pad_to_multiple_of < 1):
        raise ValueError(f"pad_to_multiple_of={pad_to_multiple_of!r} must be a positive integer or None.")


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class BertPacker(keras.layers.Layer):
    """Packs one or more segments into BERT's input: `[CLS] a [SEP] b [SEP] [PAD]…`.

    Segments are first trimmed to fit `sequence_length` with tensorflow-text's trimmers:
    `round_robin` takes one token from each segment in turn (BERT's pair truncation keeps the
    segments balanced; Google's BERT gives an odd token to the first), `longest_first` is
    HuggingFace tokenizers' (the same, but an odd token goes to the longer, or the second when
    equal), `waterfall` fills the first segment first. Segment ids are 0 for
    `[CLS]`, the first segment and its `[SEP]`, then 1, 2, … ; the mask is 1 on every real token.

    Args:
        sequence_length: int. The most tokens a row holds: longer segments are trimmed to fit.
        start_id: int. Id of `[CLS]`.
        end_id: int. Id of `[SEP]`.
        pad_id: int. Id of `[PAD]`.
        truncate: "round_robin" or "waterfall".
        padding: "max_length" (every batch is `sequence_length` wide: static shapes, as TPUs
            want) or "longest" (a batch is as wide as its longest row, rounded up to
            `pad_to_multiple_of`, at most `sequence_length`), as HuggingFace's tokenizers say.
        pad_to_multiple_of: int or None. With "longest", the widths are multiples of it, so a
            compiled model sees few shapes (XLA compiles one program per width).
        packing: "bert" or "roberta" (`<s> a </s></s> b </s>`, one segment id), see `pack_segments`.
    Call arguments:
        segments: an int RaggedTensor (B, None), or a tuple of them (one per segment).
    Returns:
        dict of int32 (B, T) tensors `token_ids`, `segment_ids`, `padding_mask`.
    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.text import BertPacker
        packer = BertPacker(sequence_length=8, start_id=101, end_id=102)
        out = packer((tf.ragged.constant([[7, 8, 9]]), tf.ragged.constant([[5, 6]])))
        # token_ids [[101, 7, 8, 9, 102, 5, 6, 102]], segment_ids [[0, 0, 0, 0, 0, 1, 1, 1]]
        short = BertPacker(sequence_length=128, start_id=101, end_id=102, padding="longest", pad_to_multiple_of=4)
        short(tf.ragged.constant([[7, 8], [9]]))["token_ids"].shape   # (2, 4): 4 tokens, not 128
        ```
    """

    def __init__(self, sequence_length, start_id, end_id, pad_id=0, truncate="round_robin", padding="max_length",
                 pad_to_multiple_of=None, packing="bert", **kwargs):
        super().__init__(**kwargs)
        check_truncate(truncate)
        check_padding(padding, pad_to_multiple_of)
        self.sequence_length = sequence_length
        self.start_id = start_id
        self.end_id = end_id
        self.pad_id = pad_id
        self.truncate = truncate
        self.padding = padding
        self.pad_to_multiple_of = pad_to_multiple_of
        self.packing = packing
        takes_strings(self)

    def call(self, segments):
        return pack_segments(segments, self.sequence_length, self.start_id, self.end_id, self.pad_id, self.truncate,
                             self.padding, self.pad_to_multiple_of, self.packing)

    def compute_output_spec(self, segments):
        first = segments[0] if isinstance(segments, (list, tuple)) else segments
        width = self.sequence_length if self.padding == "max_length" else None
        # Three distinct tensors: one object under three keys would make a functional model
        # feed the same value (the last one computed) to all three of the encoder's inputs.
        return {name: keras.KerasTensor((first.shape[0], width), dtype="int32", name=name)
                for name in ("token_ids", "segment_ids", "padding_mask")}

    def get_config(self):
        return {**super().get_config(), "sequence_length": self.sequence_length,
                "start_id": self.start_id, "end_id": self.end_id, "pad_id": self.pad_id,
                "truncate": self.truncate, "padding": self.padding, "pad_to_multiple_of": self.pad_to_multiple_of,
                "packing": self.packing}


def pack_segments(segments, sequence_length, start_id, end_id, pad_id=0, truncate="round_robin", padding="max_length",
                  pad_to_multiple_of=None, packing="bert"):
    """`BertPacker`'s computation as a function: ragged segments → the encoder's three (B, T) inputs.

    `packing="bert"` gives `[CLS] a [SEP] b [SEP]` with segment ids 0 then 1 (BERT, ALBERT);
    "roberta" gives `<s> a </s></s> b </s>`, every segment id 0 (RoBERTa, XLM-R), as HuggingFace's
    tokenizers pack them.

    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.text.packer import pack_segments
        out = pack_segments([tf.ragged.constant([[7, 8, 9]])], 6, start_id=101, end_id=102)
        # token_ids [[101, 7, 8, 9, 102, 0]], padding_mask [[1, 1, 1, 1, 1, 0]]
        ```
    """
    check_truncate(truncate)
    check_padding(padding, pad_to_multiple_of)
    tft = import_tensorflow_text("BertPacker (and BertPreprocessor)")
    if packing not in PACKINGS:
        raise ValueError(f"packing={packing!r} is not one of {PACKINGS}.")
    segments = list(segments) if isinstance(segments, (list, tuple)) else [segments]
    doubled = packing == "roberta" and len(segments) > 1
    room = sequence_length - special_count(len(segments), packing)
    if room < len(segments):
        raise ValueError(f"sequence_length={sequence_length} leaves no room for "
                         f"{len(segments)} segment(s) and their special tokens.")
    segments = [tf.cast(s, tf.int32) for s in segments]
    if truncate == "longest_first" and len(segments) == 2:
        trimmed = _longest_first(segments, room)
    else:
        trimmer = tft.WaterfallTrimmer if truncate == "waterfall" else tft.RoundRobinTrimmer
        trimmed = trimmer(room).trim(segments)
    if doubled:  # </s></s> between segments: each later segment starts with a second </s>
        trimmed = trimmed[:1] + [tf.concat([tf.fill(tf.stack([s.nrows(out_type=tf.int32), 1]), end_id), s], 1)
                                 for s in trimmed[1:]]
    width = sequence_length
    if padding == "longest":
        # [CLS] + each segment and its [SEP]; an empty batch still gets a width of one multiple.
        tokens = 1 + sum(tf.cast(s.row_lengths(), tf.int32) + 1 for s in trimmed)
        longest = tf.reduce_max(tf.concat([tokens, [1]], 0))
        multiple = pad_to_multiple_of or 1
        width = tf.minimum((longest + multiple - 1) // multiple * multiple, sequence_length)
    return _combine(trimmed, width, start_id, end_id, pad_id, one_segment=packing == "roberta")


def _longest_first(segments, room):
    """HuggingFace's `longest_first` for a pair: the shorter keeps min(its length, what leaves the
    longer as long), and when both pass half, the longer gets room // 2 plus the odd token."""
    a, b = segments
    n1, n2 = tf.cast(a.row_lengths(), tf.int32), tf.cast(b.row_lengths(), tf.int32)
    short, long = tf.minimum(n1, n2), tf.maximum(n1, n2)
    long_keep = tf.minimum(long, tf.maximum(short, room - short))
    both_cut = short + long_keep > room
    short_keep = tf.where(both_cut, room // 2, short)
    long_keep = tf.where(both_cut, room - room // 2, long_keep)
    keep1, keep2 = tf.where(n1 > n2, long_keep, short_keep), tf.where(n1 > n2, short_keep, long_keep)
    return [tf.ragged.boolean_mask(s, tf.ragged.range(s.row_lengths(), row_splits_dtype=s.row_splits.dtype)
                                   < tf.cast(k, s.row_splits.dtype)[:, None]) for s, k in ((a, keep1), (b, keep2))]


def special_count(segments, packing="bert"):
    """How many special tokens `segments` texts take when packed: [CLS] and a [SEP] each, and
    RoBERTa's second </s> between two."""
    return segments + 1 + (segments - 1) * (packing == "roberta")


def _combine(segments, width, start_id, end_id, pad_id, one_segment=False):
    """`[CLS] a [SEP] b [SEP] [PAD]…` of `width` tokens from trimmed ragged segments, in dense ops
    only: TFLite has kernels for these and for RaggedTensorToTensor, not for the RaggedGather that
    `tensorflow_text.combine_segments` runs (so a `.tflite` file can take text)."""
    positions = tf.range(width)[None, :]  # (1, T)
    rows = segments[0].nrows(out_type=tf.int32)
    token_ids = tf.fill(tf.stack([rows, width]), pad_id)
    token_ids = tf.where(positions == 0, start_id, token_ids)
    segment_ids = tf.zeros_like(token_ids)
    start = tf.ones([rows, 1], tf.int32)  # (B, 1): where the current segment begins
    for index, segment in enumerate(segments):
        dense = segment.to_tensor(pad_id, shape=[None, width] if isinstance(width, int) else tf.stack([rows, width]))
        end = start + tf.cast(segment.row_lengths(), tf.int32)[:, None]  # (B, 1): its [SEP]
        inside = (positions >= start) & (positions < end)
        pieces = tf.gather(dense, tf.clip_by_value(positions - start, 0, width - 1), batch_dims=1)
        token_ids = tf.where(inside, pieces, tf.where(positions == end, end_id, token_ids))
        segment_ids = tf.where(inside | (positions == end), 0 if one_segment else index, segment_ids)
        start = end + 1
    return {"token_ids": token_ids, "segment_ids": segment_ids,
            "padding_mask": tf.cast(positions < start, tf.int32)}


def concat_rows(parts):
    """The rows of several packed batches (dicts of (B_i, T_i) int tensors) as one batch, each
    padded on the right to the widest (a dual encoder's anchors, positives and negatives, each
    packed to its own longest).

    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.text.packer import concat_rows
        a = {"token_ids": tf.ones((2, 4), tf.int32)}
        b = {"token_ids": tf.ones((2, 8), tf.int32)}
        concat_rows([a, b])["token_ids"].shape   # (4, 8)
        ```
    """
    width = tf.reduce_max(tf.stack([tf.shape(next(iter(p.values())))[1] for p in parts]))
    return {k: tf.concat([tf.pad(p[k], [[0, 0], [0, width - tf.shape(p[k])[1]]]) for p in parts], 0)
            for k in parts[0]}
