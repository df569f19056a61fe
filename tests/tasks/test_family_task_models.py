"""Every task model takes a ModernBERT and a DeBERTa-v3 encoder from a HuggingFace folder, raw
strings in: the sentence embedder's vectors are transformers' mean-pooled states, and the
classifier, cross-encoder, tagger and span reader answer on raw text and train the blocks their
regime says (small random checkpoints saved by transformers, each with its tokenizer)."""

import numpy as np
import pytest

from keras_bert_lib import CrossEncoder, SentenceEmbedder, SpanQuestionAnswerer, TextClassifier, TokenClassifier
from tests.text import families

torch = pytest.importorskip("torch", reason="torch is in the [test] extra")
pytestmark = pytest.mark.slow
TEXTS = ["A wonderful, warm film.", "Dull and long, the plot goes nowhere at all and the acting is flat.", "Café"]


@pytest.fixture(scope="module", params=["modernbert", "deberta"])
def folder(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param)
    tokenizer, model = families.make_folder(path, request.param)
    return path, tokenizer, model


def test_the_sentence_embedder_gives_transformers_mean_pooled_states(folder):
    path, tokenizer, model = folder
    got = SentenceEmbedder.from_checkpoint(path, sequence_length=32).predict(TEXTS, verbose=0)
    batch = tokenizer(TEXTS, padding=True, truncation=True, max_length=32, return_tensors="pt")
    with torch.no_grad():
        states = model(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    want = ((states * mask).sum(1) / mask.sum(1)).numpy()
    want /= np.linalg.norm(want, axis=-1, keepdims=True)
    assert np.max(np.abs(got - want)) <= 1e-5


def test_every_task_model_answers_raw_text_and_trains_its_regime(folder):
    path = folder[0]
    classifier = TextClassifier.from_checkpoint(path, num_classes=2, sequence_length=32, trainable_blocks=1)
    assert classifier.predict(TEXTS, verbose=0).shape == (3, 2)
    encoder = classifier.encoder  # the top block trains, and ModernBERT's final norm above it
    expected = {w.path for w in encoder.get_layer(f"layer_{encoder.config.num_hidden_layers - 1}").weights}
    expected |= {w.path for w in encoder.weights if w.path.startswith("final_layer_norm/")}
    assert {w.path for w in encoder.trainable_weights} == expected
    ranked = CrossEncoder.from_checkpoint(path, sequence_length=48).rank("a warm film", TEXTS)
    assert sorted(r["index"] for r in ranked) == [0, 1, 2]
    sentences = [text.split() for text in TEXTS[:2]]
    tagger = TokenClassifier.from_checkpoint(path, labels=["O", "B-X", "I-X"], sequence_length=32)
    assert [len(t) for t in tagger.predict_tags(sentences)] == [len(words) for words in sentences]
    reader = SpanQuestionAnswerer.from_checkpoint(path, sequence_length=48)
    answer = reader.answer("What goes nowhere?", TEXTS[1])
    assert TEXTS[1][answer["start"]:answer["end"]] == answer["text"] != ""
