"""TokenEmbedding, SegmentEmbedding and PositionEmbedding."""

import math

import numpy as np
import pytest

from keras_bert_lib.layers import PositionEmbedding, SegmentEmbedding, TokenEmbedding
from tests import harness

TOKEN_SPEC = harness.LayerSpec(
    cls=TokenEmbedding,
    init_kwargs=dict(vocab_size=20, embedding_size=8, initializer_range=0.1),
    inputs={"token_ids": harness.token_ids(batch=2, length=6, vocab=20)},
    expected_output_shape=(2, 6, 8),
    expected_num_trainable_weights=1,
)
SEGMENT_SPEC = harness.LayerSpec(
    cls=SegmentEmbedding,
    init_kwargs=dict(type_vocab_size=3, embedding_size=8, initializer_range=0.1),
    inputs={"segment_ids": np.array([[0, 0, 1, 1, 2, 2], [0, 1, 2, 0, 1, 2]], "int32")},
    expected_output_shape=(2, 6, 8),
    expected_num_trainable_weights=1,
)
POSITION_SPEC = harness.LayerSpec(
    cls=PositionEmbedding,
    init_kwargs=dict(max_length=12, position_offset=2, initializer_range=0.1),
    inputs={"x": harness.hidden_states(batch=2, length=6, hidden=8)},
    expected_output_shape=(2, 6, 8),
    expected_num_trainable_weights=1,
)
SINUSOID_SPEC = harness.LayerSpec(
    cls=PositionEmbedding,
    init_kwargs=dict(max_length=12, embedding_type="sinusoidal"),
    inputs={"x": harness.hidden_states(batch=2, length=6, hidden=8)},
    expected_output_shape=(2, 6, 8),
    expected_num_trainable_weights=0,
)
SPECS = {"token": TOKEN_SPEC, "segment": SEGMENT_SPEC, "position": POSITION_SPEC,
         "sinusoid": SINUSOID_SPEC}


@pytest.mark.parametrize("check", harness.checks_for(TOKEN_SPEC), ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", SPECS)
def test_contract(name, check):
    check(SPECS[name])


def test_lookups_are_rows_of_the_tables():
    tok = TokenEmbedding(20, 8)
    ids = np.array([[3, 7, 3]])
    np.testing.assert_array_equal(np.asarray(tok(ids))[0], np.asarray(tok.embeddings)[[3, 7, 3]])
    seg = SegmentEmbedding(2, 8)
    np.testing.assert_allclose(np.asarray(seg(np.array([[1, 0]])))[0],
                               np.asarray(seg.embeddings)[[1, 0]], atol=1e-7)
    pos = PositionEmbedding(10, position_offset=2)
    out = np.asarray(pos(np.zeros((2, 3, 8), "float32")))
    np.testing.assert_array_equal(out[1], np.asarray(pos.embeddings)[2:5])


def test_tied_logits_are_the_transposed_table():
    tok = TokenEmbedding(20, 8)
    x = harness.hidden_states(1, 2, 8)
    tok.build()
    np.testing.assert_allclose(np.asarray(tok.logits(x)), x @ np.asarray(tok.embeddings).T, atol=1e-5)


def test_sinusoids_follow_vaswani():
    """PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(·); no weights."""
    layer = PositionEmbedding(max_length=50, embedding_type="sinusoidal")
    out = np.asarray(layer(np.zeros((1, 7, 6), "float32")))[0]
    p, i = np.arange(7)[:, None], np.arange(3)[None, :]
    angle = p / 10000 ** (2 * i / 6)
    np.testing.assert_allclose(out[:, 0::2], np.sin(angle), atol=1e-5)
    np.testing.assert_allclose(out[:, 1::2], np.cos(angle), atol=1e-5)
    assert layer.weights == [] and math.isclose(out[0, 1], 1.0)


def test_any_length_up_to_the_maximum_and_no_further():
    layer = PositionEmbedding(max_length=8, position_offset=2)
    assert layer(np.zeros((1, 6, 4), "float32")).shape == (1, 6, 4)
    assert layer(np.zeros((1, 1, 4), "float32")).shape == (1, 1, 4)
    with pytest.raises(ValueError, match="has 7 positions but this PositionEmbedding takes at most 6"):
        layer(np.zeros((1, 7, 4), "float32"))


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="embedding_type='rotary'"):
        PositionEmbedding(8, embedding_type="rotary")
    with pytest.raises(ValueError, match="type_vocab_size=0"):
        SegmentEmbedding(0, 8)
