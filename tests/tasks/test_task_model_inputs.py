"""What a new user passes to a task model besides a clean batch: nothing, one string, string
labels, a label out of range, a text longer than the model. Each gets a result or one clear
message, never an error from inside Keras."""

import logging

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
from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "plot"]
LENGTH = 8


def _encoder():  # no dropout: two models given the same steps end with the same weights
    return bert_tiny(vocab_size=len(VOCAB), num_hidden_layers=1, hidden_size=16, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)


def _preprocessor():
    return BertPreprocessor(WordPieceTokenizer(VOCAB), sequence_length=LENGTH)


def _classifier():
    return TextClassifier(_encoder(), num_classes=2, preprocessor=_preprocessor(), class_names=["rotten", "fresh"],
                          dropout=0.0)


MODELS = {  # (model, an empty batch of its input, its output shapes after the batch axis)
    "classifier": (_classifier, [], {None: (2,)}),
    "embedder": (lambda: SentenceEmbedder(_encoder(), preprocessor=_preprocessor()), [], {None: (16,)}),
    "cross-encoder": (lambda: CrossEncoder(_encoder(), preprocessor=_preprocessor()), ([], []), {None: ()}),
    "tagger": (lambda: TokenClassifier(_encoder(), ["O", "B-X", "I-X"], preprocessor=_preprocessor()), [],
               {None: (LENGTH, 3)}),
    "question answerer": (lambda: SpanQuestionAnswerer(_encoder(), preprocessor=_preprocessor()), ([], []),
                          {"start_logits": (LENGTH,), "end_logits": (LENGTH,)}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
def test_an_empty_batch_gives_an_empty_result_of_the_models_shape(name):
    build, empty, shapes = MODELS[name]
    model = build()
    got = model.predict(empty, verbose=0)
    got = got if isinstance(got, dict) else {None: got}
    assert {k: v.shape for k, v in got.items()} == {k: (0, *s) for k, s in shapes.items()}
    assert all(v.dtype == np.float32 for v in got.values())
    ids = {k: np.zeros((0, LENGTH), "int32") for k in ("token_ids", "segment_ids", "padding_mask")}
    got = model.predict(ids, verbose=0)
    assert {k: v.shape for k, v in (got if isinstance(got, dict) else {None: got}).items()} == \
        {k: (0, *s) for k, s in shapes.items()}


@pytest.mark.slow
def test_the_task_methods_take_an_empty_list_too():
    tagger = MODELS["tagger"][0]()
    assert tagger.predict_tags([]) == [] and tagger.tag([]) == []
    assert MODELS["question answerer"][0]().answer([], []) == []
    assert MODELS["cross-encoder"][0]().rank("good film", []) == []
    assert _classifier().predict_labels([]) == []


@pytest.mark.slow
def test_one_string_is_a_batch_of_one():
    classifier = _classifier()
    one = classifier.predict("good film", verbose=0)
    assert one.shape == (1, 2)
    np.testing.assert_allclose(one, classifier.predict(["good film"], verbose=0), atol=1e-6)
    assert classifier.predict_labels("good film") == classifier.predict_labels(["good film"])
    assert len(classifier.predict_labels("good film")) == 1
    pair = MODELS["cross-encoder"][0]()
    assert pair.predict(("good film", "bad plot"), verbose=0).shape == (1,)


@pytest.mark.slow
def test_string_labels_train_through_the_class_names():
    """'fresh' is index 1 of class_names: one step on names equals one step on their indices."""
    texts = ["good film", "bad plot", "good plot", "bad film"]
    by_name, by_index = _classifier(), _classifier()
    by_index.set_weights(by_name.get_weights())
    by_name.fit(texts, ["fresh", "rotten", "fresh", "rotten"], epochs=1, shuffle=False, verbose=0)
    by_index.fit(texts, np.array([1, 0, 1, 0]), epochs=1, shuffle=False, verbose=0)
    for a, b in zip(by_name.get_weights(), by_index.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert by_name.evaluate(texts, ["fresh", "rotten", "fresh", "rotten"], verbose=0, return_dict=True)["loss"] == \
        pytest.approx(by_index.evaluate(texts, [1, 0, 1, 0], verbose=0, return_dict=True)["loss"])


@pytest.mark.parametrize("labels, message", [
    (["fresh", "meh"], r"Label 'meh' \(row 1\) is not one of the class_names \['rotten', 'fresh'\]"),
    ([0, 2], r"Label 2 \(row 1\) is outside the classes 0 … 1 \(num_classes=2\)"),
    ([-1, 0], r"Label -1 \(row 0\) is outside the classes 0 … 1"),
    ([0.5, 1.0], r"Label 0.5 \(row 0\) is outside the classes"),
])
def test_a_bad_label_is_named_with_its_row_before_any_step(labels, message):
    classifier = _classifier()
    before = [w.copy() for w in classifier.get_weights()]
    with pytest.raises(ValueError, match=message):
        classifier.fit(["good film", "bad plot"], labels, epochs=1, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(before, classifier.get_weights()))
    assert classifier.optimizer.iterations.numpy() == 0


def test_string_labels_need_class_names():
    classifier = TextClassifier(_encoder(), num_classes=2, preprocessor=_preprocessor())
    with pytest.raises(ValueError, match="has no class_names; build it with class_names"):
        classifier.fit(["good film", "bad plot"], ["fresh", "rotten"], verbose=0)


@pytest.mark.slow
def test_texts_longer_than_the_model_are_cut_with_one_warning_that_counts_them(caplog):
    classifier = _classifier()
    long, short = "good film " * 5, "good film"  # 10 pieces + [CLS] [SEP] > 8; 2 + 2 fit
    with caplog.at_level(logging.WARNING):
        got = classifier.predict([long, short, long], verbose=0)
    warnings = [r.getMessage() for r in caplog.records if "were cut" in r.getMessage()]
    assert warnings == ["2 of 3 texts are longer than the model's 8 tokens and were cut to fit "
                        "(BertPreprocessor(sequence_length=...) takes more, up to the encoder's 16 positions)."]
    # cut, as BERT's packing does: the long text gives what its first 6 pieces give
    np.testing.assert_allclose(got[0], classifier.predict(["good film " * 3], verbose=0)[0], atol=1e-6)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        classifier.predict([short, "bad plot"], verbose=0)
    assert not [r for r in caplog.records if "were cut" in r.getMessage()]
