"""with_dtype: the bfloat16 serving copy of an encoder or task model — bfloat16 variables in the
encoder, float32 heads, the outputs of the mixed_bfloat16 model it came from, half the bytes."""

import numpy as np
import pytest

from keras_bert_lib import (
    CrossEncoder,
    SentenceEmbedder,
    SpanQuestionAnswerer,
    TextClassifier,
    TokenClassifier,
    bert_tiny,
)
from keras_bert_lib.runtime import with_dtype

IDS = {"token_ids": np.array([[2, 7, 9, 3, 0], [2, 5, 3, 0, 0]], "int32"),
       "segment_ids": np.zeros((2, 5), "int32"), "padding_mask": np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]], "int32")}


def _bytes(model):
    return sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in model.weights)


@pytest.mark.slow
def test_a_bfloat16_copy_of_a_mixed_encoder_computes_what_it_computed_from_half_the_bytes():
    mixed = bert_tiny(dtype="mixed_bfloat16", vocab_size=64)
    serving = with_dtype(mixed, "bfloat16")
    assert {v.dtype for v in serving.weights} == {"bfloat16"}
    assert _bytes(serving) * 2 == _bytes(mixed)
    want, got = (np.asarray(m.predict_on_batch(IDS)["pooled_output"], "float32") for m in (mixed, serving))
    cosine = (want * got).sum(-1) / np.linalg.norm(want, axis=-1) / np.linalg.norm(got, axis=-1)
    assert cosine.min() > 0.999, cosine
    assert serving.get_config() == {**mixed.get_config(), "dtype": serving.get_config()["dtype"]}
    assert serving.get_config()["dtype"]["config"]["name"] == "bfloat16"


@pytest.mark.slow
def test_a_task_models_copy_keeps_its_head_in_float32_and_its_labels():
    classifier = TextClassifier(bert_tiny(vocab_size=64), 3, dropout=0.0)
    serving = with_dtype(classifier, "bfloat16")
    assert type(serving) is TextClassifier and serving.num_classes == 3
    assert serving.encoder.token_embedding.embeddings.dtype == "bfloat16"
    assert {v.dtype for v in serving.head.weights} == {"float32"}
    want, got = (np.asarray(m.predict_on_batch(IDS), "float32") for m in (classifier, serving))
    assert (want.argmax(-1) == got.argmax(-1)).all() and np.abs(want - got).max() < 0.02


def test_a_model_without_a_bert_encoder_is_refused_by_name():
    import keras

    with pytest.raises(TypeError, match="Sequential"):
        with_dtype(keras.Sequential([keras.layers.Dense(2)]), "bfloat16")


@pytest.mark.parametrize("cls,kwargs", [
    (SentenceEmbedder, {}), (CrossEncoder, {"dropout": 0.0}), (SpanQuestionAnswerer, {}),
    (TokenClassifier, {"labels": ["O", "B-X", "I-X"], "dropout": 0.0}),
], ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.slow
def test_every_task_model_has_a_bfloat16_copy_with_its_outputs(cls, kwargs):
    import keras

    model = cls(bert_tiny(vocab_size=64), **kwargs)
    serving = with_dtype(model, "bfloat16")
    assert type(serving) is type(model) and serving.encoder.token_embedding.embeddings.dtype == "bfloat16"
    want, got = (keras.tree.map_structure(lambda t: np.asarray(t, "float32"), m.predict_on_batch(IDS))
                 for m in (model, serving))
    for a, b in zip(keras.tree.flatten(want), keras.tree.flatten(got)):
        assert a.shape == b.shape and np.abs(a - b).max() < 0.05 * max(1.0, np.abs(a).max()), np.abs(a - b).max()
