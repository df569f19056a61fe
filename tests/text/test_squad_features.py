"""Question/context windows equal HuggingFace's overflowing windows (whose `stride` is the overlap,
max_seq_length − question − 3 − doc_stride), and training positions point at the answer's pieces."""

import os

import numpy as np
import pytest

from keras_bert_lib.text import WordPieceTokenizer, squad_features

transformers = pytest.importorskip("transformers", reason="transformers is in the [test] extra")


@pytest.fixture(scope="module")
def tokenizers(vocab_path):
    return WordPieceTokenizer(vocab_path), transformers.BertTokenizerFast.from_pretrained(os.path.dirname(vocab_path))


def _long_context(reference_lines, words=900):
    text, out = [], 0
    for line in reference_lines:
        text.append(line)
        out += len(line.split())
        if out > words:
            return "  ".join(text)  # runs of spaces between lines


@pytest.mark.parametrize("max_seq_length, doc_stride", [(384, 128), (128, 32), (64, 61)])
def test_windows_equal_huggingfaces_overflowing_tokens(tokenizers, reference_lines, max_seq_length, doc_stride):
    ours, hf = tokenizers
    question, context = "What does the standard library document first?", _long_context(reference_lines)
    features = squad_features([question], [context], ours, max_seq_length, 64, doc_stride)
    query = len(hf(question, add_special_tokens=False)["input_ids"])
    theirs = hf(question, context, truncation="only_second", max_length=max_seq_length, padding="max_length",
                stride=max(0, max_seq_length - query - 3 - doc_stride), return_overflowing_tokens=True)
    assert len(features.windows[0]) >= 3
    np.testing.assert_array_equal(features.inputs["token_ids"], theirs["input_ids"])
    np.testing.assert_array_equal(features.inputs["segment_ids"], theirs["token_type_ids"])
    np.testing.assert_array_equal(features.inputs["padding_mask"], theirs["attention_mask"])
    assert list(features.example_index) == [0] * len(theirs["input_ids"])


def test_training_positions_mark_the_answer_in_the_windows_that_hold_it_and_cls_elsewhere(tokenizers,
                                                                                           reference_lines):
    ours, _ = tokenizers
    context = _long_context(reference_lines) + "  The answer is Zürich, café Sinan."
    start = context.index("Zürich")
    features = squad_features(["Which city?", "Nothing here?"], [context, "Short text."], ours, 128, 16, 48,
                              answers=[("Zürich, café Sinan", start), None])
    rows = np.flatnonzero(features.example_index == 0)
    held = [n for n in rows if features.start_positions[n] > 0]
    assert held and held[-1] == rows[-1]  # the answer closes the context: the last window holds it
    for n in held:
        ids = features.inputs["token_ids"][n, features.start_positions[n]:features.end_positions[n] + 1]
        assert [ours.id_to_token(i) for i in ids] == ["zurich", ",", "cafe", "sin", "##an"]
    assert all(features.start_positions[n] == features.end_positions[n] == 0 for n in rows if n not in held)
    last = np.flatnonzero(features.example_index == 1)
    assert features.start_positions[last].tolist() == [0] and len(features.windows[1]) == 1
    offsets = features.offsets[0]
    assert context[offsets[-6][0]:offsets[-2][1]] == "Zürich, café Sinan"


def test_mismatched_lists_are_named(tokenizers):
    with pytest.raises(ValueError, match="2 questions, 1 contexts: give one of each"):
        squad_features(["a", "b"], ["c"], tokenizers[0])
