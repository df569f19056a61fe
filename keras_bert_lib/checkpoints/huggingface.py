"""HuggingFace checkpoints: `config.json` beside `model.safetensors` (no torch needed)."""

import json
import os

import numpy as np

from keras_bert_lib.atomic_write import default_mode
from keras_bert_lib.checkpoints.lazy_tensors import LazyTensors
from keras_bert_lib.config import HF_SAME_ARCHITECTURE, config_from_hf_json
from keras_bert_lib.file_checks import read_json


def find(path):
    """(config file, safetensors file) for a folder or a .safetensors path, or None.

    A folder holding only `pytorch_model.bin` is refused: reading it means unpickling, which
    runs code from the file.
    """
    folder = path if os.path.isdir(path) else os.path.dirname(path) or "."
    weights = path if path.endswith(".safetensors") else os.path.join(folder, "model.safetensors")
    config = os.path.join(folder, "config.json")
    if not os.path.isfile(weights):
        if os.path.isfile(os.path.join(folder, "pytorch_model.bin")) or path.endswith(".bin"):
            raise ValueError(
                f"{folder} has pytorch_model.bin but no model.safetensors. A .bin file is a pickle, "
                "and unpickling runs whatever code it holds, so keras_bert_lib does not read it. "
                "Convert it once where you trust it: `from transformers import AutoModel; "
                f"AutoModel.from_pretrained({folder!r}).save_pretrained({folder!r}, "
                "safe_serialization=True)`, then load the folder again."
            )
        if os.path.isfile(os.path.join(folder, "model.safetensors.index.json")):
            raise ValueError(f"{folder} holds a sharded safetensors checkpoint; sharded files are not "
                             "supported yet: re-save it unsharded (save_pretrained(max_shard_size='100GB')).")
        return None
    if not os.path.isfile(config):
        raise ValueError(f"{weights} has no config.json beside it.")
    return config, weights


def read(config_file, weights_file):
    """(EncoderConfig, model_type, {name: array}) of a HuggingFace checkpoint; the arrays are read
    from the file as they are used (`LazyTensors`: the header gives the names and shapes)."""
    from safetensors import SafetensorError, safe_open

    raw = read_json(config_file)
    config = config_from_hf_json(raw)
    try:
        with safe_open(weights_file, framework="np") as f:
            shapes = {name: f.get_slice(name).get_shape() for name in f.keys()}
    except (SafetensorError, OSError, ValueError) as e:
        raise ValueError(f"{weights_file} is not a readable safetensors file (truncated or corrupt?): {e}") from None

    def load(name):
        with safe_open(weights_file, framework="np") as f:
            return f.get_tensor(name)

    model_type = HF_SAME_ARCHITECTURE.get(raw["model_type"], raw["model_type"])
    return config, model_type, LazyTensors(shapes, load)


def write(tensors, config, folder, architecture, extra_config=None):
    """Writes `tensors` ({HF name: array}) as model.safetensors with config.json into `folder`;
    `extra_config` adds fields (a classifier's `id2label`, …)."""
    from safetensors.numpy import save_file

    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()},
              os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    default_mode(os.path.join(folder, "model.safetensors"))  # save_file makes it 0600
    data = json.loads(config.to_hf_json())
    data["architectures"] = [architecture]
    data.update(extra_config or {})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
