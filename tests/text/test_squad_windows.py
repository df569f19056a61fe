"""Windows over long contexts equal Google's run_squad.py (its loops written out here), and span
decoding finds a planted answer in the third window of a 1,200-token context."""

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_bert_lib.text.squad_windows import best_span, doc_windows, max_context_window


def run_squad_doc_spans(num_doc_tokens, num_query_tokens, max_seq_length, doc_stride):
    """run_squad.py's convert_examples_to_features, the doc-span loop."""
    max_tokens_for_doc = max_seq_length - num_query_tokens - 3
    DocSpan = collections.namedtuple("DocSpan", ["start", "length"])
    doc_spans, start_offset = [], 0
    while start_offset < num_doc_tokens:
        length = num_doc_tokens - start_offset
        if length > max_tokens_for_doc:
            length = max_tokens_for_doc
        doc_spans.append(DocSpan(start=start_offset, length=length))
        if start_offset + length == num_doc_tokens:
            break
        start_offset += min(length, doc_stride)
    return [tuple(span) for span in doc_spans]


def run_squad_is_max_context(doc_spans, cur_span_index, position):
    """run_squad.py's _check_is_max_context."""
    best_score, best_span_index = None, None
    for span_index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_span_index = score, span_index
    return cur_span_index == best_span_index


def _check_against_run_squad(n, q, max_seq_length, stride):
    windows = doc_windows(n, q, max_seq_length, stride)
    assert windows == run_squad_doc_spans(n, q, max_seq_length, stride)
    for position in range(0, n, max(1, n // 10)):
        best = max_context_window(windows, position)
        holding = [w for w, (start, length) in enumerate(windows) if start <= position < start + length]
        assert [run_squad_is_max_context(windows, w, position) for w in holding] == [w == best for w in holding]


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2000), st.integers(0, 60), st.sampled_from([64, 128, 384, 512]), st.integers(16, 300))
def test_windows_and_max_context_equal_run_squads(n, q, max_seq_length, stride):
    _check_against_run_squad(n, q, max_seq_length, stride)


@pytest.mark.parametrize("n, stride", [(300, 1), (500, 7), (64, 64), (61, 128), (62, 128)])
def test_windows_equal_run_squads_at_small_strides_and_edges(n, stride):
    _check_against_run_squad(n, 0, 64, stride)


def _context(words=1200):
    """'w0 w1 …' with a double space and an accented word inside; one token per word."""
    text, offsets = "", []
    for i in range(words):
        word = f"café{i}" if i % 97 == 0 else f"w{i}"
        text += ("  " if i % 50 == 0 and i else " " if i else "")
        offsets.append((len(text), len(text) + len(word)))
        text += word
    return text, offsets


def test_an_answer_in_the_third_window_of_a_long_context_is_found_and_mapped_to_characters():
    context, offsets = _context()
    q = 12
    windows = doc_windows(len(offsets), q, 384, 128)
    assert len(windows) >= 5
    rng = np.random.default_rng(0)
    start, end = rng.normal(size=(2, len(windows), 384))
    answer = (windows[2][0] + 150, windows[2][0] + 152)  # doc tokens; their max context is window 2
    assert max_context_window(windows, answer[0]) == 2
    for w, (doc_start, length) in enumerate(windows):  # every window that holds the answer points at it
        if doc_start <= answer[0] < doc_start + length:
            start[w, answer[0] - doc_start + q + 2] = 8.0 if w == 2 else 6.0
        if doc_start <= answer[1] < doc_start + length:
            end[w, answer[1] - doc_start + q + 2] = 8.0
    # a higher-scoring start in window 1, near its right edge, where its token has less context
    # than in window 2, must lose
    near_edge = windows[1][0] + windows[1][1] - 16
    assert max_context_window(windows, near_edge) == 2
    start[1, near_edge - windows[1][0] + q + 2] = 20.0
    start_char, end_char, score = best_span(windows, start, end, offsets, q)
    assert (start_char, end_char) == (offsets[answer[0]][0], offsets[answer[1]][1])
    assert context[start_char:end_char] == "w406 w407 w408" and score == pytest.approx(16.0)


def test_characters_survive_accents_and_runs_of_spaces():
    context, offsets = _context(300)
    windows = doc_windows(len(offsets), 2, 64, 32)
    start, end = np.full((2, len(windows), 64), -10.0)
    w = max_context_window(windows, 194)
    start[w, 194 - windows[w][0] + 4] = end[w, 200 - windows[w][0] + 4] = 5.0
    start_char, end_char, _ = best_span(windows, start, end, offsets, 2)
    assert context[start_char:end_char] == "café194 w195 w196 w197 w198 w199  w200"


def test_spans_reversed_too_long_or_in_the_question_are_dropped_and_no_answer_needs_the_threshold():
    offsets = [(i * 3, i * 3 + 2) for i in range(20)]  # doc token i at characters 3i … 3i + 2
    windows = doc_windows(20, 2, 32, 128)  # one window; doc token i at position i + 4
    start, end = np.full((2, 1, 32), -10.0)
    start[0, 1] = end[0, 1] = 50.0  # inside the question
    start[0, 12], end[0, 9] = 9.0, 9.0  # doc tokens 8 → 5: reversed
    start[0, 6], end[0, 7] = 3.0, 3.0  # doc tokens 2 → 3
    assert best_span(windows, start, end, offsets, 2) == (6, 17, 12.0)  # 2 → 5: the best start and end that pair
    assert best_span(windows, start, end, offsets, 2, max_answer_length=3) == (6, 11, 6.0)  # 2 → 5 is 4 long
    start[0, 0] = end[0, 0] = 7.0  # [CLS]: the null score 14 against the best span's 12
    assert best_span(windows, start, end, offsets, 2, version_2=True) is None
    assert best_span(windows, start, end, offsets, 2, version_2=True, null_score_diff_threshold=5.0) == (6, 17, 12.0)
    assert best_span(windows, start, end, offsets, 2) == (6, 17, 12.0)  # SQuAD v1.1 always answers


def test_a_question_that_fills_the_window_is_an_error_naming_the_fix():
    with pytest.raises(ValueError, match="A question of 62 word pieces leaves no room.*lower max_query_length"):
        doc_windows(100, 62, 64, 128)
