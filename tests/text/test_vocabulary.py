"""Vocabulary learning on the quick-start corpus, and the corpus itself."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lib.text import SPECIAL_TOKENS, WordPieceTokenizer, build_stdlib_corpus, learn_vocabulary


@pytest.mark.slow
def test_learned_vocabulary_round_trips_its_corpus_with_under_one_percent_unk(stdlib_corpus, tmp_path):
    vocab = learn_vocabulary(stdlib_corpus, vocab_size=8000, output=tmp_path / "vocab.txt", verbose=False)
    assert vocab[:5] == list(SPECIAL_TOKENS)
    assert 4000 < len(vocab) <= 8000
    assert (tmp_path / "vocab.txt").read_text().splitlines() == vocab
    tokenizer = WordPieceTokenizer(str(tmp_path / "vocab.txt"))
    with open(stdlib_corpus, encoding="utf-8") as f:
        lines = [line for line in f.read().splitlines() if line]
    ids = tokenizer(tf.constant(lines)).flat_values.numpy()
    unk_rate = float(np.mean(ids == tokenizer.unk_id))
    assert unk_rate < 0.01, f"[UNK] rate {unk_rate:.4f}"
    # Word pieces, not whole words only: continuation pieces were learned.
    assert sum(t.startswith("##") for t in vocab) > 500


@pytest.mark.slow
def test_corpus_is_googles_format_and_deterministic(stdlib_corpus, tmp_path):
    text = open(stdlib_corpus, encoding="utf-8").read()
    documents = text.strip("\n").split("\n\n")
    assert len(documents) > 300 and len(text) > 1_000_000
    assert all(len(d.splitlines()) >= 2 for d in documents), "every document has two sentences or more"
    assert "\n\n\n" not in text
    again = build_stdlib_corpus(str(tmp_path / "again.txt"), verbose=False)
    assert open(again, encoding="utf-8").read() == text


@pytest.mark.slow
@pytest.mark.parametrize("vocab_size", [200, 3000])
def test_the_learned_vocabulary_is_tensorflow_texts_reachable_or_not(reference_lines, vocab_size, caplog):
    """One pass at min_count first, and the full binary search only when that pass reaches the
    size asked: the result is tensorflow-text's `learn` either way (200 is reachable on this
    text, 3,000 is not and says so)."""
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    from keras_bert_lib.text.vocabulary import _learn

    counts = collections.Counter(w for line in reference_lines[:400] for w in line.lower().split())
    expected = learner.learn(counts.items(), vocab_size, list(SPECIAL_TOKENS), lower_thresh=2)
    assert _learn(learner, counts, vocab_size, min_count=2) == expected
    assert ("fewer than vocab_size=3000" in caplog.text) == (vocab_size == 3000)
    assert (len(expected) < 0.95 * vocab_size) == (vocab_size == 3000)
