"""Every family reads raw text: load_preprocessor(folder) gives HuggingFace's ids for SentencePiece
(ALBERT's unigram, XLM-R's fairseq ids), byte-level BPE (RoBERTa) and a BERT model behind XLM-R's
tokenizer, and raw text through load_checkpoint(folder) equals transformers' model."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lib import load_checkpoint, load_preprocessor
from keras_bert_lib.text import BertPreprocessor, BytePairTokenizer, SentencePieceTokenizer
from tests.text import families

pytest.importorskip("transformers", reason="transformers is in the [test] extra")
pytest.importorskip("sentencepiece", reason="sentencepiece comes with the [test] extra")

FAMILIES = ("albert", "xlm-roberta", "roberta", "bert+xlmr")
ODD = ["  leading and trailing  ", "tab\there\nnew line", "``Quoted'' and ''twice''", "ΣΊΣΥΦΟΣ σοφός",
       "a\u00a0b\u2003c\u3000d", "x" * 300, "Don't, it's 'quoted' — 12,345.67", "", " ", "ＦＵＬＬ ｗｉｄｔｈ",
       "naïve Café ÉCOLE", "東京 😀 Русский", "zero\u200bwidth", "e\u0301 composed"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    return {family: (root / family, *families.make_folder(root / family, family)) for family in FAMILIES}


@pytest.fixture(scope="module")
def lines(reference_lines):
    return ODD + families.WORLD + reference_lines[:600]


@pytest.mark.parametrize("family", FAMILIES)
def test_ids_are_huggingfaces(folders, lines, family):
    folder, reference, _ = folders[family]
    preprocess = load_preprocessor(folder, sequence_length=64)
    assert isinstance(preprocess.tokenizer, BytePairTokenizer if family == "roberta" else SentencePieceTokenizer)
    got = preprocess.tokenizer(tf.constant(lines)).to_list()
    want = [reference(t, add_special_tokens=False)["input_ids"] for t in lines]
    wrong = [(t, w, g) for t, w, g in zip(lines, want, got) if w != g]
    assert not wrong, f"{len(wrong)} of {len(lines)} lines differ, first {wrong[0][0]!r}: {wrong[0][1]} {wrong[0][2]}"


@pytest.mark.parametrize("family", FAMILIES)
def test_pairs_pack_and_truncate_as_huggingface(folders, lines, family):
    folder, reference, _ = folders[family]
    preprocess = load_preprocessor(folder, sequence_length=48)
    first, second = lines[0:300:2], lines[1:300:2]
    got = preprocess((tf.constant(first), tf.constant(second)))
    want = reference(first, second, truncation=True, max_length=48, padding="max_length", return_token_type_ids=True)
    mask = np.asarray(want["attention_mask"])
    width = got["token_ids"].shape[1]
    assert np.array_equal(got["padding_mask"].numpy(), mask[:, :width]) and mask[:, width:].sum() == 0
    ids = np.where(mask[:, :width] == 1, got["token_ids"].numpy(), -1)
    assert np.array_equal(ids, np.where(mask == 1, np.asarray(want["input_ids"]), -1)[:, :width])
    segments = got["segment_ids"].numpy()
    if family == "albert":  # [CLS] A [SEP] B [SEP]: segments 0 then 1, as token_type_ids
        assert np.array_equal(segments * mask[:, :width], np.asarray(want["token_type_ids"])[:, :width])
        assert segments.max() == 1
    else:  # <s> A </s></s> B </s>: one segment
        assert segments.max() == 0
        start, end = preprocess.tokenizer.cls_id, preprocess.tokenizer.sep_id
        assert (ids[:, 0] == start).all() and ((ids == end).sum(1) == 3).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_raw_text_through_the_checkpoint_equals_transformers(folders, lines, family):
    folder, reference, model = folders[family]
    encoder, preprocess = load_checkpoint(folder), load_preprocessor(folder, sequence_length=64)
    texts = lines[:24]
    ours = encoder(preprocess(texts))["sequence_output"]
    theirs, mask, _ = families.hf_outputs(reference, model, texts)
    assert families.max_difference(ours, theirs, mask) < 1e-4
    pairs = (lines[24:40:2], lines[25:40:2])
    ours = encoder(preprocess(pairs))["sequence_output"]
    theirs, mask, _ = families.hf_outputs(reference, model, *pairs)
    assert families.max_difference(ours, theirs, mask) < 1e-4


def test_a_fairseq_model_file_alone_gives_sentencepieces_ids_shifted(folders, lines, tmp_path):
    """Without tokenizer.json the SentencePiece model decides (what fairseq trained XLM-R with):
    its ids plus one, <s> <pad> </s> <unk> first and <mask> last."""
    import sentencepiece as spm

    folder = tmp_path / "xlmr"
    folder.mkdir()
    data = (folders["xlm-roberta"][0] / "sentencepiece.bpe.model").read_bytes()
    (folder / "sentencepiece.bpe.model").write_bytes(data)
    tokenizer = load_preprocessor(folder).tokenizer
    processor = spm.SentencePieceProcessor(model_proto=data)
    fairseq = {0: 3, 1: 0, 2: 2}
    texts = [" ".join(t.split()) for t in lines[:400]]  # sentencepiece's own whitespace rules
    want = [[fairseq.get(i, i + 1) for i in processor.encode(t)] for t in texts]
    assert tokenizer(tf.constant(texts)).to_list() == want
    assert tokenizer.vocabulary_size() == processor.get_piece_size() + 2
    assert (tokenizer.token_to_id("<pad>"), tokenizer.mask_id) == (1, processor.get_piece_size() + 1)


def test_albert_folder_settings_decide_the_normalisation(folders, tmp_path):
    data = (folders["albert"][0] / "spiece.model").read_bytes()
    text = ["Café ``Zürich''"]
    for settings in ({"do_lower_case": False}, {"keep_accents": True}):
        reference = families.albert_tokenizer(data, **settings)
        folder = tmp_path / "-".join(settings)
        folder.mkdir()
        (folder / "spiece.model").write_bytes(data)
        (folder / "tokenizer_config.json").write_text(__import__("json").dumps(settings))
        got = load_preprocessor(folder).tokenizer(text).to_list()[0]
        assert got == reference(text[0], add_special_tokens=False)["input_ids"]


@pytest.mark.parametrize("family", ("albert", "roberta"))
def test_tokenizers_save_in_a_keras_file_and_run_in_a_graph(folders, family, tmp_path):
    import keras

    preprocess = load_preprocessor(folders[family][0], sequence_length=32)
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, preprocess(inputs))
    path = str(tmp_path / "p.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    texts = tf.constant(["A first text.", "Zürich's ``second''  one"])
    want = preprocess(texts)
    got = tf.function(loaded)(texts)
    for key in want:
        assert np.array_equal(got[key].numpy(), want[key].numpy())
    assert isinstance(BertPreprocessor.from_config(preprocess.get_config()).tokenizer, type(preprocess.tokenizer))


def test_a_model_type_bert_folder_reads_the_tokenizer_its_files_hold(folders):
    folder = folders["bert+xlmr"][0]
    assert '"model_type": "bert"' in (folder / "config.json").read_text().replace(": ", ": ")
    assert not os.path.exists(folder / "vocab.txt")
    assert load_preprocessor(folder).tokenizer.packing == "roberta"
