"""keras-hub presets: a `BertBackbone` or `AlbertBackbone` preset (a local folder, a Kaggle
handle, a keras-hub preset name or an `hf://` repository) read as a checkpoint of our encoder.

keras-hub saves a preset as `config.json` (the backbone's Keras config), `model.weights.h5`,
`tokenizer.json` and `assets/tokenizer/vocabulary.txt`. keras-hub reads it (`Backbone.from_preset`),
and its weights are renamed by `name_maps.KERAS_HUB_*`; keras-hub keeps attention kernels per head,
(H, N, Dh) and (N, Dh, H), which `backbone_tensors` merges into our (H, H). keras-hub's BERT and
ALBERT use the tanh GELU, so the encoder has `hidden_act="gelu_tanh"` and computes what the preset
computes. keras-hub is needed only here: `pip install "keras-bert-lib[keras-hub]"`.
"""

import os
import re

import numpy as np

from keras_bert_lib.config import EncoderConfig
from keras_bert_lib.file_checks import read_json

# keras-hub backbone class -> our model type.
BACKBONES = {"BertBackbone": "bert", "AlbertBackbone": "albert"}
# The files of a preset that an encoder and its tokenizer need (keras-hub's names).
PRESET_FILES = ("config.json", "model.weights.h5", "metadata.json", "tokenizer.json",
                "assets/tokenizer/vocabulary.txt", "assets/tokenizer/vocabulary.spm")
REQUIRED_FILES = ("config.json", "model.weights.h5")
VOCABULARY = os.path.join("assets", "tokenizer", "vocabulary.txt")
_PRESET_NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")


def is_preset_folder(path):
    """Whether `path` is a folder that keras-hub saved (`save_to_preset`): its `config.json` is a
    keras-hub class's Keras config.

    Example:
        ```python
        from keras_bert_lib.checkpoints.keras_hub_presets import is_preset_folder
        is_preset_folder(".")   # False
        ```
    """
    config = os.path.join(os.fspath(path), "config.json")
    if not os.path.isfile(config):
        return False
    data = read_json(config)
    return isinstance(data, dict) and str(data.get("registered_name", "")).startswith("keras_hub>")


def is_preset_handle(name):
    """Whether `name` (not a local path) reads as a keras-hub preset to fetch: a Kaggle handle
    (`kaggle://keras/bert/keras/bert_base_en_uncased/3`) or a name of the `snake_case` kind that
    keras-hub gives its built-in presets (`bert_base_en_uncased`); whether keras-hub knows the
    name is asked only when it is fetched.

    Example:
        ```python
        from keras_bert_lib.checkpoints.keras_hub_presets import is_preset_handle
        is_preset_handle("kaggle://keras/bert/keras/bert_tiny_en_uncased/3")   # True
        ```
    """
    name = os.fspath(name)
    return not os.path.exists(name) and (name.startswith("kaggle://") or bool(_PRESET_NAME.match(name)))


def _keras_hub(name):
    try:
        import keras_hub
    except ImportError:
        raise ImportError(f"{name} is a keras-hub preset, and reading one needs keras-hub: "
                          'pip install "keras-bert-lib[keras-hub]" (or pass a HuggingFace or Google '
                          "checkpoint folder).") from None
    return keras_hub


def _kaggle_cached(handle, newest=False):
    """The local folder of Kaggle model handle `handle` in kagglehub's cache, or None. A handle
    without a version is cached only with `newest` (offline: the highest version there)."""
    from kagglehub.config import get_cache_folder

    parts = handle.removeprefix("kaggle://").split("/")
    base = os.path.join(get_cache_folder(), "models", *parts[:4])
    versions = [parts[4]] if len(parts) == 5 else sorted(
        (v for v in (os.listdir(base) if newest and os.path.isdir(base) else []) if v.isdigit()), key=int)[-1:]
    for version in versions:
        folder = os.path.join(base, version)
        if all(os.path.isfile(os.path.join(folder, f)) for f in REQUIRED_FILES):
            return folder
    return None


def fetch_preset(name):
    """The local folder of keras-hub preset `name`: a built-in name (`bert_base_en_uncased`) or a
    Kaggle handle, fetched by keras-hub into kagglehub's cache (`KAGGLEHUB_CACHE`, by default
    `~/.cache/kagglehub`) unless it is there. With `HF_HUB_OFFLINE=1` (this library's offline
    switch) nothing is requested: a cached version loads, anything else fails at once.

    Raises:
        ValueError: not a keras-hub preset; offline and not cached (with where it looked and how
            to fill the cache); the download failed.
        ImportError: keras-hub is not installed.
    Example:
        ```python
        from keras_bert_lib.checkpoints.keras_hub_presets import fetch_preset
        # fetch_preset("bert_tiny_en_uncased")   # ~/.cache/kagglehub/models/keras/bert/keras/bert_tiny_en_uncased/3
        ```
    """
    handle = name
    if not name.startswith("kaggle://"):
        unknown = (f"{name}: no such local folder, and not a checkpoint name this library knows (a HuggingFace id "
                   "is org/name; docs/checkpoints.md lists the names)")
        try:
            import keras_hub
        except ImportError:
            raise ValueError(f"{unknown}. A keras-hub preset name is read with keras-hub installed: "
                             'pip install "keras-bert-lib[keras-hub]".') from None
        known = {**keras_hub.models.BertBackbone.presets, **keras_hub.models.AlbertBackbone.presets}
        if name not in known:
            raise ValueError(f"{unknown}, nor a keras-hub BERT or ALBERT preset "
                             "(keras_hub.models.BertBackbone.presets lists those).")
        handle = known[name]["kaggle_handle"]
    else:
        _keras_hub(name)
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    cached = _kaggle_cached(handle, newest=offline)
    if cached:
        return cached
    if offline:
        from kagglehub.config import get_cache_folder

        raise ValueError(f"{name}: a keras-hub preset not in kagglehub's cache ({get_cache_folder()}) while "
                         f"HF_HUB_OFFLINE is set. On a connected machine, fill the cache with `keras-bert download "
                         f"{name}`, then copy that folder here (or point KAGGLEHUB_CACHE at it).")
    from keras_hub.src.utils.preset_utils import get_file  # keras-hub's own fetcher (Kaggle, GCS, HF, ...)

    folder = None
    for file in PRESET_FILES:
        try:
            path = get_file(handle, file)
        except FileNotFoundError:
            if file in REQUIRED_FILES:
                raise ValueError(f"{name} ({handle}) has no {file}: not a keras-hub backbone preset.") from None
            continue
        except Exception as e:  # kagglehub's and the network's own errors: said in one line, with the name
            raise ValueError(f"{name}: keras-hub could not fetch {file} of {handle}: {str(e).splitlines()[0]}") from e
        folder = folder or os.path.dirname(path)
    return folder


def encoder_config(data):
    """Our `EncoderConfig` (and model type) for a keras-hub backbone's Keras config (the dict of
    `config.json`, or `backbone.get_config()` wrapped as `{"class_name": ..., "config": ...}`).

    Example:
        ```python
        from keras_bert_lib.checkpoints.keras_hub_presets import encoder_config
        config, model_type = encoder_config({"class_name": "BertBackbone", "config": {
            "vocabulary_size": 30522, "num_layers": 2, "num_heads": 2, "hidden_dim": 128,
            "intermediate_dim": 512, "dropout": 0.1, "max_sequence_length": 512, "num_segments": 2}})
        ```
    """
    model_type = BACKBONES.get(data.get("class_name"))
    if model_type is None:
        raise ValueError(f"A keras-hub {data.get('class_name')} is not a BERT-family encoder this library reads "
                         f"(it reads {', '.join(BACKBONES)}).")
    c = data["config"]
    fields = dict(vocab_size=c["vocabulary_size"], hidden_size=c["hidden_dim"], num_hidden_layers=c["num_layers"],
                  num_attention_heads=c["num_heads"], intermediate_size=c["intermediate_dim"],
                  max_position_embeddings=c["max_sequence_length"], type_vocab_size=c.get("num_segments", 2),
                  hidden_dropout_prob=c.get("dropout", 0.1), attention_probs_dropout_prob=c.get("dropout", 0.1),
                  hidden_act="gelu_tanh", layer_norm_eps=1e-12)
    if model_type == "albert":
        fields.update(embedding_size=c["embedding_dim"], num_hidden_groups=c.get("num_groups", 1),
                      inner_group_num=c.get("num_inner_repetitions", 1))
    return EncoderConfig(**fields), model_type


def backbone_tensors(backbone):
    """{keras-hub weight path: array} of a keras-hub backbone, attention kernels merged across heads
    ((H, N, Dh) -> (H, N·Dh), (N, Dh) -> (N·Dh,), (N, Dh, H) -> (N·Dh, H)) as our layers hold them.

    Example:
        ```python
        import keras_hub
        from keras_bert_lib.checkpoints.keras_hub_presets import backbone_tensors
        hub = keras_hub.models.BertBackbone(vocabulary_size=100, num_layers=1, num_heads=2, hidden_dim=8,
                                            intermediate_dim=16, max_sequence_length=16)
        backbone_tensors(hub)["transformer_layer_0/self_attention_layer/query/kernel"].shape   # (8, 8)
        ```
    """
    tensors = {}
    for weight in backbone.weights:
        value = np.asarray(weight)
        if "/self_attention_layer/" in weight.path:
            if weight.path.endswith("attention_output/kernel"):
                value = value.reshape(-1, value.shape[-1])
            elif value.ndim == 3:
                value = value.reshape(value.shape[0], -1)
            elif value.ndim == 2:
                value = value.reshape(-1)
        tensors[weight.path] = value
    return tensors


def read(folder):
    """(EncoderConfig, model type, tensors) of a keras-hub preset folder, through keras-hub's own
    loader (so sharded and future weight files read as keras-hub reads them).

    Example:
        ```python
        from keras_bert_lib.checkpoints.keras_hub_presets import read
        # config, model_type, tensors = read("bert_tiny_en_uncased/")   # a folder keras-hub saved
        ```
    """
    keras_hub = _keras_hub(folder)
    config, model_type = encoder_config(read_json(os.path.join(folder, "config.json")))
    backbone = keras_hub.models.Backbone.from_preset(folder)
    return config, model_type, backbone_tensors(backbone)


def tokenizer_settings(folder):
    """(vocabulary file, lowercase, strip_accents) of a keras-hub BERT preset folder, as its
    `tokenizer.json` says (keras-hub's BertTokenizer keeps accents unless told, where Google's
    uncased BERT strips them); None where it has no WordPiece vocabulary (ALBERT's is SentencePiece).

    Example:
        ```python
        from keras_bert_lib.checkpoints.keras_hub_presets import tokenizer_settings
        tokenizer_settings(".")   # None
        ```
    """
    vocabulary = os.path.join(folder, VOCABULARY)
    settings = os.path.join(folder, "tokenizer.json")
    if not os.path.isfile(vocabulary):
        return None
    config = read_json(settings)["config"] if os.path.isfile(settings) else {}
    return vocabulary, config.get("lowercase"), config.get("strip_accents")
