"""ELECTRA's pre-training: the sampler puts the generator's samples at the masked positions, as
its softmax says; the generator reads the discriminator's embedding tables, one set of variables
that both losses train; the loss and metrics equal a NumPy computation on the same outputs; a model
saved as .keras loads with its generator and discriminator, the tables still shared;
`keras-bert pretrain --objective rtd` on the built-in corpus learns to find the replaced tokens
(held-out AUC well above 0.5)."""

import json

import keras
import numpy as np
import pytest

import keras_bert_lib as kb
from keras_bert_lib import BertPretrainer
from keras_bert_lib.pretraining import ElectraDiscriminator, ElectraPretrainer, ReplacedTokenSampler, electra_generator
from keras_bert_lib.pretraining.electra_pretrainer import generator_config


def test_the_sampler_places_samples_at_real_masked_positions_as_often_as_the_softmax_says():
    logits = np.log(np.array([[[0.25, 0.75, 1e-9, 1e-9]] * 3], "float32")).repeat(2000, 0)  # (2000, 3, 4)
    ids = np.array([[7, 8, 9, 9, 9]], "int32").repeat(2000, 0)
    positions = np.array([[1, 3, 0]], "int32").repeat(2000, 0)  # the last slot is padding (0)
    out = ReplacedTokenSampler(seed=1)(logits, ids, positions)
    sampled, corrupted = out["sampled_ids"].numpy(), out["corrupted_ids"].numpy()
    assert set(np.unique(sampled)) <= {0, 1}
    assert abs(np.mean(sampled[:, :2] == 1) - 0.75) < 0.02  # 4,000 draws: 3 standard deviations is 0.02
    np.testing.assert_array_equal(corrupted[:, 1], sampled[:, 0])
    np.testing.assert_array_equal(corrupted[:, 3], sampled[:, 1])
    np.testing.assert_array_equal(corrupted[:, [0, 2, 4]], ids[:, [0, 2, 4]])  # [CLS] and unmasked kept


def _pretrainer(vocab=40, shared=True):
    discriminator = ElectraDiscriminator(kb.electra_small(num_hidden_layers=1, vocab_size=vocab, hidden_size=32,
                                                          embedding_size=16, num_attention_heads=2,
                                                          intermediate_size=64, max_position_embeddings=16))
    generator = (electra_generator(discriminator) if shared else
                 BertPretrainer(kb.build_encoder(generator_config(discriminator.encoder.config), name="generator"),
                                sentence_task=None))
    return ElectraPretrainer(generator, discriminator, seed=0)


def _batch():
    x = {"token_ids": np.array([[2, 4, 5, 6, 3]] * 4, "int32"), "segment_ids": np.zeros((4, 5), "int32"),
         "padding_mask": np.ones((4, 5), "int32"), "masked_positions": np.array([[1, 2]] * 4, "int32")}
    return x, {"mlm_logits": np.array([[9, 10]] * 4)}, {"mlm_logits": np.ones((4, 2))}


@pytest.mark.slow
def test_the_generator_reads_the_discriminators_tables_and_both_losses_train_them():
    model, separate = _pretrainer(), _pretrainer(shared=False)
    tables = ("token_embedding", "position_embedding", "segment_embedding", "embeddings_layer_norm")
    for name in tables:
        assert model.generator.encoder.get_layer(name) is model.discriminator.encoder.get_layer(name)
    assert model.shares_embeddings and not separate.shares_embeddings
    assert len(model.weights) == len(separate.weights) - 5  # one set of tables: word, position, segment, γ, β
    assert model.generator.encoder.get_layer("embedding_projection").kernel.shape == (16, 8)  # E → its own H
    before = np.array(model.discriminator.encoder.token_embedding.embeddings)
    model.compile(optimizer=keras.optimizers.SGD(1.0), jit_compile=False)
    model.train_on_batch(*_batch())
    after = model.generator.encoder.token_embedding.embeddings
    assert not np.allclose(before[[9, 10]], np.asarray(after)[[9, 10]])  # the generator's MLM targets moved it
    with pytest.raises(ValueError, match="embeddings differ .*embedding width 32 and 16"):
        kb.BertEncoder(kb.PRESETS["electra_small"].replace(embedding_size=None, hidden_size=32, num_attention_heads=2,
                                                           vocab_size=40, max_position_embeddings=16),
                       shared_embeddings=model.discriminator.encoder)


def test_the_loss_and_metrics_are_mlm_plus_fifty_times_the_discriminators_cross_entropy():
    model = _pretrainer()
    model.compile(optimizer="adamw")
    x = {"token_ids": np.array([[2, 4, 5, 6, 3, 0], [2, 7, 8, 3, 0, 0]], "int32"),
         "segment_ids": np.zeros((2, 6), "int32"), "padding_mask": np.array([[1] * 5 + [0], [1] * 4 + [0] * 2]),
         "masked_positions": np.array([[1, 3], [2, 0]], "int32")}
    y = {"mlm_logits": np.array([[11, 12], [13, 0]], "int32")}
    w = {"mlm_logits": np.array([[1.0, 1.0], [1.0, 0.0]], "float32")}
    rng = np.random.default_rng(0)
    y_pred = {"mlm_logits": rng.normal(size=(2, 2, 40)).astype("float32"),
              "rtd_logits": rng.normal(size=(2, 6)).astype("float32"),
              "sampled_ids": np.array([[11, 30], [31, 5]], "int32")}  # slot (0, 0) guessed right: not replaced
    loss = float(model.compute_loss(x, y, y_pred, w))

    logp = y_pred["mlm_logits"] - np.log(np.exp(y_pred["mlm_logits"]).sum(-1, keepdims=True))
    mlm = -(np.take_along_axis(logp, y["mlm_logits"][..., None], -1)[..., 0] * w["mlm_logits"]).sum() / 3
    replaced = np.zeros((2, 6))
    replaced[0, 3] = replaced[1, 2] = 1  # the padding slot (1, 1) at position 0 replaces nothing
    p = 1 / (1 + np.exp(-y_pred["rtd_logits"]))
    real = x["padding_mask"].astype(bool)
    bce = -(replaced * np.log(p) + (1 - replaced) * np.log(1 - p))[real].mean()
    assert loss == pytest.approx(mlm + 50 * bce, rel=1e-5)
    results = {m.name: float(m.result()) for m in model.trackers}
    assert results["replaced_rate"] == pytest.approx(2 / 9)
    called = y_pred["rtd_logits"] > 0
    assert results["rtd_accuracy"] == pytest.approx(np.mean((called == replaced.astype(bool))[real]))
    assert results["replaced_recall"] == pytest.approx(called[replaced.astype(bool)].mean())


@pytest.mark.slow
def test_a_fitted_pretrainer_saved_as_keras_loads_with_both_models(tmp_path):
    model = _pretrainer()
    model.compile(optimizer="adamw", jit_compile=False)
    x, y, w = _batch()
    model.fit(x, y, sample_weight=w, epochs=1, verbose=0)
    model.save(tmp_path / "electra.keras")
    again = keras.saving.load_model(tmp_path / "electra.keras")
    assert isinstance(again.discriminator, ElectraDiscriminator) and again.generator.sentence_task is None
    assert again.shares_embeddings
    for part in ("discriminator", "generator"):
        for a, b in zip(getattr(model, part).get_weights(), getattr(again, part).get_weights(), strict=True):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="computes its own loss"):
        again.compile(loss="mse")


@pytest.mark.slow
def test_rtd_pretraining_on_the_built_in_corpus_finds_the_replaced_tokens(tmp_path, capsys):
    """BERT-Tiny's shape as the discriminator, its quarter as the generator, the paper's learning
    rate, on the first 800 documents of the built-in corpus (learning a 2,000-token vocabulary on
    all of it took most of the test's time; 60 steps read a fraction of either); held out after 60
    steps, replaced tokens score above original ones far more often than chance (AUC 0.5: an
    untrained discriminator, whatever the generator). Measured: AUC 0.738 and 0.722 (seeds 0 and
    1); on the whole corpus 0.740 and 0.732."""
    from keras_bert_lib.cli import main
    from keras_bert_lib.text import build_stdlib_corpus

    corpus = tmp_path / "corpus.txt"
    documents = open(build_stdlib_corpus(verbose=False), encoding="utf-8").read().split("\n\n")[:800]
    corpus.write_text("\n\n".join(documents), encoding="utf-8")
    out = tmp_path / "run"
    assert main(["pretrain", "--corpus", str(corpus), "--objective", "rtd", "--sentence-task", "none",
                 "--preset", "bert_tiny", "--output-dir", str(out), "--steps", "60", "--steps-per-epoch", "60",
                 "--warmup-steps", "10", "--learning-rate", "5e-4", "--max-seq-length", "32", "--max-predictions", "5",
                 "--batch-size", "32", "--dupe-factor", "1", "--vocab-size", "2000", "--no-jit-compile"]) == 0
    printed = capsys.readouterr().out
    held = json.loads((out / "report.json").read_text())["held_out"]
    print(held)
    assert "replaced-token detection: AUC" in printed
    assert 0.05 < held["replaced_rate"] < 0.2  # 15% of the tokens masked, nearly all replaced by samples
    assert held["replaced_auc"] >= 0.58, held
    discriminator = kb.load_checkpoint(out / "export", with_heads=True)
    assert isinstance(discriminator, ElectraDiscriminator)
    assert kb.load_checkpoint(out / "export" / "generator").config.hidden_size == 32
