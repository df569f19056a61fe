"""BertPacker and BertPreprocessor: the packing invariants, on arbitrary input."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_bert_lib.text import BertPacker

CLS, SEP, PAD = 101, 102, 0
segment = st.lists(st.integers(200, 300), max_size=20)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(st.lists(segment, min_size=1, max_size=3), st.lists(segment, min_size=1, max_size=3),
       st.integers(6, 24), st.sampled_from(["round_robin", "waterfall"]))
def test_packing_invariants(first, second, length, truncate):
    """Exact length; one [CLS] first; one [SEP] per segment; segment ids 0 then 1; the mask
    covers exactly the real tokens; kept tokens are a prefix of each segment."""
    n = min(len(first), len(second))
    a, b = (
        tf.ragged.constant(first[:n], tf.int32, ragged_rank=1),
        tf.ragged.constant(second[:n], tf.int32, ragged_rank=1),
    )
    out = {k: v.numpy() for k, v in BertPacker(length, CLS, SEP, PAD, truncate)((a, b)).items()}
    for row in range(n):
        ids, seg, mask = out["token_ids"][row], out["segment_ids"][row], out["padding_mask"][row]
        assert ids.shape == seg.shape == mask.shape == (length,)
        real = int(mask.sum())
        assert mask.tolist() == [1] * real + [0] * (length - real)
        assert ids[0] == CLS and (ids == CLS).sum() == 1
        assert (ids[:real] == SEP).sum() == 2 and ids[real - 1] == SEP and (ids[real:] == PAD).all()
        first_sep = int(np.argmax(ids == SEP))
        assert seg[: first_sep + 1].tolist() == [0] * (first_sep + 1)
        assert seg[first_sep + 1: real].tolist() == [1] * (real - first_sep - 1) and (seg[real:] == 0).all()
        kept_a, kept_b = ids[1:first_sep].tolist(), ids[first_sep + 1: real - 1].tolist()
        assert kept_a == first[row][: len(kept_a)] and kept_b == second[row][: len(kept_b)]
        assert len(kept_a) + len(kept_b) == min(len(first[row]) + len(second[row]), length - 3)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(0, 4), st.integers(7, 24), st.sampled_from(["round_robin", "waterfall"]),
       st.randoms(use_true_random=False))
def test_packing_equals_tensorflow_texts_combine_segments(count, batch, length, truncate, rng):
    """The dense packing (TFLite-convertible) gives what tensorflow-text's trimmer,
    `combine_segments` and `pad_model_inputs` give, for one to three segments and empty batches."""
    import tensorflow_text as tft

    segments = [tf.ragged.constant([[rng.randrange(200, 300) for _ in range(rng.randrange(0, 30))]
                                    for _ in range(batch)], tf.int32, ragged_rank=1) for _ in range(count)]
    trimmer = (tft.RoundRobinTrimmer if truncate == "round_robin" else tft.WaterfallTrimmer)(length - count - 1)
    ids, segment_ids = tft.combine_segments(trimmer.trim(segments), CLS, SEP)
    want_ids, want_mask = tft.pad_model_inputs(ids, length, pad_value=PAD)
    want_segments, _ = tft.pad_model_inputs(segment_ids, length, pad_value=0)
    got = BertPacker(length, CLS, SEP, PAD, truncate)(tuple(segments))
    for name, want in (("token_ids", want_ids), ("segment_ids", want_segments), ("padding_mask", want_mask)):
        assert got[name].dtype == tf.int32 and got[name].numpy().tolist() == want.numpy().tolist(), name


def test_round_robin_balances_and_waterfall_fills_the_first_segment():
    a, b = tf.ragged.constant([[1] * 10]), tf.ragged.constant([[2] * 10])
    rr = BertPacker(9, CLS, SEP, truncate="round_robin")((a, b))["token_ids"].numpy()[0].tolist()
    wf = BertPacker(9, CLS, SEP, truncate="waterfall")((a, b))["token_ids"].numpy()[0].tolist()
    assert rr == [CLS, 1, 1, 1, SEP, 2, 2, 2, SEP]
    assert wf == [CLS, 1, 1, 1, 1, 1, 1, SEP, SEP]


def test_too_short_a_sequence_is_refused():
    with pytest.raises(ValueError, match="sequence_length=3 leaves no room for 2 segment"):
        BertPacker(3, CLS, SEP)((tf.ragged.constant([[1]]), tf.ragged.constant([[2]])))
    with pytest.raises(ValueError, match="truncate='only_first'"):
        BertPacker(8, CLS, SEP, truncate="only_first")


@pytest.mark.parametrize("lengths", [(10, 10), (12, 9), (9, 12), (3, 20), (20, 3), (5, 6)])
def test_longest_first_cuts_pairs_as_huggingface_tokenizers(lengths):
    """HuggingFace's rule, checked on its own tokenizer: an odd token goes to the longer segment
    (the second when equal), where round_robin (Google's BERT) gives it to the first."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = {f"w{i}": i for i in range(3, 60)}
    reference = Tokenizer(models.WordLevel({**words, "[UNK]": 0}, unk_token="[UNK]"))
    reference.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    reference.enable_truncation(9)
    n1, n2 = lengths
    a, b = list(range(3, 3 + n1)), list(range(30, 30 + n2))
    want = reference.encode(" ".join(f"w{i}" for i in a), " ".join(f"w{i}" for i in b))
    ids = BertPacker(12, CLS, SEP, truncate="longest_first")((tf.ragged.constant([a]), tf.ragged.constant([b])))
    kept = [i for i in ids["token_ids"].numpy()[0].tolist() if i not in (CLS, SEP, 0)]
    assert kept == want.ids


def test_roberta_packing_doubles_the_separator_and_keeps_one_segment():
    out = BertPacker(10, 0, 2, pad_id=1, packing="roberta")((tf.ragged.constant([[7, 8]]), tf.ragged.constant([[9]])))
    assert out["token_ids"].numpy().tolist() == [[0, 7, 8, 2, 2, 9, 2, 1, 1, 1]]
    assert out["segment_ids"].numpy().tolist() == [[0] * 10]
    assert out["padding_mask"].numpy().tolist() == [[1] * 7 + [0] * 3]


def test_a_list_is_a_batch_a_tuple_is_a_pair_and_anything_else_is_refused(vocab_path):
    import numpy as np
    import pytest

    from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer

    preprocess = BertPreprocessor(WordPieceTokenizer(vocab_path), sequence_length=12)
    batch = preprocess(["hello world", "good morning", "hi"])
    assert batch["token_ids"].shape == (3, 8) and not batch["segment_ids"].numpy().any()  # the longest, 4, to 8
    assert preprocess(np.array(["hello world", "good morning"]))["token_ids"].shape == (2, 8)
    pair = preprocess(("hello world", "good morning"))
    assert pair["token_ids"].shape == (8,) and pair["segment_ids"].numpy().max() == 1
    with pytest.raises(ValueError, match="not a 2-D array"):
        preprocess(np.array([["hello", "world"]]))
    with pytest.raises(ValueError, match="takes strings"):
        preprocess([1, 2])
