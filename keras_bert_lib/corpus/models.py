"""What a corpus job runs: a fine-tuning run's folder (its task's prediction rows), a checkpoint
folder (sentence embeddings), or an exported SavedModel on raw strings (its signature's outputs).
"""

import dataclasses
import os
from collections.abc import Callable

import numpy as np

from keras_bert_lib.checkpoints.hub import resolve_checkpoint
from keras_bert_lib.corpus.inputs import NULL, BadValue


@dataclasses.dataclass
class CorpusModel:
    """A model as a corpus job sees it.

    Attributes:
        name: what was loaded, for messages.
        roles: the texts a row gives the model, in order (("text",), ("text", "text_pair"),
            ("question", "context")).
        optional: the roles a row may lack (a classifier's `text_pair`).
        rows: {role: list of str} → one result dict per row, in order.
        fields: the keys of a result dict (csv and Parquet columns).
        embeds: whether a result is {"embedding": [...]}.
        precision: what it computes in and on, in words for the log.
    Example:
        ```python
        from keras_bert_lib.corpus.models import load_corpus_model
        # model = load_corpus_model("runs/classify", "predict"); model.rows({"text": ["a fine film"]})
        ```
    """

    name: str
    roles: tuple
    optional: tuple
    rows: Callable
    fields: list
    embeds: bool
    precision: str = ""


DTYPES = {"auto": "auto", "float32": None, "bfloat16": "bfloat16", "int8": "int8"}  # --dtype → inference_dtype


def model_source(path, command="predict"):
    """(kind, path) of what `load_corpus_model` reads at `path`, without reading it: ("saved_model",
    its version folder), ("keras", the .keras file) or, for "embed", ("checkpoint", the folder); a
    ValueError that says what to pass for anything else. A HuggingFace Hub id (embed) is resolved
    to its cached folder first.

    Example:
        ```python
        from keras_bert_lib.corpus.models import model_source
        # model_source("runs/classify")   # ("keras", "runs/classify/model.keras")
        ```
    """
    from keras_bert_lib.export.saved_model import saved_model_versions

    if command == "embed":
        path = resolve_checkpoint(path)  # a HuggingFace Hub id: its folder in the HF cache
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such model; pass a fine-tuning run's folder, a checkpoint folder (embed) or "
                         "an exported SavedModel.")
    if os.path.isfile(os.path.join(path, "saved_model.pb")):
        return "saved_model", path
    versions = saved_model_versions(path)
    if versions:
        return "saved_model", versions[max(versions)]
    if os.path.isfile(path) or os.path.isfile(os.path.join(path, "model.keras")):
        return "keras", path if os.path.isfile(path) else os.path.join(path, "model.keras")
    if command == "embed" and os.path.isdir(path):
        return "checkpoint", path
    raise ValueError(f"{path} is not a model: pass a fine-tuning run's folder (with model.keras), an exported "
                     "SavedModel folder, or, for embed, a checkpoint folder (Google TF1 or HuggingFace).")


def load_corpus_model(path, command="predict", batch_size=32, dtype="auto"):
    """The `CorpusModel` in `path` (`model_source`): a run folder (or its model.keras), a
    checkpoint folder (for `embed`: a `SentenceEmbedder`, mean-pooled and L2-normalised), or a
    SavedModel folder (or TF Serving's model folder of numbered versions, the highest served).

    `dtype` is what a Keras model predicts in (its `inference_dtype`): "auto" (bfloat16 weights on
    CPUs where they pay, `compile_path.choose_inference_dtype`), "float32", "bfloat16" or "int8"
    (OpenVINO, calibrated on a sample of the first shard's texts: `runtime.openvino.Int8Runtime`).
    A SavedModel computes in what it was exported with: another `dtype` than "auto" must match it.

    Example:
        ```python
        from keras_bert_lib.corpus.models import load_corpus_model
        # load_corpus_model("exported/saved_model", "predict").roles   # ('text',)
        ```
    """
    if dtype not in DTYPES:
        raise ValueError(f"--dtype {dtype}: one of {', '.join(DTYPES)}.")
    kind, source = model_source(path, command)
    if kind == "saved_model":
        model = _saved_model(source, batch_size, dtype)
    elif kind == "keras":
        model = _keras_model(source, dtype)
    else:
        model = _checkpoint_embedder(source, dtype)
    if command == "embed" and not model.embeds:
        raise ValueError(f"{path} does not embed ({', '.join(model.fields)} per row); `keras-bert predict` runs it, "
                         "or embed with a checkpoint folder, an embed run or its export.")
    return model


def predict_rows(model, rows, names=None):
    """One result dict per row of `rows` ({role: text, or None / a `BadValue` for a text that is
    null, missing or not UTF-8}): `model.rows` of the good rows, in one call, and {"error": ...}
    for the others. `names` maps a role to the column it came from, for the error's words.

    Example:
        ```python
        from keras_bert_lib.corpus.models import predict_rows
        # predict_rows(model, [{"text": "a fine film"}, {"text": None}])
        # [{"label": "fresh", "score": 0.93}, {"error": "text is null or missing"}]
        ```
    """
    results, good = [], []
    for row in rows:
        values = {r: NULL if row.get(r) is None else row[r] for r in row}
        bad = next((f"{(names or {}).get(r, r)} is {v}" for r, v in values.items()
                    if isinstance(v, BadValue) and r not in model.optional), None)
        results.append({"error": bad} if bad else None)
        if not bad:
            good.append(row)
    if good:
        roles = [r for r in model.roles if r in good[0] and (r not in model.optional or good[0][r] is not None)]
        done = iter(model.rows({r: [row[r] for row in good] for r in roles}))
        results = [next(done) if result is None else result for result in results]
    return results


def set_inference_dtype(model, dtype):
    """Sets a Keras task model's `inference_dtype` from `dtype` (a `--dtype`: "auto", "float32",
    "bfloat16", "int8"); says what `predict` runs in, in words for the log.

    Example:
        ```python
        from keras_bert_lib import bert_tiny
        from keras_bert_lib.corpus.models import set_inference_dtype
        from keras_bert_lib.tasks import SentenceEmbedder
        embedder = SentenceEmbedder(bert_tiny(num_hidden_layers=1))
        assert set_inference_dtype(embedder, "float32") == "float32 weights, TensorFlow on the CPU"
        assert embedder.inference_dtype is None
        ```
    """
    from keras_bert_lib.runtime.compile_path import choose_inference_dtype

    model.inference_dtype = DTYPES[dtype]
    if dtype == "int8":
        return ("int8 weights and activations, OpenVINO on the CPU (NNCF, calibrated on up to 300 texts of the first "
                "shard; refused where any drifts below cosine 0.99 of float32)")
    chosen = choose_inference_dtype(model.inference_dtype, model.encoder.layers_dtype_policy,
                                    model.encoder.config.hidden_size)
    if chosen == "bfloat16":
        return ("bfloat16 weights, TensorFlow on the CPU (--dtype float32 pins float32; bfloat16 results are within "
                "about 2e-3 of float32's)")
    return f"{chosen or model.encoder.dtype_policy.name} weights, TensorFlow on the CPU"


def _keras_model(path, dtype):
    from keras_bert_lib.export import load_model_file
    from keras_bert_lib.finetuning import TASKS, task_of_run
    from keras_bert_lib.tasks import SentenceEmbedder, TextClassifier

    model, file = load_model_file(path)
    precision = set_inference_dtype(model, dtype)
    task = task_of_run(file)
    if task is None:  # a bare .keras file: its class says what it does
        task = {SentenceEmbedder: TASKS["embed"], TextClassifier: TASKS["classify"]}.get(type(model))
        if task is None:
            raise ValueError(f"{file} is a {type(model).__name__} without its run's config.json; pass the run "
                             "folder that keras-bert finetune wrote.")
    roles = tuple(task.prediction_columns)
    optional = tuple(r for r in roles if r not in task.serves.inputs)
    if task.name == "embed":
        return CorpusModel(file, roles, optional, lambda columns: _embedding_rows(model, columns), ["embedding"], True,
                           precision)
    return _with_fields(CorpusModel(file, roles, optional, lambda columns: task.prediction_rows(model, columns),
                                    [], False, precision))


def _checkpoint_embedder(path, dtype):
    from keras_bert_lib.tasks import SentenceEmbedder

    model = SentenceEmbedder.from_checkpoint(path)
    return CorpusModel(path, ("text",), (), lambda columns: _embedding_rows(model, columns), ["embedding"], True,
                       set_inference_dtype(model, dtype))


def _embedding_rows(model, columns):
    """{"embedding": float32 array} rows (arrays, not lists: a shard of 10,000 MiniLM vectors is
    15 MB, not the 10 times that Python floats take)."""
    return [{"embedding": v} for v in np.asarray(model.predict(list(columns["text"]), verbose=0), np.float32)]


def _saved_model(path, batch_size, dtype):
    import tensorflow as tf

    from keras_bert_lib.export.saved_model import load_text_signature, plain, saved_model_dtype

    weights = saved_model_dtype(path)
    if dtype == "int8":
        raise ValueError(f"{path} is a SavedModel, which computes in what it was exported with ({weights}): --dtype "
                         "int8 runs a fine-tuning run's folder, a .keras file or (embed) a checkpoint folder.")
    if dtype not in ("auto", weights):
        raise ValueError(f"{path} holds {weights} weights, and a SavedModel computes in what it was exported with: "
                         f"export it with --dtype {dtype}, or leave --dtype at auto.")
    signature, roles, names = load_text_signature(path)
    renamed = {"embeddings": "embedding"}

    def rows(columns):
        texts = [columns[r] for r in roles]
        order = np.argsort([sum(len(t[i]) for t in texts) for i in range(len(texts[0]))], kind="stable")
        results = [None] * len(order)
        for start in range(0, len(order), batch_size):  # similar lengths together: each call pads to its longest
            batch = order[start:start + batch_size]
            out = signature(**{r: tf.constant([t[i] for i in batch]) for r, t in zip(roles, texts)})
            values = {renamed.get(k, k): out[k].numpy() for k in names}
            for j, i in enumerate(batch):
                results[i] = _classified({k: v[j] if k == "embedding" else plain(v[j]) for k, v in values.items()})
        return results

    return _with_fields(CorpusModel(path, roles, (), rows, [], "embeddings" in names,
                                    f"{weights} weights (as exported), TensorFlow on the CPU"))


def _classified(row):
    """A classifier's SavedModel row as a run folder's: {"label": its class name (its index where
    the export has no names), "score": its probability}; other rows as they are."""
    if "probabilities" not in row or "label" not in row:
        return row
    return {"label": row.get("class_name", row["label"]), "score": row["probabilities"][row["label"]]}


def _with_fields(model):
    """Fills `fields` from one prediction on a short text (which also builds the model's first program)."""
    probe = model.rows({r: ["a"] for r in model.roles if r not in model.optional})
    model.fields = list(probe[0])
    return model
