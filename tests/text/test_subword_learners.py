"""The families' own vocabularies learned from a corpus: ALBERT's SentencePiece model (read back
by the sentencepiece package) and RoBERTa's byte-level BPE (read back by HuggingFace tokenizers)
tokenize as those libraries do, and their word starts drive whole-word masking in pre-training."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lib.data import build_pretraining_datasets
from keras_bert_lib.text.subword_learners import learn_byte_pairs, learn_sentencepiece

pytest.importorskip("sentencepiece", reason="sentencepiece is in the [train] extra")
pytest.importorskip("tokenizers", reason="tokenizers is in the [train] extra")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, reference_lines):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    # Documents of a few sentences, separated by blank lines (read_documents' format).
    lines = [line.strip() for line in reference_lines[:1200] if len(line.split()) > 3]
    path.write_text("\n\n".join("\n".join(lines[i:i + 4]) for i in range(0, len(lines), 4)) + "\n", encoding="utf-8")
    return path, lines


def test_albert_vocabulary_is_a_sentencepiece_model_with_alberts_ids(corpus, tmp_path):
    import sentencepiece

    path, lines = corpus
    tokenizer = learn_sentencepiece(path, 1500, tmp_path / "spiece.model")
    processor = sentencepiece.SentencePieceProcessor(model_file=str(tmp_path / "spiece.model"))
    assert [processor.id_to_piece(i) for i in range(5)] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    assert (tokenizer.pad_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id) == (0, 2, 3, 4)
    texts = [" ".join(line.split()) for line in lines[:300]]
    normalized = [t.decode() for t in tokenizer.normalize(tf.constant(texts)).numpy()]
    assert tokenizer(tf.constant(texts)).to_list() == [processor.encode(t) for t in normalized]
    starts = tokenizer.word_starts()
    assert starts[processor.piece_to_id("▁the")] and not starts[processor.piece_to_id("s")]


def test_roberta_vocabulary_is_byte_level_bpe_read_by_tokenizers(corpus, tmp_path):
    from tokenizers import ByteLevelBPETokenizer

    path, lines = corpus
    tokenizer = learn_byte_pairs(path, 1200, str(tmp_path))
    reference = ByteLevelBPETokenizer(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"),
                                      add_prefix_space=True)
    assert [tokenizer.id_to_token(i) for i in range(5)] == ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    texts = lines[:300] + ["Ünïcödé 東京 and  spaces\there"]
    assert tokenizer(tf.constant(texts)).to_list() == [e.ids for e in reference.encode_batch(texts)]
    first = tokenizer(["sentence start"]).to_list()[0][0]
    assert tokenizer.id_to_token(first).startswith("Ġ") and tokenizer.word_starts()[first]


@pytest.mark.slow
@pytest.mark.parametrize("family", ["albert", "roberta"])
def test_pretraining_data_packs_and_masks_whole_words_by_the_familys_word_starts(corpus, tmp_path, family):
    path, _ = corpus
    tokenizer = (learn_sentencepiece(path, 1500, tmp_path / "spiece.model") if family == "albert"
                 else learn_byte_pairs(path, 1200, str(tmp_path)))
    data = build_pretraining_datasets([str(path)], tokenizer, max_seq_length=48, max_predictions=12,
                                      whole_word_masking=True, dupe_factor=1, batch_size=16, verbose=False,
                                      sentence_task="sop" if family == "albert" else "nsp")
    inputs, labels, weights = next(iter(data.held_out))
    ids, mask = inputs["token_ids"].numpy(), inputs["padding_mask"].numpy().astype(bool)
    assert (ids[:, 0] == tokenizer.cls_id).all()
    if family == "roberta":  # <s> A </s></s> B </s>, one segment
        assert inputs["segment_ids"].numpy().max() == 0
        assert ((ids == tokenizer.sep_id) & mask).sum(1).min() == 3
    else:
        assert inputs["segment_ids"].numpy().max() == 1
    # Every masked position's word is masked whole: the original tokens at the chosen positions
    # group into words that start where word_starts says.
    starts = tokenizer.word_starts()
    positions = inputs["masked_positions"].numpy()
    for row in range(ids.shape[0]):
        chosen = positions[row][weights["mlm_logits"].numpy()[row] > 0]
        original = ids[row].copy()
        original[chosen] = labels["mlm_logits"].numpy()[row][weights["mlm_logits"].numpy()[row] > 0]
        word = np.cumsum(starts[original] | ~mask[row])
        picked = np.zeros_like(mask[row])
        picked[chosen] = True
        for w in np.unique(word[picked]):
            inside = (word == w) & mask[row] & ~np.isin(original, tokenizer.special_ids)
            assert picked[inside].all() or picked.sum() >= 12, "a word was masked only in part"
