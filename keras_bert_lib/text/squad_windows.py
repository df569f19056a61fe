"""Long contexts for extractive question answering, as Google's run_squad.py does it: windows over
the context's word pieces, the window where each token has the most context, and the n-best
decoding of start/end logits back to a character span of the context (or no answer, SQuAD v2.0).

`doc_stride` is the step between the starts of consecutive windows (run_squad.py's meaning);
HuggingFace tokenizers' `stride` is the overlap between them instead: the same windows come from
stride = (max_seq_length − question pieces − 3) − doc_stride (tested in tests/text).
"""

import numpy as np

from keras_bert_lib.text.packer import special_count


def doc_windows(num_doc_tokens, num_query_tokens, max_seq_length=384, doc_stride=128, packing="bert"):
    """(start, length) of each window over a context of `num_doc_tokens` word pieces, when the
    question takes `num_query_tokens` and [CLS] q [SEP] d [SEP] must fit `max_seq_length`.

    Windows are as long as the room allows and start `doc_stride` tokens apart (less where the
    room is shorter than the stride); the last one ends with the context.

    Example:
        ```python
        from keras_bert_lib.text.squad_windows import doc_windows
        doc_windows(1000, 10)   # [(0, 371), (128, 371), (256, 371), (384, 371), (512, 371), (640, 360)]
        ```
    """
    room = max_seq_length - num_query_tokens - special_count(2, packing)  # RoBERTa's <s> q </s></s> d </s>: 4
    if room <= 0:
        raise ValueError(f"A question of {num_query_tokens} word pieces leaves no room for the context in "
                         f"{max_seq_length} tokens; lower max_query_length (run_squad.py: 64) or raise "
                         "max_seq_length.")
    if doc_stride <= 0:
        raise ValueError(f"doc_stride={doc_stride} must be positive: the step between window starts.")
    step = min(room, doc_stride)
    last = max(0, -(-(num_doc_tokens - room) // step))  # windows after the first, until one reaches the end
    return [(i * step, min(room, num_doc_tokens - i * step)) for i in range(last + 1)] if num_doc_tokens else []


def max_context_window(windows, position):
    """The index of the window where doc token `position` has the most context: the largest
    min(tokens left of it, tokens right of it) + 0.01 · window length; the first on ties.

    Example:
        ```python
        from keras_bert_lib.text.squad_windows import max_context_window
        max_context_window([(0, 371), (128, 371)], 300)   # 1: 172 left and 198 right there, 70 right in the first
        ```
    """
    windows = np.asarray(windows, np.float64).reshape(-1, 2)
    start, length = windows[:, 0], windows[:, 1]
    left, right = position - start, start + length - 1 - position
    score = np.where((left >= 0) & (right >= 0), np.minimum(left, right) + 0.01 * length, -np.inf)
    if not np.isfinite(score).any():
        raise ValueError(f"Token {position} lies in none of the windows.")
    return int(np.argmax(score))


def best_span(windows, start_logits, end_logits, offsets, query_length, n_best_size=20,
              max_answer_length=30, version_2=False, null_score_diff_threshold=0.0, packing="bert"):
    """The answer's (start_char, end_char, score) in the context, from each window's logits.

    Each window's sequence is [CLS] q [SEP] d [SEP] with the question's `query_length` pieces, so
    the window's doc tokens sit at positions query_length + 2 …. As in run_squad.py: the
    `n_best_size` best starts and ends of each window are paired; pairs outside the context,
    reversed, longer than `max_answer_length` tokens, or starting where the token does not have
    its maximum context are dropped; the best start + end logit wins. With `version_2`, no answer
    (None) wins when the smallest [CLS] score (start + end logit at position 0) beats the best
    span's by more than `null_score_diff_threshold`.

    Args:
        windows: from `doc_windows`.
        start_logits, end_logits: (windows, sequence length) arrays.
        offsets: (doc tokens, 2) character [start, end) of each doc token in the context.
        query_length: the question's word pieces in each window.
        packing: the tokenizer's ("roberta": <s> q </s></s> d </s>, the doc one position later).
    Returns:
        (start_char, end_char, score) with score = start + end logit, or None (no answer).
    Example:
        ```python
        import numpy as np
        from keras_bert_lib.text.squad_windows import best_span
        logits = np.zeros((1, 8)); logits[0, 5] = 5.0   # [CLS] q q [SEP] d0 d1 d2 [SEP]: position 5 is d1
        best_span([(0, 3)], logits, logits, [(0, 5), (6, 11), (12, 14)], query_length=2)   # (6, 11, 10.0)
        ```
    """
    start_logits, end_logits = np.asarray(start_logits, np.float64), np.asarray(end_logits, np.float64)
    offset = query_length + special_count(2, packing) - 1  # [CLS] q … q [SEP] (RoBERTa: <s> q </s></s>)
    best, null = None, np.inf
    for w, (doc_start, length) in enumerate(windows):
        null = min(null, start_logits[w, 0] + end_logits[w, 0])
        starts = np.argsort(-start_logits[w], kind="stable")[:n_best_size]
        ends = np.argsort(-end_logits[w], kind="stable")[:n_best_size]
        for s in starts:
            i = s - offset  # the start's doc token within this window
            if not 0 <= i < length or max_context_window(windows, doc_start + i) != w:
                continue
            for e in ends:
                j = e - offset
                if not i <= j < min(length, i + max_answer_length):
                    continue
                score = start_logits[w, s] + end_logits[w, e]
                if best is None or score > best[2]:
                    best = (int(offsets[doc_start + i][0]), int(offsets[doc_start + j][1]), float(score))
    if version_2 and (best is None or null - best[2] > null_score_diff_threshold):
        return None
    return best
