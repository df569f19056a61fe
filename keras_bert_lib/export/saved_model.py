"""SavedModel for TF Serving: raw strings in, the task's named outputs out."""

import contextlib
import logging
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from keras_bert_lib.atomic_write import default_mode
from keras_bert_lib.export.signatures import ServingModule


@contextlib.contextmanager
def saving_quietly():
    """While TensorFlow writes a SavedModel, its loggers keep its notes (captured inputs renamed,
    assets written) to themselves: they name internal tensors no user acts on. The renaming note
    goes through absl's logger, the rest through TensorFlow's. Errors still show.

    Example:
        ```python
        import logging
        from keras_bert_lib.export.saved_model import saving_quietly
        with saving_quietly():
            assert not any(logging.getLogger(n).isEnabledFor(logging.WARNING) for n in ("tensorflow", "absl"))
        ```
    """
    loggers = [logging.getLogger(name) for name in ("tensorflow", "absl")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def export_saved_model(model, base_dir, preprocessor=None, version=1, pair=None):
    """Writes `model` as TF Serving's `base_dir/<version>/` SavedModel and returns that path.

    Signatures:
        `serving_default`: raw strings, `text` (and `text_pair` for pair tasks) of shape (B,);
            the tokenizer and packer run in the graph (tensorflow-text's ops: a server or process
            that loads it imports `tensorflow_text`). Texts longer than the preprocessor's
            sequence length are truncated (as the preprocessor says for pairs); invalid UTF-8 bytes are dropped.
            Without a preprocessor it is the same as `serving_ids`.
        `serving_ids`: int32 `token_ids`, `segment_ids`, `padding_mask` of shape (B, T).
        `token_counts` (with a preprocessor): the strings `serving_default` takes → int32 (B,), the
            tokens the model reads of each text ([CLS] and [SEP]s included): a server's usage counts.
    Both return the task's named outputs (`export.signatures.output_names`): `probabilities` and
    `label` (and `class_name`, the label's name, for a classifier built with `class_names`, as
    every fine-tuning run's is) for a classifier, `embeddings`, `score` (cross-encoder), `start_logits`/`end_logits`,
    `logits`/`tag_ids`, or `sequence_output`/`pooled_output` for an encoder. Each weight is stored
    once (Keras' own `model.export` stores every variable twice, keras-team/keras#23553); the
    tokenizer's files (`vocab.txt`, `spiece.model`, `vocab.json` + `merges.txt`) are also written under
    `assets/` for clients. The folder appears whole or not
    at all (written beside, then renamed), and an existing version is never overwritten.

    Args:
        model: a task model or a `BertEncoder`.
        base_dir: str. The model's folder in TF Serving's `model_base_path`.
        preprocessor: BertPreprocessor or None; a task model's own by default.
        version: int. The version folder.
        pair: bool or None. Two string inputs; None: for cross-encoders and question answerers.
    Example:
        ```python
        import tempfile
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.export import export_saved_model
        path = export_saved_model(bert_tiny(num_hidden_layers=1), tempfile.mkdtemp())   # .../1
        ```
    """
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"version={version!r}: TF Serving's versions are positive integers.")
    target = os.path.join(os.fspath(base_dir), str(version))
    if os.path.exists(target):
        raise FileExistsError(f"{target} exists: TF Serving serves a version as it was written; export "
                              f"version={version + 1} (or delete the folder).")
    module = ServingModule(model, preprocessor, pair, class_names=True)
    if module.preprocessor is not None:  # the tokenizer's files (vocab.txt, spiece.model, …) for clients
        files = tempfile.mkdtemp()
        module.preprocessor.tokenizer.save_assets(files)
        module.tokenizer_files = [tf.saved_model.Asset(os.path.join(files, name)) for name in sorted(os.listdir(files))]
    os.makedirs(os.fspath(base_dir), exist_ok=True)
    staging = tempfile.mkdtemp(dir=os.fspath(base_dir), prefix=f".{version}-")
    try:
        with saving_quietly():
            tf.saved_model.save(module, staging, signatures={**module.signatures(), **module.token_count_signature()})
        default_mode(staging)  # mkdtemp's 0700 would keep TF Serving, running as another user, out
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def saved_model_versions(base_dir):
    """{version: folder} of the numbered SavedModel folders in TF Serving's model folder
    `base_dir` ({} if there are none).

    Example:
        ```python
        from keras_bert_lib.export.saved_model import saved_model_versions
        # saved_model_versions("exported/saved_model")   # {1: "exported/saved_model/1"}
        ```
    """
    if not os.path.isdir(base_dir):
        return {}
    return {int(v): os.path.join(base_dir, v) for v in os.listdir(base_dir)
            if v.isdigit() and os.path.isfile(os.path.join(base_dir, v, "saved_model.pb"))}


def load_text_signature(path, token_counts=False):
    """(the `serving_default` signature, its string input names, its output names) of the
    SavedModel version folder `path`, with tensorflow-text's ops registered first; a ValueError
    if the signature does not take raw strings. Inputs are ("text",) or ("text", "text_pair").
    With `token_counts`, a fourth item: its `token_counts` signature, or None where it was exported
    without one (by an earlier version of this library).

    Example:
        ```python
        from keras_bert_lib.export.saved_model import load_text_signature
        # signature, inputs, outputs = load_text_signature("exported/saved_model/1")
        ```
    """
    from keras_bert_lib.text.tf_text import import_tensorflow_text

    import_tensorflow_text("A SavedModel on raw strings")
    signatures = tf.saved_model.load(path).signatures
    signature = signatures.get("serving_default")
    specs = signature.structured_input_signature[1] if signature is not None else {}
    if not specs or any(spec.dtype != tf.string for spec in specs.values()):
        raise ValueError(f"{path}: its serving_default does not take raw strings; export the model with its "
                         "preprocessor (keras-bert export --format saved_model).")
    inputs = tuple(n for n in ("text", "text_pair") if n in specs) or tuple(sorted(specs))
    found = signature, inputs, tuple(sorted(signature.structured_outputs))
    return (*found, signatures.get("token_counts")) if token_counts else found


def saved_model_dtype(path):
    """The dtype of the SavedModel version folder `path`'s weights: "bfloat16" where `keras-bert
    export --dtype bfloat16` stored them so (its outputs stay float32), else "float32". Read from
    the variables' index; nothing is loaded.

    Example:
        ```python
        from keras_bert_lib.export.saved_model import saved_model_dtype
        # saved_model_dtype("exported/saved_model/1")   # "float32"
        ```
    """
    dtypes = tf.train.load_checkpoint(os.path.join(path, "variables", "variables")).get_variable_to_dtype_map()
    return "bfloat16" if tf.bfloat16 in dtypes.values() else "float32"


def plain(value):
    """A signature's output row as JSON-ready Python: lists and numbers, strings decoded from UTF-8.

    Example:
        ```python
        import numpy as np
        from keras_bert_lib.export.saved_model import plain
        plain(np.array([b"B-X", b"O"], dtype=object)), plain(np.float32(0.5))   # (['B-X', 'O'], 0.5)
        ```
    """
    value = np.asarray(value)
    if value.dtype.kind in "SO":
        decode = np.vectorize(lambda v: v.decode("utf-8", "replace") if isinstance(v, bytes) else v, otypes=[object])
        value = decode(value)
    return value.tolist()
