"""BytePairTokenizer: GPT-2's byte-level BPE (RoBERTa's tokenizer) as a layer in the TensorFlow graph."""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from keras_bert_lib.file_checks import open_text
from keras_bert_lib.keras_internals import set_untracked
from keras_bert_lib.text.offsets import character_offsets
from keras_bert_lib.text.pair_runs import pair_starts
from keras_bert_lib.text.tf_text import import_tensorflow_text
from keras_bert_lib.text.token_roles import TokenRoles

# Unicode's White_Space, as the regular expression HuggingFace's tokenizers run (Oniguruma) reads
# `\s`; RE2's `\s` is ASCII only.
_SPACE = r"\t\n\x{0B}\f\r\x{85}\p{Z}"
# GPT-2's pre-tokenizer, `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
# without the look-ahead RE2 lacks: a mark put before the last space of each run of spaces that a
# word follows ends `\s+` there, so that space starts the word's token (" word") as in GPT-2's.
_MARK = "\uffff"  # a Unicode non-character: it is not text
_SPLIT = (rf"'s|'t|'re|'ve|'m|'ll|'d| ?\p{{L}}+| ?\p{{N}}+| ?[^{_SPACE}\p{{L}}\p{{N}}{_MARK}]+"
          rf"|[{_SPACE}]+|{_MARK}")
_NO_RANK = 2**31 - 1


def _byte_alphabet():
    """GPT-2's byte → printable character table: bytes that print stand for themselves, the other
    68 (spaces and controls) for characters from U+0100 on ("Ġ" is the space)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b], extra = chr(256 + extra), extra + 1
    return [chars[b] for b in range(256)]


def read_byte_pair_files(vocabulary, merges):
    """(vocabulary dict token → id, merges list of "a b") from `vocab.json` and `merges.txt` paths,
    or from a dict and a list given directly (a merge may be "a b" or ("a", "b"))."""
    if isinstance(vocabulary, (str, os.PathLike)):
        with open_text(vocabulary) as f:
            vocabulary = json.load(f)
    if isinstance(merges, (str, os.PathLike)):
        with open_text(merges) as f:
            merges = [line.rstrip("\r\n") for line in f if line.strip() and not line.startswith("#version")]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    return {str(k): int(v) for k, v in vocabulary.items()}, merges


class _MergeTable:
    """The merges as pairs of ids: sorted keys left · V + right, each with its rank and the id it
    merges into, constants of the graph (no resource: nothing a `tf.random.set_seed` can drop,
    no initializer in a saved file). Every symbol in byte-level BPE is a vocabulary token, so the
    loop runs on ids, never on strings."""

    def __init__(self, vocabulary, merges):
        size = max(vocabulary.values()) + 1
        rows = []
        for rank, merge in enumerate(merges):
            left, _, right = merge.partition(" ")
            if left in vocabulary and right in vocabulary and left + right in vocabulary:
                rows.append((vocabulary[left] * size + vocabulary[right], rank, vocabulary[left + right]))
        rows = sorted(set(rows)) or [(-1, _NO_RANK, 0)]
        self.size = size
        self.keys = tf.constant(np.array([r[0] for r in rows], np.int64))
        self.ranks = tf.constant(np.array([r[1] for r in rows], np.int32))
        self.merged = tf.constant(np.array([r[2] for r in rows], np.int32))

    def lookup(self, left, right):
        """(rank, merged id) of each pair of ids; _NO_RANK where the pair does not merge."""
        wanted = tf.cast(left, tf.int64) * self.size + tf.cast(right, tf.int64)
        at = tf.minimum(tf.searchsorted(self.keys, wanted), tf.size(self.keys) - 1)
        found = tf.gather(self.keys, at) == wanted
        return tf.where(found, tf.gather(self.ranks, at), _NO_RANK), tf.gather(self.merged, at)


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class BytePairTokenizer(TokenRoles, keras.layers.Layer):
    """Byte-level BPE, GPT-2's and RoBERTa's: split text as GPT-2 does, write each piece's UTF-8
    bytes as printable characters (a space is "Ġ"), then apply the merges in their order.

    The ids are HuggingFace's `ByteLevel` + `BPE` tokenizer's (RoBERTa's `tokenizer.json`, or its
    `vocab.json` + `merges.txt`), tested against it on thousands of lines: GPT-2's split (contractions,
    letters, numbers, other symbols, runs of Unicode spaces, each with one leading space), then the
    lowest-ranked adjacent pair merged first, every occurrence left to right, until none merges.
    Every byte has a token, so nothing is unknown. Special-token strings in the text ("<s>") are
    text, as in `WordPieceTokenizer`: user input cannot inject a separator.

    It runs in TensorFlow ops (tensorflow-text's RE2 split, hash tables, a while loop), so a
    SavedModel takes raw strings; LiteRT has no kernel for the loop's hash tables (see docs/export.md).

    Args:
        vocabulary: `vocab.json` path or dict token → id.
        merges: `merges.txt` path or list of "a b" merges, highest priority first.
        add_prefix_space: bool. Put a space before a text that does not start with one (so its first
            word is tokenized as after a space), as HuggingFace's `add_prefix_space`.
        special_tokens: dict with keys start, end, pad, mask, unk: the tokens of each role.
        packing: "roberta" (`<s> A </s></s> B </s>`, one segment) or "bert" (`[CLS] A [SEP] B [SEP]`).
        normalization: None, or "NFC" (ModernBERT's `tokenizer.json`): the text is put in Unicode's
            composed form first. Offsets then count the composed text's characters (the same as
            the input's for text already composed, as nearly all text is).
    Call arguments:
        inputs: string tensor (B,) or scalar.
    Returns:
        int32 RaggedTensor (B, None) of ids, no special tokens (1-D for a scalar).
    Example:
        ```python
        from keras_bert_lib.text import BytePairTokenizer
        vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4, "a": 5, "b": 6, "Ġ": 7, "ab": 8, "Ġab": 9}
        tokenizer = BytePairTokenizer(vocab, ["a b", "Ġ ab"])
        assert tokenizer(["ab ab", "ba"]).to_list() == [[8, 9], [6, 5]]
        ```
    Reference:
        Sennrich et al., 2016 (BPE); Radford et al., 2019 (GPT-2, byte-level); Liu et al., 2019 (RoBERTa)
    """

    def __init__(self, vocabulary=None, merges=None, add_prefix_space=False, special_tokens=None, packing="roberta",
                 normalization=None, **kwargs):
        super().__init__(**kwargs)
        if normalization not in (None, "NFC"):
            raise ValueError(f"normalization={normalization!r}: byte-level BPE takes None or 'NFC'.")
        self.add_prefix_space = add_prefix_space
        self.normalization = normalization
        self._text_layer(special_tokens or {"start": "<s>", "end": "</s>", "pad": "<pad>", "mask": "<mask>",
                                            "unk": "<unk>"}, packing)
        self.vocabulary = None  # a .keras file's loader sets it from the assets (load_assets)
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, merges)

    def set_vocabulary(self, vocabulary, merges):
        """Sets the vocabulary and merges (paths, or a dict and a list) and builds the lookup tables."""
        vocabulary, merges = read_byte_pair_files(vocabulary, merges)
        set_untracked(self, vocabulary=vocabulary, merges=merges)
        tokens = [""] * (max(self.vocabulary.values()) + 1)
        for token, i in self.vocabulary.items():
            tokens[i] = token
        self._set_tokens(tokens)
        self._check_special_tokens("The vocabulary")
        self._merges = _MergeTable(self.vocabulary, self.merges)
        self._byte_ids = tf.constant([self.vocabulary.get(c, self.unk_id) for c in _byte_alphabet()], tf.int32)
        # Per id: its bytes, and the spaces ("Ġ") it starts and ends with (offsets leave those out).
        self._id_bytes = tf.constant([len(t) for t in self.tokens], tf.int64)
        self._id_lead = tf.constant([len(t) - len(t.lstrip("Ġ")) for t in self.tokens], tf.int64)
        self._id_trail = tf.constant([len(t) - len(t.rstrip("Ġ")) for t in self.tokens], tf.int64)

    def save_assets(self, dir_path):
        with open(os.path.join(dir_path, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(self.vocabulary, f, ensure_ascii=False)
        with open(os.path.join(dir_path, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("".join(m + "\n" for m in self.merges))

    def load_assets(self, dir_path):
        self.set_vocabulary(os.path.join(dir_path, "vocab.json"), os.path.join(dir_path, "merges.txt"))

    word_prefix = " "  # a word of a list of words is read as after a space (HuggingFace's is_split_into_words)

    def call(self, inputs):
        self._check_vocabulary()
        inputs = tf.convert_to_tensor(inputs, tf.string)
        scalar = inputs.shape.rank == 0
        out = self._ids(inputs[None] if scalar else inputs)
        return out[0] if scalar else out

    def _ids(self, texts):
        """The (B, N) ids of the texts' tokens."""
        pieces = self.split(texts)  # (B, W) GPT-2's pieces
        words, which = tf.unique(pieces.flat_values)  # (U,): real text repeats its words
        merged = tf.gather(self._merge(self._to_symbols(words)), which)  # (W, P)
        return tf.RaggedTensor.from_row_splits(merged.flat_values, tf.gather(merged.row_splits, pieces.row_splits))

    def tokenize_with_offsets(self, texts):
        """Ids and each token's [start, end) characters in the original text, as HuggingFace's
        `offset_mapping` with `trim_offsets` (a token's leading and trailing spaces, "Ġ", are not
        part of its span). Question answering maps its answer spans to characters with it.

        Args:
            texts: a list or 1-D string tensor.
        Returns:
            (ids, starts, ends): int32/int64 RaggedTensors (B, None).
        Example:
            ```python
            from keras_bert_lib.text import BytePairTokenizer
            vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4, "a": 5, "b": 6, "Ġ": 7, "ab": 8,
                     "Ġab": 9}
            ids, starts, ends = BytePairTokenizer(vocab, ["a b", "Ġ ab"]).tokenize_with_offsets(["ab ab"])
            assert (starts.to_list(), ends.to_list()) == ([[0, 3]], [[2, 5]])   # "ab", then "ab" past its space
            ```
        """
        self._check_vocabulary()
        texts = tf.convert_to_tensor(texts, tf.string)
        prefixed = tf.zeros_like(texts, tf.int64)
        if self.add_prefix_space:  # the space it adds is not in the text: offsets move back by one
            prefixed = tf.cast(~tf.strings.regex_full_match(texts, " .*"), tf.int64)
        ids = self._ids(texts)
        token_bytes = tf.ragged.map_flat_values(tf.gather, self._id_bytes, ids)  # a character of a token a byte
        starts = tf.math.cumsum(token_bytes, axis=1, exclusive=True) - prefixed[:, None]
        ends = starts + token_bytes
        starts = tf.minimum(starts + tf.ragged.map_flat_values(tf.gather, self._id_lead, ids), ends)
        ends = tf.maximum(ends - tf.ragged.map_flat_values(tf.gather, self._id_trail, ids), starts)
        sizes = tf.strings.length(tf.strings.unicode_split(texts, "UTF-8"))  # (B, C) each character's bytes
        return (ids, *character_offsets(sizes, ids, tf.maximum(starts, 0), tf.maximum(ends, 0)))

    def split(self, texts):
        """GPT-2's pre-tokenization of a (B,) string tensor: a (B, W) RaggedTensor of its pieces."""
        tft = import_tensorflow_text("BytePairTokenizer")
        if self.normalization:
            texts = tft.normalize_utf8(texts, self.normalization)
        if self.add_prefix_space:
            texts = tf.where(tf.strings.regex_full_match(texts, " .*"), texts, tf.strings.join([" ", texts]))
        marked = tf.strings.regex_replace(texts, rf"([{_SPACE}])([^{_SPACE}])", _MARK + r"\1\2")
        pieces = tft.regex_split(marked, _SPLIT, _SPLIT)
        keep = tf.ragged.map_flat_values(tf.not_equal, pieces, _MARK)
        return tf.ragged.boolean_mask(pieces, keep)

    def _to_symbols(self, words):
        """(W,) strings → (W, C) ragged ids, one per byte: the id of its printable character."""
        codes = tf.ragged.map_flat_values(
            lambda b: tf.cast(tf.reshape(tf.io.decode_raw(b, tf.uint8), [-1]), tf.int32), tf.strings.bytes_split(words))
        return tf.ragged.map_flat_values(lambda c: tf.gather(self._byte_ids, c), codes)

    def _merge(self, symbols):
        """BPE on (W, C) ragged ids: while some word has a pair in the merges, merge in every word
        its lowest-ranked pair, at each occurrence left to right (a run "a a a" merges its first two)."""
        rows = symbols.nrows(out_type=tf.int32)

        def body(flat, row_ids):
            n = tf.shape(flat)[0]
            same_word = tf.concat([row_ids[1:] == row_ids[:-1], [False]], 0)[:n]  # a right neighbour in its word
            right = tf.concat([flat[1:], [0]], 0)[:n]
            rank, merged = self._merges.lookup(flat, right)
            rank = tf.where(same_word, rank, _NO_RANK)
            best = tf.math.unsorted_segment_min(rank, row_ids, rows)  # (W,) each word's lowest rank
            hit = (rank == tf.gather(best, row_ids)) & (rank < _NO_RANK)
            merge = pair_starts(hit)  # overlapping hits ("a a a"): the 1st, 3rd, … of a run
            dropped = tf.concat([[False], merge[:-1]], 0)[:n]  # the right half of each merged pair
            flat = tf.where(merge, merged, flat)
            return tf.boolean_mask(flat, ~dropped), tf.boolean_mask(row_ids, ~dropped), tf.reduce_any(merge)

        flat, row_ids, _ = tf.while_loop(
            lambda flat, row_ids, going: going, lambda flat, row_ids, going: body(flat, row_ids),
            (symbols.flat_values, tf.cast(symbols.value_rowids(), tf.int32), tf.constant(True)),
            shape_invariants=(tf.TensorShape([None]), tf.TensorShape([None]), tf.TensorShape([])))
        return tf.RaggedTensor.from_value_rowids(flat, row_ids, nrows=rows)

    @staticmethod
    def _begins_word(token):
        return token.startswith("Ġ")  # a space before it (fairseq's RoBERTa: is_beginning_of_word)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor((*inputs.shape, None), dtype="int32", ragged=True)

    def get_config(self):
        return {**super().get_config(), "vocabulary": None, "merges": None,  # assets: see save_assets
                "add_prefix_space": self.add_prefix_space, "special_tokens": self.special_tokens,
                "packing": self.packing, "normalization": self.normalization}
