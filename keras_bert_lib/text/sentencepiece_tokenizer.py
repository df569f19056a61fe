"""SentencePieceTokenizer: ALBERT's and XLM-R's text → ids, as a layer that runs in a TensorFlow graph."""

import os

import keras
import tensorflow as tf

from keras_bert_lib.text.offsets import character_offsets
from keras_bert_lib.text.pair_runs import pair_starts
from keras_bert_lib.text.sentencepiece_model import UNIGRAM, maps_characters, read_model
from keras_bert_lib.text.tf_text import import_tensorflow_text
from keras_bert_lib.text.token_roles import TokenRoles

MODEL_FILE = "spiece.model"
_PUNCTUATION = set('!"#$%&\'()*+,-./:;?@[\\]^_`{|}~')
_SPACES = r"[\t\n\x{0B}\f\r\x{85}\p{Z}]"  # Unicode's White_Space


def albert_normalize(text, lowercase, strip_accents, quotes=True):
    """ALBERT's clean-up before SentencePiece, in graph ops, as HuggingFace's `AlbertTokenizer`:
    "``" and "''" become '"', then accents go (NFKD, then combining marks dropped), then the text
    is lower-cased character by character (a final Σ becomes σ, as HuggingFace's `Lowercase`).

    Example:
        ```python
        import tensorflow as tf
        from keras_bert_lib.text.sentencepiece_tokenizer import albert_normalize
        albert_normalize(tf.constant(["``Café''"]), lowercase=True, strip_accents=True)   # [b'"cafe"']
        ```
    """
    if quotes:
        text = tf.strings.regex_replace(text, "``|''", '"')
    if strip_accents:
        tft = import_tensorflow_text("SentencePieceTokenizer(strip_accents=True)")
        text = tf.strings.regex_replace(tft.normalize_utf8(text, "NFKD"), r"\p{Mn}", "")
    if lowercase:
        text = tf.strings.lower(tf.strings.regex_replace(text, "Σ", "σ"), encoding="utf-8")
    return text


@keras.saving.register_keras_serializable(package="keras_bert_lib")
class SentencePieceTokenizer(TokenRoles, keras.layers.Layer):
    """SentencePiece ids (unigram or BPE), as ALBERT, XLM-R and CamemBERT tokenize.

    The model file decides the pieces and the character normalisation (its precompiled map, NFKC
    for Google's and fairseq's models); spaces become "▁" and each word is segmented alone
    (unigram: the most likely pieces; BPE: the pieces' merges). ALBERT's checkpoints first rewrite
    quotes, strip accents and lower-case (`albert_normalize`); XLM-R's do none of that. The ids are
    the model's own positions: `load_preprocessor` rewrites a fairseq model (XLM-R: `<s>`=0,
    `<pad>`=1, `</s>`=2, `<unk>`=3, then SentencePiece's pieces shifted by one, `<mask>` last)
    into that order, so the graph adds no offset. Special-token strings in the text are text.

    It runs in the graph, so a SavedModel takes raw strings: a unigram model on tensorflow-text's
    `FastSentencepieceTokenizer` (the model a constant of the graph, with LiteRT kernels, the
    same ids as sentencepiece), a BPE model on its `SentencepieceTokenizer`, whose model lives in
    a resource that `tf.random.set_seed` (and `keras.utils.set_random_seed`) drops: set seeds
    before building a BPE tokenizer.

    Args:
        model: a `.model` path or its bytes, its pieces in the checkpoint's id order.
        lowercase: bool. Lower-case first (ALBERT's `do_lower_case`).
        strip_accents: bool. Strip accents first (ALBERT's `keep_accents=False`).
        albert_quotes: bool. Rewrite "``" and "''" as '"' first (ALBERT).
        special_tokens: dict with keys start, end, pad, mask, unk: the tokens of each role.
        packing: "bert" (`[CLS] A [SEP] B [SEP]`, segments 0/1) or "roberta" (`<s> A </s></s> B </s>`).
        trailing_space: bool. A text that ends in a space gets a lone "▁" last, as a `tokenizer.json`
            whose pre-tokenizer is Metaspace alone (xlm-roberta-base's) gives; newer ones split on
            whitespace first and give none.
        spaces: "all" (every Unicode space is a space, as HuggingFace's Metaspace splitting on
            all of them) or "runs" (DeBERTa-v3's `tokenizer.json`: a run of two or more spaces,
            or a tab or line break, becomes one space; a lone non-breaking space stays a character).
        normalization: None, or "NFC" (DeBERTa-v3's `tokenizer.json`): Unicode's composed form first.
    Call arguments:
        inputs: string tensor (B,) or scalar.
    Returns:
        int32 RaggedTensor (B, None) of ids, no special tokens (1-D for a scalar).
    Example:
        ```python
        import io, sentencepiece as spm
        from keras_bert_lib.text import SentencePieceTokenizer
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(sentence_iterator=iter(["the cat sat", "the dog ran"] * 20), model_writer=model,
                                       vocab_size=18, pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
                                       control_symbols=["[CLS]", "[SEP]", "[MASK]"], minloglevel=2)
        tokenizer = SentencePieceTokenizer(model.getvalue(), lowercase=True)
        pieces = [tokenizer.id_to_token(i) for i in tokenizer(["The cat"]).to_list()[0]]
        assert pieces == ["▁", "t", "h", "e", "▁", "c", "at"] and tokenizer.cls_id == 2   # lower-cased
        ```
    Reference:
        Kudo & Richardson, 2018 (SentencePiece); Kudo, 2018 (unigram); Lan et al., 2020 (ALBERT)
    """

    def __init__(self, model=None, lowercase=False, strip_accents=False, albert_quotes=False, special_tokens=None,
                 packing="bert", trailing_space=False, spaces="all", normalization=None, **kwargs):
        super().__init__(**kwargs)
        if spaces not in ("all", "runs") or normalization not in (None, "NFC"):
            raise ValueError(f"spaces={spaces!r}, normalization={normalization!r}: spaces is 'all' or 'runs', "
                             "normalization None or 'NFC'.")
        self.trailing_space = trailing_space
        self.spaces = spaces
        self.normalization = normalization
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.albert_quotes = albert_quotes
        self._text_layer(special_tokens or {"start": "[CLS]", "end": "[SEP]", "pad": "<pad>", "mask": "[MASK]",
                                            "unk": "<unk>"}, packing)
        self.model = None  # a .keras file's loader sets it from the assets (load_assets)
        if model is not None:
            self.set_model(model)

    def set_model(self, model):
        """Sets the model (a `.model` path or its bytes) and builds the tokenizer."""
        source = "the model bytes"
        if isinstance(model, (str, os.PathLike)):
            source = os.fspath(model)
            with open(model, "rb") as f:
                model = f.read()
        pieces, model_type, normalizer = read_model(model, source)
        self._drops_controls = maps_characters(normalizer)
        self.model = bytes(model)
        self._set_tokens(p for p, _, _ in pieces)
        self._check_special_tokens(source)
        tft = import_tensorflow_text("SentencePieceTokenizer")
        if model_type == UNIGRAM:  # the model is a constant of the graph: no resource, LiteRT has kernels
            self._sp = tft.FastSentencepieceTokenizer(self.model)
        else:  # BPE: the op that runs sentencepiece itself (a resource; see the class docstring)
            self._sp = tft.SentencepieceTokenizer(model=self.model, out_type=tf.int32)

    def save_assets(self, dir_path):
        with open(os.path.join(dir_path, MODEL_FILE), "wb") as f:
            f.write(self.model)

    def load_assets(self, dir_path):
        self.set_model(os.path.join(dir_path, MODEL_FILE))

    def normalize(self, inputs):
        """The text as the model sees it, before SentencePiece's own normalisation: each Unicode space
        a plain one (HuggingFace splits words on all of them), then ALBERT's rewrites."""
        if self.normalization:
            inputs = import_tensorflow_text("SentencePieceTokenizer").normalize_utf8(inputs, self.normalization)
        inputs = tf.strings.regex_replace(inputs, _SPACES if self.spaces == "all" else rf"{_SPACES}{{2,}}|[\t\n\r]",
                                          " ")
        return albert_normalize(inputs, self.lowercase, self.strip_accents, self.albert_quotes)

    def call(self, inputs):
        self._check_vocabulary()
        inputs = tf.convert_to_tensor(inputs, tf.string)
        if inputs.shape.rank == 0:
            return self.call(inputs[None])[0]
        ids = self._sp.tokenize(self.normalize(inputs))
        if self.trailing_space and "▁" in self._index:  # a lone "▁" for the text's last space
            ends = tf.strings.regex_full_match(inputs, rf"(?s).*{_SPACES}")
            last = tf.where(ends, self.token_to_id("▁"), -1)[..., None]
            last = tf.ragged.boolean_mask(last, last >= 0).with_row_splits_dtype(ids.row_splits.dtype)
            ids = tf.concat([ids, last], axis=-1)
        return ids

    def tokenize_with_offsets(self, texts):
        """Ids and each piece's [start, end) characters in the original text, as HuggingFace's
        `offset_mapping` (a piece's "▁" is not part of its span). Eager only: it runs
        sentencepiece's own op, which reports where each piece came from.

        Args:
            texts: a list or 1-D string tensor.
        Returns:
            (ids, starts, ends): int32/int64 RaggedTensors (B, None).
        """
        self._check_vocabulary()
        tft = import_tensorflow_text("SentencePieceTokenizer.tokenize_with_offsets")
        chars = tf.strings.unicode_split(tf.convert_to_tensor(texts, tf.string), "UTF-8")  # (B, C)
        # Normalised character by character, so each character's share of the bytes is known.
        # (with spaces="runs", a run of other spaces keeps its characters here: offsets only)
        flat = albert_normalize(tf.strings.regex_replace(chars.flat_values, _SPACES if self.spaces == "all"
                                                         else r"[\t\n\r]", " "), self.lowercase,
                                self.strip_accents, quotes=False)
        if self.albert_quotes:
            flat = _paired_quotes(chars, flat)
        normalized = chars.with_flat_values(flat)
        sentencepiece = tft.SentencepieceTokenizer(model=self.model, out_type=tf.int32)
        ids, byte_starts, byte_ends = sentencepiece.tokenize_with_offsets(tf.strings.reduce_join(normalized, axis=1))
        starts, ends = character_offsets(tf.strings.length(normalized), ids, byte_starts, byte_ends)
        # A piece's span starts past its "▁" (and what the model's character map drops); a lone "▁"
        # spans the character it stands before.
        blank = tf.strings.regex_full_match(normalized, r" ?|[\p{Cc}\p{Cf}]" if self._drops_controls else " ?")
        spans = [[_past_spaces(row, s, e) for s, e in zip(*pair)]
                 for row, *pair in zip(blank.to_list(), starts.to_list(), ends.to_list())]
        starts, ends = (tf.ragged.constant([[span[k] for span in row] for row in spans], tf.int64, ragged_rank=1,
                                           row_splits_dtype=ids.row_splits.dtype) for k in (0, 1))
        return ids, starts, ends

    def detokenize(self, ids):
        """Ids → text, "▁" back to spaces."""
        return self._sp.detokenize(ids)

    @staticmethod
    def _begins_word(piece):
        # Google's ALBERT (_is_start_piece): "▁" begins a word, and so do "<…>" pieces and punctuation.
        return piece.startswith(("▁", "<")) or piece in _PUNCTUATION

    def compute_output_spec(self, inputs):
        return keras.KerasTensor((*inputs.shape, None), dtype="int32", ragged=True)

    def get_config(self):
        return {**super().get_config(), "model": None,  # an asset: see save_assets
                "lowercase": self.lowercase, "strip_accents": self.strip_accents,
                "albert_quotes": self.albert_quotes, "special_tokens": self.special_tokens, "packing": self.packing,
                "trailing_space": self.trailing_space, "spaces": self.spaces, "normalization": self.normalization}


def _past_spaces(space, start, end):
    """A piece's (start, end) past the spaces it begins with (`space`: the row's characters that
    became a space or nothing); all spaces: the next character that became something."""
    first = next((c for c in range(start, end) if not space[c]), end)
    if first < end:
        return first, end
    after = next((c for c in range(end, len(space)) if not space[c]), end)
    return after, min(after + 1, len(space))


def _paired_quotes(chars, flat):
    """`flat` (the characters of `chars`, normalised one by one) with ALBERT's "``" and "''" → '"'
    as the regular expression reads them, left to right: the pair's first character becomes
    nothing, its second '"' (where HuggingFace's alignment puts it)."""
    text, rows = chars.flat_values, chars.value_rowids()
    n = tf.shape(text)[0]
    same_row = tf.concat([rows[1:] == rows[:-1], [False]], 0)[:n]
    nxt = tf.concat([text[1:], [""]], 0)[:n]
    first = pair_starts(same_row & (text == nxt) & ((text == "`") | (text == "'")))  # "````": two pairs
    second = tf.concat([[False], first[:-1]], 0)[:n]
    return tf.where(first, "", tf.where(second, '"', flat))
