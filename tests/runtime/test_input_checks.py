"""Bad inputs fail on every way into the encoder, naming the input, the value and the range;
under XLA they would otherwise be clamped or cast without a word."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lib import BertPretrainer, bert_tiny, distilbert_base

GOOD = {"token_ids": np.array([[101, 7592, 102, 0]], "int32"), "segment_ids": np.zeros((1, 4), "int32"),
        "padding_mask": np.array([[1, 1, 1, 0]], "int32")}
BAD = [
    (
        {"token_ids": np.array([[101, 30522, 102, 0]], "int32")},
        r"token_ids holds 30522 at \[0, 1\]; valid ids are 0 … 30521",
    ),
    ({"token_ids": np.array([[101, -1, 102, 0]], "int32")}, r"token_ids holds -1 at \[0, 1\]"),
    (
        {"segment_ids": np.array([[0, 0, 2, 0]], "int32")},
        r"segment_ids holds 2 at \[0, 2\]; valid segment ids are 0 … 1",
    ),
    ({"token_ids": GOOD["token_ids"].astype("float32")}, "token_ids is float32; it must hold integers"),
    ({"padding_mask": np.array([[1, 0.5, 1, 0]], "float32")}, "padding_mask is float32"),
    ({"padding_mask": np.array([[1, 2, 1, 0]], "int32")}, "a padding mask holds 0 and 1 only"),
    ({"segment_ids": np.zeros((1, 3), "int32")}, r"segment_ids has shape \(1, 3\) but token_ids has \(1, 4\)"),
]
IDS = ["id-too-large", "id-negative", "segment-too-large", "float-ids", "half-mask", "mask-2", "shapes"]


@pytest.fixture(scope="module")
def encoder():
    return bert_tiny(num_hidden_layers=1)


@pytest.mark.parametrize("change,message", BAD, ids=IDS)
@pytest.mark.parametrize("way", ["predict_on_batch", "predict", "call", "evaluate", "fit"])
def test_every_way_in_names_the_bad_input(encoder, change, message, way):
    batch = {**GOOD, **change}
    run = {
        "predict_on_batch": lambda: encoder.predict_on_batch(batch),
        "predict": lambda: encoder.predict(batch, verbose=0),
        "call": lambda: encoder(batch),
        "evaluate": lambda: encoder.evaluate(batch, {"pooled_output": np.zeros((1, 128))}, verbose=0),
        "fit": lambda: encoder.fit(batch, {"pooled_output": np.zeros((1, 128))}, verbose=0),
    }[way]
    if way in ("evaluate", "fit"):
        encoder.compile(loss={"pooled_output": "mse"})
    with pytest.raises(ValueError, match=message):
        run()


@pytest.mark.slow
def test_a_tf_data_pipeline_is_checked_in_its_own_map(encoder):
    encoder.compile(loss={"pooled_output": "mse"})
    good = tf.data.Dataset.from_tensors((GOOD, {"pooled_output": np.zeros((1, 128), "float32")}))
    encoder.fit(good, verbose=0)  # passes
    bad = tf.data.Dataset.from_tensors(({**GOOD, "token_ids": np.array([[101, 40000, 102, 0]], "int32")},
                                        {"pooled_output": np.zeros((1, 128), "float32")}))
    with pytest.raises(tf.errors.InvalidArgumentError, match="token_ids holds a value >= 30522; vocab_size 30522"):
        encoder.fit(bad, verbose=0)


def test_a_pretrainers_masked_positions_must_index_the_sequence():
    pretrainer = BertPretrainer(bert_tiny(num_hidden_layers=1))
    with pytest.raises(ValueError, match=r"masked_positions holds 4 at \[0, 0\]; positions index the 4 tokens"):
        pretrainer.predict_on_batch({**GOOD, "masked_positions": np.array([[4]], "int32")})


@pytest.mark.slow
def test_distilbert_ignores_segment_ids_so_they_are_not_checked():
    out = distilbert_base(num_hidden_layers=1).predict_on_batch({**GOOD, "segment_ids": np.full((1, 4), 7, "int32")})
    assert out["sequence_output"].shape == (1, 4, 768)


@pytest.mark.slow
def test_good_inputs_pass_and_a_bool_mask_is_a_mask(encoder):
    assert encoder.predict_on_batch({**GOOD, "padding_mask": GOOD["padding_mask"].astype(bool)})[
        "pooled_output"].shape == (1, 128)


@pytest.mark.slow
@pytest.mark.parametrize("way", ["fit", "train_on_batch"])
def test_the_first_training_step_is_traced_once(way):
    """Keras builds the optimizer's slots inside the first trace without a strategy; those new
    variables make TensorFlow trace the whole step again. The mixin builds them first."""
    import keras

    from keras_bert_lib import TextClassifier

    classifier = TextClassifier(bert_tiny(num_hidden_layers=1), 2)
    classifier.compile(optimizer=keras.optimizers.AdamW(1e-4), jit_compile=False)
    created_in_a_trace = []

    def creator(next_creator, **kwargs):
        if tf.inside_function():
            created_in_a_trace.append(kwargs.get("name"))
        return next_creator(**kwargs)

    with tf.variable_creator_scope(creator):
        if way == "fit":
            classifier.fit(GOOD, np.array([1]), verbose=0)
        else:
            classifier.train_on_batch(GOOD, np.array([1]))
    assert classifier.optimizer.built
    assert created_in_a_trace == [], created_in_a_trace
