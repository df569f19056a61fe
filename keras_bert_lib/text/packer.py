"""BertPacker: segments of ids → `[CLS] a [SEP] b [SEP]`, truncated and padded to a fixed length."""

import keras
import tensorflow as tf

from keras_bert_lib.text.tf_text import import_tensorflow_text

TRUNCATIONS = ("round_robin", "waterfall")


def check_truncate(truncate):
    """Raises ValueError unless `truncate` is one of TRUNCATIONS."""
    if truncate not in TRUNCATIONS:
        raise ValueError(f"truncate={truncate!r} is not one of {TRUNCATIONS}.")


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class BertPacker(keras.layers.Layer):
    """Packs one or more segments into BERT's input: `[CLS] a [SEP] b [SEP] [PAD]…`.

    Segments are first trimmed to fit `sequence_length` with tensorflow-text's trimmers:
    `round_robin` takes one token from each segment in turn (BERT's pair truncation keeps the
    segments balanced), `waterfall` fills the first segment first. Segment ids are 0 for
    `[CLS]`, the first segment and its `[SEP]`, then 1, 2, … ; the mask is 1 on every real token.

    Args:
        sequence_length: int. The fixed output length T.
        start_id: int. Id of `[CLS]`.
        end_id: int. Id of `[SEP]`.
        pad_id: int. Id of `[PAD]`.
        truncate: "round_robin" or "waterfall".
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
        ```
    """

    def __init__(self, sequence_length, start_id, end_id, pad_id=0, truncate="round_robin", **kwargs):
        super().__init__(**kwargs)
        check_truncate(truncate)
        self.sequence_length = sequence_length
        self.start_id = start_id
        self.end_id = end_id
        self.pad_id = pad_id
        self.truncate = truncate
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    def call(self, segments):
        return pack_segments(segments, self.sequence_length, self.start_id, self.end_id, self.pad_id, self.truncate)

    def compute_output_spec(self, segments):
        first = segments[0] if isinstance(segments, (list, tuple)) else segments
        spec = keras.KerasTensor((first.shape[0], self.sequence_length), dtype="int32")
        # Three distinct tensors: one object under three keys would make a functional model
        # feed the same value (the last one computed) to all three of the encoder's inputs.
        return {name: keras.KerasTensor(spec.shape, dtype="int32", name=name)
                for name in ("token_ids", "segment_ids", "padding_mask")}

    def get_config(self):
        return {**super().get_config(), "sequence_length": self.sequence_length,
                "start_id": self.start_id, "end_id": self.end_id, "pad_id": self.pad_id,
                "truncate": self.truncate}


def pack_segments(segments, sequence_length, start_id, end_id, pad_id=0, truncate="round_robin"):
    """`BertPacker`'s computation as a function: ragged segments → the encoder's three (B, T) inputs.

    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.text.packer import pack_segments
        out = pack_segments([tf.ragged.constant([[7, 8, 9]])], 6, start_id=101, end_id=102)
        # token_ids [[101, 7, 8, 9, 102, 0]], padding_mask [[1, 1, 1, 1, 1, 0]]
        ```
    """
    check_truncate(truncate)
    tft = import_tensorflow_text("BertPacker (and BertPreprocessor)")
    segments = list(segments) if isinstance(segments, (list, tuple)) else [segments]
    room = sequence_length - len(segments) - 1  # [CLS] and one [SEP] per segment
    if room < len(segments):
        raise ValueError(f"sequence_length={sequence_length} leaves no room for "
                         f"{len(segments)} segment(s) and their special tokens.")
    segments = [tf.cast(s, tf.int32) for s in segments]
    trimmer = (tft.RoundRobinTrimmer if truncate == "round_robin" else tft.WaterfallTrimmer)(room)
    return _combine(trimmer.trim(segments), sequence_length, start_id, end_id, pad_id)


def _combine(segments, sequence_length, start_id, end_id, pad_id):
    """`[CLS] a [SEP] b [SEP] [PAD]…` from trimmed ragged segments, in dense ops only: TFLite has
    kernels for these and for RaggedTensorToTensor, not for the RaggedGather that
    `tensorflow_text.combine_segments` runs (so a `.tflite` file can take text)."""
    positions = tf.range(sequence_length)[None, :]  # (1, T)
    rows = segments[0].nrows(out_type=tf.int32)
    token_ids = tf.fill(tf.stack([rows, sequence_length]), pad_id)
    token_ids = tf.where(positions == 0, start_id, token_ids)
    segment_ids = tf.zeros_like(token_ids)
    start = tf.ones([rows, 1], tf.int32)  # (B, 1): where the current segment begins
    for index, segment in enumerate(segments):
        dense = segment.to_tensor(pad_id, shape=[None, sequence_length])  # (B, T)
        end = start + tf.cast(segment.row_lengths(), tf.int32)[:, None]  # (B, 1): its [SEP]
        inside = (positions >= start) & (positions < end)
        pieces = tf.gather(dense, tf.clip_by_value(positions - start, 0, sequence_length - 1), batch_dims=1)
        token_ids = tf.where(inside, pieces, tf.where(positions == end, end_id, token_ids))
        segment_ids = tf.where(inside | (positions == end), index, segment_ids)
        start = end + 1
    return {"token_ids": token_ids, "segment_ids": segment_ids,
            "padding_mask": tf.cast(positions < start, tf.int32)}
