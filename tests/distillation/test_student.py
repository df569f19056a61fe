"""student_from_teacher copies the chosen blocks, the embeddings and the pooler: with every layer
kept the student computes the teacher's function, with some kept it equals the teacher's own
layers applied in that order, and the copies are independent of the teacher."""

import keras
import numpy as np
import pytest

from keras_bert_lib import albert_base, bert_tiny
from keras_bert_lib.distillation import student_from_teacher
from keras_bert_lib.distillation.student import DISTILBERT_LAYERS, spread_layers
from tests.models.test_encoder import INPUTS, MASK

FEED = {**INPUTS, "segment_ids": np.minimum(INPUTS["segment_ids"], 1), "padding_mask": MASK}


def _teacher(layers=4):
    return bert_tiny(vocab_size=50, num_hidden_layers=layers, max_position_embeddings=16,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.mark.slow
def test_keeping_every_layer_gives_the_teachers_outputs():
    teacher = _teacher()
    student = student_from_teacher(teacher, layers=[0, 1, 2, 3])
    for key, value in teacher(FEED).items():
        np.testing.assert_array_equal(student(FEED)[key], value)


def test_chosen_layers_run_in_order_on_the_teachers_embeddings():
    teacher = _teacher()
    student = student_from_teacher(teacher, layers=[0, 3])
    embed = keras.Model(teacher.inputs, teacher.get_layer("embeddings_dropout").output)
    x = embed(FEED)
    for name in ("layer_0", "layer_3"):  # the teacher's own blocks, skipping 1 and 2
        x = teacher.get_layer(name)(x, padding_mask=FEED["padding_mask"])
    np.testing.assert_allclose(student(FEED)["sequence_output"], x, atol=1e-6)
    np.testing.assert_allclose(student(FEED)["pooled_output"], teacher.get_layer("pooler")(x[:, 0]), atol=1e-6)
    assert student.config.num_hidden_layers == 2 and len(student.weights) == len(teacher.weights) - 2 * 16


@pytest.mark.slow
def test_the_copies_are_independent_and_bad_layer_lists_are_refused():
    teacher = _teacher(12)
    student = student_from_teacher(teacher)  # DistilBERT's 0, 2, 4, 7, 9, 11
    assert student.config.num_hidden_layers == 6
    np.testing.assert_array_equal(student.get_layer("layer_3").weights[0], teacher.get_layer("layer_7").weights[0])
    student.get_layer("layer_3").weights[0].assign(np.zeros(student.get_layer("layer_3").weights[0].shape))
    assert np.any(np.asarray(teacher.get_layer("layer_7").weights[0]) != 0)
    for bad in ([], [3, 1], [0, 12], [1, 1]):
        with pytest.raises(ValueError, match="must be increasing indices of the teacher's 12 layers"):
            student_from_teacher(teacher, bad)
    with pytest.raises(ValueError, match="shares its blocks"):
        student_from_teacher(albert_base(vocab_size=50, num_hidden_layers=2, embedding_size=8, hidden_size=16,
                                         num_attention_heads=2, intermediate_size=32), [0])


def test_the_default_layers_spread_over_the_teacher_as_distilbert_chose():
    assert spread_layers(12) == list(DISTILBERT_LAYERS)  # Sanh et al.'s 6 of 12
    assert spread_layers(6) == [0, 2, 5] and spread_layers(24, 4) == [0, 8, 15, 23] and spread_layers(4, 1) == [3]
    for n in range(1, 30):
        for keep in range(1, n + 1):
            layers = spread_layers(n, keep)
            assert len(set(layers)) == keep and layers == sorted(layers) and layers[-1] == n - 1
    with pytest.raises(ValueError, match="keep between 1 and 6"):
        spread_layers(6, 7)
