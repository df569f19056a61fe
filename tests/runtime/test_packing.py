"""Packed inference (`runtime.packing`): the layout `pack` builds, and each text's outputs, packed
end to end with others and attending to itself alone, equal to what the task model's `predict`
gives it padded; for every task model (the [CLS] classifiers' shortened last block, per-token
heads, pairs with segments), for each family of learned absolute positions (RoBERTa's offset,
ALBERT's factorised embedding, DistilBERT's missing segments and pooler), and on OpenVINO in
float32 and in int8 (static, where a text's answer does not depend on the texts packed with it,
and dynamic)."""

import keras
import numpy as np
import pytest

from keras_bert_lib import (
    CrossEncoder,
    SentenceEmbedder,
    SpanQuestionAnswerer,
    TextClassifier,
    TokenClassifier,
    albert_base,
    bert_tiny,
    distilbert_base,
    modernbert_base,
    roberta_base,
)
from keras_bert_lib.runtime.packing import can_pack, pack, packed_function

SMALL = dict(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64, vocab_size=300)


def _ids(rows=9, width=12, seed=0, pairs=False):
    """Right-padded id rows of uneven lengths (2 to `width` tokens); pairs: segment 1 from half way."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, width + 1, rows)
    mask = (np.arange(width)[None] < lengths[:, None]).astype("int32")
    segments = (np.arange(width)[None] >= lengths[:, None] // 2) * mask if pairs else np.zeros_like(mask)
    return {"token_ids": (rng.integers(5, 300, (rows, width)) * mask).astype("int32"),
            "segment_ids": segments.astype("int32"), "padding_mask": mask}


def _agree(got, want, mask, atol):
    """Each output of each text equal, per-token outputs on the text's own positions."""
    for have, ref in zip(keras.tree.flatten(got), keras.tree.flatten(want)):
        have, ref = np.asarray(have), np.asarray(ref)
        assert have.shape == ref.shape
        if ref.ndim >= 2 and ref.shape[1] == mask.shape[1]:
            keep = mask.astype(bool)
            have, ref = have[keep], ref[keep]
        np.testing.assert_allclose(have, ref, atol=atol)


def test_pack_lays_each_text_end_to_end_with_its_own_positions():
    ids = _ids(rows=40, width=30, seed=3, pairs=True)
    lengths = ids["padding_mask"].sum(1)
    for row_tokens in (1, 16, 64, 1000):
        packed = pack(ids, row_tokens)
        used = (packed["text_ids"] > 0).sum(1)
        assert packed["packed_token_ids"].shape[1] == used.max() <= max(row_tokens, lengths.max())
        assert all(n <= row_tokens or packed["text_ids"][r].max() == 1 for r, n in enumerate(used))  # long: alone
        for i, n in enumerate(lengths):
            r, c = packed["gather"][i, :n].T
            assert (r == r[0]).all() and (c == c[0] + np.arange(n)).all()  # one row, consecutive
            assert (packed["packed_token_ids"][r, c] == ids["token_ids"][i, :n]).all()
            assert (packed["packed_segment_ids"][r, c] == ids["segment_ids"][i, :n]).all()
            assert (packed["position_ids"][r, c] == np.arange(n)).all()
            assert len(set(packed["text_ids"][r, c])) == 1 and packed["text_ids"][r[0], c[0]] > 0
        assert used.sum() == lengths.sum()  # every token once, no more
    assert len(pack(ids, 1000)["packed_token_ids"]) == int(np.ceil(lengths.sum() / 1000))
    for bad in (0, "64", 64.0, True):
        with pytest.raises(ValueError, match=r"^row_tokens=.*: the tokens of a packed row, an int of 1 or more\.$"):
            pack(ids, bad)


@pytest.mark.parametrize("task", [pytest.param(t, marks=pytest.mark.slow) if t != "tagger" else t  # about 1 s each
                                  for t in ("embedder", "cls_classifier", "tagger", "spans", "pairs")])
def test_each_task_models_texts_packed_get_what_they_get_alone(task):
    encoder = bert_tiny(**SMALL)
    model = {"embedder": lambda: SentenceEmbedder(encoder),
             "cls_classifier": lambda: TextClassifier(encoder, 3),  # its last block computes [CLS] alone
             "tagger": lambda: TokenClassifier(encoder, ["O", "B-X", "I-X"]),
             "spans": lambda: SpanQuestionAnswerer(encoder),
             "pairs": lambda: CrossEncoder(encoder)}[task]()
    model.inference_dtype = None
    ids = _ids(pairs=task in ("spans", "pairs"))
    want = model.predict(ids, verbose=0)
    run = packed_function(model)
    for row_tokens in (8, 64):  # texts alone in rows, and several to a row
        _agree(keras.tree.pack_sequence_as(want, run(pack(ids, row_tokens))), want, ids["padding_mask"], 1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["roberta", "albert", "distilbert"])
def test_each_family_with_learned_positions_packs(family):
    factory = {"roberta": roberta_base, "albert": albert_base, "distilbert": distilbert_base}[family]
    overrides = {**SMALL, "embedding_size": 16} if family == "albert" else SMALL
    model = TextClassifier(factory(**overrides, max_position_embeddings=40), 2,
                           pooling="mean" if family == "distilbert" else "cls")
    model.inference_dtype = None
    ids = _ids()
    want = model.predict(ids, verbose=0)
    _agree(packed_function(model)(pack(ids, 32)), [want], ids["padding_mask"], 1e-5)


def test_modernbert_does_not_pack_and_says_how_to_run_it():
    model = SentenceEmbedder(modernbert_base(num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                                             intermediate_size=64, vocab_size=300))
    assert not can_pack(model) and can_pack(SentenceEmbedder(bert_tiny(**SMALL)))
    with pytest.raises(ValueError, match=r"^SentenceEmbedder on ModernBertEncoder does not run packed: .*"
                                         r"run it padded \(pack_tokens=None\)\.$"):
        packed_function(model)


@pytest.mark.slow
def test_openvino_runs_packed_in_float32_and_int8_each_text_as_alone():
    pytest.importorskip("nncf", reason="the openvino extra (OpenVINO and NNCF) is part of the test install")
    from keras_bert_lib.runtime.openvino import Int8Runtime, OpenVINORuntime

    classifier = TextClassifier(bert_tiny(**SMALL), 3)
    classifier.inference_dtype = None
    ids = _ids(rows=64, width=20, seed=1)
    want = classifier.predict(ids, verbose=0)
    classifier.runtime = OpenVINORuntime(inference_precision="float32", pack_tokens=32)
    np.testing.assert_allclose(classifier.predict(ids, verbose=0), want, atol=1e-5)

    embedder = SentenceEmbedder(bert_tiny(**SMALL))
    float32 = embedder.predict(ids, verbose=0)
    embedder.runtime = Int8Runtime(pack_tokens=32)
    got = embedder.predict(ids, verbose=0)  # calibrated on these 64 rows, packed, then gated
    assert embedder.runtime.quantization == "static" and embedder.runtime.worst_cosine >= 0.99
    assert np.min(np.sum(got * float32, 1)) >= 0.99
    alone = np.concatenate([embedder.predict({k: v[i:i + 1] for k, v in ids.items()}, verbose=0)
                            for i in range(0, 64, 7)])
    np.testing.assert_allclose(alone, got[::7], atol=1e-5)  # the texts packed with it change nothing
    embedder.runtime = Int8Runtime(pack_tokens=32)
    few = {k: v[:8] for k, v in ids.items()}
    got = embedder.predict(few, verbose=0)  # under 32 rows to calibrate on: dynamic, packed
    assert embedder.runtime.quantization == "dynamic" and np.min(np.sum(got * float32[:8], 1)) >= 0.99
