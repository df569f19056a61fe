"""Google's TF1 checkpoints: `bert_config.json` (or `albert_config.json`) beside `*.ckpt*`.

Reading and writing them needs TensorFlow (imported here only then), whatever the Keras backend.
"""

import glob
import os

import numpy as np

from keras_bert_lib.checkpoints.lazy_tensors import LazyTensors
from keras_bert_lib.config import EncoderConfig

CONFIG_NAMES = ("bert_config.json", "albert_config.json")
# The prefixes Google's releases use, in the order they are preferred when a folder has several.
PREFIXES = ("bert_model.ckpt", "model.ckpt-best", "model.ckpt")


def find(path):
    """(config file, checkpoint prefix) for a folder or a checkpoint prefix, or None."""
    folder, prefix = (path, None) if os.path.isdir(path) else (os.path.dirname(path) or ".", path)
    configs = [os.path.join(folder, n) for n in CONFIG_NAMES if os.path.isfile(os.path.join(folder, n))]
    if prefix is None:
        indexes = sorted(glob.glob(os.path.join(folder, "*.index")))
        prefixes = [i[: -len(".index")] for i in indexes]
        preferred = [p for name in PREFIXES for p in prefixes if os.path.basename(p) == name]
        if preferred:
            prefix = preferred[0]
        elif len(prefixes) == 1:
            prefix = prefixes[0]
        elif prefixes:
            raise ValueError(f"{folder} holds several checkpoints {[os.path.basename(p) for p in prefixes]}; "
                             "pass the prefix of the one to load (e.g. folder/model.ckpt-1000).")
    if prefix is None or not os.path.isfile(prefix + ".index"):
        return None
    if not configs:
        raise ValueError(f"{prefix} is a TF1 checkpoint but {folder} has no {' or '.join(CONFIG_NAMES)}.")
    return configs[0], prefix


def read(config_file, prefix):
    """(EncoderConfig, {name: array}) of a Google checkpoint; the arrays are read as they are used
    (`LazyTensors`: the index gives the names and shapes)."""
    import tensorflow as tf

    config = EncoderConfig.from_google_json(config_file)
    try:
        reader = tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError) as e:
        raise ValueError(f"{prefix} could not be read as a TF1 checkpoint: {e}") from None
    return config, LazyTensors(reader.get_variable_to_shape_map(), reader.get_tensor)


def write(tensors, config, folder, albert):
    """Writes `tensors` ({Google name: array}) as a V2 checkpoint with its config into `folder`."""
    import tensorflow as tf

    prefix = os.path.join(folder, "model.ckpt-best" if albert else "bert_model.ckpt")
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(np.asarray(tensors[n])) for n in names])
    with open(os.path.join(folder, CONFIG_NAMES[1] if albert else CONFIG_NAMES[0]), "w") as f:
        f.write(config.to_google_json())
    # A `checkpoint` state file, as tf.train.Saver writes, so TF1 tools find the latest one.
    with open(os.path.join(folder, "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "{os.path.basename(prefix)}"\n'
                f'all_model_checkpoint_paths: "{os.path.basename(prefix)}"\n')
