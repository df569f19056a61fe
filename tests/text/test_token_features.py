"""Token-tagging features: each word's first word piece equals HuggingFace's `word_ids()` on real
text, tags sit on first pieces only, and a sentence too long for the model is named."""

import os

import numpy as np
import pytest

from keras_bert_lib.text import WordPieceTokenizer, token_features

transformers = pytest.importorskip("transformers", reason="transformers is in the [test] extra")


def test_first_pieces_equal_huggingfaces_word_ids(vocab_path, reference_lines):
    sentences = [line.split()[:10] for line in reference_lines[:300] if line.split()]
    sentences += [["Zürich", "—", "東京", "e\u0301te\u0301", "U.S.", "don't"], ["\u200b", "word"]]
    ours = token_features(sentences, WordPieceTokenizer(vocab_path), 128)
    hf = transformers.BertTokenizerFast.from_pretrained(os.path.dirname(vocab_path))
    for n, sentence in enumerate(sentences):
        encoded = hf(sentence, is_split_into_words=True, max_length=128, padding="max_length", truncation=True)
        np.testing.assert_array_equal(ours.inputs["token_ids"][n], encoded["input_ids"])
        word_ids = encoded.word_ids()
        want = [word_ids.index(i) if i in word_ids else -1 for i in range(len(sentence))]
        assert ours.first_piece[n, :len(sentence)].tolist() == want, sentence


def test_tags_sit_on_first_pieces_with_weight_one_and_long_sentences_are_named(vocab_path):
    tokenizer = WordPieceTokenizer(vocab_path)
    f = token_features([["Sinan", "visited", "Zürich"], ["ok"]], tokenizer, 8, tags=[["B-PER", "O", "B-LOC"], ["O"]],
                       labels=["O", "B-PER", "B-LOC"])
    assert [tokenizer.id_to_token(i) for i in f.inputs["token_ids"][0][:6]] == ["[CLS]", "sin", "##an", "visited",
                                                                                "zurich", "[SEP]"]
    assert f.labels[0].tolist() == [0, 1, 0, 0, 2, 0, 0, 0] and f.weights[0].tolist() == [0, 1, 0, 1, 1, 0, 0, 0]
    assert f.weights[1].tolist() == [0, 1, 0, 0, 0, 0, 0, 0]
    with pytest.raises(ValueError, match="Sentence 0 has 7 word pieces, more than the 6 that 8 tokens hold"):
        token_features([["Sinan", "visited", "Zürich", "and", "Ankara", "twice"]], tokenizer, 8)
    with pytest.raises(ValueError, match="tag 'B-ORG' is not one of the model's labels"):
        token_features([["ok"]], tokenizer, 8, tags=[["B-ORG"]], labels=["O"])
