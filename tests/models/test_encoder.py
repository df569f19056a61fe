import numpy as np
import pytest

import keras_bert_lib as kb
from keras_bert_lib import BertEncoder
from tests import harness
from tests.reference import numpy_bert

TINY = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=32, hidden_act="gelu_tanh", hidden_dropout_prob=0.2,
            attention_probs_dropout_prob=0.2, max_position_embeddings=16, type_vocab_size=3,
            initializer_range=0.1, layer_norm_eps=1e-6)
INPUTS = {"token_ids": harness.token_ids(batch=2, length=6, vocab=50),
          "segment_ids": np.array([[0, 0, 0, 1, 1, 2], [0, 1, 1, 2, 0, 0]], "int32")}
MASK = harness.right_padded(lengths=[6, 4])


def _spec(expected_weights, outputs=("pooled_output", "sequence_output"), fresh_process=False, **shape):
    expected = {"sequence_output": (2, 6, 16), "pooled_output": (2, 16)}
    return harness.LayerSpec(
        cls=BertEncoder, init_kwargs={**TINY, **shape}, inputs=INPUTS, padding_mask=MASK,
        expected_output_shape={k: expected[k] for k in outputs},
        expected_num_trainable_weights=expected_weights, stochastic=True, dict_input=True,
        fresh_process=fresh_process)


SPECS = {
    # One shape loads its .keras and SavedModel in a fresh process (nothing but keras_bert_lib
    # imported); the others are the same classes, so they load in this process.
    "bert": _spec(5 + 2 * 16 + 2, fresh_process=True),
    "albert": _spec(5 + 2 + 2 * 16 + 2, embedding_size=8, num_hidden_groups=1, inner_group_num=2),
    "distilbert": _spec(4 + 2 * 16, outputs=("sequence_output",), type_vocab_size=0, with_pooler=False),
    "roberta_pre_ln": _spec(5 + 2 * 16 + 2 + 2, position_offset=2, type_vocab_size=1, norm_first=True),
}
SPECS["roberta_pre_ln"].inputs = {**INPUTS, "segment_ids": np.zeros((2, 6), "int32")}
CASES = [(n, c) for n, s in SPECS.items() for c in harness.checks_for(s)]


@pytest.mark.slow
@pytest.mark.parametrize("name,check", CASES, ids=[f"{n}-{c.__name__}" for n, c in CASES])
def test_contract(name, check):
    check(SPECS[name])


# Parameter counts: shared/reference.md, "Architectures and exact parameter counts".
REFERENCE_COUNTS = {
    "bert_tiny": 4_385_920, "bert_mini": 11_170_560, "bert_small": 28_763_648,
    "bert_medium": 41_373_184, "bert_base": 109_482_240, "bert_large": 335_141_888,
    "albert_base": 11_683_584, "albert_large": 17_683_968, "albert_xlarge": 58_724_864,
    "albert_xxlarge": 222_595_584, "distilbert_base": 66_362_880, "roberta_base": 124_645_632,
}


@pytest.mark.parametrize("preset", REFERENCE_COUNTS)
def test_preset_parameter_count_matches_reference(preset):
    assert kb.PRESETS[preset].num_parameters == REFERENCE_COUNTS[preset]


@pytest.mark.parametrize("name", sorted(SPECS) + ["albert_two_groups"])
def test_the_count_from_the_shape_equals_the_built_encoders(name):
    """So the presets' counts above need not build twelve full models: the formula equals
    count_params() on every structural variant (BERT, ALBERT factorised, shared and grouped,
    DistilBERT without segments or pooler, pre-LN RoBERTa), and two full presets are built."""
    kwargs = SPECS[name].init_kwargs if name in SPECS else {
        **TINY, "embedding_size": 8, "num_hidden_layers": 4, "num_hidden_groups": 2, "inner_group_num": 2}
    encoder = BertEncoder(**kwargs)
    assert encoder.count_params() == encoder.config.num_parameters


@pytest.mark.parametrize("preset", ["bert_tiny", "albert_base"])
def test_full_presets_built(preset):
    assert getattr(kb, preset)().count_params() == REFERENCE_COUNTS[preset]


BERT_TINY_WEIGHTS = [
    "token_embedding/embeddings", "position_embedding/embeddings", "segment_embedding/embeddings",
    "embeddings_layer_norm/gamma", "embeddings_layer_norm/beta",
] + [
    f"layer_{i}/{name}" for i in range(2) for name in (
        "attention/query/kernel", "attention/query/bias", "attention/key/kernel",
        "attention/key/bias", "attention/value/kernel", "attention/value/bias",
        "attention/output/kernel", "attention/output/bias",
        "attention_layer_norm/gamma", "attention_layer_norm/beta",
        "ffn/intermediate/kernel", "ffn/intermediate/bias", "ffn/output/kernel", "ffn/output/bias",
        "ffn_layer_norm/gamma", "ffn_layer_norm/beta")
] + ["pooler/kernel", "pooler/bias"]


def test_bert_tiny_weight_paths_are_pinned():
    """The weight names are the checkpoint map's left column: changing one breaks loading."""
    assert [w.path for w in kb.bert_tiny().weights] == BERT_TINY_WEIGHTS


def test_albert_shares_one_block_across_layers():
    encoder = kb.albert_base(num_hidden_layers=3)
    paths = [w.path for w in encoder.weights]
    assert "embedding_projection/kernel" in paths
    assert sorted({p.split("/")[0] for p in paths if p.startswith("group_")}) == ["group_0"]
    assert encoder.count_params() == REFERENCE_COUNTS["albert_base"]


def _google_weights(encoder):
    """Our weights under Google's TF1 names, for the NumPy oracle."""
    names = {
        "token_embedding/embeddings": "bert/embeddings/word_embeddings",
        "position_embedding/embeddings": "bert/embeddings/position_embeddings",
        "segment_embedding/embeddings": "bert/embeddings/token_type_embeddings",
        "embeddings_layer_norm/gamma": "bert/embeddings/LayerNorm/gamma",
        "embeddings_layer_norm/beta": "bert/embeddings/LayerNorm/beta",
        "pooler/kernel": "bert/pooler/dense/kernel", "pooler/bias": "bert/pooler/dense/bias",
    }
    per_layer = {
        "attention/query": "attention/self/query", "attention/key": "attention/self/key",
        "attention/value": "attention/self/value", "attention/output": "attention/output/dense",
        "attention_layer_norm": "attention/output/LayerNorm", "ffn/intermediate": "intermediate/dense",
        "ffn/output": "output/dense", "ffn_layer_norm": "output/LayerNorm",
    }
    out = {}
    for w in encoder.weights:
        if w.path in names:
            out[names[w.path]] = np.asarray(w)
            continue
        layer, rest = w.path.split("/", 1)
        prefix, var = rest.rsplit("/", 1)
        out[f"bert/encoder/{layer}/{per_layer[prefix]}/{var}"] = np.asarray(w)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("act", ["gelu", "gelu_tanh"])
def test_encoder_equals_numpy_bert(act):
    """The whole encoder equals an independent NumPy BERT on a padded batch (real positions)."""
    encoder = kb.bert_tiny(num_hidden_layers=2, hidden_act=act, vocab_size=200)
    ids = np.random.default_rng(1).integers(1, 200, (3, 8)).astype("int32")
    seg = np.array([[0] * 4 + [1] * 4, [0] * 8, [0, 0, 1, 1, 1, 0, 0, 0]], "int32")
    mask = harness.right_padded([8, 5, 2])
    out = encoder.predict_on_batch({"token_ids": ids, "segment_ids": seg, "padding_mask": mask})
    seq, pooled = numpy_bert.bert_forward(_google_weights(encoder), ids, seg, mask, 2, 2, 1e-12, act)
    for b, n in enumerate(mask.sum(1)):
        np.testing.assert_allclose(out["sequence_output"][b, :n], seq[b, :n], atol=1e-4)
    np.testing.assert_allclose(out["pooled_output"], pooled, atol=1e-4)


@pytest.mark.slow
def test_equals_keras_hub_bert_backbone_with_copied_weights():
    """bert_tiny and keras-hub's BertBackbone compute the same function (tanh GELU, as keras-hub)."""
    keras_hub = pytest.importorskip("keras_hub", reason="keras-hub is in the [test] extra")
    hub = keras_hub.models.BertBackbone(vocabulary_size=30522, num_layers=2, num_heads=2,
                                        hidden_dim=128, intermediate_dim=512, max_sequence_length=512)
    from keras_bert_lib.models.checkpoint_loading import encoder_from_keras_hub
    ours = encoder_from_keras_hub(hub)
    assert ours.config == kb.bert_tiny(hidden_act="gelu_tanh").config.replace(hidden_dropout_prob=0.1,
                                                                              attention_probs_dropout_prob=0.1)
    rng = np.random.default_rng(2)
    batch = {"token_ids": rng.integers(0, 30522, (4, 12)).astype("int32"),
             "segment_ids": (np.arange(12)[None] >= 6).repeat(4, 0).astype("int32"),
             "padding_mask": harness.right_padded([12, 9, 5, 1])}
    want, got = hub.predict_on_batch(batch), ours.predict_on_batch(batch)
    for b, n in enumerate(batch["padding_mask"].sum(1)):
        np.testing.assert_allclose(got["sequence_output"][b, :n], want["sequence_output"][b, :n], atol=1e-5)
    np.testing.assert_allclose(got["pooled_output"], want["pooled_output"], atol=1e-5)


@pytest.mark.slow
def test_hidden_states_and_attention_probs_on_request():
    encoder = kb.bert_tiny(num_hidden_layers=3, output_hidden_states=True, output_attentions=True)
    batch = {"token_ids": INPUTS["token_ids"], "segment_ids": np.zeros((2, 6), "int32"),
             "padding_mask": MASK}
    out = encoder.predict_on_batch(batch)
    assert out["hidden_states"].shape == (2, 4, 6, 128)
    assert out["attention_probs"].shape == (2, 3, 2, 6, 6)
    np.testing.assert_allclose(out["hidden_states"][:, -1], out["sequence_output"], atol=0)
    assert np.all(out["attention_probs"][1, :, :, :, 4:] == 0), "padded keys got attention"
    np.testing.assert_allclose(out["attention_probs"].sum(-1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_distilbert_ignores_segment_ids_and_has_no_pooler():
    encoder = kb.distilbert_base(num_hidden_layers=1)
    a = encoder.predict_on_batch({"token_ids": INPUTS["token_ids"], "segment_ids": np.zeros((2, 6), "int32"),
                                  "padding_mask": MASK})
    b = encoder.predict_on_batch({"token_ids": INPUTS["token_ids"], "segment_ids": np.ones((2, 6), "int32"),
                                  "padding_mask": MASK})
    assert set(a) == {"sequence_output"}
    np.testing.assert_array_equal(a["sequence_output"], b["sequence_output"])


@pytest.mark.slow
def test_roberta_positions_start_at_padding_idx_plus_one():
    encoder = kb.roberta_base(num_hidden_layers=1)
    table = np.asarray(encoder.get_layer("position_embedding").embeddings)
    x = np.zeros((1, 3, 768), "float32")
    np.testing.assert_array_equal(np.asarray(encoder.get_layer("position_embedding")(x))[0], table[2:5])


def test_text_longer_than_the_model_takes_is_refused_with_both_lengths():
    encoder = kb.bert_tiny(max_position_embeddings=8)
    batch = {k: np.ones((1, 9), "int32") for k in ("token_ids", "segment_ids", "padding_mask")}
    with pytest.raises(ValueError, match="The inputs have 9 positions but the encoder takes at most 8"):
        encoder(batch)
    # The layer itself says the same where the encoder's checks cannot see values (a traced graph).
    with pytest.raises(ValueError, match="has 9 positions but this PositionEmbedding takes at most 8"):
        encoder.get_layer("position_embedding")(np.zeros((1, 9, 128), "float32"))


@pytest.mark.slow
def test_documented_inference_call_is_one_xla_program_and_takes_bool_masks():
    """predict_on_batch runs compiled with XLA by default (not eagerly); bool masks equal int masks."""
    encoder = kb.bert_tiny(num_hidden_layers=1)
    assert encoder.jit_compile is True
    batch = {"token_ids": INPUTS["token_ids"], "segment_ids": np.zeros((2, 6), "int32"), "padding_mask": MASK}
    as_int = encoder.predict_on_batch(batch)
    import tensorflow as tf
    # Keras wraps the step in tf.function(jit_compile=encoder.jit_compile): a graph, never eager.
    assert isinstance(encoder.predict_function, tf.types.experimental.PolymorphicFunction)
    as_bool = encoder.predict_on_batch({**batch, "padding_mask": MASK.astype(bool)})
    np.testing.assert_allclose(as_bool["sequence_output"], as_int["sequence_output"], atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SPECS))
def test_output_range_gives_the_full_graphs_cls_row_pooler_and_gradients(name):
    """`encoder(x, output_range=1)`: the last block computes [CLS] alone; its row, the pooler and
    every weight's gradient are the full graph's (a classifier trains on the same numbers)."""
    import tensorflow as tf

    encoder = BertEncoder(**{**TINY, **SPECS[name].init_kwargs})
    batch = {**SPECS[name].inputs, "padding_mask": MASK}
    full, first = encoder(batch), encoder(batch, output_range=1)
    assert first["sequence_output"].shape == (2, 1, 16) and set(first) == set(full)
    np.testing.assert_allclose(np.asarray(first["sequence_output"]), np.asarray(full["sequence_output"])[:, :1],
                               atol=1e-6)
    if "pooled_output" in full:
        np.testing.assert_allclose(np.asarray(first["pooled_output"]), np.asarray(full["pooled_output"]), atol=1e-6)

    def gradients(output_range):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.sin(encoder(batch, output_range=output_range)["sequence_output"][:, 0]))
        return tape.gradient(loss, encoder.trainable_variables)

    for variable, want, got in zip(encoder.trainable_variables, gradients(None), gradients(1)):
        want, got = (tf.convert_to_tensor(g) if g is not None else None for g in (want, got))
        if want is None:  # the pooler's: the loss reads the sequence output
            assert got is None, variable.path
            continue
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5, err_msg=variable.path)


def test_output_range_pooler_equals_numpy_bert_and_is_refused_with_every_layers_outputs():
    encoder = kb.bert_tiny(num_hidden_layers=2, vocab_size=200)
    ids = np.random.default_rng(3).integers(1, 200, (3, 8)).astype("int32")
    seg, mask = np.zeros((3, 8), "int32"), harness.right_padded([8, 5, 2])
    got = encoder({"token_ids": ids, "segment_ids": seg, "padding_mask": mask}, output_range=1)
    seq, pooled = numpy_bert.bert_forward(_google_weights(encoder), ids, seg, mask, 2, 2, 1e-12, "gelu")
    np.testing.assert_allclose(np.asarray(got["sequence_output"])[:, 0], seq[:, 0], atol=1e-4)
    np.testing.assert_allclose(np.asarray(got["pooled_output"]), pooled, atol=1e-4)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=rf"output_range={bad!r}: pass how many first positions"):
            encoder({"token_ids": ids, "segment_ids": seg, "padding_mask": mask}, output_range=bad)
    every = kb.bert_tiny(num_hidden_layers=1, output_hidden_states=True)
    with pytest.raises(ValueError, match="output_range computes the last block's first positions only"):
        every({"token_ids": ids, "segment_ids": seg, "padding_mask": mask}, output_range=1)
