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

# One worker runs the module, so that the four tokenizers are trained once.
pytestmark = pytest.mark.xdist_group("family_tokenizers")
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.parametrize("family", FAMILIES)
def test_character_offsets_are_huggingfaces_offset_mapping(folders, lines, family):
    """Word starts and spans come from SentencePiece's "▁" and byte-level BPE's "Ġ", mapped back
    to the original characters (accents stripped, quotes rewritten, odd spaces) as HuggingFace maps them."""
    folder, reference, _ = folders[family]
    ids, starts, ends = load_preprocessor(folder).tokenizer.tokenize_with_offsets(lines)
    for text, i, a, b in zip(lines, ids.to_list(), starts.to_list(), ends.to_list()):
        want = reference(text, add_special_tokens=False, return_offsets_mapping=True)
        assert (i, list(zip(a, b))) == (want["input_ids"], [tuple(x) for x in want["offset_mapping"]]), text


@pytest.mark.parametrize("family", FAMILIES)
def test_words_for_tagging_are_tokenized_as_huggingfaces_split_words(folders, family):
    from transformers import AutoTokenizer

    from keras_bert_lib.text import token_features

    folder = folders[family][0]
    reference = AutoTokenizer.from_pretrained(str(folder), add_prefix_space=True)  # RoBERTa's rule for words
    sentences = [["Zürich", "is", "naïve", "!"], ["Ελληνικά", "``quoted''", "12,345"], ["Don't", "stop"]]
    features = token_features(sentences, load_preprocessor(folder).tokenizer, 32)
    for n, words in enumerate(sentences):
        want = reference(words, is_split_into_words=True)
        width = len(want["input_ids"])
        assert features.inputs["token_ids"][n, :width].tolist() == want["input_ids"]
        word_ids = want.word_ids()
        firsts = [word_ids.index(w) for w in range(len(words))]
        assert features.first_piece[n, :len(words)].tolist() == firsts


@pytest.mark.parametrize("family", ("albert", "roberta"))
def test_question_answering_spans_map_back_to_the_answer_characters(folders, family):
    from keras_bert_lib.text import squad_features

    tokenizer = load_preprocessor(folders[family][0]).tokenizer
    contexts = ["The café opened in Zürich in 1921; its ``owner'' was naïve.", "Ελληνικά and русский are here too."]
    answers = [("Zürich", contexts[0].index("Zürich")), ("русский", contexts[1].index("русский"))]
    features = squad_features(["Where did it open?", "Which one?"], contexts, tokenizer, max_seq_length=24,
                              max_query_length=8, doc_stride=6, answers=answers)
    found = 0
    for row, k in enumerate(features.example_index):
        start, end = features.start_positions[row], features.end_positions[row]
        if start == 0:
            continue
        doc_start = features.windows[k][list(np.flatnonzero(features.example_index == k)).index(row)][0]
        before = features.query_lengths[k] + (3 if tokenizer.packing == "roberta" else 2)  # <s> q </s></s>
        first, last = start - before + doc_start, end - before + doc_start
        text = contexts[k][features.offsets[k][first][0]:features.offsets[k][last][1]]
        assert text == answers[k][0]
        found += 1
    assert found >= 2


@pytest.mark.slow
def test_a_multilingual_sentence_embedder_equals_mean_pooled_transformers(folders, lines):
    from keras_bert_lib import SentenceEmbedder

    folder, reference, model = folders["bert+xlmr"]
    texts = lines[:16]
    ours = SentenceEmbedder.from_checkpoint(folder, sequence_length=64).predict(texts, verbose=0)
    hidden, mask, _ = families.hf_outputs(reference, model, texts)
    pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    pooled /= np.linalg.norm(pooled, axis=-1, keepdims=True)
    assert np.max(np.abs(np.asarray(ours) - pooled)) < 1e-4


def test_an_older_tokenizer_json_with_metaspace_alone_keeps_its_trailing_piece(folders, lines, tmp_path):
    """xlm-roberta-base's tokenizer.json: the character map, runs of spaces made one, Metaspace
    alone (no whitespace split first), so a text that ends in a space ends with a lone "▁"."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    proto = families._proto((folders["bert+xlmr"][0] / "sentencepiece.bpe.model").read_bytes())
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    vocab += [(p.piece, p.score) for p in proto.pieces[3:]] + [("<mask>", 0.0)]
    reference = Tokenizer(models.Unigram(vocab, unk_id=3))
    reference.normalizer = normalizers.Sequence([normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
                                                 normalizers.Replace(Regex(" {2,}"), " ")])
    reference.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    reference.save(str(tmp_path / "tokenizer.json"))
    texts = lines[:200] + ["x  ", "\tx\n", " ", "a  b"]
    got = load_preprocessor(tmp_path).tokenizer(tf.constant(texts)).to_list()
    assert got == [e.ids for e in reference.encode_batch(texts, add_special_tokens=False)]
